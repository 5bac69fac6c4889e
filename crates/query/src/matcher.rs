//! Evaluates a [`Query`] against an in-memory event (live tail).
//! Placeholder: only [`Query::All`] matches until the full matcher lands.

use sluice_core::Event;

use crate::ast::Query;

/// Whether `event` matches `query`, with the same meaning the store gives it.
pub fn matches(query: &Query, event: &Event) -> bool {
    let _ = event;
    matches!(query, Query::All)
}
