//! Results of a case run: the JSON document (`result.json`, format in
//! `docs/specs/bench-results.md`), its summary figures, the self-contained
//! HTML report (inline SVG, no scripts) and `sluice bench compare`.
//!
//! The figures follow the thesis: events per second at each processor (from
//! the collectors' per-second buckets), each processor's share of every
//! second, 5-second moving averages, the mean and median of the per-second
//! totals; plus what the thesis could not see: latency from intended send
//! time, exact loss and duplication, CPU and memory of every process.

mod html;

pub use self::html::{fmt_num, html, svg_chart, Series};
use self::html::{mib, rate_label};
use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::collector::{CollectorReport, EndpointReport};
use crate::gen::GenReport;
use crate::latency::LatencySummary;

/// Version of the results document.
pub const RESULT_VERSION: u32 = 1;

/// The machine a run was measured on.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Machine {
    /// Logical CPUs.
    pub cpus: usize,
    /// Load average (1, 5, 15 min) before the run.
    pub load_before: [f64; 3],
    /// Load average after the run.
    pub load_after: [f64; 3],
    /// `uname -sr`-like kernel string.
    pub kernel: String,
    /// sluice version that ran the case.
    pub sluice: String,
}

/// One sample of a process.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// Seconds since the start epoch.
    pub t: f64,
    /// CPU seconds since the process started.
    pub cpu_s: f64,
    /// Resident memory.
    pub rss_bytes: u64,
    /// Events in the process's queues (from `/_node/stats`), if it has an API.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_events: Option<u64>,
    /// Events its pipelines sent out so far.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub events_out: Option<u64>,
}

/// The sender's progress, sampled about once a second: how far it fell
/// behind its schedule shows back-pressure from the system under test.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SenderSample {
    /// Seconds since the start epoch.
    pub t: f64,
    /// Events the schedule intended to have sent by `t` (the offered load).
    pub due: u64,
    /// Events handed to the output so far.
    pub sent: u64,
    /// Events whose write returned or whose acknowledgement arrived.
    pub completed: u64,
}

/// A process (sluice, a peer, or the bench process itself).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProcessResult {
    /// Name in the case.
    pub name: String,
    /// Role (`processor`, `agent`, `haproxy`, `bench`, …).
    pub role: String,
    /// CPU seconds during the measured window.
    pub cpu_s: f64,
    /// Mean cores used during the window.
    pub cores: f64,
    /// Peak resident memory.
    pub peak_rss_bytes: u64,
    /// Bytes in its data directory at the end.
    pub disk_bytes: u64,
    /// Of those, bytes under a queue directory (`queue/`): the persisted
    /// queue's working files, recycled, not retained per event. Measured
    /// after the process stopped.
    #[serde(default)]
    pub queue_bytes: u64,
    /// Bytes retained after the process stopped: everything in the data
    /// directory but the queue (the store after its last commit, file sink
    /// output, metadata).
    #[serde(default)]
    pub retained_bytes: u64,
    /// Largest queue depth seen (events).
    pub max_queue_events: u64,
    /// How it ended: `stopped`, `killed at Ns`, `exited (code)`.
    pub exit: String,
    /// Samples, about one per second.
    pub samples: Vec<Sample>,
}

/// An action as it happened.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ActionResult {
    /// Seconds after the start epoch.
    pub at_s: f64,
    /// `kill`, `stop` or `start`.
    pub what: String,
    /// The process or peer.
    pub target: String,
}

/// One endpoint's share of the run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Share {
    /// Endpoint (processor) name.
    pub name: String,
    /// Events it received (duplicates included).
    pub events: u64,
    /// Its fraction of all events received.
    pub share: f64,
    /// Its mean events/s over the seconds it was active in the span.
    pub mean_rate: f64,
    /// Coefficient of variation of its per-second share (0 = steady).
    pub share_cv: f64,
}

