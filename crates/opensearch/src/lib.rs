//! sluice-opensearch: OpenSearch as the store behind sluice's search API.
//!
//! [`OpenSearch`] implements [`sluice_query::SearchBackend`] over the
//! OpenSearch REST API (`_search`, `_mapping`, `_cat/shards`):
//!
//! - [`translate`]: sluice's query AST to the query DSL with the same meaning
//!   (`docs/query-semantics.md`), using the index mapping ([`schema`]) to
//!   know each field's type; a construct that cannot mean the same is a
//!   [`sluice_query::BackendError::BadRequest`] naming it.
//! - [`permissions`]: the principal's (group, subgroup, host) patterns as a
//!   filter that every request carries in `filter` context.
//! - [`search`], [`aggregate`], [`fields`], [`tail`]: the four trait methods.
//! - [`mapping`]: the index template for events as the `elasticsearch` sink
//!   writes them; the translation assumes it.
//! - [`client`] and [`config`]: endpoints (failover), auth, CA file.
//!
//! ADR 0086 records the choices (mapping, order tiebreaker, tail by
//! per-shard sequence numbers, exactness checks).

pub mod aggregate;
pub mod backend;
pub mod client;
pub mod config;
pub mod fields;
pub mod mapping;
pub mod permissions;
pub mod schema;
pub mod search;
pub mod tail;
pub mod translate;

pub use backend::OpenSearch;
pub use config::{Auth, OpenSearchConfig};
