//! Runs one case (`sluice bench run bench/cases/<case>`): allocates ports,
//! starts the collectors, renders the config templates, starts the Kafka
//! brokers and creates the run's topic ([`crate::kafka`]), starts the sluice
//! processes and the balancers (through `scripts/loadbalancers.sh`), waits
//! until they listen (and a Kafka consumer group is stable), offers the load
//! with the generator (in this process), runs
//! the timed actions, waits for quiescence, stops everything and writes
//! `result.json` and `report.html` into the run's directory.
//!
//! Every process is sampled about once a second: CPU and RSS from `/proc`,
//! and — for processes with an `api` port — queue depth and events out from
//! `/_node/stats`. CPU figures cover the measured window (load start to
//! quiescence).

use std::collections::BTreeMap;
use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use crate::case::{substitute, Case};
use crate::clock::{Clock, RealClock};
use crate::collector::Collector;
use crate::gen::{GenConfig, Generator, Target};
use crate::kafka;
use crate::procstat;
use crate::report::{self, ActionResult, Machine, ProcessResult, RunResult, Sample, SenderSample, RESULT_VERSION};
use crate::template::Template;
use crate::BenchError;

/// How to run a case.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Override the case's rate.
    pub rate: Option<f64>,
    /// Override the case's count.
    pub count: Option<u64>,
    /// Directory for configs, logs and results (created).
    pub out: PathBuf,
    /// The sluice binary to start processes with.
    pub sluice: PathBuf,
    /// The repository's `scripts/` directory (peers).
    pub scripts: PathBuf,
    /// Progress bar on a terminal.
    pub progress: bool,
    /// Variables overriding the case's `[vars]` (`--var KEY=VALUE`).
    pub vars: BTreeMap<String, String>,
}

/// A started process of the case.
struct Running {
    name: String,
    role: String,
    child: Option<Child>,
    pid: Option<u32>,
    api: Option<String>,
    data: Option<PathBuf>,
    exit: String,
    samples: Vec<Sample>,
    cpu_at_start: Option<f64>,
}

fn free_port() -> Result<u16, BenchError> {
    let l = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(l.local_addr()?.port())
}

fn load_avg() -> [f64; 3] {
    let s = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let v: Vec<f64> = s.split_whitespace().take(3).filter_map(|x| x.parse().ok()).collect();
    [v.first().copied().unwrap_or(0.0), v.get(1).copied().unwrap_or(0.0), v.get(2).copied().unwrap_or(0.0)]
}

fn machine(before: [f64; 3]) -> Machine {
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| format!("Linux {}", s.trim()))
        .unwrap_or_default();
    Machine {
        cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
        load_before: before,
        load_after: load_avg(),
        kernel,
        sluice: env!("CARGO_PKG_VERSION").into(),
    }
}

fn random_token() -> String {
    let mut b = [0u8; 16];
    if let Ok(mut f) = std::fs::File::open("/dev/urandom") {
        let _ = f.read_exact(&mut b);
    }
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Bytes under `path` split into (queue, everything else): a directory
/// named `queue` (the persisted queue's default place, `data_dir/queue/`)
/// counts whole as queue.
pub fn du_split(path: &Path) -> (u64, u64) {
    let Ok(rd) = std::fs::read_dir(path) else { return (0, 0) };
    let (mut queue, mut rest) = (0, 0);
    for e in rd.flatten() {
        match e.metadata() {
            Ok(m) if m.is_dir() && e.file_name() == "queue" => queue += du(&e.path()),
            Ok(m) if m.is_dir() => {
                let (q, r) = du_split(&e.path());
                queue += q;
                rest += r;
            }
            Ok(m) => rest += m.len(),
            Err(_) => {}
        }
    }
    (queue, rest)
}

fn du(path: &Path) -> u64 {
    let Ok(rd) = std::fs::read_dir(path) else { return 0 };
    rd.flatten()
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => du(&e.path()),
            Ok(m) => m.len(),
            Err(_) => 0,
        })
        .sum()
}

