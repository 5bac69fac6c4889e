//! Line framing shared by the line-oriented sources (`tcp`, the `http`
//! source's ndjson endpoint): splits a byte stream into lines, cuts and tags
//! oversized ones (`_oversized`, counted in `oversized_frames`) and decodes
//! each line as a JSON object or a plain `message`.

use std::sync::Arc;

use bytes::Bytes;
use serde::Deserialize;
use sluice_core::codec::event_from_json_bytes;
use sluice_core::component::SourceContext;
use sluice_core::event::{now_ns, Identity, MESSAGE};
use sluice_core::metrics::{ComponentMetrics, Counter};
use sluice_core::{Event, Object, Str, Text, Value};

/// How each line is decoded.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum LineFormat {
    /// One JSON object per line.
    Ndjson,
    /// Each line is the `message`.
    Lines,
}

/// Carry-over between reads: whether we are skipping the tail of an oversized line.
#[derive(Default)]
pub struct LineState {
    skipping: bool,
}

/// The identity and source a chunk's events share.
struct Shared {
    identity: Arc<Identity>,
    source: Arc<str>,
}

impl Shared {
    /// Fresh counts for plain lines. JSON lines keep the source given and
    /// get their identity from their text (`identity` is unused for them).
    fn new(format: LineFormat, source: &Arc<str>) -> Self {
        match format {
            LineFormat::Lines => Self { identity: Arc::default(), source: Arc::from(&**source) },
            LineFormat::Ndjson => Self { identity: sluice_core::event::no_identity(), source: Arc::clone(source) },
        }
    }
}

/// Splits a byte stream into lines and decodes them into events. Shared by the
/// line-oriented sources.
pub struct LineDecoder {
    format: LineFormat,
    max_line: usize,
    metrics: Arc<ComponentMetrics>,
    oversized: Arc<Counter>,
}

impl LineDecoder {
    /// A decoder counting into the source's metrics.
    pub fn new(format: LineFormat, max_line: usize, cx: &SourceContext) -> Self {
        Self { format, max_line, metrics: Arc::clone(&cx.metrics), oversized: cx.metrics.counter("oversized_frames") }
    }

    /// Decodes every complete line in `buf` (and the rest when `eof`), returning
    /// how many bytes were consumed.
    pub fn decode(
        &self,
        chunk: &Bytes,
        eof: bool,
        state: &mut LineState,
        out: &mut Vec<Event>,
        source: &Arc<str>,
    ) -> usize {
        let buf: &[u8] = chunk;
        // One clock read per chunk: the lines of one read arrived together.
        let now = now_ns();
        // One identity and source per chunk, not the process's shared ones:
        // this thread counts them up and the workers that drop the events
        // count them down, and a count shared by every event moved between
        // the cores twice per event (≈ 4 % of the grok case's CPU,
        // docs/benchmarks/journal.md 2026-11-27). Two small allocations per
        // read of up to 64 KiB.
        let shared = Shared::new(self.format, source);
        let mut pos = 0;
        while pos < buf.len() {
            let rest = &buf[pos..];
            let nl = memchr::memchr(b'\n', rest);
            if state.skipping {
                match nl {
                    Some(i) => {
                        state.skipping = false;
                        pos += i + 1;
                        continue;
                    }
                    None => return buf.len(),
                }
            }
            let line_end = match nl {
                Some(i) if i <= self.max_line => i,
                Some(_) | None if rest.len() > self.max_line => {
                    // Oversized: keep the first max_line bytes, skip to the next newline.
                    self.oversized.inc();
                    let mut e = self.line_event(chunk, pos..pos + self.max_line, now, &shared);
                    e.add_tag("_oversized");
                    out.push(e);
                    match nl {
                        Some(i) => pos += i + 1,
                        None => {
                            state.skipping = true;
                            return buf.len();
                        }
                    }
                    continue;
                }
                Some(i) => i,
                None if eof => rest.len(),
                None => return pos,
            };
            let mut end = pos + line_end;
            if end > pos && buf[end - 1] == b'\r' {
                end -= 1;
            }
            if !buf[pos..end].iter().all(u8::is_ascii_whitespace) {
                out.push(self.line_event(chunk, pos..end, now, &shared));
            }
            pos += (line_end + 1).min(rest.len());
        }
        pos
    }

    /// The event for `chunk[range]`, stamped `now`. A plain line is copied
    /// once into a shared buffer that its `message` and a parser's captures
    /// slice (the chunk itself is not sliced: it may hold invalid UTF-8);
    /// JSON lines keep a slice of the chunk.
    fn line_event(&self, chunk: &Bytes, range: std::ops::Range<usize>, now: i64, shared: &Shared) -> Event {
        let source = &shared.source;
        match self.format {
            LineFormat::Lines => {
                let line = &chunk[range];
                // Room for `message` only: the event may wait in the queue
                // (16,384 of them by default), and a parsing filter reserves
                // what it adds (grok: its captures) when it runs. Made
                // before the message, which would otherwise wait on the
                // stack across this call and stall on its reload.
                let mut fields = Object::with_capacity(LINE_FIELDS_CAPACITY);
                // Stored once, shared: a parser's captures are slices of it
                // (`Text::slice_of`), not copies.
                let message = match std::str::from_utf8(line) {
                    Ok(text) => Value::String(Text::shared(Arc::from(text))),
                    Err(_) => Value::from(String::from_utf8_lossy(line).as_ref()),
                };
                fields.push_unique(Str::new(MESSAGE), message);
                Event::new(now, fields, Arc::clone(&shared.identity), Arc::clone(source))
            }
            LineFormat::Ndjson => {
                let line = chunk.slice(range);
                let mut e = match event_from_json_bytes(&line) {
                    Ok((e, bad_ts)) => {
                        let mut e = e;
                        if bad_ts {
                            e.add_tag("_timestampparsefailure");
                        }
                        e
                    }
                    Err(_) => {
                        self.metrics.events_failed.inc();
                        let mut e = Event::from_message(String::from_utf8_lossy(&line));
                        e.add_tag("_jsonparsefailure");
                        e
                    }
                };
                e.source = Arc::clone(source);
                e
            }
        }
    }
}

