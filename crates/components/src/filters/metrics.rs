//! `metrics`: counts events per meter and periodically emits one event with
//! the counts and 1/5/15-minute rates, like Logstash's metrics filter.
//!
//! `meter = ["events", "%{[http][response][status_code]}"]` are templates: a
//! static name is one meter, a name with field references gives a meter per
//! distinct rendered name. Events pass through unchanged. Every
//! `flush_interval` (default 5s) `flush` emits a single event with, per meter
//! `<name>`, the fields `<name>.count`, `<name>.rate_1m`, `.rate_5m`,
//! `.rate_15m` (nested under `<name>`, as Logstash does; `rates` picks which),
//! `message = "metrics"` and the `add_tag` tags (default `["metric"]`). Rates
//! are exponentially weighted moving averages updated every 5 s (Metriks /
//! Unix load average, as Logstash). `clear_interval` resets all meters.
//!
//! Concurrency: the filter is shared by every worker and each worker calls
//! `flush` about once a second, so the last flush time lives behind one
//! mutex and only the worker that finds the interval elapsed emits. On the
//! event path a static meter costs one atomic add per batch; templated
//! meters are rendered per event, summed per batch, and merged under one
//! lock per batch.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use serde::Deserialize;
use sluice_core::component::{BuildContext, Filter, FilterSpec};
use sluice_core::config::{parse_table, ConfigError, HumanDuration, Positive};
use sluice_core::metrics::{ComponentMetrics, Rates, TICK};
use sluice_core::{Event, Object, Str, Value};

use crate::template::Template;

/// Registry entry.
pub const SPEC: FilterSpec = FilterSpec {
    name: "metrics",
    summary: "count events per meter and emit rates periodically",
    example: "meter = [\"events\", \"%{[http][response][status_code]}\"]\nflush_interval = \"5s\"\n",
    build,
};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    /// Meter name templates.
    meter: Vec<String>,
    #[serde(default = "crate::defaults::secs::<5>")]
    flush_interval: Positive<HumanDuration>,
    /// Reset every meter this often (default: never).
    #[serde(default)]
    clear_interval: Option<HumanDuration>,
    /// Which of the 1, 5, 15-minute rates to emit.
    #[serde(default = "default_rates")]
    rates: Vec<u32>,
    /// Tags of the emitted event.
    #[serde(default = "default_tags")]
    add_tag: Vec<String>,
}

fn default_rates() -> Vec<u32> {
    vec![1, 5, 15]
}
fn default_tags() -> Vec<String> {
    vec!["metric".to_string()]
}

/// One meter: a count since the last clear and its moving averages.
#[derive(Debug, Default)]
struct Meter {
    count: AtomicU64,
    rates: Mutex<Rates>,
}

impl Meter {
    fn clear(&self) {
        self.count.store(0, Ordering::Relaxed);
        *self.rates.lock() = Rates::default();
    }
}

/// Timing state shared by the workers.
struct Clock {
    last_flush: Instant,
    last_tick: Instant,
    last_clear: Instant,
}

struct Metrics {
    /// Meters with a fixed name, in config order.
    fixed: Vec<(String, Arc<Meter>)>,
    /// Templated meter names.
    templated: Vec<Template>,
    /// Meters created from templates, by rendered name.
    dynamic: Mutex<HashMap<String, Arc<Meter>>>,
    clock: Mutex<Clock>,
    flush_interval: Duration,
    clear_interval: Option<Duration>,
    /// Emit rate_1m, rate_5m, rate_15m?
    rates: [bool; 3],
    add_tag: Vec<String>,
    metrics: Arc<ComponentMetrics>,
}

fn build(value: toml::Value, cx: &BuildContext) -> Result<Box<dyn Filter>, ConfigError> {
    Ok(Box::new(build_metrics(value, cx, Instant::now())?))
}

fn build_metrics(value: toml::Value, cx: &BuildContext, now: Instant) -> Result<Metrics, ConfigError> {
    let c: Config = parse_table(value, &cx.path)?;
    if c.meter.is_empty() {
        return Err(cx.error("meter", "expected at least one meter name"));
    }
    let mut fixed: Vec<(String, Arc<Meter>)> = Vec::new();
    let mut templated = Vec::new();
    for m in &c.meter {
        let t = Template::parse(m).map_err(|e| cx.error("meter", e.to_string()))?;
        if t.is_static() {
            if !fixed.iter().any(|(n, _)| n == m) {
                fixed.push((m.clone(), Arc::default()));
            }
        } else {
            templated.push(t);
        }
    }
    let mut rates = [false; 3];
    for r in &c.rates {
        match r {
            1 => rates[0] = true,
            5 => rates[1] = true,
            15 => rates[2] = true,
            other => return Err(cx.error("rates", format!("unsupported rate {other}: use 1, 5 and/or 15"))),
        }
    }
    Ok(Metrics {
        fixed,
        templated,
        dynamic: Mutex::new(HashMap::new()),
        clock: Mutex::new(Clock { last_flush: now, last_tick: now, last_clear: now }),
        flush_interval: c.flush_interval.0,
        clear_interval: c.clear_interval.map(|d| d.0),
        rates,
        add_tag: c.add_tag,
        metrics: Arc::clone(&cx.metrics),
    })
}

