//! The string of a [`crate::Value::String`]: owned, or a slice of a shared line.
//!
//! Why: a parsed log line's captures are substrings of its `message`. Copying
//! each one into its own string cost one heap allocation per capture longer
//! than 24 bytes (an Apache line's `request`, `referrer`, `agent`,
//! `timestamp`), freed later on another thread — a fifth of grok's CPU
//! (docs/benchmarks/journal.md, 2026-11-23). A [`Text`] is either an owned
//! `CompactString` (inline up to 24 bytes) or a range of a reference-counted
//! `Arc<str>`: a source stores the line once ([`Text::shared`]) and a parser
//! makes its captures with [`Text::slice_of`], which costs a reference count
//! instead of an allocation and a copy. ADR 0001 (revision 2026-11-23).
//!
//! The trade-off: a capture keeps its whole line alive (never more than one
//! line; sources share per line, not per read buffer). Mutating a shared
//! string ([`Text::make_mut`]) copies it first.

use std::borrow::Borrow;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::Deref;
use std::sync::Arc;

use compact_str::CompactString;

/// Strings up to this many bytes are always stored inline (no allocation, no
/// reference count).
const INLINE: usize = 24;

/// A string value: owned (inline when short) or a slice of a shared buffer.
/// Reads as a `&str` (`Deref`); compares, hashes and prints by content.
#[derive(Clone)]
pub struct Text(Repr);

#[derive(Clone)]
enum Repr {
    Owned(CompactString),
    /// `buf[start..start + len]`, on character boundaries (checked when made).
    Shared {
        buf: Arc<str>,
        start: u32,
        len: u32,
    },
}

impl Text {
    /// A copy of `s` (inline when at most 24 bytes).
    #[inline]
    pub fn new(s: &str) -> Self {
        Self(Repr::Owned(CompactString::new(s)))
    }

    /// The whole of a shared buffer, without copying it. Short buffers (and
    /// ones longer than 4 GiB) are copied into an owned string instead.
    #[inline]
    pub fn shared(buf: Arc<str>) -> Self {
        match u32::try_from(buf.len()) {
            Ok(len) if buf.len() > INLINE => Self(Repr::Shared { buf, start: 0, len }),
            _ => Self::new(&buf),
        }
    }

    /// `sub` as a [`Text`]: when `sub` lies inside this text and this text
    /// is shared, a slice of the same buffer (a reference count, no copy);
    /// otherwise (short, owned, or not inside) a copy.
    // Always inlined: returned out of line, the text is written piecewise
    // and reloaded whole by the caller, a store-forwarding stall per capture.
    #[inline(always)]
    pub fn slice_of(&self, sub: &str) -> Self {
        if sub.len() > INLINE {
            if let Repr::Shared { buf, start, .. } = &self.0 {
                let base = self.as_str().as_ptr() as usize;
                let at = sub.as_ptr() as usize;
                let within = at >= base && at + sub.len() <= base + self.len();
                if within {
                    // Offsets inside a buffer that fits in u32 (checked when it was made).
                    let off = (at - base) as u32;
                    return Self(Repr::Shared { buf: Arc::clone(buf), start: start + off, len: sub.len() as u32 });
                }
            }
        }
        Self::new(sub)
    }

    /// The text.
    #[inline]
    pub fn as_str(&self) -> &str {
        match &self.0 {
            Repr::Owned(s) => s.as_str(),
            Repr::Shared { buf, start, len } => {
                let (start, end) = (*start as usize, (*start + *len) as usize);
                // Ranges are made only from `&str` slices of `buf` (char
                // boundaries), so this never falls back.
                buf.get(start..end).unwrap_or_default()
            }
        }
    }

    /// Whether the bytes are a slice of a shared buffer (not a copy).
    pub fn is_shared(&self) -> bool {
        matches!(self.0, Repr::Shared { .. })
    }

    /// The string, mutably; a shared slice is copied into an owned string first.
    pub fn make_mut(&mut self) -> &mut CompactString {
        if let Repr::Shared { .. } = self.0 {
            self.0 = Repr::Owned(CompactString::new(self.as_str()));
        }
        match &mut self.0 {
            Repr::Owned(s) => s,
            // INVARIANT: made owned just above.
            Repr::Shared { .. } => unreachable!("made owned above"),
        }
    }

    /// The text as an owned `String`.
    pub fn into_string(self) -> String {
        match self.0 {
            Repr::Owned(s) => s.into_string(),
            Repr::Shared { .. } => self.as_str().to_owned(),
        }
    }
}

impl Default for Text {
    fn default() -> Self {
        Self(Repr::Owned(CompactString::default()))
    }
}

impl Deref for Text {
    type Target = str;
    #[inline]
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for Text {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl Borrow<str> for Text {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl PartialEq for Text {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for Text {}

impl PartialEq<str> for Text {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for Text {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialOrd for Text {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Text {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl Hash for Text {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_str().hash(state);
    }
}

impl fmt::Debug for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl From<&str> for Text {
    fn from(s: &str) -> Self {
        Self::new(s)
    }
}

impl From<String> for Text {
    fn from(s: String) -> Self {
        Self(Repr::Owned(CompactString::from(s)))
    }
}

impl From<CompactString> for Text {
    fn from(s: CompactString) -> Self {
        Self(Repr::Owned(s))
    }
}

impl From<Text> for String {
    fn from(t: Text) -> Self {
        t.into_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LINE: &str = "127.0.0.1 - - [10/Oct/2000:13:55:36 -0700] \"GET /apache_pb.gif HTTP/1.0\" 200 2326";

    #[test]
    fn slices_of_a_shared_line_share_it() {
        let line = Text::shared(Arc::from(LINE));
        assert!(line.is_shared());
        let ts = &line[15..41];
        assert_eq!(ts, "10/Oct/2000:13:55:36 -0700");
        let cap = line.slice_of(ts);
        assert!(cap.is_shared());
        assert_eq!(cap, *ts);
        // A slice of a slice is still inside the same buffer.
        let inner = cap.slice_of(&cap[..25]);
        assert!(inner.is_shared());
        assert_eq!(inner.as_str(), "10/Oct/2000:13:55:36 -070");
        // Short captures are inline copies; foreign strings are copies.
        let short = line.slice_of(&line[..9]);
        assert!(!short.is_shared());
        assert_eq!(short, "127.0.0.1");
        let foreign = line.slice_of("a string that is not inside the line at all");
        assert!(!foreign.is_shared());
        assert_eq!(foreign, "a string that is not inside the line at all");
        // Owned texts never share.
        let owned = Text::new(LINE);
        assert!(!owned.slice_of(&owned[15..41]).is_shared());
    }

    #[test]
    fn equality_hash_and_mutation_go_by_content() {
        let a = Text::shared(Arc::from(LINE));
        let b = Text::from(LINE.to_owned());
        assert_eq!(a, b);
        let hash = |t: &Text| {
            let mut h = std::collections::hash_map::DefaultHasher::new();
            t.hash(&mut h);
            h.finish()
        };
        assert_eq!(hash(&a), hash(&b));
        let mut m = a.clone();
        m.make_mut().push('!');
        assert!(!m.is_shared());
        assert_eq!(m.as_str(), format!("{LINE}!"));
        assert_eq!(a.as_str(), LINE, "the shared original is unchanged");
        assert_eq!(String::from(a), LINE);
        assert!(!Text::shared(Arc::from("short")).is_shared());
    }
}
