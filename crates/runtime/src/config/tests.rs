//! Tests of the node config: parsing, defaults, validation errors naming
//! their keys.

use super::*;

fn errs(text: &str) -> Vec<String> {
    parse_config(text).err().unwrap_or_default().iter().map(ToString::to_string).collect()
}

/// Issue 22 item 5: `/_node/stats` and `/metrics` need a token when the
/// API listens beyond loopback, unless `metrics_auth = "none"` says so.
#[test]
fn metrics_auth_defaults_to_token_beyond_loopback() {
    let api = |extra: &str| {
        let text = format!("[api]\n{extra}\n[pipelines.main.sources.g]\ntype = \"generator\"\n[pipelines.main.sinks.b]\ntype = \"blackhole\"\n");
        parse_config(&text).unwrap().api
    };
    assert!(!api("").metrics_need_token(), "127.0.0.1:8080 by default");
    assert!(!api("address = \"[::1]:9000\"").metrics_need_token());
    assert!(!api("address = \"localhost:9000\"").metrics_need_token());
    assert!(api("address = \"0.0.0.0:8080\"").metrics_need_token());
    assert!(api("address = \"10.1.2.3:8080\"").metrics_need_token());
    assert!(api("address = \"[::]:8080\"").metrics_need_token());
    assert!(api("address = \"logs.example.com:8080\"").metrics_need_token());
    assert!(!api("address = \"0.0.0.0:8080\"\nmetrics_auth = \"none\"").metrics_need_token());
    assert!(api("metrics_auth = \"token\"").metrics_need_token());
    let e = errs("[api]\nmetrics_auth = \"maybe\"\n");
    assert!(e.iter().any(|m| m.contains("metrics_auth") && m.contains("token")), "{e:?}");
}

/// Issue #20: `[search]` picks the engine; errors name the key.
#[test]
fn search_backend_is_chosen_by_config() {
    let pipes = "[pipelines.main.sources.g]\ntype = \"generator\"\n[pipelines.main.sinks.b]\ntype = \"blackhole\"\n";
    let search = |s: &str| parse_config(&format!("{s}\n{pipes}")).map(|c| c.search);
    assert_eq!(search("").unwrap(), SearchConfig::Embedded);
    assert_eq!(search("[search]\nbackend = \"embedded\"").unwrap(), SearchConfig::Embedded);
    let SearchConfig::Opensearch(o) =
        search("[search]\nbackend = \"opensearch\"\nendpoints = [\"http://10.0.0.1:9200\"]\nindex = \"logs-*\"\nauth = { type = \"basic\", user = \"u\", password_file = \"/etc/p\" }")
            .unwrap()
    else {
        panic!("opensearch expected")
    };
    assert_eq!((o.endpoints[0].as_str(), o.index.as_str()), ("http://10.0.0.1:9200", "logs-*"));
    let e = errs(&format!("[search]\nbackend = \"opensearch\"\nendpoints = []\n{pipes}"));
    assert!(e.iter().any(|m| m.starts_with("search.endpoints")), "{e:?}");
    let e = errs(&format!("[search]\nbackend = \"opensearch\"\nendpoints = [\"h:1\"]\nindx = \"x\"\n{pipes}"));
    assert!(e.iter().any(|m| m.contains("indx")), "{e:?}");
    let e = errs(&format!("[search]\nbackend = \"elastic\"\n{pipes}"));
    assert!(e.iter().any(|m| m.starts_with("search") && m.contains("elastic")), "{e:?}");
}

#[test]
fn minimal_config() {
    let c = parse_config(
        "[pipelines.main.sources.g]\ntype = \"generator\"\n[pipelines.main.sinks.b]\ntype = \"blackhole\"\n",
    )
    .unwrap();
    let p = &c.pipelines["main"];
    assert_eq!(p.batch_size, 128);
    assert_eq!(p.queue, QueueConfig::Memory { max_events: 16384 });
    assert_eq!(c.api.address, "127.0.0.1:8080");
    assert!(c.api.tokens.is_empty());
}

const AGENT: &str = "[pipelines.files.sources.f]\ntype = \"file\"\n[pipelines.files.queue]\ntype = \"persisted\"\n\
    [pipelines.files.sinks.b]\ntype = \"blackhole\"\n\
    [pipelines.tuned]\nworkers = 3\n[pipelines.tuned.queue]\ntype = \"persisted\"\nshards = 4\n\
    [pipelines.tuned.sources.f]\ntype = \"file\"\n[pipelines.tuned.sinks.b]\ntype = \"blackhole\"\n\
    [pipelines.mem.sources.f]\ntype = \"file\"\n[pipelines.mem.sinks.b]\ntype = \"blackhole\"\n";

#[test]
fn agent_role_defaults_fill_only_unset_keys() {
    let mut c = parse_config(AGENT).unwrap();
    let node = c.clone();
    assert_eq!(c.node.runtime_threads, None);
    assert_eq!(c.pipelines["files"].workers, cores());
    c.apply_role_defaults(Role::Agent);
    assert_eq!(c.node.runtime_threads.map(|n| n.get()), Some(cores().min(2)));
    let shards = |c: &Config, p: &str| match &c.pipelines[p].queue {
        QueueConfig::Persisted(q) => q.shards,
        QueueConfig::Memory { .. } => None,
    };
    assert_eq!((c.pipelines["files"].workers, shards(&c, "files")), (1, Some(1)));
    assert_eq!((c.pipelines["tuned"].workers, shards(&c, "tuned")), (3, Some(4)), "set keys are kept");
    assert_eq!(c.pipelines["mem"].workers, 1);
    assert_eq!(c.pipelines["mem"].queue, QueueConfig::Memory { max_events: 16384 });
    // Other roles keep the throughput defaults.
    for role in [Role::Node, Role::Dispatcher] {
        let mut n = node.clone();
        n.apply_role_defaults(role);
        assert_eq!(n, node);
    }
    // An explicit runtime_threads wins; 0 is refused.
    let mut t = parse_config(&format!("[node]\nruntime_threads = 6\n{AGENT}")).unwrap();
    t.apply_role_defaults(Role::Agent);
    assert_eq!(t.node.runtime_threads.map(|n| n.get()), Some(6));
    assert_eq!(
        errs(&format!("[node]\nruntime_threads = 0\n{AGENT}")),
        vec!["node.runtime_threads: must be at least 1".to_string()]
    );
}

