//! `key=value` extraction with the semantics of the Logstash `kv` filter:
//! `field_split` and `value_split` are sets of characters, values may be
//! quoted with `"` or `'` (or wrapped in `()`, `[]`, `<>` when
//! `include_brackets`), keys and values can be trimmed, filtered, transformed
//! and prefixed.
//!
//! Why: kv is the second most common extraction after grok; this version never
//! fails on input (unparseable fragments are skipped, as Logstash skips what its
//! scan regex does not match) and borrows keys and values from the input unless
//! an option (prefix, remove_char, transform, quote escapes) forces a copy.
//!
//! Differences from Logstash: no `field_split_pattern`/`value_split_pattern`
//! regexes, no `recursive`, no `default_keys` (the caller adds those), and the
//! result is an ordered list (duplicates kept in order) rather than fields
//! turned into arrays.

use std::borrow::Cow;

use thiserror::Error;

/// Case transformation for keys or values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transform {
    Lowercase,
    Uppercase,
    /// First character upper case, the rest lower case (Ruby `capitalize`).
    Capitalize,
}

/// Logstash `whitespace` option.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Whitespace {
    /// Spaces and tabs around `value_split` are ignored (`a = b`).
    #[default]
    Lenient,
    /// Whitespace around `value_split` is significant.
    Strict,
}

/// kv settings; `Default` matches the Logstash defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KvOptions {
    /// Characters that separate pairs. Default `" "`.
    pub field_split: String,
    /// Characters that separate key from value. Default `"="`.
    pub value_split: String,
    /// Treat `(...)`, `[...]`, `<...>` as value wrappers. Default true.
    pub include_brackets: bool,
    /// Characters trimmed from both ends of keys.
    pub trim_key: String,
    /// Characters trimmed from both ends of values.
    pub trim_value: String,
    /// Characters removed anywhere in keys.
    pub remove_char_key: String,
    /// Characters removed anywhere in values.
    pub remove_char_value: String,
    pub transform_key: Option<Transform>,
    pub transform_value: Option<Transform>,
    /// If non-empty, only these keys are kept (compared before `prefix`).
    pub include_keys: Vec<String>,
    /// These keys are dropped (compared before `prefix`).
    pub exclude_keys: Vec<String>,
    /// Prepended to every key.
    pub prefix: String,
    /// Keep repeated identical key/value pairs. Default true.
    pub allow_duplicate_values: bool,
    /// Keep pairs with an empty value. Default false.
    pub allow_empty_values: bool,
    pub whitespace: Whitespace,
}

impl Default for KvOptions {
    fn default() -> Self {
        KvOptions {
            field_split: " ".to_owned(),
            value_split: "=".to_owned(),
            include_brackets: true,
            trim_key: String::new(),
            trim_value: String::new(),
            remove_char_key: String::new(),
            remove_char_value: String::new(),
            transform_key: None,
            transform_value: None,
            include_keys: Vec::new(),
            exclude_keys: Vec::new(),
            prefix: String::new(),
            allow_duplicate_values: true,
            allow_empty_values: false,
            whitespace: Whitespace::Lenient,
        }
    }
}

/// Invalid kv configuration.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum KvError {
    #[error("field_split must not be empty")]
    EmptyFieldSplit,
    #[error("value_split must not be empty")]
    EmptyValueSplit,
    #[error("character {0:?} is in both field_split and value_split")]
    Overlap(char),
}

/// A compiled kv configuration.
#[derive(Debug, Clone)]
pub struct KvParser {
    opts: KvOptions,
}

/// Pairs in input order.
pub type Pairs<'a> = Vec<(Cow<'a, str>, Cow<'a, str>)>;

impl KvParser {
    /// Validates `opts`.
    pub fn new(opts: KvOptions) -> Result<Self, KvError> {
        if opts.field_split.is_empty() {
            return Err(KvError::EmptyFieldSplit);
        }
        if opts.value_split.is_empty() {
            return Err(KvError::EmptyValueSplit);
        }
        if let Some(c) = opts.field_split.chars().find(|c| opts.value_split.contains(*c)) {
            return Err(KvError::Overlap(c));
        }
        Ok(KvParser { opts })
    }

    fn is_field(&self, c: char) -> bool {
        self.opts.field_split.contains(c)
    }

    fn is_value_split(&self, c: char) -> bool {
        self.opts.value_split.contains(c)
    }

    fn lenient(&self) -> bool {
        self.opts.whitespace == Whitespace::Lenient
    }

