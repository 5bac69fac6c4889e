//! Helpers shared by the end-to-end tests that drive the real `sluice`
//! binary: the binary's path, temporary directories, ports that no other
//! process takes in the meantime, child processes that are killed when
//! dropped and show their log when they die early, and the exact account of
//! sequence-numbered events read back from file sinks.
//!
//! Each test binary uses a different subset (`mod common;`), hence the
//! `dead_code` allowance.

// `tests/common.rs` would be a test target of its own: Cargo's convention
// for helpers shared by integration tests is this `mod.rs`.
#![allow(clippy::mod_module_files)]
#![allow(dead_code)]

pub mod pki;
pub mod ship;
pub mod skip;

use std::collections::BTreeMap;
use std::net::{TcpListener, TcpStream, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU16, Ordering};
use std::time::{Duration, Instant};

/// The binary under test; `SLUICE_BIN` overrides it (a target directory
/// shared by several worktrees holds whichever `sluice` was built last).
pub fn bin() -> String {
    std::env::var("SLUICE_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_sluice").to_string())
}

/// The log filter for the `sluice` processes under test: `SLUICE_E2E_LOG`
/// (e.g. `info,sluice_components::sources::file=debug`) or `info`.
pub fn log_filter() -> String {
    std::env::var("SLUICE_E2E_LOG").unwrap_or_else(|_| "info".to_string())
}

/// The repository's root directory.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

/// Ports handed out below the kernel's ephemeral range (32768–60999 by
/// default): a port taken from `bind(0)` can be handed to another socket
/// (an outgoing connection of any process, another test's listener) as soon
/// as it is released, so a process restarted on "its" port could find it
/// taken. These ports are only ever used by the tests that chose them. Each
/// test process starts at its own offset so test binaries running at the
/// same time rarely meet; a port that is busy (TCP or UDP) is skipped.
const PORT_BASE: u16 = 20_000;
const PORT_SPAN: u16 = 12_000;
static NEXT_PORT: AtomicU16 = AtomicU16::new(0);

