//! Fixed-rate pacing pinned to the start epoch, free of coordinated omission.
//!
//! Event `seq` is *intended* to be sent at `seq / rate` seconds after the
//! start epoch, whatever happened before it. A sender that was held up (a
//! full socket, a slow receiver, its own thread descheduled) does not shift
//! the schedule: when it gets going again every overdue event is due at
//! once and goes out in batches as fast as the target takes them (catch-up),
//! and each event's latency is counted from its intended time, so a stall
//! shows up in the percentiles instead of being hidden by a sender that
//! politely waited (coordinated omission, as named by Gil Tene).
//!
//! With `N` connections, connection `c` sends the sequence numbers
//! `c, c + N, c + 2N, …`: the global sequence order is the intended time
//! order, and `intended(seq)` is the same formula everywhere (receivers
//! compute it from the sequence number alone).
//!
//! Rate 0 means "as fast as possible": there is no schedule, and an event's
//! intended time is when its batch was offered.

use std::time::Duration;

use crate::clock::Clock;

/// The pinned schedule of one run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Schedule {
    /// Events per second in total; 0 = as fast as possible.
    pub rate: f64,
}

impl Schedule {
    /// A schedule at `rate` events/s (0: as fast as possible).
    pub fn new(rate: f64) -> Self {
        Self { rate: if rate.is_finite() && rate > 0.0 { rate } else { 0.0 } }
    }

    /// Whether events are paced.
    pub fn paced(&self) -> bool {
        self.rate > 0.0
    }

    /// Nanoseconds after the epoch at which `seq` is due (paced only).
    fn intended_ns(&self, seq: u64) -> u64 {
        (seq as f64 * 1e9 / self.rate).floor() as u64
    }

    /// When event `seq` is due, or `None` when not paced.
    pub fn intended(&self, seq: u64) -> Option<Duration> {
        self.paced().then(|| Duration::from_nanos(self.intended_ns(seq)))
    }

    /// How many events (sequence numbers `0..n`) are due at `now` (paced only).
    pub fn due_count(&self, now: Duration) -> u64 {
        if !self.paced() {
            return u64::MAX;
        }
        let now_ns = now.as_nanos() as u64;
        let mut n = (now_ns as f64 * self.rate / 1e9).floor() as u64 + 1;
        while self.intended_ns(n) <= now_ns {
            n += 1;
        }
        while n > 0 && self.intended_ns(n - 1) > now_ns {
            n -= 1;
        }
        n
    }
}

/// A batch of events to send: `first, first + stride, …` (`n` of them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Batch {
    /// First sequence number.
    pub first: u64,
    /// Distance between sequence numbers (the number of connections).
    pub stride: u64,
    /// Number of events.
    pub n: u64,
    /// When the batch was taken (the intended time of its events when not paced).
    pub offered: Duration,
}

impl Batch {
    /// The sequence numbers of the batch.
    pub fn seqs(&self) -> impl Iterator<Item = u64> {
        let (first, stride) = (self.first, self.stride);
        (0..self.n).map(move |i| first + i * stride)
    }

    /// The last sequence number.
    pub fn last(&self) -> u64 {
        self.first + (self.n.saturating_sub(1)) * self.stride
    }
}

/// Hands one connection its batches, sleeping until the next event is due.
#[derive(Debug, Clone)]
pub struct Pacer {
    schedule: Schedule,
    next: u64,
    stride: u64,
    count: u64,
    max_batch: u64,
}

impl Pacer {
    /// The pacer of connection `conn` of `conns` for `count` events in total,
    /// at most `max_batch` events per batch.
    pub fn new(schedule: Schedule, conn: u64, conns: u64, count: u64, max_batch: u64) -> Self {
        Self { schedule, next: conn, stride: conns.max(1), count, max_batch: max_batch.max(1) }
    }

    /// Events this connection has left to send.
    pub fn remaining(&self) -> u64 {
        if self.next >= self.count {
            0
        } else {
            (self.count - self.next).div_ceil(self.stride)
        }
    }

