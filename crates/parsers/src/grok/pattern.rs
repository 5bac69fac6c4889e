//! A compiled grok pattern and its matches.
//!
//! Compilation expands the grok expression once into a single PCRE2 regex
//! (JIT-compiled, DOTALL + MULTILINE like Ruby's `Regexp::MULTILINE`, with
//! `(?n)` so only named groups capture). Matching is an unanchored search, as
//! in Logstash.
//!
//! The regex is compiled twice: in UTF mode (so `.` and negated classes
//! consume whole characters and captures end on character boundaries) and in
//! byte mode. PCRE2 validates the whole subject on every UTF-mode match,
//! which costs about a quarter of the matching time; on pure-ASCII input
//! (checked much faster by `str::is_ascii`) both modes behave identically,
//! so ASCII lines use the byte-mode regex. A `GrokPattern` is `Send + Sync`; the per-match scratch space
//! (PCRE2 match data + JIT stack) lives in a small pool so that concurrent
//! callers never share it and single-threaded callers never allocate. The
//! pool is split in cache-line-aligned shards picked per thread, so two
//! pipeline workers matching the same pattern do not bounce one mutex's
//! cache line between cores twice per line.

use std::fmt;
use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use pcre2::bytes::{CaptureLocations, Regex, RegexBuilder};

use super::error::GrokError;
use super::expand::{expand, FieldSpec};
use super::library::GrokLibrary;

/// How many idle scratch blocks a pool shard keeps (one per concurrent caller).
const MAX_POOLED: usize = 16;

/// Pool shards per engine (threads beyond this share shards, which is
/// still correct, only contended).
const SHARDS: usize = 8;

/// One shard of an engine's scratch pool, alone on its cache line.
#[repr(align(64))]
#[derive(Default)]
struct Shard(Mutex<Vec<CaptureLocations>>);

/// This thread's shard index (assigned round-robin on first use).
fn shard_index() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static INDEX: usize = NEXT.fetch_add(1, Ordering::Relaxed) % SHARDS;
    }
    INDEX.with(|i| *i)
}

/// Type conversion requested by `%{NAME:field:int}` / `:float`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Conversion {
    /// Keep the captured text.
    None,
    /// Ruby `String#to_i`: leading integer, `0` if none.
    Int,
    /// Ruby `String#to_f`: leading float, `0.0` if none.
    Float,
}

/// Options for [`GrokLibrary::compile_with`].
#[derive(Debug, Clone)]
pub struct CompileOptions {
    /// JIT-compile the regex (falls back to the interpreter if unavailable).
    pub jit: bool,
    /// Maximum JIT stack per concurrent match, in bytes. Deeply nested
    /// backtracking on long inputs needs more than PCRE2's 32 KiB default;
    /// exceeding it is a [`GrokError::Match`], never a crash.
    pub jit_stack_size: usize,
}

impl Default for CompileOptions {
    fn default() -> Self {
        Self { jit: true, jit_stack_size: 4 << 20 }
    }
}

/// A value captured by a grok match.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Captured<'a> {
    /// The matched text.
    Str(&'a str),
    /// An `:int` capture.
    Int(i64),
    /// A `:float` capture.
    Float(f64),
}

impl Captured<'_> {
    /// The capture as a JSON value. Non-finite floats (`1e999`) become null.
    pub fn to_value(&self) -> sluice_core::Value {
        match *self {
            Captured::Str(s) => sluice_core::Value::from(s),
            Captured::Int(i) => sluice_core::Value::from(i),
            Captured::Float(f) => sluice_core::Value::new_f64(f).unwrap_or_default(),
        }
    }

    /// [`Captured::to_value`], with a string capture made a slice of `line`
    /// (the matched input, when it is a shared [`sluice_core::Text`]) rather
    /// than a copy: see [`sluice_core::Text::slice_of`].
    #[inline]
    pub fn to_value_in(&self, line: Option<&sluice_core::Text>) -> sluice_core::Value {
        match (*self, line) {
            (Captured::Str(s), Some(line)) => sluice_core::Value::String(line.slice_of(s)),
            _ => self.to_value(),
        }
    }
}

