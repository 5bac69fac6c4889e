//! Multiline joining for the `file` source, with the semantics of Logstash's
//! multiline codec and Filebeat's `multiline.type: pattern`:
//!
//! - a line *matches* when `pattern` finds a match in it, inverted by `negate`;
//! - `what = "previous"`: a matching line belongs to the event before it (a
//!   non-matching line starts a new event) — Filebeat's `match: after`;
//! - `what = "next"`: a matching line belongs to the event after it (a
//!   non-matching line ends the event) — Filebeat's `match: before`.
//!
//! Lines are joined with `\n`. An event is flushed early when it reaches
//! `max_lines` lines or `max_bytes` bytes (tagged `_multiline_max_lines` /
//! `_multiline_max_bytes` and counted: nothing is discarded, the following
//! lines start the next event), and when no line arrived for `timeout`.
//! Events made of more than one line get the tag `multiline`, as Logstash's
//! codec does.
//!
//! Each event carries the file offsets of its first byte and of the byte
//! after its last line, so the source acknowledges exactly the bytes it
//! emitted.

use std::time::{Duration, Instant};

use regex::Regex;
use serde::Deserialize;
use sluice_core::config::{ByteSize, HumanDuration, Positive};

/// Which event a matching line belongs to.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum What {
    /// To the one before it.
    Previous,
    /// To the one after it.
    Next,
}

/// `multiline` table of the `file` source.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MultilineConfig {
    /// Regular expression (Rust `regex` syntax) tested against each line.
    pub pattern: String,
    /// Invert the match.
    #[serde(default)]
    pub negate: bool,
    /// `previous` or `next`.
    pub what: What,
    /// Most lines in one event (default 500).
    #[serde(default = "crate::defaults::count::<500>")]
    pub max_lines: Positive<usize>,
    /// Most bytes in one event (default 10MiB).
    #[serde(default = "default_max_bytes")]
    pub max_bytes: ByteSize,
    /// Flush a pending event after this long without a new line (default 5s).
    #[serde(default = "default_timeout")]
    pub timeout: HumanDuration,
}

fn default_max_bytes() -> ByteSize {
    ByteSize(10 << 20)
}
fn default_timeout() -> HumanDuration {
    HumanDuration(Duration::from_secs(5))
}

/// Tag of an event flushed at `max_lines`.
pub const MAX_LINES_TAG: &str = "_multiline_max_lines";
/// Tag of an event flushed at `max_bytes`.
pub const MAX_BYTES_TAG: &str = "_multiline_max_bytes";
/// Tag of an event joined from several lines.
pub const MULTILINE_TAG: &str = "multiline";

/// The compiled rules.
#[derive(Debug)]
pub struct Joiner {
    re: Regex,
    negate: bool,
    what: What,
    max_lines: usize,
    max_bytes: usize,
    /// See [`MultilineConfig::timeout`].
    pub timeout: Duration,
}

/// A joined event ready to be emitted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Joined {
    /// The lines, joined by `\n`.
    pub text: String,
    /// Offset of its first byte.
    pub start: u64,
    /// Offset after its last line (including that line's newline).
    pub end: u64,
    /// Tags to add.
    pub tags: Vec<&'static str>,
}

/// The event being assembled.
#[derive(Debug)]
pub struct Pending {
    text: String,
    lines: usize,
    start: u64,
    end: u64,
    /// Tags carried by its lines (e.g. `_truncated`).
    tags: Vec<&'static str>,
    last: Instant,
}

impl Joiner {
    /// Compiles a config; the error names what is wrong with the pattern.
    pub fn new(c: &MultilineConfig) -> Result<Self, String> {
        let re = Regex::new(&c.pattern).map_err(|e| format!("invalid pattern: {e}"))?;
        Ok(Self {
            re,
            negate: c.negate,
            what: c.what,
            max_lines: c.max_lines.get(),
            max_bytes: (c.max_bytes.0 as usize).max(1),
            timeout: c.timeout.0,
        })
    }

