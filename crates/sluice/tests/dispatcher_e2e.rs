//! The dispatcher tier end to end through the real binary (issue #8):
//! `sluice agent` (generator → `sluice` sink listing every dispatcher) →
//! `sluice dispatcher` ×2 (`sluice` source with `ack = "delivered"`, memory
//! queue → `sluice` sink to the processor pool) → `sluice run` processors
//! (`sluice` source with a relay token → persisted queue → file sink). Every
//! event carries a run tag and a sequence number; the processors' output
//! files are read back and every number is accounted for.
//!
//! - `kill -9` of a dispatcher mid-run, then of a processor: nothing lost,
//!   duplicates bounded, takeover times printed;
//! - drain a processor through the members API: its batches in flight
//!   finish, it gets nothing new, no event lost and none duplicated; add a
//!   processor through the API and another by SIGHUP reload: both get
//!   traffic (time to first event printed), the pipeline is not restarted
//!   (the agent's connection survives: still no duplicate); per-processor
//!   gauges in `/_node/stats` and `/metrics`;
//! - a processor that stalls (`SIGSTOP` for 1 s) acknowledges late, is
//!   ejected (no new batch while ejected: exact counter), then slow-started
//!   (admission below 100 %, fewer batches than the others over the ramp);
//!   nothing lost, nothing duplicated;
//! - a dispatcher with a persisted queue (`ack = "queued"`) takes everything
//!   while every processor is down, survives its own `kill -9`, and delivers
//!   it all, once, when they return.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

mod common;
use common::ship::{start_agent, Processor};
use common::*;

const AGENT_TOKEN: &str = "e2e-acme-agent-token-0123456789";
const RELAY_TOKEN: &str = "e2e-dispatcher-relay-token-0123456789";
const ADMIN_TOKEN: &str = "e2e-members-admin-token-0123456789";

/// A processor: `sluice` source (agent and relay tokens) → persisted queue → file sink.
fn processor(dir: &Dir, name: &str) -> Processor {
    Processor::new(dir, name, |data, out, port, _| {
        format!(
            r#"[node]
data_dir = "{data}"
shutdown_timeout = "5s"
[api]
address = ""
[pipelines.main]
batch_size = 512
batch_delay = "20ms"
workers = 1
[pipelines.main.queue]
type = "persisted"
fsync = "never"
shards = 1
[pipelines.main.sources.in]
type = "sluice"
address = "127.0.0.1:{port}"
heartbeat_interval = "1s"
[pipelines.main.sources.in.tokens.dispatchers]
token = "{RELAY_TOKEN}"
group = "acme"
relay = true
[pipelines.main.sinks.out]
type = "file"
path = "{out}"
"#,
            data = data.display(),
            out = out.display(),
        )
    })
}

/// A dispatcher: `sluice` source (`ack = "delivered"`) → memory queue → `sluice` sink to `receivers`.
struct Dispatcher {
    port: u16,
    api: u16,
    config: PathBuf,
    log: PathBuf,
    name: String,
    data: PathBuf,
    /// Persisted queue and `ack = "queued"` instead of memory + `delivered`.
    persisted: bool,
    /// The sink's balancing, heartbeat, slow-start and outlier lines.
    tuning: String,
    proc: Option<Proc>,
}

/// The processors sink's balancing lines unless a test sets its own.
const DEFAULT_TUNING: &str = "algorithm = \"least_loaded\"\nheartbeat_interval = \"300ms\"\nslow_start = \"1s\"";

impl Dispatcher {
    fn new(dir: &Dir, name: &str, receivers: &[String]) -> Self {
        let d = Self {
            port: free_port(),
            api: free_port(),
            config: dir.path(&format!("{name}.toml")),
            log: dir.path(&format!("{name}.log")),
            name: name.to_string(),
            data: dir.path(&format!("{name}-data")),
            persisted: false,
            tuning: DEFAULT_TUNING.into(),
            proc: None,
        };
        d.write_config(receivers);
        d
    }

    /// The variant that absorbs an outage of every processor: a persisted
    /// queue, and agents' batches acknowledged once in it.
    fn persisted(dir: &Dir, name: &str, receivers: &[String]) -> Self {
        let mut d = Self::new(dir, name, receivers);
        d.persisted = true;
        d.write_config(receivers);
        d
    }

