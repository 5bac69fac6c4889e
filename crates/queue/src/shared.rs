//! State shared by all shards of one queue: statistics counters, capacity
//! accounting and the two wait/notify channels (data available for readers,
//! space available for writers).
//!
//! Counters are atomics so `stats()` is cheap. Waiting uses a mutex+condvar
//! per channel plus an atomic waiter count so the hot path (append, ack) only
//! touches the mutex when somebody is actually blocked. The SeqCst ordering on
//! the counter/waiter pair makes the "check, then sleep" race-free: a
//! notifier either sees the waiter or the waiter sees the notifier's update.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Instant;

use parking_lot::{Condvar, Mutex};

use crate::error::QueueError;

/// Shared counters and wait channels.
#[derive(Default)]
pub(crate) struct Shared {
    /// Unacknowledged bytes (headers included), also reserved-but-unwritten bytes.
    pub bytes: AtomicU64,
    /// Unacknowledged records.
    pub records: AtomicU64,
    /// Events in unacknowledged records.
    pub events: AtomicU64,
    /// Segment files currently on disk.
    pub segments: AtomicU64,
    /// Records appended since open.
    pub appended_total: AtomicU64,
    /// Records acknowledged since open.
    pub acked_total: AtomicU64,
    /// Records skipped at read time because they failed validation.
    pub corrupt_total: AtomicU64,
    pub closed: AtomicBool,

    data_seq: AtomicU64,
    data_waiters: AtomicUsize,
    data_mx: Mutex<()>,
    data_cv: Condvar,

    space_waiters: AtomicUsize,
    space_mx: Mutex<()>,
    space_cv: Condvar,
}

impl Shared {
    /// Reserves `n` bytes if they fit under `max` (or the queue is empty, so an
    /// oversized batch cannot block forever).
    pub fn try_reserve(&self, n: u64, max: u64) -> bool {
        let mut cur = self.bytes.load(Ordering::SeqCst);
        loop {
            if cur > 0 && cur.saturating_add(n) > max {
                return false;
            }
            match self.bytes.compare_exchange_weak(cur, cur + n, Ordering::SeqCst, Ordering::SeqCst) {
                Ok(_) => return true,
                Err(actual) => cur = actual,
            }
        }
    }

    /// Reserves `n` bytes, blocking while the queue is over capacity.
    pub fn reserve_blocking(&self, n: u64, max: u64) -> Result<(), QueueError> {
        loop {
            if self.closed.load(Ordering::SeqCst) {
                return Err(QueueError::Closed);
            }
            if self.try_reserve(n, max) {
                return Ok(());
            }
            let mut guard = self.space_mx.lock();
            self.space_waiters.fetch_add(1, Ordering::SeqCst);
            let cur = self.bytes.load(Ordering::SeqCst);
            let still_full = cur > 0 && cur.saturating_add(n) > max;
            if still_full && !self.closed.load(Ordering::SeqCst) {
                self.space_cv.wait(&mut guard);
            }
            self.space_waiters.fetch_sub(1, Ordering::SeqCst);
        }
    }

    /// Returns `n` bytes of capacity and wakes blocked writers.
    pub fn release(&self, n: u64) {
        if n == 0 {
            return;
        }
        self.bytes.fetch_sub(n, Ordering::SeqCst);
        if self.space_waiters.load(Ordering::SeqCst) > 0 {
            let _guard = self.space_mx.lock();
            self.space_cv.notify_all();
        }
    }

    /// Current data generation; compare with [`Shared::wait_data`].
    pub fn data_generation(&self) -> u64 {
        self.data_seq.load(Ordering::SeqCst)
    }

    /// Announces newly readable records.
    pub fn notify_data(&self, records: usize) {
        self.data_seq.fetch_add(1, Ordering::SeqCst);
        if self.data_waiters.load(Ordering::SeqCst) > 0 {
            let _guard = self.data_mx.lock();
            if records == 1 {
                self.data_cv.notify_one();
            } else {
                self.data_cv.notify_all();
            }
        }
    }

    /// Sleeps until data newer than generation `seen` is announced, the queue is
    /// closed or `deadline` passes. Returns `false` on timeout.
    pub fn wait_data(&self, seen: u64, deadline: Instant) -> bool {
        let mut guard = self.data_mx.lock();
        self.data_waiters.fetch_add(1, Ordering::SeqCst);
        let mut woke = true;
        if self.data_seq.load(Ordering::SeqCst) == seen && !self.closed.load(Ordering::SeqCst) {
            woke = !self.data_cv.wait_until(&mut guard, deadline).timed_out();
        }
        self.data_waiters.fetch_sub(1, Ordering::SeqCst);
        woke
    }

    /// Marks the queue closed and wakes every waiter.
    pub fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        {
            let _guard = self.data_mx.lock();
            self.data_cv.notify_all();
        }
        let _guard = self.space_mx.lock();
        self.space_cv.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserve_respects_max_but_admits_oversize_when_empty() {
        let s = Shared::default();
        assert!(s.try_reserve(150, 100), "empty queue admits oversize");
        assert!(!s.try_reserve(1, 100));
        s.release(150);
        assert!(s.try_reserve(60, 100));
        assert!(s.try_reserve(40, 100));
        assert!(!s.try_reserve(1, 100));
        assert_eq!(s.bytes.load(Ordering::SeqCst), 100);
    }

    #[test]
    fn closed_reserve_fails() {
        let s = Shared::default();
        s.close();
        assert!(matches!(s.reserve_blocking(1, 10), Err(QueueError::Closed)));
    }
}
