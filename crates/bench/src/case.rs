//! Experiment cases: `bench/cases/<case>/case.toml`.
//!
//! A case says what to start (sluice processes in their roles, each from a
//! config template; peers such as HAProxy), the load (template, target,
//! rate, count, connections, warm-up), timed actions (kill a processor,
//! start one) and how the run ends. Config templates use `{{…}}`
//! placeholders the runner fills in:
//!
//! | placeholder | value |
//! |---|---|
//! | `{{NAME.PORT}}` | `127.0.0.1:<port>` of port `PORT` of process or peer `NAME` (ports are allocated per run) |
//! | `{{NAME.PORT.port}}` | the port number alone |
//! | `{{self.PORT}}`, `{{self.PORT.port}}`, `{{name}}` | the same for the process whose config this is, and its name (one template for several processors) |
//! | `{{collector}}` | this process's collector endpoint (processes with `collect = true`) |
//! | `{{data}}` | this process's data directory |
//! | `{{token}}` | a random agent-protocol token for the run |
//! | `{{rate}}`, `{{count}}` | the load |
//! | `{{VAR}}` | `[vars]` of the case, overridden by the process's `vars` |
//!
//! Values may themselves hold placeholders (substitution repeats up to five
//! times); a placeholder left unresolved is an error naming it.
//! The full format, with an example per section, is in `bench/cases/README.md`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use sluice_core::config::HumanDuration;

use crate::BenchError;

/// A parsed case.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Case {
    /// One line: what the case measures.
    pub description: String,
    /// The family of the case in reports (`thesis`, `overload`, `throughput`, …).
    #[serde(default)]
    pub group: String,
    /// The distribution model (`baseline`, `agent`, `balancer`, `pull`, `dispatcher`, …).
    #[serde(default)]
    pub kind: String,
    /// Variables for config templates.
    #[serde(default)]
    pub vars: BTreeMap<String, String>,
    /// The load.
    pub load: Load,
    /// The processes to start, in order.
    #[serde(default, rename = "process")]
    pub processes: Vec<Process>,
    /// Peers (load balancers) to start after the processes.
    #[serde(default, rename = "peer")]
    pub peers: Vec<Peer>,
    /// Timed actions.
    #[serde(default, rename = "action")]
    pub actions: Vec<Action>,
    /// How the run ends.
    #[serde(default)]
    pub quiesce: Quiesce,
    /// The case's directory (set by [`Case::load`]).
    #[serde(skip)]
    pub dir: PathBuf,
    /// The case's name (its directory's name).
    #[serde(skip)]
    pub name: String,
}

/// The load of a case.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Load {
    /// `thesis`, `apache`, `syslog5424`, `syslog3164` or `file:PATH` (relative to the case).
    #[serde(default = "default_template")]
    pub template: String,
    /// The generator's target URL, with placeholders (`tcp://{{agent.in}}`).
    pub target: String,
    /// Events per second in total; 0 = as fast as possible.
    #[serde(default)]
    pub rate: f64,
    /// Events in total (or set `duration`).
    #[serde(default)]
    pub count: Option<u64>,
    /// Offered for this long: `count = rate × duration`.
    #[serde(default)]
    pub duration: Option<HumanDuration>,
    /// Generator connections.
    #[serde(default = "default_connections")]
    pub connections: usize,
    /// Left out of latency and throughput figures.
    #[serde(default)]
    pub warmup: Option<HumanDuration>,
    /// Most events per write.
    #[serde(default = "default_max_batch")]
    pub max_batch: u64,
    /// `(rate, count)` pairs run by `--matrix` (the thesis's runs).
    #[serde(default)]
    pub runs: Vec<(f64, u64)>,
}

fn default_template() -> String {
    "thesis".into()
}
fn default_connections() -> usize {
    1
}
fn default_max_batch() -> u64 {
    512
}