    fn write_config(&self, receivers: &[String]) {
        let list: Vec<String> = receivers.iter().map(|r| format!("\"{r}\"")).collect();
        std::fs::write(
            &self.config,
            format!(
                r#"[node]
name = "{name}"
data_dir = "{data}"
shutdown_timeout = "5s"
[api]
address = "127.0.0.1:{api}"
[pipelines.dispatch]
workers = 1
batch_size = 512
batch_delay = "5ms"
[pipelines.dispatch.queue]
{queue}
[pipelines.dispatch.sources.agents]
type = "sluice"
address = "127.0.0.1:{port}"
ack = "{ack}"
heartbeat_interval = "1s"
[pipelines.dispatch.sources.agents.tokens.acme]
token = "{AGENT_TOKEN}"
group = "acme"
subgroups = ["web"]
[pipelines.dispatch.sinks.processors]
type = "sluice"
receivers = [{list}]
token = "{RELAY_TOKEN}"
group = "acme"
window = 4
backoff_max = "300ms"
block_timeout = "2s"
members_api = {{ token = "{ADMIN_TOKEN}" }}
{tuning}
"#,
                name = self.name,
                data = self.data.display(),
                api = self.api,
                port = self.port,
                list = list.join(", "),
                tuning = self.tuning,
                queue = if self.persisted {
                    "type = \"persisted\"\nfsync = \"never\"\nshards = 1"
                } else {
                    "type = \"memory\"\nmax_events = 16384"
                },
                ack = if self.persisted { "queued" } else { "delivered" },
            ),
        )
        .unwrap();
    }

    fn start(&mut self) {
        let mut p =
            Proc::start(&["dispatcher", "--config", self.config.to_str().unwrap()], &self.log, &self.name.clone());
        wait_port(self.port, &mut p);
        wait_port(self.api, &mut p);
        self.proc = Some(p);
    }

    fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }
}

fn agent_config(dir: &Dir, name: &str, receivers: &[String], gen: &str) -> PathBuf {
    ship::agent_config(dir, name, receivers, "least_loaded", AGENT_TOKEN, gen, "")
}

/// Plain HTTP/1.1 to the API listener: status and body.
fn http(port: u16, method: &str, path: &str, token: Option<&str>, body: &str) -> (u16, String) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let auth = token.map(|t| format!("Authorization: Bearer {t}\r\n")).unwrap_or_default();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAccept: application/json\r\nContent-Type: application/json\r\n{auth}Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut resp = String::new();
    s.read_to_string(&mut resp).unwrap();
    let status = resp[9..12].parse().unwrap();
    let body = resp[resp.find("\r\n\r\n").unwrap() + 4..].to_string();
    (status, body)
}

fn json(port: u16, path: &str, token: Option<&str>) -> serde_json::Value {
    let (status, body) = http(port, "GET", path, token, "");
    assert_eq!(status, 200, "{path}: {body}");
    serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"))
}

const MEMBERS: &str = "/api/v1/dispatcher/dispatch/processors/members";

/// The state the members API reports for `addr` (`None`: not a member).
fn member_state(api: u16, addr: &str) -> Option<String> {
    let v = json(api, MEMBERS, Some(ADMIN_TOKEN));
    v["members"].as_array().unwrap().iter().find(|m| m["address"] == addr).map(|m| m["state"].as_str().unwrap().into())
}

