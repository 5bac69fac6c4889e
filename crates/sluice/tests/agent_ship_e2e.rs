//! End to end through the real binary: `sluice agent` (generator → `sluice`
//! sink) shipping to separate `sluice run` processors (`sluice` source →
//! file sink). Every event carries a run tag and a sequence number; the
//! processors' output files are read back and every sequence number is
//! accounted for: delivered, lost (must be none) or duplicated (bounded).
//!
//! - every algorithm to 2 and to 4 processors: exactly once, shares printed;
//! - `kill -9` of a processor mid-run: nothing lost, duplicates bounded,
//!   takeover time printed, the restarted processor gets traffic again;
//! - a slow processor gets less under `least_loaded` and `credit` than
//!   under `round_robin` (shares printed; figures in BENCHMARKS.md);
//! - every processor down for 30 s while the agent keeps reading: everything
//!   arrives after they return;
//! - bad token, identity not owned, garbage: error frames and counters.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::ship::{start_agent, Processor};
use common::*;

const TOKEN: &str = "e2e-acme-token-0123456789";
const ALGORITHMS: [&str; 6] =
    ["round_robin", "weighted_round_robin", "random", "least_connections", "least_loaded", "credit"];

/// A processor: `sluice` source → (optional filter) → file sink.
fn processor(dir: &Dir, name: &str, queue: &str, filter: &str) -> Processor {
    Processor::new(dir, name, |data, out, port, api| {
        format!(
            r#"[node]
data_dir = "{data}"
shutdown_timeout = "5s"
[api]
address = "127.0.0.1:{api}"
[pipelines.main]
batch_size = 256
batch_delay = "20ms"
workers = 1
[pipelines.main.queue]
{queue}
[pipelines.main.sources.agents]
type = "sluice"
address = "127.0.0.1:{port}"
heartbeat_interval = "1s"
[pipelines.main.sources.agents.tokens.acme]
token = "{TOKEN}"
group = "acme"
subgroups = ["web"]
{filter}
[pipelines.main.sinks.out]
type = "file"
path = "{out}"
"#,
            data = data.display(),
            out = out.display(),
        )
    })
}

fn agent_config(dir: &Dir, name: &str, receivers: &[String], algorithm: &str, gen: &str, extra: &str) -> PathBuf {
    ship::agent_config(dir, name, receivers, algorithm, TOKEN, gen, extra)
}

#[test]
fn every_algorithm_delivers_exactly_once_to_two_and_four_processors() {
    let dir = Dir::new("algorithms");
    let mut procs: Vec<Processor> =
        (0..4).map(|i| processor(&dir, &format!("p{i}"), "type = \"memory\"", "")).collect();
    for p in procs.iter_mut() {
        p.start();
    }
    let total = 20_000u64;
    let started = Instant::now();
    for n in [2usize, 4] {
        let receivers: Vec<String> = procs[..n].iter().map(Processor::addr).collect();
        let outputs: Vec<&Path> = procs[..n].iter().map(|p| p.out.as_path()).collect();
        for alg in ALGORITHMS {
            let tag = format!("{alg}-{n}");
            let gen = format!("message = \"{tag} {{seq}}\"\ncount = {total}");
            let cfg = agent_config(&dir, &tag, &receivers, alg, &gen, "");
            let mut agent = start_agent(&dir, &tag, &cfg);
            let a = wait_all(&outputs, &tag, total, Duration::from_secs(60), &mut [&mut agent]);
            agent.term();
            let a2 = account(&outputs, &tag, total);
            println!("{alg:>22} → {n} processors: {} events, shares {}", a2.unique, shares(&a2));
            assert_eq!(a.missing, Vec::<u64>::new(), "{tag}: missing events");
            assert_eq!(a2.unique as u64, total, "{tag}");
            assert_eq!(a2.duplicates, 0, "{tag}: no failure, so no duplicate");
            for (i, c) in a2.per_receiver.iter().enumerate() {
                assert!(*c > 0, "{tag}: receiver {i} got nothing ({})", shares(&a2));
            }
        }
    }
    println!("12 runs in {:.1}s", started.elapsed().as_secs_f64());
}

