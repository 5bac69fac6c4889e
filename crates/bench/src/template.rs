//! Event templates and the cheap renderer behind them.
//!
//! Every generated event carries the run id and its sequence number, so the
//! receiving side can count lost and duplicated events exactly
//! ([`crate::extract`] finds them again in whatever a pipeline made of the
//! event). The generator shares its machine with what it measures, so
//! rendering must cost next to nothing: each template is compiled once into
//! a few *variants* (pre-rendered byte strings with the sequence number's
//! digit positions recorded); rendering event `seq` copies its variant and
//! patches the digits in place. A variant is re-rendered only when the
//! number of digits changes (at 10, 100, 1000, …). No `write!`, no
//! allocation per event.

/// What to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Template {
    /// The thesis's 395-byte JSON event (`testdata/thesis/event.json`) with
    /// `lognumber`/`logcount` set to the sequence number and `run`/`seq` fields.
    Thesis,
    /// Apache combined log lines (64 variants of client, status, size, time).
    Apache,
    /// RFC 5424 syslog lines with `run`/`seq` in structured data and message.
    Syslog5424,
    /// RFC 3164 syslog lines.
    Syslog3164,
    /// Lines replayed from a file (cycled), each with ` seq=N run=R` appended.
    Lines(Vec<String>),
}

impl Template {
    /// Parses `thesis`, `apache`, `syslog5424`, `syslog3164` or `file:PATH`.
    pub fn parse(s: &str) -> Result<Self, String> {
        Ok(match s {
            "thesis" => Self::Thesis,
            "apache" => Self::Apache,
            "syslog5424" => Self::Syslog5424,
            "syslog3164" => Self::Syslog3164,
            t => match t.strip_prefix("file:") {
                Some(p) => {
                    let text = std::fs::read_to_string(p).map_err(|e| format!("template file {p}: {e}"))?;
                    let lines: Vec<String> =
                        text.lines().filter(|l| !l.trim().is_empty()).map(str::to_string).collect();
                    if lines.is_empty() {
                        return Err(format!("template file {p}: no lines"));
                    }
                    Self::Lines(lines)
                }
                None => {
                    return Err(format!(
                        "unknown template {t:?}: expected thesis, apache, syslog5424, syslog3164 or file:PATH"
                    ))
                }
            },
        })
    }

    /// Whether events of this template are JSON objects as rendered.
    pub fn is_json(&self) -> bool {
        matches!(self, Self::Thesis)
    }

    /// A short name for reports.
    pub fn name(&self) -> String {
        match self {
            Self::Thesis => "thesis".into(),
            Self::Apache => "apache".into(),
            Self::Syslog5424 => "syslog5424".into(),
            Self::Syslog3164 => "syslog3164".into(),
            Self::Lines(l) => format!("lines({})", l.len()),
        }
    }
}

/// How rendered events are shaped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// As the template renders them (a JSON object for `thesis`, a line otherwise).
    Native,
    /// Always a JSON object: non-JSON lines become `{"message":"<line>"}`
    /// (for outputs that need JSON documents: `_bulk`, the agent protocol).
    Json,
}

const THESIS: &str = include_str!("../../../testdata/thesis/event.json");

/// The largest number of lines a `Lines` template keeps as variants.
const MAX_LINE_VARIANTS: usize = 100_000;

/// One piece of a variant: literal bytes or the sequence number.
#[derive(Debug, Clone)]
enum Piece {
    Lit(Vec<u8>),
    Seq,
}

/// A pre-rendered event with the positions of its sequence digits.
#[derive(Debug, Clone)]
struct Variant {
    pieces: Vec<Piece>,
    bytes: Vec<u8>,
    slots: Vec<usize>,
    digits: usize,
}

impl Variant {
    fn new(pieces: Vec<Piece>) -> Self {
        let mut v = Self { pieces, bytes: Vec::new(), slots: Vec::new(), digits: 0 };
        v.layout(1);
        v
    }

    /// Lays the variant out for sequence numbers of `digits` digits.
    fn layout(&mut self, digits: usize) {
        self.bytes.clear();
        self.slots.clear();
        for p in &self.pieces {
            match p {
                Piece::Lit(b) => self.bytes.extend_from_slice(b),
                Piece::Seq => {
                    self.slots.push(self.bytes.len());
                    self.bytes.resize(self.bytes.len() + digits, b'0');
                }
            }
        }
        self.digits = digits;
    }
}

/// Renders events of one template for one run; see the module docs.
#[derive(Debug, Clone)]
pub struct Renderer {
    variants: Vec<Variant>,
    json: bool,
}

/// Number of decimal digits of `n`.
pub fn digits(mut n: u64) -> usize {
    let mut d = 1;
    while n >= 10 {
        n /= 10;
        d += 1;
    }
    d
}

