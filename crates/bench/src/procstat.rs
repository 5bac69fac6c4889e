//! CPU time and memory of processes and threads, read from `/proc`.
//!
//! The generator measures its own cost (CPU nanoseconds per event, from
//! each sender thread's CPU clock), and the case runner
//! samples every process it started once a second (utime + stime from
//! `/proc/PID/stat`, resident memory from `/proc/PID/status`).

use std::sync::OnceLock;

/// CPU time the calling thread has run, in nanoseconds.
///
/// `clock_gettime(CLOCK_THREAD_CPUTIME_ID)`: nanosecond resolution on every
/// Linux kernel. (`/proc/thread-self/schedstat` is not there, or all zeros, on
/// some kernels, and the clock ticks of `stat` are 10 ms: a sender thread that
/// ran for less than a tick reported no CPU at all.)
pub fn thread_cpu_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    (t.tv_sec as u64).saturating_mul(1_000_000_000).saturating_add(t.tv_nsec as u64)
}

/// Clock ticks per second (`getconf CLK_TCK`, 100 if that fails).
fn clock_ticks() -> f64 {
    static TCK: OnceLock<f64> = OnceLock::new();
    *TCK.get_or_init(|| {
        std::process::Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .and_then(|o| String::from_utf8_lossy(&o.stdout).trim().parse().ok())
            .unwrap_or(100.0)
    })
}

/// utime + stime in seconds from the text of a `stat` file.
fn stat_cpu_s(stat: &str) -> Option<f64> {
    // The command name may hold spaces and parentheses: fields start after the last ')'.
    let rest = stat.rsplit_once(')')?.1;
    let f: Vec<&str> = rest.split_whitespace().collect();
    let utime: f64 = f.get(11)?.parse().ok()?;
    let stime: f64 = f.get(12)?.parse().ok()?;
    Some((utime + stime) / clock_ticks())
}

/// One sample of a process.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ProcSample {
    /// CPU seconds (user + system) since the process started.
    pub cpu_s: f64,
    /// Resident memory now.
    pub rss_bytes: u64,
    /// Peak resident memory (VmHWM).
    pub peak_rss_bytes: u64,
}

/// Samples process `pid`; `None` when it is gone.
pub fn sample(pid: u32) -> Option<ProcSample> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let cpu_s = stat_cpu_s(&stat)?;
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kb = |key: &str| {
        status
            .lines()
            .find(|l| l.starts_with(key))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse::<u64>().ok())
            .map_or(0, |v| v * 1024)
    };
    Some(ProcSample { cpu_s, rss_bytes: kb("VmRSS:"), peak_rss_bytes: kb("VmHWM:") })
}

/// Samples this process.
pub fn sample_self() -> ProcSample {
    sample(std::process::id()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_stat_with_odd_command_names() {
        let ticks = clock_ticks();
        let s = "123 (a b) c)) S 1 2 3 4 5 6 7 8 9 10 250 50 0 0 20 0 1 0";
        assert_eq!(stat_cpu_s(s), Some(300.0 / ticks));
    }

    #[test]
    fn this_thread_and_process_have_cpu_and_memory() {
        let before = thread_cpu_ns();
        // Busy for 50 ms: the kernel updates the run time at ticks and switches.
        let started = std::time::Instant::now();
        let mut x = 0u64;
        while started.elapsed() < std::time::Duration::from_millis(50) {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(1));
        }
        assert!(thread_cpu_ns() > before);
        let s = sample_self();
        assert!(s.rss_bytes > 0 && s.peak_rss_bytes >= s.rss_bytes, "{s:?}");
        assert_eq!(sample(u32::MAX), None);
    }
}