/// Initial key capacity of a plain line's event: `message`. Sized for a
/// grok pattern's captures (16 keys, ≈ 1 KiB per event) it held ≈ 15 MB more
/// in a full default memory queue, for one reallocation per event saved
/// (grok reserves its captures; issue #23, journal 2026-11-27).
const LINE_FIELDS_CAPACITY: usize = 1;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::{source_context, Capture};

    fn decoder(max: usize) -> (LineDecoder, Arc<sluice_core::metrics::ComponentMetrics>) {
        let (cx, _s, m) = source_context(Arc::new(Capture::default()));
        (LineDecoder::new(LineFormat::Ndjson, max, &cx), m)
    }

    #[test]
    fn splits_at_every_boundary_identically() {
        let input = b"{\"a\":1}\n{\"a\":2}\r\n\nnot json\n{\"a\":3}";
        let src: Arc<str> = Arc::from("t");
        for cut in 0..input.len() {
            let (d, _) = decoder(1024);
            let mut st = LineState::default();
            let mut out = Vec::new();
            let mut buf = input[..cut].to_vec();
            let c = d.decode(&Bytes::from(buf.clone()), false, &mut st, &mut out, &src);
            buf.drain(..c);
            buf.extend_from_slice(&input[cut..]);
            let c = d.decode(&Bytes::from(buf.clone()), true, &mut st, &mut out, &src);
            assert_eq!(c, buf.len());
            assert_eq!(out.len(), 4, "cut at {cut}");
            assert!(out[2].has_tag("_jsonparsefailure"));
            assert_eq!(out[2].message(), Some("not json"));
            assert_eq!(out[3].fields().get("a").unwrap().to_json(), "3");
        }
    }

    #[test]
    fn oversized_lines_are_cut_tagged_and_counted() {
        let (d, m) = decoder(8);
        let src: Arc<str> = Arc::from("t");
        let mut st = LineState::default();
        let mut out = Vec::new();
        // The long line arrives in two reads.
        let c = d.decode(&Bytes::from_static(b"0123456789abc"), false, &mut st, &mut out, &src);
        assert_eq!(c, 13);
        let c = d.decode(&Bytes::from_static(b"def\n{\"ok\":1}\n"), false, &mut st, &mut out, &src);
        assert_eq!(c, 13);
        assert_eq!(out.len(), 2);
        assert!(out[0].has_tag("_oversized"));
        assert_eq!(out[0].message(), Some("01234567"));
        assert!(out[1].fields().contains_key(&"ok"));
        assert_eq!(m.counter("oversized_frames").get(), 1);
    }

    #[test]
    fn plain_lines_become_messages_with_the_source_and_one_read_time() {
        let (cx, _s, m) = source_context(Arc::new(Capture::default()));
        let d = LineDecoder::new(LineFormat::Lines, 8, &cx);
        let src: Arc<str> = Arc::from("tcp:test");
        let mut st = LineState::default();
        let mut out = Vec::new();
        let before = now_ns();
        let c =
            d.decode(&Bytes::from_static(b"one\r\n  \n\xff\xfetwo\n0123456789\nlast"), true, &mut st, &mut out, &src);
        assert_eq!(c, 29);
        let messages: Vec<_> = out.iter().map(|e| e.message().unwrap_or("<none>")).collect();
        assert_eq!(messages, ["one", "\u{fffd}\u{fffd}two", "01234567", "last"]);
        assert!(out.iter().all(|e| &*e.source == "tcp:test" && e.timestamp == out[0].timestamp));
        assert!(out[0].timestamp >= before);
        assert!(out[2].has_tag("_oversized") && !out[0].has_tag("_oversized"));
        assert_eq!(out[0].fields().len(), 1);
        assert_eq!(m.counter("oversized_frames").get(), 1);
        assert_eq!(m.events_failed.get(), 0);
    }

    #[test]
    fn long_plain_lines_are_stored_once_shared() {
        let (cx, _s, _m) = source_context(Arc::new(Capture::default()));
        let d = LineDecoder::new(LineFormat::Lines, 1024, &cx);
        let src: Arc<str> = Arc::from("tcp:test");
        let mut out = Vec::new();
        let line = "a line longer than twenty-four bytes, so it is shared";
        let input = format!("{line}\nshort\nλ {line}\n");
        d.decode(&Bytes::from(input.into_bytes()), true, &mut LineState::default(), &mut out, &src);
        let texts: Vec<_> = out
            .iter()
            .map(|e| match e.fields().get(MESSAGE) {
                Some(Value::String(t)) => (t.as_str().to_owned(), t.is_shared()),
                other => panic!("message is {other:?}"),
            })
            .collect();
        assert_eq!(texts, [(line.to_owned(), true), ("short".to_owned(), false), (format!("λ {line}"), true)]);
    }
}
