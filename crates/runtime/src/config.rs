//! The config file: `[node]`, `[api]`, `[auth]` (user accounts, see
//! `sluice_users::AuthConfig`) and `[pipelines.<name>]` with
//! `sources.<id>`, an ordered `[[filters]]` list and `sinks.<id>`.
//!
//! Parsing happens in two steps so that every error names its key path and
//! all of them are reported at once: the file is read as a TOML tree, then each
//! section and each component table is deserialized on its own
//! (`deny_unknown_fields` everywhere). Components are built (but not started)
//! by [`crate::topology`], which is what `sluice validate` runs too.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use sluice_core::config::{parse_table, ByteSize, ConfigError, HumanDuration, Positive};

/// A whole config file, its components still as TOML (see [`crate::topology`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// `[node]`.
    pub node: NodeConfig,
    /// `[api]`.
    pub api: ApiConfig,
    /// `[auth]`: user accounts, sessions, LDAP; `None` without the section
    /// (only the static `[api.tokens]` then).
    pub auth: Option<sluice_users::AuthConfig>,
    /// `[pipelines.<name>]`, by name.
    pub pipelines: BTreeMap<String, PipelineConfig>,
    /// `[search]`: the engine the search API reads (default: the embedded store).
    pub search: SearchConfig,
}

/// `[search]`: which engine answers `/api/v1/search`, `/aggregate`,
/// `/fields` and `/tail` (ADR 0086).
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(tag = "backend", rename_all = "snake_case", deny_unknown_fields)]
pub enum SearchConfig {
    /// The embedded store a `store` sink of this node writes (today's behaviour).
    #[default]
    Embedded,
    /// An OpenSearch cluster (`endpoints`, `index`, `auth`, `ca_file`…).
    Opensearch(sluice_opensearch::OpenSearchConfig),
}

/// `[node]`: process-wide settings.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeConfig {
    /// Name reported in `/_node/stats` (default: the host name).
    #[serde(default = "default_node_name")]
    pub name: String,
    /// Where queues and positions live.
    #[serde(default = "default_data_dir")]
    pub data_dir: PathBuf,
    /// How long SIGTERM waits for in-flight batches before giving up on them
    /// (a persisted queue keeps them for the next start).
    #[serde(default = "default_shutdown_timeout")]
    pub shutdown_timeout: HumanDuration,
    /// Threads of the async runtime that runs sources, sinks and the API
    /// (default: the number of cores; the agent role: at most 2, see
    /// [`Config::apply_role_defaults`]). Read at start (a reload keeps the
    /// running value).
    #[serde(default)]
    pub runtime_threads: Option<Positive<usize>>,
}

impl Default for NodeConfig {
    fn default() -> Self {
        Self {
            name: default_node_name(),
            data_dir: default_data_dir(),
            shutdown_timeout: default_shutdown_timeout(),
            runtime_threads: None,
        }
    }
}

/// What a node runs as (`sluice run`, `sluice agent`, `sluice dispatcher`);
/// the role chooses the defaults of settings a config leaves out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// `sluice run`: sized for throughput (threads per core).
    Node,
    /// `sluice agent`: one per host beside the applications, so sized for
    /// memory (docs/adr/0011-agent-memory.md).
    Agent,
    /// `sluice dispatcher`: a relay tier, sized like a node.
    Dispatcher,
}

/// Async runtime threads of the agent role when `node.runtime_threads` is unset.
pub const AGENT_RUNTIME_THREADS: usize = 2;

impl Config {
    /// Fills the role's defaults into keys the file left out. For
    /// [`Role::Agent`]: `node.runtime_threads` = min(cores, 2), each
    /// pipeline's `workers` = 1 and a persisted queue's `shards` = 1 (instead
    /// of one per core each): an agent moves batches from its sources to a
    /// sink and needs neither on a many-core host. Keys set in the file are
    /// kept, so a user can still raise them. Other roles: nothing changes.
    pub fn apply_role_defaults(&mut self, role: Role) {
        if role != Role::Agent {
            return;
        }
        if self.node.runtime_threads.is_none() {
            self.node.runtime_threads = Positive::new(cores().min(AGENT_RUNTIME_THREADS));
        }
        for p in self.pipelines.values_mut() {
            if p.raw.get("workers").is_none() {
                p.workers = 1;
            }
            if let QueueConfig::Persisted(q) = &mut p.queue {
                if q.shards.is_none() {
                    q.shards = Some(1);
                }
            }
        }
    }
}

fn default_node_name() -> String {
    hostname().unwrap_or_else(|| "sluice".into())
}

