//! The target index of each document, rendered from the `index` setting:
//! literal text, `%{@group}` / `%{@subgroup}` / `%{@host}` / `%{@source}`
//! (the event's identity and source), `%{field}` (any field, either path
//! syntax) and the event's UTC date `%Y` (4 digits), `%m`, `%d`, `%H`
//! (2 digits). The default `sluice-%{@group}-%Y.%m.%d` gives one index per
//! group and day (docs/specs/opensearch-index.md).
//!
//! Index names have rules (lowercase; no `\ / * ? " < > | , # :` or space;
//! at most 255 bytes), so each substituted value is lowercased, every byte
//! outside `a-z 0-9 _ - .` becomes `_`, it is cut to 64 bytes, and an empty
//! or missing value renders as `none`. The literal text is checked once
//! when the config is built.

use chrono::{DateTime, Datelike, Timelike};
use sluice_core::path::FieldPath;
use sluice_core::Event;

/// Longest substituted value, in bytes.
const MAX_PART: usize = 64;
/// What a missing or empty value renders as.
const MISSING: &str = "none";

#[derive(Debug, Clone)]
enum Part {
    Lit(String),
    Group,
    Subgroup,
    Host,
    Source,
    Field(FieldPath),
    Year,
    Month,
    Day,
    Hour,
}

/// A parsed `index` setting.
#[derive(Debug, Clone)]
pub(super) struct IndexName {
    parts: Vec<Part>,
}

impl IndexName {
    /// Parses `text`; errors say what is wrong.
    pub(super) fn parse(text: &str) -> Result<Self, String> {
        if text.is_empty() {
            return Err("must not be empty".into());
        }
        let mut parts = Vec::new();
        let mut lit = String::new();
        let mut rest = text;
        while let Some(i) = rest.find('%') {
            lit.push_str(&rest[..i]);
            let after = &rest[i + 1..];
            let (part, used) = match after.as_bytes().first() {
                Some(b'{') => {
                    let end = after.find('}').ok_or_else(|| format!("unclosed %{{ in {text:?}"))?;
                    let name = &after[1..end];
                    let part = match name {
                        "@group" => Part::Group,
                        "@subgroup" => Part::Subgroup,
                        "@host" => Part::Host,
                        "@source" => Part::Source,
                        _ => Part::Field(FieldPath::parse(name).map_err(|e| format!("%{{{name}}}: {e}"))?),
                    };
                    (part, end + 1)
                }
                Some(b'Y') => (Part::Year, 1),
                Some(b'm') => (Part::Month, 1),
                Some(b'd') => (Part::Day, 1),
                Some(b'H') => (Part::Hour, 1),
                _ => return Err(format!("unknown % sequence in {text:?}: use %{{field}}, %Y, %m, %d or %H")),
            };
            if !lit.is_empty() {
                check_literal(&lit)?;
                parts.push(Part::Lit(std::mem::take(&mut lit)));
            }
            parts.push(part);
            rest = &after[used..];
        }
        lit.push_str(rest);
        if !lit.is_empty() {
            check_literal(&lit)?;
            parts.push(Part::Lit(lit));
        }
        if let Some(Part::Lit(first)) = parts.first() {
            if first.starts_with(['_', '-', '+', '.']) {
                return Err("an index name must not start with _, -, + or .".into());
            }
        }
        Ok(Self { parts })
    }

    /// The literal text before the first substitution (`sluice-` for the
    /// default): the index template's pattern is this followed by `*`.
    pub(super) fn prefix(&self) -> &str {
        match self.parts.first() {
            Some(Part::Lit(s)) => s,
            _ => "",
        }
    }

    /// The index for `event`.
    pub(super) fn render(&self, event: &Event) -> String {
        let mut out = String::with_capacity(48);
        let date = DateTime::from_timestamp_nanos(event.timestamp);
        for p in &self.parts {
            match p {
                Part::Lit(s) => out.push_str(s),
                Part::Group => push_clean(&mut out, &event.identity.group),
                Part::Subgroup => push_clean(&mut out, &event.identity.subgroup),
                Part::Host => push_clean(&mut out, &event.identity.host),
                Part::Source => push_clean(&mut out, &event.source),
                Part::Field(path) => match event.get(path) {
                    Some(v) => match v.as_str() {
                        Some(s) => push_clean(&mut out, s),
                        None => push_clean(&mut out, &v.to_json()),
                    },
                    None => out.push_str(MISSING),
                },
                Part::Year => out.push_str(&format!("{:04}", date.year())),
                Part::Month => out.push_str(&format!("{:02}", date.month())),
                Part::Day => out.push_str(&format!("{:02}", date.day())),
                Part::Hour => out.push_str(&format!("{:02}", date.hour())),
            }
        }
        out
    }
}

fn check_literal(lit: &str) -> Result<(), String> {
    match lit.chars().find(|c| !matches!(c, 'a'..='z' | '0'..='9' | '_' | '-' | '.' | '+')) {
        Some(c) => Err(format!("{c:?} is not allowed in an index name (lowercase a-z, 0-9, _ - . + only)")),
        None => Ok(()),
    }
}

/// Appends `value` made safe for an index name (see the module docs).
fn push_clean(out: &mut String, value: &str) {
    if value.is_empty() {
        out.push_str(MISSING);
        return;
    }
    for b in value.bytes().take(MAX_PART) {
        let c = b.to_ascii_lowercase();
        out.push(if c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-' || c == b'.' { c as char } else { '_' });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_core::Identity;
    use std::sync::Arc;

    #[test]
    fn identity_and_date_render_into_a_valid_name() {
        let n = IndexName::parse("sluice-%{@group}-%Y.%m.%d").unwrap();
        assert_eq!(n.prefix(), "sluice-");
        let mut e = Event::from_message("m");
        // 2026-03-04T23:59:59Z
        e.timestamp = 1_772_668_799_000_000_000;
        e.identity = Arc::new(Identity::new("Acme Corp/EU", "web", "h1"));
        assert_eq!(n.render(&e), "sluice-acme_corp_eu-2026.03.04");
        e.identity = Arc::new(Identity::default());
        assert_eq!(n.render(&e), "sluice-none-2026.03.04");
        let n = IndexName::parse("logs-%{team}-%{@host}-%H").unwrap();
        e.fields_mut().insert("team", sluice_core::Value::from("Ops"));
        assert_eq!(n.render(&e), "logs-ops-none-23");
        let long = "x".repeat(300);
        e.identity = Arc::new(Identity::new("g", "s", long));
        assert_eq!(n.render(&e).len(), "logs-ops--23".len() + 64);
    }

    #[test]
    fn bad_settings_are_refused() {
        assert!(IndexName::parse("").is_err());
        assert!(IndexName::parse("Logs").unwrap_err().contains("'L' is not allowed"));
        assert!(IndexName::parse("logs-%q").unwrap_err().contains("unknown % sequence"));
        assert!(IndexName::parse("logs-%{x").unwrap_err().contains("unclosed"));
        assert!(IndexName::parse("_logs").is_err());
        assert_eq!(IndexName::parse("%{@group}-x").unwrap().prefix(), "");
    }
}
