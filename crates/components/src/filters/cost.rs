//! `cost`: makes each event cost a configured amount of work, to model a
//! slower (or unequal) processor in benchmarks and tests — issue #6's
//! thesis experiments capped their processors' CPU; here a processor is made
//! the bottleneck by config.
//!
//! - `cpu_per_event = "20us"`: busy work (a hash loop, checked against the
//!   clock) for that long per event: burns real CPU like an expensive filter;
//! - `sleep_per_event = "100us"`: the worker sleeps `n × duration` per batch:
//!   slow without burning CPU (on a small machine the other processes keep
//!   their cores).
//!
//! Events pass unchanged. Counted: `events_in`, `events_out`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Deserialize;
use sluice_core::component::{BuildContext, Filter, FilterSpec};
use sluice_core::config::{parse_table, ConfigError, HumanDuration};
use sluice_core::metrics::ComponentMetrics;
use sluice_core::Event;

/// Registry entry.
pub const SPEC: FilterSpec = FilterSpec {
    name: "cost",
    summary: "spend configured CPU time (or sleep) per event: model a slow processor",
    example: "cpu_per_event = \"1us\"\n",
    build,
};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    /// Busy CPU time per event.
    #[serde(default)]
    cpu_per_event: Option<HumanDuration>,
    /// Sleep per event (taken once per batch, `n ×` this).
    #[serde(default)]
    sleep_per_event: Option<HumanDuration>,
}

fn build(value: toml::Value, cx: &BuildContext) -> Result<Box<dyn Filter>, ConfigError> {
    let c: Config = parse_table(value, &cx.path)?;
    if c.cpu_per_event.is_none() && c.sleep_per_event.is_none() {
        return Err(cx.error("cpu_per_event", "set cpu_per_event and/or sleep_per_event"));
    }
    Ok(Box::new(Cost {
        cpu: c.cpu_per_event.map_or(Duration::ZERO, |d| d.0),
        sleep: c.sleep_per_event.map_or(Duration::ZERO, |d| d.0),
        metrics: Arc::clone(&cx.metrics),
    }))
}

struct Cost {
    cpu: Duration,
    sleep: Duration,
    metrics: Arc<ComponentMetrics>,
}

/// Spins for `d`, doing hash work the optimiser cannot remove.
fn burn(d: Duration) -> u64 {
    let start = Instant::now();
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    loop {
        for _ in 0..64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
        }
        if start.elapsed() >= d {
            return std::hint::black_box(x);
        }
    }
}

impl Filter for Cost {
    fn process(&self, events: &mut Vec<Event>) {
        let n = events.len() as u32;
        self.metrics.events_in.add(u64::from(n));
        if !self.cpu.is_zero() {
            burn(self.cpu * n);
        }
        if !self.sleep.is_zero() {
            std::thread::sleep(self.sleep * n);
        }
        self.metrics.events_out.add(u64::from(n));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::{build_filter, run_filter};

    #[test]
    fn events_pass_unchanged_and_take_at_least_the_cost() {
        let events: Vec<Event> = (0..100).map(|i| Event::from_message(format!("{i}"))).collect();
        let started = Instant::now();
        let out = run_filter(&SPEC, "cpu_per_event = \"100us\"\nsleep_per_event = \"100us\"", events.clone());
        // 100 events × (100 µs busy + 100 µs asleep) is at least 20 ms (a lower bound, not a speed claim).
        assert!(started.elapsed() >= Duration::from_millis(20));
        assert_eq!(out, events);
    }

    #[test]
    fn needs_a_cost() {
        let e = build_filter(&SPEC, "").err().unwrap();
        assert_eq!(e.to_string(), "test.cost.cpu_per_event: set cpu_per_event and/or sleep_per_event");
    }
}