/// The machine's host name: the default `host` of a source's identity and
/// of the node name.
pub use sluice_core::secret::hostname;
fn default_data_dir() -> PathBuf {
    PathBuf::from("data")
}
fn default_shutdown_timeout() -> HumanDuration {
    HumanDuration(std::time::Duration::from_secs(30))
}

/// `[api]`: the node's HTTP listener — search API, `/_node/stats`,
/// `/metrics`, and the routes of `http` sources with `address = "api"`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApiConfig {
    /// Listen address; empty disables the API.
    #[serde(default = "default_api_address")]
    pub address: String,
    /// Static bearer tokens for the search API, by name (`[api.tokens.<name>]`).
    /// With none, the search endpoints answer `401` to everyone.
    #[serde(default)]
    pub tokens: BTreeMap<String, TokenConfig>,
    /// Connections served at once; one more gets `503` and is closed
    /// (counted in `sluice_api_refused_connections_total`).
    #[serde(default = "default_api_max_connections")]
    pub max_connections: Positive<usize>,
    /// Longest time from a request's first byte to the end of its header.
    #[serde(default = "default_header_timeout")]
    pub header_timeout: Positive<HumanDuration>,
    /// Longest time to receive a request's whole body, from its first read.
    #[serde(default = "default_body_timeout")]
    pub body_timeout: Positive<HumanDuration>,
    /// A connection with no request in progress is closed after this long.
    #[serde(default = "default_idle_timeout")]
    pub idle_timeout: Positive<HumanDuration>,
    /// Who may read `/_node/stats` and `/metrics` (ADR 0070): `"token"` (a
    /// caller the API authenticates) or `"none"` (anyone who reaches the
    /// port). Default: `"none"` when `address` is a loopback address,
    /// `"token"` otherwise.
    #[serde(default)]
    pub metrics_auth: Option<MetricsAuth>,
    /// HTTPS: `tls = { cert = "server.pem", key = "server.key" }`, with
    /// `client_ca` to require client certificates.
    #[serde(default)]
    pub tls: Option<sluice_components::tls::ListenTls>,
}

/// `[api] metrics_auth`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MetricsAuth {
    /// A bearer token (or a session) like the rest of the API.
    Token,
    /// No credential: for a monitoring agent on a trusted network.
    None,
}

impl ApiConfig {
    /// Whether `/_node/stats` and `/metrics` need a credential: as
    /// `metrics_auth` says, else when the API listens beyond loopback (an
    /// address that is not `127.0.0.0/8`, `::1` or `localhost`, including
    /// `0.0.0.0` and host names).
    pub fn metrics_need_token(&self) -> bool {
        match self.metrics_auth {
            Some(MetricsAuth::Token) => true,
            Some(MetricsAuth::None) => false,
            None => !is_loopback_address(&self.address),
        }
    }
}

impl Default for ApiConfig {
    fn default() -> Self {
        Self {
            address: default_api_address(),
            tokens: BTreeMap::new(),
            max_connections: default_api_max_connections(),
            header_timeout: default_header_timeout(),
            body_timeout: default_body_timeout(),
            idle_timeout: default_idle_timeout(),
            metrics_auth: None,
            tls: None,
        }
    }
}

impl ApiConfig {
    /// The listener's timeouts.
    pub fn timeouts(&self) -> sluice_net::HttpTimeouts {
        sluice_net::HttpTimeouts { header: self.header_timeout.0, body: self.body_timeout.0, idle: self.idle_timeout.0 }
    }
}

/// Whether a listen address (`host:port`) is on loopback only.
fn is_loopback_address(address: &str) -> bool {
    if let Ok(a) = address.parse::<std::net::SocketAddr>() {
        return a.ip().is_loopback();
    }
    address.rsplit_once(':').is_some_and(|(host, _)| host.eq_ignore_ascii_case("localhost"))
}

fn default_api_address() -> String {
    "127.0.0.1:8080".into()
}
fn default_api_max_connections() -> Positive<usize> {
    Positive::<usize>::of(4096)
}
fn default_header_timeout() -> Positive<HumanDuration> {
    Positive::duration(sluice_net::http::DEFAULT_HEADER)
}
fn default_body_timeout() -> Positive<HumanDuration> {
    Positive::duration(sluice_net::http::DEFAULT_BODY)
}
fn default_idle_timeout() -> Positive<HumanDuration> {
    Positive::duration(sluice_net::http::DEFAULT_IDLE)
}

