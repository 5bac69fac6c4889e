//! The trait every search engine behind the API implements.
//!
//! Every method takes the caller's [`Principal`]; implementations AND the
//! principal's source patterns into the engine query themselves, so no caller
//! can forget it and there is no method that searches without one.

use async_trait::async_trait;

use crate::api::{Aggregate, AggregateResponse, FieldInfo, Hit, Search, SearchResponse};
use crate::ast::Query;
use crate::principal::Principal;
use crate::time::TimeRange;

/// New matching events for a live tail, in store order. Dropping it ends the tail.
pub type TailStream = tokio::sync::mpsc::Receiver<Hit>;

/// Why a backend call failed.
#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    /// The request cannot run as given (bad cursor, a range on a text field…): HTTP 400.
    #[error("{0}")]
    BadRequest(String),
    /// The engine failed: HTTP 500.
    #[error("search engine error: {0}")]
    Internal(String),
}

/// A store that answers searches.
#[async_trait]
pub trait SearchBackend: Send + Sync {
    /// A page of hits, newest (or, as the search asks, oldest) first, with the total count.
    async fn search(&self, principal: &Principal, search: &Search) -> Result<SearchResponse, BackendError>;

    /// Aggregations over the matching events.
    async fn aggregate(&self, principal: &Principal, agg: &Aggregate) -> Result<AggregateResponse, BackendError>;

    /// Field names and types of the events in `range` this principal may read
    /// (every such event, not a sample).
    async fn fields(&self, principal: &Principal, range: &TimeRange) -> Result<Vec<FieldInfo>, BackendError>;

    /// Subscribes to newly stored events matching `query` that `principal` may read.
    async fn tail(&self, principal: &Principal, query: &Query) -> Result<TailStream, BackendError>;

    /// The engine's own counters for `/_node/stats` and `/metrics`, as
    /// (Prometheus name, value): result cache hits and misses, commits…
    /// None by default.
    fn counters(&self) -> Vec<(&'static str, u64)> {
        Vec::new()
    }
}
