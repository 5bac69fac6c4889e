//! HTTPS on every HTTP listener of a node (ground rule 7: TLS available on
//! every wire): the API (`[api] tls`) and the `http`, `splunk_hec`, `loki`
//! and `otlp` sources (`tls = { cert, key [, client_ca] }`), OTLP over
//! gRPC's secure channel included. Real clients: curl, and grpcio from the
//! project's Python environment. Exact counts: one event per protocol in,
//! the same five out; a plain-HTTP request to a TLS port is refused and
//! counted in the component's `tls_handshake_errors`; a client without a
//! certificate is refused where `client_ca` asks for one; a certificate
//! that cannot be read stops the start with the key that names it.

mod common;

use std::collections::BTreeSet;
use std::process::Command;

use common::pki::{pki, Pki};
use common::{free_port, python_or_skip, read_events, wait_until, Dir, Proc};

const TOKEN: &str = "https-e2e-ingest-token-0123";
const ADMIN: &str = "https-e2e-admin-token-0123456789";
const NDJSON: &str = "Content-Type: application/x-ndjson";

/// curl with the test CA; `(exit status ok, HTTP status, body)`. The
/// status is 0 when no HTTP answer came (a refused handshake).
fn curl(pki: &Pki, args: &[&str]) -> (bool, u16, String) {
    let out = Command::new("curl")
        .args(["-sS", "--max-time", "20", "--cacert", &pki.ca, "-w", "\n%{http_code}"])
        .args(args)
        .output()
        .expect("curl");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", &text));
    (out.status.success(), code.trim().parse().unwrap_or(0), body.to_string())
}

fn tls_line(pki: &Pki, client_ca: bool) -> String {
    let ca = if client_ca { format!(", client_ca = \"{}\"", pki.ca) } else { String::new() };
    format!("tls = {{ cert = \"{}\", key = \"{}\"{ca} }}", pki.server_cert, pki.server_key)
}

fn source(id: &str, kind: &str, addresses: &str, tls: &str) -> String {
    format!(
        "[pipelines.main.sources.{id}]\ntype = \"{kind}\"\n{addresses}\n{tls}\n[pipelines.main.sources.{id}.tokens.app]\ntoken = \"{TOKEN}\"\ngroup = \"acme\"\n"
    )
}

struct Ports {
    api: u16,
    web: u16,
    hec: u16,
    loki: u16,
    otlp: u16,
    grpc: u16,
}

impl Ports {
    fn new() -> Self {
        Self {
            api: free_port(),
            web: free_port(),
            hec: free_port(),
            loki: free_port(),
            otlp: free_port(),
            grpc: free_port(),
        }
    }
}

fn config(dir: &Dir, pki: &Pki, p: &Ports, api_tls: &str) -> String {
    let tls = tls_line(pki, false);
    format!(
        "[node]\ndata_dir = \"{root}\"\n[api]\naddress = \"127.0.0.1:{api}\"\n{api_tls}\n[api.tokens.admin]\ntoken = \"{ADMIN}\"\nallowed = [{{ group = \"*\" }}]\n\
         [pipelines.main]\nbatch_delay = \"10ms\"\n{web}{hec}{loki}{otlp}[pipelines.main.sinks.out]\ntype = \"file\"\npath = \"{out}\"\n",
        root = dir.root().display(),
        api = p.api,
        web = source("web", "http", &format!("address = \"127.0.0.1:{}\"", p.web), &tls),
        hec = source("hec", "splunk_hec", &format!("address = \"127.0.0.1:{}\"", p.hec), &tls),
        loki = source("loki", "loki", &format!("address = \"127.0.0.1:{}\"", p.loki), &tls_line(pki, true)),
        otlp = source(
            "otel",
            "otlp",
            &format!("address = \"127.0.0.1:{}\"\ngrpc_address = \"127.0.0.1:{}\"", p.otlp, p.grpc),
            &tls
        ),
        out = dir.path("out.ndjson").display(),
    )
}

