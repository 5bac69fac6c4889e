//! The stream half shared by `syslog_tcp` and `syslog_unix` (stream mode):
//! frames (newline or octet-counting, [`sluice_parsers::framing`]) decoded
//! into events by the syslog_event mapper, oversized frames kept cut, tagged
//! `_oversized` and counted, framing errors counted, and a read's events sent
//! as one batch.

use std::sync::Arc;

use sluice_core::component::{BoxError, SourceContext};
use sluice_core::metrics::Counter;
use sluice_core::value::Value;
use sluice_core::Event;
use sluice_parsers::framing::Decoder;

use crate::syslog_event::{Mapper, OVERSIZED};

/// What a stream connection's frames are decoded with and counted into.
pub(crate) struct StreamFraming {
    /// Frame bytes to event.
    pub(crate) mapper: Mapper,
    /// Longest frame kept whole; longer ones are cut there.
    pub(crate) max_message: usize,
    /// Frames cut at `max_message`.
    pub(crate) oversized: Arc<Counter>,
    /// Frames the decoder could not read (e.g. a bad octet count).
    pub(crate) framing_errors: Arc<Counter>,
}

impl StreamFraming {
    /// Decodes every complete frame at the start of `buf` (and the rest when
    /// `eof`) into `events`, returning how many bytes were consumed.
    pub(crate) fn decode(
        &self,
        dec: &mut Decoder,
        buf: &[u8],
        eof: bool,
        peer: &Value,
        events: &mut Vec<Event>,
    ) -> usize {
        let mut pos = 0;
        loop {
            let rest = &buf[pos..];
            let (consumed, item) = if eof { dec.decode_eof(rest) } else { dec.decode(rest) };
            match item {
                None => return pos + consumed,
                Some(Ok(frame)) => {
                    let bytes = &rest[frame.range];
                    if frame.truncated {
                        // Kept cut at the limit, tagged and counted.
                        self.oversized.inc();
                        let mut e = self.mapper.event(bytes, peer);
                        e.add_tag(OVERSIZED);
                        events.push(e);
                    } else if !bytes.iter().all(u8::is_ascii_whitespace) {
                        events.push(self.mapper.event(bytes, peer));
                    }
                }
                Some(Err(_)) => self.framing_errors.inc(),
            }
            pos += consumed;
        }
    }
}

/// Sends one read's events as a batch, counted in and out.
pub(crate) async fn send(cx: &SourceContext, events: Vec<Event>) -> Result<(), BoxError> {
    if !events.is_empty() {
        let count = events.len() as u64;
        cx.metrics.events_in.add(count);
        cx.out.send(events).await?;
        cx.metrics.events_out.add(count);
    }
    Ok(())
}
