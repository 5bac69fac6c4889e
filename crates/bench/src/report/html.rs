//! The HTML report: SVG charts and the page of a run's results.

use super::*;

// ---------------------------------------------------------------- HTML

pub(super) const COLORS: [&str; 8] =
    ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"];

pub(super) fn esc(s: &str) -> String {
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
pub(super) fn nice(v: f64) -> f64 {
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

pub(super) fn mib(b: u64) -> String {
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

pub(super) fn rate_label(rate: f64) -> String {
    if rate > 0.0 {
        format!("{}/s", fmt_num(rate))
    } else {
        "as fast as possible".into()
    }
}