#[test]
fn kill_9_of_a_processor_loses_nothing_and_it_gets_traffic_after_restart() {
    let dir = Dir::new("kill9");
    // The checkpoint is written on every acknowledgement, so what a restart
    // replays from the queue is bounded in batches. With the default
    // `checkpoint_interval` (100 ms) it is bounded in time instead: every
    // batch the sink finished since the last checkpoint, which under CPU
    // contention was at least 7 batches (2,816 duplicates in all, with 4
    // batches at most from the agent's window; 2026-11-29;
    // docs/specs/queue-format.md).
    let persisted = "type = \"persisted\"\nfsync = \"never\"\nshards = 1\ncheckpoint_interval = \"0s\"";
    let mut procs: Vec<Processor> = (0..3).map(|i| processor(&dir, &format!("k{i}"), persisted, "")).collect();
    for p in procs.iter_mut() {
        p.start();
    }
    let total = 100_000u64;
    let receivers: Vec<String> = procs.iter().map(Processor::addr).collect();
    let gen = format!("message = \"kill {{seq}}\"\ncount = {total}\nrate = 20000");
    let cfg = agent_config(&dir, "kill", &receivers, "least_loaded", &gen, "");
    let mut agent = start_agent(&dir, "kill", &cfg);
    let outputs: Vec<PathBuf> = procs.iter().map(|p| p.out.clone()).collect();
    let out_refs: Vec<&Path> = outputs.iter().map(PathBuf::as_path).collect();
    // Let traffic flow, then kill -9 the first processor.
    let deadline = Instant::now() + Duration::from_secs(30);
    while seqs(&outputs[0], "kill").len() < 10_000 {
        assert!(Instant::now() < deadline, "no traffic to the first processor");
        std::thread::sleep(Duration::from_millis(20));
    }
    let before: usize = outputs[1..].iter().map(|o| seqs(o, "kill").len()).sum();
    procs[0].kill9();
    let killed = Instant::now();
    // Takeover: the survivors' output grows again.
    let takeover = loop {
        let now: usize = outputs[1..].iter().map(|o| seqs(o, "kill").len()).sum();
        if now > before + 2_000 {
            break killed.elapsed();
        }
        assert!(killed.elapsed() < Duration::from_secs(30), "the survivors never took over");
        std::thread::sleep(Duration::from_millis(10));
    };
    std::thread::sleep(Duration::from_millis(500));
    let first_life = seqs(&outputs[0], "kill").len();
    procs[0].start();
    let a = wait_all(&out_refs, "kill", total, Duration::from_secs(90), &mut [&mut agent]);
    // Let the restarted processor finish what its queue recovered.
    std::thread::sleep(Duration::from_secs(1));
    let a = if a.unique as u64 == total { account(&out_refs, "kill", total) } else { a };
    let after_restart = seqs(&outputs[0], "kill").len() - first_life;
    println!(
        "kill -9: takeover after {:.0} ms (2,000 more events at the survivors); {} events, {} duplicates, shares {}; restarted processor got {} events after restart",
        takeover.as_secs_f64() * 1e3,
        a.unique,
        a.duplicates,
        shares(&a),
        after_restart
    );
    agent.term();
    assert_eq!(a.missing, Vec::<u64>::new(), "lost events");
    assert_eq!(a.unique as u64, total);
    // At most the agent's window to the dead processor (4 batches of 256,
    // sent again to the survivors; a duplicate where the dead processor had
    // queued them) plus the one batch its file sink had written but not yet
    // acknowledged in its queue. Batches queued but not yet written are
    // written once, after the restart.
    assert!(a.duplicates <= 5 * 256, "{} duplicates (bound {})", a.duplicates, 5 * 256);
    assert!(after_restart > 0, "the restarted processor gets traffic again");
}