/// A sluice process.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Process {
    /// Unique name (`p1`, `agent`).
    pub name: String,
    /// The role, for reports (`processor`, `agent`, `dispatcher`, `store`).
    #[serde(default = "default_role")]
    pub role: String,
    /// Config template, relative to the case directory.
    pub config: PathBuf,
    /// Ports to allocate (`in`, `api`).
    #[serde(default)]
    pub ports: Vec<String>,
    /// Give this process a collector endpoint (`{{collector}}`).
    #[serde(default)]
    pub collect: bool,
    /// Wait until this port accepts connections before the load starts.
    #[serde(default)]
    pub ready: Option<String>,
    /// Not started with the others: an action starts it.
    #[serde(default)]
    pub deferred: bool,
    /// Variables overriding the case's.
    #[serde(default)]
    pub vars: BTreeMap<String, String>,
}

fn default_role() -> String {
    "processor".into()
}

/// A peer started by the project's scripts.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Peer {
    /// Unique name; its listening address is `{{NAME.in}}`.
    pub name: String,
    /// `haproxy`, `nginx` or `pen` (balancers, started after the processes
    /// by `scripts/loadbalancers.sh`), or `kafka` (a broker, started before
    /// them by `scripts/kafka.sh`; see [`crate::kafka`]).
    pub kind: String,
    /// HAProxy: `roundrobin` (default) or `leastconn`; nginx: `round_robin`
    /// (default) or `least_conn`; pen: `roundrobin`.
    #[serde(default)]
    pub balance: Option<String>,
    /// Backends as `NAME.PORT` references (balancers only).
    #[serde(default)]
    pub backends: Vec<String>,
    /// Kafka: partitions of the run's topic (default 8).
    #[serde(default = "default_partitions")]
    pub partitions: u32,
    /// Kafka: the `scripts/kafka.sh` instance (default `bench`, its own data
    /// directory and ports, never a test broker's).
    #[serde(default = "default_instance")]
    pub instance: String,
    /// Kafka: the broker port (default 19096; the controller listens on the
    /// next one). `SLUICE_BENCH_KAFKA=host:port` uses an existing broker instead.
    #[serde(default = "default_kafka_port")]
    pub port: u16,
    /// Kafka: the load starts once the run's consumer group is `Stable` with
    /// this many members (0: do not wait).
    #[serde(default)]
    pub consumers: usize,
}

fn default_partitions() -> u32 {
    8
}
fn default_instance() -> String {
    "bench".into()
}
fn default_kafka_port() -> u16 {
    19096
}

/// What an action does.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Action {
    /// When, after the load starts.
    pub at: HumanDuration,
    /// `kill -9` this process or peer.
    #[serde(default)]
    pub kill: Option<String>,
    /// `SIGTERM` this process (graceful stop).
    #[serde(default)]
    pub stop: Option<String>,
    /// Start this process: a deferred one, or restart one an earlier action
    /// killed or stopped (same config and data directory); or restart a
    /// Kafka broker peer an earlier action killed or stopped (same instance).
    #[serde(default)]
    pub start: Option<String>,
}

/// How a run ends.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Quiesce {
    /// `collector` (every sent event reached a collector) or `stats:NAME`
    /// (process NAME's pipelines sent out as many events as were sent).
    #[serde(default = "default_by")]
    pub by: String,
    /// Longest wait after the generator finished.
    #[serde(default = "default_timeout")]
    pub timeout: HumanDuration,
    /// Extra wait after quiescence, for late duplicates.
    #[serde(default = "default_settle")]
    pub settle: HumanDuration,
}

impl Default for Quiesce {
    fn default() -> Self {
        Self { by: default_by(), timeout: default_timeout(), settle: default_settle() }
    }
}

fn default_by() -> String {
    "collector".into()
}
fn default_timeout() -> HumanDuration {
    HumanDuration(Duration::from_secs(120))
}
fn default_settle() -> HumanDuration {
    HumanDuration(Duration::from_millis(500))
}

