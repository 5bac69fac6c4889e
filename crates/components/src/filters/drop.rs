//! `drop`: removes events on purpose (usually inside an `if` block). Dropped
//! events are counted in `events_dropped` and acknowledged: dropping is a
//! decision, not a loss.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use serde::Deserialize;
use sluice_core::component::{BuildContext, Filter, FilterSpec};
use sluice_core::config::{parse_table, ConfigError};
use sluice_core::metrics::ComponentMetrics;
use sluice_core::Event;

/// Registry entry.
pub const SPEC: FilterSpec =
    FilterSpec { name: "drop", summary: "drop events (all, or a percentage)", example: "", build };

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    /// Share of events to drop, 0–100 (deterministic: every n-th event).
    #[serde(default = "default_pct")]
    percentage: f64,
}

fn default_pct() -> f64 {
    100.0
}

fn build(value: toml::Value, cx: &BuildContext) -> Result<Box<dyn Filter>, ConfigError> {
    let c: Config = parse_table(value, &cx.path)?;
    if !(0.0..=100.0).contains(&c.percentage) {
        return Err(cx.error("percentage", "must be between 0 and 100"));
    }
    Ok(Box::new(Drop { pct: c.percentage, seen: AtomicU64::new(0), metrics: Arc::clone(&cx.metrics) }))
}

struct Drop {
    pct: f64,
    seen: AtomicU64,
    metrics: Arc<ComponentMetrics>,
}

impl Filter for Drop {
    fn process(&self, events: &mut Vec<Event>) {
        let before = events.len();
        self.metrics.events_in.add(before as u64);
        if self.pct >= 100.0 {
            events.clear();
        } else if self.pct > 0.0 {
            events.retain(|_| {
                let n = self.seen.fetch_add(1, Ordering::Relaxed);
                // Drop event n when the running quota crosses an integer.
                let quota = |k: u64| (k as f64 * self.pct / 100.0).floor() as u64;
                quota(n + 1) == quota(n)
            });
        }
        let dropped = (before - events.len()) as u64;
        self.metrics.events_dropped.add(dropped);
        self.metrics.events_out.add(events.len() as u64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::run_filter;

    #[test]
    fn drops_all_or_share() {
        let ev = || (0..1000).map(|i| Event::from_message(i.to_string())).collect::<Vec<_>>();
        assert_eq!(run_filter(&SPEC, "", ev()).len(), 0);
        assert_eq!(run_filter(&SPEC, "percentage = 25", ev()).len(), 750);
        assert_eq!(run_filter(&SPEC, "percentage = 0", ev()).len(), 1000);
        assert!(crate::testkit::build_filter(&SPEC, "percentage = 101").is_err());
    }
}
