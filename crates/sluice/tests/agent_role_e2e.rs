//! The agent role's lean settings through the real binary
//! (docs/adr/0011-agent-memory.md): `sluice agent` re-executes itself once
//! with mimalloc's give-memory-back options (same pid, name restored), a
//! user's own value of one is kept, a user can opt out, `sluice run` keeps mimalloc's defaults (a node with a
//! `store` sink runs with `MIMALLOC_PURGE_DELAY=10000` instead, ADR 0005); and the agent's
//! defaults — one pipeline worker, one persisted-queue shard — apply only to
//! keys the config leaves out. The memory itself is measured by
//! bench/agent_resources.py (BENCHMARKS.md), not asserted here.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::{bin, log_filter, Dir};

/// Two pipelines: `plain` leaves workers and shards out, `tuned` sets them.
fn config(dir: &Path) -> PathBuf {
    config_with(dir, "node.toml", r#"type = "blackhole""#)
}

/// [`config`] with `tuned_sink` as the `tuned` pipeline's sink, in `name`.
fn config_with(dir: &Path, name: &str, tuned_sink: &str) -> PathBuf {
    let d = dir.display();
    let text = format!(
        r#"
[node]
data_dir = "{d}/data"
[api]
address = ""
[pipelines.plain.queue]
type = "persisted"
[pipelines.plain.sources.files]
type = "file"
include = ["{d}/logs/plain-*.log"]
[pipelines.plain.sinks.out]
type = "blackhole"
[pipelines.tuned]
workers = 3
[pipelines.tuned.queue]
type = "persisted"
shards = 3
[pipelines.tuned.sources.files]
type = "file"
include = ["{d}/logs/tuned-*.log"]
[pipelines.tuned.sinks.out]
{tuned_sink}
"#
    );
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

struct Proc(Child);
impl Proc {
    fn start(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Self {
        let log = std::fs::File::create(dir.join(format!("{}.log", args[0]))).unwrap();
        let mut cmd = Command::new(bin());
        cmd.args(args).env("SLUICE_LOG", log_filter()).stdout(Stdio::null()).stderr(log);
        for v in [
            "SLUICE_LEAN_ALLOCATOR",
            "SLUICE_STORE_ALLOCATOR",
            "SLUICE_PROCESSOR_ALLOCATOR",
            "MIMALLOC_ARENA_EAGER_COMMIT",
            "MIMALLOC_PURGE_DELAY",
            "MIMALLOC_ALLOW_THP",
        ] {
            cmd.env_remove(v);
        }
        cmd.envs(env.iter().copied());
        Proc(cmd.spawn().unwrap())
    }
    fn pid(&self) -> u32 {
        self.0.id()
    }
    /// Waits until both pipelines run (their worker threads exist).
    fn wait_started(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            assert!(self.0.try_wait().unwrap().is_none(), "sluice exited early");
            let names = self.threads();
            if names.iter().any(|n| n.starts_with("plain-worker"))
                && names.iter().any(|n| n.starts_with("tuned-worker"))
            {
                return;
            }
            assert!(Instant::now() < deadline, "pipelines did not start: {names:?}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    fn environ(&self) -> Vec<String> {
        let raw = std::fs::read(format!("/proc/{}/environ", self.pid())).unwrap();
        raw.split(|b| *b == 0).map(|s| String::from_utf8_lossy(s).into_owned()).collect()
    }
    fn comm(&self) -> String {
        std::fs::read_to_string(format!("/proc/{}/comm", self.pid())).unwrap().trim().to_string()
    }
    fn threads(&self) -> Vec<String> {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{}/task", self.pid())) else { return Vec::new() };
        tasks
            .flatten()
            .filter_map(|t| std::fs::read_to_string(t.path().join("comm")).ok())
            .map(|s| s.trim().to_string())
            .collect()
    }
    fn count(&self, prefix: &str) -> usize {
        self.threads().iter().filter(|n| n.starts_with(prefix)).count()
    }
}
impl Drop for Proc {
    fn drop(&mut self) {
        let _ = Command::new("kill").args(["-TERM", &self.pid().to_string()]).status();
        let deadline = Instant::now() + Duration::from_secs(30);
        while self.0.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn lean_vars(env: &[String]) -> Vec<&str> {
    let mut v: Vec<&str> = env
        .iter()
        .map(String::as_str)
        .filter(|s| {
            s.starts_with("MIMALLOC_")
                || s.starts_with("SLUICE_LEAN_ALLOCATOR")
                || s.starts_with("SLUICE_STORE_ALLOCATOR")
                || s.starts_with("SLUICE_PROCESSOR_ALLOCATOR")
        })
        .collect();
    v.sort_unstable();
    v
}

/// The re-executed process kept its name (`/proc/PID/comm`, at most 15 bytes).
fn assert_named_after_binary(node: &Proc) {
    let name: String = Path::new(&bin()).file_name().unwrap().to_string_lossy().chars().take(15).collect();
    assert_eq!(node.comm(), name);
}

/// `sluice run CFG` with the profile's mark set to `0`: only the mark in its
/// environment (mimalloc's defaults), and the log says so.
fn assert_opted_out(dir: &Path, cfg: &Path, mark: &str, who: &str) {
    let mut node = Proc::start(dir, &["run", cfg.to_str().unwrap()], &[(mark, "0")]);
    node.wait_started();
    assert_eq!(lean_vars(&node.environ()), [format!("{mark}=0").as_str()]);
    let log = std::fs::read_to_string(dir.join("run.log")).unwrap();
    assert!(log.contains(&format!("{mark}: the {who} keeps mimalloc's default settings")), "{log}");
}

/// Shard directories of a pipeline's persisted queue.
fn shards(dir: &Path, pipeline: &str) -> usize {
    std::fs::read_dir(dir.join("data/queue").join(pipeline)).unwrap().flatten().filter(|e| e.path().is_dir()).count()
}

fn cores() -> usize {
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
}

#[test]
fn agent_role_runs_lean_and_fills_only_unset_keys() {
    let dir = Dir::new("role-agent");
    std::fs::create_dir_all(dir.path("logs")).unwrap();
    let cfg = config(dir.root());
    let mut agent = Proc::start(dir.root(), &["agent", "--config", cfg.to_str().unwrap()], &[]);
    agent.wait_started();
    // Re-executed in place: the pid we spawned, the allocator settings in its
    // environment, the binary's name back (not `exe`).
    assert_eq!(
        lean_vars(&agent.environ()),
        ["MIMALLOC_ARENA_EAGER_COMMIT=0", "MIMALLOC_PURGE_DELAY=0", "SLUICE_LEAN_ALLOCATOR=1"]
    );
    let name: String = Path::new(&bin()).file_name().unwrap().to_string_lossy().chars().take(15).collect();
    assert_eq!(agent.comm(), name);
    // Role defaults where the config is silent, the config where it is not.
    assert_eq!(agent.count("plain-worker"), 1);
    assert_eq!(agent.count("tuned-worker"), 3);
    assert_eq!(shards(dir.root(), "plain"), 1);
    assert_eq!(shards(dir.root(), "tuned"), 3);
    let log = std::fs::read_to_string(dir.root().join("agent.log")).unwrap();
    assert_eq!(log.matches("starting the agent role").count(), 1, "{log}");
}

#[test]
fn agent_role_respects_the_users_allocator_choice_and_run_takes_the_processor_profile() {
    let dir = Dir::new("role-optout");
    std::fs::create_dir_all(dir.path("logs")).unwrap();
    let cfg = config(dir.root());
    let agent =
        Proc::start(dir.root(), &["agent", "--config", cfg.to_str().unwrap()], &[("SLUICE_LEAN_ALLOCATOR", "0")]);
    // The log is written by the process itself: wait for the opt-out line.
    let deadline = Instant::now() + Duration::from_secs(30);
    while !std::fs::read_to_string(dir.root().join("agent.log"))
        .unwrap_or_default()
        .contains("SLUICE_LEAN_ALLOCATOR: the agent keeps mimalloc's default settings")
    {
        assert!(Instant::now() < deadline, "no opt-out message");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(lean_vars(&agent.environ()), ["SLUICE_LEAN_ALLOCATOR=0"]);
    drop(agent);
    // A user's own value of one option is kept as given, the other added.
    let mut agent =
        Proc::start(dir.root(), &["agent", "--config", cfg.to_str().unwrap()], &[("MIMALLOC_PURGE_DELAY", "5")]);
    agent.wait_started();
    assert_eq!(
        lean_vars(&agent.environ()),
        ["MIMALLOC_ARENA_EAGER_COMMIT=0", "MIMALLOC_PURGE_DELAY=5", "SLUICE_LEAN_ALLOCATOR=1"]
    );
    drop(agent);
    // `sluice run` without a store: the processor's profile (no huge pages,
    // issue #23) and the per-core defaults.
    let _ = std::fs::remove_dir_all(dir.root().join("data"));
    let mut node = Proc::start(dir.root(), &["run", cfg.to_str().unwrap()], &[]);
    node.wait_started();
    assert_eq!(lean_vars(&node.environ()), ["MIMALLOC_ALLOW_THP=0", "SLUICE_PROCESSOR_ALLOCATOR=1"]);
    assert_named_after_binary(&node);
    assert_eq!(node.count("plain-worker"), cores());
    assert_eq!(node.count("tuned-worker"), 3);
    assert_eq!(shards(dir.root(), "plain"), cores());
    drop(node);
    // Opted out: huge pages, said in the log.
    assert_opted_out(dir.root(), &cfg, "SLUICE_PROCESSOR_ALLOCATOR", "processor");
}

#[test]
fn a_node_with_a_store_sink_keeps_freed_pages_unless_opted_out() {
    let dir = Dir::new("role-store");
    std::fs::create_dir_all(dir.path("logs")).unwrap();
    let sink = format!("type = \"store\"\npath = \"{}/store\"", dir.root().display());
    let cfg = config_with(dir.root(), "store.toml", &sink);
    // Re-executed in place with the store's profile (ADR 0005, revisions b and 2026-11-26).
    let mut node = Proc::start(dir.root(), &["run", cfg.to_str().unwrap()], &[]);
    node.wait_started();
    assert_eq!(lean_vars(&node.environ()), ["MIMALLOC_PURGE_DELAY=10000", "SLUICE_STORE_ALLOCATOR=1"]);
    assert_named_after_binary(&node);
    drop(node);
    // Opted out: mimalloc's defaults, said in the log.
    assert_opted_out(dir.root(), &cfg, "SLUICE_STORE_ALLOCATOR", "store");
}