/// The figures of a run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Seconds from the first to the last second with arrivals.
    pub span_s: f64,
    /// Mean of the per-second totals over the span (the thesis's "average events/s").
    pub throughput_mean: f64,
    /// Median of the per-second totals over the full seconds of the span.
    pub throughput_p50: f64,
    /// Per endpoint.
    pub shares: Vec<Share>,
    /// Coefficient of variation of the endpoints' totals (0 = perfectly even).
    pub balance_cv: f64,
    /// End-to-end latency from intended send time (collector), else the generator's.
    pub latency: LatencySummary,
    /// Sent and never received.
    pub lost: u64,
    /// Extra copies received.
    pub duplicated: u64,
    /// After a kill: seconds until the survivors carried 90 % of the pre-kill rate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recovery_s: Option<f64>,
    /// After a start: seconds until the new process carried 80 % of an even share.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scale_out_s: Option<f64>,
    /// Events per CPU-second of all sluice processes.
    pub events_per_cpu_s: f64,
    /// Largest gap between the schedule and what the sender got out
    /// (events): back-pressure reaching the sender.
    #[serde(default)]
    pub sender_max_backlog: u64,
    /// Largest queue depth seen in any process (events).
    #[serde(default)]
    pub max_queued: u64,
}

/// The results document of one run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunResult {
    /// [`RESULT_VERSION`].
    pub version: u32,
    /// Case name.
    pub case: String,
    /// Case description.
    pub description: String,
    /// Case group.
    pub group: String,
    /// Case kind.
    pub kind: String,
    /// Start time, ms since the Unix epoch.
    pub started_unix_ms: u64,
    /// The machine.
    pub machine: Machine,
    /// Offered rate (0: as fast as possible).
    pub rate: f64,
    /// Events.
    pub count: u64,
    /// What the generator did.
    pub generator: GenReport,
    /// What the collectors saw.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub received: Option<CollectorReport>,
    /// Figures.
    pub summary: Summary,
    /// Every process.
    pub processes: Vec<ProcessResult>,
    /// Actions.
    pub actions: Vec<ActionResult>,
    /// The sender's progress against its schedule.
    #[serde(default)]
    pub sender: Vec<SenderSample>,
    /// Whether every sent event was accounted for before the timeout.
    pub quiescent: bool,
    /// Seconds from the start epoch to quiescence (or the timeout).
    pub wall_s: f64,
}

fn mean(v: &[f64]) -> f64 {
    if v.is_empty() {
        0.0
    } else {
        v.iter().sum::<f64>() / v.len() as f64
    }
}

/// Coefficient of variation (population standard deviation / mean).
pub fn cv(v: &[f64]) -> f64 {
    let m = mean(v);
    if v.len() < 2 || m == 0.0 {
        return 0.0;
    }
    let var = v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / v.len() as f64;
    var.sqrt() / m
}

fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Per-second totals over all endpoints, padded to the longest.
pub fn totals(endpoints: &[EndpointReport]) -> Vec<u64> {
    let len = endpoints.iter().map(|e| e.per_second.len()).max().unwrap_or(0);
    (0..len).map(|i| endpoints.iter().map(|e| e.per_second.get(i).copied().unwrap_or(0)).sum()).collect()
}

/// `n`-second trailing moving average.
pub fn moving_average(v: &[u64], n: usize) -> Vec<f64> {
    let n = n.max(1);
    let mut out = Vec::with_capacity(v.len());
    let mut sum = 0u64;
    for i in 0..v.len() {
        sum += v[i];
        if i >= n {
            sum -= v[i - n];
        }
        out.push(sum as f64 / (i + 1).min(n) as f64);
    }
    out
}

/// An endpoint's share of the events of the trailing `n` seconds (its
/// moving sum over the total's; 0 where nothing arrived in the window).
pub fn share_moving_average(mine: &[u64], total: &[u64], n: usize) -> Vec<f64> {
    let padded: Vec<u64> = (0..total.len()).map(|i| mine.get(i).copied().unwrap_or(0)).collect();
    let (m, t) = (moving_average(&padded, n), moving_average(total, n));
    m.iter().zip(&t).map(|(&a, &b)| if b > 0.0 { a / b } else { 0.0 }).collect()
}

/// The endpoint index of a killed process that receives no events itself
/// (a balancer or dispatcher): recovery is then measured over every endpoint.
pub const NOT_AN_ENDPOINT: usize = usize::MAX;