#[test]
fn kill_9_of_a_dispatcher_and_of_a_processor_lose_nothing() {
    let dir = Dir::new("kill");
    let mut procs: Vec<Processor> = (0..4).map(|i| processor(&dir, &format!("p{i}"))).collect();
    for p in procs.iter_mut() {
        p.start();
    }
    let pool: Vec<String> = procs.iter().map(Processor::addr).collect();
    let mut ds: Vec<Dispatcher> = (0..2).map(|i| Dispatcher::new(&dir, &format!("d{i}"), &pool)).collect();
    for d in ds.iter_mut() {
        d.start();
    }
    let total = 60_000u64;
    let gen = format!("message = \"kill {{seq}}\"\ncount = {total}\nrate = 6000");
    let receivers: Vec<String> = ds.iter().map(Dispatcher::addr).collect();
    let cfg = agent_config(&dir, "agent", &receivers, &gen);
    let started = Instant::now();
    let mut agent = start_agent(&dir, "agent", &cfg);
    let owned: Vec<PathBuf> = procs.iter().map(|p| p.out.clone()).collect();
    let outputs: Vec<&Path> = owned.iter().map(PathBuf::as_path).collect();

    // Traffic through both dispatchers, then kill -9 the first one.
    let deadline = Instant::now() + Duration::from_secs(30);
    while total_of(&outputs, "kill") < 10_000 {
        assert!(Instant::now() < deadline, "no traffic through the dispatchers");
        agent.assert_alive();
        std::thread::sleep(Duration::from_millis(20));
    }
    let before = total_of(&outputs, "kill");
    ds[0].proc.take().unwrap().kill9();
    let killed = Instant::now();
    let takeover = loop {
        if total_of(&outputs, "kill") > before + 3_000 {
            break killed.elapsed();
        }
        assert!(killed.elapsed() < Duration::from_secs(30), "the surviving dispatcher never took over");
        std::thread::sleep(Duration::from_millis(10));
    };

    // Then kill -9 a processor; the dispatcher re-sends its batches in flight.
    std::thread::sleep(Duration::from_millis(500));
    let before_p = total_of(&outputs[1..], "kill");
    procs[0].kill9();
    let killed_p = Instant::now();
    let takeover_p = loop {
        if total_of(&outputs[1..], "kill") > before_p + 3_000 {
            break killed_p.elapsed();
        }
        assert!(killed_p.elapsed() < Duration::from_secs(30), "the other processors never took over");
        std::thread::sleep(Duration::from_millis(10));
    };
    // The processor returns: what its queue held is written, it gets traffic again.
    let first_life = seqs(outputs[0], "kill").len();
    procs[0].start();
    let mut survivors: Vec<&mut Proc> = vec![&mut agent];
    survivors.push(ds[1].proc.as_mut().unwrap());
    let a = wait_all(&outputs, "kill", total, Duration::from_secs(90), &mut survivors);
    std::thread::sleep(Duration::from_millis(500));
    let a = if a.unique as u64 == total { account(&outputs, "kill", total) } else { a };
    println!(
        "2 dispatchers → 4 processors, {total} events at 6,000/s: dispatcher kill -9 → takeover (3,000 more events) after {:.0} ms; processor kill -9 → takeover after {:.0} ms; {} unique, {} duplicates, shares {}; restarted processor wrote {} more; {:.1}s in all",
        takeover.as_secs_f64() * 1e3,
        takeover_p.as_secs_f64() * 1e3,
        a.unique,
        a.duplicates,
        shares(&a),
        seqs(outputs[0], "kill").len() - first_life,
        started.elapsed().as_secs_f64()
    );
    agent.term();
    assert_eq!(a.missing, Vec::<u64>::new(), "lost events");
    assert_eq!(a.unique as u64, total);
    // Dispatcher failure: at most the agent's window to it (4 × 256).
    // Processor failure: at most the dispatcher's window to it (4 × 512,
    // two dispatchers' worth at most) plus what the processor had queued but
    // not yet written (its sink channel and the batch in hand: 5 × 512).
    assert!(a.duplicates <= 4 * 256 + 2 * 4 * 512 + 5 * 512, "{} duplicates", a.duplicates);
    assert!(seqs(outputs[0], "kill").len() > first_life, "the restarted processor wrote its queue and new traffic");
}

