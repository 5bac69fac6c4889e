//! One open file of the `file` source: big positioned reads (`pread`, no
//! per-line syscalls), `memchr` line splitting, long-line handling,
//! decoding (UTF-8 or Latin-1), multiline joining, and events cut into
//! batches that each know the file offset they end at.
//!
//! Offsets: `pos` is how far the file was read, `emitted` how far the bytes
//! are represented by events already produced. Bytes between the two (a
//! partial line, a multiline event still being assembled, the head of a long
//! line waiting for its end) are *not* acknowledged, so a restart reads them
//! again and nothing is lost or duplicated.

use std::fs::File;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use sluice_core::event::now_ns;
use sluice_core::metrics::Counter;
use sluice_core::value::{Object, Value};
use sluice_core::Event;

use super::multiline::{Joined, Joiner, Pending};
use crate::positions::registry::FINGERPRINT_BYTES;

/// Tag of an event cut at `max_line_bytes` whose rest was skipped.
pub const TRUNCATED_TAG: &str = "_truncated";
/// Tag of the pieces of a line split at `max_line_bytes`.
pub const SPLIT_TAG: &str = "_split";

/// What every reader of one source shares.
pub struct Settings {
    /// Longest line kept whole.
    pub max_line: usize,
    /// Split long lines (else truncate them).
    pub split_long: bool,
    /// Decode as Latin-1 (else UTF-8).
    pub latin1: bool,
    /// Field that gets each line's start offset.
    pub offset_field: Option<String>,
    /// Bytes per read.
    pub read_buffer: usize,
    /// Events per batch.
    pub batch_events: usize,
    /// Multiline rules.
    pub joiner: Option<Joiner>,
    /// Close a file that has not grown for this long.
    pub close_inactive: Duration,
}

/// Counters the readers increment.
pub struct Counters {
    /// Lines longer than `max_line_bytes`.
    pub long_lines: Arc<Counter>,
    /// Lines with invalid UTF-8 (replaced by U+FFFD).
    pub invalid_utf8: Arc<Counter>,
    /// Multiline events flushed at `max_lines` / `max_bytes`.
    pub multiline_limits: Arc<Counter>,
}

/// What one poll found.
#[derive(Debug, PartialEq, Eq)]
pub enum Step {
    /// Bytes were read.
    Data,
    /// Nothing new.
    Idle,
    /// The file is shorter than what was read, or its first bytes changed.
    Truncated,
    /// The file is done (deleted and read to the end, or inactive): close it.
    Finished {
        /// It was deleted.
        deleted: bool,
    },
}

/// The head of a long line kept (truncate mode) until its end is found.
struct Held {
    bytes: Vec<u8>,
    start: u64,
}

/// An open file.
pub struct Reader {
    /// Registry entry of the content being read.
    pub entry: u64,
    /// Device and inode.
    pub key: (u64, u64),
    /// Path it was opened at.
    pub path: PathBuf,
    source: Arc<str>,
    file: File,
    pos: u64,
    buf: Vec<u8>,
    buf_start: u64,
    scanned: usize,
    emitted: u64,
    held: Option<Held>,
    splitting: bool,
    ml: Option<Pending>,
    /// The file's first bytes (up to the fingerprint length).
    pub prefix: Vec<u8>,
    last_size: u64,
    last_growth: Instant,
    now: i64,
    events: Vec<Event>,
    batches: Vec<(Vec<Event>, u64)>,
}

impl Reader {
    /// A reader of `file` starting at `offset`, whose first bytes are `prefix`.
    pub fn new(entry: u64, key: (u64, u64), path: PathBuf, file: File, offset: u64, prefix: Vec<u8>) -> Self {
        let source: Arc<str> = Arc::from(path.to_string_lossy().as_ref());
        Self {
            entry,
            key,
            path,
            source,
            file,
            pos: offset,
            buf: Vec::new(),
            buf_start: offset,
            scanned: 0,
            emitted: offset,
            held: None,
            splitting: false,
            ml: None,
            last_size: offset,
            prefix,
            last_growth: Instant::now(),
            now: now_ns(),
            events: Vec::new(),
            batches: Vec::new(),
        }
    }

    /// How far the bytes are represented by produced events.
    pub fn emitted(&self) -> u64 {
        self.emitted
    }

    /// How far the file was read.
    pub fn pos(&self) -> u64 {
        self.pos
    }