#[test]
fn a_slow_processor_gets_less_under_least_loaded_and_credit_than_round_robin() {
    let dir = Dir::new("slow");
    let queue = "type = \"memory\"\nmax_events = 4096";
    let slow_filter = "[[pipelines.main.filters]]\ntype = \"cost\"\nsleep_per_event = \"200us\"";
    let mut fast = processor(&dir, "fast", queue, "");
    let mut slow = processor(&dir, "slow", queue, slow_filter);
    fast.start();
    slow.start();
    let total = 40_000u64;
    let receivers = vec![fast.addr(), slow.addr()];
    let outputs = [fast.out.as_path(), slow.out.as_path()];
    let mut slow_share = BTreeMap::new();
    for alg in ["round_robin", "least_loaded", "credit"] {
        let gen = format!("message = \"{alg} {{seq}}\"\ncount = {total}");
        let cfg = agent_config(&dir, alg, &receivers, alg, &gen, "");
        let started = Instant::now();
        let mut agent = start_agent(&dir, alg, &cfg);
        let a = wait_all(&outputs, alg, total, Duration::from_secs(120), &mut [&mut agent]);
        let secs = started.elapsed().as_secs_f64();
        agent.term();
        assert_eq!(a.unique as u64, total, "{alg}: {:?}", a.missing);
        let share = a.per_receiver[1] as f64 / a.per_receiver.iter().sum::<usize>() as f64;
        println!(
            "slow receiver: {alg:>12}: fast {} / slow {} events, slow share {:.1}%, all delivered in {secs:.1}s",
            a.per_receiver[0],
            a.per_receiver[1],
            share * 100.0
        );
        slow_share.insert(alg, share);
    }
    assert!(slow_share["least_loaded"] < slow_share["round_robin"], "{slow_share:?}");
    assert!(slow_share["credit"] < slow_share["round_robin"], "{slow_share:?}");
}

#[test]
fn every_processor_down_for_30s_then_everything_arrives() {
    let dir = Dir::new("outage");
    let persisted = "type = \"persisted\"\nfsync = \"never\"\nshards = 1";
    let mut procs: Vec<Processor> = (0..2).map(|i| processor(&dir, &format!("o{i}"), persisted, "")).collect();
    for p in procs.iter_mut() {
        p.start();
    }
    // 2,000 events/s for 36 s: the agent keeps reading all through the outage.
    let total = 72_000u64;
    let receivers: Vec<String> = procs.iter().map(Processor::addr).collect();
    let gen = format!("message = \"outage {{seq}}\"\ncount = {total}\nrate = 2000");
    let cfg = agent_config(&dir, "outage", &receivers, "round_robin", &gen, "");
    let mut agent = start_agent(&dir, "outage", &cfg);
    let owned: Vec<PathBuf> = procs.iter().map(|p| p.out.clone()).collect();
    let outputs: Vec<&Path> = owned.iter().map(PathBuf::as_path).collect();
    std::thread::sleep(Duration::from_secs(2));
    for p in procs.iter_mut() {
        p.kill9();
    }
    let at_outage = account(&outputs, "outage", total).unique;
    std::thread::sleep(Duration::from_secs(30));
    agent.assert_alive();
    for p in procs.iter_mut() {
        p.start();
    }
    let back = Instant::now();
    let a = wait_all(&outputs, "outage", total, Duration::from_secs(60), &mut [&mut agent]);
    println!(
        "outage: {at_outage} events delivered before, all {} after the return ({:.1}s to catch up), {} duplicates",
        a.unique,
        back.elapsed().as_secs_f64(),
        a.duplicates
    );
    agent.term();
    assert_eq!(a.missing, Vec::<u64>::new());
    assert_eq!(a.unique as u64, total);
    assert!(a.duplicates <= 2 * (4 * 256 + 5 * 256), "{} duplicates", a.duplicates);
}

// ---- bad input against the real binary ----

fn frame(ty: u8, body: &[u8]) -> Vec<u8> {
    let mut f = vec![b'S', b'L', ty, 0];
    f.extend_from_slice(&(body.len() as u32).to_le_bytes());
    f.extend_from_slice(body);
    f
}

fn hello(token: &str, group: &str, subgroup: &str) -> Vec<u8> {
    let mut b = vec![1, 1, 0, 0b111];
    for s in [token, group, subgroup, "h", "raw-test"] {
        b.extend_from_slice(&(s.len() as u16).to_le_bytes());
        b.extend_from_slice(s.as_bytes());
    }
    frame(1, &b)
}