/// Throughput and balance figures from per-second counts; `skip` seconds
/// of warm-up are left out. `kills` and `starts` are `(second, endpoint
/// index)` of actions, for recovery and scale-out times; a kill's index may
/// be [`NOT_AN_ENDPOINT`].
pub fn summarize(
    endpoints: &[EndpointReport],
    skip: usize,
    kills: &[(f64, usize)],
    starts: &[(f64, usize)],
) -> Summary {
    let tot = totals(endpoints);
    let first = tot.iter().enumerate().position(|(i, &n)| i >= skip && n > 0);
    let last = tot.iter().rposition(|&n| n > 0);
    let mut s = Summary::default();
    let (Some(first), Some(last)) = (first, last) else { return s };
    if last < first {
        return s;
    }
    let span: Vec<f64> = tot[first..=last].iter().map(|&n| n as f64).collect();
    s.span_s = span.len() as f64;
    s.throughput_mean = mean(&span);
    // The first and last seconds are partial: the median leaves them out when it can.
    s.throughput_p50 = if span.len() >= 3 { median(span[1..span.len() - 1].to_vec()) } else { median(span.clone()) };
    let grand: u64 = endpoints.iter().map(|e| e.events).sum();
    for e in endpoints {
        let per: Vec<f64> = (first..=last).map(|i| e.per_second.get(i).copied().unwrap_or(0) as f64).collect();
        let active: Vec<f64> = per.iter().copied().filter(|&n| n > 0.0).collect();
        let shares: Vec<f64> = (first..=last)
            .filter(|&i| tot[i] > 0)
            .map(|i| e.per_second.get(i).copied().unwrap_or(0) as f64 / tot[i] as f64)
            .collect();
        s.shares.push(Share {
            name: e.name.clone(),
            events: e.events,
            share: if grand == 0 { 0.0 } else { e.events as f64 / grand as f64 },
            mean_rate: mean(&active),
            share_cv: cv(&shares),
        });
    }
    s.balance_cv = cv(&endpoints.iter().map(|e| e.events as f64).collect::<Vec<_>>());
    let at = |i: usize, sec: usize| endpoints[i].per_second.get(sec).copied().unwrap_or(0) as f64;
    if let Some(&(t, dead)) = kills.first() {
        let k = t.floor() as usize;
        let before: Vec<f64> = (k.saturating_sub(5)..k).map(|i| tot.get(i).copied().unwrap_or(0) as f64).collect();
        let want = 0.9 * mean(&before);
        s.recovery_s = (k + 1..tot.len())
            .find(|&sec| (0..endpoints.len()).filter(|&i| i != dead).map(|i| at(i, sec)).sum::<f64>() >= want)
            .map(|sec| sec as f64 - t);
    }
    if let Some(&(t, new)) = starts.first() {
        let k = t.floor() as usize;
        s.scale_out_s = (k..tot.len())
            .find(|&sec| {
                let live = (0..endpoints.len()).filter(|&i| at(i, sec) > 0.0 || i == new).count().max(1);
                tot[sec] > 0 && at(new, sec) >= 0.8 * tot[sec] as f64 / live as f64
            })
            .map(|sec| (sec as f64 + 1.0 - t).max(0.0));
    }
    s
}

// ---------------------------------------------------------------- compare

/// The figures `compare` and the matrix table use, by name.
pub fn figures(r: &RunResult) -> BTreeMap<&'static str, f64> {
    let s = &r.summary;
    let mut f = BTreeMap::new();
    f.insert("achieved rate (generator)", r.generator.achieved_rate);
    f.insert("throughput mean (events/s)", s.throughput_mean);
    f.insert("throughput p50 (events/s)", s.throughput_p50);
    f.insert("balance CV", s.balance_cv);
    f.insert("latency p50 (ms)", s.latency.p50_ms);
    f.insert("latency p99 (ms)", s.latency.p99_ms);
    f.insert("latency p99.9 (ms)", s.latency.p999_ms);
    f.insert("lost", s.lost as f64);
    f.insert("duplicated", s.duplicated as f64);
    f.insert("events per CPU-s", s.events_per_cpu_s);
    f.insert("generator ns/event", r.generator.cpu_ns_per_event);
    let rss: u64 = r.processes.iter().filter(|p| p.role != "bench").map(|p| p.peak_rss_bytes).sum();
    f.insert("peak RSS, sum (MiB)", rss as f64 / (1 << 20) as f64);
    f
}