    /// Starts over at offset 0 for a new generation of content (truncation),
    /// under registry entry `entry`. Call [`Reader::finish`] first.
    pub fn restart(&mut self, entry: u64) {
        self.entry = entry;
        self.pos = 0;
        self.buf.clear();
        self.buf_start = 0;
        self.scanned = 0;
        self.emitted = 0;
        self.held = None;
        self.splitting = false;
        self.ml = None;
        self.prefix.clear();
        self.last_size = 0;
        self.last_growth = Instant::now();
    }

    /// Reads what is new (at most one buffer) and turns complete lines into
    /// events; see [`Step`].
    pub fn poll(&mut self, s: &Settings, c: &Counters, now: Instant) -> std::io::Result<Step> {
        let meta = self.file.metadata()?;
        let size = meta.len();
        if size < self.pos {
            return Ok(Step::Truncated);
        }
        if size != self.last_size {
            // Growth: check the content was not replaced meanwhile (truncated
            // and rewritten past our position), and grow the fingerprint.
            let want = (size as usize).min(FINGERPRINT_BYTES);
            if want > 0 {
                let mut p = vec![0u8; want];
                let n = read_full_at(&self.file, &mut p, 0)?;
                p.truncate(n);
                if p.len() < self.prefix.len() || p[..self.prefix.len()] != self.prefix[..] {
                    return Ok(Step::Truncated);
                }
                if p.len() > self.prefix.len() {
                    self.prefix = p;
                }
            }
            self.last_size = size;
            self.last_growth = now;
        }
        if size > self.pos {
            let want = ((size - self.pos) as usize).min(s.read_buffer);
            let old = self.buf.len();
            self.buf.resize(old + want, 0);
            let n = read_full_at(&self.file, &mut self.buf[old..], self.pos)?;
            self.buf.truncate(old + n);
            if n == 0 {
                return Ok(Step::Idle);
            }
            // The file may have been truncated and rewritten past our
            // position between the check above and this read (copytruncate
            // while a writer is fast): those bytes belong to the new content.
            // Check the first bytes again; if they changed, drop what was
            // just read — the new content is read from 0, and a copy of the
            // old content resumes where the old content was really read to.
            if !self.prefix.is_empty() {
                let mut p = vec![0u8; self.prefix.len()];
                let m = read_full_at(&self.file, &mut p, 0)?;
                if m < p.len() || p != self.prefix {
                    self.buf.truncate(old);
                    return Ok(Step::Truncated);
                }
            }
            self.pos += n as u64;
            self.now = now_ns();
            self.process(s, c, false);
            return Ok(Step::Data);
        }
        // At the end of the file.
        if meta.nlink() == 0 {
            self.finish(s, c);
            return Ok(Step::Finished { deleted: true });
        }
        if now.duration_since(self.last_growth) >= s.close_inactive {
            self.finish(s, c);
            return Ok(Step::Finished { deleted: false });
        }
        if let Some(j) = &s.joiner {
            if j.expired(&self.ml, now) {
                if let Some(joined) = j.flush(&mut self.ml) {
                    self.now = now_ns();
                    self.push_joined(joined, s, c);
                }
            }
        }
        Ok(Step::Idle)
    }

    /// Emits everything still held: a last line without its newline, the head
    /// of a long line, a multiline event being assembled.
    pub fn finish(&mut self, s: &Settings, c: &Counters) {
        self.now = now_ns();
        self.process(s, c, true);
        if let Some(j) = &s.joiner {
            if let Some(joined) = j.flush(&mut self.ml) {
                self.push_joined(joined, s, c);
            }
        }
    }

    /// Before starting over after a truncation: emits a multiline event being
    /// assembled (its lines are complete) and drops the bytes of a partial
    /// line or of a long line's head — a copy of the old content (copytruncate)
    /// continues from [`Reader::emitted`] and reads those bytes whole.
    pub fn flush_complete(&mut self, s: &Settings, c: &Counters) {
        self.now = now_ns();
        if let Some(j) = &s.joiner {
            if let Some(joined) = j.flush(&mut self.ml) {
                self.push_joined(joined, s, c);
            }
        }
    }