/// Writes `n` as exactly `out.len()` decimal digits (the caller sized it).
fn put_digits(mut n: u64, out: &mut [u8]) {
    for b in out.iter_mut().rev() {
        *b = b'0' + (n % 10) as u8;
        n /= 10;
    }
}

/// Appends `s` JSON-escaped (without quotes) to `out`.
fn json_escape(s: &str, out: &mut Vec<u8>) {
    for c in s.chars() {
        match c {
            '"' => out.extend_from_slice(b"\\\""),
            '\\' => out.extend_from_slice(b"\\\\"),
            '\n' => out.extend_from_slice(b"\\n"),
            '\r' => out.extend_from_slice(b"\\r"),
            '\t' => out.extend_from_slice(b"\\t"),
            c if (c as u32) < 0x20 => out.extend_from_slice(format!("\\u{:04x}", c as u32).as_bytes()),
            c => {
                let mut b = [0u8; 4];
                out.extend_from_slice(c.encode_utf8(&mut b).as_bytes());
            }
        }
    }
}

/// Builds pieces from a line in which `{seq}` marks the sequence number.
fn pieces(line: &str) -> Vec<Piece> {
    let mut out = Vec::new();
    let mut rest = line;
    while let Some(i) = rest.find("{seq}") {
        out.push(Piece::Lit(rest.as_bytes()[..i].to_vec()));
        out.push(Piece::Seq);
        rest = &rest[i + 5..];
    }
    out.push(Piece::Lit(rest.as_bytes().to_vec()));
    out
}

/// Wraps a non-JSON line (with `{seq}` markers) as `{"message":"…"}`.
fn wrap_json(line: &str) -> Vec<Piece> {
    let mut out = Vec::new();
    let mut lit = b"{\"message\":\"".to_vec();
    let mut rest = line;
    while let Some(i) = rest.find("{seq}") {
        json_escape(&rest[..i], &mut lit);
        out.push(Piece::Lit(std::mem::take(&mut lit)));
        out.push(Piece::Seq);
        rest = &rest[i + 5..];
    }
    json_escape(rest, &mut lit);
    lit.extend_from_slice(b"\"}");
    out.push(Piece::Lit(lit));
    out
}

const MONTHS: [&str; 12] = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

