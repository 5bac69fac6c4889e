//! Evaluates a [`Query`] against an in-memory event (live tail), with the
//! meaning `docs/query-semantics.md` gives it, which the store's translation
//! to tantivy gives it too.
//!
//! - Free text (no field) searches `message`.
//! - `@group`, `@subgroup`, `@host`, `@source` are exact, case-sensitive
//!   keywords; `@timestamp` is the event time in nanoseconds.
//! - Every other field is a dotted path into the event's fields. Strings are
//!   analysed by [`tokenize`] (as tantivy's default tokenizer does), numbers
//!   compare as numbers, booleans as `true`/`false`; for an array any element
//!   may match.
//!
//! [`tokenize`] and [`timestamp_bound_ns`] are public so the store analyses
//! text and reads time bounds exactly as this matcher does.

use std::ops::Bound as StdBound;
use std::ops::RangeBounds;

use sluice_core::{Event, Value};

use crate::ast::{Bound, Literal, Query};
use crate::parser::parse_number;

/// Tokens of this many bytes or more are dropped (tantivy's
/// `RemoveLongFilter::limit(40)` keeps tokens shorter than the limit).
pub const MAX_TOKEN_BYTES: usize = 40;

/// Analyses text like the index does (tantivy's default tokenizer): splits on
/// every character that is not alphanumeric (Unicode), drops tokens of
/// [`MAX_TOKEN_BYTES`] bytes or more (measured before lower-casing), and
/// lower-cases the rest.
///
/// ```
/// let tokens: Vec<String> = sluice_query::matcher::tokenize("Failed password for ROOT from 10.0.0.1").collect();
/// assert_eq!(tokens, ["failed", "password", "for", "root", "from", "10", "0", "0", "1"]);
/// ```
pub fn tokenize(text: &str) -> impl Iterator<Item = String> + '_ {
    analyse(text).flatten()
}

/// Like [`tokenize`], but a dropped (too long) token leaves a `None` in its
/// position, as tantivy keeps the position of a removed token: a phrase does
/// not match across it.
fn analyse(text: &str) -> impl Iterator<Item = Option<String>> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|t| !t.is_empty())
        .map(|t| (t.len() < MAX_TOKEN_BYTES).then(|| t.to_lowercase()))
}

/// A time bound or value of `@timestamp` in nanoseconds since the epoch: a
/// number is epoch milliseconds; text is RFC 3339 (`2026-01-01T00:00:00Z`),
/// a date (`2026-01-01`, midnight UTC) or digits (epoch milliseconds).
/// `None` when it is none of those (the range then matches nothing).
pub fn timestamp_bound_ns(lit: &Literal) -> Option<i64> {
    match lit {
        Literal::Number(ms) => {
            let ns = (ms * 1_000_000.0).round();
            (ns.is_finite() && ns >= i64::MIN as f64 && ns <= i64::MAX as f64).then_some(ns as i64)
        }
        Literal::Text(s) => timestamp_text_ns(s),
    }
}

fn timestamp_text_ns(s: &str) -> Option<i64> {
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
        return s.parse::<i64>().ok().and_then(|ms| ms.checked_mul(1_000_000));
    }
    if let Ok(t) = chrono::DateTime::parse_from_rfc3339(s) {
        return t.timestamp_nanos_opt();
    }
    chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d")
        .ok()
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .and_then(|t| t.and_utc().timestamp_nanos_opt())
}