impl fmt::Display for Captured<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Captured::Str(s) => f.write_str(s),
            Captured::Int(i) => write!(f, "{i}"),
            Captured::Float(x) => write!(f, "{x}"),
        }
    }
}

/// A field a pattern captures into.
#[derive(Debug, Clone)]
pub struct GrokField {
    spec: FieldSpec,
    /// PCRE2 capture group index.
    group: usize,
}

impl GrokField {
    /// Dotted name: `http.request.method` for `[http][request][method]`.
    pub fn name(&self) -> &str {
        &self.spec.dotted
    }

    /// Path segments: `["http", "request", "method"]`. A plain name such as
    /// `clientip` (or `a.b`, which Logstash treats as one key) is one segment.
    pub fn path(&self) -> &[Box<str>] {
        &self.spec.path
    }

    /// The requested conversion.
    pub fn conversion(&self) -> Conversion {
        self.spec.conversion
    }
}

/// A compiled grok expression. Compile once, match many times, from any
/// number of threads.
pub struct GrokPattern {
    source: String,
    /// UTF mode: used for non-ASCII input.
    utf: Engine,
    /// Byte mode: used for ASCII input (`None` if it does not compile, e.g.
    /// `\x{100}`, which only UTF mode accepts).
    ascii: Option<Engine>,
    fields: Vec<GrokField>,
    /// The top-level keys, when every field is a plain top-level name and no
    /// name repeats: captures can then be appended without looking up each
    /// key (see `insert::insert_captures_with`).
    flat_keys: Option<Vec<sluice_core::Str>>,
}

/// One compiled regex and a pool of match scratch space for it.
struct Engine {
    regex: Regex,
    pool: [Shard; SHARDS],
}

impl Engine {
    fn new(source: &str, utf: bool, options: &CompileOptions) -> Result<Self, pcre2::Error> {
        let regex = RegexBuilder::new()
            .utf(utf)
            .dotall(true)
            .multi_line(true)
            .jit_if_available(options.jit)
            .max_jit_stack_size(Some(options.jit_stack_size))
            .build(source)?;
        Ok(Self { regex, pool: Default::default() })
    }

    fn take_locations(&self) -> CaptureLocations {
        let pooled = match self.pool[shard_index()].0.lock() {
            Ok(mut pool) => pool.pop(),
            Err(poisoned) => poisoned.into_inner().pop(),
        };
        pooled.unwrap_or_else(|| self.regex.capture_locations())
    }

    fn return_locations(&self, locs: CaptureLocations) {
        let mut pool = match self.pool[shard_index()].0.lock() {
            Ok(pool) => pool,
            Err(poisoned) => poisoned.into_inner(),
        };
        if pool.len() < MAX_POOLED {
            pool.push(locs);
        }
    }
}

impl fmt::Debug for GrokPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GrokPattern").field("source", &self.source).field("fields", &self.fields.len()).finish()
    }
}

impl GrokPattern {
    pub(crate) fn compile(library: &GrokLibrary, pattern: &str, options: &CompileOptions) -> Result<Self, GrokError> {
        let expanded = expand(library, pattern)?;
        // `(?n)`: plain `(...)` groups do not capture. Ruby does the same
        // as soon as a regex has named groups, and fewer captures are faster.
        let source = format!("(?n){}", expanded.regex);
        let utf = Engine::new(&source, true, options)
            .map_err(|source| GrokError::InvalidRegex { pattern: pattern.to_owned(), source })?;
        let ascii =
            Engine::new(&source, false, options).ok().filter(|a| a.regex.capture_names() == utf.regex.capture_names());
        let mut fields = Vec::with_capacity(expanded.fields.len());
        for (group, name) in utf.regex.capture_names().iter().enumerate() {
            let Some(name) = name else { continue };
            let spec =
                name.strip_prefix('g').and_then(|n| n.parse::<usize>().ok()).and_then(|n| expanded.fields.get(n));
            if let Some(spec) = spec {
                fields.push(GrokField { spec: spec.clone(), group });
            }
        }
        let mut flat_keys = Vec::with_capacity(fields.len());
        for f in &fields {
            match f.path() {
                [one] if !flat_keys.iter().any(|k: &sluice_core::Str| k.as_str() == &**one) => {
                    flat_keys.push(sluice_core::Str::new(&**one));
                }
                _ => {
                    flat_keys.clear();
                    break;
                }
            }
        }
        let flat_keys = (!flat_keys.is_empty() && flat_keys.len() == fields.len()).then_some(flat_keys);
        Ok(Self { source: pattern.to_owned(), utf, ascii, fields, flat_keys })
    }

