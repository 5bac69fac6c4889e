//! Several grok patterns tried in order (Logstash `match => { "message" =>
//! [p1, p2] }` with `break_on_match => true`): the first that matches wins.

use super::error::GrokError;
use super::library::GrokLibrary;
use super::pattern::{GrokMatch, GrokPattern};

/// An ordered list of compiled patterns.
#[derive(Debug, Default)]
pub struct GrokMulti {
    patterns: Vec<GrokPattern>,
}

impl GrokMulti {
    /// Compiles every pattern; fails on the first that does not compile.
    pub fn compile<S: AsRef<str>>(
        library: &GrokLibrary,
        patterns: impl IntoIterator<Item = S>,
    ) -> Result<Self, GrokError> {
        let patterns = patterns.into_iter().map(|p| library.compile(p.as_ref())).collect::<Result<_, _>>()?;
        Ok(Self { patterns })
    }

    /// Wraps already compiled patterns.
    pub fn from_patterns(patterns: Vec<GrokPattern>) -> Self {
        Self { patterns }
    }

    /// The patterns, in order.
    pub fn patterns(&self) -> &[GrokPattern] {
        &self.patterns
    }

    /// The first pattern that matches, with its index. A pattern that fails
    /// with a match error (match limit) is skipped like a non-match, but if
    /// nothing matches the first such error is returned.
    pub fn first_match<'a>(&'a self, input: &'a str) -> Result<Option<(usize, GrokMatch<'a>)>, GrokError> {
        let mut first_err = None;
        for (i, p) in self.patterns.iter().enumerate() {
            match p.matches(input) {
                Ok(Some(m)) => return Ok(Some((i, m))),
                Ok(None) => {}
                Err(e) => {
                    first_err.get_or_insert(e);
                }
            }
        }
        match first_err {
            Some(e) => Err(e),
            None => Ok(None),
        }
    }
}
