//! `sluice bench sizing`: the thesis's "hardware requirements measured".
//!
//! Runs the processor and store cases at increasing fixed rates (each for a
//! few seconds), stops a case at the first rate it cannot sustain (events
//! lost, not quiescent, the generator held back below 90 % of the offered
//! rate, or more than max(2 s, 20 % of the run) to drain after it), and turns what it measured at the highest sustained rate —
//! CPU seconds per event of the sluice processes, their peak memory, bytes
//! on disk per event — into the hardware needed for N events/s: cores (with
//! 30 % headroom), RAM, and disk per day.

use std::fmt::Write as _;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::case::Case;
use crate::report::fmt_num;
use crate::runner::{run_case, RunOptions};
use crate::BenchError;

/// One measured rate of one case.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SizingRow {
    /// Case name.
    pub case: String,
    /// Offered events/s.
    pub rate: f64,
    /// Mean events/s at the end of the pipeline.
    pub achieved: f64,
    /// CPU seconds per event of the sluice processes.
    pub cpu_s_per_event: f64,
    /// Peak RSS of the largest sluice process.
    pub peak_rss_bytes: u64,
    /// Bytes in the sluice processes' data directories per event.
    pub disk_bytes_per_event: f64,
    /// End-to-end latency p99 (ms).
    pub p99_ms: f64,
    /// Sustained: nothing lost, quiescent, the generator kept ≥ 90 % of the
    /// offered rate and the pipeline drained soon after.
    pub sustained: bool,
}

/// Runs every case at every rate (ascending) for `seconds` each, stopping a
/// case at its first unsustained rate.
pub fn run(cases: &[PathBuf], rates: &[f64], seconds: f64, opts: &RunOptions) -> Result<Vec<SizingRow>, BenchError> {
    let mut rows = Vec::new();
    let mut rates = rates.to_vec();
    rates.sort_by(f64::total_cmp);
    for dir in cases {
        let case = Case::load(dir)?;
        for &rate in &rates {
            let count = (rate * seconds).round().max(1.0) as u64;
            let mut o = opts.clone();
            o.rate = Some(rate);
            o.count = Some(count);
            o.out = opts.out.join(format!("{}-{}", case.name, rate as u64));
            let r = run_case(&case, &o)?;
            let sluice: Vec<_> =
                r.processes.iter().filter(|p| p.role != "bench" && !crate::report::is_peer(&p.role)).collect();
            let cpu: f64 = sluice.iter().map(|p| p.cpu_s).sum();
            let disk: u64 = sluice.iter().map(|p| p.disk_bytes).sum();
            let achieved = r.summary.throughput_mean;
            let row = SizingRow {
                case: case.name.clone(),
                rate,
                achieved,
                cpu_s_per_event: cpu / r.generator.sent.max(1) as f64,
                peak_rss_bytes: sluice.iter().map(|p| p.peak_rss_bytes).max().unwrap_or(0),
                disk_bytes_per_event: disk as f64 / r.generator.sent.max(1) as f64,
                p99_ms: r.summary.latency.p99_ms,
                // Kept pace (the generator was not held back) and drained
                // soon after it finished (a sink committing every second
                // adds a constant, not a backlog).
                sustained: r.quiescent
                    && r.summary.lost == 0
                    && r.generator.achieved_rate >= 0.9 * rate
                    && r.wall_s - r.generator.seconds <= (0.2 * seconds).max(2.0),
            };
            eprintln!(
                "sizing {}: offered {}/s, achieved {}/s, {:.1} µs CPU/event, sustained: {}",
                row.case,
                fmt_num(rate),
                fmt_num(achieved),
                row.cpu_s_per_event * 1e6,
                row.sustained
            );
            let stop = !row.sustained;
            rows.push(row);
            if stop {
                break;
            }
        }
    }
    Ok(rows)
}

/// The hardware table: for each case, from its highest sustained rate,
/// what `targets` events/s need.
pub fn table(rows: &[SizingRow], targets: &[f64]) -> String {
    let mut o = String::from("| case | measured at | CPU µs/event | events/s | cores (+30 %) | RAM (peak RSS, MiB) | disk per day |\n|---|---|---|---|---|---|---|\n");
    let mut names: Vec<&str> = rows.iter().map(|r| r.case.as_str()).collect();
    names.dedup();
    for name in names {
        let Some(best) = rows.iter().filter(|r| r.case == name && r.sustained).max_by(|a, b| a.rate.total_cmp(&b.rate))
        else {
            let _ = writeln!(o, "| {name} | no sustained rate | | | | | |");
            continue;
        };
        for &n in targets {
            let cores = best.cpu_s_per_event * n * 1.3;
            let disk_day = best.disk_bytes_per_event * n * 86_400.0;
            let _ = writeln!(
                o,
                "| {name} | {}/s | {:.1} | {} | {:.2} | {:.0} | {} |",
                fmt_num(best.rate),
                best.cpu_s_per_event * 1e6,
                fmt_num(n),
                cores,
                best.peak_rss_bytes as f64 / (1 << 20) as f64,
                human_bytes(disk_day)
            );
        }
    }
    o
}

fn human_bytes(b: f64) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b;
    let mut i = 0;
    while v >= 1024.0 && i + 1 < units.len() {
        v /= 1024.0;
        i += 1;
    }
    format!("{v:.1} {}", units[i])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_scales_the_highest_sustained_rate() {
        let row = |rate: f64, sustained: bool| SizingRow {
            case: "store".into(),
            rate,
            achieved: rate,
            cpu_s_per_event: 20e-6,
            peak_rss_bytes: 200 << 20,
            disk_bytes_per_event: 100.0,
            p99_ms: 5.0,
            sustained,
        };
        let t = table(&[row(1000.0, true), row(5000.0, true), row(20000.0, false)], &[4000.0]);
        // 20 µs × 4000/s × 1.3 = 0.104 cores; 100 B × 4000 × 86400 = 32.2 GiB a day.
        assert!(t.contains("| store | 5,000/s | 20.0 | 4,000 | 0.10 | 200 | 32.2 GiB |"), "{t}");
        let none = table(&[row(1000.0, false)], &[4000.0]);
        assert!(none.contains("| store | no sustained rate |"), "{none}");
    }
}
