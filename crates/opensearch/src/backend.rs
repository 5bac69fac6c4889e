//! [`OpenSearch`]: the [`SearchBackend`] over one cluster's indices.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{json, Value};
use sluice_core::codec::format_timestamp;
use sluice_query::api::{Aggregate, AggregateResponse, FieldInfo, Search, SearchResponse};
use sluice_query::{BackendError, Principal, Query, SearchBackend, TailStream, TimeRange};

use crate::client::{Client, ClientError};
use crate::config::OpenSearchConfig;
use crate::schema::Schema;

/// The OpenSearch backend (cheap to clone).
#[derive(Clone)]
pub struct OpenSearch {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) client: Client,
    pub(crate) index: String,
    pub(crate) poll: Duration,
}

/// Query-string options of every search request: a pattern matching no
/// index (yet) answers nothing rather than 404.
pub(crate) const LENIENT: &str = "ignore_unavailable=true&allow_no_indices=true";

impl OpenSearch {
    /// A backend for `cfg` (validated first; reads the secret and CA files).
    pub fn new(cfg: &OpenSearchConfig) -> Result<Self, ClientError> {
        cfg.validate()?;
        let client = Client::new(cfg)?;
        Ok(Self {
            inner: Arc::new(Inner { client, index: cfg.index.clone(), poll: Duration::from_millis(cfg.tail_poll_ms) }),
        })
    }

    /// The HTTP client (to install the index template, for tests).
    pub fn client(&self) -> &Client {
        &self.inner.client
    }

    /// The index pattern searched.
    pub fn index(&self) -> &str {
        &self.inner.index
    }
}

impl Inner {
    /// The mapping of every index of the pattern.
    pub(crate) async fn schema(&self) -> Result<Schema, BackendError> {
        let m = self.client.get(&format!("/{}/_mapping?{LENIENT}", self.index)).await?;
        Ok(Schema::from_mapping(&m))
    }

    /// `POST /<pattern>/_search` with `body`.
    pub(crate) async fn search(&self, body: &Value) -> Result<Value, BackendError> {
        self.client.post(&format!("/{}/_search?{LENIENT}", self.index), body).await
    }
}

/// The request's time range as a filter on `@timestamp` (none when unbounded).
pub(crate) fn range_filter(r: &TimeRange) -> Vec<Value> {
    let mut b = serde_json::Map::new();
    if let Some(f) = r.from_ns {
        b.insert("gte".into(), json!(format_timestamp(f.max(0))));
    }
    if let Some(t) = r.to_ns {
        if t <= 0 {
            return vec![crate::permissions::match_none()];
        }
        b.insert("lt".into(), json!(format_timestamp(t)));
    }
    if b.is_empty() {
        Vec::new()
    } else {
        vec![json!({"range": {"@timestamp": Value::Object(b)}})]
    }
}

/// Reads a count out of an answer.
pub(crate) fn u64_at(v: &Value, pointer: &str) -> Result<u64, BackendError> {
    v.pointer(pointer)
        .and_then(Value::as_u64)
        .ok_or_else(|| BackendError::Internal(format!("OpenSearch answer lacks {pointer}")))
}

#[async_trait]
impl SearchBackend for OpenSearch {
    async fn search(&self, principal: &Principal, search: &Search) -> Result<SearchResponse, BackendError> {
        crate::search::search(&self.inner, principal, search).await
    }

    async fn aggregate(&self, principal: &Principal, agg: &Aggregate) -> Result<AggregateResponse, BackendError> {
        crate::aggregate::aggregate(&self.inner, principal, agg).await
    }

    async fn fields(&self, principal: &Principal, range: &TimeRange) -> Result<Vec<FieldInfo>, BackendError> {
        crate::fields::fields(&self.inner, principal, range).await
    }

    async fn tail(&self, principal: &Principal, query: &Query) -> Result<TailStream, BackendError> {
        crate::tail::tail(Arc::clone(&self.inner), principal.clone(), query.clone()).await
    }
}
