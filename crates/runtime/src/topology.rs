//! Builds a pipeline's components from its config: looks each `type` up in
//! the registry lists of `sluice-components`, strips the keys the runtime
//! owns (`type`; `group`/`subgroup`/`host` on sources — `host` defaults to
//! the machine's host name when `group` or `subgroup` is set;
//! `when`/`dead_letter` on sinks) and calls the component's `build`. Nothing is started or bound
//! here, so `sluice validate` runs exactly this.

use std::sync::Arc;

use sluice_components::{filters, sinks, sources};
use sluice_core::component::{BuildContext, Filter, Sink, Source};
use sluice_core::condition::Condition;
use sluice_core::config::ConfigError;
use sluice_core::metrics::{ComponentMetrics, PipelineMetrics, Registry};
use sluice_core::mount::Mounts;

use crate::config::{ApiConfig, Config, NodeConfig, PipelineConfig, QueueConfig};
use crate::stamp::SourceIdentity;

/// A source ready to run.
pub struct BuiltSource {
    /// Its id.
    pub id: String,
    /// The component.
    pub source: Box<dyn Source>,
    /// Identity stamped on every event it emits, when configured.
    pub identity: Option<SourceIdentity>,
    /// Its counters.
    pub metrics: Arc<ComponentMetrics>,
}

/// A sink ready to run.
pub struct BuiltSink {
    /// Its id.
    pub id: String,
    /// The component.
    pub sink: Box<dyn Sink>,
    /// Only events matching this condition go to the sink.
    pub when: Option<Condition>,
    /// The sink takes the events filters marked as dead letters (and only those).
    pub dead_letter: bool,
    /// Its counters.
    pub metrics: Arc<ComponentMetrics>,
}

/// A pipeline ready to run.
pub struct BuiltPipeline {
    /// Its config.
    pub config: PipelineConfig,
    /// Sources.
    pub sources: Vec<BuiltSource>,
    /// Filters, in order.
    pub filters: Vec<Box<dyn Filter>>,
    /// Sinks.
    pub sinks: Vec<BuiltSink>,
    /// Pipeline-level counters.
    pub metrics: Arc<PipelineMetrics>,
}

/// The mount registry for a node with this `[api]` section: none to mount on
/// when the API is disabled.
pub fn mounts_for(api: &ApiConfig) -> Arc<Mounts> {
    Arc::new(if api.address.is_empty() { Mounts::disabled() } else { Mounts::new(api.address.clone()) })
}

/// Builds every pipeline of `config`, collecting all errors.
/// Components that serve HTTP on the API listener mount their routes in
/// `mounts` when they start (see [`sluice_core::mount`]).
pub fn build(
    config: &Config,
    registry: &Arc<Registry>,
    mounts: &Arc<Mounts>,
) -> Result<Vec<BuiltPipeline>, Vec<ConfigError>> {
    build_all(config, registry, mounts, false)
}

/// Checks every pipeline of `config` as [`build`] does, collecting all
/// errors, without writing anything (`sluice validate`): components are
/// built with [`BuildContext::dry_run`], so no data directory, token file or
/// store is created, and the result is dropped.
pub fn check(config: &Config, registry: &Arc<Registry>, mounts: &Arc<Mounts>) -> Result<(), Vec<ConfigError>> {
    build_all(config, registry, mounts, true).map(drop)
}

fn build_all(
    config: &Config,
    registry: &Arc<Registry>,
    mounts: &Arc<Mounts>,
    dry_run: bool,
) -> Result<Vec<BuiltPipeline>, Vec<ConfigError>> {
    let mut out = Vec::new();
    let mut errors = Vec::new();
    for p in config.pipelines.values() {
        match build_pipeline_with(p, &config.node, registry, mounts, dry_run) {
            Ok(b) => out.push(b),
            Err(mut e) => errors.append(&mut e),
        }
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(errors)
    }
}

fn take_string(
    table: &mut toml::map::Map<String, toml::Value>,
    key: &str,
    path: &str,
    errors: &mut Vec<ConfigError>,
) -> Option<String> {
    match table.remove(key) {
        Some(toml::Value::String(s)) => Some(s),
        Some(_) => {
            errors.push(ConfigError::new(format!("{path}.{key}"), "expected a string"));
            None
        }
        None => None,
    }
}

/// Splits a component's table into its `type` and the rest.
fn component_table(
    v: &toml::Value,
    path: &str,
    errors: &mut Vec<ConfigError>,
) -> Option<(String, toml::map::Map<String, toml::Value>)> {
    let Some(table) = v.as_table() else {
        errors.push(ConfigError::new(path, "expected a table"));
        return None;
    };
    let mut table = table.clone();
    match table.remove("type") {
        Some(toml::Value::String(s)) => Some((s, table)),
        Some(_) => {
            errors.push(ConfigError::new(format!("{path}.type"), "expected a string"));
            None
        }
        None => {
            errors.push(ConfigError::new(path, "missing `type`"));
            None
        }
    }
}

