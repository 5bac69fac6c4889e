//! `sluice bench sizing`: the thesis's "hardware requirements measured".
//!
//! Runs the processor and store cases at increasing fixed rates (each for a
//! few seconds), stops a case at the first rate it cannot sustain (events
//! lost, not quiescent, the generator held back below 90 % of the offered
//! rate, or more than max(2 s, 20 % of the run) to drain after it), and turns
//! what it measured into the hardware needed for N events/s:
//! - cores: interpolated between the measured rates around the target (the
//!   highest sustained rate's CPU per event above it), with the fixed
//!   per-process cost shown apart, so small deployments are not sized from
//!   the CPU per event of a fast run;
//! - RAM: the largest peak RSS of the sluice processes, run with sluice's
//!   default memory queue (a case's `max_events` is dropped) and the case's
//!   persisted queue as configured — the table names which;
//! - disk per day: bytes **retained** after the node stopped (the store after
//!   its last commit, file sink output) per event stored. The persisted
//!   queue's segments are recycled working space, not retained per event:
//!   they are reported apart as a fixed footprint.
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
    /// Bytes retained in the sluice processes' data directories after they
    /// stopped (the queue's directories excluded), per event stored.
    pub disk_bytes_per_event: f64,
    /// Bytes of the persisted queue's working files after the run (0 for a
    /// memory queue): a fixed footprint, bounded by the queue's `max_bytes`.
    #[serde(default)]
    pub queue_bytes: u64,
    /// Cores used by the sluice processes during the run (CPU s / wall s).
    #[serde(default)]
    pub cores_used: f64,
    /// The queue configuration the row ran with (one line).
    #[serde(default)]
    pub queue: String,
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
        let queue_table = default_queue(case.vars.get("queue_table").map(String::as_str));
        for &rate in &rates {
            let count = (rate * seconds).round().max(1.0) as u64;
            let mut o = opts.clone();
            o.rate = Some(rate);
            o.count = Some(count);
            if let Some(q) = &queue_table {
                o.vars.entry("queue_table".into()).or_insert_with(|| q.clone());
            }
            let queue = one_line(o.vars.get("queue_table").or(case.vars.get("queue_table")).map_or("", String::as_str));
            o.out = opts.out.join(format!("{}-{}", case.name, rate as u64));
            let r = run_case(&case, &o)?;
            let sluice: Vec<_> =
                r.processes.iter().filter(|p| p.role != "bench" && !crate::report::is_peer(&p.role)).collect();
            let cpu: f64 = sluice.iter().map(|p| p.cpu_s).sum();
            let retained: u64 = sluice.iter().map(|p| p.retained_bytes).sum();
            let queue_bytes: u64 = sluice.iter().map(|p| p.queue_bytes).sum();
            let achieved = r.summary.throughput_mean;
            let row = SizingRow {
                case: case.name.clone(),
                rate,
                achieved,
                cpu_s_per_event: cpu / r.generator.sent.max(1) as f64,
                peak_rss_bytes: sluice.iter().map(|p| p.peak_rss_bytes).max().unwrap_or(0),
                disk_bytes_per_event: retained as f64 / r.generator.sent.max(1) as f64,
                queue_bytes,
                cores_used: sluice.iter().map(|p| p.cores).sum(),
                queue: queue.clone(),
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

/// A case's memory queue with sluice's default size: the `max_events` line
/// of its `queue_table` dropped (what users run). `None` for other queues.
fn default_queue(table: Option<&str>) -> Option<String> {
    let t = table?;
    if !t.contains("\"memory\"") {
        return None;
    }
    let kept: Vec<&str> = t.lines().filter(|l| !l.trim_start().starts_with("max_events")).collect();
    Some(kept.join("\n"))
}

fn one_line(table: &str) -> String {
    table.lines().map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>().join(", ")
}

/// The fixed per-process cost in cores: where the line through the two
/// lowest sustained rates meets zero events/s (clamped at 0). `None` with
/// fewer than two distinct rates.
pub fn fixed_cores(sustained: &[&SizingRow]) -> Option<f64> {
    let mut pts: Vec<(f64, f64)> = sustained.iter().map(|r| (r.achieved, r.cores_used)).collect();
    pts.sort_by(|a, b| a.0.total_cmp(&b.0));
    let (a, b) = (pts.first()?, pts.get(1)?);
    if b.0 <= a.0 {
        return None;
    }
    let slope = (b.1 - a.1) / (b.0 - a.0);
    Some((a.1 - slope * a.0).max(0.0))
}

/// Cores needed for `n` events/s (before headroom) and where the figure
/// comes from: interpolated between the two measured rates around `n`, the
/// lowest rate's own use below it (the fixed cost dominates), or the highest
/// sustained rate's CPU per event above it (which carries that rate's share
/// of the fixed cost, so it errs large).
pub fn cores_for(sustained: &[&SizingRow], n: f64) -> Option<(f64, String)> {
    let mut pts: Vec<&SizingRow> = sustained.to_vec();
    pts.sort_by(|a, b| a.rate.total_cmp(&b.rate));
    let (lo, hi) = (*pts.first()?, *pts.last()?);
    if n <= lo.rate {
        return Some((lo.cores_used.max(lo.cpu_s_per_event * n), format!("measured at {}/s", fmt_num(lo.rate))));
    }
    if n >= hi.rate {
        let how = if n == hi.rate { "measured at" } else { "per event at" };
        return Some((hi.cpu_s_per_event * n, format!("{how} {}/s", fmt_num(hi.rate))));
    }
    let w = pts.windows(2).find(|w| w[0].rate <= n && n <= w[1].rate)?;
    let (a, b) = (w[0], w[1]);
    let t = (n - a.rate) / (b.rate - a.rate);
    Some((
        a.cores_used + t * (b.cores_used - a.cores_used),
        format!("between {}/s and {}/s", fmt_num(a.rate), fmt_num(b.rate)),
    ))
}

/// The hardware table: for each case, what `targets` events/s need. Cores
/// from the measured rates around the target (`cores_for`), the fixed
/// per-process cost apart; RAM from the highest sustained rate's peak RSS;
/// disk per day from the bytes retained per event at that rate; the queue's
/// working files apart.
pub fn table(rows: &[SizingRow], targets: &[f64]) -> String {
    let mut o = String::from(
        "| case | events/s | cores (+30 %) | CPU figure | fixed cost | RAM (peak RSS, MiB) | disk per day (retained) | queue on disk (fixed) |\n|---|---|---|---|---|---|---|---|\n",
    );
    let mut names: Vec<&str> = rows.iter().map(|r| r.case.as_str()).collect();
    names.dedup();
    let mut notes = Vec::new();
    for name in names {
        let sustained: Vec<&SizingRow> = rows.iter().filter(|r| r.case == name && r.sustained).collect();
        let Some(best) = sustained.iter().copied().max_by(|a, b| a.rate.total_cmp(&b.rate)) else {
            let _ = writeln!(o, "| {name} | no sustained rate | | | | | | |");
            continue;
        };
        let fixed = fixed_cores(&sustained).map_or("–".to_string(), |c| format!("{c:.2} cores"));
        for &n in targets {
            let Some((cores, from)) = cores_for(&sustained, n) else { continue };
            let disk_day = best.disk_bytes_per_event * n * 86_400.0;
            let _ = writeln!(
                o,
                "| {name} | {} | {:.2} | {from} | {fixed} | {:.0} | {} ({:.1} B/event) | {} |",
                fmt_num(n),
                cores * 1.3,
                best.peak_rss_bytes as f64 / (1 << 20) as f64,
                human_bytes(disk_day),
                best.disk_bytes_per_event,
                if best.queue_bytes == 0 {
                    "none (memory queue)".to_string()
                } else {
                    human_bytes(best.queue_bytes as f64)
                }
            );
        }
        notes.push(format!("- {name}: queue `{}`", best.queue));
        for r in rows.iter().filter(|r| r.case == name) {
            notes.push(format!(
                "  - at {}/s: {:.2} cores, {:.1} µs/event, {:.0} MiB peak, {:.1} B/event retained{}",
                fmt_num(r.rate),
                r.cores_used,
                r.cpu_s_per_event * 1e6,
                r.peak_rss_bytes as f64 / (1 << 20) as f64,
                r.disk_bytes_per_event,
                if r.sustained { "" } else { " (not sustained)" }
            ));
        }
    }
    o.push_str("\nMeasured per rate (CPU per event includes the fixed cost at that rate):\n");
    for n in notes {
        o.push_str(&n);
        o.push('\n');
    }
    o.push_str(
        "\nRead it as: disk = retention days × disk per day, plus the queue's fixed footprint, plus headroom \
         (≥ 30 %) for merges and bursts; cores include 30 % headroom. RAM is the peak at the highest sustained rate.\n",
    );
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

    fn row(rate: f64, cores: f64, sustained: bool) -> SizingRow {
        SizingRow {
            case: "store".into(),
            rate,
            achieved: rate,
            cpu_s_per_event: cores / rate,
            peak_rss_bytes: 200 << 20,
            disk_bytes_per_event: 100.0,
            queue_bytes: 64 << 20,
            cores_used: cores,
            queue: "type = \"persisted\"".into(),
            p99_ms: 5.0,
            sustained,
        }
    }

    #[test]
    fn cores_come_from_the_measured_rates_around_the_target() {
        // 0.05 cores fixed + 10 µs/event at 1,000 and 5,000/s; 20,000/s lost pace.
        let rows = [row(1000.0, 0.06, true), row(5000.0, 0.10, true), row(20000.0, 0.5, false)];
        let sustained: Vec<&SizingRow> = rows.iter().filter(|r| r.sustained).collect();
        assert!((fixed_cores(&sustained).unwrap() - 0.05).abs() < 1e-9);
        let t = table(&rows, &[500.0, 4000.0, 10000.0]);
        // Below the lowest rate: that rate's own use (0.06 × 1.3 = 0.078).
        assert!(t.contains("| store | 500 | 0.08 | measured at 1,000/s | 0.05 cores | 200 |"), "{t}");
        // Between: 0.06 + 0.75 × 0.04 = 0.09 cores, × 1.3 = 0.117;
        // 100 B × 4000 × 86400 = 32.2 GiB a day; the queue apart.
        assert!(
            t.contains("| store | 4,000 | 0.12 | between 1,000/s and 5,000/s | 0.05 cores | 200 | 32.2 GiB (100.0 B/event) | 64.0 MiB |"),
            "{t}"
        );
        // Above: 5,000/s's 20 µs/event × 10,000 = 0.2 cores, × 1.3 = 0.26.
        assert!(t.contains("| store | 10,000 | 0.26 | per event at 5,000/s |"), "{t}");
        assert!(
            t.contains("at 20,000/s: 0.50 cores, 25.0 µs/event, 200 MiB peak, 100.0 B/event retained (not sustained)"),
            "{t}"
        );
        let none = table(&[row(1000.0, 0.06, false)], &[4000.0]);
        assert!(none.contains("| store | no sustained rate |"), "{none}");
    }

    #[test]
    fn one_sustained_rate_uses_its_own_cpu_per_event() {
        let t = table(&[row(1000.0, 0.06, true)], &[1000.0, 2000.0]);
        assert!(t.contains("| store | 1,000 | 0.08 | measured at 1,000/s | – |"), "{t}");
        // 60 µs/event × 2000/s × 1.3 = 0.156 cores.
        assert!(t.contains("| store | 2,000 | 0.16 | per event at 1,000/s | – |"), "{t}");
    }

    #[test]
    fn a_memory_queue_runs_with_the_default_size() {
        let q = default_queue(Some("type = \"memory\"\nmax_events = 65536\n")).unwrap();
        assert_eq!(one_line(&q), "type = \"memory\"");
        assert_eq!(default_queue(Some("type = \"persisted\"\nmax_bytes = \"1GiB\"")), None);
    }
}
