//! The `sluice` binary: `run` a node from a config file, `agent` and
//! `dispatcher` (the same with an agent's or a dispatcher's config),
//! `validate` a config, list `components`, manage the node's users (`user`,
//! `group`, `assign`, `unassign`, `token`; [`users_cli`]), benchmark it
//! (`bench`; [`bench_cli`]) and replay Kafka (`kafka replay`). Roles (agent,
//! dispatcher, processor, store) are
//! configurations of this one binary.

mod bench_cli;
mod lean;
mod search_wiring;
mod users_cli;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context as _;
use clap::{Parser, Subcommand};
use sluice_core::mount::Mounts;
use sluice_runtime::config::{load_config, Role};
use sluice_runtime::node::NodeError;
use sluice_runtime::{topology, Node};

// Events are many small allocations made on one thread and freed on another
// (source → worker → sink); mimalloc handles that pattern better than glibc's
// malloc (see BENCHMARKS.md). The agent role runs it with settings that give
// memory back (`lean`).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(name = "sluice", version, about = "Log management: collect, process, store and search logs")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run a node from a config file (SIGTERM/SIGINT: graceful stop; SIGHUP: reload).
    Run {
        /// The config file.
        config: PathBuf,
        /// With `[auth]` and no users yet: the first admin's password is read
        /// from this file (else from $SLUICE_ADMIN_PASSWORD, else generated
        /// and printed once).
        #[arg(long)]
        admin_password_file: Option<PathBuf>,
    },
    /// Run the agent role: the same runtime as `run`, with a config that
    /// reads local logs and ships them with a `sluice` sink (see
    /// examples/agent.toml).
    Agent {
        /// The agent's config file.
        #[arg(long, short)]
        config: PathBuf,
    },
    /// Run the dispatcher role: the same runtime as `run`, with a config
    /// that receives from agents (`sluice` source, `ack = "delivered"`) and
    /// forwards each batch to a pool of processors with a `sluice` sink (see
    /// examples/dispatcher.toml).
    Dispatcher {
        /// The dispatcher's config file.
        #[arg(long, short)]
        config: PathBuf,
    },
    /// Check a config file and report every error with its key path.
    Validate {
        /// The config file.
        config: PathBuf,
    },
    /// List the available sources, filters and sinks.
    Components {
        /// Print the Markdown table kept in docs/ARCHITECTURE.md instead.
        #[arg(long)]
        markdown: bool,
    },
    /// Manage users (`[auth]` metadata database of the config's node).
    User(users_cli::UserArgs),
    /// Manage user groups.
    Group(users_cli::GroupArgs),
    /// Assign log sources (`GROUP[/SUBGROUP[/HOST]]` globs) to a user or group.
    Assign(users_cli::AssignArgs),
    /// Remove an assignment.
    Unassign(users_cli::AssignArgs),
    /// Manage users' API tokens.
    Token(users_cli::TokenArgs),
    /// Benchmark tools.
    Bench {
        #[command(subcommand)]
        cmd: bench_cli::BenchCmd,
    },
    /// Apache Kafka tools.
    #[cfg(feature = "kafka")]
    Kafka {
        #[command(subcommand)]
        cmd: KafkaCmd,
    },
}