/// Whether `event` matches `query`, with the same meaning the store gives it.
pub fn matches(query: &Query, event: &Event) -> bool {
    match query {
        Query::All => true,
        Query::Term { field, value } | Query::Phrase { field, text: value } => match resolve(event, field.as_deref()) {
            Target::Keyword(k) => k == value,
            Target::Timestamp(ts) => timestamp_text_ns(value) == Some(ts),
            Target::Dynamic(values) => text_matches(&values, value),
        },
        Query::Wildcard { field, pattern } => match resolve(event, field.as_deref()) {
            Target::Keyword(k) => WildcardMatcher::new(pattern, false).matches(k),
            Target::Timestamp(_) => false,
            Target::Dynamic(values) => {
                let pat = WildcardMatcher::new(pattern, true);
                values.iter().any(|v| v.as_str().is_some_and(|s| pat.matches_a_token(s)))
            }
        },
        Query::Range { field, lower, upper } => match resolve(event, Some(field)) {
            Target::Keyword(k) => {
                let text = |l: &Literal| {
                    Some(match l {
                        Literal::Text(s) => s.clone(),
                        Literal::Number(n) => n.to_string(),
                    })
                };
                in_range(&k.to_string(), lower, upper, text)
            }
            Target::Timestamp(ts) => in_range(&ts, lower, upper, timestamp_bound_ns),
            Target::Dynamic(values) => {
                let num = |l: &Literal| match l {
                    Literal::Number(n) => Some(*n),
                    Literal::Text(s) => parse_number(s),
                };
                values.iter().any(|v| v.as_f64().is_some_and(|x| in_range(&x, lower, upper, num)))
            }
        },
        Query::Exists { field } => match resolve(event, Some(field)) {
            Target::Keyword(k) => !k.is_empty(),
            Target::Timestamp(_) => true,
            Target::Dynamic(values) => !values.is_empty(),
        },
        Query::And(items) => items.iter().all(|q| matches(q, event)),
        Query::Or(items) => items.iter().any(|q| matches(q, event)),
        Query::Not(inner) => !matches(inner, event),
    }
}

/// What a field name refers to in an event.
enum Target<'a> {
    /// `@group`, `@subgroup`, `@host`, `@source`.
    Keyword(&'a str),
    /// `@timestamp`, nanoseconds.
    Timestamp(i64),
    /// The non-null values at a dotted path, arrays flattened.
    Dynamic(Vec<&'a Value>),
}

fn resolve<'a>(event: &'a Event, field: Option<&str>) -> Target<'a> {
    let name = field.unwrap_or(sluice_core::event::MESSAGE);
    match name {
        "@group" => Target::Keyword(&event.identity.group),
        "@subgroup" => Target::Keyword(&event.identity.subgroup),
        "@host" => Target::Keyword(&event.identity.host),
        "@source" => Target::Keyword(&event.source),
        "@timestamp" => Target::Timestamp(event.timestamp),
        _ => {
            let mut out = Vec::new();
            let segments: Vec<&str> = name.split('.').collect();
            if let Some((first, rest)) = segments.split_first() {
                if let Some(v) = event.fields().get(*first) {
                    collect(v, rest, &mut out);
                }
            }
            // A key that itself holds dots (`{"http.status": 200}`) is the same field.
            if segments.len() > 1 {
                if let Some(v) = event.fields().get(name) {
                    collect(v, &[], &mut out);
                }
            }
            Target::Dynamic(out)
        }
    }
}

/// Pushes the non-null leaves of `v` under `path`; arrays are walked through.
fn collect<'a>(v: &'a Value, path: &[&str], out: &mut Vec<&'a Value>) {
    match v {
        Value::Array(items) => items.iter().for_each(|item| collect(item, path, out)),
        Value::Null => {}
        _ => match path.split_first() {
            None => out.push(v),
            Some((seg, rest)) => {
                if let Some(child) = v.as_object().and_then(|o| o.get(*seg)) {
                    collect(child, rest, out);
                }
            }
        },
    }
}

/// A term or phrase against analysed values: strings by token (a phrase of
/// the value's tokens), numbers numerically, booleans by `true`/`false`.
fn text_matches(values: &[&Value], text: &str) -> bool {
    if values.is_empty() {
        return false;
    }
    let m = TextMatcher::new(text);
    values.iter().any(|v| match v {
        Value::String(s) => m.matches_str(s),
        Value::Int(_) | Value::Float(_) => m.number().is_some_and(|n| v.as_f64() == Some(n)),
        Value::Bool(b) => m.boolean() == Some(*b),
        _ => false,
    })
}

