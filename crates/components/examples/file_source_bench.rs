//! `file` source benchmark: how fast and how cheaply the agent reads files.
//!
//! Two measurements:
//! 1. `drain` (run second, with a same-run baseline): a file of N 200-byte lines already on disk is read by the real
//!    `file` source (events built, batches sent with acknowledgement tokens,
//!    positions registry written) into an output that counts and
//!    acknowledges. Reports lines/s (wall) and CPU per line (process CPU, all
//!    threads). Baseline: `BufRead::read_until` line counting of the same
//!    file (no events) — the floor of "read and split".
//! 2. `rate` (run first): a writer thread appends 20,000 lines/s of 200 bytes for 10 s
//!    while the source follows the file; reports the source's CPU as % of one
//!    core (process CPU minus the writer thread's) and the process's peak RSS
//!    (`VmHWM`). The target: ≤ 25 % of a core and ≤ 30 MB.
//!
//! Run: `cargo run --release -p sluice-components --example file_source_bench [-- N]`

use std::io::{BufRead, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use sluice_components::sources;
use sluice_components::testkit::output_context;
use sluice_core::component::{BuildContext, Closed, Output};
use sluice_core::Event;

/// Counts events; the default `send_acked` acknowledges at once.
#[derive(Default)]
struct Count(AtomicU64);

#[async_trait]
impl Output for Count {
    async fn send(&self, events: Vec<Event>) -> Result<(), Closed> {
        self.0.fetch_add(events.len() as u64, Ordering::Relaxed);
        Ok(())
    }
}

/// CPU time of this process (all threads), nanoseconds.
fn process_cpu_ns() -> u64 {
    let s = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let rest = s.rfind(')').and_then(|i| s.get(i + 2..)).unwrap_or("");
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 = f.get(11).and_then(|x| x.parse().ok()).unwrap_or(0)
        + f.get(12).and_then(|x| x.parse::<u64>().ok()).unwrap_or(0);
    ticks * 10_000_000
}

/// CPU time of the calling thread, nanoseconds.
fn thread_cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|x| x.parse().ok()))
        .unwrap_or(0)
}

fn peak_rss_mib() -> f64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kib: f64 = s
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0);
    kib / 1024.0
}

/// A 200-byte line (199 characters and the newline).
fn line(i: u64) -> String {
    let head =
        format!("2026-11-22T10:00:00.000Z INFO app[{i:09}] request handled path=/api/v1/items/{} status=200 ", i % 977);
    format!("{head:x<199}\n")
}

fn start(
    rt: &tokio::runtime::Runtime,
    dir: &std::path::Path,
    file: &std::path::Path,
    out: Arc<Count>,
) -> (tokio::task::JoinHandle<()>, tokio_util::sync::CancellationToken) {
    let mut bcx = BuildContext::for_test("source", "bench");
    bcx.data_dir = dir.join("data");
    let body = format!("include = [{:?}]\npoll_interval = \"100ms\"\n", file.to_str().unwrap_or_default());
    let src = (sources::file::SPEC.build)(toml::from_str(&body).expect("config"), &bcx).expect("build");
    let (cx, shutdown, _m) = output_context(out);
    let task = rt.spawn(async move {
        if let Err(e) = src.run(cx).await {
            eprintln!("source failed: {e}");
        }
    });
    (task, shutdown)
}

fn main() {
    let n: u64 = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(1_000_000);
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().expect("runtime");
    let dir = tempfile::tempdir().expect("tempdir");

    // 1. rate (first: the peak RSS is the agent's steady state): 20,000 lines/s for 10 s.
    let path = dir.path().join("rate.log");
    std::fs::write(&path, b"").expect("create");
    let count = Arc::new(Count::default());
    let (task, shutdown) = start(&rt, dir.path(), &path, Arc::clone(&count));
    std::thread::sleep(Duration::from_millis(300));
    let c0 = process_cpu_ns();
    let t = Instant::now();
    let writer = {
        let path = path.clone();
        std::thread::spawn(move || {
            let w0 = thread_cpu_ns();
            let mut f = std::fs::OpenOptions::new().append(true).open(&path).expect("open");
            let start = Instant::now();
            let mut i = 0u64;
            // 200 writes of 100 lines per second.
            for tick in 0..2000u64 {
                let due = start + Duration::from_millis(tick * 5);
                if let Some(d) = due.checked_duration_since(Instant::now()) {
                    std::thread::sleep(d);
                }
                let mut chunk = String::with_capacity(100 * 200);
                for _ in 0..100 {
                    chunk.push_str(&line(i));
                    i += 1;
                }
                f.write_all(chunk.as_bytes()).expect("write");
            }
            thread_cpu_ns() - w0
        })
    };
    let writer_cpu = writer.join().unwrap_or(0);
    while count.0.load(Ordering::Relaxed) < 200_000 && t.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(5));
    }
    let wall = t.elapsed();
    let cpu = process_cpu_ns().saturating_sub(c0).saturating_sub(writer_cpu);
    shutdown.cancel();
    let _ = rt.block_on(task);
    println!(
        "rate: 200000 lines at 20000/s followed in {:.2} s; source CPU {:.1} % of one core; peak RSS {:.1} MiB (whole process)",
        wall.as_secs_f64(),
        100.0 * cpu as f64 / wall.as_nanos() as f64,
        peak_rss_mib()
    );
    // 2. drain
    let path = dir.path().join("drain.log");
    {
        let mut f = std::io::BufWriter::new(std::fs::File::create(&path).expect("create"));
        for i in 0..n {
            f.write_all(line(i).as_bytes()).expect("write");
        }
    }
    let bytes = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    // Baseline first (it also warms the page cache for both).
    let t = Instant::now();
    let c0 = thread_cpu_ns();
    let mut r = std::io::BufReader::with_capacity(256 << 10, std::fs::File::open(&path).expect("open"));
    let mut buf = Vec::with_capacity(256);
    let mut lines = 0u64;
    while r.read_until(b'\n', &mut buf).expect("read") > 0 {
        lines += 1;
        buf.clear();
    }
    let base_wall = t.elapsed();
    let base_cpu = thread_cpu_ns() - c0;
    assert_eq!(lines, n);

    let count = Arc::new(Count::default());
    let c0 = process_cpu_ns();
    let t = Instant::now();
    let (task, shutdown) = start(&rt, dir.path(), &path, Arc::clone(&count));
    while count.0.load(Ordering::Relaxed) < n {
        std::thread::sleep(Duration::from_millis(5));
    }
    let wall = t.elapsed();
    let cpu = process_cpu_ns() - c0;
    shutdown.cancel();
    let _ = rt.block_on(task);
    println!(
        "drain: {n} lines ({:.0} MB) in {:.2} s = {:.0} lines/s, {:.0} ns CPU/line (all threads)",
        bytes as f64 / 1e6,
        wall.as_secs_f64(),
        n as f64 / wall.as_secs_f64(),
        cpu as f64 / n as f64
    );
    println!(
        "  baseline read_until line count: {:.0} lines/s, {:.0} ns CPU/line",
        n as f64 / base_wall.as_secs_f64(),
        base_cpu as f64 / n as f64
    );
}
