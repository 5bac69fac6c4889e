//! A log line that repeats is written at most once per interval, carrying
//! how many occurrences it stands for.
//!
//! Why: an accept loop that hit the descriptor limit fails on every
//! attempt; logging each failure wrote 62 MB/s (issue #18). Counters say how
//! often something happened; the log says that it happens, once in a while.
//!
//! ```
//! use std::time::Duration;
//! use sluice_net::Throttle;
//! let t = Throttle::new(Duration::from_secs(10));
//! for _ in 0..1000 {
//!     if let Some(repeats) = t.ready() {
//!         // log here, with `repeats` (occurrences since the last line, this one included)
//!         assert_eq!(repeats, 1);
//!     }
//! }
//! ```

use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// How often each [`Throttle`] of a listener lets its line through.
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(10);

/// Lets one occurrence in per interval; see the module docs.
#[derive(Debug)]
pub struct Throttle {
    interval: Duration,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    last: Option<Instant>,
    /// Occurrences since the last one let through.
    pending: u64,
}

impl Throttle {
    /// A throttle letting one line through per `interval`.
    pub fn new(interval: Duration) -> Self {
        Self { interval, state: Mutex::new(State::default()) }
    }

    /// Records one occurrence; `Some(n)` when it should be logged now, `n`
    /// being the occurrences it stands for (the ones held back since the
    /// last line, plus this one).
    pub fn ready(&self) -> Option<u64> {
        self.ready_at(Instant::now())
    }

    fn ready_at(&self, now: Instant) -> Option<u64> {
        let mut s = self.state.lock();
        s.pending += 1;
        if s.last.is_some_and(|l| now.duration_since(l) < self.interval) {
            return None;
        }
        s.last = Some(now);
        Some(std::mem::take(&mut s.pending))
    }
}

impl Default for Throttle {
    fn default() -> Self {
        Self::new(DEFAULT_INTERVAL)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_per_interval_carrying_the_held_back_count() {
        let t = Throttle::new(Duration::from_secs(10));
        let t0 = Instant::now();
        assert_eq!(t.ready_at(t0), Some(1));
        for i in 1..1000 {
            assert_eq!(t.ready_at(t0 + Duration::from_millis(i)), None);
        }
        assert_eq!(t.ready_at(t0 + Duration::from_secs(10)), Some(1000));
        assert_eq!(t.ready_at(t0 + Duration::from_secs(11)), None);
        assert_eq!(t.ready_at(t0 + Duration::from_secs(25)), Some(2));
    }
}
