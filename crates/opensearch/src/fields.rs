//! `fields`: the mapped fields that at least one event the principal may
//! read in the range has.
//!
//! Names come from the mapping; each is kept only if an `exists` filter
//! bucket, under the principal's filter and the range, counts an event — so
//! a field only another group's events have is never listed (the mapping
//! itself is shared by every group writing the index).

use std::collections::BTreeMap;

use serde_json::{json, Value};
use sluice_query::api::FieldInfo;
use sluice_query::{BackendError, Principal, TimeRange};

use crate::backend::{range_filter, Inner};
use crate::permissions::restricted;

/// See the module doc.
pub(crate) async fn fields(
    os: &Inner,
    principal: &Principal,
    range: &TimeRange,
) -> Result<Vec<FieldInfo>, BackendError> {
    let schema = os.schema().await?;
    let leaves: Vec<(&str, Vec<_>)> = schema
        .leaves()
        .map(|(name, kinds)| (name, kinds.iter().filter_map(|k| k.field_type()).collect::<Vec<_>>()))
        .filter(|(_, types)| !types.is_empty())
        .collect();
    if leaves.is_empty() {
        return Ok(Vec::new());
    }
    let filters: serde_json::Map<String, Value> =
        leaves.iter().enumerate().map(|(i, (name, _))| (format!("f{i}"), json!({"exists": {"field": name}}))).collect();
    let body = json!({
        "size": 0,
        "query": restricted(principal, json!({"match_all": {}}), range_filter(range)),
        "aggs": {"present": {"filters": {"filters": filters}}}
    });
    let r = os.search(&body).await?;
    let buckets = r.pointer("/aggregations/present/buckets").and_then(Value::as_object);
    let mut out = BTreeMap::new();
    for (i, (name, types)) in leaves.into_iter().enumerate() {
        let n = buckets.and_then(|b| b.get(&format!("f{i}"))).and_then(|b| b.get("doc_count")).and_then(Value::as_u64);
        if n.unwrap_or(0) > 0 {
            out.insert(name.to_string(), types);
        }
    }
    Ok(out.into_iter().map(|(name, types)| FieldInfo { name, types }).collect())
}