impl Case {
    /// Reads and validates `DIR/case.toml`.
    pub fn load(dir: &Path) -> Result<Self, BenchError> {
        let path = dir.join("case.toml");
        let err = |m: String| BenchError::Case { path: path.display().to_string(), message: m };
        let text = std::fs::read_to_string(&path).map_err(|e| err(e.to_string()))?;
        let mut case: Case = toml::from_str(&text).map_err(|e| err(e.to_string().trim().replace('\n', " ")))?;
        case.dir = dir.to_path_buf();
        case.name = dir
            .canonicalize()
            .ok()
            .and_then(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()))
            .unwrap_or_else(|| dir.display().to_string());
        case.validate().map_err(err)?;
        Ok(case)
    }

    /// Names and references are consistent.
    fn validate(&self) -> Result<(), String> {
        let mut names: Vec<&str> = Vec::new();
        for n in self.processes.iter().map(|p| p.name.as_str()).chain(self.peers.iter().map(|p| p.name.as_str())) {
            if n.is_empty() || !n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
                return Err(format!("name {n:?}: use letters, digits, - and _"));
            }
            if names.contains(&n) {
                return Err(format!("name {n:?} is used twice"));
            }
            names.push(n);
        }
        for p in &self.processes {
            if let Some(r) = &p.ready {
                if !p.ports.contains(r) {
                    return Err(format!("process {}: ready = {r:?} is not one of its ports", p.name));
                }
            }
        }
        for peer in &self.peers {
            if peer.kind == "kafka" {
                if !peer.backends.is_empty() || peer.balance.is_some() {
                    return Err(format!("peer {}: a kafka peer has no backends or balance", peer.name));
                }
                if peer.partitions == 0 || peer.port == u16::MAX {
                    return Err(format!("peer {}: partitions must be at least 1 and port below 65535", peer.name));
                }
                if [19092, 19093, 19094, 19095].contains(&peer.port)
                    || ["main", "restart"].contains(&peer.instance.as_str())
                {
                    return Err(format!(
                        "peer {}: port {} / instance {:?} belong to the test brokers; use SLUICE_BENCH_KAFKA to share one",
                        peer.name, peer.port, peer.instance
                    ));
                }
                continue;
            }
            if !["haproxy", "nginx", "pen"].contains(&peer.kind.as_str()) {
                return Err(format!("peer {}: kind {:?}: expected haproxy, nginx, pen or kafka", peer.name, peer.kind));
            }
            if peer.backends.is_empty() {
                return Err(format!("peer {}: a balancer needs backends", peer.name));
            }
            for b in &peer.backends {
                let ok = b.split_once('.').is_some_and(|(n, port)| {
                    self.processes.iter().any(|p| p.name == n && p.ports.iter().any(|x| x == port))
                });
                if !ok {
                    return Err(format!("peer {}: backend {b:?} is not NAME.PORT of a process", peer.name));
                }
            }
        }
        for (i, a) in self.actions.iter().enumerate() {
            let set = [&a.kill, &a.stop, &a.start].iter().filter(|x| x.is_some()).count();
            if set != 1 {
                return Err(format!("action[{i}]: set exactly one of kill, stop, start"));
            }
            let target = a.kill.as_ref().or(a.stop.as_ref()).or(a.start.as_ref()).map_or("", String::as_str);
            if !names.contains(&target) {
                return Err(format!("action[{i}]: no process or peer named {target:?}"));
            }
            if let Some(s) = &a.start {
                // A deferred process, or a process or Kafka broker an earlier
                // action killed or stopped (a restart).
                let deferred = self.processes.iter().any(|p| &p.name == s && p.deferred);
                let downed = self
                    .actions
                    .iter()
                    .any(|b| b.at.0 < a.at.0 && (b.kill.as_ref() == Some(s) || b.stop.as_ref() == Some(s)));
                let broker = self.peers.iter().any(|p| &p.name == s && p.kind == "kafka");
                if !(self.processes.iter().any(|p| &p.name == s) || broker) || !(deferred || downed) {
                    return Err(format!(
                        "action[{i}]: start {s:?}: only a deferred process, or a process or Kafka broker killed or stopped earlier, can be started"
                    ));
                }
            }
        }
        if self.load.count.is_none() && self.load.duration.is_none() && self.load.runs.is_empty() {
            return Err("load: set count, duration or runs".into());
        }
        if self.load.connections == 0 {
            return Err("load.connections: must be at least 1".into());
        }
        if self.quiesce.by != "collector" && !self.quiesce.by.starts_with("stats:") {
            return Err(format!("quiesce.by: {:?}: expected collector or stats:NAME", self.quiesce.by));
        }
        if self.quiesce.by == "collector" && !self.processes.iter().any(|p| p.collect) {
            return Err("quiesce.by = collector needs a process with collect = true".into());
        }
        Ok(())
    }

    /// The `(rate, count)` of a run: overrides first, then `count` or
    /// `rate × duration`.
    pub fn load_for(&self, rate: Option<f64>, count: Option<u64>) -> Result<(f64, u64), BenchError> {
        let rate = rate.unwrap_or(self.load.rate);
        let count = match (count, self.load.count, self.load.duration) {
            (Some(c), _, _) | (None, Some(c), _) => c,
            (None, None, Some(d)) if rate > 0.0 => (rate * d.0.as_secs_f64()).round() as u64,
            _ => match self.load.runs.first() {
                Some(&(_, c)) => c,
                None => return Err(BenchError::Invalid("set --count: the case has no count for this rate".into())),
            },
        };
        Ok((rate, count))
    }
}