impl Metrics {
    /// Every meter (fixed first, then templated by name).
    fn meters(&self) -> Vec<(String, Arc<Meter>)> {
        let mut dynamic: Vec<(String, Arc<Meter>)> =
            self.dynamic.lock().iter().map(|(k, v)| (k.clone(), Arc::clone(v))).collect();
        dynamic.sort_by(|a, b| a.0.cmp(&b.0));
        let mut all = self.fixed.clone();
        all.extend(dynamic);
        all
    }

    /// `flush` with an explicit clock (tests).
    fn flush_at(&self, now: Instant, out: &mut Vec<Event>) {
        let mut clock = self.clock.lock();
        let since_tick = now.saturating_duration_since(clock.last_tick);
        let tick = since_tick >= TICK;
        let flush = now.saturating_duration_since(clock.last_flush) >= self.flush_interval;
        if !tick && !flush {
            return;
        }
        let meters = self.meters();
        if tick {
            clock.last_tick = now;
            for (_, m) in &meters {
                let total = m.count.load(Ordering::Relaxed);
                m.rates.lock().update(total, since_tick);
            }
        }
        if !flush {
            return;
        }
        clock.last_flush = now;
        let mut fields = Object::with_capacity(meters.len() + 2);
        fields.push_unique(Str::new("message"), Value::from("metrics"));
        for (name, m) in &meters {
            let count = m.count.load(Ordering::Relaxed);
            if count == 0 {
                continue;
            }
            let r = m.rates.lock().clone();
            let mut o = Object::with_capacity(4);
            o.push_unique(Str::new("count"), Value::from(count));
            for (on, key, v) in [(0, "rate_1m", r.m1), (1, "rate_5m", r.m5), (2, "rate_15m", r.m15)] {
                if self.rates[on] {
                    o.push_unique(Str::new(key), Value::from(v));
                }
            }
            fields.insert(name, Value::Object(o));
        }
        if let Some(ci) = self.clear_interval {
            if now.saturating_duration_since(clock.last_clear) >= ci {
                clock.last_clear = now;
                for (_, m) in &self.fixed {
                    m.clear();
                }
                self.dynamic.lock().clear();
            }
        }
        drop(clock);
        if fields.len() == 1 {
            return; // no meter saw an event: nothing to report (Logstash)
        }
        let mut e = Event::from_fields(fields);
        for t in &self.add_tag {
            e.add_tag(t);
        }
        self.metrics.events_out.inc();
        out.push(e);
    }
}

impl Filter for Metrics {
    fn process(&self, events: &mut Vec<Event>) {
        let n = events.len() as u64;
        self.metrics.events_in.add(n);
        if n > 0 {
            for (_, m) in &self.fixed {
                m.count.fetch_add(n, Ordering::Relaxed);
            }
        }
        if !self.templated.is_empty() {
            // Sum per batch first: few distinct names, one lock per batch.
            let mut local: Vec<(String, u64)> = Vec::new();
            for e in events.iter() {
                for t in &self.templated {
                    let name = t.render(e);
                    match local.iter_mut().find(|(k, _)| *k == name) {
                        Some((_, c)) => *c += 1,
                        None => local.push((name, 1)),
                    }
                }
            }
            let mut dynamic = self.dynamic.lock();
            for (name, c) in local {
                dynamic.entry(name).or_default().count.fetch_add(c, Ordering::Relaxed);
            }
        }
        self.metrics.events_out.add(n);
    }