/// A term or phrase on a dynamic field, compiled once: what it means for a
/// string, a number and a boolean value. The store evaluates it on the
/// distinct values of a column, this matcher on an event's values, so both
/// give a query the same meaning.
#[derive(Clone, Debug, PartialEq)]
pub struct TextMatcher {
    tokens: Vec<Option<String>>,
    number: Option<f64>,
    boolean: Option<bool>,
}

impl TextMatcher {
    /// Compiles the term or phrase `text`.
    pub fn new(text: &str) -> Self {
        let boolean = if text.eq_ignore_ascii_case("true") {
            Some(true)
        } else if text.eq_ignore_ascii_case("false") {
            Some(false)
        } else {
            None
        };
        Self { tokens: trim_none(analyse(text).collect()), number: parse_number(text), boolean }
    }

    /// Whether the analysed tokens of `s` hold the query's tokens at
    /// consecutive positions (never, when the query has no token).
    pub fn matches_str(&self, s: &str) -> bool {
        // ASCII text: tokens are the runs of ASCII letters and digits, so
        // they are compared in place, without allocating (the store runs
        // this on every distinct value of a column).
        if s.is_ascii() {
            if let [Some(one)] = self.tokens.as_slice() {
                return s
                    .split(|c: char| !c.is_ascii_alphanumeric())
                    .any(|t| t.len() == one.len() && t.eq_ignore_ascii_case(one));
            }
            if !self.tokens.iter().flatten().all(|t| contains_ignore_ascii_case(s, t)) {
                return false;
            }
        }
        phrase_in(&self.tokens, s)
    }

    /// Whether no string can match (the text analyses to no token).
    pub fn matches_no_str(&self) -> bool {
        self.tokens.is_empty()
    }

    /// The number a numeric value must equal, when the text is a number.
    pub fn number(&self) -> Option<f64> {
        self.number
    }

    /// The boolean a boolean value must equal, when the text is `true`/`false`.
    pub fn boolean(&self) -> Option<bool> {
        self.boolean
    }
}

/// A wildcard pattern (`*`, `?`, `\` escapes) compiled once.
#[derive(Debug, PartialEq)]
pub struct WildcardMatcher(Vec<Glob>);

impl WildcardMatcher {
    /// Compiles `pattern`; `lowercase` lower-cases its literal characters
    /// (for analysed fields, whose tokens are lower-case).
    pub fn new(pattern: &str, lowercase: bool) -> Self {
        Self(compile_glob(pattern, lowercase))
    }

    /// Whether the whole of `text` matches.
    pub fn matches(&self, text: &str) -> bool {
        glob(&self.0, text)
    }

    /// Whether any analysed token of `text` matches (analysed fields).
    pub fn matches_a_token(&self, text: &str) -> bool {
        tokenize(text).any(|t| glob(&self.0, &t))
    }
}

/// Whether `needle` (lower-case) occurs in ASCII `haystack`, ignoring case.
fn contains_ignore_ascii_case(haystack: &str, needle: &str) -> bool {
    let (h, n) = (haystack.as_bytes(), needle.as_bytes());
    n.is_empty() || h.windows(n.len()).any(|w| w.eq_ignore_ascii_case(n))
}

/// Drops leading and trailing removed tokens: they constrain nothing.
fn trim_none(mut tokens: Vec<Option<String>>) -> Vec<Option<String>> {
    while tokens.last().is_some_and(Option::is_none) {
        tokens.pop();
    }
    let lead = tokens.iter().take_while(|t| t.is_none()).count();
    tokens.drain(..lead);
    tokens
}

