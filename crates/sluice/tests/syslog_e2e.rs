//! End to end through the binary with real syslog senders: `sluice run` with a
//! `syslog_tcp` and a `syslog_udp` source into a `file` sink; real rsyslog and
//! syslog-ng (started by `scripts/syslog-clients.sh`, each forwarding every
//! message once over TCP with octet counting and once over UDP, RFC 5424) and
//! util-linux `logger` sending directly. Counts are asserted exactly, per
//! transport and sender; then SIGTERM must stop sluice with exit code 0.
//!
//! Needs root (the script apt-installs the clients' libraries once) and
//! network for the first install; `SLUICE_SKIP_SYSLOG=1` skips it with a
//! `SKIPPED (opt-out)` line that `scripts/check.sh` counts, and fails under
//! `CI=true` (`common::skip`).

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::free_port;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

/// Stops the clients and sluice however the test ends.
struct Cleanup {
    services: PathBuf,
    sluice: Option<Child>,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        let _ = Command::new("bash")
            .arg(repo_root().join("scripts/syslog-clients.sh"))
            .args(["stop"])
            .arg(&self.services)
            .stdout(Stdio::null())
            .status();
        if let Some(c) = self.sluice.as_mut() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn logger(args: &[&str], lines: &[String]) {
    let mut c = Command::new("logger").args(args).stdin(Stdio::piped()).spawn().expect("logger (util-linux)");
    let mut stdin = c.stdin.take().unwrap();
    for l in lines {
        writeln!(stdin, "{l}").unwrap();
    }
    drop(stdin);
    assert!(c.wait().unwrap().success(), "logger {args:?} failed");
}

type Counts = BTreeMap<(String, String), Vec<String>>;

/// (transport, appname) → messages, from the sink's ndjson.
fn read_output(path: &Path) -> Counts {
    let mut out = Counts::new();
    let Ok(text) = std::fs::read_to_string(path) else { return out };
    for line in text.lines() {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else { continue };
        let source = v["@source"].as_str().unwrap_or("").split(':').next().unwrap_or("").to_string();
        let app = v["appname"].as_str().unwrap_or("").to_string();
        out.entry((source, app)).or_default().push(v["message"].as_str().unwrap_or("").to_string());
    }
    out
}

#[test]
fn real_syslog_clients_through_the_binary() {
    if std::env::var("SLUICE_SKIP_SYSLOG").as_deref() == Ok("1") {
        return common::skip::skip("opt-out", "syslog_e2e", "SLUICE_SKIP_SYSLOG=1: real rsyslog/syslog-ng not run");
    }
    let root = repo_root();
    let script = root.join("scripts/syslog-clients.sh");
    // Install once into the repo cache (a no-op when present).
    let st = Command::new("bash").arg(&script).arg("install").status().unwrap();
    assert!(st.success(), "syslog-clients.sh install failed");

    let dir = tempfile::tempdir().unwrap();
    // Per-run sockets, pids and queues; the unpacked packages are shared.
    let services = dir.path().join("services");
    std::fs::create_dir_all(services.join("syslog")).unwrap();
    std::os::unix::fs::symlink(root.join(".cache/services/syslog/root"), services.join("syslog/root")).unwrap();
    let mut cleanup = Cleanup { services: services.clone(), sluice: None };

    let (tport, uport) = (free_port(), free_port());
    let out = dir.path().join("out.ndjson");
    let cfg = dir.path().join("sluice.toml");
    std::fs::write(
        &cfg,
        format!(
            r#"[node]
data_dir = "{data}"
[api]
address = ""
[pipelines.main]
batch_delay = "20ms"
[pipelines.main.sources.tcp]
type = "syslog_tcp"
address = "127.0.0.1:{tport}"
[pipelines.main.sources.udp]
type = "syslog_udp"
address = "127.0.0.1:{uport}"
workers = 2
receive_buffer_bytes = "4MiB"
[pipelines.main.sinks.out]
type = "file"
path = "{out}"
"#,
            data = dir.path().join("data").display(),
            out = out.display()
        ),
    )
    .unwrap();
    let stderr = std::fs::File::create(dir.path().join("sluice.log")).unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .arg("run")
        .arg(&cfg)
        .env("SLUICE_LOG", "info")
        .stdout(Stdio::null())
        .stderr(stderr)
        .spawn()
        .unwrap();
    cleanup.sluice = Some(child);
    // Ready when both sources logged that they listen.
    let started = Instant::now();
    loop {
        let log = std::fs::read_to_string(dir.path().join("sluice.log")).unwrap_or_default();
        if log.contains("syslog_udp source listening") && log.contains("syslog_tcp source listening") {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(30), "sluice did not start:\n{log}");
        std::thread::sleep(Duration::from_millis(50));
    }

    let st = Command::new("bash")
        .arg(&script)
        .arg("start")
        .arg(&services)
        .env("SYSLOG_TCP_PORT", tport.to_string())
        .env("SYSLOG_UDP_PORT", uport.to_string())
        .status()
        .unwrap();
    assert!(st.success(), "syslog-clients.sh start failed");

    const N: usize = 200;
    const M: usize = 50;
    let sock = |n: &str| services.join("syslog").join(n).display().to_string();
    let msgs = |p: &str, n: usize| (0..n).map(|i| format!("{p} message {i}")).collect::<Vec<_>>();
    let (rs, ng, lt, lu) = (msgs("rsyslog", N), msgs("syslog-ng", N), msgs("logger tcp", M), msgs("logger udp", M));
    logger(&["-u", &sock("rsyslog.sock"), "-t", "e2e-rsyslog", "-p", "local3.warning"], &rs);
    logger(&["-u", &sock("syslog-ng.sock"), "--rfc5424", "-t", "e2e-syslogng", "-p", "user.notice"], &ng);
    let tp = tport.to_string();
    let up = uport.to_string();
    logger(&["--rfc5424", "-n", "127.0.0.1", "-P", &tp, "-T", "--octet-count", "-t", "e2e-loggertcp"], &lt);
    logger(&["--rfc5424", "-n", "127.0.0.1", "-P", &up, "-d", "-t", "e2e-loggerudp"], &lu);

    // rsyslog's %msg% of a local "TAG: text" message keeps the space after the
    // colon, and RSYSLOG_SyslogProtocol23Format sends it as the first byte of
    // MSG. The source keeps MSG as sent (only trailing whitespace goes), so
    // indentation survives for everyone else.
    let rs_msg: Vec<String> = rs.iter().map(|m| format!(" {m}")).collect();
    let expected: Vec<((&str, &str), &Vec<String>)> = vec![
        (("syslog_tcp", "e2e-rsyslog"), &rs_msg),
        (("syslog_udp", "e2e-rsyslog"), &rs_msg),
        (("syslog_tcp", "e2e-syslogng"), &ng),
        (("syslog_udp", "e2e-syslogng"), &ng),
        (("syslog_tcp", "e2e-loggertcp"), &lt),
        (("syslog_udp", "e2e-loggerudp"), &lu),
    ];
    let total: usize = expected.iter().map(|(_, v)| v.len()).sum();
    let deadline = Instant::now() + Duration::from_secs(90);
    let mut got = read_output(&out);
    while got.values().map(Vec::len).sum::<usize>() < total && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(200));
        got = read_output(&out);
    }
    // Give duplicates (which would be a bug) a chance to show up.
    std::thread::sleep(Duration::from_millis(500));
    got = read_output(&out);
    let summary: Vec<String> = got.iter().map(|((s, a), v)| format!("{s}/{a}: {}", v.len())).collect();
    for ((src, app), want) in &expected {
        let have = got.get(&(src.to_string(), app.to_string())).cloned().unwrap_or_default();
        assert_eq!(have.len(), want.len(), "{src}/{app}; all: {summary:?}");
        let mut sorted = have.clone();
        sorted.sort();
        let mut w = (*want).clone();
        w.sort();
        // Exact text: the trailing "\n" rsyslog puts inside the octet count is gone.
        assert_eq!(sorted, w, "{src}/{app}");
    }
    assert_eq!(got.values().map(Vec::len).sum::<usize>(), total, "unexpected extra events: {summary:?}");

    // Field mapping on a real rsyslog TCP event.
    let text = std::fs::read_to_string(&out).unwrap();
    let ev: serde_json::Value = text
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|v| v["appname"] == "e2e-rsyslog" && v["@source"].as_str().unwrap_or("").starts_with("syslog_tcp"))
        .unwrap();
    assert_eq!(ev["facility_label"], "local3", "{ev}");
    assert_eq!(ev["severity_label"], "warning", "{ev}");
    assert_eq!(ev["priority"], 19 * 8 + 4, "{ev}");
    assert_eq!(ev["syslog_version"], 1, "{ev}");
    assert_eq!(ev["peer"], "127.0.0.1", "{ev}");
    assert!(ev.get("tags").is_none(), "{ev}");

    // Graceful stop.
    let mut child = cleanup.sluice.take().unwrap();
    let st = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    assert!(st.success());
    let stop_deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > stop_deadline {
            let _ = child.kill();
            panic!("sluice did not stop within 30 s of SIGTERM");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let log = std::fs::read_to_string(dir.path().join("sluice.log")).unwrap_or_default();
    assert!(status.success(), "sluice exit status {status:?}\n{log}");
}
