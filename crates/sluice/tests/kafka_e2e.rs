//! End-to-end tests of pull-based distribution through a real Apache Kafka
//! broker (started by `scripts/kafka.sh`, KRaft on 127.0.0.1:19092; the
//! broker-restart test runs its own instance on 19094 so restarting it never
//! disturbs the other tests): agent (`sluice` with a generator or tcp source
//! and the kafka sink) → topic with 8 partitions → processors (`sluice` with
//! the kafka source in one consumer group) → file sinks. Every event carries
//! a sequence number; the tests count each one exactly.
//!
//! Each test uses its own topic and group (unique names). The tests run one
//! at a time (a lock): each starts several processes and the machine has two
//! cores. `SLUICE_KAFKA_DOWN_SECS` sets how long all processors stay down in
//! `kafka_processors_all_down_then_back` (default 30, the issue's scenario;
//! a shorter value for quick local runs).
#![cfg(feature = "kafka")]

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

mod common;
use common::{bin, free_port};

use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
use rdkafka::{ClientConfig, Offset, TopicPartitionList};

const MAIN: &str = "127.0.0.1:19092";
const RESTART: &str = "127.0.0.1:19094";

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

fn kafka_sh(args: &[&str], env: &[(&str, &str)]) {
    let mut c = Command::new(repo().join("scripts/kafka.sh"));
    c.args(args);
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c.output().expect("run scripts/kafka.sh");
    assert!(
        out.status.success(),
        "scripts/kafka.sh {args:?} failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Held for the length of a test: serialises the tests and prints how long
/// the test took (without the wait for the lock).
struct Serial {
    _guard: std::sync::MutexGuard<'static, ()>,
    started: Instant,
}

impl Drop for Serial {
    fn drop(&mut self) {
        let name = std::thread::current().name().unwrap_or("?").to_string();
        println!("{name}: {:.1} s", self.started.elapsed().as_secs_f64());
    }
}

/// Starts the shared broker once per test process (idempotent: a broker
/// already running, e.g. started by scripts/check.sh, is reused) and
/// serialises the tests.
fn broker() -> Serial {
    static LOCK: Mutex<()> = Mutex::new(());
    static STARTED: OnceLock<()> = OnceLock::new();
    let guard = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let started = Instant::now();
    STARTED.get_or_init(|| {
        let out = Command::new(bin()).arg("components").output().expect("run sluice components");
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("kafka"),
            "{} was built without the `kafka` feature",
            bin()
        );
        kafka_sh(&["start"], &[]);
    });
    Serial { _guard: guard, started }
}

const RESTART_ENV: [(&str, &str); 2] = [("KAFKA_PORT", "19094"), ("KAFKA_CONTROLLER_PORT", "19095")];

fn unique(name: &str) -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    format!("{name}-{}-{}", std::process::id(), nanos % 1_000_000_000)
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
}