/// `[api.tokens.<name>]`: a static bearer token and what it may read. Exactly
/// one of `token`, `token_env` and `token_file` gives the secret (see
/// [`crate::tokens`]).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenConfig {
    /// The token itself, at least 16 characters (prefer `token_env` or
    /// `token_file`: config files get copied around).
    #[serde(default)]
    pub token: Option<String>,
    /// An environment variable holding the token.
    #[serde(default)]
    pub token_env: Option<String>,
    /// A file holding the token; relative paths are under `node.data_dir`.
    /// Created with a random token and mode 0600 on first start.
    #[serde(default)]
    pub token_file: Option<PathBuf>,
    /// Sources the token may read: `{ group = "acme", subgroup = "*", host = "*" }`.
    pub allowed: Vec<sluice_query::SourcePattern>,
}

/// Shortest accepted token.
pub const MIN_TOKEN_LEN: usize = 16;

fn check_api(api: &ApiConfig, errors: &mut Vec<ConfigError>) {
    for (name, t) in &api.tokens {
        let path = format!("api.tokens.{name}");
        let set = [t.token.is_some(), t.token_env.is_some(), t.token_file.is_some()].iter().filter(|b| **b).count();
        if set != 1 {
            errors.push(ConfigError::new(&path, "set exactly one of `token`, `token_env` and `token_file`"));
        }
        if t.token.as_ref().is_some_and(|s| s.chars().count() < MIN_TOKEN_LEN) {
            errors.push(ConfigError::new(
                format!("{path}.token"),
                format!("must be at least {MIN_TOKEN_LEN} characters"),
            ));
        }
        if t.token_env.as_ref().is_some_and(String::is_empty) {
            errors.push(ConfigError::new(format!("{path}.token_env"), "must not be empty"));
        }
        if t.token_file.as_ref().is_some_and(|p| p.as_os_str().is_empty()) {
            errors.push(ConfigError::new(format!("{path}.token_file"), "must not be empty"));
        }
    }
}

/// Which queue a pipeline uses.
#[derive(Debug, Clone, PartialEq)]
pub enum QueueConfig {
    /// Bounded in memory; back-pressure when `max_events` are unacknowledged.
    Memory {
        /// Unacknowledged events allowed before sources wait.
        max_events: usize,
    },
    /// The durable segmented log of `sluice-queue`.
    Persisted(PersistedConfig),
}

/// `[pipelines.<name>.queue]` with `type = "persisted"`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PersistedConfig {
    /// Directory (default `<data_dir>/queue/<pipeline>`).
    #[serde(default)]
    pub path: Option<PathBuf>,
    /// Writer shards (default: number of cores).
    #[serde(default)]
    pub shards: Option<usize>,
    /// Segment file size.
    #[serde(default = "default_segment")]
    pub segment_size: ByteSize,
    /// Unacknowledged bytes allowed before sources wait.
    #[serde(default = "default_max_bytes")]
    pub max_bytes: ByteSize,
    /// `"always"`, `"never"`, or an interval such as `"1s"`.
    #[serde(default = "default_fsync")]
    pub fsync: String,
    /// Minimum time between two writes of a shard's ack checkpoint
    /// (default 100ms; `"0s"` writes one on every advance). A stale
    /// checkpoint only re-delivers events after a crash, it never loses any:
    /// after `kill -9` at most this long's worth of acknowledged events is
    /// delivered again, plus the batches in flight.
    #[serde(default = "default_checkpoint_interval")]
    pub checkpoint_interval: HumanDuration,
}

