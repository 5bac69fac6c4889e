//! `internal_metrics`: the node's own counters as events, every `interval`.
//!
//! Put it in a pipeline of its own whose sink points at a *separate*
//! destination (another cluster, a file, an HTTP endpoint): a monitoring
//! pipeline must not depend on the cluster it monitors. One event per
//! pipeline per interval, with the pipeline's events in/out/filtered, 1m/5m/15m
//! rates, queue depth, batch latency percentiles, and each component's
//! counters under `components.<kind>.<id>`.

use std::sync::Arc;

use async_trait::async_trait;
use serde::Deserialize;
use sluice_core::component::{BoxError, BuildContext, Source, SourceContext, SourceSpec};
use sluice_core::config::{parse_table, ConfigError, HumanDuration, Positive};
use sluice_core::metrics::Registry;
use sluice_core::{Event, Object, Value};

/// Registry entry.
pub const SPEC: SourceSpec = SourceSpec {
    name: "internal_metrics",
    summary: "the node's own metrics as events (ship them to a separate destination)",
    example: "interval = \"10s\"\n",
    build,
};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    /// How often to emit.
    #[serde(default = "crate::defaults::secs::<10>")]
    interval: Positive<HumanDuration>,
}

fn build(value: toml::Value, cx: &BuildContext) -> Result<Box<dyn Source>, ConfigError> {
    let c: Config = parse_table(value, &cx.path)?;
    Ok(Box::new(InternalMetrics { interval: c.interval.0, registry: Arc::clone(&cx.registry) }))
}

struct InternalMetrics {
    interval: std::time::Duration,
    registry: Arc<Registry>,
}

fn obj(pairs: &[(&str, Value)]) -> Value {
    let mut o = Object::with_capacity(pairs.len());
    for (k, v) in pairs {
        o.insert(*k, v.clone());
    }
    Value::Object(o)
}

/// One event per pipeline describing its counters now.
pub fn snapshot(registry: &Registry) -> Vec<Event> {
    let comps = registry.components();
    let mut out = Vec::new();
    for p in registry.pipelines() {
        let r = p.rates();
        let (n, p50, p90, p99, max) = p.batch_latency.summary();
        let mut components = Object::new();
        for (pname, c) in &comps {
            if *pname != p.name {
                continue;
            }
            let mut counters = Object::new();
            for (k, v) in c.extra() {
                counters.insert(k, Value::from(v));
            }
            let entry = obj(&[
                ("type", Value::from(c.type_name.as_str())),
                ("events_in", Value::from(c.events_in.get())),
                ("events_out", Value::from(c.events_out.get())),
                ("events_failed", Value::from(c.events_failed.get())),
                ("events_dropped", Value::from(c.events_dropped.get())),
                ("errors", Value::from(c.errors.get())),
                ("counters", Value::Object(counters)),
            ]);
            let kind = components.get_or_insert_with(c.kind, || Value::Object(Object::new()));
            if let Some(k) = kind.as_object_mut() {
                k.insert(c.id.as_str(), entry);
            }
        }
        let mut fields = Object::with_capacity(8);
        fields.insert("message", Value::from("sluice metrics"));
        fields.insert("pipeline", Value::from(p.name.as_str()));
        fields.insert(
            "events",
            obj(&[
                ("in", Value::from(p.events_in.get())),
                ("out", Value::from(p.events_out.get())),
                ("filtered", Value::from(p.events_filtered.get())),
            ]),
        );
        fields
            .insert("rates", obj(&[("1m", Value::from(r.m1)), ("5m", Value::from(r.m5)), ("15m", Value::from(r.m15))]));
        fields.insert(
            "queue",
            obj(&[
                ("type", Value::from(p.queue_type)),
                ("events", Value::from(p.queue_events.get())),
                ("bytes", Value::from(p.queue_bytes.get())),
            ]),
        );
        fields.insert(
            "batch_latency_us",
            obj(&[
                ("count", Value::from(n)),
                ("p50", Value::from(p50)),
                ("p90", Value::from(p90)),
                ("p99", Value::from(p99)),
                ("max", Value::from(max)),
            ]),
        );
        fields.insert("components", Value::Object(components));
        out.push(Event::from_fields(fields));
    }
    out
}

#[async_trait]
impl Source for InternalMetrics {
    async fn run(self: Box<Self>, cx: SourceContext) -> Result<(), BoxError> {
        let mut tick = tokio::time::interval(self.interval);
        tick.tick().await;
        loop {
            tokio::select! {
                _ = cx.shutdown.cancelled() => return Ok(()),
                _ = tick.tick() => {}
            }
            let events = snapshot(&self.registry);
            let n = events.len() as u64;
            cx.metrics.events_in.add(n);
            if cx.out.send(events).await.is_err() {
                return Ok(());
            }
            cx.metrics.events_out.add(n);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_core::metrics::{ComponentMetrics, PipelineMetrics};
    use sluice_core::path::FieldPath;

    #[test]
    fn snapshot_has_pipeline_and_component_counters() {
        let reg = Registry::default();
        let p = reg.pipeline(PipelineMetrics::new("main", "persisted"));
        p.events_in.add(12);
        p.events_out.add(10);
        p.queue_events.set(2);
        let c = reg.component("main", ComponentMetrics::new("source", "udp", "syslog_udp"));
        c.events_in.add(12);
        c.counter("kernel_drops").add(3);
        let ev = snapshot(&reg);
        assert_eq!(ev.len(), 1);
        let get = |p: &str| ev[0].get(&FieldPath::parse(p).unwrap()).cloned();
        assert_eq!(get("pipeline"), Some(Value::from("main")));
        assert_eq!(get("events.in"), Some(Value::from(12)));
        assert_eq!(get("events.out"), Some(Value::from(10)));
        assert_eq!(get("queue.events"), Some(Value::from(2)));
        assert_eq!(get("[components][source][udp][counters][kernel_drops]"), Some(Value::from(3)));
        assert_eq!(get("[components][source][udp][type]"), Some(Value::from("syslog_udp")));
    }
}
