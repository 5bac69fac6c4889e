//! What the `kafka` source and sink share: the connection settings (brokers,
//! TLS, SASL, librdkafka pass-through options), the client context that turns
//! librdkafka's logs and errors into `tracing` events and counters, and the
//! record format (`docs/specs/kafka-records.md`).
//!
//! Why one module: both components talk to the same cluster with the same
//! security settings, and the record format is a contract between them — the
//! sink writes what the source reads.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use rdkafka::client::ClientContext;
use rdkafka::config::{ClientConfig, RDKafkaLogLevel};
use rdkafka::error::KafkaError;
use serde::Deserialize;
use sluice_core::component::BuildContext;
use sluice_core::config::ConfigError;
use sluice_core::metrics::{ComponentMetrics, Counter};

/// Record header naming the record format version (`docs/specs/kafka-records.md`).
pub const FORMAT_HEADER: &str = "sluice.v";
/// The record format version this build writes and reads.
pub const FORMAT_VERSION: &str = "1";

/// librdkafka properties that carry a delivery guarantee of sluice: they
/// cannot be overridden through `options`.
const GUARDED: &[&str] = &[
    "acks",
    "request.required.acks",
    "enable.idempotence",
    "enable.auto.commit",
    "enable.auto.offset.store",
    "group.id",
    "bootstrap.servers",
    "metadata.broker.list",
    "security.protocol",
];

/// Connection settings shared by the source and the sink (flattened into
/// their config tables).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConnectionConfig {
    /// Bootstrap brokers, `host:port[,host:port…]`.
    pub brokers: String,
    /// TLS to the brokers (`security.protocol` SSL or SASL_SSL).
    #[serde(default)]
    pub tls: Option<TlsConfig>,
    /// SASL authentication (`security.protocol` SASL_PLAINTEXT or SASL_SSL).
    #[serde(default)]
    pub sasl: Option<SaslConfig>,
    /// Extra librdkafka properties passed through as they are
    /// (`"socket.keepalive.enable" = "true"`). Properties that carry sluice's
    /// guarantees (acks, idempotence, offset commits, group id, brokers,
    /// security protocol) are refused here.
    #[serde(default)]
    pub options: BTreeMap<String, String>,
}

/// `[tls]`: certificates for a TLS connection to the brokers.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TlsConfig {
    /// CA bundle (PEM) that signed the brokers' certificates; default: the system's.
    #[serde(default)]
    pub ca_file: Option<PathBuf>,
    /// Client certificate (PEM) for mutual TLS.
    #[serde(default)]
    pub cert_file: Option<PathBuf>,
    /// Client private key (PEM) for mutual TLS.
    #[serde(default)]
    pub key_file: Option<PathBuf>,
    /// Password of an encrypted `key_file`.
    #[serde(default)]
    pub key_password: Option<String>,
    /// Check that a broker's certificate names the host connected to.
    #[serde(default = "default_true")]
    pub verify_hostname: bool,
}

/// `[sasl]`: SASL authentication.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SaslConfig {
    /// `PLAIN`, `SCRAM-SHA-256` or `SCRAM-SHA-512`.
    pub mechanism: String,
    /// User name.
    pub username: String,
    /// Password (prefer `password_env`: config files get copied around).
    #[serde(default)]
    pub password: Option<String>,
    /// An environment variable holding the password.
    #[serde(default)]
    pub password_env: Option<String>,
}

fn default_true() -> bool {
    true
}