#[cfg(feature = "kafka")]
#[derive(Subcommand)]
enum KafkaCmd {
    /// Re-deliver the records whose Kafka timestamps are in [--from, --to)
    /// into the pipeline of a config's `kafka` source, without touching the
    /// consumer group's committed offsets; exits when they are all acknowledged.
    Replay {
        /// The processor's config file.
        #[arg(long)]
        config: PathBuf,
        /// First timestamp replayed: RFC 3339 or a duration ago (`2h`).
        #[arg(long)]
        from: String,
        /// First timestamp not replayed: RFC 3339 or a duration ago (`0s` = now).
        #[arg(long)]
        to: String,
        /// Topics to replay (default: the source's `topics`).
        #[arg(long)]
        topic: Vec<String>,
        /// The pipeline holding the kafka source (needed when several do).
        #[arg(long)]
        pipeline: Option<String>,
        /// The kafka source's id (needed when the pipeline has several).
        #[arg(long)]
        source: Option<String>,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if !matches!(cli.cmd, Cmd::Bench { .. }) {
        // Everything a node writes (queue, store, event files, tokens, the
        // users database, file positions) holds logs or secrets: readable
        // by the owner only (issue #18). Benchmark reports keep the default.
        rustix::process::umask(rustix::fs::Mode::from_raw_mode(0o077));
    }
    // Before anything else: on success this process is replaced.
    let role = match &cli.cmd {
        Cmd::Agent { .. } => Some(("agent", lean::AGENT)),
        // A node with a store sink: the indexer's allocator profile; any
        // other node: the processor's (the config is read twice; a config
        // error is reported by `run`).
        Cmd::Run { config, .. } if load_config(config).is_ok_and(|c| search_wiring::store_path(&c).is_some()) => {
            Some(("store", lean::STORE))
        }
        Cmd::Run { .. } => Some(("processor", lean::PROCESSOR)),
        _ => None,
    };
    let lean = role.map(|(who, profile)| (who, profile.mark, lean::ensure_profile(profile)));
    if matches!(lean, Some((_, _, lean::Outcome::Lean))) {
        lean::restore_name();
    }
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_env("SLUICE_LOG").unwrap_or_else(|_| "info".into()))
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    match lean {
        Some((who, _, lean::Outcome::Failed(e))) => {
            tracing::warn!(error = %e, "could not re-execute with the {}'s allocator settings; mimalloc's defaults apply", who)
        }
        Some((who, mark, lean::Outcome::UserChoice)) => {
            tracing::info!("{}: the {} keeps mimalloc's default settings", mark, who)
        }
        Some((_, _, lean::Outcome::Lean)) | None => {}
    }
    match cli.cmd {
        Cmd::Validate { config } => validate(&config),
        Cmd::Components { markdown } => {
            if markdown {
                print!("{}", sluice_components::reference::markdown_table());
            } else {
                components();
            }
            ExitCode::SUCCESS
        }
        Cmd::Bench { cmd } => bench_cli::main(cmd),
        Cmd::User(a) => users_cli::exit(users_cli::user(a)),
        Cmd::Group(a) => users_cli::exit(users_cli::group(a)),
        Cmd::Assign(a) => users_cli::exit(users_cli::assign(a, true)),
        Cmd::Unassign(a) => users_cli::exit(users_cli::assign(a, false)),
        Cmd::Token(a) => users_cli::exit(users_cli::token(a)),
        Cmd::Agent { config } => run_role(Role::Agent, config),
        Cmd::Dispatcher { config } => run_role(Role::Dispatcher, config),
        #[cfg(feature = "kafka")]
        Cmd::Kafka { cmd: KafkaCmd::Replay { config, from, to, topic, pipeline, source } } => {
            match kafka_replay(&config, &from, &to, &topic, pipeline.as_deref(), source.as_deref()) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("error: {e:#}");
                    ExitCode::FAILURE
                }
            }
        }
        Cmd::Run { config, admin_password_file } => match run(Role::Node, config, admin_password_file) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("error: {e:#}");
                ExitCode::FAILURE
            }
        },
    }
}