impl Renderer {
    /// Compiles `template` for run `run_id`.
    pub fn new(template: &Template, run_id: &str, shape: Shape) -> Self {
        // Run ids are written verbatim into JSON strings and lines.
        let run: String = run_id.chars().filter(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_').collect();
        let lines: Vec<String> = match template {
            Template::Thesis => {
                let body = THESIS.trim_end().trim_end_matches('}');
                let body = body.replacen("lognumber 1\"", "lognumber {seq}\"", 1).replacen(
                    "\"logcount\":\"1\"",
                    "\"logcount\":\"{seq}\"",
                    1,
                );
                vec![format!("{body},\"run\":\"{run}\",\"seq\":{{seq}}}}")]
            }
            Template::Apache => (0..64u32)
                .map(|v| {
                    let status = [200, 200, 200, 304, 404, 500, 200, 301][(v % 8) as usize];
                    let method = ["GET", "GET", "POST", "GET"][(v % 4) as usize];
                    format!(
                        "10.{}.{}.{} - - [22/{}/2026:10:{:02}:{:02} +0000] \"{method} /shop/item/{}.html?run={run}&seq={{seq}} HTTP/1.1\" {status} {} \"http://example.com/start\" \"Mozilla/5.0 (X11; Linux x86_64) sluice-bench/{v}\"",
                        v % 7,
                        (v * 13) % 256,
                        (v * 29) % 256,
                        MONTHS[10],
                        v % 60,
                        (v * 7) % 60,
                        v * 37,
                        (v * 997) % 50_000 + 120
                    )
                })
                .collect(),
            Template::Syslog5424 => (0..16u32)
                .map(|v| {
                    format!(
                        "<165>1 2026-11-22T10:00:{:02}.000Z host{v} app {} ID47 [bench@32473 run=\"{run}\" seq=\"{{seq}}\"] event seq={{seq}} run={run}",
                        v * 3,
                        1000 + v
                    )
                })
                .collect(),
            Template::Syslog3164 => (0..16u32)
                .map(|v| format!("<34>Nov 22 10:00:{:02} host{v} app[{}]: run={run} seq={{seq}} event", v * 3, 1000 + v))
                .collect(),
            Template::Lines(lines) => lines
                .iter()
                .take(MAX_LINE_VARIANTS)
                .map(|l| format!("{} seq={{seq}} run={run}", l.replace("{seq}", "{ seq}")))
                .collect(),
        };
        let json = template.is_json() || shape == Shape::Json;
        let variants = lines
            .iter()
            .map(|l| Variant::new(if template.is_json() || shape == Shape::Native { pieces(l) } else { wrap_json(l) }))
            .collect();
        Self { variants, json }
    }

    /// Whether rendered events are JSON objects.
    pub fn is_json(&self) -> bool {
        self.json
    }

    /// Appends event `seq` to `out` (no newline).
    #[inline]
    pub fn render(&mut self, seq: u64, out: &mut Vec<u8>) {
        let n = self.variants.len() as u64;
        let v = &mut self.variants[(seq % n) as usize];
        let d = digits(seq);
        if d != v.digits {
            v.layout(d);
        }
        let at = out.len();
        out.extend_from_slice(&v.bytes);
        for &s in &v.slots {
            put_digits(seq, &mut out[at + s..at + s + d]);
        }
    }

    /// The length of event `seq` once rendered.
    pub fn len_of(&self, seq: u64) -> usize {
        let v = &self.variants[(seq % self.variants.len() as u64) as usize];
        v.bytes.len() - v.slots.len() * v.digits + v.slots.len() * digits(seq)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(t: &Template, shape: Shape, seq: u64) -> String {
        let mut r = Renderer::new(t, "r1", shape);
        let mut out = Vec::new();
        r.render(seq, &mut out);
        assert_eq!(out.len(), r.len_of(seq));
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn thesis_is_the_thesis_event_plus_run_and_seq() {
        let s = render(&Template::Thesis, Shape::Native, 42);
        assert!(
            s.starts_with("{\"message\":\"2016-05-18 10:44:30:045 INFO LogGenerator run This is lognumber 42\""),
            "{s}"
        );
        assert!(s.ends_with(",\"logcount\":\"42\",\"run\":\"r1\",\"seq\":42}"), "{s}");
        let v: serde_json::Value = serde_json::from_str(&s).unwrap();
        assert_eq!(v["seq"], 42);
        assert_eq!(v["run"], "r1");
        // 395 bytes for lognumber 1, as in the thesis, plus `,"run":"r1","seq":1`.
        assert_eq!(render(&Template::Thesis, Shape::Native, 1).len(), 394 + 19);
    }

    #[test]
    fn digits_are_patched_across_lengths_and_variants() {
        let mut r = Renderer::new(&Template::Apache, "r1", Shape::Native);
        for seq in [0u64, 9, 10, 99, 100, 65, 1, 123_456_789_012, 7] {
            let mut out = Vec::new();
            r.render(seq, &mut out);
            let s = String::from_utf8(out).unwrap();
            assert!(s.contains(&format!("run=r1&seq={seq} HTTP/1.1")), "{s}");
            assert_eq!(crate::extract::seq(s.as_bytes()), Some(seq));
        }
    }

    #[test]
    fn every_template_carries_run_and_seq_and_json_shape_parses() {
        let lines = Template::Lines(vec!["a \"quoted\" \\ line".into(), "second {seq}".into()]);
        for t in [Template::Thesis, Template::Apache, Template::Syslog5424, Template::Syslog3164, lines] {
            for seq in [0u64, 5, 1234] {
                let native = render(&t, Shape::Native, seq);
                assert_eq!(crate::extract::seq(native.as_bytes()), Some(seq), "{native}");
                assert_eq!(crate::extract::run(native.as_bytes()), Some(&b"r1"[..]), "{native}");
                let json = render(&t, Shape::Json, seq);
                let v: serde_json::Value = serde_json::from_str(&json).unwrap_or_else(|e| panic!("{json}: {e}"));
                assert!(v.is_object());
                assert_eq!(crate::extract::seq(json.as_bytes()), Some(seq), "{json}");
            }
        }
    }

    #[test]
    fn apache_lines_match_combined_log_format() {
        let s = render(&Template::Apache, Shape::Native, 77);
        let re = regex_lite(&s);
        assert!(re, "{s}");
    }

    /// A hand check of the combined format: ip - - [ts] "req" status bytes "ref" "ua".
    fn regex_lite(s: &str) -> bool {
        let parts: Vec<&str> = s.split('"').collect();
        parts.len() == 7
            && parts[0].contains(" - - [")
            && parts[0].ends_with("] ")
            && parts[2].trim().split(' ').count() == 2
    }

    #[test]
    fn unknown_templates_are_named_errors() {
        assert_eq!(
            Template::parse("nope").unwrap_err(),
            "unknown template \"nope\": expected thesis, apache, syslog5424, syslog3164 or file:PATH"
        );
        assert!(Template::parse("file:/nonexistent/x").unwrap_err().starts_with("template file /nonexistent/x: "));
    }
}