/// Whether the query tokens appear at consecutive positions of `text`'s
/// tokens (a removed query token matches any token at its position). No
/// tokens at all match nothing.
fn phrase_in(query: &[Option<String>], text: &str) -> bool {
    match query {
        [] => false,
        [Some(one)] => tokenize(text).any(|t| t == *one),
        _ => {
            let field: Vec<Option<String>> = analyse(text).collect();
            field.windows(query.len()).any(|w| {
                w.iter().zip(query).all(|(f, q)| match q {
                    None => true,
                    Some(q) => f.as_ref() == Some(q),
                })
            })
        }
    }
}

fn in_range<T: PartialOrd>(value: &T, lower: &Bound, upper: &Bound, convert: impl Fn(&Literal) -> Option<T>) -> bool {
    let conv = |b: &Bound| -> Option<StdBound<T>> {
        Some(match b {
            Bound::Inclusive(l) => StdBound::Included(convert(l)?),
            Bound::Exclusive(l) => StdBound::Excluded(convert(l)?),
            Bound::Unbounded => StdBound::Unbounded,
        })
    };
    match (conv(lower), conv(upper)) {
        (Some(lo), Some(hi)) => (lo, hi).contains(value),
        _ => false,
    }
}

/// One element of a compiled wildcard pattern.
#[derive(Debug, PartialEq)]
enum Glob {
    /// `*`: any run of characters.
    Star,
    /// `?`: exactly one character.
    One,
    /// A literal character.
    Char(char),
}

fn compile_glob(pattern: &str, lowercase: bool) -> Vec<Glob> {
    let mut out = Vec::with_capacity(pattern.len());
    let mut chars = pattern.chars();
    let push = |c: char, out: &mut Vec<Glob>| {
        if lowercase {
            out.extend(c.to_lowercase().map(Glob::Char));
        } else {
            out.push(Glob::Char(c));
        }
    };
    while let Some(c) = chars.next() {
        match c {
            '*' => {
                if out.last() != Some(&Glob::Star) {
                    out.push(Glob::Star);
                }
            }
            '?' => out.push(Glob::One),
            '\\' => push(chars.next().unwrap_or('\\'), &mut out),
            c => push(c, &mut out),
        }
    }
    out
}