/// A port free for TCP and UDP on 127.0.0.1, outside the ephemeral range,
/// never returned twice by one test process.
pub fn free_port() -> u16 {
    let start = (std::process::id() % 40) as u16 * 300;
    for _ in 0..PORT_SPAN {
        let n = NEXT_PORT.fetch_add(1, Ordering::Relaxed);
        let port = PORT_BASE + (start + n) % PORT_SPAN;
        if TcpListener::bind(("127.0.0.1", port)).is_ok() && UdpSocket::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no free port in {PORT_BASE}..{}", PORT_BASE + PORT_SPAN);
}

/// A temporary directory, removed when the test passed (kept for a look
/// when it failed).
pub struct Dir(PathBuf);
impl Dir {
    pub fn new(name: &str) -> Self {
        let d = std::env::temp_dir().join(format!("sluice-e2e-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        Dir(d)
    }
    pub fn path(&self, p: &str) -> PathBuf {
        self.0.join(p)
    }
    pub fn root(&self) -> &Path {
        &self.0
    }
}
impl Drop for Dir {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// A `sluice` child process, killed when dropped. Its stderr (the log) is
/// appended to a file, so a restarted process keeps its first life's log.
pub struct Proc {
    pub child: Child,
    pub name: String,
    pub log: PathBuf,
}
impl Proc {
    pub fn start(args: &[&str], log: &Path, name: &str) -> Self {
        let file = std::fs::OpenOptions::new().create(true).append(true).open(log).unwrap();
        let child = Command::new(bin())
            .args(args)
            .env("SLUICE_LOG", log_filter())
            .stdout(Stdio::null())
            .stderr(file)
            .spawn()
            .unwrap();
        Self { child, name: name.to_string(), log: log.to_path_buf() }
    }
    pub fn kill9(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
    pub fn signal(&self, sig: &str) {
        Command::new("kill").args([sig, &self.child.id().to_string()]).status().unwrap();
    }
    /// SIGTERM, then waits (at most 60 s) for the process to exit.
    pub fn term(&mut self) {
        self.signal("-TERM");
        let deadline = Instant::now() + Duration::from_secs(60);
        while self.child.try_wait().unwrap().is_none() {
            assert!(Instant::now() < deadline, "{} did not stop after SIGTERM", self.name);
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    /// Panics with the end of the process's log if it has exited.
    pub fn assert_alive(&mut self) {
        if let Some(s) = self.child.try_wait().unwrap() {
            panic!("{} exited early: {s}; the end of its log:\n{}", self.name, log_tail(&self.log, 20));
        }
    }
}
impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The last `n` lines of a log file.
pub fn log_tail(path: &Path, n: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// Waits (at most 30 s) until `port` accepts connections, failing early if
/// `p` died.
pub fn wait_port(port: u16, p: &mut Proc) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        if TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return;
        }
        p.assert_alive();
        std::thread::sleep(Duration::from_millis(30));
    }
    panic!("port {port} never opened");
}

/// Sequence numbers of run `tag` in `path`, as written by the file sink
/// (`"message":"<tag> <n>"`).
pub fn seqs(path: &Path, tag: &str) -> Vec<u64> {
    let Ok(text) = std::fs::read_to_string(path) else { return Vec::new() };
    let prefix = format!("\"message\":\"{tag} ");
    text.lines()
        .filter_map(|l| {
            let i = l.find(&prefix)? + prefix.len();
            let rest = &l[i..];
            rest[..rest.find('"')?].parse().ok()
        })
        .collect()
}

/// Per-receiver counts of run `tag`, and the account of all of them.
pub struct Account {
    pub per_receiver: Vec<usize>,
    pub unique: usize,
    pub duplicates: usize,
    /// The first ten missing sequence numbers.
    pub missing: Vec<u64>,
}

pub fn account(outputs: &[&Path], tag: &str, total: u64) -> Account {
    let mut seen: BTreeMap<u64, usize> = BTreeMap::new();
    let mut per_receiver = Vec::new();
    for o in outputs {
        let s = seqs(o, tag);
        per_receiver.push(s.len());
        for n in s {
            *seen.entry(n).or_default() += 1;
        }
    }
    let duplicates = seen.values().map(|c| c - 1).sum();
    let missing: Vec<u64> = (0..total).filter(|n| !seen.contains_key(n)).take(10).collect();
    Account { per_receiver, unique: seen.len(), duplicates, missing }
}

/// Waits until every one of `total` events arrived or `timeout` passed,
/// failing early if one of `procs` died.
pub fn wait_all(outputs: &[&Path], tag: &str, total: u64, timeout: Duration, procs: &mut [&mut Proc]) -> Account {
    let deadline = Instant::now() + timeout;
    loop {
        let a = account(outputs, tag, total);
        if a.unique as u64 >= total || Instant::now() > deadline {
            return a;
        }
        for p in procs.iter_mut() {
            p.assert_alive();
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// "48.1% / 51.9%": each receiver's share of what arrived.
pub fn shares(a: &Account) -> String {
    let total: usize = a.per_receiver.iter().sum::<usize>().max(1);
    a.per_receiver.iter().map(|n| format!("{:.1}%", *n as f64 * 100.0 / total as f64)).collect::<Vec<_>>().join(" / ")
}

/// Events of run `tag` in all outputs, duplicates included.
pub fn total_of(outputs: &[&Path], tag: &str) -> usize {
    outputs.iter().map(|o| seqs(o, tag).len()).sum()
}

/// The head of a node config that serves the API: `[node] data_dir`,
/// `[api] address = "127.0.0.1:<port>"` and a static token `admin` that
/// reads every group, its secret given by `secret` (a `token = "…"` or
/// `token_file = "…"` line). Pipelines, `[auth]`, more tokens follow it.
pub fn api_node_head(data_dir: &Path, port: u16, secret: &str) -> String {
    format!(
        "[node]\ndata_dir = \"{}\"\n[api]\naddress = \"127.0.0.1:{port}\"\n[api.tokens.admin]\n{secret}\nallowed = [{{ group = \"*\" }}]\n",
        data_dir.display()
    )
}

/// One HTTP/1.1 request on a fresh connection (`Connection: close`);
/// `(status, body)`, a chunked body decoded. Panics on a socket error.
pub fn http(port: u16, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> (u16, String) {
    try_http(port, method, path, headers, body).unwrap_or_else(|e| panic!("{method} {path} on 127.0.0.1:{port}: {e}"))
}

/// [`http`], a socket error returned: for readiness polls, where a node
/// still starting may refuse or reset a connection.
pub fn try_http(
    port: u16,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> std::io::Result<(u16, String)> {
    use std::io::{Read, Write};
    let mut s = TcpStream::connect(("127.0.0.1", port))?;
    s.set_read_timeout(Some(Duration::from_secs(30)))?;
    let mut head =
        format!("{method} {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: {}\r\n", body.len());
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes())?;
    s.write_all(body)?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw)?;
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    let body = if head.to_ascii_lowercase().contains("transfer-encoding: chunked") {
        let mut out = String::new();
        let mut rest = body;
        while let Some((size, tail)) = rest.split_once("\r\n") {
            let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
            if n == 0 || tail.len() < n {
                break;
            }
            out.push_str(&tail[..n]);
            rest = tail[n..].trim_start_matches("\r\n");
        }
        out
    } else {
        body.to_string()
    };
    Ok((status, body))
}

/// Waits (at most 60 s) for `ok`, failing early if `p` died.
pub fn wait_until(what: &str, p: &mut Proc, mut ok: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        if ok() {
            return;
        }
        p.assert_alive();
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("timed out waiting for {what}; the end of the log:\n{}", log_tail(&p.log, 20));
}

/// Writes `text` to the config file `cfg`, sends `p` SIGHUP and waits
/// until its log says "reload done" for the `nth` time.
pub fn reload(p: &mut Proc, cfg: &Path, text: &str, nth: usize) {
    std::fs::write(cfg, text).expect("write the node config");
    p.signal("-HUP");
    let log = p.log.clone();
    wait_until("reload done", p, || {
        std::fs::read_to_string(&log).unwrap_or_default().matches("reload done").count() == nth
    });
}

/// The project venv's python (`scripts/python-env.sh` creates it and installs
/// the real clients the tests use).
pub fn python() -> String {
    let env = std::process::Command::new("bash")
        .arg(repo_root().join("scripts/python-env.sh"))
        .output()
        .expect("run scripts/python-env.sh");
    assert!(env.status.success(), "scripts/python-env.sh failed:\n{}", String::from_utf8_lossy(&env.stderr));
    String::from_utf8(env.stdout).unwrap().trim().to_string()
}

/// The config of a one-pipeline node without the API: `[node] data_dir` in
/// `dir`, pipeline `main` (10 ms batch delay) with the `sources` given (TOML
/// tables `[pipelines.main.sources.<id>]`) and one `file` sink writing
/// `out.ndjson` in `dir`. Returns the config's path and the output's.
pub fn file_node_config(dir: &Dir, sources: &str) -> (PathBuf, PathBuf) {
    let out = dir.path("out.ndjson");
    let cfg = dir.path("c.toml");
    let text = format!(
        "[node]\ndata_dir = \"{d}\"\n[api]\naddress = \"\"\n[pipelines.main]\nbatch_delay = \"10ms\"\n{sources}\n[pipelines.main.sinks.out]\ntype = \"file\"\npath = \"{o}\"\n",
        d = dir.root().display(),
        sources = sources.trim(),
        o = out.display()
    );
    std::fs::write(&cfg, text).expect("write the node config");
    (cfg, out)
}

/// [`file_node_config`], then `sluice run` on it (log in `dir/log`),
/// returning once `port` (one of the sources' listeners) accepts.
pub fn start_file_node(dir: &Dir, sources: &str, port: u16) -> (Proc, PathBuf) {
    let (cfg, out) = file_node_config(dir, sources);
    let mut p = Proc::start(&["run", cfg.to_str().expect("utf-8 path")], &dir.path("log"), "sluice");
    wait_port(port, &mut p);
    (p, out)
}

/// The project venv's python, or `None` (the skip reported) when
/// `SLUICE_SKIP_PYTHON=1` opts out of the real-client tests.
pub fn python_or_skip(test: &str) -> Option<String> {
    if std::env::var("SLUICE_SKIP_PYTHON").as_deref() == Ok("1") {
        skip::skip("opt-out", test, "SLUICE_SKIP_PYTHON=1: the real-client test did not run");
        return None;
    }
    Some(python())
}

/// Runs `python -c script`, asserting it exited 0 (its stderr in the
/// message); its output.
pub fn run_python(python: &str, script: &str) -> std::process::Output {
    let out = Command::new(python).arg("-c").arg(script).output().expect("python");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    out
}

/// The events a file sink wrote to `path` (none while it does not exist).
pub fn read_events(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path).unwrap_or_default().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

/// Waits (as [`wait_until`]) until `out` holds `n` events, then half a
/// second more, and returns them, asserting that no more than `n` arrived.
pub fn wait_events(what: &str, p: &mut Proc, out: &Path, n: usize) -> Vec<serde_json::Value> {
    wait_until(what, p, || read_events(out).len() >= n);
    std::thread::sleep(Duration::from_millis(500));
    let events = read_events(out);
    assert_eq!(events.len(), n, "stray events");
    events
}

/// The numbers `n` of the `events` whose `message` is `<prefix><n>`,
/// sorted: what a test compares with `0..n` to show that each event of one
/// sender arrived exactly once.
pub fn numbered(events: &[serde_json::Value], prefix: &str) -> Vec<usize> {
    let mut seen: Vec<usize> =
        events.iter().filter_map(|e| e["message"].as_str()?.strip_prefix(prefix)?.parse().ok()).collect();
    seen.sort_unstable();
    seen
}

/// A source table of pipeline `main` for [`start_file_node`]:
/// `[pipelines.main.sources.<id>]` with `type = "<kind>"`, `address =
/// "127.0.0.1:<port>"` and the `more` lines.
pub fn source(id: &str, kind: &str, port: u16, more: &str) -> String {
    format!("[pipelines.main.sources.{id}]\ntype = \"{kind}\"\naddress = \"127.0.0.1:{port}\"\n{more}\n")
}

/// Ingest token `app` of source `id`: `token` and the `identity` lines.
pub fn source_token(id: &str, token: &str, identity: &str) -> String {
    format!("[pipelines.main.sources.{id}.tokens.app]\ntoken = \"{token}\"\n{identity}\n")
}