    /// Feeds one line spanning `[start, end)` of the file; completed events
    /// are pushed to `out`.
    pub fn push(
        &self,
        st: &mut Option<Pending>,
        line: String,
        start: u64,
        end: u64,
        line_tags: &[&'static str],
        out: &mut Vec<Joined>,
    ) {
        let matched = self.re.is_match(&line) != self.negate;
        match self.what {
            What::Previous => {
                if !matched {
                    if let Some(p) = st.take() {
                        out.push(finish(p, None));
                    }
                }
                self.append(st, line, start, end, line_tags, out);
            }
            What::Next => {
                self.append(st, line, start, end, line_tags, out);
                if !matched {
                    if let Some(p) = st.take() {
                        out.push(finish(p, None));
                    }
                }
            }
        }
    }

    fn append(
        &self,
        st: &mut Option<Pending>,
        line: String,
        start: u64,
        end: u64,
        line_tags: &[&'static str],
        out: &mut Vec<Joined>,
    ) {
        let p = match st {
            Some(p) => {
                p.text.push('\n');
                p.text.push_str(&line);
                p.lines += 1;
                p.end = end;
                p.last = Instant::now();
                p
            }
            None => st.insert(Pending { text: line, lines: 1, start, end, tags: Vec::new(), last: Instant::now() }),
        };
        for t in line_tags {
            if !p.tags.contains(t) {
                p.tags.push(t);
            }
        }
        let limit = if p.lines >= self.max_lines {
            Some(MAX_LINES_TAG)
        } else if p.text.len() >= self.max_bytes {
            Some(MAX_BYTES_TAG)
        } else {
            None
        };
        if limit.is_some() {
            if let Some(p) = st.take() {
                out.push(finish(p, limit));
            }
        }
    }

    /// Whether the pending event waited longer than the timeout.
    pub fn expired(&self, st: &Option<Pending>, now: Instant) -> bool {
        st.as_ref().is_some_and(|p| now.duration_since(p.last) >= self.timeout)
    }

    /// Takes the pending event out (timeout, end of file).
    pub fn flush(&self, st: &mut Option<Pending>) -> Option<Joined> {
        st.take().map(|p| finish(p, None))
    }
}

fn finish(p: Pending, limit: Option<&'static str>) -> Joined {
    let mut tags = p.tags;
    if p.lines > 1 {
        tags.push(MULTILINE_TAG);
    }
    if let Some(t) = limit {
        tags.push(t);
    }
    Joined { text: p.text, start: p.start, end: p.end, tags }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn joiner(pattern: &str, negate: bool, what: What, max_lines: usize) -> Joiner {
        Joiner::new(&MultilineConfig {
            pattern: pattern.into(),
            negate,
            what,
            max_lines: Positive::new(max_lines).unwrap(),
            max_bytes: ByteSize(1 << 20),
            timeout: HumanDuration(Duration::from_millis(50)),
        })
        .unwrap()
    }

    /// Feeds `text` line by line and flushes at the end.
    fn run(j: &Joiner, text: &str) -> Vec<Joined> {
        let mut st = None;
        let mut out = Vec::new();
        let mut pos = 0u64;
        for line in text.split_inclusive('\n') {
            let end = pos + line.len() as u64;
            j.push(&mut st, line.trim_end_matches('\n').to_string(), pos, end, &[], &mut out);
            pos = end;
        }
        out.extend(j.flush(&mut st));
        out
    }

    const JAVA: &str = "2024-05-01 10:00:00 INFO started\n\
2024-05-01 10:00:01 ERROR request failed\n\
java.lang.IllegalStateException: boom\n\
\tat com.example.Service.handle(Service.java:42)\n\
\tat com.example.Server.run(Server.java:7)\n\
Caused by: java.io.IOException: disk full\n\
\tat com.example.Store.write(Store.java:99)\n\
\t... 2 more\n\
2024-05-01 10:00:02 INFO recovered\n";

    #[test]
    fn java_stack_trace_joins_onto_the_timestamped_line() {
        // Filebeat's documented Java recipe: lines not starting with a date
        // belong to the previous line.
        let j = joiner(r"^\d{4}-\d{2}-\d{2} ", true, What::Previous, 500);
        let out = run(&j, JAVA);
        assert_eq!(out.len(), 3);
        assert_eq!(out[0].text, "2024-05-01 10:00:00 INFO started");
        assert!(out[0].tags.is_empty());
        assert!(out[1].text.starts_with("2024-05-01 10:00:01 ERROR request failed\njava.lang.IllegalStateException"));
        assert!(out[1].text.ends_with("\tat com.example.Store.write(Store.java:99)\n\t... 2 more"));
        assert_eq!(out[1].text.lines().count(), 7);
        assert_eq!(out[1].tags, vec![MULTILINE_TAG]);
        assert_eq!(out[2].text, "2024-05-01 10:00:02 INFO recovered");
        // Offsets tile the input exactly.
        assert_eq!(out[0].start, 0);
        assert_eq!(out[0].end, out[1].start);
        assert_eq!(out[1].end, out[2].start);
        assert_eq!(out[2].end, JAVA.len() as u64);
    }

    #[test]
    fn logstash_stack_trace_recipe_gives_the_same_events() {
        // Logstash's recipe: indented and "Caused by" lines go to the previous.
        let j = joiner(r"^(\s|Caused by:|java\.)", false, What::Previous, 500);
        let out = run(&j, JAVA);
        assert_eq!(out.len(), 3);
        assert_eq!(out[1].text.lines().count(), 7);
    }

    #[test]
    fn what_next_joins_continuation_markers() {
        // Lines ending with a backslash continue on the next line.
        let j = joiner(r"\\$", false, What::Next, 500);
        let out = run(&j, "a \\\nb \\\nc\nd\ne \\\n");
        let texts: Vec<&str> = out.iter().map(|j| j.text.as_str()).collect();
        assert_eq!(texts, ["a \\\nb \\\nc", "d", "e \\"]);
    }

    #[test]
    fn max_lines_flushes_and_tags_without_dropping() {
        let j = joiner(r"^\s", false, What::Previous, 3);
        let out = run(&j, "head\n 1\n 2\n 3\n 4\nnext\n");
        let texts: Vec<&str> = out.iter().map(|j| j.text.as_str()).collect();
        assert_eq!(texts, ["head\n 1\n 2", " 3\n 4", "next"]);
        assert!(out[0].tags.contains(&MAX_LINES_TAG));
        assert!(!out[1].tags.contains(&MAX_LINES_TAG));
    }

    #[test]
    fn timeout_expires_the_pending_event() {
        let j = joiner(r"^\s", false, What::Previous, 500);
        let mut st = None;
        let mut out = Vec::new();
        j.push(&mut st, "head".into(), 0, 5, &[], &mut out);
        assert!(out.is_empty());
        assert!(!j.expired(&st, Instant::now()));
        assert!(j.expired(&st, Instant::now() + Duration::from_millis(60)));
        assert_eq!(j.flush(&mut st).unwrap().text, "head");
        assert!(j.flush(&mut st).is_none());
    }

    #[test]
    fn bad_pattern_is_a_clear_error() {
        let e = Joiner::new(&MultilineConfig {
            pattern: "(".into(),
            negate: false,
            what: What::Previous,
            max_lines: Positive::<usize>::of(1),
            max_bytes: ByteSize(1),
            timeout: HumanDuration(Duration::from_secs(1)),
        })
        .unwrap_err();
        assert!(e.starts_with("invalid pattern"), "{e}");
    }
}