impl ConnectionConfig {
    /// The librdkafka config for these settings. Errors name the key under
    /// the component's path.
    pub fn client_config(&self, cx: &BuildContext) -> Result<ClientConfig, ConfigError> {
        if self.brokers.trim().is_empty() {
            return Err(cx.error("brokers", "must list at least one broker (\"host:port\")"));
        }
        for b in self.brokers.split(',') {
            crate::net::check_address(b.trim()).map_err(|m| cx.error("brokers", m))?;
        }
        let mut c = ClientConfig::new();
        c.set("bootstrap.servers", self.brokers.trim());
        c.set("client.id", format!("sluice-{}-{}", cx.pipeline, cx.id));
        c.set("log.connection.close", "false");
        let protocol = match (&self.tls, &self.sasl) {
            (None, None) => "plaintext",
            (Some(_), None) => "ssl",
            (None, Some(_)) => "sasl_plaintext",
            (Some(_), Some(_)) => "sasl_ssl",
        };
        c.set("security.protocol", protocol);
        if let Some(t) = &self.tls {
            let file = |key: &str, p: &Option<PathBuf>, c: &mut ClientConfig, prop: &str| -> Result<(), ConfigError> {
                if let Some(p) = p {
                    if !p.is_file() {
                        return Err(cx.error(&format!("tls.{key}"), format!("{} is not a readable file", p.display())));
                    }
                    c.set(prop, p.display().to_string());
                }
                Ok(())
            };
            file("ca_file", &t.ca_file, &mut c, "ssl.ca.location")?;
            file("cert_file", &t.cert_file, &mut c, "ssl.certificate.location")?;
            file("key_file", &t.key_file, &mut c, "ssl.key.location")?;
            if t.cert_file.is_some() != t.key_file.is_some() {
                return Err(cx.error("tls", "set both `cert_file` and `key_file` (or neither)"));
            }
            if let Some(pw) = &t.key_password {
                c.set("ssl.key.password", pw);
            }
            c.set("ssl.endpoint.identification.algorithm", if t.verify_hostname { "https" } else { "none" });
        }
        if let Some(s) = &self.sasl {
            let mech = s.mechanism.to_ascii_uppercase();
            if !["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"].contains(&mech.as_str()) {
                return Err(cx.error(
                    "sasl.mechanism",
                    format!("unknown mechanism {:?} (expected PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512)", s.mechanism),
                ));
            }
            let password = match (&s.password, &s.password_env) {
                (Some(p), None) => p.clone(),
                (None, Some(var)) => std::env::var(var)
                    .map_err(|_| cx.error("sasl.password_env", format!("environment variable {var} is not set")))?,
                _ => return Err(cx.error("sasl", "set exactly one of `password` and `password_env`")),
            };
            c.set("sasl.mechanism", mech);
            c.set("sasl.username", &s.username);
            c.set("sasl.password", password);
        }
        for (k, v) in &self.options {
            if GUARDED.contains(&k.as_str()) {
                return Err(cx.error(
                    &format!("options.{k}"),
                    "this property carries a delivery guarantee of sluice and cannot be overridden",
                ));
            }
            c.set(k, v);
        }
        Ok(c)
    }
}

/// Turns librdkafka's log lines and errors into `tracing` events (with the
/// component's pipeline and id) and counters; remembers the last error so
/// that a sink or source can put it into its own error messages.
pub struct LogContext {
    /// Pipeline name, for log fields.
    pub pipeline: String,
    /// Component id, for log fields.
    pub id: String,
    /// The component's counters (`errors` counts client errors).
    pub metrics: Arc<ComponentMetrics>,
    /// Client-level errors (broker down, authentication, …).
    pub client_errors: Arc<Counter>,
    last_error: Mutex<Option<(Instant, String)>>,
    /// Repeated identical errors are logged at most once per this interval.
    quiet: Duration,
    suppressed: AtomicU64,
}

impl LogContext {
    /// A context for the component `cx` describes.
    pub fn new(cx: &BuildContext) -> Self {
        Self {
            pipeline: cx.pipeline.clone(),
            id: cx.id.clone(),
            metrics: Arc::clone(&cx.metrics),
            client_errors: cx.metrics.counter("client_errors"),
            last_error: Mutex::new(None),
            quiet: Duration::from_secs(10),
            suppressed: AtomicU64::new(0),
        }
    }

    /// A second context logging for the same component.
    pub fn clone_for(other: &Self) -> Self {
        Self {
            pipeline: other.pipeline.clone(),
            id: other.id.clone(),
            metrics: Arc::clone(&other.metrics),
            client_errors: Arc::clone(&other.client_errors),
            last_error: Mutex::new(None),
            quiet: other.quiet,
            suppressed: AtomicU64::new(0),
        }
    }

    /// The last client error and how long ago it happened.
    pub fn last_error(&self) -> Option<(Duration, String)> {
        self.last_error.lock().as_ref().map(|(t, m)| (t.elapsed(), m.clone()))
    }

    fn note_error(&self, message: String) {
        self.client_errors.inc();
        self.metrics.errors.inc();
        let mut last = self.last_error.lock();
        let repeat = last.as_ref().is_some_and(|(t, m)| *m == message && t.elapsed() < self.quiet);
        if repeat {
            self.suppressed.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let suppressed = self.suppressed.swap(0, Ordering::Relaxed);
        tracing::error!(pipeline = %self.pipeline, component = %self.id, error = %message, suppressed_repeats = suppressed, "kafka client error");
        *last = Some((Instant::now(), message));
    }
}

impl ClientContext for LogContext {
    fn log(&self, level: RDKafkaLogLevel, fac: &str, log_message: &str) {
        match level {
            RDKafkaLogLevel::Emerg | RDKafkaLogLevel::Alert | RDKafkaLogLevel::Critical | RDKafkaLogLevel::Error => {
                tracing::error!(pipeline = %self.pipeline, component = %self.id, facility = fac, "librdkafka: {log_message}")
            }
            RDKafkaLogLevel::Warning => {
                tracing::warn!(pipeline = %self.pipeline, component = %self.id, facility = fac, "librdkafka: {log_message}")
            }
            _ => {
                tracing::debug!(pipeline = %self.pipeline, component = %self.id, facility = fac, "librdkafka: {log_message}")
            }
        }
    }

