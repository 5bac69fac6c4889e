//! One suite, two backends: an [`Engine`] is a search backend plus the way
//! to store events in it — the embedded store (append + commit) or a real
//! OpenSearch node (`_bulk` of the JSON the `elasticsearch` sink writes,
//! into an index of this test run with sluice's mapping, then refresh).
//!
//! OpenSearch: `SLUICE_OPENSEARCH_URL` if set, else the shared node of
//! `scripts/opensearch.sh start` (instance `main`, started if needed).

use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use sluice_core::Event;
use sluice_opensearch::{OpenSearch, OpenSearchConfig};
use sluice_query::api::{Aggregate, Search};
use sluice_query::{
    AggregateResponse, BackendError, FieldInfo, Hit, Principal, Query, SearchBackend, SearchResponse, TailStream,
    TimeRange,
};
use sluice_store::{Store, StoreOptions};

enum Writer {
    /// `raw`: events are stored as the JSON text a `tcp`/`http` source keeps
    /// (`Event::raw`), which the store indexes from a tape (ADR 0114).
    Embedded {
        store: Arc<Store>,
        raw: bool,
        _dir: tempfile::TempDir,
    },
    OpenSearch {
        os: OpenSearch,
        index: String,
        seq: AtomicU64,
    },
}

/// A backend under test and how to store events in it.
pub struct Engine {
    backend: Arc<dyn SearchBackend>,
    writer: Writer,
    rt: tokio::runtime::Runtime,
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap()
}

/// The OpenSearch node's URL.
pub fn opensearch_url() -> String {
    if let Ok(u) = std::env::var("SLUICE_OPENSEARCH_URL") {
        return u;
    }
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/opensearch.sh");
    let run = |action: &str| {
        let o = Command::new(&script).args([action, "main"]).output().expect("run scripts/opensearch.sh");
        assert!(o.status.success(), "opensearch.sh {action}: {}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).trim().to_string()
    };
    run("start");
    run("url")
}

/// `e` as a `tcp` or `http` source would have it from its JSON line: the
/// fields as text (`Event::raw`), identity and source from the source.
fn as_raw(e: &Event) -> Event {
    let mut fields = e.fields().clone();
    for k in sluice_core::codec::RESERVED {
        fields.remove(k);
    }
    let mut text = Vec::new();
    sluice_core::Value::Object(fields).write_json(&mut text);
    let (mut r, bad) = sluice_core::codec::event_from_json_bytes(&bytes::Bytes::from(text)).unwrap();
    assert!(!bad);
    r.timestamp = e.timestamp;
    r.identity = e.identity.clone();
    r.source = e.source.clone();
    r
}

impl Engine {
    /// The embedded store in a fresh directory.
    pub fn embedded() -> Engine {
        let dir = tempfile::tempdir().unwrap();
        let opts = StoreOptions { commit_interval: Duration::from_millis(100), ..StoreOptions::default() };
        let store = Store::open(dir.path(), opts).unwrap();
        Engine { backend: store.clone(), writer: Writer::Embedded { store, raw: false, _dir: dir }, rt: runtime() }
    }

    /// The embedded store in a fresh directory, given every event as the
    /// JSON text a line source keeps rather than as parsed fields.
    pub fn embedded_raw() -> Engine {
        let mut e = Engine::embedded();
        if let Writer::Embedded { raw, .. } = &mut e.writer {
            *raw = true;
        }
        e
    }

    /// A fresh index named after `test` on the OpenSearch node, with sluice's mapping.
    pub fn opensearch(test: &str) -> Engine {
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
        let index = format!("sluice-suite-{}-{}-{nanos}", test.replace('_', "-"), std::process::id());
        let mut cfg = OpenSearchConfig::new(vec![opensearch_url()], index.clone());
        cfg.tail_poll_ms = 100;
        let os = OpenSearch::new(&cfg).unwrap();
        let rt = runtime();
        let body = sluice_opensearch::mapping::index_body();
        if let Err(e) = rt.block_on(os.client().put(&format!("/{index}"), &body)) {
            panic!("creating {index}: {e} (the node needs the analysis-common module: restart it with scripts/opensearch.sh, which installs it)");
        }
        Engine { backend: Arc::new(os.clone()), writer: Writer::OpenSearch { os, index, seq: AtomicU64::new(0) }, rt }
    }

    /// Stores `events` and makes them searchable.
    pub fn append(&self, events: &[Event]) {
        match &self.writer {
            Writer::Embedded { store, raw, .. } => {
                let as_text: Vec<Event>;
                let events = if *raw {
                    as_text = events.iter().map(as_raw).collect();
                    // The corpus's lines are kept as text almost always (a `\u` escape is not).
                    let kept = as_text.iter().filter(|e| e.raw().is_some()).count();
                    assert!(kept * 10 >= events.len() * 9, "{kept} of {} kept as text", events.len());
                    &as_text[..]
                } else {
                    events
                };
                for chunk in events.chunks(1000) {
                    store.append(chunk, &mut None).unwrap();
                }
                store.commit().unwrap();
            }
            Writer::OpenSearch { os, index, seq } => {
                for chunk in events.chunks(1000) {
                    let mut body = Vec::new();
                    for e in chunk {
                        // Ids in arrival order, so that ties in time sort as in the embedded store.
                        let id = seq.fetch_add(1, Ordering::Relaxed);
                        body.extend_from_slice(
                            format!("{{\"index\":{{\"_index\":\"{index}\",\"_id\":\"{id:020}\"}}}}\n").as_bytes(),
                        );
                        sluice_core::codec::write_json(e, &mut body);
                        body.push(b'\n');
                    }
                    let r = self.rt.block_on(os.client().post_ndjson("/_bulk?refresh=true", &body)).unwrap();
                    assert_eq!(r["errors"], false, "bulk: {r}");
                }
            }
        }
    }

    pub fn search_sync(&self, p: &Principal, s: &Search) -> Result<SearchResponse, BackendError> {
        self.rt.block_on(self.backend.search(p, s))
    }

    pub fn aggregate_sync(&self, p: &Principal, a: &Aggregate) -> Result<AggregateResponse, BackendError> {
        self.rt.block_on(self.backend.aggregate(p, a))
    }

    pub fn fields_sync(&self, p: &Principal, r: &TimeRange) -> Result<Vec<FieldInfo>, BackendError> {
        self.rt.block_on(self.backend.fields(p, r))
    }

    pub fn tail_sync(&self, p: &Principal, q: &Query) -> Result<TailStream, BackendError> {
        self.rt.block_on(self.backend.tail(p, q))
    }

    /// The next `n` hits of a tail, waiting up to 60 s for them (fewer if they do not come).
    pub fn recv(&self, rx: &mut TailStream, n: usize) -> Vec<Hit> {
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut got = Vec::new();
        while got.len() < n {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.rt.block_on(async { tokio::time::timeout(left, rx.recv()).await }) {
                Ok(Some(h)) => got.push(h),
                _ => break,
            }
        }
        got
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        if let Writer::OpenSearch { os, index, .. } = &self.writer {
            let _ = self.rt.block_on(os.client().delete(&format!("/{index}")));
        }
    }
}

pub fn count(store: &Engine, p: &Principal, q: Query) -> u64 {
    store.search_sync(p, &super::corpus::search(q, 1)).unwrap().total
}

/// The engine with the corpus stored.
pub fn setup(store: Engine) -> (Engine, super::corpus::Corpus) {
    let c = super::corpus::load();
    store.append(&super::corpus::corpus_events(&c));
    (store, c)
}
