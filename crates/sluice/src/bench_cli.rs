//! `sluice bench …`: argument parsing and printing for the load generator,
//! the experiment runner, `compare`, `table`, `report` and `sizing`. Everything they
//! do lives in the `sluice-bench` library (issue #6); this module only turns
//! arguments into its calls and its results into output.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use clap::{Args, Subcommand};
use sluice_bench::case::Case;
use sluice_bench::clock::RealClock;
use sluice_bench::collector::Collector;
use sluice_bench::report::{self, RunResult};
use sluice_bench::runner::{run_case, RunOptions};
use sluice_bench::{sizing, GenConfig, Generator, Target, Template};

/// `sluice bench` subcommands.
#[derive(Subcommand)]
pub enum BenchCmd {
    /// Send generated events (run id + sequence number in each) at a fixed
    /// rate pinned to a start epoch, or as fast as possible; prints a JSON
    /// report (latency from intended send time, achieved rate, CPU/event).
    Gen(GenArgs),
    /// Run an experiment case (`bench/cases/<case>`): start its processes
    /// and peers, offer the load, write result.json and report.html.
    Run(RunArgs),
    /// Print the ratios B / A of two result.json files.
    Compare {
        /// Baseline result.json.
        a: PathBuf,
        /// Result.json to compare with it.
        b: PathBuf,
    },
    /// Print a Markdown table of result.json files (the BENCHMARKS.md matrix).
    Table {
        /// result.json files (or run directories holding one).
        results: Vec<PathBuf>,
    },
    /// Write report.html again from a run's result.json (after the report
    /// learned new charts, or for a result copied elsewhere).
    Report {
        /// result.json (or the run directory holding one).
        result: PathBuf,
        /// Where to write the HTML (default: report.html beside result.json).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Run processor/store cases at increasing rates and print the hardware
    /// needed per N events/s (cores, RAM, disk per day).
    Sizing(SizingArgs),
}

/// `sluice bench gen`.
#[derive(Args)]
pub struct GenArgs {
    /// `tcp://H:P` (ndjson/lines), `tcp+octet://H:P` (RFC 6587 syslog),
    /// `udp://H:P`, `file://PATH`, `http://H:P[?token=T]` (`_bulk`, with an ingest token),
    /// `sluice://H:P[,H:P…]?token=…` (agent protocol).
    #[arg(long)]
    target: String,
    /// `thesis`, `apache`, `syslog5424`, `syslog3164` or `file:PATH`.
    #[arg(long, default_value = "thesis")]
    template: String,
    /// Events in total.
    #[arg(long, default_value_t = 100_000)]
    count: u64,
    /// Events per second in total (0: as fast as possible).
    #[arg(long, default_value_t = 0.0)]
    rate: f64,
    /// Parallel connections.
    #[arg(long, default_value_t = 1)]
    connections: usize,
    /// Seconds left out of latency figures.
    #[arg(long, default_value_t = 0.0)]
    warmup: f64,
    /// Most events per write.
    #[arg(long, default_value_t = 512)]
    max_batch: u64,
    /// Also listen here (`HOST:PORT`) for what the pipeline delivers (a
    /// `tcp` sink pointing at it) and account every event: received, lost,
    /// duplicated, end-to-end latency.
    #[arg(long)]
    collect: Option<String>,
    /// Longest wait for acknowledgements / the collector at the end, seconds.
    #[arg(long, default_value_t = 60.0)]
    timeout: f64,
}

/// `sluice bench run`.
#[derive(Args)]
pub struct RunArgs {
    /// The case directory.
    case: PathBuf,
    /// Override the case's rate (events/s; 0 = as fast as possible).
    #[arg(long)]
    rate: Option<f64>,
    /// Override the case's event count.
    #[arg(long)]
    count: Option<u64>,
    /// Run every `(rate, count)` of the case's `load.runs` (the thesis matrix).
    #[arg(long)]
    matrix: bool,
    /// Output directory (default `target/bench/<case>-<unix time>`).
    #[arg(long)]
    out: Option<PathBuf>,
    /// The sluice binary that runs the processes (default: this one; env
    /// `SLUICE_BIN` too).
    #[arg(long)]
    sluice: Option<PathBuf>,
    /// The repository's `scripts/` directory (peers); default: found above the case.
    #[arg(long)]
    scripts: Option<PathBuf>,
    /// Override a case variable (repeatable): `--var algorithm=least_loaded`.
    #[arg(long = "var", value_parser = parse_var)]
    vars: Vec<(String, String)>,
}

fn parse_var(s: &str) -> Result<(String, String), String> {
    s.split_once('=').map(|(k, v)| (k.to_string(), v.to_string())).ok_or_else(|| format!("{s:?}: expected KEY=VALUE"))
}

/// `sluice bench sizing`.
#[derive(Args)]
pub struct SizingArgs {
    /// Case directories to size.
    #[arg(long = "case", default_values = ["bench/cases/throughput-passthrough", "bench/cases/store-ingest"])]
    cases: Vec<PathBuf>,
    /// Offered rates, ascending.
    #[arg(long, value_delimiter = ',', default_values_t = [1000.0, 5000.0, 20000.0, 50000.0, 100000.0])]
    rates: Vec<f64>,
    /// Seconds per rate.
    #[arg(long, default_value_t = 10.0)]
    seconds: f64,
    /// Event rates to size hardware for.
    #[arg(long, value_delimiter = ',', default_values_t = [1000.0, 10000.0, 100000.0])]
    targets: Vec<f64>,
    /// Output directory.
    #[arg(long, default_value = "target/bench/sizing")]
    out: PathBuf,
    /// The sluice binary (default: this one; env `SLUICE_BIN` too).
    #[arg(long)]
    sluice: Option<PathBuf>,
}

/// Runs a `bench` subcommand.
pub fn main(cmd: BenchCmd) -> ExitCode {
    let r = match cmd {
        BenchCmd::Gen(a) => gen(a),
        BenchCmd::Run(a) => run(a),
        BenchCmd::Compare { a, b } => compare(&a, &b),
        BenchCmd::Table { results } => table(&results),
        BenchCmd::Report { result, out } => rerender(&result, out),
        BenchCmd::Sizing(a) => size(a),
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn gen(a: GenArgs) -> anyhow::Result<()> {
    let target = Target::parse(&a.target)?;
    let template = Template::parse(&a.template).map_err(|e| anyhow::anyhow!("--template: {e}"))?;
    let mut cfg = GenConfig::new(target, template, a.count, a.rate);
    cfg.connections = a.connections;
    cfg.warmup = Duration::from_secs_f64(a.warmup.max(0.0));
    cfg.max_batch = a.max_batch.max(1);
    cfg.ack_timeout = Duration::from_secs_f64(a.timeout.max(0.0));
    cfg.progress = true;
    let timeout = cfg.ack_timeout;
    let run_id = cfg.run_id.clone();
    let generator = Generator::new(cfg, RealClock::start(), a.collect.is_some());
    let collector = match &a.collect {
        Some(addr) => Some(
            Collector::start(&[("collector".into(), addr.clone())], &run_id, a.count, generator.recorder())
                .with_context(|| format!("--collect: bind {addr}"))?,
        ),
        None => None,
    };
    let r = generator.run()?;
    let mut doc = serde_json::to_value(&r)?;
    if let Some(c) = collector {
        let all = c.wait(r.sent, timeout, Duration::from_millis(500));
        c.stop();
        let rep = c.report(r.sent);
        if !all {
            eprintln!("collector: timed out with {} of {} events missing", rep.accounting.lost, r.sent);
        }
        doc["received"] = serde_json::to_value(&rep)?;
    }
    println!("{}", serde_json::to_string_pretty(&doc)?);
    Ok(())
}

/// `scripts/` of the repository holding `case` (searched upwards), else `./scripts`.
fn find_scripts(case: &Path) -> PathBuf {
    let start = case.canonicalize().unwrap_or_else(|_| case.to_path_buf());
    start
        .ancestors()
        .map(|d| d.join("scripts"))
        .find(|s| s.join("loadbalancers.sh").is_file())
        .unwrap_or_else(|| PathBuf::from("scripts"))
}

fn sluice_bin(arg: Option<PathBuf>) -> anyhow::Result<PathBuf> {
    match arg.or_else(|| std::env::var_os("SLUICE_BIN").map(PathBuf::from)) {
        Some(p) => Ok(p),
        None => std::env::current_exe().context("the path of this sluice binary"),
    }
}

fn unix_s() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

fn print_run(r: &RunResult, out: &Path) {
    let s = &r.summary;
    let shares: Vec<String> = s.shares.iter().map(|x| format!("{} {:.1} %", x.name, x.share * 100.0)).collect();
    eprintln!(
        "{}: offered {} → generator {}/s; processors {} events/s mean, {} p50; shares {} (CV {:.3}); lost {}, duplicated {}; latency p50 {} / p99 {} / p99.9 {} ms; {} events per sluice CPU-s; generator {} ns CPU/event{}",
        r.case,
        if r.rate > 0.0 { format!("{}/s", report::fmt_num(r.rate)) } else { "as fast as possible".into() },
        report::fmt_num(r.generator.achieved_rate),
        report::fmt_num(s.throughput_mean),
        report::fmt_num(s.throughput_p50),
        shares.join(", "),
        s.balance_cv,
        s.lost,
        s.duplicated,
        report::fmt_num(s.latency.p50_ms),
        report::fmt_num(s.latency.p99_ms),
        report::fmt_num(s.latency.p999_ms),
        report::fmt_num(s.events_per_cpu_s),
        report::fmt_num(r.generator.cpu_ns_per_event),
        if r.quiescent { "" } else { " — NOT QUIESCENT (timed out)" }
    );
    eprintln!("  {}", out.join("report.html").display());
}

fn run(a: RunArgs) -> anyhow::Result<()> {
    let case = Case::load(&a.case)?;
    let base = a.out.unwrap_or_else(|| PathBuf::from(format!("target/bench/{}-{}", case.name, unix_s())));
    let opts = RunOptions {
        rate: a.rate,
        count: a.count,
        out: base.clone(),
        sluice: sluice_bin(a.sluice)?,
        scripts: a.scripts.unwrap_or_else(|| find_scripts(&a.case)),
        progress: true,
        vars: a.vars.into_iter().collect(),
    };
    let runs: Vec<(Option<f64>, Option<u64>)> = if a.matrix {
        anyhow::ensure!(!case.load.runs.is_empty(), "--matrix: the case has no load.runs");
        case.load.runs.iter().map(|&(r, c)| (Some(r), Some(c))).collect()
    } else {
        vec![(a.rate, a.count)]
    };
    let mut results = Vec::new();
    for (rate, count) in runs {
        let mut o = opts.clone();
        o.rate = rate;
        o.count = count;
        if a.matrix {
            o.out = base.join(format!("{}-{}", rate.unwrap_or(0.0) as u64, count.unwrap_or(0)));
        }
        let r = run_case(&case, &o)?;
        print_run(&r, &o.out);
        results.push(r);
    }
    if results.len() > 1 {
        println!("{}", report::matrix_table(&results));
    } else if let Some(r) = results.first() {
        println!("{}", serde_json::to_string(&report::figures(r))?);
    }
    Ok(())
}

fn read_result(p: &Path) -> anyhow::Result<RunResult> {
    let file = if p.is_dir() { p.join("result.json") } else { p.to_path_buf() };
    let text = std::fs::read(&file).with_context(|| format!("read {}", file.display()))?;
    serde_json::from_slice(&text).with_context(|| format!("{}: not a bench result", file.display()))
}

fn compare(a: &Path, b: &Path) -> anyhow::Result<()> {
    print!("{}", report::compare(&read_result(a)?, &read_result(b)?));
    Ok(())
}

fn table(results: &[PathBuf]) -> anyhow::Result<()> {
    let rs = results.iter().map(|p| read_result(p)).collect::<anyhow::Result<Vec<_>>>()?;
    print!("{}", report::matrix_table(&rs));
    Ok(())
}

fn rerender(result: &Path, out: Option<PathBuf>) -> anyhow::Result<()> {
    let r = read_result(result)?;
    let dir =
        if result.is_dir() { result.to_path_buf() } else { result.parent().unwrap_or(Path::new(".")).to_path_buf() };
    let out = out.unwrap_or_else(|| dir.join("report.html"));
    std::fs::write(&out, report::html(&r)).with_context(|| format!("write {}", out.display()))?;
    println!("{}", out.display());
    Ok(())
}

fn size(a: SizingArgs) -> anyhow::Result<()> {
    let first = a.cases.first().context("--case: at least one")?;
    let opts = RunOptions {
        rate: None,
        count: None,
        out: a.out.clone(),
        sluice: sluice_bin(a.sluice)?,
        scripts: find_scripts(first),
        progress: false,
        vars: Default::default(),
    };
    let rows = sizing::run(&a.cases, &a.rates, a.seconds, &opts)?;
    std::fs::create_dir_all(&a.out)?;
    std::fs::write(a.out.join("sizing.json"), serde_json::to_vec_pretty(&rows)?)?;
    print!("{}", sizing::table(&rows, &a.targets));
    Ok(())
}
