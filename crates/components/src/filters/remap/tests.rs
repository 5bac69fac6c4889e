//! Tests of the `remap` filter (with the `remap` feature).

use std::sync::Arc;

use sluice_core::codec::{parse_timestamp, to_json_string};
use sluice_core::component::{BuildContext, Filter};
use sluice_core::metrics::ComponentMetrics;
use sluice_core::{Event, Identity, Object, Value};

use super::*;

const TS: i64 = 1_600_000_000_123_456_789;

fn cx() -> BuildContext {
    let mut cx = BuildContext::for_test("filter", "remap");
    cx.path = "pipelines.main.filters[1]".into();
    cx
}

fn build_in(cx: &BuildContext, body: &str) -> Result<Box<dyn Filter>, ConfigError> {
    let v: toml::Value = toml::from_str(body).map_err(|e| ConfigError::new("toml", e.to_string()))?;
    (SPEC.build)(v, cx)
}

/// Runs `program` over `events`; returns the output and the metrics.
fn run_with(body: &str, mut events: Vec<Event>) -> (Vec<Event>, Arc<ComponentMetrics>) {
    let cx = cx();
    let f = build_in(&cx, body).unwrap_or_else(|e| panic!("{e}"));
    f.process(&mut events);
    (events, cx.metrics)
}

fn program(p: &str) -> String {
    format!("source = '''\n{p}\n'''\n")
}

fn ev(json: &str) -> Event {
    let fields = Value::from_json(json.as_bytes()).unwrap().into_object().unwrap();
    Event::new(TS, fields, Arc::new(Identity::new("acme", "web", "h1")), Arc::from("tcp:5170"))
}

fn fields_json(e: &Event) -> String {
    e.fields().clone().into_value().to_json()
}

fn loghub_line(file: &str, n: usize) -> String {
    let text = std::fs::read_to_string(format!("{}/../../testdata/loghub/{file}", env!("CARGO_MANIFEST_DIR"))).unwrap();
    text.lines().nth(n).unwrap().to_string()
}