fn create_topic(brokers: &str, topic: &str, partitions: i32) {
    let admin: AdminClient<DefaultClientContext> =
        ClientConfig::new().set("bootstrap.servers", brokers).create().expect("admin client");
    let t = NewTopic::new(topic, partitions, TopicReplication::Fixed(1));
    let r = runtime().block_on(admin.create_topics([&t], &AdminOptions::new())).expect("create topic");
    for x in r {
        x.unwrap_or_else(|(t, e)| panic!("create topic {t}: {e}"));
    }
    // Wait until the metadata shows every partition with a leader.
    let c: BaseConsumer = ClientConfig::new().set("bootstrap.servers", brokers).create().unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Ok(md) = c.fetch_metadata(Some(topic), Duration::from_secs(5)) {
            if md.topics().iter().any(|t| t.error().is_none() && t.partitions().len() == partitions as usize) {
                return;
            }
        }
        assert!(Instant::now() < deadline, "topic {topic} never became ready");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Records in the topic: the sum of its partitions' high watermarks (all
/// start at 0; nothing is deleted during a test).
fn records_in_topic(brokers: &str, topic: &str, partitions: i32) -> i64 {
    let c: BaseConsumer = ClientConfig::new().set("bootstrap.servers", brokers).create().unwrap();
    (0..partitions).map(|p| c.fetch_watermarks(topic, p, Duration::from_secs(10)).unwrap().1).sum()
}

/// Sum of the group's committed offsets over the topic's partitions.
fn committed_total(brokers: &str, group: &str, topic: &str, partitions: i32) -> i64 {
    let c: BaseConsumer =
        ClientConfig::new().set("bootstrap.servers", brokers).set("group.id", group).create().unwrap();
    let mut tpl = TopicPartitionList::new();
    for p in 0..partitions {
        tpl.add_partition(topic, p);
    }
    // Just after a broker restart the group coordinator is still being
    // elected: `NotCoordinator` / `CoordinatorLoadInProgress` are transient
    // answers (CI saw one), so ask again for up to 30 s.
    let deadline = Instant::now() + Duration::from_secs(30);
    let got = loop {
        match c.committed_offsets(tpl.clone(), Duration::from_secs(10)) {
            Ok(got) => break got,
            Err(e) if Instant::now() < deadline => {
                println!("committed offsets of {group}: {e}; asking again");
                std::thread::sleep(Duration::from_millis(500));
            }
            Err(e) => panic!("committed offsets of {group}: {e}"),
        }
    };
    got.elements()
        .iter()
        .map(|e| match e.offset() {
            Offset::Offset(o) => o,
            _ => 0,
        })
        .sum()
}

struct Dir(tempfile::TempDir);

impl Dir {
    /// A temporary directory, kept (its path printed) when
    /// `SLUICE_TEST_KEEP` is set, to read the processes' logs afterwards.
    fn new() -> Self {
        let mut d = tempfile::tempdir().unwrap();
        if std::env::var_os("SLUICE_TEST_KEEP").is_some() {
            d.disable_cleanup(true);
            println!("test directory kept: {}", d.path().display());
        }
        Self(d)
    }
    fn path(&self, p: &str) -> PathBuf {
        self.0.path().join(p)
    }
    fn write(&self, name: &str, text: &str) -> PathBuf {
        let p = self.path(name);
        std::fs::write(&p, text).unwrap();
        p
    }
}

/// A `sluice run` child, killed (SIGKILL) if the test forgets it.
struct Proc {
    child: Option<Child>,
    log: PathBuf,
    name: String,
}

impl Proc {
    fn start(name: &str, config: &Path, dir: &Dir) -> Self {
        let log = dir.path(&format!("{name}.log"));
        let f = std::fs::File::create(&log).unwrap();
        let child = Command::new(bin())
            .args(["run", config.to_str().unwrap()])
            .env("SLUICE_LOG", "info,librdkafka=warn")
            .stdout(Stdio::null())
            .stderr(f)
            .spawn()
            .unwrap();
        Self { child: Some(child), log, name: name.into() }
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    fn wait_log(&self, needle: &str, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        while !self.log_text().contains(needle) {
            assert!(Instant::now() < deadline, "{}: never logged {needle:?}:\n{}", self.name, self.log_text());
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// SIGTERM and wait: a graceful stop (drain, commit).
    fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = Command::new("kill").args(["-TERM", &c.id().to_string()]).status();
            let deadline = Instant::now() + Duration::from_secs(60);
            loop {
                if c.try_wait().unwrap().is_some() {
                    break;
                }
                if Instant::now() > deadline {
                    let _ = c.kill();
                    let _ = c.wait();
                    panic!("{} did not stop on SIGTERM:\n{}", self.name, self.log_text());
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }

    /// `kill -9`.
    fn kill9(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.kill9();
    }
}

/// An agent: generator (JSON events with `seq`) → kafka sink.
fn agent_config(dir: &Dir, brokers: &str, topic: &str, count: u64, rate: u64, extra_sink: &str) -> PathBuf {
    let api = free_port();
    dir.write(
        &format!("agent-{topic}.toml"),
        &format!(
            r#"
[node]
data_dir = "{data}"
[api]
address = "127.0.0.1:{api}"
[pipelines.ship]
workers = 1
batch_size = 256
batch_delay = "10ms"
[pipelines.ship.queue]
type = "persisted"
fsync = "never"
[pipelines.ship.sources.gen]
type = "generator"
json = true
count = {count}
rate = {rate}.0
batch_size = 100
message = '{{"message":"2016-05-18 10:44:30:045 INFO LogGenerator run This is lognumber {{seq}}","seq":{{seq}}}}'
group = "acme"
subgroup = "web"
host = "agent-1"
[pipelines.ship.sinks.kafka]
type = "kafka"
brokers = "{brokers}"
topic = "{topic}"
linger = "5ms"
{extra_sink}
"#,
            data = dir.path("agent-data").display(),
        ),
    )
}

/// A processor: kafka source (group) → file sink.
fn processor_config(
    dir: &Dir,
    name: &str,
    brokers: &str,
    topic: &str,
    group: &str,
    extra_source: &str,
) -> (PathBuf, PathBuf, u16) {
    let out = dir.path(&format!("{name}.ndjson"));
    let api = free_port();
    let cfg = dir.write(
        &format!("{name}.toml"),
        &format!(
            r#"
[node]
data_dir = "{data}"
shutdown_timeout = "20s"
[api]
address = "127.0.0.1:{api}"
[pipelines.main]
workers = 1
batch_size = 256
batch_delay = "10ms"
[pipelines.main.queue]
type = "memory"
max_events = 4096
[pipelines.main.sources.kafka]
type = "kafka"
brokers = "{brokers}"
topics = ["{topic}"]
group_id = "{group}"
trust_identity = true
session_timeout = "6s"
commit_interval = "500ms"
batch_size = 256
lag_interval = "1s"
{extra_source}
[pipelines.main.sinks.out]
type = "file"
path = "{out}"
"#,
            data = dir.path(&format!("{name}-data")).display(),
            out = out.display(),
        ),
    );
    (cfg, out, api)
}

/// The API port written into a config by `agent_config`/`processor_config`.
fn api_of(cfg: &Path) -> u16 {
    let text = std::fs::read_to_string(cfg).unwrap();
    let line = text.lines().find(|l| l.starts_with("address = \"127.0.0.1:")).unwrap();
    line.trim_end_matches('"').rsplit(':').next().unwrap().parse().unwrap()
}

/// `seq` → how many times it was seen, per output file.
fn read_seqs(path: &Path) -> Vec<u64> {
    let Ok(text) = std::fs::read_to_string(path) else { return Vec::new() };
    // Only complete lines: the file sink may be writing the last one.
    let complete = text.rfind('\n').map_or("", |i| &text[..i]);
    complete
        .lines()
        .filter(|l| !l.is_empty())
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap_or_else(|e| panic!("bad output line {l:?}: {e}"));
            v["seq"].as_u64().unwrap_or_else(|| panic!("no seq in {l}"))
        })
        .collect()
}

struct Tally {
    per_file: Vec<(String, usize)>,
    counts: HashMap<u64, usize>,
}

impl Tally {
    fn of(outs: &[(String, PathBuf)]) -> Self {
        let mut counts = HashMap::new();
        let mut per_file = Vec::new();
        for (name, p) in outs {
            let seqs = read_seqs(p);
            per_file.push((name.clone(), seqs.len()));
            for s in seqs {
                *counts.entry(s).or_insert(0) += 1;
            }
        }
        Self { per_file, counts }
    }
    fn total(&self) -> usize {
        self.per_file.iter().map(|(_, n)| n).sum()
    }
    fn missing(&self, n: u64) -> Vec<u64> {
        (0..n).filter(|s| !self.counts.contains_key(s)).collect()
    }
    fn duplicates(&self) -> usize {
        self.counts.values().map(|c| c - 1).sum()
    }
    fn print(&self, label: &str) {
        let total = self.total().max(1) as f64;
        let shares: Vec<String> =
            self.per_file.iter().map(|(n, c)| format!("{n}={c} ({:.1}%)", 100.0 * *c as f64 / total)).collect();
        let mean = total / self.per_file.len().max(1) as f64;
        let var = self.per_file.iter().map(|(_, c)| (*c as f64 - mean).powi(2)).sum::<f64>()
            / self.per_file.len().max(1) as f64;
        println!(
            "{label}: {} events, shares {}, cv {:.3}, duplicates {}",
            self.total(),
            shares.join(" "),
            var.sqrt() / mean,
            self.duplicates()
        );
    }
}

fn wait_total(outs: &[(String, PathBuf)], want: usize, timeout: Duration) -> Tally {
    let deadline = Instant::now() + timeout;
    loop {
        let t = Tally::of(outs);
        if t.counts.len() >= want || Instant::now() > deadline {
            return t;
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}

fn stats(api: u16) -> serde_json::Value {
    use std::io::Read;
    let mut s = std::net::TcpStream::connect(("127.0.0.1", api)).unwrap();
    write!(s, "GET /_node/stats HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").unwrap();
    let mut body = String::new();
    s.read_to_string(&mut body).unwrap();
    let json = body.split("\r\n\r\n").nth(1).unwrap_or_default();
    serde_json::from_str(json).unwrap_or_else(|e| panic!("stats: {e}: {body}"))
}

fn run_group(processors: usize) {
    let _b = broker();
    let dir = Dir::new();
    let topic = unique(&format!("even{processors}"));
    let group = unique("g");
    create_topic(MAIN, &topic, 8);
    let mut procs = Vec::new();
    let mut outs = Vec::new();
    for i in 0..processors {
        let name = format!("p{i}");
        let (cfg, out, _) = processor_config(&dir, &name, MAIN, &topic, &group, "");
        procs.push(Proc::start(&name, &cfg, &dir));
        outs.push((name, out));
    }
    for p in &procs {
        p.wait_log("kafka partitions assigned", Duration::from_secs(60));
    }
    // Let the group settle (cooperative rebalances as members join).
    std::thread::sleep(Duration::from_secs(3));
    let n = 20_000;
    let mut agent = Proc::start("agent", &agent_config(&dir, MAIN, &topic, n, 5000, ""), &dir);
    let t = wait_total(&outs, n as usize, Duration::from_secs(120));
    agent.stop();
    for p in &mut procs {
        p.stop();
    }
    let t2 = Tally::of(&outs);
    t2.print(&format!("{processors} processors"));
    assert_eq!(t.missing(n), Vec::<u64>::new(), "lost events");
    assert_eq!(t2.duplicates(), 0, "duplicates in the normal case");
    assert_eq!(t2.total(), n as usize);
    for (name, c) in &t2.per_file {
        assert!(*c > 0, "{name} got nothing: partitions were not spread over the group");
    }
    assert_eq!(committed_total(MAIN, &group, &topic, 8), n as i64, "committed offsets cover every record");
}

#[test]
fn kafka_two_processors_every_event_exactly_once() {
    run_group(2);
}

#[test]
fn kafka_four_processors_every_event_exactly_once() {
    run_group(4);
}

#[test]
fn kafka_kill9_processor_partitions_move_nothing_lost() {
    let _b = broker();
    let dir = Dir::new();
    let topic = unique("kill9");
    let group = unique("g");
    create_topic(MAIN, &topic, 8);
    let (cfg_a, out_a, _) = processor_config(&dir, "a", MAIN, &topic, &group, "");
    let (cfg_b, out_b, _) = processor_config(&dir, "b", MAIN, &topic, &group, "");
    let mut a = Proc::start("a", &cfg_a, &dir);
    let mut b = Proc::start("b", &cfg_b, &dir);
    a.wait_log("kafka partitions assigned", Duration::from_secs(60));
    b.wait_log("kafka partitions assigned", Duration::from_secs(60));
    std::thread::sleep(Duration::from_secs(3));
    let n = 30_000;
    let mut agent = Proc::start("agent", &agent_config(&dir, MAIN, &topic, n, 3000, ""), &dir);
    // Kill A once it has written a good part of its share.
    let deadline = Instant::now() + Duration::from_secs(60);
    while read_seqs(&out_a).len() < 3000 {
        assert!(Instant::now() < deadline, "a never got events:\n{}", a.log_text());
        std::thread::sleep(Duration::from_millis(100));
    }
    a.kill9();
    let written_by_a = read_seqs(&out_a).len();
    // What the group had committed at the kill, then what had been written
    // (in this order: b keeps writing and committing, which only loosens
    // the bound): the duplicates are at most the difference, a's
    // uncommitted tail.
    let committed_at_kill = committed_total(MAIN, &group, &topic, 8);
    let written_at_kill = (read_seqs(&out_a).len() + read_seqs(&out_b).len()) as i64;
    let uncommitted = written_at_kill - committed_at_kill;
    let outs = vec![("a".to_string(), out_a.clone()), ("b".to_string(), out_b.clone())];
    let t = wait_total(&outs, n as usize, Duration::from_secs(120));
    agent.stop();
    b.stop();
    let t = Tally::of(&outs).print_and(t.missing(n));
    assert_eq!(t.1, Vec::<u64>::new(), "lost events after kill -9");
    let dups = t.0.duplicates();
    // Duplicates are exactly what A wrote but had not committed: re-read by
    // B from A's last commit. B never duplicates its own reads, so every
    // duplicated seq is in A's output, and A's commits worked (fewer
    // duplicates than A wrote).
    let a_seqs: std::collections::HashSet<u64> = read_seqs(&out_a).into_iter().collect();
    let b_seqs = read_seqs(&out_b);
    let mut b_seen = std::collections::HashSet::new();
    for s in &b_seqs {
        assert!(b_seen.insert(*s), "b wrote seq {s} twice");
    }
    let dup_seqs: Vec<u64> = t.0.counts.iter().filter(|(_, c)| **c > 1).map(|(s, _)| *s).collect();
    for s in &dup_seqs {
        assert!(a_seqs.contains(s), "duplicate {s} not from the killed processor");
    }
    assert!(dups < written_by_a, "duplicates {dups} >= events a wrote {written_by_a}: a never committed");
    assert!(
        dups as i64 <= uncommitted,
        "duplicates {dups} > events written but not committed at the kill {uncommitted}"
    );
    println!(
        "kill -9: a wrote {written_by_a} before the kill; written but not committed at the kill {uncommitted}; \
         duplicates (a's uncommitted tail) {dups}"
    );
    assert!(b.log_text().contains("kafka partitions assigned"));
}

impl Tally {
    fn print_and(self, missing: Vec<u64>) -> (Self, Vec<u64>) {
        self.print("result");
        (self, missing)
    }
}

#[test]
fn kafka_processors_all_down_then_back() {
    let _b = broker();
    let down: u64 = std::env::var("SLUICE_KAFKA_DOWN_SECS").ok().and_then(|s| s.parse().ok()).unwrap_or(30);
    let dir = Dir::new();
    let topic = unique("down");
    let group = unique("g");
    create_topic(MAIN, &topic, 8);
    let (cfg_a, out_a, _) = processor_config(&dir, "a", MAIN, &topic, &group, "");
    let (cfg_b, out_b, _) = processor_config(&dir, "b", MAIN, &topic, &group, "");
    let mut a = Proc::start("a", &cfg_a, &dir);
    let mut b = Proc::start("b", &cfg_b, &dir);
    a.wait_log("kafka partitions assigned", Duration::from_secs(60));
    b.wait_log("kafka partitions assigned", Duration::from_secs(60));
    let rate = 1000;
    let n = rate * (down + 6);
    let mut agent = Proc::start("agent", &agent_config(&dir, MAIN, &topic, n, rate, ""), &dir);
    std::thread::sleep(Duration::from_secs(2));
    a.stop();
    b.stop();
    let before = Tally::of(&[("a".into(), out_a.clone()), ("b".into(), out_b.clone())]).total();
    println!("processors stopped after {before} events; down for {down} s while the agent keeps sending");
    std::thread::sleep(Duration::from_secs(down));
    let mut a = Proc::start("a2", &cfg_a, &dir);
    let mut b = Proc::start("b2", &cfg_b, &dir);
    let outs = vec![("a".to_string(), out_a), ("b".to_string(), out_b)];
    let t = wait_total(&outs, n as usize, Duration::from_secs(120));
    agent.stop();
    a.stop();
    b.stop();
    let t2 = Tally::of(&outs);
    t2.print("down and back");
    assert!(before > 0 && before < n as usize, "the outage must fall inside the run ({before} of {n})");
    assert_eq!(t.missing(n), Vec::<u64>::new(), "lost events");
    assert_eq!(t2.duplicates(), 0, "a graceful stop commits everything acknowledged");
}

#[test]
fn kafka_broker_unreachable_then_restarted_mid_run() {
    let _b = broker();
    kafka_sh(&["stop", "restart"], &RESTART_ENV);
    let dir = Dir::new();
    let topic = unique("restart");
    let group = unique("g");
    // 15,000 events at 600/s take 25 s: the restart below (once 4,000 are
    // committed, ~15-20 s in) falls inside the run.
    let n = 15_000u64;
    // 1. The broker is down: the agent reports it, retries, and holds the events.
    let agent_cfg =
        agent_config(&dir, RESTART, &topic, n, 600, "message_timeout = \"2s\"\nmax_in_flight_events = 1000");
    let mut agent = Proc::start("agent", &agent_cfg, &dir);
    agent.wait_log("Connection refused", Duration::from_secs(30));
    agent.wait_log("kafka did not acknowledge records; retrying", Duration::from_secs(30));
    // Back-pressure: at most max_in_flight_events (+ one batch) reach the
    // sink; the rest waits in the agent's persisted queue; nothing is acked.
    std::thread::sleep(Duration::from_secs(2));
    let st = stats(api_of(&agent_cfg));
    let sink = &st["pipelines"]["ship"]["plugins"]["sinks"][0];
    assert_eq!(sink["counters"]["acked_events"].as_u64().unwrap_or(0), 0, "{sink}");
    assert!(sink["counters"]["retried_records"].as_u64().unwrap_or(0) > 0, "{sink}");
    assert!(sink["counters"]["client_errors"].as_u64().unwrap_or(0) > 0, "{sink}");
    assert!(sink["events"]["out"].as_u64().unwrap() <= 1000 + 256, "in-flight bound: {sink}");
    let queued = st["pipelines"]["ship"]["events"]["in"].as_u64().unwrap();
    assert!(queued > sink["events"]["out"].as_u64().unwrap() + 256, "events wait in the agent's queue: {st}");
    let err_line = agent.log_text().lines().find(|l| l.contains("kafka client error")).unwrap_or_default().to_string();
    assert!(err_line.contains("127.0.0.1:19094"), "the error names the broker: {err_line}");
    // 2. The broker comes up; the topic is created; everything flows.
    kafka_sh(&["start", "restart"], &RESTART_ENV);
    create_topic(RESTART, &topic, 8);
    let (cfg_a, out_a, api_a) = processor_config(&dir, "a", RESTART, &topic, &group, "");
    let (cfg_b, out_b, api_b) = processor_config(&dir, "b", RESTART, &topic, &group, "");
    let mut a = Proc::start("a", &cfg_a, &dir);
    let mut b = Proc::start("b", &cfg_b, &dir);
    let outs = vec![("a".to_string(), out_a), ("b".to_string(), out_b)];
    // The group has read and committed a good part (so the bound below
    // means something: a group that lost its commits reads everything again).
    let deadline = Instant::now() + Duration::from_secs(90);
    while committed_total(RESTART, &group, &topic, 8) < 4000 {
        assert!(Instant::now() < deadline, "nothing committed after the broker started:\n{}", agent.log_text());
        std::thread::sleep(Duration::from_millis(200));
    }
    // 3. Restart the broker mid-run. The group can read again, after the
    // restart, only what it had read but not committed when the broker went
    // down: at most `read_before − committed_before` records, where
    // `committed_before` is the group's committed offsets just before the
    // stop and `read_before` what the processors' sources had read once the
    // broker was gone (nothing new can arrive then; librdkafka's prefetched
    // records are waited for). Re-reads before the stop only loosen it.
    let committed_before = committed_total(RESTART, &group, &topic, 8);
    kafka_sh(&["stop", "restart"], &RESTART_ENV);
    let read_before = settled(|| [api_a, api_b].iter().map(|&api| source_events_out(api)).sum::<u64>());
    std::thread::sleep(Duration::from_secs(2));
    kafka_sh(&["start", "restart"], &RESTART_ENV);
    let t = wait_total(&outs, n as usize, Duration::from_secs(150));
    // What the agent produced again after a delivery failure: the only
    // source of extra records in the topic.
    let st = stats(api_of(&agent_cfg));
    let sink = &st["pipelines"]["ship"]["plugins"]["sinks"][0];
    let retried = sink["counters"]["retried_records"].as_u64().unwrap_or(0) as i64;
    agent.stop();
    // The group formed again after the restart and commits every record.
    let in_topic = records_in_topic(RESTART, &topic, 8);
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let c = committed_total(RESTART, &group, &topic, 8);
        if c == in_topic {
            break;
        }
        assert!(Instant::now() < deadline, "the group committed {c} of {in_topic} records after the restart");
        std::thread::sleep(Duration::from_millis(500));
    }
    a.stop();
    b.stop();
    kafka_sh(&["stop", "restart"], &RESTART_ENV);
    let t2 = Tally::of(&outs);
    t2.print("broker restart");
    // Duplicates are allowed here (at-least-once), within bounds: records
    // whose delivery timed out while the broker was down are produced again
    // (some had been written), and offsets whose commit failed are read again.
    let rereads = t2.total() as i64 - in_topic;
    let reread_bound = read_before as i64 - committed_before;
    println!(
        "broker restart: {in_topic} records in the topic for {n} events (producer re-sends {}), \
         consumer re-reads {rereads} (at most {reread_bound}: {read_before} read, {committed_before} committed \
         when the broker stopped); the agent re-produced {retried} records",
        in_topic - n as i64,
    );
    assert!(in_topic >= n as i64, "the topic holds every event");
    assert!(
        in_topic - n as i64 <= retried,
        "{} extra records in the topic but only {retried} were produced again",
        in_topic - n as i64
    );
    assert_eq!(t.missing(n), Vec::<u64>::new(), "lost events across broker outages");
    assert!(rereads >= 0, "{} records in the files, {in_topic} in the topic: some never read", t2.total());
    assert!(
        rereads <= reread_bound,
        "the group read {rereads} records again, more than it had uncommitted ({reread_bound})"
    );
    assert!(read_before < n, "the restart must fall inside the run: {read_before} of {n} read");
}

/// Records the kafka source of the processor behind `api` has read.
fn source_events_out(api: u16) -> u64 {
    stats(api)["pipelines"]["main"]["plugins"]["sources"][0]["events"]["out"].as_u64().unwrap_or(0)
}

/// `f()` once it returns the same value twice 500 ms apart (at most 15 s).
fn settled(f: impl Fn() -> u64) -> u64 {
    let deadline = Instant::now() + Duration::from_secs(15);
    let mut last = f();
    loop {
        std::thread::sleep(Duration::from_millis(500));
        let now = f();
        if now == last {
            return now;
        }
        assert!(Instant::now() < deadline, "still changing after 15 s: {last} → {now}");
        last = now;
    }
}

/// Produces `n` sluice records with explicit Kafka timestamps `base + 10 ms × i`.
fn produce_with_times(topic: &str, n: u64, base_ms: i64) {
    let p: BaseProducer = ClientConfig::new().set("bootstrap.servers", MAIN).set("linger.ms", "5").create().unwrap();
    for i in 0..n {
        let v = format!(r#"{{"@timestamp":"2026-01-01T00:00:00Z","@host":"h","message":"replay {i}","seq":{i}}}"#);
        let ts = base_ms + 10 * i as i64;
        let mut rec = BaseRecord::<(), String>::to(topic).payload(&v).timestamp(ts).partition((i % 4) as i32);
        loop {
            match p.send(rec) {
                Ok(()) => break,
                Err((_, r)) => {
                    rec = r;
                    p.poll(Duration::from_millis(10));
                }
            }
        }
    }
    p.flush(Duration::from_secs(30)).unwrap();
}

fn rfc3339(ms: i64) -> String {
    sluice_core::codec::format_timestamp(ms * 1_000_000)
}

#[test]
fn kafka_replay_redelivers_exactly_the_time_range() {
    let _b = broker();
    let dir = Dir::new();
    let topic = unique("replay");
    let group = unique("g");
    create_topic(MAIN, &topic, 4);
    let base = sluice_core::event::now_ns() / 1_000_000 - 600_000;
    produce_with_times(&topic, 3000, base);
    // The group consumes everything and commits.
    let (cfg, out, _) = processor_config(&dir, "p", MAIN, &topic, &group, "");
    let mut p = Proc::start("p", &cfg, &dir);
    let outs = vec![("p".to_string(), out.clone())];
    let t = wait_total(&outs, 3000, Duration::from_secs(60));
    p.stop();
    assert_eq!(t.total(), 3000);
    let committed = committed_total(MAIN, &group, &topic, 4);
    assert_eq!(committed, 3000);
    // Replay [1000, 2000) by time into the same pipeline (its file sink).
    std::fs::remove_file(&out).unwrap();
    let from = rfc3339(base + 10 * 1000);
    let to = rfc3339(base + 10 * 2000);
    let r = Command::new(bin())
        .args(["kafka", "replay", "--config", cfg.to_str().unwrap(), "--from", &from, "--to", &to])
        .env("SLUICE_LOG", "info,librdkafka=warn")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&r.stdout);
    assert!(r.status.success(), "replay failed: {stdout}\n{}", String::from_utf8_lossy(&r.stderr));
    assert!(stdout.contains("\"replayed\":1000"), "{stdout}");
    let mut seqs = read_seqs(&out);
    seqs.sort_unstable();
    assert_eq!(seqs, (1000..2000).collect::<Vec<u64>>(), "exactly the range, once each");
    assert_eq!(committed_total(MAIN, &group, &topic, 4), committed, "the group's offsets are untouched");
    // A range with nothing in it replays nothing and succeeds.
    std::fs::remove_file(&out).unwrap();
    let r = Command::new(bin())
        .args([
            "kafka",
            "replay",
            "--config",
            cfg.to_str().unwrap(),
            "--from",
            &rfc3339(base - 60_000),
            "--to",
            &rfc3339(base - 1),
        ])
        .output()
        .unwrap();
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    assert!(String::from_utf8_lossy(&r.stdout).contains("\"replayed\":0"));
    assert!(read_seqs(&out).is_empty());
}

#[test]
fn kafka_missing_topic_is_a_clear_error_and_nothing_is_dropped() {
    let _b = broker();
    let dir = Dir::new();
    let topic = unique("missing");
    let group = unique("g");
    let n = 500;
    let agent_cfg = agent_config(&dir, MAIN, &topic, n, 0, "message_timeout = \"2s\"");
    let mut agent = Proc::start("agent", &agent_cfg, &dir);
    agent.wait_log("kafka topic does not exist", Duration::from_secs(60));
    let line =
        agent.log_text().lines().find(|l| l.contains("kafka topic does not exist")).unwrap_or_default().to_string();
    assert!(line.contains(&topic), "the error names the topic: {line}");
    // Created later: the waiting events are delivered, none lost.
    create_topic(MAIN, &topic, 2);
    let (cfg, out, _) = processor_config(&dir, "p", MAIN, &topic, &group, "");
    let mut p = Proc::start("p", &cfg, &dir);
    let outs = vec![("p".to_string(), out)];
    let t = wait_total(&outs, n as usize, Duration::from_secs(90));
    let sink = stats(api_of(&agent_cfg))["pipelines"]["ship"]["plugins"]["sinks"][0].clone();
    let retried = sink["counters"]["retried_records"].as_u64().unwrap_or(0) as i64;
    agent.stop();
    p.stop();
    let in_topic = records_in_topic(MAIN, &topic, 2);
    assert_eq!(t.missing(n), Vec::<u64>::new());
    let t = Tally::of(&outs);
    t.print("missing topic");
    // Nothing was written while the topic was missing; a record produced
    // twice can only be one the agent retried. One consumer that never
    // restarts reads each record once, and commits them all when stopped.
    assert!(in_topic - n as i64 <= retried, "{in_topic} records for {n} events, {retried} retried: {sink}");
    assert_eq!(t.total() as i64, in_topic, "the processor read a record twice (or missed one)");
    assert_eq!(committed_total(MAIN, &group, &topic, 2), in_topic);
}

#[test]
fn kafka_oversized_and_invalid_records_are_counted_tagged_and_kept() {
    let _b = broker();
    let dir = Dir::new();
    let topic = unique("bad");
    let group = unique("g");
    create_topic(MAIN, &topic, 2);
    // An agent with a tcp source and a small record limit.
    let port = free_port();
    let agent_api = free_port();
    let agent_cfg = dir.write(
        "agent.toml",
        &format!(
            r#"
[node]
data_dir = "{data}"
[api]
address = "127.0.0.1:{agent_api}"
[pipelines.ship]
workers = 1
[pipelines.ship.sources.in]
type = "tcp"
address = "127.0.0.1:{port}"
format = "ndjson"
[pipelines.ship.sinks.kafka]
type = "kafka"
brokers = "{MAIN}"
topic = "{topic}"
max_message_bytes = "2KiB"
"#,
            data = dir.path("agent-data").display()
        ),
    );
    let mut agent = Proc::start("agent", &agent_cfg, &dir);
    agent.wait_log("node started", Duration::from_secs(30));
    let mut lines = String::new();
    for i in 0..10u64 {
        let msg = if i % 5 == 0 { "y".repeat(5000) } else { format!("small {i}") };
        lines.push_str(&format!("{{\"message\":\"{msg}\",\"seq\":{i}}}\n"));
    }
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.write_all(lines.as_bytes()).unwrap();
    drop(s);
    // Records that are not sluice events, written by someone else.
    let prod: BaseProducer = ClientConfig::new().set("bootstrap.servers", MAIN).create().unwrap();
    for v in ["not json", "[1,2,3]", ""] {
        prod.send(BaseRecord::<(), str>::to(&topic).payload(v).partition(0)).map_err(|(e, _)| e).unwrap();
    }
    prod.flush(Duration::from_secs(10)).unwrap();
    let (cfg, out, api) = processor_config(&dir, "p", MAIN, &topic, &group, "");
    let mut p = Proc::start("p", &cfg, &dir);
    let read_lines = || -> Vec<serde_json::Value> {
        let text = std::fs::read_to_string(&out).unwrap_or_default();
        text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    while read_lines().len() < 13 {
        assert!(Instant::now() < deadline, "fewer than 13 records after 60 s: {:?}", read_lines());
        std::thread::sleep(Duration::from_millis(200));
    }
    let agent_stats = stats(agent_api);
    // Lag comes with librdkafka's statistics (lag_interval = 1s); once the
    // processor committed every record it is 0 on both partitions.
    let deadline = Instant::now() + Duration::from_secs(30);
    let p_stats = loop {
        let s = stats(api);
        let lag = s["pipelines"]["main"]["plugins"]["sources"][0]["gauges"]["consumer_lag"].clone();
        if lag.as_array().is_some_and(|l| l.len() == 2 && l.iter().all(|p| p["value"] == 0)) {
            break s;
        }
        assert!(Instant::now() < deadline, "the consumer lag never read 0 on both partitions: {lag}");
        std::thread::sleep(Duration::from_millis(250));
    };
    agent.stop();
    p.stop();
    // Read after the stop: a record delivered twice would show here.
    let lines = read_lines();
    assert_eq!(lines.len(), 13, "10 events + 3 foreign records: {lines:?}");
    let mut seqs: Vec<u64> = lines.iter().filter_map(|v| v["seq"].as_u64()).collect();
    seqs.sort_unstable();
    assert_eq!(seqs, vec![1, 2, 3, 4, 6, 7, 8, 9], "each event that fits, once");
    let tagged = |tag: &str| -> Vec<&serde_json::Value> {
        lines.iter().filter(|v| v["tags"].as_array().is_some_and(|a| a.iter().any(|t| t == tag))).collect()
    };
    // Events 0 and 5 (5,000-byte messages) became stubs: the first 1,024
    // bytes of the message, the tag, and the size of the record they would
    // have been: the stub's envelope (@timestamp, identity, @source, kept
    // as they were) around `"message":"y…y","seq":N`.
    let oversized = tagged("_kafka_oversized");
    assert_eq!(oversized.len(), 2, "{oversized:?}");
    let text = std::fs::read_to_string(&out).unwrap();
    let mut stub_lines: Vec<&str> = text.lines().filter(|l| l.contains("_kafka_oversized")).collect();
    stub_lines.sort_unstable();
    let mut sizes: Vec<u64> = oversized.iter().map(|v| v["kafka_original_bytes"].as_u64().unwrap()).collect();
    sizes.sort_unstable();
    let mut expected: Vec<u64> = stub_lines
        .iter()
        .zip([0, 5])
        .map(|(l, seq)| {
            let envelope = &l[..l.find(",\"message\":").unwrap()];
            (envelope.len() + format!(",\"message\":\"{}\",\"seq\":{seq}}}", "y".repeat(5000)).len()) as u64
        })
        .collect();
    expected.sort_unstable();
    assert_eq!(sizes, expected, "{stub_lines:?}");
    for stub in &oversized {
        assert_eq!(stub["message"].as_str().unwrap(), "y".repeat(1024));
    }
    let mut foreign: Vec<&str> =
        tagged("_jsonparsefailure").iter().map(|v| v["message"].as_str().unwrap_or("<none>")).collect();
    foreign.sort_unstable();
    assert_eq!(foreign, vec!["", "[1,2,3]", "not json"]);
    let sink = &agent_stats["pipelines"]["ship"]["plugins"]["sinks"][0];
    assert_eq!(sink["counters"]["oversized_events"], 2, "{sink}");
    assert_eq!(sink["counters"]["acked_events"], 10, "{sink}");
    let src = &p_stats["pipelines"]["main"]["plugins"]["sources"][0];
    assert_eq!(src["counters"]["invalid_records"], 3, "{src}");
    assert_eq!(src["events"]["failed"], 3, "{src}");
    let lag = src["gauges"]["consumer_lag"].as_array().cloned().unwrap_or_default();
    assert_eq!(lag.len(), 2, "lag per partition in /_node/stats: {src}");
    assert!(lag.iter().all(|l| l["labels"]["topic"] == topic.as_str()), "{lag:?}");
}

#[test]
fn kafka_examples_validate() {
    for name in ["agent-kafka.toml", "processor-kafka.toml"] {
        let path = repo().join("examples").join(name);
        let out = Command::new(bin()).args(["validate", path.to_str().unwrap()]).output().unwrap();
        assert!(out.status.success(), "{name}: {}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), format!("{}: ok", path.display()));
    }
}