/// Sends `bytes` and returns the first frame's type and, for `ERROR`, its code and reason.
fn exchange(port: u16, bytes: &[u8]) -> (u8, u16, String) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(bytes).unwrap();
    let mut head = [0u8; 8];
    s.read_exact(&mut head).unwrap();
    let len = u32::from_le_bytes([head[4], head[5], head[6], head[7]]) as usize;
    let mut body = vec![0u8; len];
    s.read_exact(&mut body).unwrap();
    if head[2] == 8 {
        let code = u16::from_le_bytes([body[0], body[1]]);
        (8, code, String::from_utf8_lossy(&body[4..]).into_owned())
    } else {
        (head[2], 0, String::new())
    }
}

fn stats(port: u16) -> serde_json::Value {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.write_all(b"GET /_node/stats HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").unwrap();
    let mut resp = String::new();
    s.read_to_string(&mut resp).unwrap();
    let body = &resp[resp.find("\r\n\r\n").unwrap() + 4..];
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"))
}

#[test]
fn bad_token_foreign_identity_and_garbage_are_refused_with_reasons() {
    let dir = Dir::new("refuse");
    let mut p = processor(&dir, "r", "type = \"memory\"", "");
    p.start();
    assert_eq!(exchange(p.port, &hello(TOKEN, "acme", "web")).0, 2, "a good HELLO gets HELLO_OK");
    let (ty, code, reason) = exchange(p.port, &hello("not-the-token-0123456789", "acme", "web"));
    assert_eq!((ty, code, reason.as_str()), (8, 2, "the token matches no configured token"));
    let (ty, code, reason) = exchange(p.port, &hello(TOKEN, "globex", "web"));
    assert_eq!((ty, code), (8, 3));
    assert!(reason.contains("is not owned by token \"acme\""), "{reason}");
    let (ty, code, reason) = exchange(p.port, &hello(TOKEN, "acme", "finance"));
    assert_eq!((ty, code), (8, 3), "{reason}");
    let (ty, code, reason) = exchange(p.port, b"\x16\x03\x01\x02\x00garbage that is not a frame");
    assert_eq!((ty, code, reason.as_str()), (8, 6, "bad magic [16, 03]: not a sluice agent protocol frame"));

    // An agent whose token does not own its claimed group delivers nothing.
    let cfg = agent_config(&dir, "intruder", &[p.addr()], "round_robin", "message = \"x {seq}\"\ncount = 10", "");
    let text = std::fs::read_to_string(&cfg).unwrap().replace("group = \"acme\"", "group = \"globex\"");
    std::fs::write(&cfg, text).unwrap();
    let mut agent = start_agent(&dir, "intruder", &cfg);
    let log = dir.path("intruder.log");
    let deadline = Instant::now() + Duration::from_secs(20);
    while !std::fs::read_to_string(&log).unwrap_or_default().contains("identity_not_owned") {
        assert!(Instant::now() < deadline, "the agent never reported the refusal");
        std::thread::sleep(Duration::from_millis(50));
    }
    agent.kill9();
    assert!(seqs(&p.out, "x").is_empty(), "nothing of the intruder was written");

    let v = stats(p.api);
    let src = &v["pipelines"]["main"]["plugins"]["sources"][0]["counters"];
    assert_eq!(src["auth_failures"], 1, "{src}");
    assert!(src["identity_refused"].as_u64().unwrap() >= 3, "{src}");
    assert_eq!(src["protocol_errors"], 1, "{src}");
    p.proc.as_mut().unwrap().assert_alive();
}

// ---- syslog output to a real rsyslog ----

/// Stops the rsyslog instances however the test ends.
struct Rsyslog(PathBuf);
impl Drop for Rsyslog {
    fn drop(&mut self) {
        let _ = Command::new("bash")
            .arg(repo_root().join("scripts/rsyslog-receiver.sh"))
            .arg("stop")
            .arg(&self.0)
            .stdout(Stdio::null())
            .status();
    }
}

fn lines_with(path: &Path, prefix: &str) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| l.trim().to_string())
        .filter(|l| l.starts_with(prefix))
        .collect()
}

