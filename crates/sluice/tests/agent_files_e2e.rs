//! End-to-end tests of the agent's readers through the real `sluice`
//! binary: the `file` source under rotation (rename and copytruncate) during
//! a 200,000-line write at full speed, `kill -9` and restart with an exact
//! account of lost and duplicated lines, and bad input (binary files, a
//! 100 MB single line, a file replaced by a directory, permission denied as
//! an unprivileged user) — every count exact. The binary runs in the agent
//! role (`sluice agent`: its lean defaults, docs/adr/0011-agent-memory.md).

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::{bin, Dir};

fn start(config: &Path, log: &Path) -> Child {
    let log = std::fs::OpenOptions::new().create(true).append(true).open(log).unwrap();
    Command::new(bin())
        .args(["agent", "--config", config.to_str().unwrap()])
        .env("SLUICE_LOG", common::log_filter())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap()
}

fn sigterm(child: &mut Child) {
    Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "sluice did not stop after SIGTERM");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The `message` of every complete line of an ndjson output file (a torn
/// last line, possible after `kill -9`, is left out).
fn messages(path: &Path) -> Vec<String> {
    let Ok(f) = std::fs::File::open(path) else { return Vec::new() };
    BufReader::new(f)
        .lines()
        .map_while(Result::ok)
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(&l).ok())
        .filter_map(|v| v.get("message").and_then(|m| m.as_str()).map(String::from))
        .collect()
}

fn count_lines(path: &Path) -> usize {
    std::fs::File::open(path).map(|f| BufReader::new(f).lines().count()).unwrap_or(0)
}