/// `sluice agent` / `sluice dispatcher`: a node run from that role's config.
fn run_role(role: Role, config: PathBuf) -> ExitCode {
    let name = format!("{role:?}").to_lowercase();
    tracing::info!(config = %config.display(), role = %name, "starting the {name} role");
    match run(role, config, None) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn validate(path: &std::path::Path) -> ExitCode {
    let errors = match load_config(path) {
        Ok(cfg) => {
            let registry = Arc::default();
            let mounts = topology::mounts_for(&cfg.api);
            match topology::check(&cfg, &registry, &mounts) {
                Ok(()) => Vec::new(),
                Err(e) => e,
            }
        }
        Err(e) => e,
    };
    if errors.is_empty() {
        println!("{}: ok", path.display());
        ExitCode::SUCCESS
    } else {
        for e in &errors {
            eprintln!("{}: {e}", path.display());
        }
        eprintln!("{} error(s)", errors.len());
        ExitCode::from(2)
    }
}

fn components() {
    use sluice_components::{filters, sinks, sources};
    println!("sources:");
    for s in sources::SPECS {
        println!("  {:<12} {}", s.name, s.summary);
    }
    println!("filters:");
    for s in filters::SPECS {
        println!("  {:<12} {}", s.name, s.summary);
    }
    println!("sinks:");
    for s in sinks::SPECS {
        println!("  {:<12} {}", s.name, s.summary);
    }
}

/// The config a replay runs: only the pipeline of the chosen `kafka` source,
/// with that source alone, in replay mode; a memory queue (a running
/// processor may own the persisted one) and no API listener.
#[cfg(feature = "kafka")]
fn replay_config(
    text: &str,
    from: &str,
    to: &str,
    topics: &[String],
    pipeline: Option<&str>,
    source: Option<&str>,
) -> anyhow::Result<(String, String, String)> {
    let mut root: toml::Table = toml::from_str(text).context("invalid TOML")?;
    let pipelines = root.get("pipelines").and_then(|p| p.as_table()).context("no [pipelines]")?;
    let mut found = Vec::new();
    for (pname, p) in pipelines {
        if pipeline.is_some_and(|want| want != pname) {
            continue;
        }
        let Some(sources) = p.get("sources").and_then(|s| s.as_table()) else { continue };
        for (sid, s) in sources {
            if s.get("type").and_then(|t| t.as_str()) == Some("kafka") && source.is_none_or(|want| want == sid) {
                found.push((pname.clone(), sid.clone()));
            }
        }
    }
    let (pname, sid) = match found.len() {
        1 => found.remove(0),
        0 => anyhow::bail!("no kafka source found (check --pipeline / --source)"),
        _ => anyhow::bail!(
            "several kafka sources: {}; choose one with --pipeline and --source",
            found.iter().map(|(p, s)| format!("{p}.{s}")).collect::<Vec<_>>().join(", ")
        ),
    };
    let mut p = pipelines.get(&pname).and_then(|v| v.as_table()).cloned().context("pipeline")?;
    let mut src = p.get("sources").and_then(|s| s.get(&sid)).and_then(|v| v.as_table()).cloned().context("source")?;
    src.insert("replay_from".into(), toml::Value::String(from.into()));
    src.insert("replay_to".into(), toml::Value::String(to.into()));
    if !topics.is_empty() {
        src.insert(
            "topics".into(),
            toml::Value::Array(topics.iter().map(|t| toml::Value::String(t.clone())).collect()),
        );
    }
    let mut only = toml::Table::new();
    only.insert(sid.clone(), toml::Value::Table(src));
    p.insert("sources".into(), toml::Value::Table(only));
    p.remove("queue");
    let mut ps = toml::Table::new();
    ps.insert(pname.clone(), toml::Value::Table(p));
    root.insert("pipelines".into(), toml::Value::Table(ps));
    let mut api = toml::Table::new();
    api.insert("address".into(), toml::Value::String(String::new()));
    root.insert("api".into(), toml::Value::Table(api));
    Ok((toml::to_string(&root)?, pname, sid))
}

#[cfg(feature = "kafka")]
fn kafka_replay(
    path: &std::path::Path,
    from: &str,
    to: &str,
    topics: &[String],
    pipeline: Option<&str>,
    source: Option<&str>,
) -> anyhow::Result<()> {
    let text = std::fs::read_to_string(path).with_context(|| format!("read {}", path.display()))?;
    let (text, pname, sid) = replay_config(&text, from, to, topics, pipeline, source)?;
    let cfg = sluice_runtime::config::parse_config(&text).map_err(|e| anyhow::anyhow!("{}", NodeError::Config(e)))?;
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().thread_name("sluice").build()?;
    rt.block_on(async move {
        let node = Node::start(cfg).await?;
        while !node.sources_done().await {
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        let comps = node.registry.components();
        let metrics =
            comps.iter().find(|(p, c)| *p == pname && c.kind == "source" && c.id == sid).map(|(_, c)| Arc::clone(c));
        node.shutdown().await;
        let Some(m) = metrics else { anyhow::bail!("replay source metrics missing") };
        let errors = m.counter("replay_errors").get();
        println!(
            "{{\"pipeline\":\"{pname}\",\"source\":\"{sid}\",\"replayed\":{},\"errors\":{errors}}}",
            m.events_out.get()
        );
        if errors > 0 {
            anyhow::bail!("the replay failed (see the log above)");
        }
        Ok(())
    })
}

/// Every connection takes a descriptor: the soft limit goes up to the hard
/// one before anything listens (issue #18), and both are logged.
fn raise_open_file_limit() {
    let show = |v: Option<u64>| v.map_or_else(|| "unlimited".to_string(), |n| n.to_string());
    match sluice_net::fdlimit::raise_nofile() {
        Ok(l) => tracing::info!(
            soft_at_start = %show(l.before), soft = %show(l.after), hard = %show(l.hard),
            "open-file limit (RLIMIT_NOFILE)"
        ),
        Err(e) => tracing::warn!(error = %e, "could not raise the open-file limit (RLIMIT_NOFILE)"),
    }
}

/// The config file with `role`'s defaults filled in (at start and on reload).
fn load_for(
    role: Role,
    path: &std::path::Path,
) -> Result<sluice_runtime::config::Config, Vec<sluice_core::config::ConfigError>> {
    let mut cfg = load_config(path)?;
    cfg.apply_role_defaults(role);
    Ok(cfg)
}

fn run(role: Role, path: PathBuf, admin_password_file: Option<PathBuf>) -> anyhow::Result<()> {
    let cfg = load_for(role, &path).map_err(|e| anyhow::anyhow!("{}", NodeError::Config(e)))?;
    raise_open_file_limit();
    let mut rt = tokio::runtime::Builder::new_multi_thread();
    if let Some(n) = cfg.node.runtime_threads {
        rt.worker_threads(n.get());
    }
    rt.enable_all().thread_name("sluice");
    // Idle runtime threads give freed memory back (issue #18);
    // `SLUICE_IDLE_COLLECT=0` opts out.
    if std::env::var_os("SLUICE_IDLE_COLLECT").is_none_or(|v| v != "0") {
        rt.on_thread_park(lean::collect_when_idle);
    }
    let rt = rt.build()?;
    let shutdown_timeout = cfg.node.shutdown_timeout.0;
    let result = rt.block_on(async move {
        let name = cfg.node.name.clone();
        // The API listener is bound before any pipeline starts: sources with
        // `address = "api"` mount their routes on it.
        let api = if cfg.api.address.is_empty() {
            None
        } else {
            let tokens = sluice_runtime::tokens::resolve(&cfg.api, &cfg.node.data_dir)
                .map_err(|e| anyhow::anyhow!("{}", NodeError::Config(e)))?;
            // A certificate that cannot be read stops the start, before the bind.
            let tls = cfg
                .api
                .tls
                .as_ref()
                .map(sluice_components::tls::listen_acceptor)
                .transpose()
                .map_err(|(k, m)| anyhow::anyhow!("[api] {}: {m}", sluice_components::tls::listen_key(k)))?;
            let listener = tokio::net::TcpListener::bind(&cfg.api.address)
                .await
                .with_context(|| format!("api: bind {}", cfg.api.address))?;
            let local = listener.local_addr()?;
            Some((listener, local, tokens, tls))
        };
        let mounts = match &api {
            Some((_, local, _, _)) => Arc::new(Mounts::new(local.to_string())),
            None => Arc::new(Mounts::disabled()),
        };
        sluice_api::reserve_routes(&mounts)?;
        let metrics_auth = cfg.api.metrics_need_token();
        {
            use std::os::unix::fs::DirBuilderExt as _;
            let dir = &cfg.node.data_dir;
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .with_context(|| format!("create the data directory {}", dir.display()))?;
        }
        let users = match &cfg.auth {
            Some(auth) => Some(users_cli::open_for_run(auth, &cfg.node.data_dir, admin_password_file.as_deref())?),
            None => None,
        };
        let api_cfg = cfg.api.clone();
        // `[search]`: an OpenSearch client is built before the node starts
        // (a secret or CA file that cannot be read stops the start).
        let mut search = search_wiring::SearchWiring::new(&cfg)?;
        let opensearch = search.prepare(&cfg)?;
        let running = cfg.clone();
        let node = Node::start_with_mounts(cfg, Arc::clone(&mounts)).await?;
        search.apply(&running, opensearch);
        if let Some((listener, local, tokens, tls)) = api {
            if tokens.is_empty() && users.is_none() {
                tracing::warn!("no [api.tokens] and no [auth] configured: the search API answers 401 to every request");
            }
            let statics =
                Arc::new(sluice_api::StaticTokens::new(tokens.into_iter().map(|t| (t.name, t.secret, t.allowed))));
            let state = sluice_api::ApiState::new(Arc::clone(&node.registry), name)
                .with_mounts(mounts)
                .with_metrics_auth(metrics_auth);
            if !metrics_auth && !local.ip().is_loopback() {
                tracing::warn!(address = %local, "[api] metrics_auth = \"none\": /_node/stats and /metrics answer anyone who reaches this port");
            }
            let state = match users {
                Some(users) => state.with_users(users, statics),
                None => state.with_auth(statics),
            };
            // The search API answers from the backend in the slot: the
            // store the first `store` sink opened, or OpenSearch, or none
            // (503 `no_store`); a reload may replace it.
            let state = state.with_backend_slot(search.slot());
            tracing::info!(address = %local, max_connections = api_cfg.max_connections.get(), tls = tls.is_some(), "api listening");
            let listener = sluice_net::Listener::new(listener, "api", api_cfg.max_connections.get(), state.listener.clone());
            tokio::spawn(sluice_api::serve(listener, state, api_cfg.timeouts(), tls));
        }
        wait_for_signals(role, &node, &path, &mut search).await?;
        node.shutdown().await;
        Ok(())
    });
    // Blocking threads a stuck source left behind must not keep the
    // process alive (dropping the runtime would wait for them).
    rt.shutdown_timeout(shutdown_timeout);
    result
}

async fn wait_for_signals(
    role: Role,
    node: &Node,
    path: &std::path::Path,
    search: &mut search_wiring::SearchWiring,
) -> anyhow::Result<()> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    let mut hup = signal(SignalKind::hangup())?;
    loop {
        tokio::select! {
            _ = term.recv() => { tracing::info!("SIGTERM: draining and stopping"); return Ok(()); }
            _ = int.recv() => { tracing::info!("SIGINT: draining and stopping"); return Ok(()); }
            _ = hup.recv() => {
                tracing::info!(config = %path.display(), "SIGHUP: reloading");
                match load_for(role, path) {
                    Err(e) => tracing::error!("reload rejected, keeping the running config: {}", NodeError::Config(e)),
                    Ok(cfg) => match search.prepare(&cfg) {
                        Err(e) => tracing::error!("reload rejected, keeping the running config: {e:#}"),
                        Ok(opensearch) => match node.reload(cfg.clone()).await {
                            Ok(()) => {
                                search.apply(&cfg, opensearch);
                                tracing::info!("reload done");
                            }
                            Err(e) => tracing::error!("reload rejected, keeping the running config: {e}"),
                        },
                    },
                }
            }
        }
    }
}
