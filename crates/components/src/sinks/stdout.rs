//! `stdout`: writes events as ndjson to standard output.

use async_trait::async_trait;
use serde::Deserialize;
use sluice_core::codec::write_json;
use sluice_core::component::{BoxError, BuildContext, Sink, SinkSpec};
use sluice_core::config::{parse_table, ConfigError};
use sluice_core::Event;
use tokio::io::AsyncWriteExt;

/// Registry entry.
pub const SPEC: SinkSpec = SinkSpec { name: "stdout", summary: "ndjson to standard output", example: "", build };

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {}

fn build(value: toml::Value, cx: &BuildContext) -> Result<Box<dyn Sink>, ConfigError> {
    let _c: Config = parse_table(value, &cx.path)?;
    Ok(Box::new(Stdout { buf: Vec::new() }))
}

struct Stdout {
    buf: Vec<u8>,
}

#[async_trait]
impl Sink for Stdout {
    async fn write(&mut self, events: &[Event]) -> Result<(), BoxError> {
        self.buf.clear();
        for e in events {
            write_json(e, &mut self.buf);
            self.buf.push(b'\n');
        }
        let mut out = tokio::io::stdout();
        out.write_all(&self.buf).await?;
        out.flush().await?;
        Ok(())
    }
}
