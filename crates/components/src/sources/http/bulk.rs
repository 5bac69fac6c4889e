//! Elasticsearch `_bulk`: action/document pairs parsed into events, the
//! per-item results Elasticsearch clients expect, and document ids like
//! Elasticsearch's.

use super::*;

// ---------------------------------------------------------------- bulk

#[derive(Serialize)]
pub(super) struct Shards {
    total: u32,
    successful: u32,
    failed: u32,
}

#[derive(Serialize)]
pub(super) struct ItemError {
    #[serde(rename = "type")]
    kind: &'static str,
    reason: String,
}

#[derive(Serialize)]
pub(super) struct ItemResult {
    _index: Option<String>,
    _id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    _version: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    _shards: Option<Shards>,
    #[serde(skip_serializing_if = "Option::is_none")]
    _seq_no: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    _primary_term: Option<u64>,
    status: u16,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<ItemError>,
}

impl ItemResult {
    pub(super) fn created(index: String, id: String, seq_no: u64) -> Self {
        Self {
            _index: Some(index),
            _id: Some(id),
            _version: Some(1),
            result: Some("created"),
            _shards: Some(Shards { total: 1, successful: 1, failed: 0 }),
            _seq_no: Some(seq_no),
            _primary_term: Some(1),
            status: 201,
            error: None,
        }
    }

    /// `require_alias` named an index (sluice has no aliases).
    pub(super) fn not_an_alias(index: String, id: Option<String>) -> Self {
        let reason =
            format!("no such index [{index}] and [require_alias] request flag is [true] and [{index}] is not an alias");
        Self { status: 404, ..Self::failed(Some(index), id, "index_not_found_exception", reason) }
    }

    /// A `create` whose `_id` this source already stored.
    fn conflict(index: String, id: String) -> Self {
        let reason = format!("[{id}]: version conflict, document already exists (current version [1])");
        Self { status: 409, ..Self::failed(Some(index), Some(id), "version_conflict_engine_exception", reason) }
    }

    pub(super) fn failed(index: Option<String>, id: Option<String>, kind: &'static str, reason: String) -> Self {
        Self {
            _index: index,
            _id: id,
            _version: None,
            result: None,
            _shards: None,
            _seq_no: None,
            _primary_term: None,
            status: 400,
            error: Some(ItemError { kind, reason }),
        }
    }
}

#[derive(Serialize)]
pub(super) struct BulkResponse {
    took: u64,
    errors: bool,
    items: Vec<Item>,
}

/// One entry of `items`: the action name and its result.
pub(super) type Item = BTreeMap<String, ItemResult>;

/// A bulk body's per-item results, the events to queue and the `create`
/// pairs to record once they are queued.
pub(super) type ParsedBulk = (Vec<Item>, Vec<Event>, Vec<created_ids::Key>);

