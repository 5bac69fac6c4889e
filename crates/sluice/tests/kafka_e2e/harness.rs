//! The harness of the Kafka end-to-end tests: the shared broker (one test at
//! a time), topics, committed offsets and watermarks, temporary directories,
//! `sluice` processes, agent and processor configurations, and the exact
//! tally of sequence-numbered events read back from file sinks.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use crate::common::{bin, free_port};

use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
use rdkafka::{ClientConfig, Offset, TopicPartitionList};

pub(crate) const MAIN: &str = "127.0.0.1:19092";
pub(crate) const RESTART: &str = "127.0.0.1:19094";

pub(crate) fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

pub(crate) fn kafka_sh(args: &[&str], env: &[(&str, &str)]) {
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
pub(crate) struct Serial {
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
pub(crate) fn broker() -> Serial {
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

pub(crate) const RESTART_ENV: [(&str, &str); 2] = [("KAFKA_PORT", "19094"), ("KAFKA_CONTROLLER_PORT", "19095")];

pub(crate) fn unique(name: &str) -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    format!("{name}-{}-{}", std::process::id(), nanos % 1_000_000_000)
}

pub(crate) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
}

pub(crate) fn create_topic(brokers: &str, topic: &str, partitions: i32) {
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
pub(crate) fn records_in_topic(brokers: &str, topic: &str, partitions: i32) -> i64 {
    let c: BaseConsumer = ClientConfig::new().set("bootstrap.servers", brokers).create().unwrap();
    (0..partitions).map(|p| c.fetch_watermarks(topic, p, Duration::from_secs(10)).unwrap().1).sum()
}

/// Sum of the group's committed offsets over the topic's partitions.
pub(crate) fn committed_total(brokers: &str, group: &str, topic: &str, partitions: i32) -> i64 {
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

pub(crate) struct Dir(tempfile::TempDir);

impl Dir {
    /// A temporary directory, kept (its path printed) when
    /// `SLUICE_TEST_KEEP` is set, to read the processes' logs afterwards.
    pub(crate) fn new() -> Self {
        let mut d = tempfile::tempdir().unwrap();
        if std::env::var_os("SLUICE_TEST_KEEP").is_some() {
            d.disable_cleanup(true);
            println!("test directory kept: {}", d.path().display());
        }
        Self(d)
    }
    pub(crate) fn path(&self, p: &str) -> PathBuf {
        self.0.path().join(p)
    }
    pub(crate) fn write(&self, name: &str, text: &str) -> PathBuf {
        let p = self.path(name);
        std::fs::write(&p, text).unwrap();
        p
    }
}

/// A `sluice run` child, killed (SIGKILL) if the test forgets it.
pub(crate) struct Proc {
    child: Option<Child>,
    log: PathBuf,
    name: String,
}

impl Proc {
    pub(crate) fn start(name: &str, config: &Path, dir: &Dir) -> Self {
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

    pub(crate) fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    pub(crate) fn wait_log(&self, needle: &str, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        while !self.log_text().contains(needle) {
            assert!(Instant::now() < deadline, "{}: never logged {needle:?}:\n{}", self.name, self.log_text());
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// SIGTERM and wait: a graceful stop (drain, commit).
    pub(crate) fn stop(&mut self) {
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
    pub(crate) fn kill9(&mut self) {
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
pub(crate) fn agent_config(dir: &Dir, brokers: &str, topic: &str, count: u64, rate: u64, extra_sink: &str) -> PathBuf {
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
pub(crate) fn processor_config(
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
pub(crate) fn api_of(cfg: &Path) -> u16 {
    let text = std::fs::read_to_string(cfg).unwrap();
    let line = text.lines().find(|l| l.starts_with("address = \"127.0.0.1:")).unwrap();
    line.trim_end_matches('"').rsplit(':').next().unwrap().parse().unwrap()
}

/// `seq` → how many times it was seen, per output file.
pub(crate) fn read_seqs(path: &Path) -> Vec<u64> {
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

pub(crate) struct Tally {
    pub(crate) per_file: Vec<(String, usize)>,
    pub(crate) counts: HashMap<u64, usize>,
}

impl Tally {
    pub(crate) fn of(outs: &[(String, PathBuf)]) -> Self {
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
    pub(crate) fn total(&self) -> usize {
        self.per_file.iter().map(|(_, n)| n).sum()
    }
    pub(crate) fn missing(&self, n: u64) -> Vec<u64> {
        (0..n).filter(|s| !self.counts.contains_key(s)).collect()
    }
    pub(crate) fn duplicates(&self) -> usize {
        self.counts.values().map(|c| c - 1).sum()
    }
    pub(crate) fn print(&self, label: &str) {
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

pub(crate) fn wait_total(outs: &[(String, PathBuf)], want: usize, timeout: Duration) -> Tally {
    let deadline = Instant::now() + timeout;
    loop {
        let t = Tally::of(outs);
        if t.counts.len() >= want || Instant::now() > deadline {
            return t;
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}

pub(crate) fn stats(api: u16) -> serde_json::Value {
    use std::io::Read;
    let mut s = std::net::TcpStream::connect(("127.0.0.1", api)).unwrap();
    write!(s, "GET /_node/stats HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").unwrap();
    let mut body = String::new();
    s.read_to_string(&mut body).unwrap();
    let json = body.split("\r\n\r\n").nth(1).unwrap_or_default();
    serde_json::from_str(json).unwrap_or_else(|e| panic!("stats: {e}: {body}"))
}

pub(crate) fn run_group(processors: usize) {
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

impl Tally {
    pub(crate) fn print_and(self, missing: Vec<u64>) -> (Self, Vec<u64>) {
        self.print("result");
        (self, missing)
    }
}

/// Records the kafka source of the processor behind `api` has read.
pub(crate) fn source_events_out(api: u16) -> u64 {
    stats(api)["pipelines"]["main"]["plugins"]["sources"][0]["events"]["out"].as_u64().unwrap_or(0)
}

/// `f()` once it returns the same value twice 500 ms apart (at most 15 s).
pub(crate) fn settled(f: impl Fn() -> u64) -> u64 {
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
pub(crate) fn produce_with_times(topic: &str, n: u64, base_ms: i64) {
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

pub(crate) fn rfc3339(ms: i64) -> String {
    sluice_core::codec::format_timestamp(ms * 1_000_000)
}