/// A table of `b / a` for every figure.
pub fn compare(a: &RunResult, b: &RunResult) -> String {
    let (fa, fb) = (figures(a), figures(b));
    let mut o = format!(
        "A: {} ({} at {})\nB: {} ({} at {})\n\n{:<30} {:>14} {:>14} {:>9}\n",
        a.case,
        fmt_num(a.count as f64),
        rate_label(a.rate),
        b.case,
        fmt_num(b.count as f64),
        rate_label(b.rate),
        "figure",
        "A",
        "B",
        "B / A"
    );
    for (k, va) in &fa {
        let vb = fb.get(k).copied().unwrap_or(0.0);
        let ratio = if *va == 0.0 {
            if vb == 0.0 {
                "=".to_string()
            } else {
                "∞".to_string()
            }
        } else {
            format!("{:.2}×", vb / va)
        };
        let _ = writeln!(o, "{k:<30} {:>14} {:>14} {ratio:>9}", fmt_num(*va), fmt_num(vb));
    }
    o
}

/// A Markdown table row per result (the thesis matrix in BENCHMARKS.md);
/// "share CV per second" is the mean over processors of the coefficient of
/// variation of their per-second share (0 = an even split every second; the
/// thesis's bursty balancer scores high even when totals are even).
pub fn matrix_table(results: &[RunResult]) -> String {
    let mut o = String::from("| case | kind | rate | events | throughput mean | p50 | shares | balance CV | share CV per second | lost | dup | latency p50 / p99 / p99.9 ms | sluice CPU-s | events per sluice CPU-s | peer CPU-s | sluice peak RSS MiB (max) |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for r in results {
        let s = &r.summary;
        let shares: Vec<String> = s.shares.iter().map(|x| format!("{:.0}", x.share * 100.0)).collect();
        let sluice = || r.processes.iter().filter(|p| p.role != "bench" && !is_peer(&p.role));
        let cpu: f64 = sluice().map(|p| p.cpu_s).sum();
        let peers: f64 = r.processes.iter().filter(|p| is_peer(&p.role)).map(|p| p.cpu_s).sum();
        let rss = sluice().map(|p| p.peak_rss_bytes).max().unwrap_or(0);
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} | {} | {} | {} % | {:.3} | {:.2} | {} | {} | {} / {} / {} | {:.1} | {} | {} | {} |",
            r.case,
            r.kind,
            rate_label(r.rate),
            fmt_num(r.count as f64),
            fmt_num(s.throughput_mean),
            fmt_num(s.throughput_p50),
            shares.join(" / "),
            s.balance_cv,
            mean(&s.shares.iter().map(|x| x.share_cv).collect::<Vec<_>>()),
            lost_cell(r),
            s.duplicated,
            fmt_num(s.latency.p50_ms),
            fmt_num(s.latency.p99_ms),
            fmt_num(s.latency.p999_ms),
            cpu,
            fmt_num(s.events_per_cpu_s),
            if r.processes.iter().any(|p| is_peer(&p.role)) { format!("{peers:.1}") } else { "–".into() },
            mib(rss)
        );
    }
    o
}

/// The table's "lost" cell: a run that timed out before quiescence has
/// events still on their way (in a queue), not necessarily lost — say so.
fn lost_cell(r: &RunResult) -> String {
    if r.quiescent {
        r.summary.lost.to_string()
    } else {
        format!("{} unaccounted at the quiesce timeout", r.summary.lost)
    }
}

/// A peer's role (a balancer or a Kafka broker), not a sluice process: left
/// out of sluice's CPU and events per CPU-s, listed on its own.
pub fn is_peer(role: &str) -> bool {
    matches!(role, "haproxy" | "nginx" | "pen" | "kafka")
}

#[cfg(test)]
mod tests;
