//! What one megabyte written to a segment file costs in CPU, buffered
//! (through the page cache, as the persisted queue writes) and with
//! `O_DIRECT` (ADR 0047), for several write sizes.
//!
//! This is the floor under issue #2's "persisted ≥ 90 % of memory": every
//! byte the queue keeps must be written once, and this measures the
//! cheapest way the kernel offers to do it on this machine. The writer
//! cycles through four 64 MiB files (as segment reuse does), fdatasyncs once
//! a second and at the end (the default `fsync = "1s"`), and reports CPU
//! time (user + system, from `/proc/thread-self/schedstat`) per MB written
//! and per 420-byte record (the thesis event's queue record).
//!
//! ```text
//! cargo run --release -p sluice-queue --example write_cost -- [DIR] [TOTAL_MB] [ROUNDS]
//! ```
//!
//! `DIR` must be on the file system under test (default
//! `target/write-cost`; not `/tmp` if that is a tmpfs, which has no direct
//! I/O). Rounds alternate sizes and modes so both see the same machine
//! state. Results: docs/benchmarks/journal.md, "2026-11-23 night: the persisted queue's
//! floor".

use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::Instant;

const FILE_BYTES: u64 = 64 << 20;
const FILES: usize = 4;
const ALIGN: usize = 4096;
const RECORD: f64 = 420.0;

/// A buffer of `len` bytes at a 4096-aligned address (direct I/O needs
/// one): a slice of a larger vector, so no unsafe allocation is needed.
fn aligned(len: usize) -> (Vec<u8>, usize) {
    let v = vec![b'x'; len + ALIGN];
    let off = v.as_ptr().align_offset(ALIGN);
    (v, off)
}

/// CPU time this (single-threaded) process's thread has used, in seconds:
/// `/proc/thread-self/schedstat` counts it in nanoseconds (user + system).
fn cpu_seconds() -> std::io::Result<f64> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat")?;
    let ns: u64 = s.split_whitespace().next().and_then(|v| v.parse().ok()).ok_or_else(|| {
        std::io::Error::new(std::io::ErrorKind::InvalidData, format!("unexpected /proc/thread-self/schedstat: {s:?}"))
    })?;
    Ok(ns as f64 / 1e9)
}

/// File `i` of the set a mode writes. Separate sets per mode: a direct
/// write drops the cached pages of its range, which would make the next
/// buffered run allocate them again.
fn seg_path(dir: &Path, i: usize, direct: bool) -> PathBuf {
    dir.join(format!("seg{i}-{direct}"))
}

fn open(path: &Path, direct: bool) -> std::io::Result<File> {
    let mut o = OpenOptions::new();
    o.read(true).write(true).create(true);
    if direct {
        #[cfg(target_os = "linux")]
        o.custom_flags(libc::O_DIRECT);
        #[cfg(not(target_os = "linux"))]
        return Err(std::io::Error::new(std::io::ErrorKind::Unsupported, "O_DIRECT is Linux-only here"));
    }
    o.open(path)
}

/// Writes `total` bytes in `chunk`-byte writes; returns (MB/s, CPU µs per MB).
fn run(dir: &Path, direct: bool, chunk: usize, total: u64) -> std::io::Result<(f64, f64)> {
    let files = (0..FILES).map(|i| open(&seg_path(dir, i, direct), direct)).collect::<std::io::Result<Vec<_>>>()?;
    let (buf, off) = aligned(chunk);
    let buf = &buf[off..off + chunk];
    let (cpu0, t0) = (cpu_seconds()?, Instant::now());
    let mut last_sync = Instant::now();
    let (mut done, mut pos, mut cur) = (0u64, 0u64, 0usize);
    while done < total {
        files[cur].write_all_at(buf, pos)?;
        pos += chunk as u64;
        done += chunk as u64;
        if pos + chunk as u64 > FILE_BYTES {
            pos = 0;
            cur = (cur + 1) % FILES;
        }
        if last_sync.elapsed().as_secs() >= 1 {
            files[cur].sync_data()?;
            last_sync = Instant::now();
        }
    }
    for f in &files {
        f.sync_data()?;
    }
    let (cpu, wall) = (cpu_seconds()? - cpu0, t0.elapsed().as_secs_f64());
    let mb = total as f64 / 1e6;
    Ok((mb / wall, cpu * 1e6 / mb))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let dir = PathBuf::from(args.next().unwrap_or_else(|| "target/write-cost".into()));
    let total_mb: u64 = args.next().map_or(Ok(4000), |s| s.parse())?;
    let rounds: usize = args.next().map_or(Ok(3), |s| s.parse())?;
    std::fs::create_dir_all(&dir)?;
    let sizes = [256usize << 10, 1 << 20, 4 << 20];
    println!("round mode     write    MB/s  CPU µs/MB  CPU ns per 420-byte record");
    for round in 1..=rounds {
        for &chunk in &sizes {
            for direct in [false, true] {
                let mode = if direct { "O_DIRECT" } else { "buffered" };
                match run(&dir, direct, chunk, total_mb << 20) {
                    Ok((mbps, us)) => println!(
                        "{round:>5} {mode:<8} {:>4} KiB {mbps:>7.0} {us:>10.1} {:>12.1}",
                        chunk >> 10,
                        us * RECORD / 1e3
                    ),
                    Err(e) => println!("{round:>5} {mode:<8} {:>4} KiB failed: {e}", chunk >> 10),
                }
            }
        }
    }
    for i in 0..FILES {
        for direct in [false, true] {
            let _ = std::fs::remove_file(seg_path(&dir, i, direct));
        }
    }
    Ok(())
}
