//! The pattern library: grok pattern name -> regex source.
//!
//! The whole logstash-patterns-core library (legacy and ECS v1 flavours) is
//! embedded at compile time with `include_str!`, so building a library never
//! touches the file system. Users can add their own patterns one at a time or
//! as the text of a Logstash patterns file.

use std::collections::HashMap;

use super::error::GrokError;
use super::pattern::{CompileOptions, GrokPattern};

/// Embeds a list of pattern files from `patterns/<dir>/` as `(file, text)`.
macro_rules! pattern_files {
    ($dir:literal: $($file:literal),* $(,)?) => {
        &[$(($file, include_str!(concat!("../../patterns/", $dir, "/", $file)))),*]
    };
}

/// logstash-patterns-core `patterns/legacy`, sorted by file name (later files win).
const LEGACY_FILES: &[(&str, &str)] = pattern_files!("legacy":
    "aws", "bacula", "bind", "bro", "exim", "firewalls", "grok-patterns", "haproxy",
    "httpd", "java", "junos", "linux-syslog", "maven", "mcollective",
    "mcollective-patterns", "mongodb", "nagios", "postgresql", "rails", "redis", "ruby",
    "squid",
);

/// logstash-patterns-core `patterns/ecs-v1`, sorted by file name (later files win).
const ECS_V1_FILES: &[(&str, &str)] = pattern_files!("ecs-v1":
    "aws", "bacula", "bind", "bro", "exim", "firewalls", "grok-patterns", "haproxy",
    "httpd", "java", "junos", "linux-syslog", "maven", "mcollective", "mongodb", "nagios",
    "postgresql", "rails", "redis", "ruby", "squid", "zeek",
);

/// A set of named grok patterns (`NAME -> regex with %{...} references`).
///
/// Cloning is cheap enough for configuration time (a few hundred strings).
#[derive(Debug, Clone, Default)]
pub struct GrokLibrary {
    patterns: HashMap<String, String>,
}

impl GrokLibrary {
    /// An empty library (no predefined patterns).
    pub fn new() -> Self {
        Self::default()
    }

    /// The logstash-patterns-core `legacy` patterns (`ecs_compatibility => disabled`).
    pub fn legacy() -> Self {
        Self::from_files(LEGACY_FILES)
    }

    /// The logstash-patterns-core `ecs-v1` patterns (`ecs_compatibility => v1`).
    pub fn ecs_v1() -> Self {
        Self::from_files(ECS_V1_FILES)
    }

    fn from_files(files: &[(&str, &str)]) -> Self {
        let mut lib = Self::new();
        for (_file, text) in files {
            // INVARIANT: the embedded files are checked by unit tests; a broken
            // line there is a build defect, so we ignore rather than panic.
            let _ = lib.add_patterns_text(text);
        }
        lib
    }

    /// Adds (or replaces) one pattern. `name` must be `[A-Za-z0-9_]+`.
    pub fn add_pattern(&mut self, name: &str, regex: &str) -> Result<(), GrokError> {
        if !is_valid_name(name) {
            return Err(GrokError::InvalidName(name.to_owned()));
        }
        self.patterns.insert(name.to_owned(), regex.to_owned());
        Ok(())
    }

    /// Parses the text of a Logstash patterns file and adds every pattern in
    /// it: one `NAME regex` per line, `#` comments and blank lines ignored.
    /// Returns how many patterns were added.
    pub fn add_patterns_text(&mut self, text: &str) -> Result<usize, GrokError> {
        let mut added = 0;
        for (i, line) in text.lines().enumerate() {
            let line = line.trim_start();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (name, regex) = match line.find(char::is_whitespace) {
                Some(at) => (&line[..at], line[at..].trim_start()),
                None => (line, ""),
            };
            if !is_valid_name(name) {
                return Err(GrokError::PatternsText { line: i + 1, reason: format!("invalid pattern name {name:?}") });
            }
            if regex.is_empty() {
                return Err(GrokError::PatternsText {
                    line: i + 1,
                    reason: format!("pattern {name} has no definition"),
                });
            }
            self.patterns.insert(name.to_owned(), regex.to_owned());
            added += 1;
        }
        Ok(added)
    }

    /// The regex source of a pattern, if defined.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.patterns.get(name).map(String::as_str)
    }

    /// All pattern names, in no particular order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.patterns.keys().map(String::as_str)
    }

    /// Number of patterns.
    pub fn len(&self) -> usize {
        self.patterns.len()
    }

    /// Whether the library has no patterns.
    pub fn is_empty(&self) -> bool {
        self.patterns.is_empty()
    }

    /// Compiles a grok expression such as `%{IP:client} %{WORD:verb}` with
    /// the default (Logstash) options.
    pub fn compile(&self, pattern: &str) -> Result<GrokPattern, GrokError> {
        GrokPattern::compile(self, pattern, &CompileOptions::default())
    }

    /// Compiles a grok expression with explicit options.
    pub fn compile_with(&self, pattern: &str, options: &CompileOptions) -> Result<GrokPattern, GrokError> {
        GrokPattern::compile(self, pattern, options)
    }
}

/// Pattern names: `[A-Za-z0-9_]+` (what `%{...}` can reference).
pub(crate) fn is_valid_name(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_files_parse_completely() {
        for (file, text) in LEGACY_FILES.iter().chain(ECS_V1_FILES) {
            let mut lib = GrokLibrary::new();
            let added = lib.add_patterns_text(text).unwrap();
            let lines = text.lines().filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#')).count();
            assert_eq!(added, lines, "{file}");
        }
        assert!(GrokLibrary::legacy().get("COMBINEDAPACHELOG").is_some());
        assert!(GrokLibrary::ecs_v1().get("ZEEK_HTTP").is_some());
    }
}
