//! sluice-query: what a search *means*, independent of the engine that runs it.
//!
//! - [`ast`]: the parsed query ([`Query`]) of the Lucene/Kibana-style query
//!   language, produced by [`parse`], with byte positions for errors.
//! - [`principal`]: who is asking and which sources (group / subgroup / host
//!   patterns) they may read. Every backend call takes a [`Principal`]; there
//!   is no way to search without one.
//! - [`api`]: request and response types of `/api/v1/search`, `/aggregate`,
//!   `/fields` and `/tail`, shared by the HTTP layer and the backends.
//! - [`backend`]: the [`SearchBackend`] trait the embedded store implements
//!   (and an OpenSearch backend will), so the HTTP API never sees an engine.
//! - [`matcher`]: evaluates a [`Query`] against one in-memory
//!   [`sluice_core::Event`], for live tail (events are matched as they are
//!   stored, not re-read from the index).
//!
//! This crate depends only on `sluice-core`; the store and API depend on it.

pub mod api;
pub mod ast;
pub mod backend;
pub mod histogram;
pub mod matcher;
pub mod parser;
pub mod principal;
pub mod time;

pub use api::{
    AggregateRequest, AggregateResponse, Aggregation, AggregationResult, Bucket, FieldInfo, FieldType, FieldsRequest,
    Hit, Order, SearchRequest, SearchResponse, SortBy, Stats, TailRequest,
};
pub use ast::{Bound, Literal, Query};
pub use backend::{BackendError, SearchBackend, TailStream};
pub use parser::{parse, ParseError};
pub use principal::{Principal, SourcePattern};
pub use time::{parse_time, TimeError, TimeRange};