#[test]
fn set_rename_delete_keep_key_order() {
    let (out, m) = run_with(
        &program(".new = \"v\"\n.renamed = del(.a)\ndel(.password)\n.b.d = [1, 2.5, null, true]"),
        vec![ev(r#"{"message":"m","z":0,"a":1,"b":{"c":"x"},"password":"p"}"#)],
    );
    assert_eq!(out.len(), 1);
    // Old keys keep their order; new ones follow, sorted (VRL objects are sorted maps).
    assert_eq!(
        fields_json(&out[0]),
        r#"{"message":"m","z":0,"b":{"c":"x","d":[1,2.5,null,true]},"new":"v","renamed":1}"#
    );
    assert_eq!(out[0].timestamp, TS);
    assert_eq!(*out[0].identity, Identity::new("acme", "web", "h1"));
    assert_eq!(&*out[0].source, "tcp:5170");
    assert_eq!((m.events_in.get(), m.events_out.get(), m.events_failed.get()), (1, 1, 0));
}

#[test]
fn every_json_type_round_trips_exactly() {
    let text = r#"{"s":"héllo \"q\"\n","e":"","i":-42,"max":9223372036854775807,"min":-9223372036854775808,"f":1.0,"whole":3.0,"g":0.1,"h":-2.5e-300,"big":1.8446744073709552e19,"t":true,"n":null,"a":[1,1.5,"x",[],{},[null,[false]]],"o":{"z":{"y":{"x":[{"w":1}]}},"a":2},"emptyo":{},"@version":"1"}"#;
    let e = ev(text);
    let (out, m) = run_with(&program("del(.not_there)"), vec![e.clone()]);
    assert_eq!(m.events_failed.get(), 0);
    assert_eq!(out[0].fields(), e.fields(), "{}", fields_json(&out[0]));
    assert_eq!(fields_json(&out[0]), Value::from_json(text.as_bytes()).unwrap().to_json());
    // The conversion functions alone, both ways, on each value.
    for (_, v) in e.fields().iter() {
        assert_eq!(&from_vrl(to_vrl(v), Some(v)), v);
    }
    // Without the original to follow, keys come back sorted.
    let o = e.fields().get("o").unwrap();
    assert_eq!(from_vrl(to_vrl(o), None).to_json(), r#"{"a":2,"z":{"y":{"x":[{"w":1}]}}}"#);
    // Types as VRL sees them.
    let (out, _) = run_with(
            &program(".types = [is_integer(.i), is_float(.f), is_float(.whole), is_float(.big), is_string(.s), is_null(.n), is_array(.a), is_object(.o), is_boolean(.t), is_timestamp(.@timestamp)]"),
            vec![e],
        );
    assert_eq!(
        out[0].fields().get("types").unwrap().to_json(),
        r#"[true,true,true,true,true,true,true,true,true,true]"#
    );
}

#[test]
fn vrl_only_values_become_json() {
    let (out, _) = run_with(
            &program(".bytes = decode_base64!(\"/3g=\")\n.ts = t'2021-02-03T04:05:06.789Z'\n.re = r'a+b'\n.whole = 3.0\n.div = 7 / 2\n.rem = mod(7, 2)"),
            vec![ev("{}")],
        );
    // Invalid UTF-8 is replaced; timestamps are RFC 3339 strings; / is float division.
    assert_eq!(
        fields_json(&out[0]),
        r#"{"bytes":"\ufffdx","div":3.5,"re":"a+b","rem":1,"ts":"2021-02-03T04:05:06.789Z","whole":3.0}"#
            .replace("\\ufffd", "\u{fffd}")
    );
}

#[test]
fn type_conversions() {
    let (out, m) = run_with(
            &program(".n = to_int!(.s)\n.f = to_float!(.fs)\n.back = to_string(.n)\n.yes = to_bool!(.b)\n.code = parse_int!(.hex, base: 16)\n.trunc = to_int!(.x)"),
            vec![ev(r#"{"s":"42","fs":"1.25","b":"yes","hex":"ff","x":3.99}"#)],
        );
    assert_eq!(m.events_failed.get(), 0);
    let f = out[0].fields();
    assert_eq!(f.get("n"), Some(&Value::Int(42)));
    assert_eq!(f.get("f"), Some(&Value::Float(1.25)));
    assert_eq!(f.get("back"), Some(&Value::from("42")));
    assert_eq!(f.get("yes"), Some(&Value::Bool(true)));
    assert_eq!(f.get("code"), Some(&Value::Int(255)));
    assert_eq!(f.get("trunc"), Some(&Value::Int(3)));
}

#[test]
fn if_else_branches() {
    let p = program(
            "status = to_int!(.status)\nif status >= 500 { .level = \"error\" } else if status >= 400 { .level = \"warn\" } else { .level = \"info\" }",
        );
    let (out, _) = run_with(&p, vec![ev(r#"{"status":503}"#), ev(r#"{"status":"404"}"#), ev(r#"{"status":200}"#)]);
    let levels: Vec<String> = out.iter().map(|e| e.fields().get("level").unwrap().to_string()).collect();
    assert_eq!(levels, ["error", "warn", "info"]);
}

#[test]
fn parse_json_of_the_thesis_event() {
    let thesis = include_str!("../../../../../testdata/thesis/event.json");
    let thesis = thesis.trim();
    let (out, m) = run_with(&program(". = parse_json!(.message)"), vec![Event::from_message(thesis)]);
    assert_eq!((out.len(), m.events_failed.get()), (1, 0));
    let mut want = Value::from_json(thesis.as_bytes()).unwrap().into_object().unwrap();
    // The JSON's `@timestamp` became the event's timestamp.
    let ts = want.remove("@timestamp").unwrap();
    assert_eq!(Some(out[0].timestamp), parse_timestamp(ts.as_str().unwrap()));
    assert_eq!(out[0].fields().len(), want.len());
    for (k, v) in want.iter() {
        assert_eq!(out[0].fields().get(k), Some(v), "{k}");
    }
    assert_eq!(out[0].fields().get("offset"), Some(&Value::Int(0)));
    assert_eq!(out[0].fields().get("fields"), Some(&Value::Null));
}

#[test]
fn parse_syslog_of_an_openssh_line() {
    let line = loghub_line("OpenSSH/OpenSSH_2k.log", 1);
    assert_eq!(line, "Dec 10 06:55:46 LabSZ sshd[24200]: Invalid user webmaster from 173.234.31.186");
    let (out, m) = run_with(
            &program(
                "p = parse_syslog!(.message)\n.host = p.hostname\n.app = p.appname\n.pid = p.procid\n.msg = p.message\n.when = format_timestamp!(p.timestamp, \"%m-%d %H:%M:%S\")",
            ),
            vec![Event::from_message(&line)],
        );
    assert_eq!(m.events_failed.get(), 0, "{}", fields_json(&out[0]));
    let f = out[0].fields();
    assert_eq!(f.get("host"), Some(&Value::from("LabSZ")));
    assert_eq!(f.get("app"), Some(&Value::from("sshd")));
    assert_eq!(f.get("pid"), Some(&Value::Int(24200)));
    assert_eq!(f.get("msg"), Some(&Value::from("Invalid user webmaster from 173.234.31.186")));
    assert_eq!(f.get("when"), Some(&Value::from("12-10 06:55:46")));
}

#[test]
fn parse_grok_of_an_apache_error_line() {
    let line = loghub_line("Apache/Apache_2k.log", 1);
    assert_eq!(line, "[Sun Dec 04 04:47:44 2005] [error] mod_jk child workerEnv in error state 6");
    let (out, m) = run_with(
            &program(
                ". |= parse_grok!(.message, \"\\\\[%{DATA:when}\\\\] \\\\[%{LOGLEVEL:level}\\\\] %{GREEDYDATA:text}\")\n.@timestamp = parse_timestamp!(.when, \"%a %b %d %H:%M:%S %Y\")",
            ),
            vec![Event::from_message(&line)],
        );
    assert_eq!(m.events_failed.get(), 0, "{}", fields_json(&out[0]));
    assert_eq!(
        fields_json(&out[0]),
        format!(
            r#"{{"message":{},"level":"error","text":"mod_jk child workerEnv in error state 6","when":"Sun Dec 04 04:47:44 2005"}}"#,
            Value::from(line.as_str()).to_json()
        )
    );
    assert_eq!(Some(out[0].timestamp), parse_timestamp("2005-12-04T04:47:44Z"));
}

#[test]
fn parse_key_value_of_android_and_linux_lines() {
    let line = loghub_line("Android/Android_2k.log", 1);
    assert!(line.ends_with("acquire lock=233570404, flags=0x1, tag=\"View Lock\", name=com.android.systemui, ws=null, uid=10037, pid=2227"), "{line}");
    let (out, m) = run_with(
            &program("parts = split(string!(.message), \": acquire \")\n.kv = parse_key_value!(string!(parts[1]), field_delimiter: \", \")"),
            vec![Event::from_message(&line)],
        );
    assert_eq!(m.events_failed.get(), 0, "{}", fields_json(&out[0]));
    assert_eq!(
        out[0].fields().get("kv").unwrap().to_json(),
        r#"{"flags":"0x1","lock":"233570404","name":"com.android.systemui","pid":"2227","tag":"View Lock","uid":"10037","ws":"null"}"#
    );
    // VRL's parser allows blanks after `=`, so an empty value (`logname=`)
    // takes the next word: this is VRL's behaviour, kept as it is.
    let line = loghub_line("Linux/Linux_2k.log", 0);
    assert!(line.ends_with("logname= uid=0 euid=0 tty=NODEVssh ruser= rhost=218.188.2.4 "), "{line}");
    let (out, _) = run_with(
        &program("parts = split(string!(.message), \"; \")\n.kv = parse_key_value!(string!(parts[1]))"),
        vec![Event::from_message(&line)],
    );
    assert_eq!(
        out[0].fields().get("kv").unwrap().to_json(),
        r#"{"euid":"0","logname":"uid=0","ruser":"rhost=218.188.2.4","tty":"NODEVssh"}"#
    );
}

#[test]
fn timestamp_round_trip_and_updates() {
    // Nanoseconds survive the trip through a VRL timestamp.
    let (out, _) = run_with(
            &program(".ns = to_unix_timestamp!(.@timestamp, unit: \"nanoseconds\")\n.iso = format_timestamp!(.@timestamp, \"%+\")"),
            vec![ev("{}")],
        );
    assert_eq!(out[0].timestamp, TS);
    assert_eq!(out[0].fields().get("ns"), Some(&Value::Int(TS)));
    assert_eq!(out[0].fields().get("iso"), Some(&Value::from("2020-09-13T12:26:40.123456789+00:00")));
    assert!(out[0].fields().get("@timestamp").is_none());
    // Set from a timestamp, from an RFC 3339 string; deleted keeps the old one.
    let (out, m) = run_with(
            &program(
                "if .k == 1 { .@timestamp = parse_timestamp!(.w, \"%d/%b/%Y:%H:%M:%S %z\") } else if .k == 2 { .@timestamp = .w } else if .k == 3 { del(.@timestamp) } else { .@timestamp = 5 }",
            ),
            vec![
                ev(r#"{"k":1,"w":"10/Oct/2000:13:55:36 -0700"}"#),
                ev(r#"{"k":2,"w":"2020-01-02T03:04:05.123456789Z"}"#),
                ev(r#"{"k":3}"#),
                ev(r#"{"k":4}"#),
            ],
        );
    assert_eq!(out[0].timestamp, parse_timestamp("2000-10-10T20:55:36Z").unwrap());
    assert_eq!(out[1].timestamp, parse_timestamp("2020-01-02T03:04:05.123456789Z").unwrap());
    assert_eq!(out[2].timestamp, TS);
    assert_eq!(out[3].timestamp, TS);
    assert_eq!(m.events_failed.get(), 1);
    assert!(out[3].has_tag("_remap_error"));
    assert_eq!(
        out[3].fields().get("remap_error"),
        Some(&Value::from("`.@timestamp` must be a timestamp or an RFC 3339 string, got an integer"))
    );
}

#[test]
fn timezone_applies_to_times_without_offset() {
    let p = ".@timestamp = parse_timestamp!(.w, \"%Y-%m-%d %H:%M:%S\")";
    let (out, _) =
        run_with(&format!("timezone = \"Europe/Paris\"\n{}", program(p)), vec![ev(r#"{"w":"2020-01-01 00:00:00"}"#)]);
    assert_eq!(out[0].timestamp, parse_timestamp("2019-12-31T23:00:00Z").unwrap());
    let (out, _) = run_with(&program(p), vec![ev(r#"{"w":"2020-01-01 00:00:00"}"#)]);
    assert_eq!(out[0].timestamp, parse_timestamp("2020-01-01T00:00:00Z").unwrap());
    let err = build_in(&cx(), &format!("timezone = \"Mars/Olympus\"\n{}", program(p))).err().unwrap();
    assert_eq!(
            err.to_string(),
            "pipelines.main.filters[1].timezone: unknown time zone \"Mars/Olympus\": use \"UTC\", \"local\" or a TZ database name"
        );
}

const FAILING: &str = ".n = to_int!(.s)";
const ERROR: &str =
    "function call error for \"to_int\" at (5:16): Invalid integer \"abc\": invalid digit found in string";

#[test]
fn runtime_errors_keep_the_original_event_tagged_with_the_message() {
    let (out, m) = run_with(&program(FAILING), vec![ev(r#"{"s":"7"}"#), ev(r#"{"s":"abc","keep":true}"#)]);
    assert_eq!(out.len(), 2);
    assert_eq!(out[0].fields().get("n"), Some(&Value::Int(7)));
    assert_eq!(
        fields_json(&out[1]),
        format!(r#"{{"s":"abc","keep":true,"tags":["_remap_error"],"remap_error":{}}}"#, Value::from(ERROR).to_json())
    );
    assert!(!out[1].dead_letter);
    assert_eq!((m.events_in.get(), m.events_out.get(), m.events_failed.get(), m.events_dropped.get()), (2, 2, 1, 0));
    // Custom tags and message field.
    let (out, _) = run_with(
        &format!("tag_on_failure = [\"bad\", \"vrl\"]\nerror_field = \"[meta][err]\"\n{}", program(FAILING)),
        vec![ev(r#"{"s":"abc"}"#)],
    );
    assert_eq!(
        fields_json(&out[0]),
        format!(r#"{{"s":"abc","tags":["bad","vrl"],"meta":{{"err":{}}}}}"#, Value::from(ERROR).to_json())
    );
}

#[test]
fn drop_on_error_drops_or_reroutes() {
    let events = || vec![ev(r#"{"s":"1"}"#), ev(r#"{"s":"x"}"#), ev(r#"{"s":"y"}"#)];
    let (out, m) = run_with(&format!("drop_on_error = true\n{}", program(FAILING)), events());
    assert_eq!(out.len(), 1);
    assert_eq!((m.events_in.get(), m.events_out.get(), m.events_failed.get(), m.events_dropped.get()), (3, 1, 2, 2));
    let (out, m) = run_with(&format!("drop_on_error = true\nreroute_dropped = true\n{}", program(FAILING)), events());
    assert_eq!(out.len(), 3);
    assert_eq!(out.iter().filter(|e| e.dead_letter && e.has_tag("_remap_error")).count(), 2);
    assert!(!out[0].dead_letter);
    assert_eq!((m.events_failed.get(), m.events_dropped.get(), m.counter("rerouted").get()), (2, 0, 2));
}

#[test]
fn abort_drops_reroutes_or_passes_unchanged() {
    let p = program("if .noisy == true { abort \"too noisy\" }\n.seen = true");
    let events = || vec![ev(r#"{"noisy":true}"#), ev(r#"{"noisy":false}"#), ev(r#"{"noisy":true}"#), ev("{}")];
    let (out, m) = run_with(&p, events());
    assert_eq!(out.len(), 2);
    assert!(out.iter().all(|e| e.fields().get("seen") == Some(&Value::Bool(true))));
    assert_eq!(
        (m.counter("aborted").get(), m.events_dropped.get(), m.events_failed.get(), m.events_out.get()),
        (2, 2, 0, 2)
    );

    let (out, m) = run_with(&format!("reroute_dropped = true\n{p}"), events());
    assert_eq!(out.len(), 4);
    assert_eq!(fields_json(&out[0]), r#"{"noisy":true,"tags":["_remap_aborted"],"remap_error":"too noisy"}"#);
    assert!(out[0].dead_letter && out[2].dead_letter && !out[1].dead_letter);
    assert_eq!((m.counter("aborted").get(), m.counter("rerouted").get(), m.events_dropped.get()), (2, 2, 0));

    let (out, m) = run_with(&format!("drop_on_abort = false\n{p}"), events());
    assert_eq!(out.len(), 4);
    assert_eq!(fields_json(&out[0]), r#"{"noisy":true}"#);
    assert!(!out[0].dead_letter);
    assert_eq!((m.counter("aborted").get(), m.events_dropped.get()), (2, 0));
}

#[test]
fn identity_is_readable_but_never_writable() {
    let (out, m) = run_with(
        &program(".who = join!([%group, %subgroup, %host, %source], \"/\")\n.@group = \"other\"\n.@host = \"evil\""),
        vec![ev("{}")],
    );
    assert_eq!(fields_json(&out[0]), r#"{"who":"acme/web/h1/tcp:5170"}"#);
    assert_eq!(*out[0].identity, Identity::new("acme", "web", "h1"));
    assert_eq!(m.counter("reserved_fields_removed").get(), 2);
    assert!(to_json_string(&out[0]).contains(r#""@group":"acme","@subgroup":"web","@host":"h1","@source":"tcp:5170""#));
    // Replacing the whole event cannot smuggle identity in either.
    let (out, _) = run_with(&program(". = {\"@group\": \"x\", \"@subgroup\": \"y\", \"a\": 1}"), vec![ev("{}")]);
    assert_eq!(fields_json(&out[0]), r#"{"a":1}"#);
    assert_eq!(out[0].identity.group, "acme");
    // Writing the metadata is refused when the program is compiled.
    for p in ["%group = \"other\"", "del(%host)", "%new = 1"] {
        let err = build_in(&cx(), &program(p)).err().map(|e| e.to_string()).unwrap_or_else(|| panic!("{p} compiled"));
        assert!(err.starts_with("pipelines.main.filters[1].source: VRL compile error:"), "{err}");
        assert!(err.contains("read-only"), "{p}: {err}");
    }
}

#[test]
fn an_array_makes_several_events() {
    // Its queue record (issue #18: the store skips replayed records by
    // origin; another record's index would skip or store the wrong ones).
    let mut from_record_3 = ev(r#"{"x":0}"#);
    from_record_3.set_origin(3);
    let (out, m) = run_with(
        &program(". = [{\"a\": 1}, {\"a\": 2, \"@timestamp\": t'2001-01-01T00:00:00Z'}]"),
        vec![from_record_3],
    );
    assert_eq!(out.len(), 2);
    assert_eq!((out[0].origin(), out[1].origin()), (3, 3));
    assert_eq!((fields_json(&out[0]).as_str(), fields_json(&out[1]).as_str()), (r#"{"a":1}"#, r#"{"a":2}"#));
    assert_eq!((out[0].timestamp, out[1].timestamp), (TS, parse_timestamp("2001-01-01T00:00:00Z").unwrap()));
    assert!(out.iter().all(|e| e.identity.group == "acme"));
    assert_eq!((m.events_in.get(), m.events_out.get()), (1, 2));
    let (out, m) = run_with(&program(". = 5"), vec![ev(r#"{"x":0}"#)]);
    assert_eq!(
        out[0].fields().get("remap_error"),
        Some(&Value::from("the program set `.` to an integer, not an object"))
    );
    assert_eq!(m.events_failed.get(), 1);
}

#[test]
fn compile_errors_name_the_key_and_carry_the_diagnostic() {
    let err = build_in(&cx(), &program(".a = ")).err().unwrap().to_string();
    assert!(
        err.starts_with("pipelines.main.filters[1].source: VRL compile error:\nerror[E204]: syntax error"),
        "{err}"
    );
    // A fallible call without `!` or error handling: VRL's own advice.
    let err = build_in(&cx(), &program(".n = to_int(.s)\n.x = parse_json(.m)")).err().unwrap().to_string();
    assert!(err.contains("error[E103]: unhandled fallible assignment"), "{err}");
    assert!(err.contains(".x = parse_json(.m)"), "{err}");
    let err = build_in(&cx(), "").err().unwrap().to_string();
    assert_eq!(err, "pipelines.main.filters[1].source: missing VRL program: give `source` or `file`");
    let err = build_in(&cx(), "file = \"/nonexistent/x.vrl\"").err().unwrap().to_string();
    assert!(err.starts_with("pipelines.main.filters[1].file: cannot read /nonexistent/x.vrl: "), "{err}");
    let err = build_in(&cx(), "sorce = \".a = 1\"").err().unwrap().to_string();
    assert!(err.starts_with("pipelines.main.filters[1].sorce: unknown field `sorce`"), "{err}");
}

#[test]
fn program_from_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.vrl");
    std::fs::write(&path, ".upper = upcase!(.message)\n").unwrap();
    let (out, _) = run_with(&format!("file = {:?}", path.display().to_string()), vec![Event::from_message("abc")]);
    assert_eq!(out[0].fields().get("upper"), Some(&Value::from("ABC")));
    std::fs::write(&path, ".upper = upcase(\n").unwrap();
    let err = build_in(&cx(), &format!("file = {:?}", path.display().to_string())).err().unwrap().to_string();
    assert!(err.starts_with("pipelines.main.filters[1].file: VRL compile error:"), "{err}");
}

#[test]
fn lazily_parsed_events_work_like_parsed_ones() {
    let line = bytes::Bytes::from_static(br#"{"message":"hi","n":1}"#);
    let (raw, _) = sluice_core::codec::event_from_json_bytes(&line).unwrap();
    assert!(raw.raw().is_some());
    let (out, _) = run_with(&program(".n = to_int!(.n) + 1"), vec![raw]);
    assert_eq!(fields_json(&out[0]), r#"{"message":"hi","n":2}"#);
    let empty = Event::from_fields(Object::new());
    let (out, _) = run_with(&program(".a = 1"), vec![empty]);
    assert_eq!(fields_json(&out[0]), r#"{"a":1}"#);
}