fn wait_count(path: &Path, want: usize, timeout: Duration, child: &mut Child) -> usize {
    let deadline = Instant::now() + timeout;
    loop {
        let n = count_lines(path);
        if n >= want || Instant::now() > deadline {
            return n;
        }
        if let Some(st) = child.try_wait().unwrap() {
            panic!("sluice exited early: {st}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// How many times each sequence number of `tag` arrived.
fn tally(msgs: &[String], tag: &str) -> HashMap<u64, usize> {
    let mut m = HashMap::new();
    for s in msgs {
        let mut parts = s.split(' ');
        if parts.next() == Some(tag) {
            if let Some(n) = parts.next().and_then(|n| n.parse().ok()) {
                *m.entry(n).or_default() += 1;
            }
        }
    }
    m
}

/// One line of the test logs: tag, sequence number, padding to ~100 bytes.
fn line(tag: &str, i: u64) -> String {
    format!("{tag} {i:07} lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor\n")
}

fn config(dir: &Dir, pipeline_extra: &str, sources: &str) -> PathBuf {
    let cfg = dir.path("sluice.toml");
    std::fs::write(
        &cfg,
        format!(
            r#"
[node]
data_dir = "{data}"
shutdown_timeout = "10s"

[api]
address = ""

[pipelines.agent]
workers = 1
batch_size = 512
{pipeline_extra}

{sources}

[pipelines.agent.sinks.out]
type = "file"
path = "{out}"
"#,
            data = dir.path("data").display(),
            out = dir.path("out.ndjson").display(),
        ),
    )
    .unwrap();
    cfg
}

#[test]
fn rotation_by_rename_and_copytruncate_during_a_fast_write_delivers_every_line_once() {
    const LINES: u64 = 200_000;
    const ROTATE_EVERY: u64 = 40_000;
    let dir = Dir::new("rotation");
    let ren = dir.path("ren");
    let cpt = dir.path("cpt");
    std::fs::create_dir_all(&ren).unwrap();
    std::fs::create_dir_all(&cpt).unwrap();
    let cfg = config(
        &dir,
        "[pipelines.agent.queue]\ntype = \"memory\"\nmax_events = 20000",
        &format!(
            r#"
[pipelines.agent.sources.ren]
type = "file"
include = ["{ren}/app.log*"]
scan_interval = "100ms"
poll_interval = "50ms"

[pipelines.agent.sources.cpt]
type = "file"
include = ["{cpt}/app.log*"]
scan_interval = "100ms"
poll_interval = "50ms"
"#,
            ren = ren.display(),
            cpt = cpt.display()
        ),
    );
    let mut child = start(&cfg, &dir.path("sluice.log"));
    std::thread::sleep(Duration::from_millis(300));
    let started = Instant::now();
    // Two writers at full speed, rotating every ROTATE_EVERY lines the two
    // ways logrotate does.
    let writer = |d: PathBuf, tag: &'static str, copytruncate: bool| {
        std::thread::spawn(move || {
            let log = d.join("app.log");
            let open = || std::fs::OpenOptions::new().create(true).append(true).open(&log).unwrap();
            let mut f = std::io::BufWriter::with_capacity(64 << 10, open());
            let mut rotations = 0;
            for i in 0..LINES {
                f.write_all(line(tag, i).as_bytes()).unwrap();
                if (i + 1) % ROTATE_EVERY == 0 && i + 1 < LINES {
                    f.flush().unwrap();
                    rotations += 1;
                    // Older rotations move up one (app.log.1 → app.log.N).
                    if d.join("app.log.1").exists() {
                        std::fs::rename(d.join("app.log.1"), d.join(format!("app.log.{}", rotations + 1))).unwrap();
                    }
                    if copytruncate {
                        std::fs::copy(&log, d.join("app.log.1")).unwrap();
                        f.get_ref().set_len(0).unwrap();
                    } else {
                        drop(f);
                        std::fs::rename(&log, d.join("app.log.1")).unwrap();
                        f = std::io::BufWriter::with_capacity(64 << 10, open());
                    }
                }
            }
            f.flush().unwrap();
        })
    };
    let a = writer(ren.clone(), "ren", false);
    let b = writer(cpt.clone(), "cpt", true);
    a.join().unwrap();
    b.join().unwrap();
    let wrote = started.elapsed();
    let out = dir.path("out.ndjson");
    let n = wait_count(&out, 2 * LINES as usize, Duration::from_secs(120), &mut child);
    // A little longer: duplicates would show up now.
    std::thread::sleep(Duration::from_millis(500));
    sigterm(&mut child);
    let msgs = messages(&out);
    println!("wrote 2 x {LINES} lines in {wrote:?}; {n} arrived after {:?}", started.elapsed());
    for tag in ["ren", "cpt"] {
        let t = tally(&msgs, tag);
        let missing = (0..LINES).filter(|i| !t.contains_key(i)).count();
        let dup: usize = t.values().map(|c| c - 1).sum();
        println!("{tag}: {} distinct, {missing} missing, {dup} duplicated", t.len());
        assert_eq!((missing, dup), (0, 0), "{tag}: every line exactly once");
    }
    assert_eq!(msgs.len(), 2 * LINES as usize);
}

#[test]
fn kill_9_mid_file_then_restart_loses_nothing_and_rereads_at_most_the_unacknowledged() {
    // Enough lines that the file is still being read when a slow disk's
    // registry write lands (see the kill below).
    const LINES: u64 = 1_000_000;
    const MAX_EVENTS: usize = 4096;
    let dir = Dir::new("kill9");
    let log = dir.path("big.log");
    {
        let mut f = std::io::BufWriter::new(std::fs::File::create(&log).unwrap());
        for i in 0..LINES {
            f.write_all(line("k", i).as_bytes()).unwrap();
        }
    }
    let cfg = config(
        &dir,
        &format!("[pipelines.agent.queue]\ntype = \"memory\"\nmax_events = {MAX_EVENTS}"),
        &format!(
            "[pipelines.agent.sources.files]\ntype = \"file\"\ninclude = [\"{}\"]\nbatch_events = 512\n",
            log.display()
        ),
    );
    let out = dir.path("out.ndjson");
    let registry = dir.path("data/file_positions/agent/files.json");
    let mut child = start(&cfg, &dir.path("sluice.log"));
    // Killed once 60,000 lines arrived and the registry holds a frontier past
    // line 0. A registry write ends in an fsync, which under a busy disk
    // takes as long as tens of thousands of lines (CI saw 132,159 lines
    // delivered with the frontier still at 0), so the kill waits for the
    // frontier instead of assuming it follows within a fixed count; a
    // frontier that never moves fails here, by its deadline.
    let deadline = Instant::now() + Duration::from_secs(60);
    let at_kill = loop {
        let n = count_lines(&out);
        if n >= 60_000 && registry_offset(&registry) > 0 {
            break n;
        }
        assert!(Instant::now() < deadline, "the frontier did not move within 60 s ({n} lines delivered)");
        if let Some(st) = child.try_wait().unwrap() {
            panic!("sluice exited early: {st}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Command::new("kill").args(["-KILL", &child.id().to_string()]).status().unwrap();
    child.wait().unwrap();
    assert!(at_kill < LINES as usize, "killed mid-file ({at_kill} of {LINES})");
    // The acknowledged frontier the agent had made durable when it died:
    // every line before it was acknowledged and must never be read again;
    // the lines after it that were already delivered are the only ones a
    // restart may deliver twice.
    let offset = registry_offset(&registry);
    let line_len = line("k", 0).len() as u64;
    assert_eq!(offset % line_len, 0, "the frontier is at a line boundary");
    let acked = offset / line_len;
    let at_kill_tally = tally(&messages(&out), "k");
    let before = at_kill_tally.len();
    let unacked_delivered = at_kill_tally.keys().filter(|i| **i >= acked).count();
    assert!((0..acked).all(|i| at_kill_tally.get(&i) == Some(&1)), "every line before the frontier was delivered once");
    let mut child = start(&cfg, &dir.path("sluice.log"));
    wait_count(&out, LINES as usize, Duration::from_secs(120), &mut child);
    // Every distinct line, within a deadline: a lost line fails here
    // (naming the first ones missing) instead of hanging the suite.
    let deadline = Instant::now() + Duration::from_secs(60);
    let t = loop {
        let t = tally(&messages(&out), "k");
        if t.len() as u64 == LINES {
            break t;
        }
        if Instant::now() > deadline {
            let missing: Vec<u64> = (0..LINES).filter(|i| !t.contains_key(i)).take(10).collect();
            panic!("{} of {LINES} distinct lines after the restart; first missing: {missing:?}", t.len());
        }
        if let Some(st) = child.try_wait().unwrap() {
            panic!("sluice exited early: {st}");
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    std::thread::sleep(Duration::from_millis(500));
    sigterm(&mut child);
    let t2 = tally(&messages(&out), "k");
    assert_eq!(t2.len(), t.len());
    let missing = (0..LINES).filter(|i| !t2.contains_key(i)).count();
    let dup: usize = t2.values().map(|c| c - 1).sum();
    println!(
        "kill -9 after {before} distinct lines, registry frontier at line {acked}; after restart: {missing} missing, \
         {dup} read twice (bound: the {unacked_delivered} lines delivered past the frontier)"
    );
    assert_eq!(missing, 0, "nothing lost");
    assert!((0..acked).all(|i| t2.get(&i) == Some(&1)), "no line before the acknowledged frontier is read again");
    assert!(dup <= unacked_delivered, "{dup} duplicates exceed the {unacked_delivered} unacknowledged lines");
    assert!(t2.values().all(|c| *c <= 2), "no line more than twice");
}

/// The `files` source's durable frontier in the positions registry (0 while
/// the registry is not written yet; it is replaced atomically, never torn).
fn registry_offset(registry: &Path) -> u64 {
    let Ok(text) = std::fs::read_to_string(registry) else { return 0 };
    let doc: serde_json::Value = serde_json::from_str(&text).expect("the registry is valid JSON");
    doc["files"][0]["offset"].as_u64().unwrap_or(0)
}

/// Peak resident memory of a process, in KiB (`VmHWM`).
fn peak_rss_kib(pid: u32) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    s.lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// Counter `name` of the `files` source from the node's Prometheus text.
fn has_setpriv() -> bool {
    Command::new("setpriv").arg("--version").output().is_ok_and(|o| o.status.success())
}

#[test]
fn bad_input_is_counted_and_the_agent_keeps_reading_as_an_unprivileged_user() {
    assert!(has_setpriv(), "setpriv (util-linux) is needed");
    let dir = Dir::new("badinput");
    let logs = dir.path("logs");
    std::fs::create_dir_all(&logs).unwrap();
    // The agent runs as nobody: it must be able to write its data and output.
    for d in [&dir.root().to_path_buf(), &logs] {
        Command::new("chmod").args(["0777", d.to_str().unwrap()]).status().unwrap();
    }
    let good = logs.join("good.log");
    std::fs::write(&good, (0..1000).map(|i| line("good", i)).collect::<String>()).unwrap();
    // Binary: lines kept, invalid bytes replaced.
    let mut binary = Vec::new();
    for i in 0..100u32 {
        binary.extend((0..=255u8).map(|b| b.wrapping_mul(i as u8 | 1)).filter(|b| *b != b'\n'));
        binary.push(b'\n');
    }
    std::fs::write(logs.join("binary.log"), &binary).unwrap();
    // A 100 MB single line, then a normal one.
    {
        let mut f = std::io::BufWriter::new(std::fs::File::create(logs.join("huge.log")).unwrap());
        let chunk = vec![b'x'; 1 << 20];
        for _ in 0..100 {
            f.write_all(&chunk).unwrap();
        }
        f.write_all(b"\nafter the huge line\n").unwrap();
    }
    // Permission denied: root's file, mode 0600.
    let secret = logs.join("secret.log");
    std::fs::write(&secret, "secret line\n").unwrap();
    Command::new("chmod").args(["0600", secret.to_str().unwrap()]).status().unwrap();
    // A file that will be replaced by a directory.
    let doomed = logs.join("doomed.log");
    std::fs::write(&doomed, (0..10).map(|i| line("doomed", i)).collect::<String>()).unwrap();
    for f in ["good.log", "binary.log", "huge.log", "doomed.log"] {
        Command::new("chmod").args(["0644", logs.join(f).to_str().unwrap()]).status().unwrap();
    }
    let cfg = config(
        &dir,
        "[pipelines.agent.queue]\ntype = \"memory\"\nmax_events = 10000",
        &format!(
            "[pipelines.agent.sources.files]\ntype = \"file\"\ninclude = [\"{}/*.log\"]\nscan_interval = \"100ms\"\nmax_line_bytes = \"64KiB\"\n",
            logs.display()
        ),
    );
    Command::new("chmod").args(["0644", cfg.to_str().unwrap()]).status().unwrap();
    let log_path = dir.path("sluice.log");
    let log = std::fs::File::create(&log_path).unwrap();
    let mut child = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(bin())
        .args(["run", cfg.to_str().unwrap()])
        .env("SLUICE_LOG", common::log_filter())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap();
    let out = dir.path("out.ndjson");
    // good 1000 + binary 100 + huge 2 + doomed 10
    let n = wait_count(&out, 1112, Duration::from_secs(60), &mut child);
    assert_eq!(n, 1112, "{}", std::fs::read_to_string(&log_path).unwrap());
    // The file is deleted and a directory takes its path.
    std::fs::remove_file(&doomed).unwrap();
    std::fs::create_dir(&doomed).unwrap();
    std::fs::write(&good, (1000..1100).map(|i| line("good", i)).collect::<String>()).unwrap();
    // (good.log rewritten: shorter than before, so a truncation, 100 new lines)
    let n = wait_count(&out, 1212, Duration::from_secs(30), &mut child);
    std::thread::sleep(Duration::from_millis(500));
    let rss_kib = peak_rss_kib(child.id());
    sigterm(&mut child);
    let stderr = std::fs::read_to_string(&log_path).unwrap();
    assert_eq!(n, 1212, "{stderr}");
    let msgs = messages(&out);
    assert_eq!(msgs.len(), 1212);
    assert_eq!(tally(&msgs, "good").len(), 1100);
    assert!(msgs.iter().all(|m| !m.contains("secret")), "nobody cannot read it");
    let huge: Vec<&String> = msgs.iter().filter(|m| m.starts_with("xxxx")).collect();
    assert_eq!(huge.len(), 1);
    assert_eq!(huge[0].len(), 64 << 10, "cut at max_line_bytes");
    assert!(msgs.contains(&"after the huge line".to_string()));
    assert_eq!(msgs.iter().filter(|m| m.contains('\u{fffd}')).count(), 100, "binary lines kept, bytes replaced");
    // Clear errors in the log, each once.
    assert_eq!(stderr.matches("permission denied; skipped").count(), 1, "{stderr}");
    assert!(stderr.contains("secret.log"));
    assert_eq!(stderr.matches("not a regular file").count(), 1, "{stderr}");
    assert!(stderr.contains("file truncated"), "{stderr}");
    // A 100 MB line never sat in memory.
    println!("peak RSS while reading a 100 MB line: {} MiB", rss_kib / 1024);
    assert!(rss_kib > 0 && rss_kib < 80 * 1024, "peak RSS {rss_kib} KiB");
}
