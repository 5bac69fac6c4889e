//! Metrics: per-component counters, 1m/5m/15m EWMA rates and latency
//! histograms, collected in a [`Registry`] that the API renders as
//! `/_node/stats` JSON and Prometheus text.
//!
//! Counters are plain atomics on the hot path; rates are computed by
//! [`Registry::tick`], which the runtime calls every [`TICK`].

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

/// How often [`Registry::tick`] is expected to run.
pub const TICK: Duration = Duration::from_secs(5);

/// A monotonically increasing counter.
#[derive(Debug, Default)]
pub struct Counter(AtomicU64);

impl Counter {
    /// Adds `n`.
    #[inline]
    pub fn add(&self, n: u64) {
        self.0.fetch_add(n, Ordering::Relaxed);
    }
    /// Adds one.
    #[inline]
    pub fn inc(&self) {
        self.add(1);
    }
    /// Current value.
    #[inline]
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// A value that goes up and down (queue depth).
#[derive(Debug, Default)]
pub struct Gauge(AtomicU64);

impl Gauge {
    /// Sets the value.
    pub fn set(&self, v: u64) {
        self.0.store(v, Ordering::Relaxed);
    }
    /// Adds `n`.
    pub fn add(&self, n: u64) {
        self.0.fetch_add(n, Ordering::Relaxed);
    }
    /// Subtracts `n`, saturating at zero.
    pub fn sub(&self, n: u64) {
        let _ = self.0.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| Some(v.saturating_sub(n)));
    }
    /// Current value.
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// Unix-load-average style moving averages of a rate (events per second).
#[derive(Debug, Clone, Default)]
pub struct Rates {
    last: u64,
    started: bool,
    /// 1-minute EWMA, events/s.
    pub m1: f64,
    /// 5-minute EWMA, events/s.
    pub m5: f64,
    /// 15-minute EWMA, events/s.
    pub m15: f64,
}

impl Rates {
    /// Folds in the counter's value after `interval`.
    pub fn update(&mut self, total: u64, interval: Duration) {
        let secs = interval.as_secs_f64().max(1e-3);
        let inst = total.saturating_sub(self.last) as f64 / secs;
        self.last = total;
        if !self.started {
            self.started = true;
            self.m1 = inst;
            self.m5 = inst;
            self.m15 = inst;
            return;
        }
        for (v, window) in [(&mut self.m1, 60.0), (&mut self.m5, 300.0), (&mut self.m15, 900.0)] {
            let alpha = 1.0 - (-secs / window).exp();
            *v += alpha * (inst - *v);
        }
    }
}

/// Counters of one source, filter or sink.
#[derive(Debug)]
pub struct ComponentMetrics {
    /// `source`, `filter`, `sink` or `queue`.
    pub kind: &'static str,
    /// The component's id in the config.
    pub id: String,
    /// The component's type name (`tcp`, `grok`, …).
    pub type_name: String,
    /// Events received (sources: accepted from the wire; filters/sinks: handed in).
    pub events_in: Counter,
    /// Events passed on (sources: into the queue; sinks: written).
    pub events_out: Counter,
    /// Events that failed (parse failures, tagged or dead-lettered).
    pub events_failed: Counter,
    /// Events dropped on purpose (`drop` filter).
    pub events_dropped: Counter,
    /// Bytes received.
    pub bytes_in: Counter,
    /// Bytes written.
    pub bytes_out: Counter,
    /// Errors that are not about one event (I/O, connection, retries).
    pub errors: Counter,
    extra: Mutex<BTreeMap<&'static str, Arc<Counter>>>,
    labelled: Mutex<BTreeMap<&'static str, Vec<LabelledValue>>>,
    gauges: Mutex<BTreeMap<&'static str, Arc<Gauge>>>,
    rates: Mutex<Rates>,
}

/// One series of a labelled gauge (consumer lag of one topic partition).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LabelledValue {
    /// Label names and values, in the order they are rendered.
    pub labels: Vec<(&'static str, String)>,
    /// The gauge's value.
    pub value: i64,
}

impl ComponentMetrics {
    /// New zeroed counters.
    pub fn new(kind: &'static str, id: impl Into<String>, type_name: impl Into<String>) -> Self {
        Self {
            kind,
            id: id.into(),
            type_name: type_name.into(),
            events_in: Counter::default(),
            events_out: Counter::default(),
            events_failed: Counter::default(),
            events_dropped: Counter::default(),
            bytes_in: Counter::default(),
            bytes_out: Counter::default(),
            errors: Counter::default(),
            extra: Mutex::new(BTreeMap::new()),
            labelled: Mutex::new(BTreeMap::new()),
            gauges: Mutex::new(BTreeMap::new()),
            rates: Mutex::new(Rates::default()),
        }
    }