    /// The top-level key of every field, in field order, when all fields are
    /// distinct top-level names (`None` otherwise).
    pub fn flat_keys(&self) -> Option<&[sluice_core::Str]> {
        self.flat_keys.as_deref()
    }

    /// The grok expression this was compiled from.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The expanded PCRE2 regex (group names are `g0`, `g1`, ...).
    pub fn regex_source(&self) -> &str {
        self.utf.regex.as_str()
    }

    /// The fields this pattern can capture, in pattern order. The same
    /// name can appear several times.
    pub fn fields(&self) -> &[GrokField] {
        &self.fields
    }

    /// Distinct field names (dotted), in pattern order.
    pub fn field_names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = Vec::with_capacity(self.fields.len());
        for f in &self.fields {
            if !names.contains(&f.name()) {
                names.push(f.name());
            }
        }
        names
    }

    /// Searches `input` (unanchored unless the pattern has anchors).
    /// `Ok(None)` if it does not match; `Err` if PCRE2 gave up (match limit,
    /// JIT stack), which callers should treat as a failed match.
    pub fn matches<'a>(&'a self, input: &'a str) -> Result<Option<GrokMatch<'a>>, GrokError> {
        let engine = match &self.ascii {
            Some(ascii) if input.is_ascii() => ascii,
            _ => &self.utf,
        };
        let mut locs = engine.take_locations();
        match engine.regex.captures_read(&mut locs, input.as_bytes()) {
            Ok(Some(_)) => Ok(Some(GrokMatch { pattern: self, engine, input, locs: Some(locs) })),
            Ok(None) => {
                engine.return_locations(locs);
                Ok(None)
            }
            Err(e) => {
                engine.return_locations(locs);
                Err(GrokError::Match(e))
            }
        }
    }

    /// Whether the pattern matches `input` (no captures extracted).
    pub fn is_match(&self, input: &str) -> Result<bool, GrokError> {
        Ok(self.matches(input)?.is_some())
    }
}

/// A successful match. Captures borrow from the input. Unset and empty
/// captures are skipped, as in Logstash.
pub struct GrokMatch<'a> {
    pattern: &'a GrokPattern,
    engine: &'a Engine,
    input: &'a str,
    /// Always `Some` until dropped (taken back into the pattern's pool).
    locs: Option<CaptureLocations>,
}

impl fmt::Debug for GrokMatch<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter().map(|(field, v)| (field.name(), v))).finish()
    }
}

impl Drop for GrokMatch<'_> {
    fn drop(&mut self) {
        if let Some(locs) = self.locs.take() {
            self.engine.return_locations(locs);
        }
    }
}

impl<'a> GrokMatch<'a> {
    /// The pattern that matched.
    pub fn pattern(&self) -> &'a GrokPattern {
        self.pattern
    }

    /// Byte range of the whole match in the input.
    pub fn range(&self) -> Range<usize> {
        self.group(0).unwrap_or(0..0)
    }

    /// The whole matched text.
    pub fn as_str(&self) -> &'a str {
        self.input.get(self.range()).unwrap_or("")
    }

    fn group(&self, i: usize) -> Option<Range<usize>> {
        let (s, e) = self.locs.as_ref()?.get(i)?;
        Some(s..e)
    }

    /// Raw text of a field's capture (before conversion), if set and non-empty.
    pub fn text(&self, field: &GrokField) -> Option<&'a str> {
        let r = self.group(field.group)?;
        if r.is_empty() {
            return None;
        }
        // Offsets are char boundaries: UTF mode, or ASCII-only input.
        self.input.get(r)
    }

    /// How many fields have a set, non-empty capture (what [`Self::iter`]
    /// yields), without converting any.
    pub fn count(&self) -> usize {
        self.pattern.fields.iter().filter(|f| self.group(f.group).is_some_and(|r| !r.is_empty())).count()
    }

    /// The converted value of a field's capture, if set and non-empty.
    pub fn value(&self, field: &GrokField) -> Option<Captured<'a>> {
        let text = self.text(field)?;
        Some(match field.conversion() {
            Conversion::None => Captured::Str(text),
            Conversion::Int => Captured::Int(ruby_to_i(text)),
            Conversion::Float => Captured::Float(ruby_to_f(text)),
        })
    }

    /// The first set capture of the field with this dotted name.
    pub fn get(&self, name: &str) -> Option<Captured<'a>> {
        self.pattern.fields.iter().filter(|f| f.name() == name).find_map(|f| self.value(f))
    }

    /// All set, non-empty captures in pattern order.
    pub fn iter(&self) -> impl Iterator<Item = (&'a GrokField, Captured<'a>)> + '_ {
        let fields: &'a [GrokField] = &self.pattern.fields;
        fields.iter().filter_map(|f| Some((f, self.value(f)?)))
    }
}

