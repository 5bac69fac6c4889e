//! A node: every pipeline of one process, the metrics ticker, graceful
//! shutdown and reload.
//!
//! Reload builds the whole new config first; if anything is wrong the running
//! pipelines stay as they are and the errors are returned. Otherwise only the
//! pipelines whose table changed are stopped (gracefully, as on SIGTERM) and
//! started again; unchanged ones keep running untouched. A pipeline whose
//! change is confined to settings its sinks can change live (a `sluice`
//! sink's `receivers`: a dispatcher's pool) is updated in place, so its
//! sources keep their connections and nothing in flight is dropped.

use std::collections::BTreeMap;
use std::sync::Arc;

use sluice_core::config::ConfigError;
use sluice_core::metrics::{Registry, TICK};
use sluice_core::mount::Mounts;
use tokio::sync::Mutex;
use tokio::task::JoinHandle;

use crate::config::{Config, NodeConfig};
use crate::pipeline::{self, RunningPipeline};
use crate::topology;

/// A running node.
pub struct Node {
    /// Every counter of this process.
    pub registry: Arc<Registry>,
    /// Routes components serve on the API listener.
    pub mounts: Arc<Mounts>,
    node: Mutex<NodeConfig>,
    pipelines: Mutex<BTreeMap<String, RunningPipeline>>,
    ticker: JoinHandle<()>,
}

/// Why a node could not start or reload.
#[derive(Debug, thiserror::Error)]
pub enum NodeError {
    /// The config has errors (all of them).
    #[error("invalid config:\n{}", .0.iter().map(|e| format!("  {e}")).collect::<Vec<_>>().join("\n"))]
    Config(Vec<ConfigError>),
    /// A pipeline could not start (queue could not be opened, …) or take
    /// its new config in place.
    #[error(transparent)]
    Start(#[from] crate::pipeline::PipelineError),
}

impl Node {
    /// Builds and starts every pipeline. Must run inside a tokio runtime.
    pub async fn start(config: Config) -> Result<Self, NodeError> {
        let mounts = topology::mounts_for(&config.api);
        Self::start_with_mounts(config, mounts).await
    }

    /// [`Node::start`] with a mount registry the API server has already
    /// reserved its own routes in.
    pub async fn start_with_mounts(config: Config, mounts: Arc<Mounts>) -> Result<Self, NodeError> {
        let registry = Arc::new(Registry::default());
        let built = topology::build(&config, &registry, &mounts).map_err(NodeError::Config)?;
        let mut pipelines = BTreeMap::new();
        for b in built {
            let name = b.config.name.clone();
            match pipeline::start(b, &config.node) {
                Ok(p) => {
                    pipelines.insert(name, p);
                }
                Err(e) => {
                    for (_, p) in pipelines {
                        p.stop(config.node.shutdown_timeout.0).await;
                    }
                    return Err(NodeError::Start(e));
                }
            }
        }
        let pipelines = Mutex::new(pipelines);
        let reg = Arc::clone(&registry);
        let ticker = tokio::spawn(async move {
            let mut iv = tokio::time::interval(TICK);
            iv.tick().await;
            loop {
                iv.tick().await;
                reg.tick(TICK);
            }
        });
        tracing::info!(node = %config.node.name, pipelines = config.pipelines.len(), "node started");
        Ok(Self { registry, mounts, node: Mutex::new(config.node), pipelines, ticker })
    }

    /// Names of the running pipelines.
    pub async fn pipeline_names(&self) -> Vec<String> {
        self.pipelines.lock().await.keys().cloned().collect()
    }

    /// Whether every source of every pipeline has finished on its own.
    pub async fn sources_done(&self) -> bool {
        self.pipelines.lock().await.values().all(RunningPipeline::sources_done)
    }

    /// Applies a new config: restarts changed pipelines, starts new ones,
    /// stops removed ones. On any config error nothing changes.
    pub async fn reload(&self, config: Config) -> Result<(), NodeError> {
        let mut running = self.pipelines.lock().await;
        let timeout = self.node.lock().await.shutdown_timeout.0;
        // Validate everything up front against a scratch registry.
        let scratch = Arc::new(Registry::default());
        topology::build(&config, &scratch, &self.mounts).map_err(NodeError::Config)?;
        let names: Vec<String> = running.keys().cloned().collect();
        for name in names {
            let mut keep =
                config.pipelines.get(&name).is_some_and(|p| running.get(&name).is_some_and(|r| r.raw == p.raw));
            if let (false, Some(pc), Some(r)) = (keep, config.pipelines.get(&name), running.get_mut(&name)) {
                keep = r.try_live_update(&pc.raw).map_err(NodeError::Start)?;
            }
            if !keep {
                if let Some(p) = running.remove(&name) {
                    tracing::info!(pipeline = %name, "reload: stopping pipeline");
                    p.stop(timeout).await;
                    self.registry.remove_pipeline(&name);
                }
            }
        }
        for (name, pc) in &config.pipelines {
            if running.contains_key(name) {
                continue;
            }
            let built =
                topology::build_pipeline(pc, &config.node, &self.registry, &self.mounts).map_err(NodeError::Config)?;
            let p = pipeline::start(built, &config.node).map_err(NodeError::Start)?;
            tracing::info!(pipeline = %name, "reload: started pipeline");
            running.insert(name.clone(), p);
        }
        *self.node.lock().await = config.node;
        Ok(())
    }

    /// Graceful shutdown of every pipeline.
    pub async fn shutdown(self) {
        let timeout = self.node.lock().await.shutdown_timeout.0;
        let pipelines = std::mem::take(&mut *self.pipelines.lock().await);
        let stops = pipelines.into_values().map(|p| p.stop(timeout));
        for s in stops {
            s.await;
        }
        self.ticker.abort();
        tracing::info!("node stopped");
    }
}