    /// Replaces every series of the labelled gauge `name` (for values that
    /// exist per partition or per peer, such as `consumer_lag`): series not
    /// in `series` disappear, so a partition that moved to another process is
    /// no longer reported here.
    pub fn replace_labelled(&self, name: &'static str, series: Vec<LabelledValue>) {
        let mut m = self.labelled.lock();
        if series.is_empty() {
            m.remove(name);
        } else {
            m.insert(name, series);
        }
    }

    /// Snapshot of the labelled gauges, by name.
    pub fn labelled(&self) -> Vec<(&'static str, Vec<LabelledValue>)> {
        self.labelled.lock().iter().map(|(k, v)| (*k, v.clone())).collect()
    }

    /// A component-specific counter (`kernel_drops`, `oversized_frames`, …),
    /// created on first use; hold on to the `Arc` on hot paths.
    pub fn counter(&self, name: &'static str) -> Arc<Counter> {
        Arc::clone(self.extra.lock().entry(name).or_default())
    }

    /// Reports `counter`, owned by something the component shares (the
    /// store a `store` sink writes), as the component-specific counter `name`.
    pub fn share_counter(&self, name: &'static str, counter: Arc<Counter>) {
        self.extra.lock().insert(name, counter);
    }

    /// Snapshot of the component-specific counters.
    pub fn extra(&self) -> Vec<(&'static str, u64)> {
        self.extra.lock().iter().map(|(k, v)| (*k, v.get())).collect()
    }

    /// A component-specific gauge (a value that goes up and down: batches
    /// in flight, a share), created on first use.
    pub fn gauge(&self, name: &'static str) -> Arc<Gauge> {
        Arc::clone(self.gauges.lock().entry(name).or_default())
    }

    /// Snapshot of the component-specific gauges.
    pub fn gauges(&self) -> Vec<(&'static str, u64)> {
        self.gauges.lock().iter().map(|(k, v)| (*k, v.get())).collect()
    }

    /// Current EWMA rates of `events_out`.
    pub fn rates(&self) -> Rates {
        self.rates.lock().clone()
    }

    fn tick(&self, interval: Duration) {
        let total = if self.kind == "source" { self.events_in.get() } else { self.events_out.get() };
        self.rates.lock().update(total, interval);
    }
}

/// A latency histogram in microseconds (1 µs .. 1 h, 3 significant digits).
#[derive(Debug)]
pub struct LatencyHistogram(Mutex<hdrhistogram::Histogram<u64>>);

impl Default for LatencyHistogram {
    fn default() -> Self {
        // INVARIANT: the bounds are valid constants (low 1, high 3.6e9 µs, 3 digits).
        #[allow(clippy::expect_used)]
        let h = hdrhistogram::Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("valid histogram bounds");
        Self(Mutex::new(h))
    }
}

impl LatencyHistogram {
    /// Records one observation.
    pub fn record(&self, d: Duration) {
        let us = u64::try_from(d.as_micros()).unwrap_or(u64::MAX).clamp(1, 3_600_000_000);
        let _ = self.0.lock().record(us);
    }
    /// For a Prometheus histogram: (count, sum in µs, and for each upper
    /// bound in `bounds_us` the number of observations at or below it).
    /// The sum is the histogram's mean × count (hdrhistogram keeps 3
    /// significant digits, so it is that exact).
    pub fn buckets(&self, bounds_us: &[u64]) -> (u64, f64, Vec<u64>) {
        let h = self.0.lock();
        let cumulative = bounds_us.iter().map(|&b| if h.is_empty() { 0 } else { h.count_between(0, b) }).collect();
        (h.len(), h.mean() * h.len() as f64, cumulative)
    }
    /// (count, p50, p90, p99, max) in microseconds.
    pub fn summary(&self) -> (u64, u64, u64, u64, u64) {
        let h = self.0.lock();
        (h.len(), h.value_at_quantile(0.5), h.value_at_quantile(0.9), h.value_at_quantile(0.99), h.max())
    }
}

/// Counters of one pipeline: its queue and its batch latency.
#[derive(Debug)]
pub struct PipelineMetrics {
    /// Pipeline name.
    pub name: String,
    /// Events in the queue, not yet acknowledged by the sinks.
    pub queue_events: Gauge,
    /// Bytes in the queue, not yet acknowledged.
    pub queue_bytes: Gauge,
    /// Queue type (`memory` or `persisted`).
    pub queue_type: &'static str,
    /// Events that entered the queue.
    pub events_in: Counter,
    /// Events acknowledged by every sink.
    pub events_out: Counter,
    /// Events removed by filters on purpose.
    pub events_filtered: Counter,
    /// Time from a batch leaving the queue to its last sink acknowledging it.
    pub batch_latency: LatencyHistogram,
    rates: Mutex<Rates>,
}

impl PipelineMetrics {
    /// New zeroed pipeline metrics.
    pub fn new(name: impl Into<String>, queue_type: &'static str) -> Self {
        Self {
            name: name.into(),
            queue_events: Gauge::default(),
            queue_bytes: Gauge::default(),
            queue_type,
            events_in: Counter::default(),
            events_out: Counter::default(),
            events_filtered: Counter::default(),
            batch_latency: LatencyHistogram::default(),
            rates: Mutex::new(Rates::default()),
        }
    }
    /// EWMA rates of `events_out`.
    pub fn rates(&self) -> Rates {
        self.rates.lock().clone()
    }
}

/// Everything a node measures.
#[derive(Debug, Default)]
pub struct Registry {
    components: Mutex<Vec<(String, Arc<ComponentMetrics>)>>,
    pipelines: Mutex<Vec<Arc<PipelineMetrics>>>,
}

impl Registry {
    /// Registers (or replaces, on reload) a component of `pipeline`.
    pub fn component(&self, pipeline: &str, m: ComponentMetrics) -> Arc<ComponentMetrics> {
        let m = Arc::new(m);
        let mut comps = self.components.lock();
        comps.retain(|(p, c)| !(p == pipeline && c.kind == m.kind && c.id == m.id));
        comps.push((pipeline.to_string(), Arc::clone(&m)));
        m
    }

