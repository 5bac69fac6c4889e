//! Live tail: subscribers get the events of each commit that their
//! principal may read and their query matches.
//!
//! Each subscriber has a bounded channel of [`TAIL_CHANNEL`] hits. Publishing
//! never waits: when a subscriber's channel is full the hit is dropped for
//! that subscriber and counted (`sluice_store_tail_dropped_total`), so a slow
//! reader cannot stall ingestion. A closed channel unsubscribes.

use std::sync::atomic::{AtomicU64, Ordering};

use sluice_core::codec::write_json;
use sluice_core::metrics::Counter;
use sluice_core::Event;
use sluice_query::{Hit, Principal, Query};
use tokio::sync::mpsc;

/// Capacity of each subscriber's channel.
pub const TAIL_CHANNEL: usize = 4096;

/// One tail subscriber.
pub struct Subscriber {
    pub(crate) principal: Principal,
    pub(crate) query: Query,
    pub(crate) tx: mpsc::Sender<Hit>,
}

/// The hit for a stored event, exactly as search shows it
/// ([`crate::render`]): a stand-in when its JSON cannot be read back.
pub fn hit_of(seq: u64, event: &Event, unrenderable: &Counter) -> Hit {
    let mut buf = Vec::with_capacity(512);
    write_json(event, &mut buf);
    crate::render::hit(seq.to_string(), &buf, event.timestamp, unrenderable)
}

/// Sends the committed `events` to every interested subscriber; removes
/// closed ones. Returns the number of hits dropped for full channels.
pub fn publish(subs: &mut Vec<Subscriber>, events: &[(u64, Event)], dropped: &AtomicU64, unrenderable: &Counter) {
    subs.retain(|s| !s.tx.is_closed());
    if subs.is_empty() {
        return;
    }
    for (seq, event) in events {
        let mut hit = None;
        for s in subs.iter() {
            if !s.principal.may_read(&event.identity) || !sluice_query::matcher::matches(&s.query, event) {
                continue;
            }
            let h = hit.get_or_insert_with(|| hit_of(*seq, event, unrenderable)).clone();
            if let Err(mpsc::error::TrySendError::Full(_)) = s.tx.try_send(h) {
                dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}