    /// The batches produced so far, each with the offset it ends at.
    pub fn take_batches(&mut self) -> Vec<(Vec<Event>, u64)> {
        if !self.events.is_empty() {
            let events = std::mem::take(&mut self.events);
            self.batches.push((events, self.emitted));
        }
        std::mem::take(&mut self.batches)
    }

    fn process(&mut self, s: &Settings, c: &Counters, last: bool) {
        let buf = std::mem::take(&mut self.buf);
        let mut line_start = 0usize;
        let mut i = self.scanned.min(buf.len());
        while let Some(k) = memchr::memchr(b'\n', &buf[i..]) {
            let nl = i + k;
            let mut line = &buf[line_start..nl];
            if line.last() == Some(&b'\r') {
                line = &line[..line.len() - 1];
            }
            let start = self.buf_start + line_start as u64;
            let end = self.buf_start + nl as u64 + 1;
            if let Some(h) = self.held.take() {
                // The end of a truncated long line: its tail was skipped.
                self.line(&h.bytes, h.start, end, &[TRUNCATED_TAG], s, c);
            } else if line.len() > s.max_line {
                self.long_line(line, start, end, s, c);
            } else if self.splitting {
                self.splitting = false;
                self.line(line, start, end, &[SPLIT_TAG], s, c);
            } else {
                self.line(line, start, end, &[], s, c);
            }
            line_start = nl + 1;
            i = nl + 1;
        }
        // A partial line remains.
        if self.held.is_some() {
            line_start = buf.len();
        } else if buf.len() - line_start > s.max_line {
            if s.split_long {
                while buf.len() - line_start > s.max_line {
                    let cut = self.cut(&buf[line_start..], s.max_line, s);
                    if !self.splitting {
                        self.splitting = true;
                        c.long_lines.inc();
                    }
                    let start = self.buf_start + line_start as u64;
                    self.line(&buf[line_start..line_start + cut], start, start + cut as u64, &[SPLIT_TAG], s, c);
                    line_start += cut;
                }
            } else {
                c.long_lines.inc();
                let cut = self.cut(&buf[line_start..], s.max_line, s);
                self.held = Some(Held {
                    bytes: buf[line_start..line_start + cut].to_vec(),
                    start: self.buf_start + line_start as u64,
                });
                line_start = buf.len();
            }
        }
        if last {
            let end = self.buf_start + buf.len() as u64;
            if let Some(h) = self.held.take() {
                self.line(&h.bytes, h.start, end, &[TRUNCATED_TAG], s, c);
            } else if line_start < buf.len() {
                let start = self.buf_start + line_start as u64;
                let mut line = &buf[line_start..];
                if line.last() == Some(&b'\r') {
                    line = &line[..line.len() - 1];
                }
                let tags: &[&'static str] = if self.splitting { &[SPLIT_TAG] } else { &[] };
                self.splitting = false;
                self.line(line, start, end, tags, s, c);
            }
            line_start = buf.len();
        }
        self.buf = buf;
        self.buf.drain(..line_start);
        self.buf_start += line_start as u64;
        self.scanned = self.buf.len();
    }

    /// Where to cut `bytes` at most `max` bytes in: on a character boundary
    /// in UTF-8 mode (unless the bytes are not UTF-8 there).
    fn cut(&self, bytes: &[u8], max: usize, s: &Settings) -> usize {
        if s.latin1 || max >= bytes.len() {
            return max.min(bytes.len());
        }
        let mut cut = max;
        for _ in 0..3 {
            if cut > 0 && (bytes[cut] & 0xC0) == 0x80 {
                cut -= 1;
            } else {
                break;
            }
        }
        if cut == 0 || (bytes[cut] & 0xC0) == 0x80 {
            max
        } else {
            cut
        }
    }

    fn long_line(&mut self, line: &[u8], start: u64, end: u64, s: &Settings, c: &Counters) {
        if !self.splitting {
            c.long_lines.inc();
        }
        self.splitting = false;
        if !s.split_long {
            let cut = self.cut(line, s.max_line, s);
            self.line(&line[..cut], start, end, &[TRUNCATED_TAG], s, c);
            return;
        }
        let mut off = 0;
        while line.len() - off > s.max_line {
            let cut = self.cut(&line[off..], s.max_line, s);
            let a = start + off as u64;
            self.line(&line[off..off + cut], a, a + cut as u64, &[SPLIT_TAG], s, c);
            off += cut;
        }
        self.line(&line[off..], start + off as u64, end, &[SPLIT_TAG], s, c);
    }

    fn decode(&self, bytes: &[u8], s: &Settings, c: &Counters) -> String {
        if s.latin1 {
            return bytes.iter().map(|&b| char::from(b)).collect();
        }
        match std::str::from_utf8(bytes) {
            Ok(t) => t.to_owned(),
            Err(_) => {
                c.invalid_utf8.inc();
                String::from_utf8_lossy(bytes).into_owned()
            }
        }
    }

    /// One line `[start, end)` of the file.
    fn line(&mut self, bytes: &[u8], start: u64, end: u64, tags: &[&'static str], s: &Settings, c: &Counters) {
        if let Some(j) = &s.joiner {
            let text = self.decode(bytes, s, c);
            let mut out = Vec::new();
            j.push(&mut self.ml, text, start, end, tags, &mut out);
            for joined in out {
                self.push_joined(joined, s, c);
            }
            return;
        }
        if bytes.is_empty() && tags.is_empty() {
            // Empty lines carry nothing: no event, but the bytes are consumed.
            self.emitted = end;
            return;
        }
        let text = self.decode(bytes, s, c);
        self.push_event(text, start, end, tags, s);
    }

    fn push_joined(&mut self, j: Joined, s: &Settings, c: &Counters) {
        if j.tags.iter().any(|t| *t == super::multiline::MAX_LINES_TAG || *t == super::multiline::MAX_BYTES_TAG) {
            c.multiline_limits.inc();
        }
        self.push_event(j.text, j.start, j.end, &j.tags, s);
    }

    fn push_event(&mut self, text: String, start: u64, end: u64, tags: &[&'static str], s: &Settings) {
        let mut fields = Object::with_capacity(2);
        fields.insert("message", Value::from(text));
        if let Some(f) = &s.offset_field {
            fields.insert(f.as_str(), Value::from(start));
        }
        let mut e = Event::new(self.now, fields, Arc::default(), Arc::clone(&self.source));
        for t in tags {
            e.add_tag(t);
        }
        self.events.push(e);
        self.emitted = end;
        if self.events.len() >= s.batch_events {
            let events = std::mem::take(&mut self.events);
            self.batches.push((events, end));
        }
    }
}

/// `pread` until `buf` is full or the end of the file.
pub fn read_full_at(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match file.read_at(&mut buf[n..], offset + n as u64) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sources::file::multiline::{MultilineConfig, What};
    use sluice_core::config::{ByteSize, HumanDuration};
    use std::io::Write;

    fn settings(max_line: usize, split: bool, latin1: bool) -> Settings {
        Settings {
            max_line,
            split_long: split,
            latin1,
            offset_field: Some("offset".into()),
            read_buffer: 7, // tiny reads: every line crosses a read boundary
            batch_events: 3,
            joiner: None,
            close_inactive: Duration::from_secs(3600),
        }
    }

    fn counters() -> Counters {
        Counters { long_lines: Arc::default(), invalid_utf8: Arc::default(), multiline_limits: Arc::default() }
    }

    /// Reads a whole file with `s`; returns (message, offset, tags) per event
    /// and the batch ends.
    /// (message, offset, tags) of one event.
    type Read = (String, u64, Vec<String>);

    fn read_all(content: &[u8], s: &Settings, c: &Counters) -> (Vec<Read>, Vec<u64>) {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(content).unwrap();
        let file = File::open(f.path()).unwrap();
        let mut r = Reader::new(0, (0, 0), f.path().to_path_buf(), file, 0, Vec::new());
        let mut events = Vec::new();
        let mut ends = Vec::new();
        loop {
            let step = r.poll(s, c, Instant::now()).unwrap();
            for (batch, end) in r.take_batches() {
                ends.push(end);
                events.extend(batch);
            }
            if step == Step::Idle {
                break;
            }
        }
        r.finish(s, c);
        for (batch, end) in r.take_batches() {
            ends.push(end);
            events.extend(batch);
        }
        let out = events
            .iter()
            .map(|e| {
                let tags = e
                    .fields()
                    .get("tags")
                    .and_then(Value::as_array)
                    .map(|a| a.iter().filter_map(Value::as_str).map(String::from).collect())
                    .unwrap_or_default();
                let off = e.fields().get("offset").and_then(Value::as_u64).unwrap();
                (e.message().unwrap().to_string(), off, tags)
            })
            .collect();
        (out, ends)
    }

    #[test]
    fn lines_offsets_and_batches() {
        let s = settings(100, false, false);
        let c = counters();
        let (ev, ends) = read_all(b"alpha\r\nbeta\n\ngamma\ndelta\nepsilon", &s, &c);
        let msgs: Vec<&str> = ev.iter().map(|e| e.0.as_str()).collect();
        assert_eq!(msgs, ["alpha", "beta", "gamma", "delta", "epsilon"]);
        let offs: Vec<u64> = ev.iter().map(|e| e.1).collect();
        assert_eq!(offs, [0, 7, 13, 19, 25]);
        // Batches of at most 3 events; the last one ends at the end of the file.
        assert_eq!(*ends.last().unwrap(), 32);
        assert!(ends.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn long_lines_truncated_with_bounded_memory() {
        let s = settings(10, false, false);
        let c = counters();
        let mut content = b"short\n".to_vec();
        content.extend(std::iter::repeat_n(b'x', 1000));
        content.extend(b"\nafter\n");
        content.extend(std::iter::repeat_n(b'y', 25)); // unterminated at the end
        let (ev, ends) = read_all(&content, &s, &c);
        let msgs: Vec<&str> = ev.iter().map(|e| e.0.as_str()).collect();
        assert_eq!(msgs, ["short", "xxxxxxxxxx", "after", "yyyyyyyyyy"]);
        assert_eq!(ev[1].2, ["_truncated"]);
        assert_eq!(ev[3].2, ["_truncated"]);
        assert_eq!(c.long_lines.get(), 2);
        assert_eq!(*ends.last().unwrap(), content.len() as u64);
    }

    #[test]
    fn long_lines_split_into_pieces() {
        let s = settings(10, true, false);
        let c = counters();
        let mut content = b"0123456789abcdefghijKLMNO\nok\n".to_vec();
        content.extend(b"\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\n"); // 12 bytes of é: cut on a boundary
        let (ev, _) = read_all(&content, &s, &c);
        let msgs: Vec<&str> = ev.iter().map(|e| e.0.as_str()).collect();
        assert_eq!(msgs, ["0123456789", "abcdefghij", "KLMNO", "ok", "ééééé", "é"]);
        assert!(ev[0].2 == ["_split"] && ev[2].2 == ["_split"] && ev[3].2.is_empty());
        assert_eq!(ev[1].1, 10);
        assert_eq!(c.long_lines.get(), 2);
        assert_eq!(c.invalid_utf8.get(), 0);
    }

    #[test]
    fn invalid_utf8_replaced_and_counted_latin1_decoded() {
        let c = counters();
        let (ev, _) = read_all(b"caf\xe9\n\x00\x01\xff\xfe bin\nok\n", &settings(100, false, false), &c);
        assert_eq!(ev[0].0, "caf\u{fffd}");
        assert_eq!(ev[1].0, "\u{0}\u{1}\u{fffd}\u{fffd} bin");
        assert_eq!(ev.len(), 3);
        assert_eq!(c.invalid_utf8.get(), 2);
        let c = counters();
        let (ev, _) = read_all(b"caf\xe9 \xa3\xb5\n", &settings(100, false, true), &c);
        assert_eq!(ev[0].0, "café £µ");
        assert_eq!(c.invalid_utf8.get(), 0);
    }

    #[test]
    fn multiline_offsets_cover_the_joined_lines() {
        let mut s = settings(100, false, false);
        s.joiner = Some(
            Joiner::new(&MultilineConfig {
                pattern: r"^\s".into(),
                negate: false,
                what: What::Previous,
                max_lines: sluice_core::config::Positive::<usize>::of(500),
                max_bytes: ByteSize(1 << 20),
                timeout: HumanDuration(Duration::from_secs(60)),
            })
            .unwrap(),
        );
        let c = counters();
        let (ev, ends) = read_all(b"a\n b\n c\nd\n e\n", &s, &c);
        let msgs: Vec<&str> = ev.iter().map(|e| e.0.as_str()).collect();
        assert_eq!(msgs, ["a\n b\n c", "d\n e"]);
        assert_eq!(ev[1].1, 8);
        assert_eq!(ev[0].2, ["multiline"]);
        assert_eq!(*ends.last().unwrap(), 13);
    }
}
