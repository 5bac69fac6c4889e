//! The query language parser (placeholder until the full grammar lands:
//! only the empty query and `*` parse).

use crate::ast::Query;

/// A query that does not parse, with the byte offset where it went wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message} at position {position}")]
pub struct ParseError {
    /// What is wrong.
    pub message: String,
    /// Byte offset into the query string.
    pub position: usize,
}

/// Parses a query string.
pub fn parse(input: &str) -> Result<Query, ParseError> {
    let t = input.trim();
    if t.is_empty() || t == "*" {
        return Ok(Query::All);
    }
    Err(ParseError { message: "query language not implemented yet".into(), position: 0 })
}
