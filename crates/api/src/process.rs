//! Process statistics read from `/proc/self` (Linux): resident memory, CPU
//! time, threads and open file descriptors. Zeros where unavailable.

/// One sample.
#[derive(Debug, Default, Clone, Copy)]
pub struct ProcessStats {
    /// Resident set size.
    pub rss_bytes: u64,
    /// User + system CPU time.
    pub cpu_seconds: f64,
    /// Threads.
    pub threads: u64,
    /// Open file descriptors.
    pub open_files: u64,
}

/// Reads the current values.
pub fn sample() -> ProcessStats {
    let mut s = ProcessStats::default();
    if let Ok(status) = std::fs::read_to_string("/proc/self/status") {
        for line in status.lines() {
            let mut it = line.split_whitespace();
            match it.next() {
                Some("VmRSS:") => s.rss_bytes = it.next().and_then(|v| v.parse::<u64>().ok()).unwrap_or(0) * 1024,
                Some("Threads:") => s.threads = it.next().and_then(|v| v.parse().ok()).unwrap_or(0),
                _ => {}
            }
        }
    }
    if let Ok(stat) = std::fs::read_to_string("/proc/self/stat") {
        // Fields after the parenthesised command name; utime and stime are 14 and 15.
        if let Some(rest) = stat.rsplit(')').next() {
            let f: Vec<&str> = rest.split_whitespace().collect();
            let ticks = clock_ticks();
            if f.len() > 13 && ticks > 0.0 {
                let ut: f64 = f[11].parse().unwrap_or(0.0);
                let st: f64 = f[12].parse().unwrap_or(0.0);
                s.cpu_seconds = (ut + st) / ticks;
            }
        }
    }
    if let Ok(rd) = std::fs::read_dir("/proc/self/fd") {
        s.open_files = rd.count() as u64;
    }
    s
}

fn clock_ticks() -> f64 {
    // sysconf is safe to call; the lint forbids unsafe, so use the usual 100 Hz
    // unless the environment says otherwise.
    std::env::var("SLUICE_CLK_TCK").ok().and_then(|v| v.parse().ok()).unwrap_or(100.0)
}
