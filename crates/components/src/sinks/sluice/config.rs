//! The `sluice` sink's configuration: receivers, balancing, compression,
//! windows and timeouts, with their defaults, and the `receivers` check
//! shared with reload.

use super::*;

/// A receiver: an address, or a table with a weight.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(crate) enum ReceiverConfig {
    /// `"host:port"`.
    Address(String),
    /// `{ address = "host:port", weight = 2 }`.
    Table(ReceiverTable),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ReceiverTable {
    /// `host:port`.
    pub(super) address: String,
    /// Share for `weighted_round_robin` (default 1).
    #[serde(default = "default_weight")]
    pub(super) weight: u32,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Config {
    /// The receivers (`sluice` sources), at least one.
    pub(super) receivers: Vec<ReceiverConfig>,
    /// `round_robin` (default), `weighted_round_robin`, `random`,
    /// `least_connections`, `least_loaded` or `credit`.
    #[serde(default = "default_algorithm")]
    pub(super) algorithm: Algorithm,
    /// The token (or `token_env` / `token_file`).
    #[serde(default)]
    pub(super) token: Option<String>,
    /// An environment variable holding the token.
    #[serde(default)]
    pub(super) token_env: Option<String>,
    /// A file holding the token (relative paths under the node's data directory).
    #[serde(default)]
    pub(super) token_file: Option<std::path::PathBuf>,
    /// Identity claimed in `HELLO` and given to events without a group.
    #[serde(default)]
    pub(super) group: String,
    /// Subgroup claimed in `HELLO`.
    #[serde(default)]
    pub(super) subgroup: String,
    /// Host claimed in `HELLO` (default: this machine's host name).
    #[serde(default)]
    pub(super) host: Option<String>,
    /// `zstd` (default), `lz4` or `none`.
    #[serde(default = "default_compression")]
    pub(super) compression: String,
    /// zstd level (1–19).
    #[serde(default = "default_level")]
    pub(super) compression_level: i32,
    /// Unacknowledged batches per receiver (the receiver may lower it).
    #[serde(default = "default_window")]
    pub(super) window: u32,
    /// Largest encoded batch before compression; larger batches are split.
    #[serde(default = "default_max_batch")]
    pub(super) max_batch_bytes: ByteSize,
    /// Longest wait for a connection and its `HELLO_OK`.
    #[serde(default = "default_connect_timeout")]
    pub(super) connect_timeout: Positive<HumanDuration>,
    /// Longest wait for one batch to be written.
    #[serde(default = "default_write_timeout")]
    pub(super) write_timeout: Positive<HumanDuration>,
    /// `PING` period; a receiver silent for three periods is failed over.
    #[serde(default = "default_heartbeat")]
    pub(super) heartbeat_interval: Positive<HumanDuration>,
    /// Longest wait for a batch's `ACK` (Filebeat's `timeout`): a receiver
    /// that keeps answering `PING`s but holds a batch longer is failed over
    /// like a silent one ("0s": wait for ever).
    #[serde(default = "default_ack_timeout")]
    pub(super) ack_timeout: HumanDuration,
    /// First reconnection delay.
    #[serde(default = "default_backoff_min")]
    pub(super) backoff_min: Positive<HumanDuration>,
    /// Longest reconnection delay.
    #[serde(default = "default_backoff_max")]
    pub(super) backoff_max: HumanDuration,
    /// How long a write waits for a receiver to take the batch before
    /// returning an error (the runtime keeps the batch and retries).
    #[serde(default = "default_block_timeout")]
    pub(super) block_timeout: Positive<HumanDuration>,
    /// How long closing waits for the acks of batches in flight.
    #[serde(default = "default_close_timeout")]
    pub(super) close_timeout: HumanDuration,
    /// Verify receivers with TLS.
    #[serde(default)]
    pub(super) tls: Option<ClientTls>,
    /// Eject receivers that keep failing (absent: never eject).
    #[serde(default)]
    pub(super) outlier_detection: Option<OutlierConfig>,
    /// A returning receiver's share ramps up over this long ("0s": at once).
    #[serde(default = "default_slow_start")]
    pub(super) slow_start: HumanDuration,
    /// Serve the members API on the node's API listener with this token
    /// (`token`, `token_env` or `token_file`; a missing file is created).
    #[serde(default)]
    pub(super) members_api: Option<TokenSource>,
}

pub(crate) fn default_weight() -> u32 {
    1
}
pub(super) fn default_slow_start() -> HumanDuration {
    HumanDuration(Duration::ZERO)
}
pub(super) fn default_algorithm() -> Algorithm {
    Algorithm::RoundRobin
}
pub(super) fn default_compression() -> String {
    "zstd".into()
}
pub(super) fn default_level() -> i32 {
    1
}
pub(super) fn default_window() -> u32 {
    4
}
pub(super) fn default_max_batch() -> ByteSize {
    ByteSize(8 << 20)
}
pub(super) fn default_connect_timeout() -> Positive<HumanDuration> {
    Positive::duration(Duration::from_secs(5))
}
pub(super) fn default_write_timeout() -> Positive<HumanDuration> {
    Positive::duration(Duration::from_secs(30))
}
pub(super) fn default_ack_timeout() -> HumanDuration {
    HumanDuration(Duration::from_secs(30))
}
pub(super) fn default_heartbeat() -> Positive<HumanDuration> {
    Positive::duration(Duration::from_secs(1))
}
pub(super) fn default_backoff_min() -> Positive<HumanDuration> {
    Positive::duration(Duration::from_millis(100))
}
pub(super) fn default_backoff_max() -> HumanDuration {
    HumanDuration(Duration::from_secs(5))
}
pub(super) fn default_block_timeout() -> Positive<HumanDuration> {
    Positive::duration(Duration::from_secs(10))
}
pub(super) fn default_close_timeout() -> HumanDuration {
    HumanDuration(Duration::from_secs(30))
}

/// Checks a `receivers` list (config, reload): addresses and duplicates.
pub(crate) fn parse_receivers(list: &[ReceiverConfig]) -> Result<Vec<Member>, (String, String)> {
    if list.is_empty() {
        return Err(("receivers".into(), "at least one receiver is needed".into()));
    }
    let mut out: Vec<Member> = Vec::new();
    for (i, r) in list.iter().enumerate() {
        let (address, weight) = match r {
            ReceiverConfig::Address(a) => (a.clone(), 1),
            ReceiverConfig::Table(t) => (t.address.clone(), t.weight),
        };
        check_address(&address).map_err(|m| (format!("receivers[{i}]"), m))?;
        if out.iter().any(|o| o.address == address) {
            return Err((format!("receivers[{i}]"), format!("{address} is listed twice")));
        }
        out.push(Member { address, weight });
    }
    Ok(out)
}