/// Turns a bulk body's actions into per-item results and the events to queue.
pub(super) fn parse_bulk(
    s: &Shared,
    body: &[u8],
    default_index: Option<&str>,
    require_alias: bool,
    identity: Option<&Arc<Identity>>,
) -> Result<ParsedBulk, es_bulk::Malformed> {
    let actions = es_bulk::parse(body)?;
    // An empty `_id` fails the request's validation, as in Elasticsearch:
    // the whole body is refused, one numbered error per such action.
    let empty_ids = actions.iter().filter(|a| a.id.as_deref() == Some("")).count();
    if empty_ids > 0 {
        let errors: String =
            (1..=empty_ids).map(|i| format!("{i}: if _id is specified it must not be empty;")).collect();
        return Err(es_bulk::Malformed {
            kind: "action_request_validation_exception",
            reason: format!("Validation Failed: {errors}"),
        });
    }
    let mut items = Vec::with_capacity(actions.len());
    let mut events = Vec::new();
    // `create` pairs of this request (a second one in the same body is a conflict too).
    let mut keys = Vec::new();
    let now = created_ids::now_ns();
    for action in actions {
        let index = action.index.clone().or_else(|| default_index.map(str::to_string));
        let created = match (&action.kind, &index, &action.id) {
            (Kind::Create, Some(i), Some(id)) => Some(created_ids::key(i, id)),
            _ => None,
        };
        let item = match action.kind {
            Kind::Create
                if created.is_some_and(|k| keys.contains(&k) || s.created.contains(k, now))
                    && !action.require_alias.unwrap_or(require_alias) =>
            {
                s.counters.bulk_conflicts.inc();
                ItemResult::conflict(index.unwrap_or_default(), action.id.unwrap_or_default())
            }
            // sluice has no aliases: an index named with `require_alias` is never one.
            Kind::Index | Kind::Create if action.require_alias.unwrap_or(require_alias) && index.is_some() => {
                ItemResult::not_an_alias(index.unwrap_or_default(), action.id)
            }
            Kind::Index | Kind::Create => {
                let doc = action.source.unwrap_or_default();
                let item = document(s, doc, index, action.id, identity, &mut events);
                if let (Some(k), None) = (created, &item.error) {
                    keys.push(k);
                }
                item
            }
            Kind::Update | Kind::Delete => rejected(index, action.id, &action.name),
            Kind::Unknown => ItemResult::failed(
                index,
                action.id,
                "illegal_argument_exception",
                format!(
                    "Malformed action/metadata line [{}], expected one of [create, delete, index, update] but found [{}]",
                    action.line, action.name
                ),
            ),
        };
        if item.error.is_some() {
            s.counters.bulk_item_errors.inc();
        }
        items.push(BTreeMap::from([(action.name, item)]));
    }
    Ok((items, events, keys))
}

pub(super) fn rejected(index: Option<String>, id: Option<String>, action: &str) -> ItemResult {
    ItemResult::failed(
        index,
        id,
        "illegal_argument_exception",
        format!("the {action} action is not supported: sluice stores logs append-only (use index or create)"),
    )
}

/// One `index`/`create` document: an event, or a per-item error.
pub(super) fn document(
    s: &Shared,
    doc: &[u8],
    index: Option<String>,
    id: Option<String>,
    identity: Option<&Arc<Identity>>,
    events: &mut Vec<Event>,
) -> ItemResult {
    let Some(index) = index else {
        return ItemResult::failed(
            None,
            id,
            "action_request_validation_exception",
            "Validation Failed: 1: index is missing;".into(),
        );
    };
    if doc.len() > s.max_line {
        s.counters.oversized.inc();
        s.cx.metrics.events_failed.inc();
        return ItemResult::failed(
            Some(index),
            id,
            "mapper_parsing_exception",
            format!("document is {} bytes, larger than max_line_bytes ({})", doc.len(), s.max_line),
        );
    }
    match event_from_json(doc) {
        Ok((mut event, bad_ts)) => {
            if bad_ts {
                event.add_tag("_timestampparsefailure");
            }
            let id = id.unwrap_or_else(|| s.ids.next());
            event.fields_mut().insert("_index", Value::from(index.as_str()));
            event.fields_mut().insert("_id", Value::from(id.as_str()));
            event.source = Arc::clone(&s.source);
            if let Some(id) = identity {
                event.identity = Arc::clone(id);
            }
            events.push(event);
            ItemResult::created(index, id, s.seq_no.fetch_add(1, Ordering::Relaxed))
        }
        Err(e) => {
            s.cx.metrics.events_failed.inc();
            ItemResult::failed(Some(index), id, "mapper_parsing_exception", format!("failed to parse: {e}"))
        }
    }
}

