//! `generator`: synthetic events for stress tests and benchmarks.
//!
//! Emits `count` events (0 = until stopped) from `threads` tasks, optionally
//! paced at `rate` events/s in total. Each event's message is `message` with
//! `{seq}` replaced by a per-run sequence number (0-based, unique across
//! threads) and `{thread}` by the task number; with `json = true` the rendered
//! text is parsed as a JSON object (e.g. the thesis event) instead.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde::Deserialize;
use sluice_core::codec::event_from_json;
use sluice_core::component::{BoxError, BuildContext, Source, SourceContext, SourceSpec};
use sluice_core::config::{parse_table, ConfigError, Positive};
use sluice_core::Event;

/// Registry entry.
pub const SPEC: SourceSpec = SourceSpec {
    name: "generator",
    summary: "synthetic events (fixed message or template, threads, count, rate)",
    example: "message = \"hello {seq}\"\ncount = 10\n",
    build,
};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    /// Text of each event; `{seq}` and `{thread}` are replaced.
    #[serde(default = "default_message")]
    message: String,
    /// Parse the rendered text as a JSON object.
    #[serde(default)]
    json: bool,
    /// Events in total; 0 means until stopped.
    #[serde(default)]
    count: u64,
    /// Events per second in total; 0 means as fast as possible.
    #[serde(default)]
    rate: f64,
    /// Parallel generating tasks.
    #[serde(default = "crate::defaults::count::<1>")]
    threads: Positive<usize>,
    /// Events per push into the queue.
    #[serde(default = "crate::defaults::count::<512>")]
    batch_size: Positive<usize>,
}

fn default_message() -> String {
    "generated event {seq}".into()
}

fn build(value: toml::Value, cx: &BuildContext) -> Result<Box<dyn Source>, ConfigError> {
    let c: Config = parse_table(value, &cx.path)?;
    if !(c.rate >= 0.0 && c.rate.is_finite()) {
        return Err(cx.error("rate", "must be a non-negative number"));
    }
    if c.json {
        let sample = render(&c.message, 0, 0);
        if let Err(e) = event_from_json(sample.as_bytes()) {
            return Err(cx.error("message", format!("json = true but the rendered message is not a json object: {e}")));
        }
    }
    Ok(Box::new(Generator { c: Arc::new(c) }))
}

struct Generator {
    c: Arc<Config>,
}

fn render(template: &str, seq: u64, thread: usize) -> String {
    if !template.contains('{') {
        return template.to_string();
    }
    template.replace("{seq}", &seq.to_string()).replace("{thread}", &thread.to_string())
}

#[async_trait]
impl Source for Generator {
    async fn run(self: Box<Self>, cx: SourceContext) -> Result<(), BoxError> {
        let next = Arc::new(AtomicU64::new(0));
        let started = Instant::now();
        let mut tasks = Vec::new();
        for thread in 0..self.c.threads.get() {
            let c = Arc::clone(&self.c);
            let cx = cx.clone();
            let next = Arc::clone(&next);
            tasks.push(tokio::spawn(async move { generate(c, cx, next, thread, started).await }));
        }
        for t in tasks {
            t.await??;
        }
        Ok(())
    }
}

async fn generate(
    c: Arc<Config>,
    cx: SourceContext,
    next: Arc<AtomicU64>,
    thread: usize,
    started: Instant,
) -> Result<(), BoxError> {
    let source: Arc<str> = Arc::from(format!("generator:{}", cx.id));
    loop {
        if cx.shutdown.is_cancelled() {
            return Ok(());
        }
        let first = next.fetch_add(c.batch_size.get() as u64, Ordering::Relaxed);
        let mut n = c.batch_size.get() as u64;
        if c.count > 0 {
            if first >= c.count {
                return Ok(());
            }
            n = n.min(c.count - first);
        }
        if c.rate > 0.0 {
            // Pace on the intended schedule of the batch's last event.
            let due = started + Duration::from_secs_f64((first + n) as f64 / c.rate);
            let now = Instant::now();
            if due > now {
                tokio::select! {
                    _ = tokio::time::sleep(due - now) => {}
                    _ = cx.shutdown.cancelled() => return Ok(()),
                }
            }
        }
        let mut events = Vec::with_capacity(n as usize);
        let mut bytes = 0u64;
        for seq in first..first + n {
            let text = render(&c.message, seq, thread);
            bytes += text.len() as u64;
            let mut e = if c.json {
                match event_from_json(text.as_bytes()) {
                    Ok((e, _)) => e,
                    Err(_) => {
                        cx.metrics.events_failed.inc();
                        let mut e = Event::from_message(&text);
                        e.add_tag("_jsonparsefailure");
                        e
                    }
                }
            } else {
                Event::from_message(&text)
            };
            e.source = Arc::clone(&source);
            events.push(e);
        }
        cx.metrics.events_in.add(n);
        cx.metrics.bytes_in.add(bytes);
        if cx.out.send(events).await.is_err() {
            return Ok(());
        }
        cx.metrics.events_out.add(n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit;

    #[tokio::test]
    async fn emits_exact_count_with_unique_seqs() {
        let cfg = "message = \"e {seq}\"\ncount = 1000\nthreads = 3\nbatch_size = 7\n";
        let events = testkit::run_source(&SPEC, cfg).await.unwrap();
        assert_eq!(events.len(), 1000);
        let mut seqs: Vec<u64> = events.iter().map(|e| e.message().unwrap()[2..].parse().unwrap()).collect();
        seqs.sort_unstable();
        assert_eq!(seqs, (0..1000).collect::<Vec<_>>());
    }

    #[tokio::test]
    async fn json_template() {
        let cfg = "message = '{\"n\":{seq}}'\njson = true\ncount = 3\n";
        let events = testkit::run_source(&SPEC, cfg).await.unwrap();
        let mut ns: Vec<i64> =
            events.iter().map(|e| e.fields().get(&"n").and_then(sluice_core::Value::as_i64).unwrap()).collect();
        ns.sort_unstable();
        assert_eq!(ns, vec![0, 1, 2]);
    }

    #[test]
    fn bad_config_names_the_key() {
        let e = testkit::build_source(&SPEC, "threads = 0").err().unwrap();
        assert_eq!(e.to_string(), "test.generator.threads: must be at least 1");
        let e = testkit::build_source(&SPEC, "json = true\nmessage = \"nope\"").err().unwrap();
        assert!(e.to_string().starts_with("test.generator.message: json = true but"), "{e}");
    }
}