    fn error(&self, error: KafkaError, reason: &str) {
        self.note_error(format!("{error}: {reason}"));
    }

    fn stats(&self, _statistics: rdkafka::Statistics) {}
}

/// Parses a time given on the command line or in config: RFC 3339
/// (`2026-11-22T10:00:00Z`), or a duration before now (`15m` = 15 minutes
/// ago). Returns milliseconds since the epoch (Kafka's timestamp unit).
pub fn parse_time_ms(s: &str, now_ms: i64) -> Result<i64, String> {
    if let Some(ns) = sluice_core::codec::parse_timestamp(s.trim()) {
        return Ok(ns.div_euclid(1_000_000));
    }
    match sluice_core::config::HumanDuration::parse(s) {
        Ok(d) => Ok(now_ms - i64::try_from(d.0.as_millis()).unwrap_or(i64::MAX / 2)),
        Err(_) => Err(format!("invalid time {s:?}: expected RFC 3339 (2026-11-22T10:00:00Z) or a duration ago (15m)")),
    }
}

/// Milliseconds since the epoch, now.
pub fn now_ms() -> i64 {
    sluice_core::event::now_ns().div_euclid(1_000_000)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conn(toml_body: &str) -> Result<ClientConfig, ConfigError> {
        let c: ConnectionConfig = toml::from_str(toml_body).map_err(|e| ConfigError::new("t", e.to_string()))?;
        let mut cx = BuildContext::for_test("sink", "k");
        cx.path = "pipelines.p.sinks.k".into();
        c.client_config(&cx)
    }

    #[test]
    fn protocol_follows_tls_and_sasl() {
        let c = conn("brokers = \"127.0.0.1:9092\"").unwrap();
        assert_eq!(c.get("security.protocol"), Some("plaintext"));
        let c =
            conn("brokers = \"a:1,b:2\"\n[sasl]\nmechanism = \"scram-sha-512\"\nusername = \"u\"\npassword = \"p\"")
                .unwrap();
        assert_eq!(c.get("security.protocol"), Some("sasl_plaintext"));
        assert_eq!(c.get("sasl.mechanism"), Some("SCRAM-SHA-512"));
        let c = conn("brokers = \"a:1\"\n[tls]\nverify_hostname = false").unwrap();
        assert_eq!(c.get("security.protocol"), Some("ssl"));
        assert_eq!(c.get("ssl.endpoint.identification.algorithm"), Some("none"));
    }

    #[test]
    fn bad_settings_name_their_key() {
        let e = conn("brokers = \"nohost\"").unwrap_err();
        assert_eq!(e.path, "pipelines.p.sinks.k.brokers");
        let e = conn("brokers = \"a:1\"\noptions = { \"acks\" = \"1\" }").unwrap_err();
        assert_eq!(e.path, "pipelines.p.sinks.k.options.acks");
        let e =
            conn("brokers = \"a:1\"\n[sasl]\nmechanism = \"GSSAPI\"\nusername = \"u\"\npassword = \"p\"").unwrap_err();
        assert!(e.message.contains("unknown mechanism"), "{e}");
        let e = conn("brokers = \"a:1\"\n[tls]\nca_file = \"/nonexistent/ca.pem\"").unwrap_err();
        assert_eq!(e.path, "pipelines.p.sinks.k.tls.ca_file");
        let e = conn("brokers = \"a:1\"\n[sasl]\nmechanism = \"PLAIN\"\nusername = \"u\"").unwrap_err();
        assert!(e.message.contains("exactly one"), "{e}");
    }

    #[test]
    fn times_parse_as_rfc3339_or_ago() {
        assert_eq!(parse_time_ms("2026-01-01T00:00:00Z", 0).unwrap(), 1_767_225_600_000);
        assert_eq!(parse_time_ms("2026-01-01T00:00:00.250Z", 0).unwrap(), 1_767_225_600_250);
        assert_eq!(parse_time_ms("15m", 1_000_000).unwrap(), 100_000);
        assert!(parse_time_ms("yesterday", 0).unwrap_err().contains("RFC 3339"));
    }
}