    fn flush(&self, out: &mut Vec<Event>) {
        self.flush_at(Instant::now(), out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::build_filter;
    use sluice_core::codec::event_from_json;
    use sluice_core::path::FieldPath;

    fn make(body: &str) -> (Metrics, Instant) {
        let mut cx = BuildContext::for_test("filter", "m");
        cx.path = "test.metrics".into();
        let start = Instant::now();
        (build_metrics(toml::from_str(body).unwrap(), &cx, start).unwrap(), start)
    }
    fn get(e: &Event, p: &str) -> String {
        e.get(&FieldPath::parse(p).unwrap()).map(|v| v.to_json()).unwrap_or_else(|| "<none>".into())
    }

    #[test]
    fn counts_1000_events_and_emits_once_per_interval() {
        let (f, start) = make("meter = [\"events\"]");
        let mut total = 0;
        for _ in 0..8 {
            let mut batch: Vec<Event> = (0..125).map(|i| Event::from_message(format!("line {i}"))).collect();
            f.process(&mut batch);
            assert_eq!(batch.len(), 125, "events pass through");
            assert!(batch.iter().all(|e| e.fields().len() == 1 && !e.has_tag("metric")), "unchanged");
            total += batch.len();
        }
        assert_eq!(total, 1000);
        let mut out = Vec::new();
        f.flush_at(start + Duration::from_secs(1), &mut out);
        assert!(out.is_empty(), "interval not elapsed");
        // Several workers flushing at the same moment: one event.
        f.flush_at(start + Duration::from_secs(5), &mut out);
        f.flush_at(start + Duration::from_secs(5), &mut out);
        assert_eq!(out.len(), 1);
        let e = &out[0];
        assert_eq!(get(e, "events.count"), "1000");
        // First tick after 5 s: 1000 events / 5 s.
        assert_eq!(get(e, "events.rate_1m"), "200.0");
        assert_eq!(get(e, "events.rate_5m"), "200.0");
        assert_eq!(get(e, "events.rate_15m"), "200.0");
        assert_eq!(e.message(), Some("metrics"));
        assert!(e.has_tag("metric"));
        // No new events for 5 s: the 1-minute rate decays by exp(-5/60).
        f.flush_at(start + Duration::from_secs(10), &mut out);
        assert_eq!(out.len(), 2);
        let m1 = out[1].get(&FieldPath::parse("events.rate_1m").unwrap()).and_then(Value::as_f64).unwrap();
        assert!((m1 - 200.0 * (-5.0f64 / 60.0).exp()).abs() < 1e-9, "{m1}");
        assert_eq!(get(&out[1], "events.count"), "1000");
    }

    #[test]
    fn per_status_meters_rates_selection_and_clear() {
        let (f, start) = make(
            "meter = [\"events\", \"http_%{[http][response][status_code]}\"]\nrates = [1]\nadd_tag = [\"m\", \"stats\"]\nclear_interval = \"10s\"",
        );
        let mut batch: Vec<Event> = [200, 200, 404, 200, 500]
            .iter()
            .map(|s| {
                event_from_json(format!(r#"{{"http":{{"response":{{"status_code":{s}}}}}}}"#).as_bytes()).unwrap().0
            })
            .collect();
        f.process(&mut batch);
        let mut out = Vec::new();
        f.flush_at(start + Duration::from_secs(5), &mut out);
        let e = &out[0];
        assert_eq!(get(e, "events.count"), "5");
        assert_eq!(get(e, "http_200.count"), "3");
        assert_eq!(get(e, "http_404.count"), "1");
        assert_eq!(get(e, "http_500.count"), "1");
        assert_eq!(get(e, "http_200.rate_1m"), "0.6");
        assert_eq!(get(e, "http_200.rate_5m"), "<none>");
        assert_eq!(get(e, "tags"), r#"["m","stats"]"#);
        // Cleared at 10 s: the flush at 10 s still reports, then nothing is left.
        f.flush_at(start + Duration::from_secs(10), &mut out);
        assert_eq!(get(&out[1], "http_404.count"), "1");
        f.flush_at(start + Duration::from_secs(15), &mut out);
        assert_eq!(out.len(), 2, "no events since clear: nothing emitted");
        let mut one = vec![Event::from_message("x")];
        f.process(&mut one);
        f.flush_at(start + Duration::from_secs(20), &mut out);
        assert_eq!(out.len(), 3);
        assert_eq!(get(&out[2], "events.count"), "1");
        assert_eq!(get(&out[2], "http_%{[http][response][status_code]}.count"), "1", "missing field: literal name");
        assert_eq!(get(&out[2], "http_200"), "<none>");
    }

    #[test]
    fn real_clock_with_tiny_interval() {
        let f = build_filter(&SPEC, "meter = [\"events\"]\nflush_interval = \"10ms\"").unwrap();
        let mut batch: Vec<Event> = (0..1000).map(|_| Event::from_message("x")).collect();
        f.process(&mut batch);
        std::thread::sleep(Duration::from_millis(20));
        let mut out = Vec::new();
        f.flush(&mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(get(&out[0], "events.count"), "1000");
    }

    #[test]
    fn config_errors() {
        let e = build_filter(&SPEC, "meter = [\"a\"]\nrates = [2]").err().unwrap();
        assert_eq!(e.to_string(), "test.metrics.rates: unsupported rate 2: use 1, 5 and/or 15");
        let e = build_filter(&SPEC, "meter = []").err().unwrap();
        assert_eq!(e.path, "test.metrics.meter");
        let e = build_filter(&SPEC, "meter = [\"a\"]\ntimer = { t = \"x\" }").err().unwrap();
        assert!(e.to_string().contains("unknown field `timer`"), "{e}");
    }
}
