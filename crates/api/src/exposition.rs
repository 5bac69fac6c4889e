//! `GET /metrics`: the node's counters in the Prometheus text format
//! (version 0.0.4), written with the `prometheus` crate's text encoder from
//! metric families built at each scrape (ADR 0102).
//!
//! One family per measured thing, the component as labels, so the usual
//! queries work (`rate(sluice_component_events_out_total{pipeline="main"}[1m])`):
//! - `sluice_process_*`: RSS, CPU seconds, threads, open files;
//! - `sluice_api_*`: the API listener's connections, refusals, timeouts;
//! - `sluice_pipeline_*{pipeline}`: events in/out/filtered, queue depth, and
//!   `sluice_pipeline_batch_latency_seconds`, a histogram;
//! - `sluice_component_*{pipeline, kind, component, type}`: the counters
//!   every component has (events, bytes, errors) and each component's own —
//!   `oversized_frames` becomes `sluice_component_oversized_frames_total`,
//!   a gauge such as `in_flight` `sluice_component_in_flight`, labelled
//!   gauges (`consumer_lag`) keep their extra labels; a name holding the
//!   unit `us` is exported in seconds (`ack_p99_us` →
//!   `sluice_component_ack_p99_seconds`);
//! - the search backend's counters under their own names
//!   (`sluice_store_commits_total`, …).
//!
//! `docs/specs/metrics.md` lists the families; `promtool check metrics`
//! accepts the document (a test in `crates/sluice/tests/api_e2e.rs`).

use std::collections::BTreeMap;

use prometheus::proto::{Bucket, Counter, Gauge, Histogram, LabelPair, Metric, MetricFamily, MetricType};
use prometheus::{Encoder as _, TextEncoder};
use sluice_core::metrics::{ComponentMetrics, PipelineMetrics};

use crate::{process, ApiState};

/// Upper bounds of the batch latency histogram, in seconds.
const LATENCY_BOUNDS_S: [f64; 14] =
    [0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0];

/// The families of one document, by name, in name order.
#[derive(Default)]
struct Families(BTreeMap<String, MetricFamily>);

impl Families {
    /// Adds one sample to the family `name` (created with `help` and `kind`
    /// on first use; a later sample of another kind under the same name is
    /// renamed with a `_<kind>` suffix so the document stays valid).
    fn add(&mut self, name: &str, help: &str, kind: MetricType, labels: &[(&str, &str)], m: Sample) {
        let mut name = name.to_string();
        if self.0.get(&name).is_some_and(|f| f.get_field_type() != kind) {
            name = format!("{name}_{}", if kind == MetricType::COUNTER { "counter" } else { "value" });
        }
        let family = self.0.entry(name.clone()).or_insert_with(|| {
            let mut f = MetricFamily::default();
            f.set_name(name);
            f.set_help(help.to_string());
            f.set_field_type(kind);
            f
        });
        let mut metric = Metric::default();
        metric.set_label(
            labels
                .iter()
                .map(|(k, v)| {
                    let mut l = LabelPair::default();
                    l.set_name((*k).to_string());
                    l.set_value((*v).to_string());
                    l
                })
                .collect(),
        );
        match m {
            Sample::Counter(v) => {
                let mut c = Counter::default();
                c.set_value(v);
                metric.set_counter(c);
            }
            Sample::Gauge(v) => {
                let mut g = Gauge::default();
                g.set_value(v);
                metric.set_gauge(g);
            }
            Sample::Histogram(h) => metric.set_histogram(h),
        }
        family.mut_metric().push(metric);
    }

    fn counter(&mut self, name: &str, help: &str, labels: &[(&str, &str)], v: f64) {
        self.add(name, help, MetricType::COUNTER, labels, Sample::Counter(v));
    }

    fn gauge(&mut self, name: &str, help: &str, labels: &[(&str, &str)], v: f64) {
        self.add(name, help, MetricType::GAUGE, labels, Sample::Gauge(v));
    }
}

/// One sample's value.
enum Sample {
    Counter(f64),
    Gauge(f64),
    Histogram(Histogram),
}

/// A component's own counter or gauge name as a Prometheus name and its
/// value: a `us` unit becomes seconds (Prometheus names carry base units),
/// counters end in `_total`.
fn component_name(key: &str, counter: bool, v: f64) -> (String, f64) {
    let mut v = v;
    let parts: Vec<&str> = key
        .strip_suffix("_total")
        .unwrap_or(key)
        .split('_')
        .map(|p| {
            if p == "us" {
                v /= 1e6;
                "seconds"
            } else {
                p
            }
        })
        .collect();
    let base = format!("sluice_component_{}", parts.join("_"));
    (if counter { format!("{base}_total") } else { base }, v)
}