/// A component's counters in `/_node/stats` (read over HTTPS).
fn counter(pki: &Pki, api: u16, id: &str, name: &str) -> u64 {
    let (_, status, body) =
        curl(pki, &["-H", &format!("Authorization: Bearer {ADMIN}"), &format!("https://localhost:{api}/_node/stats")]);
    assert_eq!(status, 200, "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    let sources = v["pipelines"]["main"]["plugins"]["sources"].as_array().unwrap();
    let s = sources.iter().find(|s| s["id"] == id).unwrap_or_else(|| panic!("no source {id}: {body}"));
    s["counters"][name].as_u64().unwrap_or(0)
}

#[test]
fn https_on_the_api_and_every_http_source_one_event_each_plain_http_refused_and_counted() {
    let Some(python) = python_or_skip("https_on_the_api_and_every_http_source") else { return };
    let dir = Dir::new("https");
    let pki = pki(&dir);
    let p = Ports::new();
    let cfg = dir.path("c.toml");
    std::fs::write(&cfg, config(&dir, &pki, &p, &tls_line(&pki, false))).unwrap();
    let mut node = Proc::start(&["run", cfg.to_str().unwrap()], &dir.path("log"), "sluice");
    let bearer = format!("Authorization: Bearer {TOKEN}");
    let web = format!("https://localhost:{}/ndjson", p.web);
    wait_until("the https http source", &mut node, || {
        curl(&pki, &["-H", &bearer, "-H", NDJSON, "--data-binary", "", &web]).1 == 200
    });

    // One event over each protocol, each over TLS.
    let (_, status, body) =
        curl(&pki, &["-H", &bearer, "-H", NDJSON, "--data-binary", "{\"message\":\"via-http\"}\n", &web]);
    assert_eq!(status, 200, "{body}");
    let (_, status, body) = curl(
        &pki,
        &[
            "-H",
            &format!("Authorization: Splunk {TOKEN}"),
            "-H",
            "Content-Type: application/json",
            "--data-binary",
            "{\"event\":\"via-hec\"}",
            &format!("https://localhost:{}/services/collector/event", p.hec),
        ],
    );
    assert_eq!((status, body.contains("Success")), (200, true), "{body}");
    let loki_url = format!("https://localhost:{}/loki/api/v1/push", p.loki);
    let loki_body = "{\"streams\":[{\"stream\":{\"job\":\"t\"},\"values\":[[\"1700000000000000000\",\"via-loki\"]]}]}";
    let loki_args = ["-H", &bearer, "-H", "Content-Type: application/json", "--data-binary", loki_body, &loki_url];
    // The loki port asks for a client certificate signed by the CA: none, no answer.
    let (ok, status, _) = curl(&pki, &loki_args);
    assert!(!ok && status == 0, "a client without a certificate was answered {status}");
    let (_, status, body) =
        curl(&pki, &[&["--cert", pki.client_cert.as_str(), "--key", pki.client_key.as_str()][..], &loki_args].concat());
    assert_eq!(status, 204, "{body}");
    let otlp_body =
        "{\"resourceLogs\":[{\"scopeLogs\":[{\"logRecords\":[{\"body\":{\"stringValue\":\"via-otlp-http\"}}]}]}]}";
    let (_, status, body) = curl(
        &pki,
        &[
            "-H",
            &bearer,
            "-H",
            "Content-Type: application/json",
            "--data-binary",
            otlp_body,
            &format!("https://localhost:{}/v1/logs", p.otlp),
        ],
    );
    assert_eq!(status, 200, "{body}");
    let script = format!(
        r#"
import grpc
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2
creds = grpc.ssl_channel_credentials(root_certificates=open("{ca}", "rb").read())
ch = grpc.secure_channel("localhost:{grpc}", creds)
call = ch.unary_unary("/opentelemetry.proto.collector.logs.v1.LogsService/Export")
req = logs_service_pb2.ExportLogsServiceRequest()
req.resource_logs.add().scope_logs.add().log_records.add().body.string_value = "via-otlp-grpc"
resp = logs_service_pb2.ExportLogsServiceResponse.FromString(
    call(req.SerializeToString(), metadata=(("authorization", "Bearer {TOKEN}"),), timeout=20))
print("rejected", resp.partial_success.rejected_log_records)
"#,
        ca = pki.ca,
        grpc = p.grpc
    );
    let out = common::run_python(&python, &script);
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "rejected 0");

    // Exactly the five events, one per protocol.
    let out = dir.path("out.ndjson");
    wait_until("five events", &mut node, || read_events(&out).len() >= 5);
    std::thread::sleep(std::time::Duration::from_millis(500));
    let got: BTreeSet<String> =
        read_events(&out).iter().map(|e| e["message"].as_str().unwrap_or("").to_string()).collect();
    let want: BTreeSet<String> =
        ["via-http", "via-hec", "via-loki", "via-otlp-http", "via-otlp-grpc"].iter().map(|s| s.to_string()).collect();
    assert_eq!((read_events(&out).len(), got), (5, want));

    // Plain HTTP to a TLS port: no HTTP answer, the handshake counted.
    assert_eq!(counter(&pki, p.api, "web", "tls_handshake_errors"), 0);
    let (ok, status, _) = curl(
        &pki,
        &["-H", &bearer, "-H", NDJSON, "--data-binary", "{}", &format!("http://127.0.0.1:{}/ndjson", p.web)],
    );
    assert!(!ok && status == 0, "plain HTTP to the TLS port was answered {status}");
    wait_until("the refused handshake counted", &mut node, || counter(&pki, p.api, "web", "tls_handshake_errors") == 1);
    // The API itself (its stats above came over HTTPS): plain HTTP gets no answer.
    let (_, status, body) = curl(&pki, &[&format!("https://localhost:{}/api/v1/openapi.json", p.api)]);
    assert_eq!((status, body.contains("\"openapi\"")), (200, true), "{body}");
    let (ok, status, _) = curl(&pki, &[&format!("http://127.0.0.1:{}/_node/stats", p.api)]);
    assert!(!ok && status == 0, "plain HTTP to the TLS API was answered {status}");
    let (_, _, metrics) = curl(&pki, &[&format!("https://localhost:{}/metrics", p.api)]);
    assert!(metrics.contains("sluice_api_tls_handshake_errors_total 1"), "{metrics}");
    assert_eq!(read_events(&out).len(), 5, "a refused request added events");
    drop(node);
}

#[test]
fn a_tls_file_that_cannot_be_read_stops_the_start_naming_its_key() {
    let dir = Dir::new("https-bad");
    let pki = pki(&dir);
    let p = Ports::new();
    let missing = dir.path("missing.key");
    let cfg = dir.path("c.toml");
    let bad = |api_tls: &str, text: String| {
        std::fs::write(&cfg, text).unwrap();
        let out = Command::new(common::bin()).args(["run", cfg.to_str().unwrap()]).output().unwrap();
        let said = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(!out.status.success(), "started with {api_tls}: {said}");
        said
    };
    // The API's key.
    let api_tls = format!("tls = {{ cert = \"{}\", key = \"{}\" }}", pki.server_cert, missing.display());
    let said = bad(&api_tls, config(&dir, &pki, &p, &api_tls));
    assert!(said.contains("[api] tls.key: cannot read") && said.contains("missing.key"), "{said}");
    // A source's CA.
    let text = config(&dir, &pki, &p, "")
        .replace(&format!("client_ca = \"{}\"", pki.ca), &format!("client_ca = \"{}\"", missing.display()));
    let said = bad("(none)", text);
    assert!(said.contains("pipelines.main.sources.loki.tls.client_ca") && said.contains("missing.key"), "{said}");
}