#[test]
fn drain_and_add_processors_at_run_time_without_loss_or_duplicates() {
    let dir = Dir::new("members");
    let mut procs: Vec<Processor> = (0..4).map(|i| processor(&dir, &format!("m{i}"))).collect();
    for p in procs.iter_mut() {
        p.start();
    }
    let addrs: Vec<String> = procs.iter().map(Processor::addr).collect();
    let mut d = Dispatcher::new(&dir, "dm", &addrs[..2]);
    d.start();
    let total = 50_000u64;
    let gen = format!("message = \"mem {{seq}}\"\ncount = {total}\nrate = 5000");
    let cfg = agent_config(&dir, "agent", &[d.addr()], &gen);
    let mut agent = start_agent(&dir, "agent", &cfg);
    let owned: Vec<PathBuf> = procs.iter().map(|p| p.out.clone()).collect();
    let outputs: Vec<&Path> = owned.iter().map(PathBuf::as_path).collect();
    let deadline = Instant::now() + Duration::from_secs(30);
    while total_of(&outputs, "mem") < 5_000 {
        assert!(Instant::now() < deadline, "no traffic through the dispatcher");
        agent.assert_alive();
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(seqs(outputs[2], "mem").is_empty());

    // Add m2 through the members API: it gets traffic within seconds.
    let (status, body) = http(d.api, "POST", MEMBERS, Some(ADMIN_TOKEN), &format!("{{\"address\":\"{}\"}}", addrs[2]));
    assert_eq!(status, 201, "{body}");
    let added = Instant::now();
    while seqs(outputs[2], "mem").is_empty() {
        assert!(added.elapsed() < Duration::from_secs(10), "the added processor never got traffic");
        std::thread::sleep(Duration::from_millis(10));
    }
    let first_event = added.elapsed();
    let (status, _) = http(d.api, "POST", MEMBERS, None, &format!("{{\"address\":\"{}\"}}", addrs[3]));
    assert_eq!(status, 401, "the members API needs its token");

    // Drain m0: once the API no longer lists it, it never gets another event.
    let (status, body) = http(
        d.api,
        "POST",
        &format!("{MEMBERS}/drain"),
        Some(ADMIN_TOKEN),
        &format!("{{\"address\":\"{}\"}}", addrs[0]),
    );
    assert_eq!(status, 202, "{body}");
    let drain_started = Instant::now();
    while member_state(d.api, &addrs[0]).is_some() {
        assert!(drain_started.elapsed() < Duration::from_secs(10), "the drain never finished");
        std::thread::sleep(Duration::from_millis(20));
    }
    let drained_in = drain_started.elapsed();
    // Its last batches were acknowledged; let its own queue write them out.
    std::thread::sleep(Duration::from_millis(500));
    let m0_at_drain = seqs(outputs[0], "mem").len();

    // Add m3 and drop m1 by editing the config and sending SIGHUP.
    d.write_config(&[addrs[2].clone(), addrs[3].clone()]);
    d.proc.as_ref().unwrap().signal("-HUP");
    let reloaded = Instant::now();
    while seqs(outputs[3], "mem").is_empty() {
        assert!(reloaded.elapsed() < Duration::from_secs(10), "the processor added by reload never got traffic");
        std::thread::sleep(Duration::from_millis(10));
    }
    let reload_first_event = reloaded.elapsed();
    while member_state(d.api, &addrs[1]).is_some() {
        assert!(reloaded.elapsed() < Duration::from_secs(10), "m1 was never drained after the reload");
        std::thread::sleep(Duration::from_millis(20));
    }

    // Per-processor metrics while traffic flows.
    let stats = json(d.api, "/_node/stats", None);
    let sinks = stats["pipelines"]["dispatch"]["plugins"]["sinks"].as_array().unwrap().clone();
    let m2 = sinks.iter().find(|s| s["id"] == format!("processors@{}", addrs[2])).expect("m2 in stats");
    for g in ["in_flight", "share_permille", "ack_p50_us", "ack_p99_us", "state", "admission_pct"] {
        assert!(m2["gauges"].get(g).is_some(), "gauge {g} missing: {m2}");
    }
    assert_eq!(m2["gauges"]["state"], 1, "up: {m2}");
    assert!(m2["counters"]["batches_acked"].as_u64().unwrap() > 0, "{m2}");
    let m0 = sinks.iter().find(|s| s["id"] == format!("processors@{}", addrs[0])).expect("m0 in stats");
    assert_eq!(m0["gauges"]["state"], 4, "removed: {m0}");
    let (_, prom) = http(d.api, "GET", "/metrics", None, "");
    assert!(
        prom.contains(&format!(
            "sluice_component_share_permille{{pipeline=\"dispatch\",kind=\"sink\",component=\"processors@{}\",",
            addrs[2]
        )),
        "share gauge in /metrics"
    );

    let a = wait_all(&outputs, "mem", total, Duration::from_secs(60), &mut [&mut agent]);
    std::thread::sleep(Duration::from_millis(500));
    let a = if a.unique as u64 == total { account(&outputs, "mem", total) } else { a };
    println!(
        "members: added by API → first event after {:.0} ms; drain finished in {:.0} ms; added by SIGHUP → first event after {:.0} ms; {} unique, {} duplicates, shares {}",
        first_event.as_secs_f64() * 1e3,
        drained_in.as_secs_f64() * 1e3,
        reload_first_event.as_secs_f64() * 1e3,
        a.unique,
        a.duplicates,
        shares(&a)
    );
    agent.term();
    assert_eq!(a.missing, Vec::<u64>::new(), "lost events");
    assert_eq!(a.unique as u64, total);
    assert_eq!(a.duplicates, 0, "no failure, so no duplicate: the drain and the reload dropped nothing in flight");
    assert_eq!(seqs(outputs[0], "mem").len(), m0_at_drain, "the drained processor got nothing new");
    assert!(a.per_receiver[2] > 0 && a.per_receiver[3] > 0, "{}", shares(&a));
    d.proc.as_mut().unwrap().assert_alive();
}

#[test]
fn a_persisted_dispatcher_absorbs_an_outage_of_every_processor_and_its_own_kill_9() {
    let dir = Dir::new("outage");
    let mut procs: Vec<Processor> = (0..2).map(|i| processor(&dir, &format!("p{i}"))).collect();
    let receivers: Vec<String> = procs.iter().map(Processor::addr).collect();
    let mut d = Dispatcher::persisted(&dir, "d0", &receivers);
    d.start();
    // Every processor is down: the agent ships all of it anyway, because the
    // dispatcher acknowledges once a batch is in its disk queue.
    let total = 20_000u64;
    let cfg =
        agent_config(&dir, "outage", &[d.addr()], &format!("message = \"out {{seq}}\"\ncount = {total}\nrate = 10000"));
    let mut agent = start_agent(&dir, "outage", &cfg);
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let stats = json(d.api, "/_node/stats", None);
        if stats["pipelines"]["dispatch"]["queue"]["events"].as_u64() == Some(total) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the dispatcher's queue never held all {total}: {}",
            stats["pipelines"]["dispatch"]["queue"]
        );
        agent.assert_alive();
        std::thread::sleep(Duration::from_millis(200));
    }
    // The agent has nothing left to send: stopping it loses nothing.
    agent.term();
    // kill -9 of the dispatcher with everything in its queue, restart.
    if let Some(mut p) = d.proc.take() {
        p.kill9();
    }
    d.start();
    let restarted = Instant::now();
    for p in procs.iter_mut() {
        p.start();
    }
    let outputs: Vec<PathBuf> = procs.iter().map(|p| p.out.clone()).collect();
    let out_refs: Vec<&Path> = outputs.iter().map(PathBuf::as_path).collect();
    let mut dp = d.proc.take().unwrap();
    let a = wait_all(&out_refs, "out", total, Duration::from_secs(60), &mut [&mut dp]);
    println!(
        "persisted dispatcher: {} of {total} events after every processor was down and the dispatcher was killed; \
         drained in {:.1} s; {} duplicates; shares {}",
        a.unique,
        restarted.elapsed().as_secs_f64(),
        a.duplicates,
        shares(&a)
    );
    assert_eq!(a.missing, Vec::<u64>::new(), "lost events");
    assert_eq!(a.unique as u64, total);
    // Nothing had been forwarded before the kill, so nothing arrives twice.
    assert_eq!(a.duplicates, 0);
    // (The shares are printed, not asserted: 20,000 queued events drain in
    // well under a second, often before the second processor connected.)
    dp.term();
}

