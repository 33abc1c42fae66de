//! What one run of a workload variant came to: figures, a failed check, a failure, or a
//! skip; and the parsing of the `BENCH` / `BENCHFAIL` lines that benches/harness.dl prints
//! (for Kiln and, through the same file, for the peers' programs).

use crate::child::Finished;
use std::collections::BTreeMap;

/// One timed variant: median/min/max seconds, extra figures (`steps_per_s=...`) and the
/// peak RSS of the process that ran it.
#[derive(Debug, Clone, Default)]
pub struct Sample {
    pub median: f64,
    pub min: f64,
    pub max: f64,
    pub extra: BTreeMap<String, f64>,
    pub peak_rss_mb: Option<f64>,
}

/// The result of one variant.
#[derive(Debug, Clone)]
pub enum Outcome {
    Measured(Sample),
    /// The program's result was wrong (its check failed): no time is shown.
    FailedCheck(String),
    /// The program failed before it reported (exit status and last stderr line).
    Failed(String),
    /// Not run, and why (no peers venv, no jax, ...).
    Skipped(String),
}

/// `BENCH name median=.. min=.. max=.. k=v ...` -> (name, Sample).
fn parse_bench_line(line: &str) -> Option<(String, Sample)> {
    let mut it = line.strip_prefix("BENCH ")?.split_whitespace();
    let name = it.next()?.to_string();
    let mut s = Sample::default();
    for kv in it {
        let (k, v) = kv.split_once('=')?;
        let v: f64 = v.parse().ok()?;
        match k {
            "median" => s.median = v,
            "min" => s.min = v,
            "max" => s.max = v,
            _ => {
                s.extra.insert(k.to_string(), v);
            }
        }
    }
    Some((name, s))
}

/// The outcomes a finished run reports for the variants `expected` (each one it did not
/// report is a failure naming how the process ended); other lines go to stderr.
pub fn outcomes(run: &Finished, expected: &[&str], out: &mut BTreeMap<String, Outcome>) {
    let mut seen = BTreeMap::new();
    for line in run.stdout.lines() {
        if let Some((name, mut s)) = parse_bench_line(line) {
            s.peak_rss_mb = Some(run.peak_rss_mb);
            seen.insert(name, Outcome::Measured(s));
        } else if let Some(rest) = line.strip_prefix("BENCHFAIL ") {
            let (name, what) = rest.split_once(' ').unwrap_or((rest, ""));
            seen.insert(name.to_string(), Outcome::FailedCheck(what.to_string()));
        } else if !line.trim().is_empty() {
            eprintln!("  {line}");
        }
    }
    let last_err = run
        .stderr
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("");
    if !run.success {
        eprintln!("  FAILED ({}):\n{}", run.status, run.stderr);
    }
    for name in expected {
        let o = seen.remove(*name).unwrap_or_else(|| {
            Outcome::Failed(if run.success {
                "printed no BENCH line".into()
            } else {
                format!("{}: {last_err}", run.status)
            })
        });
        out.insert(name.to_string(), o);
    }
    out.extend(seen);
}
