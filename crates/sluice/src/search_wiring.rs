//! Which engine the search API reads, decided at start and again after
//! every reload (issue #20): `[search] backend = "opensearch"` builds one
//! OpenSearch client (rebuilt only when that section changes); otherwise
//! the API reads the embedded store that the first `store` sink of the
//! config opened. The choice lands in the API's [`BackendSlot`], so a
//! reload that adds a store sink or changes `[search]` takes effect
//! without restarting the listener.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context as _;
use sluice_api::BackendSlot;
use sluice_opensearch::OpenSearch;
use sluice_query::SearchBackend;
use sluice_runtime::config::{Config, SearchConfig};

/// The path of the first `store` sink in the config (pipelines in name
/// order), as the sink resolves it: its `path`, else `<data_dir>/store`.
pub fn store_path(cfg: &Config) -> Option<PathBuf> {
    cfg.pipelines.values().flat_map(|p| p.sinks.values()).find_map(|t| {
        if t.get("type").and_then(|v| v.as_str()) != Some("store") {
            return None;
        }
        Some(match t.get("path").and_then(|v| v.as_str()) {
            Some(p) => PathBuf::from(p),
            None => cfg.node.data_dir.join("store"),
        })
    })
}

/// The `[search]` section in force, its OpenSearch client, and the slot the
/// API reads.
pub struct SearchWiring {
    slot: BackendSlot,
    search: SearchConfig,
    opensearch: Option<OpenSearch>,
}

impl SearchWiring {
    /// Builds what `cfg`'s `[search]` needs; an OpenSearch secret or CA file
    /// that cannot be read is an error (the node does not start).
    pub fn new(cfg: &Config) -> anyhow::Result<Self> {
        let mut w = Self { slot: BackendSlot::default(), search: SearchConfig::Embedded, opensearch: None };
        w.opensearch = w.prepare(cfg)?;
        w.search = cfg.search.clone();
        Ok(w)
    }

    /// The slot to hand to the API.
    pub fn slot(&self) -> BackendSlot {
        self.slot.clone()
    }

    /// The OpenSearch client `cfg` needs: the running one when `[search]`
    /// is unchanged, a new one when it changed (an error rejects the
    /// reload before anything else changes), none for the embedded store.
    pub fn prepare(&self, cfg: &Config) -> anyhow::Result<Option<OpenSearch>> {
        match &cfg.search {
            SearchConfig::Embedded => Ok(None),
            SearchConfig::Opensearch(_) if cfg.search == self.search => Ok(self.opensearch.clone()),
            SearchConfig::Opensearch(o) => OpenSearch::new(o).map(Some).context("[search] backend = \"opensearch\""),
        }
    }

    /// Points the API at what `cfg` names, once its pipelines run:
    /// `opensearch` (from [`Self::prepare`]), else the store the first
    /// `store` sink opened, else nothing (`503 no_store`).
    pub fn apply(&mut self, cfg: &Config, opensearch: Option<OpenSearch>) {
        let path = store_path(cfg);
        let backend: Option<Arc<dyn SearchBackend>> = match (
            &opensearch,
            path.as_deref().and_then(sluice_store::Store::get),
        ) {
            (Some(os), _) => {
                tracing::info!(index = %os.index(), "search API serves OpenSearch");
                Some(Arc::new(os.clone()))
            }
            (None, Some(store)) => {
                tracing::info!(path = %path.as_deref().unwrap_or(Path::new("")).display(), "search API serves the embedded store");
                Some(store)
            }
            (None, None) => {
                if self.slot.get().is_some() {
                    tracing::info!("search API has no store any more: search answers 503 no_store");
                }
                None
            }
        };
        self.slot.set(backend);
        self.search = cfg.search.clone();
        self.opensearch = opensearch;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_runtime::config::parse_config;

    fn cfg(search: &str) -> Config {
        parse_config(&format!(
            "[node]\ndata_dir = \"/nonexistent\"\n[api]\naddress = \"\"\n{search}\n\
             [pipelines.p.sources.s]\ntype = \"stdin\"\n[pipelines.p.sinks.o]\ntype = \"stdout\"\n"
        ))
        .unwrap_or_else(|e| panic!("{e:?}"))
    }

    const OS: &str = "[search]\nbackend = \"opensearch\"\nendpoints = [\"http://127.0.0.1:9\"]\n";

    #[test]
    fn issue_20_a_reload_switches_the_backend_and_a_bad_opensearch_section_is_refused() {
        let embedded = cfg("");
        let mut w = SearchWiring::new(&embedded).unwrap();
        assert!(w.prepare(&embedded).unwrap().is_none());
        w.apply(&embedded, None);
        assert!(w.slot().get().is_none(), "no store sink: no backend");

        // embedded → opensearch: a client is built and lands in the slot.
        let os = cfg(OS);
        let client = w.prepare(&os).unwrap();
        assert_eq!(client.as_ref().map(OpenSearch::index), Some("sluice*"));
        let slot = w.slot();
        w.apply(&os, client);
        assert!(slot.get().is_some(), "the API's slot sees the OpenSearch backend");

        // A changed section whose CA file cannot be read is an error that
        // leaves the running backend alone.
        let bad = cfg(&format!("{OS}ca_file = \"/nonexistent/ca.pem\"\n"));
        let err = format!("{:#}", w.prepare(&bad).err().expect("an unreadable CA file is refused"));
        assert!(err.contains("[search] backend = \"opensearch\"") && err.contains("/nonexistent/ca.pem"), "{err}");
        assert!(slot.get().is_some());

        // opensearch → embedded: the slot empties (no store sink here).
        assert!(w.prepare(&embedded).unwrap().is_none());
        w.apply(&embedded, None);
        assert!(slot.get().is_none());
    }
}