/// Ruby `String#to_i`: optional leading whitespace and sign, then digits
/// (single `_` between digits allowed); anything else stops. Saturates on
/// overflow (Ruby would produce a bignum).
pub(crate) fn ruby_to_i(text: &str) -> i64 {
    let s = text.trim_start();
    let (neg, digits) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let mut value: i64 = 0;
    let mut prev_digit = false;
    for b in digits.bytes() {
        match b {
            b'0'..=b'9' => {
                let d = i64::from(b - b'0');
                value = value.saturating_mul(10);
                value = if neg { value.saturating_sub(d) } else { value.saturating_add(d) };
                prev_digit = true;
            }
            b'_' if prev_digit => prev_digit = false,
            _ => break,
        }
    }
    value
}

/// Ruby `String#to_f`: the longest leading decimal float, `0.0` if none.
pub(crate) fn ruby_to_f(text: &str) -> f64 {
    let s = text.trim_start().as_bytes();
    let mut buf = String::with_capacity(s.len());
    let mut i = 0;
    if let Some(&c @ (b'-' | b'+')) = s.first() {
        buf.push(c as char);
        i += 1;
    }
    let digits = |i: &mut usize, buf: &mut String| {
        let start = buf.len();
        while *i < s.len() {
            match s[*i] {
                c @ b'0'..=b'9' => buf.push(c as char),
                b'_' if buf.len() > start && s.get(*i + 1).is_some_and(u8::is_ascii_digit) => {}
                _ => break,
            }
            *i += 1;
        }
        buf.len() > start
    };
    let int_part = digits(&mut i, &mut buf);
    let frac_part = s.get(i) == Some(&b'.') && s.get(i + 1).is_some_and(u8::is_ascii_digit);
    if frac_part {
        buf.push('.');
        i += 1;
        digits(&mut i, &mut buf);
    }
    if !int_part && !frac_part {
        return 0.0;
    }
    if matches!(s.get(i), Some(b'e' | b'E')) {
        let mut j = i + 1;
        let mut exp = String::from("e");
        if let Some(&c @ (b'-' | b'+')) = s.get(j) {
            exp.push(c as char);
            j += 1;
        }
        if digits(&mut j, &mut exp) {
            buf.push_str(&exp);
        }
    }
    buf.parse().unwrap_or(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn to_i() {
        assert_eq!(ruby_to_i("42"), 42);
        assert_eq!(ruby_to_i(" -17abc"), -17);
        assert_eq!(ruby_to_i("1_000"), 1000);
        assert_eq!(ruby_to_i("1.9"), 1);
        assert_eq!(ruby_to_i("-"), 0);
        assert_eq!(ruby_to_i("x1"), 0);
        assert_eq!(ruby_to_i("99999999999999999999"), i64::MAX);
    }

    #[test]
    fn to_f() {
        assert_eq!(ruby_to_f("0.000073"), 7.3e-5);
        assert_eq!(ruby_to_f("-1"), -1.0);
        assert_eq!(ruby_to_f("1e3x"), 1000.0);
        assert_eq!(ruby_to_f("2.5e"), 2.5);
        assert_eq!(ruby_to_f("5."), 5.0);
        assert_eq!(ruby_to_f(".5"), 0.5);
        assert_eq!(ruby_to_f("abc"), 0.0);
        assert_eq!(ruby_to_f("1_0.5"), 10.5);
    }
}