    /// Extracts all pairs from `input`. Never fails: text that is not a pair
    /// is skipped.
    pub fn parse<'a>(&self, input: &'a str) -> Pairs<'a> {
        let mut out: Pairs<'a> = Vec::new();
        let b = input.as_bytes();
        let mut i = 0;
        while i < input.len() {
            // Skip separators.
            let Some(c) = input[i..].chars().next() else {
                break;
            };
            if self.is_field(c) {
                i += c.len_utf8();
                continue;
            }
            // Key: up to a field or value separator.
            let key_start = i;
            let mut j = i;
            for (k, ch) in input[i..].char_indices() {
                if self.is_field(ch) || self.is_value_split(ch) {
                    j = i + k;
                    break;
                }
                j = i + k + ch.len_utf8();
            }
            let mut key = &input[key_start..j];
            if self.lenient() {
                key = key.trim_end_matches([' ', '\t']);
            }
            // Value separator, possibly after whitespace.
            let mut v = j;
            if self.lenient() {
                while v < b.len() && (b[v] == b' ' || b[v] == b'\t') {
                    v += 1;
                }
            }
            let sep = input[v..].chars().next().filter(|&ch| self.is_value_split(ch));
            let Some(sep) = sep else {
                // Not a pair: move past this token.
                i = if j > i { j } else { i + c.len_utf8() };
                continue;
            };
            v += sep.len_utf8();
            if key.is_empty() {
                i = v;
                continue;
            }
            if self.lenient() {
                while v < b.len() && (b[v] == b' ' || b[v] == b'\t') {
                    v += 1;
                }
            }
            let (value, next) = self.value(input, v);
            i = next;
            self.emit(&mut out, key, value);
        }
        out
    }

    /// Reads a value starting at byte `v`; returns it and the position after.
    fn value<'a>(&self, input: &'a str, v: usize) -> (&'a str, usize) {
        let b = input.as_bytes();
        let close = match b.get(v) {
            Some(b'"') => Some(b'"'),
            Some(b'\'') => Some(b'\''),
            Some(b'(') if self.opts.include_brackets => Some(b')'),
            Some(b'[') if self.opts.include_brackets => Some(b']'),
            Some(b'<') if self.opts.include_brackets => Some(b'>'),
            _ => None,
        };
        if let Some(close) = close {
            let quote = close == b'"' || close == b'\'';
            let mut k = v + 1;
            while k < b.len() {
                if quote && b[k] == b'\\' {
                    k += 2;
                    continue;
                }
                if b[k] == close {
                    // Both ends are ASCII, so these are char boundaries.
                    return (&input[v + 1..k], k + 1);
                }
                k += 1;
            }
            // Unterminated: fall through and read it unquoted.
        }
        let mut end = input.len();
        for (k, ch) in input[v..].char_indices() {
            if self.is_field(ch) {
                end = v + k;
                break;
            }
        }
        (&input[v..end], end)
    }

    fn emit<'a>(&self, out: &mut Pairs<'a>, key: &'a str, value: &'a str) {
        let o = &self.opts;
        let value = trim_chars(value, &o.trim_value);
        if value.is_empty() && !o.allow_empty_values {
            return;
        }
        let key = trim_chars(key, &o.trim_key);
        let key = transform(remove_chars(key, &o.remove_char_key), o.transform_key);
        if key.is_empty() {
            return;
        }
        if !o.include_keys.is_empty() && !o.include_keys.iter().any(|k| *k == key) {
            return;
        }
        if o.exclude_keys.iter().any(|k| *k == key) {
            return;
        }
        let key = if o.prefix.is_empty() { key } else { Cow::Owned(format!("{}{}", o.prefix, key)) };
        let value = transform(remove_chars(value, &o.remove_char_value), o.transform_value);
        if !o.allow_duplicate_values && out.iter().any(|(k, v)| *k == key && *v == value) {
            return;
        }
        out.push((key, value));
    }
}

fn trim_chars<'a>(s: &'a str, chars: &str) -> &'a str {
    if chars.is_empty() {
        s
    } else {
        s.trim_matches(|c| chars.contains(c))
    }
}

fn remove_chars<'a>(s: &'a str, chars: &str) -> Cow<'a, str> {
    if chars.is_empty() || !s.contains(|c| chars.contains(c)) {
        Cow::Borrowed(s)
    } else {
        Cow::Owned(s.chars().filter(|c| !chars.contains(*c)).collect())
    }
}

fn transform(s: Cow<'_, str>, t: Option<Transform>) -> Cow<'_, str> {
    match t {
        None => s,
        Some(Transform::Lowercase) if !s.chars().any(char::is_uppercase) => s,
        Some(Transform::Lowercase) => Cow::Owned(s.to_lowercase()),
        Some(Transform::Uppercase) if !s.chars().any(char::is_lowercase) => s,
        Some(Transform::Uppercase) => Cow::Owned(s.to_uppercase()),
        Some(Transform::Capitalize) => {
            let mut chars = s.chars();
            match chars.next() {
                None => s,
                Some(first) => {
                    let mut out: String = first.to_uppercase().collect();
                    out.push_str(&chars.as_str().to_lowercase());
                    if out == *s {
                        s
                    } else {
                        Cow::Owned(out)
                    }
                }
            }
        }
    }
}