/// `GET http://addr/path` as JSON (a small client: the stats endpoint only).
pub fn get_json(addr: &str, path: &str) -> Option<serde_json::Value> {
    let sock: std::net::SocketAddr = addr.parse().ok()?;
    let mut s = TcpStream::connect_timeout(&sock, Duration::from_secs(1)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    write!(s, "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").ok()?;
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).ok()?;
    let at = memchr::memmem::find(&buf, b"\r\n\r\n")?;
    serde_json::from_slice(&buf[at + 4..]).ok()
}

/// Events queued and events out, summed over a node's pipelines. Queued is
/// the larger of the queue's gauge and events in − events out: a persisted
/// queue's gauge counts unread records only, and its readers run ahead of
/// the workers, so the gauge alone misses a backlog held in the pipeline.
fn node_stats(api: &str) -> Option<(u64, u64)> {
    let v = get_json(api, "/_node/stats")?;
    let pipes = v.get("pipelines")?.as_object()?;
    let num = |p: &serde_json::Value, ptr: &str| p.pointer(ptr).and_then(serde_json::Value::as_u64).unwrap_or(0);
    let mut q = 0;
    let mut out = 0;
    for p in pipes.values() {
        let (gauge, i, o) = (num(p, "/queue/events"), num(p, "/events/in"), num(p, "/events/out"));
        q += gauge.max(i.saturating_sub(o));
        out += o;
    }
    Some((q, out))
}