#[test]
fn every_error_has_its_path() {
    let e = errs(
        "bogus = 1\n[node]\nnmae = \"x\"\n[pipelines.a]\nworkers = 0\n[pipelines.a.queue]\ntype = \"disk\"\n[pipelines.b]\nbatch_size = \"big\"\n",
    );
    assert!(e.contains(&"bogus: unknown section (expected node, api, auth, search or pipelines)".to_string()), "{e:?}");
    assert!(
        e.contains(
            &"node.nmae: unknown field `nmae`, expected one of `name`, `data_dir`, `shutdown_timeout`, `runtime_threads`"
                .to_string()
        ),
        "{e:?}"
    );
    assert!(e.contains(&"pipelines.a.workers: must be at least 1".to_string()), "{e:?}");
    assert!(
        e.contains(
            &"pipelines.a.queue.type: unknown queue type \"disk\" (expected \"memory\" or \"persisted\")".to_string()
        ),
        "{e:?}"
    );
    assert!(e.contains(&"pipelines.a.sources: a pipeline needs at least one source".to_string()), "{e:?}");
    assert!(e.contains(&"pipelines.b.batch_size: invalid type: string \"big\", expected usize".to_string()), "{e:?}");
}

#[test]
fn toml_syntax_error_has_position() {
    let e = errs("[pipelines\n");
    assert!(e[0].starts_with("invalid TOML (line 1, column"), "{e:?}");
}

#[test]
fn api_tokens() {
    let p = "[pipelines.a.sources.s]\ntype=\"x\"\n[pipelines.a.sinks.s]\ntype=\"x\"\n";
    let c = parse_config(&format!(
        "[api.tokens.admin]\ntoken_file = \"admin.token\"\nallowed = [{{ group = \"*\" }}]\n\
         [api.tokens.acme]\ntoken_env = \"ACME_TOKEN\"\nallowed = [{{ group = \"acme\", host = \"web-*\" }}]\n{p}"
    ))
    .unwrap();
    assert_eq!(c.api.tokens["admin"].token_file, Some(PathBuf::from("admin.token")));
    assert_eq!(c.api.tokens["acme"].allowed, vec![sluice_query::SourcePattern::new("acme", "*", "web-*")]);
    let e = errs(&format!("[api.tokens.a]\ntoken = \"short\"\ntoken_env = \"X\"\nallowed = []\n{p}"));
    assert!(e.contains(&"api.tokens.a: set exactly one of `token`, `token_env` and `token_file`".to_string()), "{e:?}");
    assert!(e.contains(&"api.tokens.a.token: must be at least 16 characters".to_string()), "{e:?}");
    let e = errs(&format!("[api.tokens.b]\ntoken_env = \"X\"\nallowed = [{{ gruop = \"x\" }}]\n{p}"));
    assert_eq!(
        e,
        vec!["api.tokens.b.allowed[0].gruop: unknown field `gruop`, expected one of `group`, `subgroup`, `host`"]
    );
}

#[test]
fn auth_section() {
    let p = "[pipelines.a.sources.s]\ntype=\"x\"\n[pipelines.a.sinks.s]\ntype=\"x\"\n";
    assert_eq!(parse_config(p).unwrap().auth, None);
    let c = parse_config(&format!("[auth]\n[auth.session]\nidle_timeout = \"10m\"\n{p}")).unwrap();
    let a = c.auth.unwrap();
    assert_eq!(a.session.idle_timeout.0, std::time::Duration::from_secs(600));
    assert_eq!(a.db_path(std::path::Path::new("data")), PathBuf::from("data/users.db"));
    let e = errs(&format!("[auth]\npassword_min_length = 4\n[auth.totp]\nrequire_types = [\"root\"]\n{p}"));
    assert_eq!(e.len(), 1, "{e:?}");
    assert!(e[0].starts_with("auth.totp.require_types[0]: unknown variant `root`"), "{e:?}");
    let e =
        errs(&format!("[auth]\npassword_min_length = 4\n[auth.ldap]\nurl = \"ldap://x\"\nsearch_base = \"dc=x\"\n{p}"));
    assert_eq!(
        e,
        vec![
            "auth.password_min_length: must be at least 8",
            "auth.ldap.search_filter: required with search_base, and must contain {username}"
        ]
    );
}

#[test]
fn queue_options() {
    let e = errs("[pipelines.a.queue]\ntype = \"memory\"\nfsync = \"always\"\n[pipelines.a.sources.s]\ntype=\"x\"\n[pipelines.a.sinks.s]\ntype=\"x\"\n");
    assert_eq!(e, vec!["pipelines.a.queue.fsync: only valid with type = \"persisted\"".to_string()]);
    let e = errs("[pipelines.a.queue]\ntype = \"persisted\"\nfsync = \"sometimes\"\n[pipelines.a.sources.s]\ntype=\"x\"\n[pipelines.a.sinks.s]\ntype=\"x\"\n");
    assert!(e[0].starts_with("pipelines.a.queue.fsync: expected \"always\""), "{e:?}");
}