/// Builds one pipeline.
pub fn build_pipeline(
    p: &PipelineConfig,
    node: &NodeConfig,
    registry: &Arc<Registry>,
    mounts: &Arc<Mounts>,
) -> Result<BuiltPipeline, Vec<ConfigError>> {
    build_pipeline_with(p, node, registry, mounts, false)
}

fn build_pipeline_with(
    p: &PipelineConfig,
    node: &NodeConfig,
    registry: &Arc<Registry>,
    mounts: &Arc<Mounts>,
    dry_run: bool,
) -> Result<BuiltPipeline, Vec<ConfigError>> {
    let base = format!("pipelines.{}", p.name);
    let queue_type = match p.queue {
        QueueConfig::Memory { .. } => "memory",
        QueueConfig::Persisted(_) => "persisted",
    };
    let mut errors = Vec::new();
    let root_cx = BuildContext {
        pipeline: p.name.clone(),
        id: String::new(),
        path: base.clone(),
        data_dir: node.data_dir.clone(),
        metrics: Arc::new(ComponentMetrics::new("pipeline", &p.name, "pipeline")),
        registry: Arc::clone(registry),
        mounts: Arc::clone(mounts),
        dry_run,
    };

    let mut built_sources = Vec::new();
    for (id, v) in &p.sources {
        let path = format!("{base}.sources.{id}");
        let Some((type_name, mut table)) = component_table(v, &path, &mut errors) else { continue };
        let group = take_string(&mut table, "group", &path, &mut errors);
        let subgroup = take_string(&mut table, "subgroup", &path, &mut errors);
        let host = take_string(&mut table, "host", &path, &mut errors);
        let identity = SourceIdentity::new(group, subgroup, host);
        let Some(spec) = sources::find(&type_name) else {
            let known: Vec<&str> = sources::SPECS.iter().map(|s| s.name).collect();
            errors.push(ConfigError::new(
                format!("{path}.type"),
                format!("unknown source type {type_name:?} (known: {})", known.join(", ")),
            ));
            continue;
        };
        let cx = root_cx.child("source", id, spec.name, &path);
        match (spec.build)(toml::Value::Table(table), &cx) {
            Ok(source) => built_sources.push(BuiltSource { id: id.clone(), source, identity, metrics: cx.metrics }),
            Err(e) => errors.push(e),
        }
    }

    let filters = match filters::build_chain(&p.filters, &root_cx, &format!("{base}.filters"), "") {
        Ok(f) => f,
        Err(mut e) => {
            errors.append(&mut e);
            Vec::new()
        }
    };

    let mut built_sinks = Vec::new();
    for (id, v) in &p.sinks {
        let path = format!("{base}.sinks.{id}");
        let Some((type_name, mut table)) = component_table(v, &path, &mut errors) else { continue };
        let when = match take_string(&mut table, "when", &path, &mut errors) {
            Some(text) => match Condition::parse(&text) {
                Ok(c) => Some(c),
                Err(e) => {
                    errors.push(ConfigError::new(format!("{path}.when"), e.to_string()));
                    continue;
                }
            },
            None => None,
        };
        let dead_letter = match table.remove("dead_letter") {
            Some(toml::Value::Boolean(b)) => b,
            Some(_) => {
                errors.push(ConfigError::new(format!("{path}.dead_letter"), "expected true or false"));
                continue;
            }
            None => false,
        };
        let Some(spec) = sinks::find(&type_name) else {
            let known: Vec<&str> = sinks::SPECS.iter().map(|s| s.name).collect();
            errors.push(ConfigError::new(
                format!("{path}.type"),
                format!("unknown sink type {type_name:?} (known: {})", known.join(", ")),
            ));
            continue;
        };
        let cx = root_cx.child("sink", id, spec.name, &path);
        match (spec.build)(toml::Value::Table(table), &cx) {
            Ok(sink) => built_sinks.push(BuiltSink { id: id.clone(), sink, when, dead_letter, metrics: cx.metrics }),
            Err(e) => errors.push(e),
        }
    }
    if !built_sinks.is_empty() && built_sinks.iter().all(|s| s.dead_letter) {
        errors.push(ConfigError::new(
            format!("{base}.sinks"),
            "every sink is a dead_letter sink: regular events would have nowhere to go",
        ));
    }

    if !errors.is_empty() {
        return Err(errors);
    }
    let metrics = registry.pipeline(PipelineMetrics::new(&p.name, queue_type));
    Ok(BuiltPipeline { config: p.clone(), sources: built_sources, filters, sinks: built_sinks, metrics })
}
