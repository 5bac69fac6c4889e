//! Results of a case run: the JSON document (`result.json`, format in
//! `docs/specs/bench-results.md`), its summary figures, the self-contained
//! HTML report (inline SVG, no scripts) and `sluice bench compare`.
//!
//! The figures follow the thesis: events per second at each processor (from
//! the collectors' per-second buckets), each processor's share of every
//! second, 5-second moving averages, the mean and median of the per-second
//! totals; plus what the thesis could not see: latency from intended send
//! time, exact loss and duplication, CPU and memory of every process.

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

// ---------------------------------------------------------------- HTML

const COLORS: [&str; 8] = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"];

fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// A line series for [`svg_chart`].
pub struct Series<'a> {
    /// Legend.
    pub name: &'a str,
    /// Values, one per second.
    pub values: Vec<f64>,
    /// Dashed line.
    pub dashed: bool,
    /// Colour index.
    pub color: usize,
}

/// A line chart as inline SVG: x = seconds, y from 0 to the largest value
/// (or `y_max`), with vertical markers at `marks` (seconds, label).
pub fn svg_chart(
    title: &str,
    y_label: &str,
    series: &[Series<'_>],
    y_max: Option<f64>,
    marks: &[(f64, String)],
) -> String {
    let (w, h, l, r, t, b) = (860.0, 280.0, 64.0, 150.0, 28.0, 36.0);
    let n = series.iter().map(|s| s.values.len()).max().unwrap_or(0).max(2);
    let top =
        y_max.unwrap_or_else(|| series.iter().flat_map(|s| s.values.iter().copied()).fold(0.0, f64::max)).max(1e-9);
    let top = nice(top);
    let x = |i: f64| l + (w - l - r) * i / (n - 1) as f64;
    let y = |v: f64| t + (h - t - b) * (1.0 - v / top);
    let mut o = String::new();
    let _ = write!(
        o,
        r#"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {w} {h}" width="{w}" height="{h}" font-family="sans-serif" font-size="11">"#
    );
    let _ = write!(o, r#"<text x="{l}" y="16" font-size="13" font-weight="bold">{}</text>"#, esc(title));
    for k in 0..=4 {
        let v = top * k as f64 / 4.0;
        let _ = write!(
            o,
            r##"<line x1="{l}" x2="{}" y1="{yy}" y2="{yy}" stroke="#ddd"/><text x="{}" y="{}" text-anchor="end">{}</text>"##,
            w - r,
            l - 4.0,
            y(v) + 4.0,
            fmt_num(v),
            yy = y(v)
        );
    }
    let step = ((n as f64 / 10.0).ceil() as usize).max(1);
    for i in (0..n).step_by(step) {
        let _ = write!(o, r#"<text x="{}" y="{}" text-anchor="middle">{i}</text>"#, x(i as f64), h - b + 14.0);
    }
    let _ =
        write!(o, r#"<text x="{}" y="{}" text-anchor="middle">seconds since start</text>"#, (l + w - r) / 2.0, h - 4.0);
    let _ = write!(
        o,
        r#"<text x="12" y="{}" transform="rotate(-90 12 {})" text-anchor="middle">{}</text>"#,
        (t + h - b) / 2.0,
        (t + h - b) / 2.0,
        esc(y_label)
    );
    for (sec, label) in marks {
        let _ = write!(
            o,
            r##"<line x1="{xx}" x2="{xx}" y1="{t}" y2="{}" stroke="#000" stroke-dasharray="2,3"/><text x="{}" y="{}">{}</text>"##,
            h - b,
            x(*sec) + 3.0,
            t + 10.0,
            esc(label),
            xx = x(*sec)
        );
    }
    for (k, s) in series.iter().enumerate() {
        let c = COLORS[s.color % COLORS.len()];
        let pts: Vec<String> =
            s.values.iter().enumerate().map(|(i, &v)| format!("{:.1},{:.1}", x(i as f64), y(v.min(top)))).collect();
        let dash = if s.dashed { r#" stroke-dasharray="5,3""# } else { "" };
        let _ =
            write!(o, r#"<polyline fill="none" stroke="{c}" stroke-width="1.5"{dash} points="{}"/>"#, pts.join(" "));
        let ly = t + 14.0 * k as f64;
        let _ = write!(
            o,
            r#"<line x1="{}" x2="{}" y1="{ly}" y2="{ly}" stroke="{c}" stroke-width="2"{dash}/><text x="{}" y="{}">{}</text>"#,
            w - r + 8.0,
            w - r + 28.0,
            w - r + 32.0,
            ly + 4.0,
            esc(s.name)
        );
    }
    o.push_str("</svg>");
    o
}

/// A round upper bound for an axis.
fn nice(v: f64) -> f64 {
    let p = 10f64.powf(v.log10().floor());
    for m in [1.0, 2.0, 2.5, 5.0, 10.0] {
        if m * p >= v {
            return m * p;
        }
    }
    10.0 * p
}

/// A number with thousands separators (integers) or 3 significant digits.
pub fn fmt_num(v: f64) -> String {
    if v.abs() >= 100.0 || v == v.trunc() {
        let n = v.round() as i64;
        let s = n.unsigned_abs().to_string();
        let mut out = String::new();
        for (i, c) in s.chars().enumerate() {
            if i > 0 && (s.len() - i).is_multiple_of(3) {
                out.push(',');
            }
            out.push(c);
        }
        if n < 0 {
            format!("-{out}")
        } else {
            out
        }
    } else if v.abs() >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

fn mib(b: u64) -> String {
    format!("{:.1}", b as f64 / (1 << 20) as f64)
}

/// The HTML report of a run: summary table and the thesis's charts.
pub fn html(r: &RunResult) -> String {
    let mut o = String::new();
    let title = format!("sluice bench: {} — {} events at {}", r.case, fmt_num(r.count as f64), rate_label(r.rate));
    let _ = write!(
        o,
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>{}</title><style>body{{font-family:sans-serif;max-width:960px;margin:1em auto;color:#222}}table{{border-collapse:collapse;margin:.5em 0}}td,th{{border:1px solid #ccc;padding:3px 8px;text-align:right}}th{{background:#f4f4f4}}td:first-child,th:first-child{{text-align:left}}.bad{{color:#b00;font-weight:bold}}</style></head><body>",
        esc(&title)
    );
    let _ = write!(o, "<h1>{}</h1><p>{}</p>", esc(&title), esc(&r.description));
    let s = &r.summary;
    let g = &r.generator;
    let m = &r.machine;
    let _ = write!(
        o,
        "<p>Machine: {} CPUs, {}; load average {:.2} / {:.2} / {:.2} before, {:.2} after. sluice {}. Run {}.</p>",
        m.cpus,
        esc(&m.kernel),
        m.load_before[0],
        m.load_before[1],
        m.load_before[2],
        m.load_after[0],
        esc(&m.sluice),
        esc(&g.run)
    );
    o.push_str("<h2>Summary</h2><table>");
    let row = |o: &mut String, k: &str, v: String| {
        let _ = write!(o, "<tr><td>{}</td><td>{}</td></tr>", esc(k), v);
    };
    row(
        &mut o,
        "offered rate (target → achieved by the generator)",
        format!("{} → {} events/s", rate_label(r.rate), fmt_num(g.achieved_rate)),
    );
    row(&mut o, "sent / received / lost / duplicated", {
        let lost = if s.lost > 0 { format!("<span class=bad>{}</span>", fmt_num(s.lost as f64)) } else { "0".into() };
        format!(
            "{} / {} / {} / {}",
            fmt_num(g.sent as f64),
            fmt_num(g.sent.saturating_sub(s.lost) as f64),
            lost,
            fmt_num(s.duplicated as f64)
        )
    });
    row(
        &mut o,
        "throughput at the processors: mean / p50 of per-second totals",
        format!("{} / {} events/s over {} s", fmt_num(s.throughput_mean), fmt_num(s.throughput_p50), fmt_num(s.span_s)),
    );
    row(&mut o, "balance: CV of per-processor totals", format!("{:.3}", s.balance_cv));
    row(
        &mut o,
        "latency from intended send time p50 / p99 / p99.9 / max",
        format!(
            "{} / {} / {} / {} ms",
            fmt_num(s.latency.p50_ms),
            fmt_num(s.latency.p99_ms),
            fmt_num(s.latency.p999_ms),
            fmt_num(s.latency.max_ms)
        ),
    );
    row(
        &mut o,
        "generator: max lag behind schedule, retries, CPU per event",
        format!("{} ms, {}, {} ns", fmt_num(g.max_lag_ms), g.retries, fmt_num(g.cpu_ns_per_event)),
    );
    row(&mut o, "events per CPU-second (all sluice processes)", fmt_num(s.events_per_cpu_s));
    row(
        &mut o,
        "back-pressure: largest sender backlog behind schedule / largest queue in any process",
        format!("{} / {} events", fmt_num(s.sender_max_backlog as f64), fmt_num(s.max_queued as f64)),
    );
    if let Some(x) = s.recovery_s {
        row(&mut o, "after the kill: seconds until the survivors carried 90 % of the rate", format!("{x:.1}"));
    }
    if let Some(x) = s.scale_out_s {
        row(
            &mut o,
            "after the start: seconds until the new processor carried 80 % of an even share",
            format!("{x:.1}"),
        );
    }
    row(
        &mut o,
        "quiescent (every event accounted for)",
        if r.quiescent { "yes".into() } else { "<span class=bad>no: timed out</span>".into() },
    );
    o.push_str("</table><h2>Processors</h2><table><tr><th>endpoint</th><th>events</th><th>share</th><th>mean events/s</th><th>CV of per-second share</th></tr>");
    for sh in &s.shares {
        let _ = write!(
            o,
            "<tr><td>{}</td><td>{}</td><td>{:.1} %</td><td>{}</td><td>{:.3}</td></tr>",
            esc(&sh.name),
            fmt_num(sh.events as f64),
            sh.share * 100.0,
            fmt_num(sh.mean_rate),
            sh.share_cv
        );
    }
    o.push_str("</table><h2>Processes</h2><table><tr><th>process</th><th>role</th><th>CPU s</th><th>cores (mean)</th><th>peak RSS MiB</th><th>max queue</th><th>disk MiB</th><th>end</th></tr>");
    for p in &r.processes {
        let _ = write!(
            o,
            "<tr><td>{}</td><td>{}</td><td>{:.2}</td><td>{:.2}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&p.name),
            esc(&p.role),
            p.cpu_s,
            p.cores,
            mib(p.peak_rss_bytes),
            fmt_num(p.max_queue_events as f64),
            mib(p.disk_bytes),
            esc(&p.exit)
        );
    }
    o.push_str("</table>");
    let marks: Vec<(f64, String)> = r.actions.iter().map(|a| (a.at_s, format!("{} {}", a.what, a.target))).collect();
    if let Some(rec) = &r.received {
        let eps = &rec.endpoints;
        // Owned legend labels ("p1 5 s avg"), borrowed by the series.
        let avg_names: Vec<String> = eps.iter().map(|e| format!("{} 5 s avg", e.name)).collect();
        let mut series = Vec::new();
        for (i, e) in eps.iter().enumerate() {
            series.push(Series {
                name: &e.name,
                values: e.per_second.iter().map(|&v| v as f64).collect(),
                dashed: false,
                color: i,
            });
            series.push(Series {
                name: &avg_names[i],
                values: moving_average(&e.per_second, 5),
                dashed: true,
                color: i,
            });
        }
        let tot = totals(eps);
        o.push_str("<h2>Events per second at each processor</h2>");
        o.push_str(&svg_chart(
            "events/s received per processor (dashed: 5 s moving average)",
            "events/s",
            &series,
            None,
            &marks,
        ));
        if eps.len() > 1 {
            // The total on its own chart: on the processors' chart it would
            // set the scale and flatten their lines.
            let total = [
                Series { name: "total", values: tot.iter().map(|&v| v as f64).collect(), dashed: false, color: 7 },
                Series { name: "total 5 s avg", values: moving_average(&tot, 5), dashed: true, color: 7 },
            ];
            o.push_str("<h2>Events per second, all processors</h2>");
            o.push_str(&svg_chart(
                "events/s received in total (dashed: 5 s moving average)",
                "events/s",
                &total,
                None,
                &marks,
            ));
            let mut shares: Vec<Series<'_>> = Vec::new();
            for (i, e) in eps.iter().enumerate() {
                let per: Vec<f64> = tot
                    .iter()
                    .enumerate()
                    .map(
                        |(s, &t)| {
                            if t == 0 {
                                0.0
                            } else {
                                e.per_second.get(s).copied().unwrap_or(0) as f64 / t as f64
                            }
                        },
                    )
                    .collect();
                shares.push(Series { name: &e.name, values: per, dashed: false, color: i });
                shares.push(Series {
                    name: &avg_names[i],
                    values: share_moving_average(&e.per_second, &tot, 5),
                    dashed: true,
                    color: i,
                });
            }
            o.push_str("<h2>Each processor's share per second</h2>");
            o.push_str(&svg_chart(
                "share of each second's events (dashed: share of the last 5 s)",
                "share",
                &shares,
                Some(1.0),
                &marks,
            ));
        }
    }
    if r.sender.len() > 1 {
        let pick = |f: fn(&SenderSample) -> u64| r.sender.iter().map(|x| f(x) as f64).collect::<Vec<_>>();
        let sender = [
            Series { name: "due (schedule)", values: pick(|x| x.due), dashed: true, color: 0 },
            Series { name: "sent", values: pick(|x| x.sent), dashed: false, color: 1 },
            Series { name: "completed", values: pick(|x| x.completed), dashed: false, color: 2 },
        ];
        o.push_str("<h2>The sender against its schedule</h2>");
        o.push_str(&svg_chart(
            "events due, sent and completed (a gap is back-pressure)",
            "events",
            &sender,
            None,
            &marks,
        ));
    }
    let cpu: Vec<Series<'_>> = r
        .processes
        .iter()
        .enumerate()
        .map(|(i, p)| Series {
            name: &p.name,
            values: p
                .samples
                .windows(2)
                .map(|w| ((w[1].cpu_s - w[0].cpu_s) / (w[1].t - w[0].t).max(1e-3)).max(0.0))
                .collect(),
            dashed: false,
            color: i,
        })
        .collect();
    o.push_str("<h2>CPU of every process</h2>");
    o.push_str(&svg_chart("cores used (1.0 = one full core)", "cores", &cpu, None, &marks));
    let queues: Vec<Series<'_>> = r
        .processes
        .iter()
        .enumerate()
        .filter(|(_, p)| p.samples.iter().any(|s| s.queue_events.is_some()))
        .map(|(i, p)| Series {
            name: &p.name,
            values: p.samples.iter().map(|s| s.queue_events.unwrap_or(0) as f64).collect(),
            dashed: false,
            color: i,
        })
        .collect();
    if !queues.is_empty() {
        o.push_str("<h2>Queue depth</h2>");
        o.push_str(&svg_chart("events queued in each process", "events", &queues, None, &marks));
    }
    o.push_str("<h2>Raw results</h2><p>Everything above comes from <code>result.json</code> beside this file (format: docs/specs/bench-results.md).</p></body></html>\n");
    o
}

fn rate_label(rate: f64) -> String {
    if rate > 0.0 {
        format!("{}/s", fmt_num(rate))
    } else {
        "as fast as possible".into()
    }
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
