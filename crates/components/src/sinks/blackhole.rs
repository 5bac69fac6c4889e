//! `blackhole`: counts and discards, for benchmarks. `print_interval`
//! optionally logs the running count.

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde::Deserialize;
use sluice_core::component::{BoxError, BuildContext, Sink, SinkSpec};
use sluice_core::config::{parse_table, ConfigError, HumanDuration};
use sluice_core::metrics::ComponentMetrics;
use sluice_core::Event;

/// Registry entry.
pub const SPEC: SinkSpec =
    SinkSpec { name: "blackhole", summary: "count and discard (benchmarks)", example: "", build };

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    /// Log the running total this often.
    #[serde(default)]
    print_interval: Option<HumanDuration>,
}

fn build(value: toml::Value, cx: &BuildContext) -> Result<Box<dyn Sink>, ConfigError> {
    let c: Config = parse_table(value, &cx.path)?;
    Ok(Box::new(Blackhole {
        every: c.print_interval.map(|d| d.0),
        last: Instant::now(),
        metrics: Arc::clone(&cx.metrics),
    }))
}

struct Blackhole {
    every: Option<Duration>,
    last: Instant,
    metrics: Arc<ComponentMetrics>,
}

#[async_trait]
impl Sink for Blackhole {
    async fn write(&mut self, events: &[Event]) -> Result<(), BoxError> {
        if let Some(every) = self.every {
            if self.last.elapsed() >= every {
                self.last = Instant::now();
                tracing::info!(sink = %self.metrics.id, total = self.metrics.events_out.get() + events.len() as u64, "blackhole");
            }
        }
        Ok(())
    }
}
