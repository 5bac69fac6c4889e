//! The agent → processor tests' pieces (`agent_ship_e2e`, `dispatcher_e2e`):
//! a processor node whose output file is read back, and the agent's config
//! (generator → persisted queue → `sluice` sink listing the receivers).

use std::path::{Path, PathBuf};

use super::{free_port, wait_port, Dir, Proc};

/// A processor: `sluice run` on `dir/<name>.toml`, its `sluice` source on
/// `port`, its file sink writing `out` (`dir/<name>.ndjson`).
pub struct Processor {
    pub port: u16,
    pub api: u16,
    pub out: PathBuf,
    pub config: PathBuf,
    pub log: PathBuf,
    pub proc: Option<Proc>,
}

impl Processor {
    /// Writes the config `text(data_dir, out, port, api)` (two fresh ports).
    pub fn new(dir: &Dir, name: &str, text: impl FnOnce(&Path, &Path, u16, u16) -> String) -> Self {
        let (port, api) = (free_port(), free_port());
        let out = dir.path(&format!("{name}.ndjson"));
        let config = dir.path(&format!("{name}.toml"));
        std::fs::write(&config, text(&dir.path(&format!("{name}-data")), &out, port, api)).unwrap();
        Self { port, api, out, config, log: dir.path(&format!("{name}.log")), proc: None }
    }

    pub fn start(&mut self) {
        let mut p = Proc::start(&["run", self.config.to_str().unwrap()], &self.log, "processor");
        wait_port(self.port, &mut p);
        self.proc = Some(p);
    }

    pub fn kill9(&mut self) {
        if let Some(mut p) = self.proc.take() {
            p.kill9();
        }
    }

    pub fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }
}

/// The agent's config `dir/<name>.toml`: the generator (`gen` lines) →
/// persisted queue → `sluice` sink to `receivers` with `algorithm`, `token`
/// (identity acme/web/agent-`name`) and the `extra` sink lines.
pub fn agent_config(
    dir: &Dir,
    name: &str,
    receivers: &[String],
    algorithm: &str,
    token: &str,
    gen: &str,
    extra: &str,
) -> PathBuf {
    let list: Vec<String> = receivers.iter().map(|r| format!("\"{r}\"")).collect();
    let config = dir.path(&format!("{name}.toml"));
    std::fs::write(
        &config,
        format!(
            r#"[node]
data_dir = "{data}"
shutdown_timeout = "5s"
[api]
address = ""
[pipelines.ship]
batch_size = 256
batch_delay = "20ms"
[pipelines.ship.queue]
type = "persisted"
max_bytes = "256MiB"
fsync = "never"
[pipelines.ship.sources.gen]
type = "generator"
batch_size = 256
{gen}
[pipelines.ship.sinks.out]
type = "sluice"
receivers = [{list}]
algorithm = "{algorithm}"
token = "{token}"
group = "acme"
subgroup = "web"
host = "agent-{name}"
window = 4
heartbeat_interval = "500ms"
backoff_max = "500ms"
block_timeout = "2s"
{extra}
"#,
            data = dir.path(&format!("{name}-data")).display(),
            list = list.join(", "),
        ),
    )
    .unwrap();
    config
}

/// `sluice agent` on `config`, its log in `dir/<name>.log`.
pub fn start_agent(dir: &Dir, name: &str, config: &Path) -> Proc {
    Proc::start(&["agent", "--config", config.to_str().unwrap()], &dir.path(&format!("{name}.log")), "agent")
}
