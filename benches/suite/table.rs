//! The printed tables: one row per comparison (Kiln's figure and peak RSS, the other
//! side's, the ratio, BENCH.md's target and whether it is met), then every run's figures
//! (first step, compiles, graph breaks, checks) with its peak RSS.

use crate::outcome::{Outcome, Sample};
use crate::rows::{Metric, Row, Target, Versus, ROWS};
use std::collections::BTreeMap;

fn figure(s: &Sample, m: Metric) -> Option<f64> {
    match m {
        Metric::Seconds => Some(s.median),
        Metric::Lower(k) | Metric::Higher(k) => s.extra.get(k).copied(),
    }
}

fn unit(m: Metric) -> &'static str {
    match m {
        Metric::Seconds => "s",
        Metric::Lower(k) | Metric::Higher(k) => k,
    }
}

/// `a` is at least as good as `b` under the metric's direction.
fn at_least(m: Metric, a: f64, b: f64) -> bool {
    if matches!(m, Metric::Higher(_)) {
        a >= b
    } else {
        a <= b
    }
}

/// A cell for an outcome: the figure, or why there is none.
fn cell(o: Option<&Outcome>, m: Metric) -> (String, Option<f64>, String) {
    match o {
        None => ("not run".into(), None, "-".into()),
        Some(Outcome::Measured(s)) => {
            let rss = s.peak_rss_mb.map_or("-".into(), |r| format!("{r:.0} MB"));
            match figure(s, m) {
                Some(v) => (format!("{v:.4} {}", unit(m)), Some(v), rss),
                None => (format!("no {}", unit(m)), None, rss),
            }
        }
        Some(Outcome::FailedCheck(why)) => (format!("FAILED CHECK ({why})"), None, "-".into()),
        Some(Outcome::Failed(why)) => (format!("FAILED ({why})"), None, "-".into()),
        Some(Outcome::Skipped(why)) => (why.clone(), None, "-".into()),
    }
}

fn target_text(r: &Row) -> String {
    let rel = if matches!(r.metric, Metric::Higher(_)) {
        ">="
    } else {
        "<="
    };
    let u = unit(r.metric);
    match r.target {
        Target::Info => "-".into(),
        Target::Ratio(t) => format!("ratio {rel} {t}"),
        Target::Absolute(b) => format!("{rel} {b} {u}"),
        Target::VsRecorded { bound, recorded } => format!(
            "{rel} {bound} {u} (ratio {rel} {:.3} vs a live peer)",
            bound / recorded
        ),
    }
}

/// "yes", "NO" or "-" (no target, or nothing to judge against).
fn met(r: &Row, kiln: Option<f64>, failed: bool, ratio: Option<f64>, live: bool) -> &'static str {
    if failed {
        return "NO";
    }
    let ok = match (r.target, kiln) {
        (Target::Info, _) | (_, None) => None,
        (Target::Ratio(t), _) => ratio.map(|q| at_least(r.metric, q, t)),
        (Target::Absolute(b), Some(v)) => Some(at_least(r.metric, v, b)),
        (Target::VsRecorded { bound, recorded }, Some(v)) => match (live, ratio) {
            (true, Some(q)) => Some(at_least(r.metric, q, bound / recorded)),
            _ => Some(at_least(r.metric, v, bound)),
        },
    };
    match ok {
        Some(true) => "yes",
        Some(false) => "NO",
        None => "-",
    }
}

pub fn print(
    kiln: &BTreeMap<String, Outcome>,
    peers: &BTreeMap<String, Outcome>,
    want: &dyn Fn(&str) -> bool,
) {
    println!();
    println!("| workload | kiln variant | kiln | kiln peak RSS | versus | its figure | its peak RSS | ratio | target | met |");
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for r in ROWS
        .iter()
        .chain(crate::w12::ROWS)
        .filter(|r| want(r.workload))
    {
        let k = kiln.get(r.kiln);
        let (ktext, kf, krss) = cell(k, r.metric);
        let failed = matches!(k, Some(Outcome::FailedCheck(_) | Outcome::Failed(_)));
        let (label, other) = match r.versus {
            Versus::Peer(sample, label) => (label.to_string(), Some(peers.get(sample))),
            Versus::Kiln(v) => (format!("kiln {v}"), Some(kiln.get(v))),
            Versus::Alone => ("-".to_string(), None),
        };
        let (otext, of, orss) = match other {
            Some(o) => cell(o, r.metric),
            None => ("-".into(), None, "-".into()),
        };
        let ratio = match (kf, of) {
            (Some(a), Some(b)) if b != 0.0 => Some(a / b),
            _ => None,
        };
        println!(
            "| {} | {} | {ktext} | {krss} | {label} | {otext} | {orss} | {} | {} | {} |",
            r.workload,
            r.kiln,
            ratio.map_or("-".into(), |q| format!("{q:.3}x")),
            target_text(r),
            met(r, kf, failed, ratio, of.is_some()),
        );
    }
}

/// Every run of the wanted workloads, Kiln's then the peers': times, peak RSS and the
/// figures it reported (first step, compiles, versions, graph breaks, check values).
pub fn print_details(kiln: &BTreeMap<String, Outcome>, peers: &BTreeMap<String, Outcome>) {
    println!();
    println!("| run | side | median s [min, max] | peak RSS | figures |");
    println!("|---|---|---|---|---|");
    for (side, map) in [("kiln", kiln), ("peer", peers)] {
        for (name, o) in map {
            let (time, rss, figs) = match o {
                Outcome::Measured(s) => (
                    format!("{:.4} [{:.4}, {:.4}]", s.median, s.min, s.max),
                    s.peak_rss_mb.map_or("-".into(), |r| format!("{r:.0} MB")),
                    s.extra
                        .iter()
                        .map(|(k, v)| format!("{k}={}", significant(*v)))
                        .collect::<Vec<_>>()
                        .join(" "),
                ),
                other => (
                    cell(Some(other), Metric::Seconds).0,
                    "-".into(),
                    String::new(),
                ),
            };
            println!("| {name} | {side} | {time} | {rss} | {figs} |");
        }
    }
}

/// `v` with 7 significant digits (integers as integers, tiny values in e-notation).
fn significant(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        return format!("{v:.0}");
    }
    if v.abs() < 1e-3 {
        return format!("{v:.6e}");
    }
    let decimals = usize::try_from(6 - v.abs().log10().floor() as i32).unwrap_or(0);
    format!("{v:.decimals$}")
}