fn wait_listening(addr: &str, timeout: Duration) -> bool {
    let deadline = Instant::now() + timeout;
    let Ok(sock) = addr.parse::<std::net::SocketAddr>() else { return false };
    while Instant::now() < deadline {
        if TcpStream::connect_timeout(&sock, Duration::from_millis(200)).is_ok() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

fn signal(pid: u32, sig: &str) {
    let _ = Command::new("kill").args([sig, &pid.to_string()]).stdout(Stdio::null()).stderr(Stdio::null()).status();
}

/// Runs `case`; see the module docs.
pub fn run_case(case: &Case, opts: &RunOptions) -> Result<RunResult, BenchError> {
    let (rate, count) = case.load_for(opts.rate, opts.count)?;
    std::fs::create_dir_all(&opts.out)?;
    let out = opts.out.canonicalize()?;
    let load_before = load_avg();
    let started_unix_ms =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64);
    let case_err = |m: String| BenchError::Case { path: case.dir.join("case.toml").display().to_string(), message: m };

    // Ports and variables.
    let mut vars: BTreeMap<String, String> = case.vars.clone();
    vars.extend(opts.vars.clone());
    vars.insert("rate".into(), format!("{rate}"));
    vars.insert("count".into(), count.to_string());
    vars.insert("token".into(), random_token());
    vars.insert("case_dir".into(), case.dir.canonicalize()?.display().to_string());
    for p in &case.processes {
        for port in &p.ports {
            let n = free_port()?;
            vars.insert(format!("{}.{port}", p.name), format!("127.0.0.1:{n}"));
            vars.insert(format!("{}.{port}.port", p.name), n.to_string());
        }
    }
    let run_id = crate::gen::new_run_id();
    if std::env::var(kafka::BROKER_ENV).is_ok_and(|v| !v.trim().is_empty()) {
        let acted =
            |n: &str| case.actions.iter().any(|a| [&a.kill, &a.stop, &a.start].iter().any(|t| t.as_deref() == Some(n)));
        if let Some(p) = case.peers.iter().find(|p| p.kind == "kafka" && acted(&p.name)) {
            return Err(case_err(format!(
                "peer {}: actions on the broker need a broker the run manages; unset {}",
                p.name,
                kafka::BROKER_ENV
            )));
        }
    }
    for peer in &case.peers {
        if peer.kind == "kafka" {
            // The broker's address is known before it starts (its
            // instance's port, or SLUICE_BENCH_KAFKA); topic and group are
            // the run's own.
            let brokers = kafka::address(peer.port);
            let n = &peer.name;
            vars.insert(format!("{n}.in"), brokers.clone());
            vars.insert(format!("{n}.brokers"), brokers);
            vars.insert(format!("{n}.topic"), format!("sluice-bench-{}-{run_id}", case.name));
            vars.insert(format!("{n}.group"), format!("sluice-bench-{run_id}"));
            vars.insert(format!("{n}.partitions"), peer.partitions.to_string());
            continue;
        }
        let n = free_port()?;
        vars.insert(format!("{}.in", peer.name), format!("127.0.0.1:{n}"));
        vars.insert(format!("{}.in.port", peer.name), n.to_string());
    }

    // Collectors, one endpoint per collecting process.
    let binds: Vec<(String, String)> =
        case.processes.iter().filter(|p| p.collect).map(|p| (p.name.clone(), "127.0.0.1:0".to_string())).collect();
    let template = {
        let t = &case.load.template;
        match t.strip_prefix("file:") {
            Some(p) if Path::new(p).is_relative() => format!("file:{}", case.dir.join(p).display()),
            _ => t.clone(),
        }
    };
    let template = Template::parse(&template).map_err(case_err)?;
    let target_url = substitute(&case.load.target, &vars).map_err(|e| case_err(format!("load.target: {e}")))?;
    let target = Target::parse(&target_url)?;
    let mut gcfg = GenConfig::new(target, template, count, rate);
    gcfg.connections = case.load.connections;
    gcfg.run_id = run_id.clone();
    gcfg.warmup = case.load.warmup.map_or(Duration::ZERO, |d| d.0);
    gcfg.max_batch = case.load.max_batch;
    gcfg.progress = opts.progress;
    gcfg.ack_timeout = case.quiesce.timeout.0;
    gcfg.retry_for = case.quiesce.timeout.0;
    // The generator's epoch is set when the load starts; collectors
    // attach to its recorder then.
    let slot: Arc<Mutex<Option<Arc<crate::gen::Recorder>>>> = Arc::default();
    let pending = PendingRecorder(Arc::clone(&slot));
    let collector = if binds.is_empty() { None } else { Some(pending.collector(&binds, &run_id, count)?) };
    if let Some(c) = &collector {
        for (name, _) in &binds {
            if let Some(a) = c.addr(name) {
                vars.insert(format!("{name}.collector"), a.to_string());
            }
        }
    }

    // Configs.
    let mut configs = BTreeMap::new();
    for p in &case.processes {
        let mut v = vars.clone();
        v.extend(p.vars.clone());
        v.extend(opts.vars.clone());
        let data = out.join(format!("{}-data", p.name));
        std::fs::create_dir_all(&data)?;
        v.insert("data".into(), data.display().to_string());
        v.insert("name".into(), p.name.clone());
        for port in &p.ports {
            for suffix in ["", ".port"] {
                if let Some(x) = vars.get(&format!("{}.{port}{suffix}", p.name)) {
                    v.insert(format!("self.{port}{suffix}"), x.clone());
                }
            }
        }
        if let Some(a) = vars.get(&format!("{}.collector", p.name)) {
            v.insert("collector".into(), a.clone());
        }
        let tpl_path = case.dir.join(&p.config);
        let tpl = std::fs::read_to_string(&tpl_path)
            .map_err(|e| case_err(format!("process {}: {}: {e}", p.name, tpl_path.display())))?;
        let text =
            substitute(&tpl, &v).map_err(|e| case_err(format!("process {}: {}: {e}", p.name, p.config.display())))?;
        let cfg_path = out.join(format!("{}.toml", p.name));
        std::fs::write(&cfg_path, text)?;
        configs.insert(p.name.clone(), (cfg_path, data));
    }

    let procs: Arc<Mutex<Vec<Running>>> = Arc::default();
    let start_process = |name: &str| -> Result<(), BenchError> {
        let p = case.processes.iter().find(|p| p.name == name).ok_or_else(|| case_err(format!("no process {name}")))?;
        let (cfg, data) = &configs[name];
        let log = std::fs::File::create(out.join(format!("{name}.log")))?;
        // Agents and dispatchers run through their role subcommands, as a
        // user starts them (`sluice agent --config …`).
        let mut cmd = Command::new(&opts.sluice);
        match p.role.as_str() {
            "agent" | "dispatcher" => cmd.args([p.role.as_str(), "--config"]),
            _ => cmd.arg("run"),
        };
        let child = cmd
            .arg(cfg)
            .env("SLUICE_LOG", std::env::var("SLUICE_LOG").unwrap_or_else(|_| "warn".into()))
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .map_err(|e| BenchError::Invalid(format!("start {}: {e}", opts.sluice.display())))?;
        let mut g = procs.lock();
        let pid = child.id();
        g.retain(|r| r.name != name);
        g.push(Running {
            name: name.into(),
            role: p.role.clone(),
            child: Some(child),
            pid: Some(pid),
            api: p.ports.iter().any(|x| x == "api").then(|| vars[&format!("{name}.api")].clone()),
            data: Some(data.clone()),
            exit: "stopped".into(),
            samples: Vec::new(),
            cpu_at_start: None,
        });
        Ok(())
    };
    let wait_ready = |name: &str| -> Result<(), BenchError> {
        let p = case.processes.iter().find(|p| p.name == name);
        if let Some(port) = p.and_then(|p| p.ready.as_ref()) {
            let addr = &vars[&format!("{name}.{port}")];
            let exited = || {
                let mut g = procs.lock();
                let r = g.iter_mut().find(|r| r.name == name);
                r.and_then(|r| r.child.as_mut()).is_some_and(|c| matches!(c.try_wait(), Ok(Some(_))))
            };
            let deadline = Instant::now() + Duration::from_secs(60);
            let mut up = false;
            while Instant::now() < deadline && !exited() {
                if wait_listening(addr, Duration::from_millis(250)) {
                    up = true;
                    break;
                }
            }
            if !up {
                let log = std::fs::read_to_string(out.join(format!("{name}.log"))).unwrap_or_default();
                return Err(BenchError::Invalid(format!(
                    "{name} did not listen on {addr} (it exited, or 60 s passed); its log:\n{}",
                    log.lines().rev().take(20).collect::<Vec<_>>().into_iter().rev().collect::<Vec<_>>().join("\n")
                )));
            }
        }
        Ok(())
    };

    let peers_dir = out.join("peers");
    // Kafka brokers in use (peer, broker, topic): cleaned up at the end.
    let brokers: Mutex<Vec<(&crate::case::Peer, kafka::Broker, String)>> = Mutex::default();
    let result = (|| -> Result<RunResult, BenchError> {
        // Brokers first: the processors consume from the run's topic.
        for peer in case.peers.iter().filter(|p| p.kind == "kafka") {
            let b = kafka::start(&peer.instance, peer.port, &opts.scripts)?;
            let topic = vars[&format!("{}.topic", peer.name)].clone();
            brokers.lock().push((peer, b.clone(), topic.clone()));
            kafka::create_topic(&b.brokers, &topic, peer.partitions)?;
            if let Some(pid) = b.pid {
                procs.lock().push(Running {
                    name: peer.name.clone(),
                    role: "kafka".into(),
                    child: None,
                    pid: Some(pid),
                    api: None,
                    data: None,
                    exit: if b.started { "stopped" } else { "left running (the run did not start it)" }.into(),
                    samples: Vec::new(),
                    cpu_at_start: None,
                });
            }
        }
        for p in case.processes.iter().filter(|p| !p.deferred) {
            start_process(&p.name)?;
        }
        for p in case.processes.iter().filter(|p| !p.deferred) {
            wait_ready(&p.name)?;
        }
        for peer in case.peers.iter().filter(|p| p.kind != "kafka") {
            start_peer(peer, &vars, &peers_dir, &opts.scripts)?;
            let addr = &vars[&format!("{}.in", peer.name)];
            if !wait_listening(addr, Duration::from_secs(30)) {
                return Err(BenchError::Invalid(format!("peer {} did not listen on {addr}", peer.name)));
            }
            if let Some(pid) = peer_pid(&peers_dir, &peer.kind) {
                procs.lock().push(Running {
                    name: peer.name.clone(),
                    role: peer.kind.clone(),
                    child: None,
                    pid: Some(pid),
                    api: None,
                    data: None,
                    exit: "stopped".into(),
                    samples: Vec::new(),
                    cpu_at_start: None,
                });
            }
        }
        // The load starts on a settled consumer group.
        for (peer, b, _) in brokers.lock().iter().filter(|(p, _, _)| p.consumers > 0) {
            let group = &vars[&format!("{}.group", peer.name)];
            kafka::wait_group(&b.brokers, group, peer.consumers, Duration::from_secs(60))?;
        }
        // Let connections settle (agents connect to processors, balancers health-check).
        std::thread::sleep(Duration::from_millis(1500));

        // The load starts now: this is the epoch.
        let clock = RealClock::start();
        let generator = Generator::new(gcfg.clone(), clock, collector.is_some());
        *slot.lock() = Some(generator.recorder());
        let stop = Arc::new(AtomicBool::new(false));
        let self_cpu0 = procstat::sample_self().cpu_s;
        let actions_log: Arc<Mutex<Vec<ActionResult>>> = Arc::default();
        let sender_log: Arc<Mutex<Vec<SenderSample>>> = Arc::default();
        // Events out of the process named by `quiesce.by = "stats:NAME"`.
        let mut stats_out: Option<u64> = None;
        let (gen_report, quiescent, wall) = std::thread::scope(|scope| -> Result<_, BenchError> {
            // Sampler.
            let sampler = {
                let (procs, stop, log, rec) =
                    (Arc::clone(&procs), Arc::clone(&stop), Arc::clone(&sender_log), generator.recorder());
                scope.spawn(move || loop {
                    let t = clock.now().as_secs_f64();
                    let due = if rate > 0.0 { ((rate * t).floor() as u64).min(count) } else { rec.sent() };
                    log.lock().push(SenderSample { t, due, sent: rec.sent(), completed: rec.completed() });
                    sample_all(&procs, t);
                    if stop.load(Ordering::Relaxed) {
                        return;
                    }
                    let next = (clock.now().as_secs_f64().floor() + 1.0).max(0.0);
                    while clock.now().as_secs_f64() < next && !stop.load(Ordering::Relaxed) {
                        std::thread::sleep(Duration::from_millis(20));
                    }
                })
            };
            // Actions.
            let actor = {
                let (stop, log) = (Arc::clone(&stop), Arc::clone(&actions_log));
                let procs = Arc::clone(&procs);
                let (start_process, wait_ready, peers_dir, brokers) =
                    (&start_process, &wait_ready, &peers_dir, &brokers);
                scope.spawn(move || -> Result<(), BenchError> {
                    let mut actions = case.actions.clone();
                    actions.sort_by_key(|a| a.at.0);
                    for a in actions {
                        while clock.now() < a.at.0 {
                            if stop.load(Ordering::Relaxed) {
                                return Ok(());
                            }
                            std::thread::sleep(Duration::from_millis(5));
                        }
                        let at_s = clock.now().as_secs_f64();
                        let (what, target) = if let Some(t) = &a.kill {
                            kill(&procs, t, peers_dir, case, at_s);
                            ("kill", t.clone())
                        } else if let Some(t) = &a.stop {
                            if let Some(pid) = procs.lock().iter().find(|r| &r.name == t).and_then(|r| r.pid) {
                                signal(pid, "-TERM");
                            }
                            ("stop", t.clone())
                        } else if let Some(t) = &a.start {
                            match case.peers.iter().find(|p| &p.name == t && p.kind == "kafka") {
                                // The same instance and data: its topic and
                                // committed offsets survive the restart.
                                Some(peer) => restart_broker(peer, &procs, brokers, &opts.scripts)?,
                                None => {
                                    start_process(t)?;
                                    wait_ready(t)?;
                                }
                            }
                            ("start", t.clone())
                        } else {
                            continue;
                        };
                        log.lock().push(ActionResult { at_s, what: what.into(), target });
                    }
                    Ok(())
                })
            };
            let gen_result = generator.run();
            let sent = generator.recorder().sent();
            let quiescent = match (&collector, case.quiesce.by.strip_prefix("stats:")) {
                (_, Some(name)) => {
                    let api = vars.get(&format!("{name}.api")).cloned().unwrap_or_default();
                    let deadline = Instant::now() + case.quiesce.timeout.0;
                    let mut out = 0;
                    while Instant::now() < deadline {
                        out = node_stats(&api).map_or(out, |(_, o)| o);
                        if out >= sent {
                            break;
                        }
                        std::thread::sleep(Duration::from_millis(20));
                    }
                    stats_out = Some(out);
                    out >= sent
                }
                (Some(c), None) => c.wait(sent, case.quiesce.timeout.0, case.quiesce.settle.0),
                (None, None) => true,
            };
            let wall = clock.now().as_secs_f64();
            stop.store(true, Ordering::Relaxed);
            let _ = sampler.join();
            actor.join().map_err(|_| BenchError::Invalid("the action thread panicked".into()))??;
            Ok((gen_result?, quiescent, wall))
        })?;
        let self_cpu = procstat::sample_self().cpu_s - self_cpu0;
        sample_all(&procs, wall);

        // Figures.
        let received = collector.as_ref().map(|c| {
            c.stop();
            c.report(gen_report.sent)
        });
        let actions = actions_log.lock().clone();
        let names: Vec<String> =
            received.as_ref().map(|r| r.endpoints.iter().map(|e| e.name.clone()).collect()).unwrap_or_default();
        let idx = |n: &str| names.iter().position(|x| x == n);
        // A killed process that is not an endpoint (a balancer, a dispatcher):
        // every endpoint is a survivor (`report::NOT_AN_ENDPOINT`).
        let kills: Vec<(f64, usize)> = actions
            .iter()
            .filter(|a| a.what == "kill")
            .map(|a| (a.at_s, idx(&a.target).unwrap_or(report::NOT_AN_ENDPOINT)))
            .collect();
        let starts: Vec<(f64, usize)> =
            actions.iter().filter(|a| a.what == "start").filter_map(|a| idx(&a.target).map(|i| (a.at_s, i))).collect();
        let skip = gcfg.warmup.as_secs() as usize;
        let mut summary = match &received {
            Some(r) => report::summarize(&r.endpoints, skip, &kills, &starts),
            None => report::Summary::default(),
        };
        match &received {
            Some(r) => {
                summary.latency = r.latency.clone();
                summary.lost = r.accounting.lost;
                summary.duplicated = r.accounting.duplicated;
            }
            None => summary.latency = gen_report.latency.clone(),
        }
        if received.is_none() {
            // Throughput from the generator's window when nothing collects;
            // loss from the node's own count of events out.
            summary.throughput_mean = gen_report.sent as f64 / wall.max(1e-9);
            summary.span_s = wall;
            summary.lost = stats_out.map_or(0, |out| gen_report.sent.saturating_sub(out));
        }
        let mut processes = Vec::new();
        for r in procs.lock().iter() {
            let cpu0 = r.cpu_at_start.unwrap_or(0.0);
            let last = r.samples.last().cloned().unwrap_or_default();
            let cpu_s = (last.cpu_s - cpu0).max(0.0);
            processes.push(ProcessResult {
                name: r.name.clone(),
                role: r.role.clone(),
                cpu_s,
                cores: cpu_s / wall.max(1e-9),
                peak_rss_bytes: r.samples.iter().map(|s| s.rss_bytes).max().unwrap_or(0),
                disk_bytes: r.data.as_deref().map_or(0, du),
                // Set once the processes stopped (below).
                queue_bytes: 0,
                retained_bytes: 0,
                max_queue_events: r.samples.iter().filter_map(|s| s.queue_events).max().unwrap_or(0),
                exit: r.exit.clone(),
                samples: r.samples.clone(),
            });
        }
        let me = procstat::sample_self();
        processes.push(ProcessResult {
            name: "bench".into(),
            role: "bench".into(),
            cpu_s: self_cpu,
            cores: self_cpu / wall.max(1e-9),
            peak_rss_bytes: me.peak_rss_bytes,
            exit: "generator + collectors".into(),
            ..Default::default()
        });
        let sender = sender_log.lock().clone();
        summary.sender_max_backlog = sender.iter().map(|x| x.due.saturating_sub(x.sent)).max().unwrap_or(0);
        summary.max_queued = processes.iter().map(|p| p.max_queue_events).max().unwrap_or(0);
        let sluice_cpu: f64 =
            processes.iter().filter(|p| p.role != "bench" && !report::is_peer(&p.role)).map(|p| p.cpu_s).sum();
        summary.events_per_cpu_s = if sluice_cpu > 0.0 { gen_report.sent as f64 / sluice_cpu } else { 0.0 };
        Ok(RunResult {
            version: RESULT_VERSION,
            case: case.name.clone(),
            description: case.description.clone(),
            group: case.group.clone(),
            kind: case.kind.clone(),
            started_unix_ms,
            machine: machine(load_before),
            rate,
            count,
            generator: gen_report,
            received,
            summary,
            processes,
            actions,
            sender,
            quiescent,
            wall_s: wall,
        })
    })();

    // Stop everything, whatever happened.
    for r in procs.lock().iter_mut() {
        if let Some(c) = r.child.as_mut() {
            if c.try_wait().ok().flatten().is_none() {
                signal(c.id(), "-TERM");
            }
        }
    }
    for r in procs.lock().iter_mut() {
        if let Some(c) = r.child.as_mut() {
            let deadline = Instant::now() + Duration::from_secs(20);
            while c.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
            if c.try_wait().ok().flatten().is_none() {
                let _ = c.kill();
                let _ = c.wait();
            }
        }
    }
    for (peer, b, topic) in brokers.lock().iter() {
        kafka::delete_topic(&b.brokers, topic);
        kafka::stop(b, peer.port, &opts.scripts);
    }
    if case.peers.iter().any(|p| p.kind != "kafka") {
        let _ = Command::new(opts.scripts.join("loadbalancers.sh"))
            .args(["stop", &peers_dir.display().to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
    let mut result = result?;
    // What stays on disk, measured once every process stopped (the store's
    // last commit is done): retained bytes and the queue's working files.
    for r in procs.lock().iter() {
        if let (Some(data), Some(p)) = (r.data.as_deref(), result.processes.iter_mut().find(|p| p.name == r.name)) {
            (p.queue_bytes, p.retained_bytes) = du_split(data);
        }
    }
    std::fs::write(
        out.join("result.json"),
        serde_json::to_vec_pretty(&result).map_err(|e| BenchError::Invalid(e.to_string()))?,
    )?;
    std::fs::write(out.join("report.html"), report::html(&result))?;
    Ok(result)
}

/// A collector whose recorder is attached when the load starts.
struct PendingRecorder(Arc<Mutex<Option<Arc<crate::gen::Recorder>>>>);

impl PendingRecorder {
    fn collector(&self, binds: &[(String, String)], run_id: &str, count: u64) -> Result<Collector, BenchError> {
        Ok(Collector::start_deferred(binds, run_id, count, Arc::clone(&self.0))?)
    }
}

fn kill(procs: &Mutex<Vec<Running>>, target: &str, peers_dir: &Path, case: &Case, at_s: f64) {
    let mut g = procs.lock();
    if let Some(r) = g.iter_mut().find(|r| r.name == target) {
        match r.child.as_mut() {
            Some(c) => {
                let _ = c.kill();
                let _ = c.wait();
            }
            None => {
                if let Some(pid) = r.pid {
                    signal(pid, "-KILL");
                }
            }
        }
        r.exit = format!("killed (-9) at {at_s:.1} s");
        r.pid = None;
    } else if let Some(peer) = case.peers.iter().find(|p| p.name == target) {
        if let Some(pid) = peer_pid(peers_dir, &peer.kind) {
            signal(pid, "-KILL");
        }
    }
}

/// Starts a kafka peer's broker again (a `start` action after `kill` or
/// `stop`) and samples the new JVM under the peer's name.
fn restart_broker(
    peer: &crate::case::Peer,
    procs: &Mutex<Vec<Running>>,
    brokers: &Mutex<Vec<(&crate::case::Peer, kafka::Broker, String)>>,
    scripts: &Path,
) -> Result<(), BenchError> {
    let b = kafka::start(&peer.instance, peer.port, scripts)?;
    let mut g = procs.lock();
    if let Some(r) = g.iter_mut().find(|r| r.name == peer.name) {
        r.pid = b.pid;
        r.cpu_at_start = None;
        r.exit = "restarted".into();
    }
    drop(g);
    if let Some(x) = brokers.lock().iter_mut().find(|x| x.0.name == peer.name) {
        // Stop at the end what this run started, whichever start it was.
        x.1.pid = b.pid;
        x.1.started |= b.started;
    }
    Ok(())
}

fn sample_all(procs: &Mutex<Vec<Running>>, t: f64) {
    let targets: Vec<(usize, u32, Option<String>)> =
        procs.lock().iter().enumerate().filter_map(|(i, r)| r.pid.map(|p| (i, p, r.api.clone()))).collect();
    for (i, pid, api) in targets {
        let Some(s) = procstat::sample(pid) else { continue };
        let stats = api.as_deref().and_then(node_stats);
        let mut g = procs.lock();
        let Some(r) = g.get_mut(i) else { continue };
        if r.pid != Some(pid) {
            continue;
        }
        if r.cpu_at_start.is_none() {
            r.cpu_at_start = Some(s.cpu_s);
        }
        r.samples.push(Sample {
            t,
            cpu_s: s.cpu_s,
            rss_bytes: s.rss_bytes,
            queue_events: stats.map(|x| x.0),
            events_out: stats.map(|x| x.1),
        });
        if let Some(c) = r.child.as_mut() {
            if let Ok(Some(st)) = c.try_wait() {
                r.exit = format!("exited ({st})");
                r.pid = None;
            }
        }
    }
}

fn peer_pid(dir: &Path, kind: &str) -> Option<u32> {
    std::fs::read_to_string(dir.join("lb").join(format!("{kind}.pid"))).ok()?.trim().parse().ok()
}

fn start_peer(
    peer: &crate::case::Peer,
    vars: &BTreeMap<String, String>,
    dir: &Path,
    scripts: &Path,
) -> Result<(), BenchError> {
    let backends: Vec<String> = peer.backends.iter().map(|b| vars[b].clone()).collect();
    let port = &vars[&format!("{}.in.port", peer.name)];
    let mut cmd = Command::new(scripts.join("loadbalancers.sh"));
    cmd.args(["start", &dir.display().to_string()])
        .env("LB_ONLY", &peer.kind)
        .env("LB_BACKENDS", backends.join(" "))
        .stdin(Stdio::null());
    match peer.kind.as_str() {
        "haproxy" => {
            cmd.env("HAPROXY_PORT", port).env("HAPROXY_BALANCE", peer.balance.as_deref().unwrap_or("roundrobin"));
        }
        "nginx" => {
            cmd.env("NGINX_PORT", port).env("NGINX_BALANCE", peer.balance.as_deref().unwrap_or("round_robin"));
        }
        _ => {
            cmd.env("PEN_PORT", port);
        }
    }
    let o = cmd.output().map_err(|e| BenchError::Invalid(format!("scripts/loadbalancers.sh: {e}")))?;
    if !o.status.success() {
        return Err(BenchError::Invalid(format!(
            "scripts/loadbalancers.sh start ({}) failed: {}{}",
            peer.kind,
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )));
    }
    Ok(())
}