/// Replaces `{{key}}` placeholders from `vars`, repeatedly (values may hold
/// placeholders); an unknown key is an error naming it.
pub fn substitute(text: &str, vars: &BTreeMap<String, String>) -> Result<String, String> {
    let mut cur = text.to_string();
    for _ in 0..5 {
        if !cur.contains("{{") {
            return Ok(cur);
        }
        let mut out = String::with_capacity(cur.len());
        let mut rest = cur.as_str();
        while let Some(i) = rest.find("{{") {
            out.push_str(&rest[..i]);
            let after = &rest[i + 2..];
            let j = after.find("}}").ok_or_else(|| "an unclosed {{".to_string())?;
            let key = after[..j].trim();
            let v = vars.get(key).ok_or_else(|| format!("unknown placeholder {{{{{key}}}}}"))?;
            out.push_str(v);
            rest = &after[j + 2..];
        }
        out.push_str(rest);
        cur = out;
    }
    if cur.contains("{{") {
        return Err("placeholders nested more than five deep".into());
    }
    Ok(cur)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn case(text: &str) -> Result<Case, BenchError> {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("case.toml"), text).unwrap();
        Case::load(dir.path())
    }

    const OK: &str = r#"
description = "two processors"
[load]
target = "tcp://{{p1.in}}"
rate = 100
count = 1000
[[process]]
name = "p1"
config = "p.toml"
ports = ["in"]
collect = true
ready = "in"
[[process]]
name = "p2"
config = "p.toml"
ports = ["in"]
deferred = true
[[action]]
at = "5s"
start = "p2"
"#;

    #[test]
    fn a_valid_case_loads() {
        let c = case(OK).unwrap();
        assert_eq!(c.processes.len(), 2);
        assert_eq!(c.actions[0].at.0, Duration::from_secs(5));
        assert_eq!(c.load_for(None, None).unwrap(), (100.0, 1000));
        assert_eq!(c.load_for(Some(50.0), Some(10)).unwrap(), (50.0, 10));
        let restart =
            OK.to_string() + "[[action]]\nat = \"1s\"\nkill = \"p1\"\n[[action]]\nat = \"3s\"\nstart = \"p1\"\n";
        assert_eq!(case(&restart).unwrap().actions.len(), 3, "a killed process may be started again");
        let early =
            OK.to_string() + "[[action]]\nat = \"3s\"\nkill = \"p1\"\n[[action]]\nat = \"1s\"\nstart = \"p1\"\n";
        assert!(
            case(&early).unwrap_err().to_string().contains("action[2]: start \"p1\""),
            "but not before it was killed"
        );
    }

    #[test]
    fn mistakes_are_named() {
        let bad = |from: &str, to: &str| case(&OK.replacen(from, to, 1)).unwrap_err().to_string();
        assert!(bad("name = \"p2\"", "name = \"p1\"").ends_with("case.toml: name \"p1\" is used twice"));
        assert!(bad("start = \"p2\"", "start = \"p3\"").ends_with("action[0]: no process or peer named \"p3\""));
        assert!(bad("deferred = true", "").ends_with(
            "action[0]: start \"p2\": only a deferred process, or a process or Kafka broker killed or stopped earlier, can be started"
        ));
        assert!(
            bad("ready = \"in\"", "ready = \"api\"").ends_with("process p1: ready = \"api\" is not one of its ports")
        );
        assert!(bad("collect = true", "").ends_with("quiesce.by = collector needs a process with collect = true"));
        assert!(bad("rate = 100", "rate = 100\nbogus = 1").contains("unknown field `bogus`"));
    }

    #[test]
    fn kafka_peers_are_checked() {
        let peer = |extra: &str| {
            case(&format!("{OK}[[peer]]\nname = \"kafka\"\nkind = \"kafka\"\n{extra}")).map_err(|e| e.to_string())
        };
        let ok = peer("consumers = 2\n").unwrap();
        let k = &ok.peers[0];
        assert_eq!((k.partitions, k.instance.as_str(), k.port, k.consumers), (8, "bench", 19096, 2));
        let restart = peer("[[action]]\nat = \"1s\"\nkill = \"kafka\"\n[[action]]\nat = \"2s\"\nstart = \"kafka\"\n");
        assert_eq!(restart.unwrap().actions.len(), 3, "a killed broker may be started again");
        let early = peer("[[action]]\nat = \"1s\"\nstart = \"kafka\"\n").unwrap_err();
        assert!(early.contains("action[1]: start \"kafka\": only a deferred process"), "{early}");
        assert!(peer("backends = [\"p1.in\"]\n").unwrap_err().ends_with("a kafka peer has no backends or balance"));
        assert!(peer("port = 19092\n")
            .unwrap_err()
            .contains("port 19092 / instance \"bench\" belong to the test brokers"));
        assert!(peer("instance = \"main\"\n").unwrap_err().contains("belong to the test brokers"));
        assert!(peer("partitions = 0\n").unwrap_err().contains("partitions must be at least 1"));
        let lb = case(&format!("{OK}[[peer]]\nname = \"lb\"\nkind = \"haproxy\"\n")).unwrap_err().to_string();
        assert!(lb.ends_with("peer lb: a balancer needs backends"), "{lb}");
        let bad = case(&format!("{OK}[[peer]]\nname = \"q\"\nkind = \"rabbitmq\"\n")).unwrap_err().to_string();
        assert!(bad.ends_with("kind \"rabbitmq\": expected haproxy, nginx, pen or kafka"), "{bad}");
    }

    #[test]
    fn placeholders_resolve_recursively_and_unknown_ones_are_errors() {
        let vars: BTreeMap<String, String> =
            [("p1.in", "127.0.0.1:5000"), ("receivers", "[\"{{p1.in}}\"]"), ("cost", "5ms")]
                .into_iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
        assert_eq!(
            substitute("r = {{receivers}}\nc = \"{{ cost }}\"", &vars).unwrap(),
            "r = [\"127.0.0.1:5000\"]\nc = \"5ms\""
        );
        assert_eq!(substitute("{{nope}}", &vars).unwrap_err(), "unknown placeholder {{nope}}");
        assert_eq!(substitute("{{p1.in", &vars).unwrap_err(), "an unclosed {{");
    }
}
