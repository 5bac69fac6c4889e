//! The `kafka` bench peer: pull-based distribution through a real Apache
//! Kafka broker, so the thesis's message-queue rows come from the same tool
//! and the same run as the push rows (issues #6 and #7, ADR 0041).
//!
//! A case names the peer with `kind = "kafka"`; the runner, before it
//! starts any sluice process:
//! 1. finds a broker: the address in `SLUICE_BENCH_KAFKA` (an existing
//!    broker, e.g. the one `scripts/check.sh` started for CI: nothing is
//!    started or stopped then), else `scripts/kafka.sh start INSTANCE` with
//!    the peer's own instance name and ports (default `bench` on
//!    19096/19097, never a test broker's 19092 or 19094). A broker that was
//!    already running is reused and left running; one the runner started
//!    is stopped at the end;
//! 2. creates the run's own topic (`sluice-bench-<case>-<run id>`) with the
//!    peer's partition count through the admin API and waits until every
//!    partition has a leader, so the consumers start on a fresh topic and
//!    a run never reads an earlier run's records;
//! 3. after the processes are up, waits until the consumer group
//!    (`sluice-bench-<run id>`) has `consumers` members and is `Stable`, so
//!    the load starts on a settled assignment (no rebalance mid-run in the
//!    normal case: every event exactly once);
//! 4. at the end deletes the topic (best effort: a broker killed by an
//!    action may be gone).
//!
//! Templates see `{{NAME.brokers}}` (also `{{NAME.in}}`), `{{NAME.topic}}`,
//! `{{NAME.group}}` and `{{NAME.partitions}}`.
//!
//! The admin operations need rdkafka (feature `kafka`, on in the `sluice`
//! binary by default); without it a kafka peer is a clear error.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::BenchError;

/// The environment variable naming an existing broker to use instead of
/// starting one (`host:port`).
pub const BROKER_ENV: &str = "SLUICE_BENCH_KAFKA";

/// A broker the runner uses for one run.
#[derive(Debug, Clone)]
pub struct Broker {
    /// Bootstrap address, `127.0.0.1:PORT`.
    pub brokers: String,
    /// The broker's JVM, when started or found through `scripts/kafka.sh`
    /// (sampled like the other processes; `kill` actions signal it).
    pub pid: Option<u32>,
    /// The runner started it (and stops it at the end).
    pub started: bool,
    /// The `scripts/kafka.sh` instance, when the script manages it.
    pub instance: Option<String>,
}

/// The bootstrap address a peer will use: `SLUICE_BENCH_KAFKA` or
/// `127.0.0.1:PORT`.
pub fn address(port: u16) -> String {
    match std::env::var(BROKER_ENV) {
        Ok(a) if !a.trim().is_empty() => a.trim().to_string(),
        _ => format!("127.0.0.1:{port}"),
    }
}

fn script_env(cmd: &mut Command, instance: &str, port: u16) {
    cmd.env("KAFKA_PORT", port.to_string()).env("KAFKA_CONTROLLER_PORT", (port + 1).to_string());
    if instance == "main" {
        // The script's defaults for `main` are 19092/19093: same values.
        cmd.env_remove("KAFKA_CONTROLLER_PORT");
    }
}

/// Starts (or finds) the broker of a kafka peer; see the module docs.
pub fn start(instance: &str, port: u16, scripts: &Path) -> Result<Broker, BenchError> {
    if std::env::var(BROKER_ENV).is_ok_and(|a| !a.trim().is_empty()) {
        return Ok(Broker { brokers: address(port), pid: None, started: false, instance: None });
    }
    let mut cmd = Command::new(scripts.join("kafka.sh"));
    cmd.args(["start", instance]).stdin(Stdio::null());
    script_env(&mut cmd, instance, port);
    let o = cmd.output().map_err(|e| BenchError::Invalid(format!("scripts/kafka.sh: {e}")))?;
    let text = String::from_utf8_lossy(&o.stdout);
    if !o.status.success() {
        return Err(BenchError::Invalid(format!(
            "scripts/kafka.sh start {instance} (port {port}) failed: {text}{}",
            String::from_utf8_lossy(&o.stderr)
        )));
    }
    Ok(Broker {
        brokers: format!("127.0.0.1:{port}"),
        pid: parse_pid(&text),
        started: !text.contains("already running"),
        instance: Some(instance.to_string()),
    })
}

/// The pid in the script's `… (pid 1234)` line.
fn parse_pid(text: &str) -> Option<u32> {
    let at = text.rfind("(pid ")?;
    text[at + 5..].split(')').next()?.trim().parse().ok()
}

/// Stops a broker the runner started (`scripts/kafka.sh stop`).
pub fn stop(broker: &Broker, port: u16, scripts: &Path) {
    let (true, Some(instance)) = (broker.started, &broker.instance) else { return };
    let mut cmd = Command::new(scripts.join("kafka.sh"));
    cmd.args(["stop", instance]).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
    script_env(&mut cmd, instance, port);
    let _ = cmd.status();
}

#[cfg(feature = "kafka")]
mod admin {
    use std::time::{Duration, Instant};

    use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
    use rdkafka::client::DefaultClientContext;
    use rdkafka::consumer::{BaseConsumer, Consumer};
    use rdkafka::ClientConfig;

    use crate::BenchError;

    fn err(what: &str, e: impl std::fmt::Display) -> BenchError {
        BenchError::Invalid(format!("kafka peer: {what}: {e}"))
    }

