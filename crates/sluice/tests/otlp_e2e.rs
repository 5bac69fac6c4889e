//! Issue #21, the `otlp` source through the real binary: the unmodified
//! OpenTelemetry Python SDK (installed into `.cache/venv` by
//! `scripts/python-env.sh`) logs through its `LoggingHandler` with the
//! OTLP/HTTP exporter (protobuf, gzip) and then the OTLP/gRPC exporter
//! (gzip), inside spans so records carry trace and span ids; then grpcio
//! sends a malformed message (`INVALID_ARGUMENT`) and a request with one
//! bad record (`partial_success`), and raw HTTP requests check the 400
//! `google.rpc.Status`, a JSON partial success and a wrong token. Exact
//! counts and fields in a file sink.

mod common;
use common::{free_port, http, source, source_token, Dir};

const N: usize = 120;
const TOKEN: &str = "otlp-token-0123456789abcdef";

#[test]
fn issue_21_opentelemetry_sdk_http_and_grpc_exporters_store_every_record_with_ids_and_resource() {
    let Some(python) = common::python_or_skip("otlp_e2e") else { return };
    let dir = Dir::new("otlp");
    let (port, gport) = (free_port(), free_port());
    let sources = [
        source("otel", "otlp", port, &format!("grpc_address = \"127.0.0.1:{gport}\"")),
        source_token("otel", TOKEN, "group = \"acme\"\nhost = \"pinned\""),
    ];
    let (mut p, out) = common::start_file_node(&dir, &sources.concat(), port);
    common::wait_port(gport, &mut p);

    let script = format!(
        r#"
import logging, sys
import grpc
from opentelemetry.sdk._logs import LoggerProvider, LoggingHandler
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter as HttpExporter
from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter as GrpcExporter
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2
from opentelemetry.proto.logs.v1 import logs_pb2

tracer = TracerProvider().get_tracer("e2e")
for kind in ("http", "grpc"):
    if kind == "http":
        exp = HttpExporter(endpoint="http://127.0.0.1:{port}/v1/logs", headers={{"authorization": "Bearer {TOKEN}"}},
                           compression=Compression.Gzip)
    else:
        exp = GrpcExporter(endpoint="127.0.0.1:{gport}", insecure=True, headers=(("authorization", "Bearer {TOKEN}"),),
                           compression=grpc.Compression.Gzip)
    results = []
    orig = exp.export
    def export(batch, *a, _orig=orig, **k):
        r = _orig(batch, *a, **k)
        results.append(r.name)
        return r
    exp.export = export
    provider = LoggerProvider(resource=Resource.create({{"service.name": "checkout-" + kind, "deployment.environment": "e2e"}}))
    provider.add_log_record_processor(BatchLogRecordProcessor(exp, max_export_batch_size=50))
    log = logging.getLogger("app." + kind)
    log.propagate = False
    log.setLevel(logging.DEBUG)
    log.addHandler(LoggingHandler(level=logging.DEBUG, logger_provider=provider))
    for i in range({N}):
        if i % 10 == 0:
            with tracer.start_as_current_span("op") as span:
                c = span.get_span_context()
                print("ids", kind, i, format(c.trace_id, "032x"), format(c.span_id, "016x"))
                log.error("%s message %d", kind, i, extra={{"order_id": i}})
        else:
            log.warning("%s message %d", kind, i, extra={{"order_id": i}})
    provider.shutdown()
    print("results", kind, ",".join(sorted(set(results))), len(results))

# Raw gRPC calls: a malformed message, then one good and one bad record.
ch = grpc.insecure_channel("127.0.0.1:{gport}")
call = ch.unary_unary("/opentelemetry.proto.collector.logs.v1.LogsService/Export")
md = (("authorization", "Bearer {TOKEN}"),)
try:
    call(b"\x0a\xff\xff", metadata=md)
    print("malformed accepted")
except grpc.RpcError as e:
    print("malformed", e.code().name, e.details())
try:
    call(b"", metadata=(("authorization", "Bearer wrong"),))
    print("wrong token accepted")
except grpc.RpcError as e:
    print("wrong-token", e.code().name)
req = logs_service_pb2.ExportLogsServiceRequest()
sl = req.resource_logs.add().scope_logs.add()
r = sl.log_records.add(); r.body.string_value = "grpc kept"; r.severity_number = 9; r.time_unix_nano = 1700000000000000007
r = sl.log_records.add(); r.body.string_value = "grpc refused"; r.trace_id = b"\x01\x02\x03"
resp = logs_service_pb2.ExportLogsServiceResponse.FromString(call(req.SerializeToString(), metadata=md))
print("partial", resp.partial_success.rejected_log_records, resp.partial_success.error_message)
"#
    );
    let st = std::process::Command::new(&python).arg("-c").arg(&script).output().expect("python");
    let stdout = String::from_utf8_lossy(&st.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&st.stderr).into_owned();
    assert!(st.status.success(), "{stdout}\n{stderr}");
    assert!(
        !stderr.contains("Traceback") && !stderr.contains("Failed to export"),
        "the client saw an error:\n{stderr}"
    );
    let line = |prefix: &str| stdout.lines().find(|l| l.starts_with(prefix)).map(str::to_string);
    for kind in ["http", "grpc"] {
        let r = line(&format!("results {kind} ")).unwrap_or_default();
        assert!(r.starts_with(&format!("results {kind} SUCCESS ")), "{kind} exporter: {r}\n{stderr}");
    }
    assert_eq!(
        line("malformed").as_deref().map(|l| l.split(' ').take(2).collect::<Vec<_>>().join(" ")),
        Some("malformed INVALID_ARGUMENT".into()),
        "{stdout}"
    );
    assert!(line("malformed").unwrap().contains("not an ExportLogsServiceRequest protobuf"), "{stdout}");
    assert_eq!(line("wrong-token").as_deref(), Some("wrong-token UNAUTHENTICATED"), "{stdout}");
    assert_eq!(line("partial").as_deref(), Some("partial 1 trace_id must be 16 bytes (32 hex digits)"), "{stdout}");

    // OTLP/HTTP refusals and a JSON partial success, by hand.
    let auth = format!("Bearer {TOKEN}");
    let proto = ("Content-Type", "application/x-protobuf");
    let json = ("Content-Type", "application/json");
    let (s, b) = http(port, "POST", "/v1/logs", &[proto, ("Authorization", &auth)], b"\x0a\xff\xff");
    assert_eq!(s, 400, "{b}");
    // google.rpc.Status{code: 3 (INVALID_ARGUMENT), message: …}
    assert!(b.starts_with("\x08\x03\x12") && b.contains("not an ExportLogsServiceRequest protobuf"), "{b:?}");
    let (s, b) = http(port, "POST", "/v1/logs", &[json, ("Authorization", &auth)], br#"{"resourceLogs":{}}"#);
    assert_eq!(
        (s, b.as_str()),
        (400, r#"{"code":3,"message":"otlp: invalid OTLP/JSON body: \"resourceLogs\" is not an array"}"#)
    );
    let (s, _) = http(port, "POST", "/v1/logs", &[json, ("Authorization", "Bearer nope")], b"{}");
    assert_eq!(s, 401);
    let partial = br#"{"resourceLogs":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"by-hand"}}]},
        "scopeLogs":[{"logRecords":[{"body":{"stringValue":"json kept"},"severityText":"Info","timeUnixNano":"1700000000000000009"},
        {"body":{"stringValue":"json refused"},"spanId":"abc"}]}]}]}"#;
    let (s, b) = http(port, "POST", "/v1/logs", &[json, ("Authorization", &auth)], partial);
    assert_eq!(
        (s, b.as_str()),
        (
            200,
            r#"{"partialSuccess":{"rejectedLogRecords":"1","errorMessage":"span_id must be 8 bytes (16 hex digits)"}}"#
        )
    );

    let total = 2 * N + 2;
    let events = common::wait_events("every record", &mut p, &out, total);
    for e in &events {
        assert_eq!((&e["@group"], &e["@host"]), (&"acme".into(), &"pinned".into()), "{e}");
        assert!(!e["message"].as_str().unwrap_or("").contains("refused"), "{e}");
    }
    for kind in ["http", "grpc"] {
        let mine: Vec<&serde_json::Value> = events
            .iter()
            .filter(|e| e["message"].as_str().is_some_and(|m| m.starts_with(&format!("{kind} message "))))
            .collect();
        let mut seen: Vec<usize> =
            mine.iter().map(|e| e["message"].as_str().unwrap().rsplit(' ').next().unwrap().parse().unwrap()).collect();
        seen.sort_unstable();
        assert_eq!(seen, (0..N).collect::<Vec<_>>(), "{kind}");
        for e in mine {
            let i: usize = e["message"].as_str().unwrap().rsplit(' ').next().unwrap().parse().unwrap();
            assert_eq!(e["order_id"], i, "{e}");
            assert_eq!(e["resource"]["service.name"], format!("checkout-{kind}"), "{e}");
            assert_eq!(e["resource"]["deployment.environment"], "e2e", "{e}");
            assert_eq!(e["scope"]["name"], format!("app.{kind}"), "{e}");
            if i.is_multiple_of(10) {
                assert_eq!(
                    (&e["severity_text"], &e["severity_number"], &e["level"]),
                    (&"ERROR".into(), &17.into(), &"error".into()),
                    "{e}"
                );
                let ids = line(&format!("ids {kind} {i} ")).unwrap();
                let ids: Vec<&str> = ids.split(' ').collect();
                assert_eq!((&e["trace_id"], &e["span_id"]), (&ids[3].into(), &ids[4].into()), "{e}");
            } else {
                assert_eq!(
                    (&e["severity_text"], &e["severity_number"], &e["level"]),
                    (&"WARN".into(), &13.into(), &"warn".into()),
                    "{e}"
                );
                assert!(e.get("trace_id").is_none(), "{e}");
            }
        }
    }
    let e = events.iter().find(|e| e["message"] == "grpc kept").unwrap();
    assert_eq!((&e["level"], &e["@timestamp"]), (&"info".into(), &"2023-11-14T22:13:20.000000007Z".into()), "{e}");
    let e = events.iter().find(|e| e["message"] == "json kept").unwrap();
    assert_eq!((&e["level"], &e["resource"]["service.name"]), (&"info".into(), &"by-hand".into()), "{e}");
    assert_eq!(e["@timestamp"], "2023-11-14T22:13:20.000000009Z", "{e}");
    p.term();
}