#[test]
fn syslog_output_reaches_a_real_rsyslog_over_tcp_udp_and_tls() {
    if std::env::var("SLUICE_SKIP_SYSLOG").as_deref() == Ok("1") {
        return common::skip::skip("opt-out", "agent_ship_e2e rsyslog", "SLUICE_SKIP_SYSLOG=1: real rsyslog not run");
    }
    let dir = Dir::new("rsyslog");
    let script = repo_root().join("scripts/rsyslog-receiver.sh");
    let st = Command::new("bash").arg(&script).arg("install").status().unwrap();
    assert!(st.success(), "rsyslog-receiver.sh install failed");
    let (cert, key) = (dir.path("cert.pem"), dir.path("key.pem"));
    let st = Command::new("openssl")
        .args(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"])
        .args(["-days", "1", "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost"])
        .args(["-addext", "basicConstraints=critical,CA:FALSE"])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(st.success());
    let rs = dir.path("rsyslog");
    std::fs::create_dir_all(&rs).unwrap();
    let _guard = Rsyslog(rs.clone());
    let (tport, uport, sport) = (free_port(), free_port(), free_port());
    let st = Command::new("bash")
        .arg(&script)
        .arg("start")
        .arg(&rs)
        .args([tport.to_string(), uport.to_string()])
        .status()
        .unwrap();
    assert!(st.success(), "rsyslog (plain) did not start");
    let st = Command::new("bash")
        .arg(&script)
        .arg("start-tls")
        .arg(&rs)
        .arg(sport.to_string())
        .arg(&cert)
        .arg(&key)
        .status()
        .unwrap();
    assert!(st.success(), "rsyslog (tls) did not start");

    let total = 3_000u64;
    let cfg = dir.path("out.toml");
    std::fs::write(
        &cfg,
        format!(
            r#"[node]
data_dir = "{data}"
[api]
address = ""
[pipelines.main]
batch_size = 100
batch_delay = "20ms"
[pipelines.main.sources.gen]
type = "generator"
message = "rs-{{seq}} multi\nline"
count = {total}
rate = 2000
batch_size = 100
[pipelines.main.sinks.tcp]
type = "tcp"
address = "127.0.0.1:{tport}"
encoding = "syslog"
framing = "octet_counting"
[pipelines.main.sinks.udp]
type = "udp"
address = "127.0.0.1:{uport}"
encoding = "syslog"
[pipelines.main.sinks.tls]
type = "tcp"
address = "127.0.0.1:{sport}"
encoding = "syslog"
framing = "octet_counting"
tls = {{ ca = "{cert}", server_name = "localhost" }}
"#,
            data = dir.path("data").display(),
            cert = cert.display(),
        ),
    )
    .unwrap();
    let mut node = Proc::start(&["run", cfg.to_str().unwrap()], &dir.path("node.log"), "sender");
    let deadline = Instant::now() + Duration::from_secs(60);
    let files = [rs.join("tcp.out"), rs.join("udp.out"), rs.join("tls.out")];
    loop {
        let counts: Vec<usize> = files.iter().map(|f| lines_with(f, "rs-").len()).collect();
        if counts.iter().all(|c| *c as u64 >= total) || Instant::now() > deadline {
            break;
        }
        node.assert_alive();
        std::thread::sleep(Duration::from_millis(200));
    }
    std::thread::sleep(Duration::from_millis(500));
    node.term();
    for f in &files {
        let got = lines_with(f, "rs-");
        println!("rsyslog {}: {} messages", f.file_name().unwrap().to_string_lossy(), got.len());
        let mut seqs: Vec<u64> =
            got.iter().map(|l| l[3..l.find(' ').unwrap_or(l.len())].parse::<u64>().unwrap()).collect();
        seqs.sort_unstable();
        let n = seqs.len();
        seqs.dedup();
        assert_eq!(n, seqs.len(), "{}: duplicates", f.display());
        let missing: Vec<u64> = (0..total).filter(|s| seqs.binary_search(s).is_err()).take(10).collect();
        assert_eq!(missing, Vec::<u64>::new(), "{}: missing messages", f.display());
        assert_eq!(n as u64, total, "{}", f.display());
    }
}