    fn block_on<F: std::future::Future>(f: F) -> Result<F::Output, BenchError> {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        Ok(rt.block_on(f))
    }

    /// Creates the topic; `Ok(false)` when `existing_ok` and it was there already.
    pub fn create_topic(
        brokers: &str,
        topic: &str,
        partitions: u32,
        timeout: Duration,
        existing_ok: bool,
    ) -> Result<bool, BenchError> {
        let admin: AdminClient<DefaultClientContext> =
            ClientConfig::new().set("bootstrap.servers", brokers).create().map_err(|e| err("admin client", e))?;
        let parts = i32::try_from(partitions).map_err(|e| err("partitions", e))?;
        let t = NewTopic::new(topic, parts, TopicReplication::Fixed(1));
        let opts = AdminOptions::new().operation_timeout(Some(timeout));
        let r = block_on(admin.create_topics([&t], &opts))?.map_err(|e| err(&format!("create topic {topic}"), e))?;
        for x in r {
            match x {
                Err((_, rdkafka::types::RDKafkaErrorCode::TopicAlreadyExists)) if existing_ok => return Ok(false),
                x => x.map_err(|(t, e)| err(&format!("create topic {t}"), e))?,
            };
        }
        // Ready when the metadata shows every partition with a leader.
        let c: BaseConsumer =
            ClientConfig::new().set("bootstrap.servers", brokers).create().map_err(|e| err("client", e))?;
        let deadline = Instant::now() + timeout;
        loop {
            if let Ok(md) = c.fetch_metadata(Some(topic), Duration::from_secs(5)) {
                let ready = md.topics().iter().any(|t| {
                    t.error().is_none()
                        && t.partitions().len() == partitions as usize
                        && t.partitions().iter().all(|p| p.leader() >= 0)
                });
                if ready {
                    return Ok(true);
                }
            }
            if Instant::now() >= deadline {
                return Err(err(&format!("topic {topic}"), format!("no leader for its partitions after {timeout:?}")));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    pub fn wait_group(brokers: &str, group: &str, members: usize, timeout: Duration) -> Result<(), BenchError> {
        let c: BaseConsumer =
            ClientConfig::new().set("bootstrap.servers", brokers).create().map_err(|e| err("client", e))?;
        let deadline = Instant::now() + timeout;
        let mut last = String::from("not found");
        loop {
            if let Ok(list) = c.fetch_group_list(Some(group), Duration::from_secs(5)) {
                if let Some(g) = list.groups().iter().find(|g| g.name() == group) {
                    last = format!("{} with {} members", g.state(), g.members().len());
                    if g.state() == "Stable" && g.members().len() == members {
                        return Ok(());
                    }
                }
            }
            if Instant::now() >= deadline {
                return Err(err(
                    &format!("consumer group {group}"),
                    format!("not Stable with {members} members after {timeout:?} (last seen: {last})"),
                ));
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    pub fn delete_topic(brokers: &str, topic: &str) {
        let Ok(admin) =
            ClientConfig::new().set("bootstrap.servers", brokers).create::<AdminClient<DefaultClientContext>>()
        else {
            return;
        };
        let opts = AdminOptions::new().request_timeout(Some(Duration::from_secs(5)));
        let _ = block_on(admin.delete_topics(&[topic], &opts));
    }
}

#[cfg(not(feature = "kafka"))]
mod admin {
    use std::time::Duration;

    use crate::BenchError;

    fn missing() -> BenchError {
        BenchError::Invalid("kafka peer: this sluice was built without the `kafka` feature".into())
    }

    pub fn create_topic(_: &str, _: &str, _: u32, _: Duration, _: bool) -> Result<bool, BenchError> {
        Err(missing())
    }

    pub fn wait_group(_: &str, _: &str, _: usize, _: Duration) -> Result<(), BenchError> {
        Err(missing())
    }

    pub fn delete_topic(_: &str, _: &str) {}
}

/// Creates `topic` with `partitions` partitions (replication 1) and waits
/// until each has a leader.
pub fn create_topic(brokers: &str, topic: &str, partitions: u32) -> Result<(), BenchError> {
    admin::create_topic(brokers, topic, partitions, Duration::from_secs(30), false).map(|_| ())
}

/// Creates `topic` with `partitions` partitions when it does not exist yet
/// (the generator's `kafka://` output; brokers here do not create topics
/// automatically); `true` when it was created.
pub fn ensure_topic(brokers: &str, topic: &str, partitions: u32) -> Result<bool, BenchError> {
    admin::create_topic(brokers, topic, partitions, Duration::from_secs(30), true)
}

/// Waits until consumer group `group` is `Stable` with `members` members.
pub fn wait_group(brokers: &str, group: &str, members: usize, timeout: Duration) -> Result<(), BenchError> {
    admin::wait_group(brokers, group, members, timeout)
}

/// Deletes `topic`, best effort (the broker may be gone).
pub fn delete_topic(brokers: &str, topic: &str) {
    admin::delete_topic(brokers, topic);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scripts_pid_line_is_parsed() {
        assert_eq!(parse_pid("kafka bench up on 127.0.0.1:19096 (pid 4242)\n"), Some(4242));
        assert_eq!(parse_pid("kafka bench already running on 127.0.0.1:19096 (pid 7)"), Some(7));
        assert_eq!(parse_pid("kafka bench up"), None);
    }
}
