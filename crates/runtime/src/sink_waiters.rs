//! Sources waiting until every sink acknowledged a persisted record — what
//! `Output::send_visible` (a `_bulk` request with `refresh=wait_for`) waits
//! for. A persisted queue acknowledges a source once its append is durable;
//! a visible send also waits for the record's sink acknowledgement (the
//! embedded store's: committed and searchable).
//!
//! The record's outcome can arrive before the source registered its wait
//! (the reader thread may read, deliver and see the sinks acknowledge a
//! record while the appending task is still being scheduled). So while any
//! visible send is in progress ([`SinkWaiters::begin`] until it is
//! resolved), outcomes without a waiter are kept (the newest
//! [`SinkWaiters::EARLY`]) for a registration that comes later. With no
//! visible send in progress, an outcome costs one atomic load.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};

use parking_lot::Mutex;
use sluice_core::{AckToken, Delivery};
use sluice_queue::RecordId;

/// The waits of one persisted queue.
#[derive(Default)]
pub(crate) struct SinkWaiters {
    /// Visible sends begun and not resolved yet.
    active: AtomicUsize,
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    waiting: HashMap<RecordId, AckToken>,
    early: VecDeque<(RecordId, Delivery)>,
}

impl SinkWaiters {
    /// Outcomes kept for registrations still to come.
    const EARLY: usize = 65_536;

    /// A visible send starts (before its append).
    pub(crate) fn begin(&self) {
        self.active.fetch_add(1, Ordering::SeqCst);
    }

    /// The append of a begun send failed: nothing to wait for.
    pub(crate) fn abandon(&self) {
        self.end();
    }

    /// Waits for record `id`: `ack` is resolved with its sinks' outcome
    /// (at once if it is already known).
    pub(crate) fn register(&self, id: RecordId, ack: AckToken) {
        let mut inner = self.inner.lock();
        if let Some(i) = inner.early.iter().position(|(r, _)| *r == id) {
            let (_, d) = inner.early.remove(i).unwrap_or((id, Delivery::Failed));
            drop(inner);
            self.end();
            resolve(ack, d);
            return;
        }
        inner.waiting.insert(id, ack);
    }

    /// Record `id`'s sinks acknowledged it (or it failed).
    pub(crate) fn outcome(&self, id: RecordId, d: Delivery) {
        if self.active.load(Ordering::SeqCst) == 0 {
            return;
        }
        let mut inner = self.inner.lock();
        if let Some(ack) = inner.waiting.remove(&id) {
            drop(inner);
            self.end();
            resolve(ack, d);
            return;
        }
        if inner.early.len() == Self::EARLY {
            inner.early.pop_front();
        }
        inner.early.push_back((id, d));
    }

    fn end(&self) {
        if self.active.fetch_sub(1, Ordering::SeqCst) == 1 {
            // Nobody waits: what was kept for late registrations can go.
            let mut inner = self.inner.lock();
            if self.active.load(Ordering::SeqCst) == 0 {
                inner.early.clear();
            }
        }
    }
}

fn resolve(ack: AckToken, d: Delivery) {
    match d {
        Delivery::Delivered => ack.delivered(),
        Delivery::Failed => ack.failed(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    fn tracked() -> (AckToken, mpsc::Receiver<Delivery>) {
        let (tx, rx) = mpsc::channel();
        (
            AckToken::new(move |d| {
                let _ = tx.send(d);
            }),
            rx,
        )
    }

    fn id(offset: u64) -> RecordId {
        RecordId { shard: 0, segment: 1, offset }
    }

    #[test]
    fn a_registered_wait_is_resolved_by_its_record_only() {
        let w = SinkWaiters::default();
        let (ack, rx) = tracked();
        w.begin();
        w.register(id(0), ack);
        w.outcome(id(64), Delivery::Delivered);
        assert!(rx.try_recv().is_err(), "another record's outcome resolved the wait");
        w.outcome(id(0), Delivery::Delivered);
        assert_eq!(rx.try_recv().unwrap(), Delivery::Delivered);
        assert_eq!(w.active.load(Ordering::SeqCst), 0);
        assert!(w.inner.lock().early.is_empty(), "kept outcomes cleared once nobody waits");
    }

    #[test]
    fn an_outcome_before_the_registration_is_kept_for_it() {
        let w = SinkWaiters::default();
        w.begin();
        w.outcome(id(0), Delivery::Failed);
        let (ack, rx) = tracked();
        w.register(id(0), ack);
        assert_eq!(rx.try_recv().unwrap(), Delivery::Failed);
        assert_eq!(w.active.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn without_a_send_in_progress_outcomes_are_not_kept() {
        let w = SinkWaiters::default();
        w.outcome(id(0), Delivery::Delivered);
        assert!(w.inner.lock().early.is_empty());
        w.begin();
        w.abandon();
        assert_eq!(w.active.load(Ordering::SeqCst), 0);
    }
}
