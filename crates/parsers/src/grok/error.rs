//! Errors produced while defining, compiling and running grok patterns.
//!
//! Kept in one enum so callers (the grok filter, config validation) can report
//! a single, precise message that names the offending pattern.

/// Everything that can go wrong in the grok engine.
#[derive(Debug, thiserror::Error)]
pub enum GrokError {
    /// `%{NAME}` refers to a pattern that is not in the library.
    #[error("grok pattern %{{{name}}} is not defined (referenced from {context})")]
    UndefinedPattern {
        /// The missing pattern name.
        name: String,
        /// Where it was referenced: the pattern chain, outermost first.
        context: String,
    },
    /// A pattern (directly or indirectly) references itself.
    #[error("grok pattern %{{{name}}} is recursive: {chain}")]
    RecursivePattern {
        /// The pattern that closes the cycle.
        name: String,
        /// The cycle, e.g. `A -> B -> A`.
        chain: String,
    },
    /// Expansion produced too much text (a pathological but acyclic library).
    #[error("grok pattern {pattern:?} expands to more than {limit} bytes")]
    TooLarge {
        /// The pattern being compiled.
        pattern: String,
        /// The size limit in bytes.
        limit: usize,
    },
    /// The expanded regex was rejected by PCRE2.
    #[error("invalid regex in grok pattern {pattern:?}: {source}")]
    InvalidRegex {
        /// The grok pattern as given by the user.
        pattern: String,
        /// The PCRE2 error (its offset refers to the expanded regex).
        source: pcre2::Error,
    },
    /// A pattern name is not made of `[A-Za-z0-9_]`.
    #[error("invalid grok pattern name {0:?}: use letters, digits and '_'")]
    InvalidName(String),
    /// A line of a patterns file could not be parsed.
    #[error("invalid patterns text at line {line}: {reason}")]
    PatternsText {
        /// 1-based line number.
        line: usize,
        /// What is wrong with it.
        reason: String,
    },
    /// A named group or field name is malformed (e.g. `[a]b`, `(?<>...)`).
    #[error("invalid field name {name:?} in grok pattern {pattern:?}")]
    InvalidField {
        /// The field name as written.
        name: String,
        /// The pattern containing it.
        pattern: String,
    },
    /// A Ruby regex construct with no PCRE2 translation.
    #[error("unsupported regex construct in grok pattern {pattern:?}: {what}")]
    Unsupported {
        /// The construct.
        what: &'static str,
        /// The pattern containing it.
        pattern: String,
    },
    /// PCRE2 gave up while matching (match limit, JIT stack limit, ...).
    #[error("grok match failed: {0}")]
    Match(#[source] pcre2::Error),
}