/// One receiver's counters and gauges from the dispatcher's `/_node/stats`.
fn receiver_stats(api: u16, addr: &str) -> serde_json::Value {
    let stats = json(api, "/_node/stats", None);
    let sinks = stats["pipelines"]["dispatch"]["plugins"]["sinks"].as_array().unwrap().clone();
    sinks
        .into_iter()
        .find(|s| s["id"] == format!("processors@{addr}"))
        .unwrap_or_else(|| panic!("processors@{addr} not in /_node/stats"))
}

/// Batches the dispatcher sent to each of `addrs` so far.
fn batches_sent(api: u16, addrs: &[String]) -> Vec<u64> {
    addrs.iter().map(|a| receiver_stats(api, a)["counters"]["batches_sent"].as_u64().unwrap()).collect()
}

/// The members API's report on `addr`.
fn member(api: u16, addr: &str) -> serde_json::Value {
    let v = json(api, MEMBERS, Some(ADMIN_TOKEN));
    v["members"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["address"] == addr)
        .cloned()
        .unwrap_or_else(|| panic!("{addr} is not a member: {v}"))
}

/// Outlier ejection and slow start through the real binaries: a processor
/// freezes (`SIGSTOP`, a stalled VM or a long GC pause) for a second, so the
/// batches it holds are acknowledged later than `slow_ack` once it thaws;
/// two slow acks in a row eject it. While ejected it gets no new batch (the
/// dispatcher's `batches_sent` counter for it does not move); when the
/// ejection ends it is slow-started: the members API reports an admission
/// below 100 % and, over the ramp, it gets fewer batches than the others
/// (round robin, so without the ramp each would get a quarter). Every event
/// arrives; a processor that is slow but connected has nothing re-sent.
#[test]
fn a_stalled_processor_is_ejected_then_slow_started_and_nothing_is_lost() {
    let dir = Dir::new("eject");
    let mut procs: Vec<Processor> = (0..4).map(|i| processor(&dir, &format!("e{i}"))).collect();
    for p in procs.iter_mut() {
        p.start();
    }
    let addrs: Vec<String> = procs.iter().map(Processor::addr).collect();
    let mut d = Dispatcher::new(&dir, "de", &addrs);
    // Round robin: each processor's fair share is a quarter, so the ramp
    // shows as a smaller count. A heartbeat of 1 s fails a receiver over
    // only after 3 s of silence: the 1 s freeze makes slow acks, not a
    // lost connection.
    d.tuning = "algorithm = \"round_robin\"\nheartbeat_interval = \"1s\"\nslow_start = \"3s\"\n\
                outlier_detection = { consecutive_failures = 2, slow_ack = \"300ms\", ejection_time = \"3s\" }"
        .into();
    d.write_config(&addrs);
    d.start();
    // 11 s of traffic: ≈ 1 s before the freeze, 1 s frozen, 3 s ejected,
    // 3 s of slow start, and still some after it.
    let total = 55_000u64;
    let gen = format!("message = \"ej {{seq}}\"\ncount = {total}\nrate = 5000");
    let cfg = agent_config(&dir, "agent", &[d.addr()], &gen);
    let started = Instant::now();
    let mut agent = start_agent(&dir, "agent", &cfg);
    let owned: Vec<PathBuf> = procs.iter().map(|p| p.out.clone()).collect();
    let outputs: Vec<&Path> = owned.iter().map(PathBuf::as_path).collect();
    let deadline = Instant::now() + Duration::from_secs(30);
    while total_of(&outputs, "ej") < 4_000 {
        assert!(Instant::now() < deadline, "no traffic through the dispatcher");
        agent.assert_alive();
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(member(d.api, &addrs[0])["state"], "up");

    // Freeze e0 for a second; its batches in flight are acknowledged late.
    let p0 = procs[0].proc.as_ref().unwrap();
    p0.signal("-STOP");
    std::thread::sleep(Duration::from_millis(1_000));
    p0.signal("-CONT");
    let thawed = Instant::now();
    // Outcomes, not speed: the members API's state is a snapshot refreshed
    // every 100 ms, so a counter read counts as inside a state only when a
    // snapshot taken before it and one read 250 ms after it both show that
    // state (and one ejection in all: one contiguous interval).
    let settle = Duration::from_millis(250);
    let deadline = Instant::now() + Duration::from_secs(30);
    let m = loop {
        let m = member(d.api, &addrs[0]);
        if m["state"] == "ejected" {
            break m;
        }
        assert!(Instant::now() < deadline, "e0 was not ejected within 30 s of its slow acks: {m}");
        std::thread::sleep(Duration::from_millis(20));
    };
    let ejected_seen = thawed.elapsed();
    assert_eq!(m["ejections"], 1, "{m}");
    // While ejected it gets no new batch; the state gauge says ejected (2).
    let mut during: Vec<Vec<u64>> = Vec::new();
    let mut gauge_said_ejected = false;
    loop {
        let sent = batches_sent(d.api, &addrs);
        let gauge = receiver_stats(d.api, &addrs[0])["gauges"]["state"].clone();
        std::thread::sleep(settle);
        let m = member(d.api, &addrs[0]);
        if m["state"] != "ejected" || m["ejections"] != 1 {
            break;
        }
        gauge_said_ejected |= gauge == 2;
        during.push(sent);
        assert!(Instant::now() < deadline, "e0 still ejected 30 s after its slow acks: {m}");
    }
    assert!(during.len() >= 2, "the 3 s ejection was not watched twice (the machine is too slow to poll it)");
    assert!(gauge_said_ejected, "the state gauge never said ejected (2) during the ejection");
    let (before, after) = (&during[0], &during[during.len() - 1]);
    assert_eq!(after[0], before[0], "an ejected processor got new batches");
    let others_during: u64 = (1..4).map(|i| after[i] - before[i]).sum();
    assert!(others_during > 0, "the others carried the traffic while e0 was ejected");

    // The ejection ends: e0 is up again, slow-started. The ramp window is
    // taken the same way: counters read inside it, on both ends.
    let in_ramp = |m: &serde_json::Value| m["state"] == "up" && m["admission_pct"].as_u64().unwrap() < 100;
    let mut ramp_start: Option<(Vec<u64>, u64)> = None;
    let mut ramp_end: Option<Vec<u64>> = None;
    let mut admissions = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let m = member(d.api, &addrs[0]);
        let sent = batches_sent(d.api, &addrs);
        if in_ramp(&m) {
            admissions.push(m["admission_pct"].as_u64().unwrap());
            if ramp_start.is_none() {
                ramp_start = Some((sent.clone(), m["admission_pct"].as_u64().unwrap()));
            }
            std::thread::sleep(settle);
            if in_ramp(&member(d.api, &addrs[0])) {
                ramp_end = Some(sent);
            }
        } else if ramp_start.is_some() && m["admission_pct"] == 100 {
            break;
        }
        assert!(Instant::now() < deadline, "e0 never went through a slow start: {m}");
        std::thread::sleep(Duration::from_millis(20));
    }
    let (first, first_admission) = ramp_start.unwrap();
    let last = ramp_end.expect("no counter read inside the 3 s slow start (the machine is too slow to poll it)");
    let ramp: Vec<u64> = (0..4).map(|i| last[i] - first[i]).collect();
    let others_mean = ramp[1..].iter().sum::<u64>() as f64 / 3.0;

    let a = wait_all(&outputs, "ej", total, Duration::from_secs(60), &mut [&mut agent]);
    std::thread::sleep(Duration::from_millis(500));
    let a = if a.unique as u64 == total { account(&outputs, "ej", total) } else { a };
    let end = batches_sent(d.api, &addrs);
    println!(
        "ejection: e0 frozen 1 s → ejected {:.0} ms after the thaw; {} batches to the others and 0 to e0 while ejected; \
         slow start: admission {first_admission} % → {} % ({} samples), batches during the ramp {:?} (e0 first); \
         after it e0 got {} more; {} unique, {} duplicates, shares {}; {:.1}s in all",
        ejected_seen.as_secs_f64() * 1e3,
        others_during,
        admissions.iter().max().unwrap(),
        admissions.len(),
        ramp,
        end[0] - last[0],
        a.unique,
        a.duplicates,
        shares(&a),
        started.elapsed().as_secs_f64()
    );
    agent.term();
    assert!(
        (ramp[0] as f64) < others_mean,
        "during its slow start e0 got {} batches, the others {:?} (mean {others_mean:.1})",
        ramp[0],
        &ramp[1..]
    );
    assert!(
        first_admission < 100 && admissions.iter().max() > Some(&first_admission),
        "the admission ramps up: {admissions:?}"
    );
    assert!(end[0] > last[0], "after its slow start e0 takes batches again");
    assert_eq!(a.missing, Vec::<u64>::new(), "lost events");
    assert_eq!(a.unique as u64, total);
    // Slow is not failed: no connection was lost, nothing was re-sent.
    assert_eq!(a.duplicates, 0, "duplicates without a failure");
    assert_eq!(receiver_stats(d.api, &addrs[0])["counters"]["batches_failed"], 0);
    d.proc.as_mut().unwrap().assert_alive();
}
