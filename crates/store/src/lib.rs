//! sluice-store: the embedded indexed log store.
//!
//! Events are indexed into time partitions (one tantivy index per UTC day or
//! hour of event time) under one directory; see `docs/specs/store-format.md`
//! for the layout and durability contract and `docs/adr/0005-embedded-store-tantivy.md`
//! for why tantivy.
//!
//! - [`Store::open`]: one shared instance per path and process (the `store`
//!   sink writes it, the HTTP API searches it).
//! - [`Store::append`]: adds events; their [`sluice_core::AckToken`] is
//!   resolved after the commit that made them durable.
//! - [`sluice_query::SearchBackend`] for `Store`: search (newest or oldest
//!   first or by a field ([`sort`]), `search_after` cursors), aggregations, fields and live tail,
//!   always filtered by the caller's [`sluice_query::Principal`]; segment by
//!   segment ([`plan`]) with a result cache over committed segments
//!   ([`cache`]); [`mod@reference`] is the plain evaluation the tests compare with.
//! - No API updates or deletes single events; retention drops whole partitions.

pub mod aggs;
pub mod cache;
pub mod collect;
pub mod columns;
pub mod error;
pub mod fields;
pub mod inflight;
pub mod options;
pub mod partition;
pub mod plan;
pub mod reference;
pub mod render;
pub mod replay;
pub mod schema;
pub mod search;
pub mod sort;
pub mod store;
pub mod tail;
pub mod terms;
pub mod time_columns;
pub mod translate;

pub use error::StoreError;
pub use options::{PartitionSpan, StoreOptions, DEFAULT_COMMIT_EVENTS};
pub use store::{Counters, PartitionInfo, Store};
