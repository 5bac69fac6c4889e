//! Field paths: `a.b.c` or Logstash's `[a][b][c]`, parsed once at config time.

use std::fmt;

/// A parsed field path: a list of object keys from the root of the event's fields.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FieldPath {
    segments: Vec<String>,
}

/// A field path that could not be parsed.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("invalid field path {path:?}: {reason}")]
pub struct PathError {
    /// The path as written.
    pub path: String,
    /// What is wrong with it.
    pub reason: &'static str,
}

impl FieldPath {
    /// Parses `a.b`, `[a][b]` or a plain `a`. `@timestamp`-style names are plain keys.
    pub fn parse(s: &str) -> Result<Self, PathError> {
        let err = |reason| PathError { path: s.to_string(), reason };
        if s.is_empty() {
            return Err(err("empty path"));
        }
        let segments: Vec<String> = if s.starts_with('[') {
            let mut out = Vec::new();
            let mut rest = s;
            while !rest.is_empty() {
                let Some(inner) = rest.strip_prefix('[') else { return Err(err("expected '['")) };
                let Some(end) = inner.find(']') else { return Err(err("missing ']'")) };
                out.push(inner[..end].to_string());
                rest = &inner[end + 1..];
            }
            out
        } else {
            s.split('.').map(str::to_string).collect()
        };
        if segments.iter().any(String::is_empty) {
            return Err(err("empty segment"));
        }
        Ok(Self { segments })
    }

    /// A single top-level key (no splitting on dots).
    pub fn key(name: &str) -> Self {
        Self { segments: vec![name.to_string()] }
    }

    /// The keys from the root.
    pub fn segments(&self) -> &[String] {
        &self.segments
    }
}

impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.segments.join("."))
    }
}

impl<'de> serde::Deserialize<'de> for FieldPath {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        FieldPath::parse(&s).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_both_syntaxes() {
        assert_eq!(FieldPath::parse("a.b").unwrap().segments(), ["a", "b"]);
        assert_eq!(FieldPath::parse("[a][b.c]").unwrap().segments(), ["a", "b.c"]);
        assert_eq!(FieldPath::parse("@timestamp").unwrap().segments(), ["@timestamp"]);
        assert_eq!(FieldPath::parse("[a]b").unwrap_err().reason, "expected '['");
        assert_eq!(FieldPath::parse("a..b").unwrap_err().reason, "empty segment");
        assert_eq!(FieldPath::parse("").unwrap_err().reason, "empty path");
        assert_eq!(FieldPath::parse("[a").unwrap_err().reason, "missing ']'");
    }
}
