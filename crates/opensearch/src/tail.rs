//! `tail`: the live feed, by following each primary shard's sequence numbers.
//!
//! OpenSearch numbers the operations of every shard (`_seq_no`, rising).
//! At the start the tail notes each shard's highest number; then, every
//! `tail_poll_ms`, it asks each shard (`preference=_shards:N`) for the
//! matching events with a higher number, in number order, under the
//! principal's filter, and remembers the highest it saw. Shards of indices
//! created later (the next daily index) are followed from their first
//! event. Events are newly *indexed* ones whatever their `@timestamp`, as in
//! the embedded store. The stream ends when the receiver is dropped, or
//! when a poll fails to translate the query (logged).
//!
//! Limitation (ADR 0086): an event becomes visible at the shard's next
//! refresh; if two bulk requests index concurrently into one shard and a
//! refresh lands between their operations, a lower number can appear after
//! a higher one was delivered and is then missed.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{json, Value};
use sluice_query::{BackendError, Principal, Query, TailStream};

use crate::backend::Inner;
use crate::permissions::restricted;
use crate::search::hit_of;
use crate::translate::translate;

/// Events asked per shard and request.
const PAGE: usize = 1000;

/// The primary shards of the pattern's indices.
async fn shards(os: &Inner) -> Result<Vec<(String, u64)>, BackendError> {
    let r = os.client.get(&format!("/_cat/shards/{}?format=json&h=index,shard,prirep", os.index)).await?;
    Ok(r.as_array()
        .into_iter()
        .flatten()
        .filter(|s| s.get("prirep").and_then(Value::as_str) == Some("p"))
        .filter_map(|s| Some((s.get("index")?.as_str()?.to_string(), s.get("shard")?.as_str()?.parse().ok()?)))
        .collect())
}

/// Up to [`PAGE`] hits of one shard with `_seq_no` above `after`, matching `query`.
async fn after(
    os: &Inner,
    (index, shard): &(String, u64),
    query: &Value,
    after: i64,
) -> Result<Vec<Value>, BackendError> {
    let body = json!({
        "size": PAGE,
        "seq_no_primary_term": true,
        "query": {"bool": {"filter": [query, {"range": {"_seq_no": {"gt": after}}}]}},
        "sort": [{"_seq_no": "asc"}],
    });
    let r =
        os.client.post(&format!("/{index}/_search?preference=_shards:{shard}&ignore_unavailable=true"), &body).await?;
    Ok(r.pointer("/hits/hits").and_then(Value::as_array).cloned().unwrap_or_default())
}

fn seq_no(h: &Value) -> i64 {
    h.get("_seq_no").and_then(Value::as_i64).unwrap_or(-1)
}

/// See the module doc.
pub(crate) async fn tail(os: Arc<Inner>, principal: Principal, query: Query) -> Result<TailStream, BackendError> {
    let q = restricted(&principal, translate(&query, &os.schema().await?)?, Vec::new());
    let mut last: BTreeMap<(String, u64), i64> = BTreeMap::new();
    for s in shards(&os).await? {
        // The highest number so far, of any event (not only matching ones).
        let body = json!({"size": 1, "seq_no_primary_term": true, "sort": [{"_seq_no": "desc"}]});
        let r = os.client.post(&format!("/{}/_search?preference=_shards:{}", s.0, s.1), &body).await?;
        let max = r.pointer("/hits/hits/0").map(seq_no).unwrap_or(-1);
        last.insert(s, max);
    }
    let (tx, rx) = tokio::sync::mpsc::channel(1024);
    tokio::spawn(async move {
        let mut q = q;
        loop {
            tokio::select! {
                _ = tokio::time::sleep(os.poll) => {}
                _ = tx.closed() => return,
            }
            // A field the query names may have been mapped since the start.
            match os.schema().await.and_then(|s| translate(&query, &s)) {
                Ok(t) => q = restricted(&principal, t, Vec::new()),
                Err(e) => tracing::warn!(error = %e, "opensearch tail: keeping the previous translation"),
            }
            let current = match shards(&os).await {
                Ok(s) => s,
                Err(e) => {
                    tracing::warn!(error = %e, "opensearch tail: listing shards failed; retrying");
                    continue;
                }
            };
            for s in current {
                let mut from = *last.entry(s.clone()).or_insert(-1);
                loop {
                    let hits = match after(&os, &s, &q, from).await {
                        Ok(h) => h,
                        Err(e) => {
                            tracing::warn!(error = %e, index = %s.0, shard = s.1, "opensearch tail: poll failed; retrying");
                            break;
                        }
                    };
                    for h in &hits {
                        from = from.max(seq_no(h));
                        if tx.send(hit_of(h)).await.is_err() {
                            return;
                        }
                    }
                    last.insert(s.clone(), from);
                    if hits.len() < PAGE {
                        break;
                    }
                }
            }
        }
    });
    Ok(rx)
}
