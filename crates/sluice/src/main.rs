//! The `sluice` binary: `run` a node from a config file, `validate` a config,
//! list `components`. Roles (agent, dispatcher, processor, store) are
//! configurations of this one binary.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::Context as _;
use clap::{Parser, Subcommand};
use sluice_runtime::config::load_config;
use sluice_runtime::node::NodeError;
use sluice_runtime::{topology, Node};

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
    },
    /// Check a config file and report every error with its key path.
    Validate {
        /// The config file.
        config: PathBuf,
    },
    /// List the available sources, filters and sinks.
    Components,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_env("SLUICE_LOG").unwrap_or_else(|_| "info".into()))
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    match cli.cmd {
        Cmd::Validate { config } => validate(&config),
        Cmd::Components => {
            components();
            ExitCode::SUCCESS
        }
        Cmd::Run { config } => match run(config) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("error: {e:#}");
                ExitCode::FAILURE
            }
        },
    }
}

fn validate(path: &std::path::Path) -> ExitCode {
    let errors = match load_config(path) {
        Ok(cfg) => {
            let registry = std::sync::Arc::default();
            match topology::build(&cfg, &registry) {
                Ok(_) => Vec::new(),
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

fn run(path: PathBuf) -> anyhow::Result<()> {
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().thread_name("sluice").build()?;
    rt.block_on(async move {
        let cfg = load_config(&path).map_err(|e| anyhow::anyhow!("{}", NodeError::Config(e)))?;
        let api_addr = cfg.api.address.clone();
        let name = cfg.node.name.clone();
        let node = Node::start(cfg).await?;
        if !api_addr.is_empty() {
            let listener =
                tokio::net::TcpListener::bind(&api_addr).await.with_context(|| format!("api: bind {api_addr}"))?;
            tracing::info!(address = %listener.local_addr()?, "api listening");
            let state =
                sluice_api::ApiState { registry: std::sync::Arc::clone(&node.registry), name, started: Instant::now() };
            tokio::spawn(async move {
                if let Err(e) = sluice_api::serve(listener, state).await {
                    tracing::error!(error = %e, "api server stopped");
                }
            });
        }
        wait_for_signals(&node, &path).await?;
        node.shutdown().await;
        Ok(())
    })
}

async fn wait_for_signals(node: &Node, path: &std::path::Path) -> anyhow::Result<()> {
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
                match load_config(path) {
                    Err(e) => tracing::error!("reload rejected, keeping the running config: {}", NodeError::Config(e)),
                    Ok(cfg) => match node.reload(cfg).await {
                        Ok(()) => tracing::info!("reload done"),
                        Err(e) => tracing::error!("reload rejected, keeping the running config: {e}"),
                    },
                }
            }
        }
    }
}