    /// The next batch: waits (on `clock`) until its first event is due, then
    /// takes every event of this connection that is due by now, up to
    /// `max_batch` (all of them after a stall: catch-up). `None` when done.
    pub fn next(&mut self, clock: &dyn Clock) -> Option<Batch> {
        let left = self.remaining();
        if left == 0 {
            return None;
        }
        let mut now = clock.now();
        let n = match self.schedule.intended(self.next) {
            None => left.min(self.max_batch),
            Some(due) => {
                if now < due {
                    clock.sleep_until(due);
                    now = clock.now();
                }
                let due_n = self.schedule.due_count(now);
                let mine = if due_n > self.next { (due_n - self.next).div_ceil(self.stride) } else { 1 };
                mine.clamp(1, self.max_batch).min(left)
            }
        };
        let b = Batch { first: self.next, stride: self.stride, n, offered: now };
        self.next += n * self.stride;
        Some(b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::SimClock;

    #[test]
    fn intended_times_are_pinned_to_the_epoch() {
        let s = Schedule::new(1000.0);
        assert_eq!(s.intended(0), Some(Duration::ZERO));
        assert_eq!(s.intended(1), Some(Duration::from_millis(1)));
        assert_eq!(s.intended(1500), Some(Duration::from_millis(1500)));
        let s3 = Schedule::new(3.0);
        assert_eq!(s3.intended(1), Some(Duration::from_nanos(333_333_333)));
        assert_eq!(s3.intended(3), Some(Duration::from_secs(1)));
        assert_eq!(Schedule::new(0.0).intended(5), None);
        assert_eq!(s.due_count(Duration::ZERO), 1);
        assert_eq!(s.due_count(Duration::from_micros(999)), 1);
        assert_eq!(s.due_count(Duration::from_millis(1)), 2);
        assert_eq!(s3.due_count(Duration::from_nanos(333_333_332)), 1);
        assert_eq!(s3.due_count(Duration::from_nanos(333_333_333)), 2);
    }

    #[test]
    fn paced_batches_follow_the_schedule_on_a_simulated_clock() {
        let clock = SimClock::new();
        let mut p = Pacer::new(Schedule::new(1000.0), 0, 1, 10, 64);
        let mut got = Vec::new();
        while let Some(b) = p.next(&clock) {
            // Sending takes no time: every batch is one event, taken exactly when due.
            got.push((b.first, b.n, b.offered));
        }
        let want: Vec<_> = (0..10u64).map(|i| (i, 1, Duration::from_millis(i))).collect();
        assert_eq!(got, want);
    }

    #[test]
    fn a_stall_is_caught_up_without_moving_the_schedule() {
        let clock = SimClock::new();
        let mut p = Pacer::new(Schedule::new(1000.0), 0, 1, 2000, 256);
        let mut batches = Vec::new();
        while let Some(b) = p.next(&clock) {
            batches.push(b);
            if b.first == 100 {
                // The send of event 100 blocks for 700 ms (a stalled receiver).
                clock.advance(Duration::from_millis(700));
            }
        }
        // Events 0..=100 one by one; at 800 ms events 101..=800 are overdue
        // and go out at once in batches of at most 256 (catch-up) ...
        assert!(batches[..101].iter().all(|b| b.n == 1));
        let catch_up: Vec<(u64, u64)> = batches[101..104].iter().map(|b| (b.first, b.n)).collect();
        assert_eq!(catch_up, vec![(101, 256), (357, 256), (613, 188)]);
        assert!(batches[101..104].iter().all(|b| b.offered == Duration::from_millis(800)));
        // ... then back on schedule: event 801 at exactly 801 ms.
        assert_eq!(batches[104], Batch { first: 801, stride: 1, n: 1, offered: Duration::from_millis(801) });
        let sent: u64 = batches.iter().map(|b| b.n).sum();
        assert_eq!(sent, 2000);
        assert_eq!(batches.last().map(Batch::last), Some(1999));
    }

    #[test]
    fn connections_interleave_sequence_numbers() {
        let clock = SimClock::new();
        let mut all = Vec::new();
        for c in 0..3 {
            let mut p = Pacer::new(Schedule::new(0.0), c, 3, 10, 2);
            while let Some(b) = p.next(&clock) {
                all.extend(b.seqs());
            }
        }
        assert_eq!(all, vec![0, 3, 6, 9, 1, 4, 7, 2, 5, 8]);
    }

    #[test]
    fn strided_catch_up_takes_only_this_connections_due_events() {
        let clock = SimClock::new();
        clock.advance(Duration::from_millis(10));
        // At 10 ms events 0..=10 are due; connection 1 of 2 owns 1, 3, 5, 7, 9.
        let mut p = Pacer::new(Schedule::new(1000.0), 1, 2, 100, 100);
        let b = p.next(&clock).unwrap();
        assert_eq!((b.first, b.n, b.last()), (1, 5, 9));
        let b = p.next(&clock).unwrap();
        assert_eq!((b.first, b.n, b.offered), (11, 1, Duration::from_millis(11)));
    }
}