/// Classic wildcard matching with single-star backtracking: linear in
/// practice, `O(pattern × text)` at worst.
fn glob(pattern: &[Glob], text: &str) -> bool {
    let text: Vec<char> = text.chars().collect();
    let (mut p, mut t) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        match pattern.get(p) {
            Some(Glob::Star) => {
                star = Some((p, t));
                p += 1;
            }
            Some(Glob::One) => {
                p += 1;
                t += 1;
            }
            Some(Glob::Char(c)) if *c == text[t] => {
                p += 1;
                t += 1;
            }
            _ => match star {
                Some((sp, st)) => {
                    p = sp + 1;
                    t = st + 1;
                    star = Some((sp, st + 1));
                }
                None => return false,
            },
        }
    }
    pattern[p..].iter().all(|g| *g == Glob::Star)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use sluice_core::{Identity, Object};

    use super::*;
    use crate::parse;

    fn q(s: &str) -> Query {
        parse(s).unwrap_or_else(|e| panic!("{s:?}: {e}"))
    }

    fn event_json(json: &str) -> Event {
        let fields = Value::from_json(json.as_bytes()).unwrap().into_object().unwrap();
        let mut e = Event::from_fields(fields);
        e.timestamp = 1_767_225_600_000_000_000; // 2026-01-01T00:00:00Z
        e.identity = Arc::new(Identity::new("acme", "prod", "web-01"));
        e.source = Arc::from("/var/log/nginx/access.log");
        e
    }

    fn sample() -> Event {
        event_json(
            r#"{"message":"Failed password for invalid user Admin from 10.0.0.1 port 22 ssh2",
                "http":{"status":404,"bytes":1.5e3,"method":"GET"},
                "flat.key":"Dotted Key","ok":true,"tags":["Alpha","beta gamma"],
                "users":[{"name":"ann"},{"name":"bob"}],"nothing":null,"count":0,
                "long":"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa tail"}"#,
        )
    }

    #[test]
    fn tokenizer_is_tantivys_default() {
        let toks: Vec<String> = tokenize("GET /api/v1/Users?id=42 HTTP/1.1 — naïve Ünïcode_x").collect();
        assert_eq!(toks, ["get", "api", "v1", "users", "id", "42", "http", "1", "1", "naïve", "ünïcode", "x"]);
        let exactly_40 = "a".repeat(40);
        let just_39 = "b".repeat(39);
        let toks: Vec<String> = tokenize(&format!("{exactly_40} {just_39}")).collect();
        assert_eq!(toks, [just_39]);
        assert_eq!(tokenize("").count(), 0);
        assert_eq!(tokenize("-- !! --").count(), 0);
    }

    #[test]
    fn text_matcher_ascii_shortcut_agrees_with_the_analyser() {
        let values = [
            "GET /api/v1/Users?id=42",
            "get",
            "forget it",
            "Failed password-for admin",
            "failedpassword",
            "naïve user",
            "NAIVE",
            "",
            "x aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa y",
        ];
        let queries =
            ["get", "GET", "users", "v1 users", "password for", "naïve", "naive", "id 42", "x y", "zzz", "--"];
        let mut hits = 0;
        for q in queries {
            let m = TextMatcher::new(q);
            let tokens = trim_none(analyse(q).collect());
            for v in values {
                let expected = phrase_in(&tokens, v);
                assert_eq!(m.matches_str(v), expected, "query {q:?} on {v:?}");
                hits += usize::from(expected);
            }
        }
        // get×2, GET×2, users, v1 users, password for, naïve, naive, id 42
        // ("x y" does not match across the removed 40-byte token).
        assert_eq!(hits, 10);
    }

    #[test]
    fn matches_on_a_structured_event() {
        let e = sample();
        let cases: &[(&str, bool)] = &[
            ("", true),
            ("*", true),
            ("NOT *", false),
            // Free text searches message, analysed.
            ("failed", true),
            ("FAILED", true),
            ("fail", false),
            ("admin", true),
            ("\"failed password\"", true),
            ("\"password failed\"", false),
            ("\"Failed   password-for\"", true),
            ("10.0.0.1", true),
            ("10.0.0.2", false),
            ("\"port 22\"", true),
            ("GET", false),
            ("message:admin", true),
            ("fail*", true),
            ("FAIL*", true),
            ("f?iled", true),
            ("*ssword", true),
            ("pass", false),
            ("10.0.*", false),
            // Dynamic fields.
            ("http.method:get", true),
            ("http.method:GET", true),
            ("http.status:404", true),
            ("http.status:404.0", true),
            ("http.status:\"404\"", true),
            ("http.status:405", false),
            ("http.status:>=400", true),
            ("http.status:[400 TO 404}", false),
            ("http.status:[400 TO 404]", true),
            ("http.status:{404 TO *]", false),
            ("http.status:[\"400\" TO \"500\"]", true),
            ("http.status:[a TO z]", false),
            ("http.bytes:1500", true),
            ("http.bytes:<1500.5", true),
            ("http.method:[a TO z]", false),
            ("http.status:4*", false),
            ("count:0", true),
            ("count:<0", false),
            ("ok:true", true),
            ("ok:TRUE", true),
            ("ok:false", false),
            ("ok:*", true),
            ("flat.key:dotted", true),
            ("flat.key:\"dotted key\"", true),
            ("tags:alpha", true),
            ("tags:gamma", true),
            ("tags:\"beta gamma\"", true),
            ("tags:\"alpha beta\"", false),
            ("users.name:bob", true),
            ("users.name:carl", false),
            ("users:*", true),
            ("_exists_:nothing", false),
            ("nothing:*", false),
            ("_exists_:missing", false),
            ("_exists_:http", true),
            ("_exists_:http.status", true),
            ("http:404", false),
            ("long:tail", true),
            ("long:\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa tail\"", true),
            ("long:a*", false),
            ("http.method:(get OR post)", true),
            ("http.method:(put OR post)", false),
            ("http.status:(>500 OR 404)", true),
            // Identity keywords: exact, case-sensitive.
            ("@group:acme", true),
            ("@group:ACME", false),
            ("@group:acm", false),
            ("@subgroup:prod", true),
            ("@host:web-01", true),
            ("@host:web", false),
            ("@host:\"web-01\"", true),
            ("@host:web-*", true),
            ("@host:WEB-*", false),
            ("@host:web-0?", true),
            ("@host:[web-00 TO web-02]", true),
            ("@host:{web-01 TO *]", false),
            ("@source:\"/var/log/nginx/access.log\"", true),
            ("@source:*access.log", true),
            ("_exists_:@host", true),
            // Timestamp.
            ("@timestamp:2026-01-01T00:00:00Z", true),
            ("@timestamp:\"2026-01-01T01:00:00+01:00\"", true),
            ("@timestamp:1767225600000", true),
            ("@timestamp:[2026-01-01 TO 2026-01-02}", true),
            ("@timestamp:{2026-01-01T00:00:00Z TO *]", false),
            ("@timestamp:>=1767225600000", true),
            ("@timestamp:>1767225600000", false),
            ("@timestamp:<2026-01-01T00:00:00.000000001Z", true),
            ("@timestamp:[yesterday TO *]", false),
            ("_exists_:@timestamp", true),
            // Boolean.
            ("failed AND password", true),
            ("failed AND accepted", false),
            ("failed OR accepted", true),
            ("accepted OR rejected", false),
            ("-accepted", true),
            ("NOT failed", false),
            ("failed -@host:web-01", false),
            ("(accepted OR failed) @group:acme http.status:>=400", true),
        ];
        for &(query, expected) in cases {
            assert_eq!(matches(&q(query), &e), expected, "{query:?}");
        }
    }

    #[test]
    fn constructed_asts() {
        let e = sample();
        assert!(matches(&Query::And(vec![]), &e));
        assert!(!matches(&Query::Or(vec![]), &e));
        let term_no_tokens = Query::Term { field: None, value: "--".into() };
        assert!(!matches(&term_no_tokens, &e));
        let empty_range = Query::Range {
            field: "http.status".into(),
            lower: Bound::Inclusive(Literal::Number(500.0)),
            upper: Bound::Inclusive(Literal::Number(400.0)),
        };
        assert!(!matches(&empty_range, &e));
        let no_message = event_json(r#"{"other":"failed"}"#);
        assert!(!matches(&q("failed"), &no_message));
        assert!(matches(&q("other:failed"), &no_message));
        let empty_identity = Event::from_message("x");
        assert!(!matches(&q("_exists_:@host"), &empty_identity));
        assert!(matches(&q("@host:\"\""), &empty_identity));
    }

    #[test]
    fn phrase_does_not_match_across_a_dropped_token() {
        let long = "x".repeat(45);
        let e = Event::from_message(format!("alpha {long} beta"));
        assert!(matches(&q("alpha beta"), &e));
        assert!(!matches(&q("\"alpha beta\""), &e));
        assert!(matches(&q(&format!("\"alpha {} beta\"", "y".repeat(50))), &e));
    }

    #[test]
    fn wildcards() {
        let g = |p: &str, t: &str| glob(&compile_glob(p, false), t);
        assert!(g("*", ""));
        assert!(g("a*b*c", "aXXbYYc"));
        assert!(!g("a*b*c", "aXXbYY"));
        assert!(g("a?c", "abc"));
        assert!(!g("a?c", "ac"));
        assert!(g("*é", "café"));
        assert!(g("a\\*", "a*"));
        assert!(!g("a\\*", "ab"));
        assert!(g("**a**", "bab"));
        assert!(!g(&"*a".repeat(20), &"a".repeat(19)));
    }

    proptest::proptest! {
        #[test]
        fn never_panics_on_parsed_queries(s in "[a-zA-Z0-9 :.*?\\[\\]{}()\"<>=@_-]{0,40}") {
            if let Ok(query) = parse(&s) {
                let _ = matches(&query, &sample());
            }
        }
    }

    /// A lab event: the `fields` in order, the time `ts` read with `format`
    /// (UTC), and the identity `lab` / `subgroup` / `host`.
    fn lab_event(ts: &str, format: &str, fields: Vec<(&str, Value)>, subgroup: &str, host: &str) -> Event {
        let mut object = Object::new();
        for (k, v) in fields {
            object.insert(k, v);
        }
        let mut e = Event::from_fields(object);
        e.timestamp =
            chrono::NaiveDateTime::parse_from_str(ts, format).unwrap().and_utc().timestamp_nanos_opt().unwrap();
        e.identity = Arc::new(Identity::new("lab", subgroup, host));
        e
    }

    /// An OpenSSH syslog line: `Dec 10 06:55:46 LabSZ sshd[24200]: message`.
    fn openssh_event(line: &str) -> Event {
        let (head, message) = line.split_once("]: ").unwrap();
        let mut parts = head.split_whitespace();
        let (mon, day, time, host, prog) = (
            parts.next().unwrap(),
            parts.next().unwrap(),
            parts.next().unwrap(),
            parts.next().unwrap(),
            parts.next().unwrap(),
        );
        let (program, pid) = prog.split_once('[').unwrap();
        let fields = vec![
            ("message", Value::from(message)),
            ("program", Value::from(program)),
            ("pid", Value::Int(pid.parse().unwrap())),
        ];
        let mut e = lab_event(&format!("2025 {mon} {day} {time}"), "%Y %b %d %H:%M:%S", fields, "ssh", host);
        e.source = Arc::from("/var/log/auth.log");
        e
    }

    /// An Apache error-log line: `[Sun Dec 04 04:47:44 2005] [notice] message`.
    fn apache_event(line: &str) -> Event {
        let (ts, rest) = line[1..].split_once("] [").unwrap();
        let (level, message) = rest.split_once("] ").unwrap();
        let fields = vec![("message", Value::from(message)), ("level", Value::from(level))];
        lab_event(ts, "%a %b %d %H:%M:%S %Y", fields, "web", "apache-1")
    }

    const OPENSSH: &str = include_str!("../tests/data/openssh_2k.txt");
    const APACHE: &str = include_str!("../tests/data/apache_500.txt");

    fn count(events: &[Event], query: &str) -> usize {
        let query = q(query);
        events.iter().filter(|e| matches(&query, e)).count()
    }

    /// Lower-cased words of a line, split on ASCII non-alphanumerics: the
    /// logs are ASCII, so this is an independent model of the analyser.
    fn words(s: &str) -> Vec<String> {
        s.split(|c: char| !c.is_ascii_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_ascii_lowercase).collect()
    }

    #[test]
    fn counts_on_openssh_2k() {
        let lines: Vec<&str> = OPENSSH.lines().collect();
        assert_eq!(lines.len(), 2000);
        let events: Vec<Event> = lines.iter().map(|l| openssh_event(l)).collect();
        let msgs: Vec<String> = events.iter().map(|e| e.message().unwrap().to_string()).collect();
        let has = |m: &str, w: &str| words(m).iter().any(|x| x == w);
        let plain = |f: &dyn Fn(&str) -> bool| msgs.iter().filter(|m| f(m)).count();

        // Expected counts verified with `grep -c` / a Python tokenizer on the
        // file, and again here with plain string logic.
        let cases: &[(&str, usize, usize)] = &[
            ("\"Failed password\"", 520, plain(&|m| m.to_lowercase().contains("failed password"))),
            ("Invalid AND user", 365, plain(&|m| has(m, "invalid") && has(m, "user"))),
            ("invalid user", 365, plain(&|m| has(m, "invalid") && has(m, "user"))),
            ("-sshd", 1360, plain(&|m| !has(m, "sshd"))),
            ("NOT \"Failed password\"", 1480, plain(&|m| !m.contains("Failed password"))),
            ("fail*", 1119, plain(&|m| words(m).iter().any(|w| w.starts_with("fail")))),
            (
                "\"Failed password\" AND (root OR admin)",
                414,
                plain(&|m| m.contains("Failed password") && (has(m, "root") || has(m, "admin"))),
            ),
            (
                "\"Received disconnect\" OR \"Connection closed\"",
                502,
                plain(&|m| m.contains("Received disconnect") || m.contains("Connection closed")),
            ),
            ("preauth -invalid", 505, plain(&|m| has(m, "preauth") && !has(m, "invalid"))),
            ("\"173.234.31.186\"", 10, plain(&|m| m.contains("173.234.31.186"))),
            ("program:sshd", 2000, 2000),
            ("@host:LabSZ", 2000, 2000),
            ("@host:labsz", 0, 0),
            ("_exists_:pid", 2000, 2000),
        ];
        for &(query, expected, independent) in cases {
            assert_eq!(independent, expected, "independent count of {query:?}");
            assert_eq!(count(&events, query), expected, "{query:?}");
        }

        let pid = |e: &Event| e.fields().get("pid").and_then(Value::as_i64).unwrap();
        let in_24k = events.iter().filter(|e| (24_000..25_000).contains(&pid(e))).count();
        assert_eq!(in_24k, 1229);
        assert_eq!(count(&events, "pid:[24000 TO 25000}"), 1229);
        assert_eq!(count(&events, "pid:>=25000"), 2000 - 1229);
        assert_eq!(count(&events, "pid:(<24000 OR >=25000)"), 2000 - 1229);

        // 07:00 to 08:00 on Dec 10 (the lines carry no year; 2025 here).
        let hour = events.iter().filter(|e| lines_hour(e) == (10, 7)).count();
        assert_eq!(hour, 169);
        assert_eq!(count(&events, "@timestamp:[2025-12-10T07:00:00Z TO 2025-12-10T08:00:00Z}"), 169);
        assert_eq!(count(&events, "@timestamp:[2025-12-10T07:00:00Z TO 2025-12-10T08:00:00Z]"), 169);
    }

    fn lines_hour(e: &Event) -> (u32, u32) {
        use chrono::{Datelike, Timelike};
        let t = chrono::DateTime::from_timestamp_nanos(e.timestamp);
        (t.day(), t.hour())
    }

    #[test]
    fn counts_on_apache_500() {
        let events: Vec<Event> = APACHE.lines().map(apache_event).collect();
        assert_eq!(events.len(), 500);
        let lines: Vec<&str> = APACHE.lines().collect();
        let grep = |f: &dyn Fn(&str) -> bool| lines.iter().filter(|l| f(l)).count();
        let cases: &[(&str, usize, usize)] = &[
            ("level:error", 137, grep(&|l| l.contains("[error]"))),
            ("level:notice", 363, grep(&|l| l.contains("[notice]"))),
            ("\"mod_jk child\" AND error", 136, grep(&|l| l.contains("mod_jk child") && l.contains("error state"))),
            ("jk2_init -level:error", 220, grep(&|l| l.contains("jk2_init") && !l.contains("[error]"))),
            ("\"scoreboard slot\"", 220, grep(&|l| l.contains("scoreboard slot"))),
            ("workerEnv*", 279, grep(&|l| l.contains("workerEnv"))),
            ("level:(notice OR error) AND child", 356, grep(&|l| words(l).iter().any(|w| w == "child"))),
            ("@timestamp:[2005-12-04T05:00:00Z TO 2005-12-04T06:00:00Z}", 50, grep(&|l| l.contains(" 05:"))),
        ];
        for &(query, expected, independent) in cases {
            assert_eq!(independent, expected, "independent count of {query:?}");
            assert_eq!(count(&events, query), expected, "{query:?}");
        }
    }
}