fn default_segment() -> ByteSize {
    ByteSize(64 << 20)
}
fn default_max_bytes() -> ByteSize {
    ByteSize(1 << 30)
}
fn default_checkpoint_interval() -> HumanDuration {
    HumanDuration(std::time::Duration::from_millis(100))
}
fn default_fsync() -> String {
    "1s".into()
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawQueue {
    #[serde(rename = "type", default = "default_queue_type")]
    kind: String,
    #[serde(default)]
    max_events: Option<Positive<usize>>,
    #[serde(default)]
    path: Option<PathBuf>,
    #[serde(default)]
    shards: Option<Positive<usize>>,
    #[serde(default)]
    segment_size: Option<ByteSize>,
    #[serde(default)]
    max_bytes: Option<ByteSize>,
    #[serde(default)]
    fsync: Option<String>,
    #[serde(default)]
    checkpoint_interval: Option<HumanDuration>,
}

fn default_queue_type() -> String {
    "memory".into()
}

/// `[pipelines.<name>]`.
#[derive(Debug, Clone, PartialEq)]
pub struct PipelineConfig {
    /// Pipeline name.
    pub name: String,
    /// Worker threads running the filters (default: number of cores).
    pub workers: usize,
    /// Events per batch handed to filters and sinks.
    pub batch_size: usize,
    /// How long a worker waits to fill a batch.
    pub batch_delay: HumanDuration,
    /// The queue.
    pub queue: QueueConfig,
    /// Sources by id, as TOML tables.
    pub sources: BTreeMap<String, toml::Value>,
    /// Filters in order, as TOML tables.
    pub filters: Vec<toml::Value>,
    /// Sinks by id, as TOML tables.
    pub sinks: BTreeMap<String, toml::Value>,
    /// The pipeline's whole table, to detect changes on reload.
    pub raw: toml::Value,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPipeline {
    #[serde(default)]
    workers: Option<usize>,
    #[serde(default = "default_batch_size")]
    batch_size: usize,
    #[serde(default = "default_batch_delay")]
    batch_delay: HumanDuration,
    #[serde(default)]
    queue: Option<toml::Value>,
    #[serde(default)]
    sources: BTreeMap<String, toml::Value>,
    #[serde(default)]
    filters: Vec<toml::Value>,
    #[serde(default)]
    sinks: BTreeMap<String, toml::Value>,
}

fn default_batch_size() -> usize {
    128
}
fn default_batch_delay() -> HumanDuration {
    HumanDuration(std::time::Duration::from_millis(50))
}

/// Number of cores, the default for workers and queue shards.
pub fn cores() -> usize {
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
}

/// Reads and parses a config file (structure only; components are checked by
/// [`crate::topology::build`]).
pub fn load_config(path: &Path) -> Result<Config, Vec<ConfigError>> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| vec![ConfigError::new("", format!("cannot read {}: {e}", path.display()))])?;
    parse_config(&text)
}

/// Parses config text (see [`load_config`]).
pub fn parse_config(text: &str) -> Result<Config, Vec<ConfigError>> {
    let root: toml::Value = toml::from_str(text).map_err(|e| {
        let msg = e.message().to_string();
        let at = e
            .span()
            .map(|s| line_col(text, s.start))
            .map(|(l, c)| format!(" (line {l}, column {c})"))
            .unwrap_or_default();
        vec![ConfigError::new("", format!("invalid TOML{at}: {msg}"))]
    })?;
    let mut errors = Vec::new();
    let Some(table) = root.as_table() else { return Err(vec![ConfigError::new("", "expected a table")]) };
    for key in table.keys() {
        if !["node", "api", "auth", "search", "pipelines"].contains(&key.as_str()) {
            errors
                .push(ConfigError::new(key.clone(), "unknown section (expected node, api, auth, search or pipelines)"));
        }
    }
    let node = match table.get("node") {
        Some(v) => parse_table::<NodeConfig>(v.clone(), "node").map_err(|e| errors.push(e)).unwrap_or_default(),
        None => NodeConfig::default(),
    };
    let api = match table.get("api") {
        Some(v) => parse_table::<ApiConfig>(v.clone(), "api").map_err(|e| errors.push(e)).unwrap_or_default(),
        None => ApiConfig::default(),
    };
    check_api(&api, &mut errors);
    let auth = match table.get("auth") {
        Some(v) => match parse_table::<sluice_users::AuthConfig>(v.clone(), "auth") {
            Ok(a) => {
                errors.extend(a.check());
                Some(a)
            }
            Err(e) => {
                errors.push(e);
                None
            }
        },
        None => None,
    };
    let search = match table.get("search") {
        Some(v) => parse_table::<SearchConfig>(v.clone(), "search").map_err(|e| errors.push(e)).unwrap_or_default(),
        None => SearchConfig::default(),
    };
    if let SearchConfig::Opensearch(o) = &search {
        if let Err(e) = o.validate() {
            errors.push(ConfigError::new(format!("search.{}", e.key), e.msg));
        }
    }
    let mut pipelines = BTreeMap::new();
    match table.get("pipelines").map(|p| p.as_table()) {
        None => errors.push(ConfigError::new("pipelines", "no pipelines defined")),
        Some(None) => errors.push(ConfigError::new("pipelines", "expected a table of pipelines")),
        Some(Some(ps)) => {
            if ps.is_empty() {
                errors.push(ConfigError::new("pipelines", "no pipelines defined"));
            }
            for (name, v) in ps {
                match parse_pipeline(name, v) {
                    Ok(p) => {
                        pipelines.insert(name.clone(), p);
                    }
                    Err(mut es) => errors.append(&mut es),
                }
            }
        }
    }
    if errors.is_empty() {
        Ok(Config { node, api, auth, pipelines, search })
    } else {
        Err(errors)
    }
}

fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map(|l| l.chars().count()).unwrap_or(0) + 1;
    (line, col)
}

fn parse_pipeline(name: &str, v: &toml::Value) -> Result<PipelineConfig, Vec<ConfigError>> {
    let path = format!("pipelines.{name}");
    let mut errors = Vec::new();
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
        errors.push(ConfigError::new(&path, "pipeline names may use letters, digits, '_' and '-'"));
    }
    let raw: RawPipeline = parse_table(v.clone(), &path).map_err(|e| vec![e])?;
    // Checked here, not by type: a zero is reported together with the
    // pipeline's queue and component errors (`sluice validate` lists them all).
    let workers = raw.workers.unwrap_or_else(cores);
    if workers == 0 {
        errors.push(ConfigError::new(format!("{path}.workers"), "must be at least 1"));
    }
    if raw.batch_size == 0 {
        errors.push(ConfigError::new(format!("{path}.batch_size"), "must be at least 1"));
    }
    if raw.sources.is_empty() {
        errors.push(ConfigError::new(format!("{path}.sources"), "a pipeline needs at least one source"));
    }
    if raw.sinks.is_empty() {
        errors.push(ConfigError::new(format!("{path}.sinks"), "a pipeline needs at least one sink"));
    }
    let queue = match raw.queue {
        None => QueueConfig::Memory { max_events: 16 * 1024 },
        Some(q) => match parse_queue(q, &format!("{path}.queue")) {
            Ok(q) => q,
            Err(e) => {
                errors.push(e);
                QueueConfig::Memory { max_events: 1 }
            }
        },
    };
    if !errors.is_empty() {
        return Err(errors);
    }
    Ok(PipelineConfig {
        name: name.to_string(),
        workers,
        batch_size: raw.batch_size,
        batch_delay: raw.batch_delay,
        queue,
        sources: raw.sources,
        filters: raw.filters,
        sinks: raw.sinks,
        raw: v.clone(),
    })
}

fn parse_queue(v: toml::Value, path: &str) -> Result<QueueConfig, ConfigError> {
    let q: RawQueue = parse_table(v, path)?;
    match q.kind.as_str() {
        "memory" => {
            for (k, set) in [
                ("path", q.path.is_some()),
                ("shards", q.shards.is_some()),
                ("segment_size", q.segment_size.is_some()),
                ("max_bytes", q.max_bytes.is_some()),
                ("fsync", q.fsync.is_some()),
                ("checkpoint_interval", q.checkpoint_interval.is_some()),
            ] {
                if set {
                    return Err(ConfigError::new(format!("{path}.{k}"), "only valid with type = \"persisted\""));
                }
            }
            let max_events = q.max_events.map_or(16 * 1024, Positive::get);
            Ok(QueueConfig::Memory { max_events })
        }
        "persisted" => {
            if q.max_events.is_some() {
                return Err(ConfigError::new(
                    format!("{path}.max_events"),
                    "only valid with type = \"memory\" (use max_bytes)",
                ));
            }
            let p = PersistedConfig {
                path: q.path,
                shards: q.shards.map(Positive::get),
                segment_size: q.segment_size.unwrap_or_else(default_segment),
                max_bytes: q.max_bytes.unwrap_or_else(default_max_bytes),
                fsync: q.fsync.unwrap_or_else(default_fsync),
                checkpoint_interval: q.checkpoint_interval.unwrap_or_else(default_checkpoint_interval),
            };
            if p.segment_size.0 < 4096 {
                return Err(ConfigError::new(format!("{path}.segment_size"), "must be at least 4KiB"));
            }
            parse_fsync(&p.fsync).map_err(|m| ConfigError::new(format!("{path}.fsync"), m))?;
            Ok(QueueConfig::Persisted(p))
        }
        other => Err(ConfigError::new(
            format!("{path}.type"),
            format!("unknown queue type {other:?} (expected \"memory\" or \"persisted\")"),
        )),
    }
}

/// Parses the `fsync` setting of a persisted queue.
pub fn parse_fsync(s: &str) -> Result<sluice_queue::FsyncPolicy, String> {
    match s {
        "always" => Ok(sluice_queue::FsyncPolicy::Always),
        "never" => Ok(sluice_queue::FsyncPolicy::Never),
        other => HumanDuration::parse(other)
            .map(|d| sluice_queue::FsyncPolicy::Interval(d.0))
            .map_err(|e| format!("expected \"always\", \"never\" or an interval such as \"1s\": {e}")),
    }
}

#[cfg(test)]
mod tests;