/// Reads one pipeline counter.
type PipelineSeries = fn(&PipelineMetrics) -> u64;
/// Reads one component counter.
type ComponentSeries = fn(&ComponentMetrics) -> u64;

/// The `/metrics` document.
pub fn prometheus_text(s: &ApiState) -> String {
    let mut f = Families::default();
    let p = process::sample();
    f.gauge("sluice_process_resident_memory_bytes", "Resident memory of the sluice process.", &[], p.rss_bytes as f64);
    f.counter(
        "sluice_process_cpu_seconds_total",
        "CPU time (user + system) of the sluice process.",
        &[],
        p.cpu_seconds,
    );
    f.gauge("sluice_process_threads", "Threads of the sluice process.", &[], p.threads as f64);
    f.gauge("sluice_process_open_fds", "Open file descriptors of the sluice process.", &[], p.open_files as f64);
    let l = &s.listener;
    f.counter(
        "sluice_api_connections_total",
        "Connections the API listener accepted.",
        &[],
        l.connections.get() as f64,
    );
    f.counter(
        "sluice_api_refused_connections_total",
        "Connections the API listener closed at once: max_connections were open.",
        &[],
        l.refused.get() as f64,
    );
    f.counter(
        "sluice_api_accept_errors_total",
        "Failed accepts on the API listener.",
        &[],
        l.accept_errors.get() as f64,
    );
    f.counter("sluice_api_timeouts_total", "API connections closed for a timeout.", &[], s.timeouts.get() as f64);
    f.counter(
        "sluice_api_tls_handshake_errors_total",
        "TLS handshakes on the API listener that failed or timed out.",
        &[],
        s.tls_handshake_errors.get() as f64,
    );
    f.gauge("sluice_api_open_connections", "Connections open on the API listener.", &[], l.open.get() as f64);

    let pipes = s.registry.pipelines();
    let series: [(&str, &str, bool, PipelineSeries); 5] = [
        ("sluice_pipeline_events_in_total", "Events the pipeline's sources handed in.", true, |p| p.events_in.get()),
        ("sluice_pipeline_events_out_total", "Events the pipeline's sinks acknowledged.", true, |p| p.events_out.get()),
        ("sluice_pipeline_events_filtered_total", "Events the pipeline's filters dropped.", true, |p| {
            p.events_filtered.get()
        }),
        ("sluice_pipeline_queue_events", "Events in the pipeline's queue, not yet acknowledged.", false, |p| {
            p.queue_events.get()
        }),
        ("sluice_pipeline_queue_bytes", "Bytes in the pipeline's queue.", false, |p| p.queue_bytes.get()),
    ];
    for pm in &pipes {
        let labels = [("pipeline", pm.name.as_str())];
        for (name, help, counter, read) in series {
            let v = read(pm) as f64;
            if counter {
                f.counter(name, help, &labels, v);
            } else {
                f.gauge(name, help, &labels, v);
            }
        }
        let bounds_us: Vec<u64> = LATENCY_BOUNDS_S.iter().map(|b| (b * 1e6) as u64).collect();
        let (count, sum_us, cumulative) = pm.batch_latency.buckets(&bounds_us);
        let mut h = Histogram::default();
        h.set_sample_count(count);
        h.set_sample_sum(sum_us / 1e6);
        h.set_bucket(
            LATENCY_BOUNDS_S
                .iter()
                .zip(cumulative)
                .map(|(b, n)| {
                    let mut bucket = Bucket::default();
                    bucket.set_upper_bound(*b);
                    bucket.set_cumulative_count(n);
                    bucket
                })
                .collect(),
        );
        f.add(
            "sluice_pipeline_batch_latency_seconds",
            "Time from a batch leaving the queue to its acknowledgement by every sink.",
            MetricType::HISTOGRAM,
            &labels,
            Sample::Histogram(h),
        );
    }

    let cseries: [(&str, &str, ComponentSeries); 7] = [
        ("sluice_component_events_in_total", "Events the component received.", |c| c.events_in.get()),
        ("sluice_component_events_out_total", "Events the component passed on or delivered.", |c| c.events_out.get()),
        ("sluice_component_events_failed_total", "Events the component could not process.", |c| c.events_failed.get()),
        ("sluice_component_events_dropped_total", "Events the component dropped on purpose.", |c| {
            c.events_dropped.get()
        }),
        ("sluice_component_bytes_in_total", "Bytes the component received.", |c| c.bytes_in.get()),
        ("sluice_component_bytes_out_total", "Bytes the component sent.", |c| c.bytes_out.get()),
        ("sluice_component_errors_total", "Errors the component met.", |c| c.errors.get()),
    ];
    for (pipeline, c) in &s.registry.components() {
        let labels = [
            ("pipeline", pipeline.as_str()),
            ("kind", c.kind),
            ("component", c.id.as_str()),
            ("type", c.type_name.as_str()),
        ];
        for (name, help, read) in cseries {
            f.counter(name, help, &labels, read(c) as f64);
        }
        for (k, v) in c.extra() {
            let (name, v) = component_name(k, true, v as f64);
            f.counter(&name, &format!("The component counter `{k}` (see the component's documentation)."), &labels, v);
        }
        for (k, v) in c.gauges() {
            let (name, v) = component_name(k, false, v as f64);
            f.gauge(&name, &format!("The component gauge `{k}` (see the component's documentation)."), &labels, v);
        }
        for (k, values) in c.labelled() {
            let (name, _) = component_name(k, false, 0.0);
            for lv in values {
                let mut all: Vec<(&str, &str)> = labels.to_vec();
                all.extend(lv.labels.iter().map(|(l, v)| (*l, v.as_str())));
                f.gauge(
                    &name,
                    &format!("The component gauge `{k}` (see the component's documentation)."),
                    &all,
                    lv.value as f64,
                );
            }
        }
    }
    for (name, v) in s.backend.get().map(|b| b.counters()).unwrap_or_default() {
        let help = "A counter of the search backend (see docs/specs/metrics.md).";
        if name.ends_with("_total") {
            f.counter(name, help, &[], v as f64);
        } else {
            f.gauge(name, &help.replace("counter", "gauge"), &[], v as f64);
        }
    }
    let families: Vec<MetricFamily> = f.0.into_values().collect();
    let mut out = Vec::new();
    // INVARIANT: every family has a name, a help text and at least one
    // metric (families are only created with a sample), so encoding a
    // well-formed family list into a Vec cannot fail.
    if let Err(e) = TextEncoder::new().encode(&families, &mut out) {
        tracing::error!(error = %e, "encoding /metrics failed");
    }
    String::from_utf8(out).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use sluice_core::metrics::{ComponentMetrics, LabelledValue, PipelineMetrics, Registry};

    use super::{component_name, prometheus_text};
    use crate::ApiState;

    /// Every family a node with a pipeline and a component renders is named
    /// in docs/specs/metrics.md (dynamic component families by the examples
    /// the page gives).
    #[test]
    fn every_family_is_documented() {
        let doc = include_str!("../../../docs/specs/metrics.md");
        let registry = Arc::new(Registry::default());
        registry.pipeline(PipelineMetrics::new("main", "memory")).events_in.add(1);
        let c = registry.component("main", ComponentMetrics::new("source", "in", "tcp"));
        c.counter("oversized_frames").add(2);
        c.gauge("in_flight").set(1);
        c.replace_labelled("consumer_lag", vec![LabelledValue { labels: vec![("topic", "t".into())], value: 1 }]);
        let text = prometheus_text(&ApiState::new(registry, "n1"));
        let families: Vec<&str> = text.lines().filter_map(|l| l.strip_prefix("# TYPE ")?.split(' ').next()).collect();
        assert!(families.len() >= 25, "{text}");
        for f in families {
            assert!(doc.contains(&format!("`{f}`")), "docs/specs/metrics.md does not name {f}");
        }
    }

    #[test]
    fn component_names_carry_base_units_and_counter_suffixes() {
        assert_eq!(
            component_name("oversized_frames", true, 2.0),
            ("sluice_component_oversized_frames_total".into(), 2.0)
        );
        assert_eq!(
            component_name("ack_latency_us_total", true, 2e6),
            ("sluice_component_ack_latency_seconds_total".into(), 2.0)
        );
        assert_eq!(component_name("ack_p99_us", false, 5e5), ("sluice_component_ack_p99_seconds".into(), 0.5));
        assert_eq!(component_name("in_flight", false, 3.0), ("sluice_component_in_flight".into(), 3.0));
    }
}
