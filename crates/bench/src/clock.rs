//! Clocks: the real one, and a simulated one the pacing tests drive.
//!
//! Everything the generator times goes through [`Clock`], as a [`Duration`]
//! since the run's start epoch: intended send times, completion times, lag.
//! [`SimClock`] only moves when something sleeps or advances it, so tests
//! can assert exact intended times and what happens after a stall without a
//! single timing assertion.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Time since a run's start epoch.
pub trait Clock: Send + Sync {
    /// Now, since the start epoch.
    fn now(&self) -> Duration;
    /// Returns at or after `t` (immediately if `t` has passed).
    fn sleep_until(&self, t: Duration);
}

/// The machine's monotonic clock, pinned to a start instant.
#[derive(Debug, Clone, Copy)]
pub struct RealClock {
    start: Instant,
    /// Wall-clock nanoseconds since the Unix epoch at `start` (for reports
    /// and other processes).
    pub start_unix_ns: u64,
}

impl RealClock {
    /// A clock whose epoch is now.
    pub fn start() -> Self {
        let start_unix_ns = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
        Self { start: Instant::now(), start_unix_ns }
    }

    /// The epoch as an [`Instant`].
    pub fn epoch(&self) -> Instant {
        self.start
    }
}

impl Clock for RealClock {
    fn now(&self) -> Duration {
        self.start.elapsed()
    }

    fn sleep_until(&self, t: Duration) {
        // No spinning: the generator shares the machine with what it
        // measures. thread::sleep overshoots by tens of µs; events due by
        // then go out in the same batch, and latency counts from the
        // intended time anyway.
        let now = self.now();
        if t > now {
            std::thread::sleep(t - now);
        }
    }
}

/// A clock that moves only when told to (tests).
#[derive(Debug, Default)]
pub struct SimClock {
    now_ns: AtomicU64,
}

impl SimClock {
    /// A clock at 0.
    pub fn new() -> Self {
        Self::default()
    }

    /// Moves the clock forward by `d` (a stall, work taking time).
    pub fn advance(&self, d: Duration) {
        self.now_ns.fetch_add(d.as_nanos() as u64, Ordering::SeqCst);
    }
}

impl Clock for SimClock {
    fn now(&self) -> Duration {
        Duration::from_nanos(self.now_ns.load(Ordering::SeqCst))
    }

    fn sleep_until(&self, t: Duration) {
        self.now_ns.fetch_max(t.as_nanos() as u64, Ordering::SeqCst);
    }
}