pub(super) async fn bulk(
    s: &Shared,
    req: Request,
    default_index: Option<String>,
    identity: Option<Arc<Identity>>,
    started: Instant,
) -> Response {
    // `?require_alias` / `?require_alias=true`: for every action without its own.
    let require_alias =
        req.uri().query().is_some_and(|q| q.split('&').any(|kv| kv == "require_alias" || kv == "require_alias=true"));
    let wait = match refresh_param(req.uri().query()) {
        Ok(w) => w,
        Err(v) => {
            s.counters.bad_requests.inc();
            return es_error(
                StatusCode::BAD_REQUEST,
                "illegal_argument_exception",
                &format!("Unknown value for refresh: [{v}]."),
            );
        }
    };
    let body = match read_body(s, req).await {
        Ok(b) => b,
        Err(r) => return r,
    };
    if es_bulk::blank(&body) {
        s.counters.bad_requests.inc();
        return es_error(StatusCode::BAD_REQUEST, "parse_exception", "request body is required");
    }
    let (items, events, keys) = match parse_bulk(s, &body, default_index.as_deref(), require_alias, identity.as_ref()) {
        Ok(p) => p,
        Err(es_bulk::Malformed { kind, reason }) => {
            s.counters.bad_requests.inc();
            return es_error(StatusCode::BAD_REQUEST, kind, &reason);
        }
    };
    let n = events.len() as u64;
    if n > 0 {
        s.cx.metrics.events_in.add(n);
        let visible = if wait {
            let (tx, rx) = tokio::sync::oneshot::channel();
            let ack = sluice_core::AckToken::new(move |d| {
                let _ = tx.send(d);
            });
            if s.cx.out.send_visible(events, ack).await.is_err() {
                return queue_closed();
            }
            Some(rx)
        } else {
            if s.cx.out.send(events).await.is_err() {
                return queue_closed();
            }
            None
        };
        s.cx.metrics.events_out.add(n);
        // Queued: the ids are taken from here on (before the answer).
        if let Err(e) = s.created.insert(&keys, created_ids::now_ns()) {
            tracing::warn!(source = %s.cx.id, error = %e, "bulk ids ledger write failed; a retry of these creates may be stored twice");
        }
        if let Some(rx) = visible {
            match tokio::time::timeout(s.refresh_timeout, rx).await {
                Ok(Ok(sluice_core::Delivery::Delivered)) => {}
                outcome => {
                    s.counters.refresh_waits_failed.inc();
                    let why = if outcome.is_err() { "timed out" } else { "a sink did not take the events" };
                    tracing::warn!(source = %s.cx.id, events = n, "refresh=wait_for: {why}; the events stay queued");
                }
            }
        }
    }
    let errors = items.iter().any(|m| m.values().any(|r| r.error.is_some()));
    let took = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    respond(StatusCode::OK, sonic_rs::to_vec(&BulkResponse { took, errors, items }).unwrap_or_default())
}

/// `?refresh`: whether to wait for the sinks (`true`, `wait_for`, bare),
/// or the value that is neither that nor `false`.
fn refresh_param(query: Option<&str>) -> Result<bool, String> {
    let Some(v) = query.into_iter().flat_map(|q| q.split('&')).find_map(|kv| {
        let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
        (k == "refresh").then(|| percent_decode(v))
    }) else {
        return Ok(false);
    };
    match v.as_str() {
        "" | "true" | "wait_for" => Ok(true),
        "false" => Ok(false),
        _ => Err(v),
    }
}

// ---------------------------------------------------------------- ids

/// Document ids like Elasticsearch's: 20 URL-safe base64 characters from the
/// time, a per-process random salt and a counter — unique across restarts.
pub(super) struct IdGenerator {
    salt: [u8; 3],
    counter: AtomicU64,
}

impl IdGenerator {
    pub(super) fn new() -> Self {
        let mut salt = [0u8; 3];
        if sluice_core::secret::fill_random(&mut salt).is_err() {
            // No OS randomness (never seen on Linux): the process id and the
            // clock still make the salt differ between restarts.
            let n = u64::from(std::process::id()) ^ sluice_core::event::now_ns() as u64;
            salt.copy_from_slice(&n.to_le_bytes()[..3]);
        }
        Self { salt, counter: AtomicU64::new(0) }
    }

    pub(super) fn next(&self) -> String {
        const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
        let n = self.counter.fetch_add(1, Ordering::Relaxed);
        let mut raw = [0u8; 15];
        raw[..8].copy_from_slice(&sluice_core::event::now_ns().to_be_bytes());
        raw[8..11].copy_from_slice(&self.salt);
        raw[11..].copy_from_slice(&(n as u32).to_be_bytes());
        let mut out = String::with_capacity(20);
        for chunk in raw.chunks(3) {
            let v = (u32::from(chunk[0]) << 16) | (u32::from(chunk[1]) << 8) | u32::from(chunk[2]);
            for shift in [18, 12, 6, 0] {
                out.push(char::from(ALPHABET[((v >> shift) & 63) as usize]));
            }
        }
        out
    }
}
