//! `search`: a page of hits sorted by `@timestamp` then `_id`, paged with
//! `search_after`, with the exact total (`track_total_hits`).
//!
//! The cursor is `<@timestamp ns>:<_id>` of the page's last hit. Events with
//! the same time come in `_id` order (OpenSearch keeps no arrival order the
//! sink could stamp; ADR 0086): stable across pages, not the order the
//! events were received in.
//!
//! Sorted by a field (`sort`, issue #22): the DSL `sort` on the field (its
//! `.keyword` sub-field for text), `missing: _last`, `unmapped_type` so an
//! index without the field sorts all its events last, then `@timestamp` and
//! `_id` descending: the embedded store's order (`sluice_store::sort`). The
//! cursor is then the page's last `sort` array as JSON.

use std::time::Instant;

use serde_json::{json, Value};
use sluice_query::api::{Hit, Search, SearchResponse, MAX_PAGE};
use sluice_query::{BackendError, Order, Principal};

use crate::aggregate::terms_field;
use crate::backend::{range_filter, u64_at, Inner};
use crate::permissions::restricted;
use crate::translate::translate;

fn decode_cursor(s: &str) -> Result<(i64, String), BackendError> {
    let err = || BackendError::BadRequest(format!("invalid search_after cursor {s:?}"));
    let (ts, id) = s.split_once(':').ok_or_else(err)?;
    if id.is_empty() {
        return Err(err());
    }
    Ok((ts.parse().map_err(|_| err())?, id.to_string()))
}

/// The cursor of a field-sorted search: the `sort` array of the last hit
/// (value, `@timestamp`, `_id`).
fn decode_sorted_cursor(s: &str) -> Result<Value, BackendError> {
    match serde_json::from_str::<Value>(s) {
        Ok(v) if v.as_array().is_some_and(|a| a.len() == 3) => Ok(v),
        _ => Err(BackendError::BadRequest(format!("invalid search_after cursor {s:?} for a sorted search"))),
    }
}

/// A hit of an OpenSearch answer.
pub(crate) fn hit_of(h: &Value) -> Hit {
    Hit {
        id: h.get("_id").and_then(Value::as_str).unwrap_or_default().to_string(),
        event: h.get("_source").cloned().unwrap_or(Value::Null),
        error: None,
    }
}

/// See the module doc.
pub(crate) async fn search(os: &Inner, principal: &Principal, s: &Search) -> Result<SearchResponse, BackendError> {
    let t0 = Instant::now();
    let schema = os.schema().await?;
    let query = restricted(principal, translate(&s.query, &schema)?, range_filter(&s.range));
    let order = match s.order {
        Order::Newest => "desc",
        Order::Oldest => "asc",
    };
    // One more than the page tells whether there is a next page.
    let ask = if s.size < MAX_PAGE { s.size + 1 } else { s.size };
    let sort = match &s.sort {
        None => json!([{"@timestamp": {"order": order}}, {"_id": {"order": order}}]),
        Some(by) => {
            let dir = if by.desc { "desc" } else { "asc" };
            let field = terms_field("sort", &by.field, &schema)?.unwrap_or_else(|| by.field.clone());
            json!([
                {field: {"order": dir, "missing": "_last", "unmapped_type": "keyword"}},
                {"@timestamp": {"order": "desc"}},
                {"_id": {"order": "desc"}},
            ])
        }
    };
    let mut body = json!({"query": query, "size": ask, "track_total_hits": true, "sort": sort});
    if let Some(c) = &s.search_after {
        body["search_after"] = match &s.sort {
            None => {
                let (ts, id) = decode_cursor(c)?;
                json!([ts, id])
            }
            Some(_) => decode_sorted_cursor(c)?,
        };
    }
    if let Some(fields) = &s.fields {
        let mut inc: Vec<String> = sluice_core::codec::RESERVED.iter().map(|s| s.to_string()).collect();
        inc.extend(fields.iter().cloned());
        body["_source"] = json!({"includes": inc});
    }
    let r = os.search(&body).await?;
    let total = u64_at(&r, "/hits/total/value")?;
    let raw = r.pointer("/hits/hits").and_then(Value::as_array).cloned().unwrap_or_default();
    let more = raw.len() > s.size || (ask == s.size && raw.len() == s.size);
    let page = &raw[..raw.len().min(s.size)];
    let next = if more {
        page.last().and_then(|h| {
            let sort = h.get("sort")?.as_array()?;
            if s.sort.is_some() {
                return serde_json::to_string(sort).ok();
            }
            Some(format!("{}:{}", sort.first()?.as_i64()?, sort.get(1)?.as_str()?))
        })
    } else {
        None
    };
    Ok(SearchResponse {
        total,
        hits: page.iter().map(hit_of).collect(),
        next,
        took_ms: t0.elapsed().as_millis() as u64,
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn cursors() {
        assert_eq!(super::decode_cursor("-5:a:b").unwrap(), (-5, "a:b".to_string()));
        assert!(super::decode_cursor("x:y").is_err());
        assert!(super::decode_cursor("5:").is_err());
        assert_eq!(super::decode_sorted_cursor(r#"[1,2,"a"]"#).unwrap(), serde_json::json!([1, 2, "a"]));
        assert!(super::decode_sorted_cursor("5:a").is_err());
        assert!(super::decode_sorted_cursor("[1]").is_err());
    }
}