    /// Registers (or replaces) a pipeline.
    pub fn pipeline(&self, m: PipelineMetrics) -> Arc<PipelineMetrics> {
        let m = Arc::new(m);
        let mut ps = self.pipelines.lock();
        ps.retain(|p| p.name != m.name);
        ps.push(Arc::clone(&m));
        m
    }

    /// Forgets a pipeline and its components (on reload when it was removed).
    pub fn remove_pipeline(&self, name: &str) {
        self.pipelines.lock().retain(|p| p.name != name);
        self.components.lock().retain(|(p, _)| p != name);
    }

    /// All components with their pipeline name.
    pub fn components(&self) -> Vec<(String, Arc<ComponentMetrics>)> {
        self.components.lock().clone()
    }

    /// All pipelines.
    pub fn pipelines(&self) -> Vec<Arc<PipelineMetrics>> {
        self.pipelines.lock().clone()
    }

    /// Updates every EWMA; call every [`TICK`].
    pub fn tick(&self, interval: Duration) {
        for (_, c) in self.components.lock().iter() {
            c.tick(interval);
        }
        for p in self.pipelines.lock().iter() {
            p.rates.lock().update(p.events_out.get(), interval);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_converge() {
        let mut r = Rates::default();
        let mut total = 0;
        for _ in 0..200 {
            total += 5000; // 1000/s at 5 s ticks
            r.update(total, Duration::from_secs(5));
        }
        assert!((r.m1 - 1000.0).abs() < 1.0, "{r:?}");
        assert!((r.m15 - 1000.0).abs() < 50.0, "{r:?}");
    }

    #[test]
    fn labelled_series_are_replaced_as_a_whole() {
        let c = ComponentMetrics::new("source", "k", "kafka");
        let lag = |p: &str, v| LabelledValue { labels: vec![("topic", "t".into()), ("partition", p.into())], value: v };
        c.replace_labelled("consumer_lag", vec![lag("0", 5), lag("1", 7)]);
        assert_eq!(c.labelled(), vec![("consumer_lag", vec![lag("0", 5), lag("1", 7)])]);
        c.replace_labelled("consumer_lag", vec![lag("1", 2)]);
        assert_eq!(c.labelled(), vec![("consumer_lag", vec![lag("1", 2)])]);
        c.replace_labelled("consumer_lag", Vec::new());
        assert!(c.labelled().is_empty());
    }

    #[test]
    fn histogram_quantiles() {
        let h = LatencyHistogram::default();
        for i in 1..=100 {
            h.record(Duration::from_millis(i));
        }
        let (n, p50, _, p99, max) = h.summary();
        assert_eq!(n, 100);
        assert!((49_000..=51_000).contains(&p50), "{p50}");
        assert!((98_000..=100_100).contains(&p99), "{p99}");
        assert!(max >= 100_000 - 100);
    }
}
