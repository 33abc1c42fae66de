//! `progress(iterable, desc="")`: yields the items of `iterable` unchanged and draws a
//! progress bar (count, rate, ETA) on stderr, only when stderr is a terminal.

use super::{arity, kwarg, no_kw};
use crate::interp::value::{IterObj, Value};
use crate::interp::{type_err, Interp, R};
use std::io::{IsTerminal, Write};
use std::rc::Rc;
use std::time::{Duration, Instant};

type Kw<'a> = &'a [(Rc<str>, Value)];

/// Width of the bar in characters.
const BAR_WIDTH: usize = 24;
/// Minimum time between two redraws.
const REDRAW: Duration = Duration::from_millis(100);

/// The state of one `progress(...)` iterator.
#[derive(Debug)]
pub struct ProgressState {
    pub(crate) inner: Value,
    desc: String,
    total: Option<u64>,
    count: u64,
    start: Instant,
    last_draw: Option<Instant>,
    draw: bool,
}

/// `progress(iterable, desc="", total=None)`.
pub fn progress(me: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    no_kw("progress", kw, &["desc", "total"])?;
    arity("progress", args, 1, 2)?;
    let desc = match args.get(1).or_else(|| kwarg(kw, "desc")) {
        None | Some(Value::None) => String::new(),
        Some(Value::Str(s)) => s.to_string(),
        Some(v) => {
            return Err(type_err(format!(
                "progress() desc must be a string, not {}",
                v.type_name()
            )))
        }
    };
    let total = match kwarg(kw, "total") {
        Some(Value::Int(n)) if *n >= 0 => Some(*n as u64),
        Some(Value::None) | None => known_len(me, &args[0]),
        Some(v) => {
            return Err(type_err(format!(
                "progress() total must be a non-negative int, not {}",
                me.repr(v)?
            )))
        }
    };
    let inner = me.get_iter(&args[0])?;
    let state = ProgressState {
        inner,
        desc,
        total,
        count: 0,
        start: Instant::now(),
        last_draw: None,
        // a sandboxed engine never writes to the host's terminal
        draw: !me.sandbox && std::io::stderr().is_terminal(),
    };
    Ok(me.make_iter(IterObj::Progress(Box::new(state))))
}

/// The length of a sized iterable, without side effects on plain iterators.
fn known_len(me: &mut Interp, v: &Value) -> Option<u64> {
    match v {
        Value::Iter(_) => None,
        _ => super::funcs::length(me, v).ok().map(|n| n.max(0) as u64),
    }
}

impl Interp {
    /// Advances a progress iterator and redraws its bar when due.
    pub fn progress_next(&mut self, mut p: Box<ProgressState>) -> R<(Option<Value>, IterObj)> {
        match self.next_of(&p.inner)? {
            Some(v) => {
                p.count += 1;
                let now = Instant::now();
                if p.draw && p.last_draw.is_none_or(|t| now.duration_since(t) >= REDRAW) {
                    p.last_draw = Some(now);
                    draw(&p, now, false);
                }
                Ok((Some(v), IterObj::Progress(p)))
            }
            None => {
                if p.draw {
                    draw(&p, Instant::now(), true);
                }
                Ok((None, IterObj::Done))
            }
        }
    }
}

fn draw(p: &ProgressState, now: Instant, last: bool) {
    let elapsed = now.duration_since(p.start).as_secs_f64();
    let line = render(&p.desc, p.count, p.total, elapsed);
    let mut err = std::io::stderr().lock();
    let _ = write!(err, "\r{line}{}", if last { "\n" } else { "" });
    let _ = err.flush();
}

/// One bar line: `desc: 45%|#####     | 45/100 [00:01<00:01, 40.0it/s]`, or without
/// a known total `desc: 45it [00:01, 40.0it/s]`.
pub fn render(desc: &str, count: u64, total: Option<u64>, elapsed: f64) -> String {
    let prefix = if desc.is_empty() {
        String::new()
    } else {
        format!("{desc}: ")
    };
    let rate = if elapsed > 0.0 {
        count as f64 / elapsed
    } else {
        0.0
    };
    let rate_s = format_rate(rate);
    match total {
        Some(total) if total > 0 => {
            let frac = (count as f64 / total as f64).clamp(0.0, 1.0);
            let filled = ((frac * BAR_WIDTH as f64) as usize).min(BAR_WIDTH);
            let bar = "#".repeat(filled) + &" ".repeat(BAR_WIDTH - filled);
            let eta = if rate > 0.0 {
                clock(total.saturating_sub(count) as f64 / rate)
            } else {
                "?".to_string()
            };
            format!(
                "{prefix}{:3}%|{bar}| {count}/{total} [{}<{eta}, {rate_s}]",
                (frac * 100.0) as u32,
                clock(elapsed)
            )
        }
        _ => format!("{prefix}{count}it [{}, {rate_s}]", clock(elapsed)),
    }
}

/// Items per second, or seconds per item when slower than one per second.
fn format_rate(rate: f64) -> String {
    if rate <= 0.0 {
        "?it/s".to_string()
    } else if rate >= 1.0 {
        format!("{rate:.2}it/s")
    } else {
        format!("{:.2}s/it", 1.0 / rate)
    }
}

/// `mm:ss`, or `h:mm:ss` from one hour on.
fn clock(secs: f64) -> String {
    let s = if secs.is_finite() && secs > 0.0 {
        secs.round() as u64
    } else {
        0
    };
    let (h, m, s) = (s / 3600, (s / 60) % 60, s % 60);
    if h > 0 {
        format!("{h}:{m:02}:{s:02}")
    } else {
        format!("{m:02}:{s:02}")
    }
}

#[cfg(test)]
mod tests {
    use super::render;

    #[test]
    fn bar_with_total() {
        // 50 of 100 in 2 s: 25 it/s, 50 left -> 2 s ETA, 12 of 24 cells filled.
        assert_eq!(
            render("train", 50, Some(100), 2.0),
            "train:  50%|############            | 50/100 [00:02<00:02, 25.00it/s]"
        );
    }

    #[test]
    fn bar_without_total_and_slow_rate() {
        assert_eq!(render("", 3, None, 6.0), "3it [00:06, 2.00s/it]");
        assert_eq!(render("", 0, None, 0.0), "0it [00:00, ?it/s]");
    }

    #[test]
    fn bar_hours_and_unknown_eta() {
        assert_eq!(
            render("x", 0, Some(10), 3725.0),
            "x:   0%|                        | 0/10 [1:02:05<?, ?it/s]"
        );
        assert_eq!(
            render("", 10, Some(10), 1.0),
            "100%|########################| 10/10 [00:01<00:00, 10.00it/s]"
        );
    }
}
