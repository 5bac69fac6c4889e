//! `remap`: runs a program in the Vector Remap Language (VRL, the `vrl`
//! crate) on every event, for logic the native filters cannot express.
//!
//! The program (`source = """…"""` inline, or `file = "x.vrl"`) is compiled
//! once at build time against VRL's standard library (without the functions
//! that reach the environment, the file system, the network or do
//! cryptography); a compile error is a config error at `…source` (or
//! `…file`) carrying VRL's diagnostic, so `sluice validate` shows it.
//!
//! What the program sees:
//! - `.` is the event's fields, `.@timestamp` its timestamp as a VRL
//!   timestamp. Assigning a timestamp (or an RFC 3339 string) to
//!   `.@timestamp` moves the event in time; deleting it keeps the old one.
//! - `%group`, `%subgroup`, `%host`, `%source` are the identity and source,
//!   **read-only**: assigning them is a compile error, and the identity keys
//!   `@group`, `@subgroup`, `@host`, `@source` written into `.` are removed
//!   (counted in `reserved_fields_removed`) — a program can never move an
//!   event into another group.
//! - Setting `.` to an array of objects turns the event into that many
//!   events (same identity), as in Vector.
//!
//! Failures are never silent: a runtime error keeps the original event,
//! tagged `_remap_error` (`tag_on_failure`) with the message in
//! `remap_error` (`error_field`), counted in `events_failed`; with
//! `drop_on_error` it is dropped (`events_dropped`) or, with
//! `reroute_dropped`, sent to the dead-letter sinks. `abort` drops the event
//! (`drop_on_abort`, default, counted in `aborted` and `events_dropped`) or
//! reroutes it tagged `_remap_aborted`; with `drop_on_abort = false` the
//! original event passes unchanged.
//!
//! Why VRL: it is the language Vector users already write, with tested
//! parsers (`parse_syslog`, `parse_grok`, `parse_key_value`, …); see
//! docs/adr/0004-remap-language.md for its cost and why it sits behind the
//! cargo feature `remap`. Without that feature `type = "remap"` is a config
//! error saying so.

use sluice_core::component::{BuildContext, Filter, FilterSpec};
use sluice_core::config::ConfigError;

/// Registry entry.
pub const SPEC: FilterSpec = FilterSpec {
    name: "remap",
    summary: SUMMARY,
    example: "source = '''\n.level = upcase(string(.level) ?? \"info\")\ndel(.password)\n'''\n",
    build,
};

/// Whether this build has the `remap` cargo feature (VRL compiled in).
pub const AVAILABLE: bool = cfg!(feature = "remap");

#[cfg(feature = "remap")]
const SUMMARY: &str = "run a VRL (Vector Remap Language) program on each event";
#[cfg(not(feature = "remap"))]
const SUMMARY: &str = "run a VRL program on each event (not in this build: needs the `remap` cargo feature)";

/// The error for `type = "remap"` in a build without VRL.
pub const NOT_BUILT: &str =
    "this sluice binary was built without the `remap` feature (VRL); rebuild with `--features remap` (on by default)";

#[cfg(not(feature = "remap"))]
fn build(_value: toml::Value, cx: &BuildContext) -> Result<Box<dyn Filter>, ConfigError> {
    Err(cx.error("type", NOT_BUILT))
}

#[cfg(feature = "remap")]
fn build(value: toml::Value, cx: &BuildContext) -> Result<Box<dyn Filter>, ConfigError> {
    imp::build(value, cx)
}

#[cfg(feature = "remap")]
pub use imp::{event_to_vrl, from_vrl, to_vrl};

#[cfg(feature = "remap")]
mod imp {
    use std::path::PathBuf;
    use std::sync::Arc;

    use serde::Deserialize;
    use sluice_core::codec::{parse_timestamp, RESERVED};
    use sluice_core::component::{BuildContext, Filter};
    use sluice_core::config::{parse_table, ConfigError};
    use sluice_core::metrics::{ComponentMetrics, Counter};
    use sluice_core::path::FieldPath;
    use sluice_core::{Event, Identity, Object, Str, Value};
    use vrl::compiler::runtime::{Runtime, Terminate};
    use vrl::compiler::state::ExternalEnv;
    use vrl::compiler::{CompileConfig, Program, SecretTarget, Target, TimeZone};
    use vrl::path::{OwnedTargetPath, PathPrefix};
    use vrl::prelude::NotNan;
    use vrl::value::kind::Collection;
    use vrl::value::{KeyString, Kind, ObjectMap, Secrets, Value as VValue};

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Config {
        /// The VRL program, inline. Exactly one of `source` and `file`.
        #[serde(default)]
        source: Option<String>,
        /// A file holding the VRL program (relative to the working directory).
        #[serde(default)]
        file: Option<PathBuf>,
        /// Drop events whose program failed at run time (counted in
        /// `events_dropped`) instead of passing them on tagged.
        #[serde(default)]
        drop_on_error: bool,
        /// Drop events whose program called `abort` (counted); `false` passes
        /// the original event on unchanged.
        #[serde(default = "yes")]
        drop_on_abort: bool,
        /// Send events that would be dropped (by `drop_on_error` or
        /// `drop_on_abort`) to the pipeline's dead-letter sinks instead, tagged.
        #[serde(default)]
        reroute_dropped: bool,
        /// Time zone of VRL's time functions for inputs without an offset:
        /// `UTC` (default), `local`, or a TZ database name (`Europe/Paris`).
        #[serde(default = "default_timezone")]
        timezone: String,
        /// Tags added to an event whose program failed (default `["_remap_error"]`).
        #[serde(default)]
        tag_on_failure: Option<Vec<String>>,
        /// Field receiving the runtime error message (or the abort message of a
        /// rerouted event).
        #[serde(default = "default_error_field")]
        error_field: FieldPath,
    }

    fn yes() -> bool {
        true
    }

    fn default_timezone() -> String {
        "UTC".into()
    }

    fn default_error_field() -> FieldPath {
        FieldPath::key("remap_error")
    }

    /// The tag of aborted events that were rerouted to the dead-letter sinks.
    const ABORTED_TAG: &str = "_remap_aborted";

    pub(super) fn build(value: toml::Value, cx: &BuildContext) -> Result<Box<dyn Filter>, ConfigError> {
        let c: Config = parse_table(value, &cx.path)?;
        let (text, key) = match (&c.source, &c.file) {
            (Some(s), None) => (s.clone(), "source"),
            (None, Some(p)) => (
                std::fs::read_to_string(p)
                    .map_err(|e| cx.error("file", format!("cannot read {}: {e}", p.display())))?,
                "file",
            ),
            (Some(_), Some(_)) => return Err(cx.error("file", "give `source` or `file`, not both")),
            (None, None) => return Err(cx.error("source", "missing VRL program: give `source` or `file`")),
        };
        let timezone = TimeZone::parse(if c.timezone.eq_ignore_ascii_case("utc") { "Etc/UTC" } else { &c.timezone })
            .ok_or_else(|| {
                cx.error(
                    "timezone",
                    format!("unknown time zone {:?}: use \"UTC\", \"local\" or a TZ database name", c.timezone),
                )
            })?;
        let program = compile(&text).map_err(|m| cx.error(key, m))?;
        let tags = c.tag_on_failure.clone().unwrap_or_else(|| vec!["_remap_error".to_string()]);
        let m = &cx.metrics;
        Ok(Box::new(Remap {
            program,
            timezone,
            tags,
            aborted: m.counter("aborted"),
            rerouted: m.counter("rerouted"),
            reserved_removed: m.counter("reserved_fields_removed"),
            metrics: Arc::clone(m),
            c,
        }))
    }

    /// Compiles `source`; the error is VRL's diagnostic text.
    fn compile(source: &str) -> Result<Program, String> {
        let functions = vrl::stdlib::all();
        let metadata = Kind::object(Collection::from_parts(
            [("group", Kind::bytes()), ("subgroup", Kind::bytes()), ("host", Kind::bytes()), ("source", Kind::bytes())]
                .into_iter()
                .map(|(k, v)| (k.into(), v))
                .collect(),
            Kind::never(),
        ));
        // `.@timestamp` is always a timestamp when the program starts.
        let event = Kind::object(Collection::any().with_known("@timestamp", Kind::timestamp()));
        let external = ExternalEnv::new_with_kind(event, metadata);
        let mut config = CompileConfig::default();
        // The identity and source are read-only: a program must not move an
        // event into another group.
        config.set_read_only_path(OwnedTargetPath::metadata_root(), true);
        match vrl::compiler::compile_with_external(source, &functions, &external, config) {
            Ok(result) => {
                if !result.warnings.is_empty() {
                    let text = vrl::diagnostic::Formatter::new(source, result.warnings).to_string();
                    tracing::warn!(warnings = %text.trim(), "remap program compiled with warnings");
                }
                Ok(result.program)
            }
            Err(diagnostics) => {
                let text = vrl::diagnostic::Formatter::new(source, diagnostics).to_string();
                Err(format!("VRL compile error:\n{}", text.trim_matches('\n')))
            }
        }
    }

    struct Remap {
        c: Config,
        program: Program,
        timezone: TimeZone,
        tags: Vec<String>,
        metrics: Arc<ComponentMetrics>,
        aborted: Arc<Counter>,
        rerouted: Arc<Counter>,
        reserved_removed: Arc<Counter>,
    }

    /// What one run of the program made of an event.
    enum Outcome {
        /// The event's new timestamp and fields.
        One(i64, Object),
        /// `.` was set to an array of objects: several events.
        Many(Vec<(i64, Object)>),
        /// A runtime error (message).
        Error(String),
        /// `abort` (message).
        Abort(String),
    }

    /// The identity and source as VRL metadata, rebuilt only when they change
    /// (a batch usually shares one identity).
    struct MetaCache {
        identity: Option<Arc<Identity>>,
        source: Option<Arc<str>>,
        value: VValue,
    }

    impl MetaCache {
        fn get(&mut self, e: &Event) -> &VValue {
            let same = self.identity.as_ref().is_some_and(|i| Arc::ptr_eq(i, &e.identity))
                && self.source.as_ref().is_some_and(|s| Arc::ptr_eq(s, &e.source));
            if !same {
                let id = &e.identity;
                let mut m = ObjectMap::new();
                m.insert("group".into(), VValue::from(id.group.as_str()));
                m.insert("subgroup".into(), VValue::from(id.subgroup.as_str()));
                m.insert("host".into(), VValue::from(id.host.as_str()));
                m.insert("source".into(), VValue::from(&*e.source));
                self.value = VValue::Object(m);
                self.identity = Some(Arc::clone(&e.identity));
                self.source = Some(Arc::clone(&e.source));
            }
            &self.value
        }
    }

    impl Remap {
        fn run(&self, rt: &mut Runtime, meta: &mut MetaCache, e: &Event) -> Outcome {
            let mut target = EventTarget { value: event_to_vrl(e), meta: meta.get(e), secrets: Secrets::new() };
            let result = rt.resolve(&mut target, &self.program, &self.timezone);
            rt.clear();
            match result {
                Ok(_) => {}
                Err(Terminate::Abort(err)) => return Outcome::Abort(err.to_string()),
                Err(err) => return Outcome::Error(err.to_string()),
            }
            let orig = e.fields();
            match target.value {
                VValue::Object(map) => match self.back(map, e.timestamp, orig) {
                    Ok((ts, fields)) => Outcome::One(ts, fields),
                    Err(m) => Outcome::Error(m),
                },
                VValue::Array(items) => {
                    let mut out = Vec::with_capacity(items.len());
                    for item in items {
                        match item {
                            VValue::Object(map) => match self.back(map, e.timestamp, orig) {
                                Ok(x) => out.push(x),
                                Err(m) => return Outcome::Error(m),
                            },
                            other => {
                                return Outcome::Error(format!(
                                    "the program set `.` to an array holding {}, not only objects",
                                    kind_name(&other)
                                ))
                            }
                        }
                    }
                    Outcome::Many(out)
                }
                other => Outcome::Error(format!("the program set `.` to {}, not an object", kind_name(&other))),
            }
        }

        /// The timestamp and fields of a resulting object.
        fn back(&self, mut map: ObjectMap, old_ts: i64, orig: &Object) -> Result<(i64, Object), String> {
            let ts = match map.remove("@timestamp") {
                None => old_ts,
                Some(VValue::Timestamp(t)) => t
                    .timestamp_nanos_opt()
                    .ok_or_else(|| format!("`.@timestamp` {} is out of range (1677..2262)", t.to_rfc3339()))?,
                Some(v @ (VValue::String(_) | VValue::Bytes(_))) => {
                    let s = from_vrl(v, None);
                    let s = s.as_str().unwrap_or_default();
                    parse_timestamp(s)
                        .ok_or_else(|| format!("`.@timestamp` must be a timestamp or an RFC 3339 string, got {s:?}"))?
                }
                Some(other) => {
                    return Err(format!(
                        "`.@timestamp` must be a timestamp or an RFC 3339 string, got {}",
                        kind_name(&other)
                    ))
                }
            };
            let mut removed = 0;
            for k in &RESERVED[1..] {
                if map.remove(*k).is_some() {
                    removed += 1;
                }
            }
            if removed > 0 {
                self.reserved_removed.add(removed);
            }
            Ok((ts, object_from_vrl(map, Some(orig))))
        }

        /// Marks a failed event: tags, message, dead letter if asked.
        fn mark(&self, e: &mut Event, tags: &[String], message: &str, dead_letter: bool) {
            for t in tags {
                e.add_tag(t);
            }
            e.insert(&self.c.error_field, Value::from(message));
            if dead_letter {
                e.dead_letter = true;
                self.rerouted.inc();
            }
        }
    }

    impl Filter for Remap {
        fn process(&self, events: &mut Vec<Event>) {
            self.metrics.events_in.add(events.len() as u64);
            let mut rt = Runtime::default();
            let mut meta = MetaCache { identity: None, source: None, value: VValue::Null };
            let mut out = Vec::with_capacity(events.len());
            for mut e in events.drain(..) {
                match self.run(&mut rt, &mut meta, &e) {
                    Outcome::One(ts, fields) => out.push(rebuilt(&e, ts, fields)),
                    Outcome::Many(list) => out.extend(list.into_iter().map(|(ts, fields)| rebuilt(&e, ts, fields))),
                    Outcome::Error(message) => {
                        self.metrics.events_failed.inc();
                        if !self.c.drop_on_error {
                            self.mark(&mut e, &self.tags, &message, false);
                            out.push(e);
                        } else if self.c.reroute_dropped {
                            self.mark(&mut e, &self.tags, &message, true);
                            out.push(e);
                        } else {
                            self.metrics.events_dropped.inc();
                        }
                    }
                    Outcome::Abort(message) => {
                        self.aborted.inc();
                        if !self.c.drop_on_abort {
                            out.push(e);
                        } else if self.c.reroute_dropped {
                            self.mark(&mut e, &[ABORTED_TAG.to_string()], &message, true);
                            out.push(e);
                        } else {
                            self.metrics.events_dropped.inc();
                        }
                    }
                }
            }
            *events = out;
            self.metrics.events_out.add(events.len() as u64);
        }
    }

    /// A new event with `e`'s identity, source and routing.
    fn rebuilt(e: &Event, ts: i64, fields: Object) -> Event {
        let mut n = Event::new(ts, fields, Arc::clone(&e.identity), Arc::clone(&e.source));
        n.dead_letter = e.dead_letter;
        // The queue record it came from: the store's replay check
        // attributes it to that record, not to another one of the batch.
        n.set_origin(e.origin());
        n
    }

    fn kind_name(v: &VValue) -> &'static str {
        match v {
            VValue::Bytes(_) | VValue::String(_) => "a string",
            VValue::Regex(_) => "a regex",
            VValue::Integer(_) => "an integer",
            VValue::Float(_) => "a float",
            VValue::Boolean(_) => "a boolean",
            VValue::Timestamp(_) => "a timestamp",
            VValue::Object(_) => "an object",
            VValue::Array(_) => "an array",
            VValue::Null => "null",
        }
    }

    const READ_ONLY: &str = "the event's identity and source (`%group`, `%subgroup`, `%host`, `%source`) are read-only";

    /// The VRL target: the event's fields (owned) and its read-only metadata.
    #[derive(Debug)]
    struct EventTarget<'a> {
        value: VValue,
        meta: &'a VValue,
        secrets: Secrets,
    }

    impl Target for EventTarget<'_> {
        fn target_insert(&mut self, path: &OwnedTargetPath, value: VValue) -> Result<(), String> {
            match path.prefix {
                PathPrefix::Event => {
                    self.value.insert(&path.path, value);
                    Ok(())
                }
                PathPrefix::Metadata => Err(READ_ONLY.into()),
            }
        }

        fn target_get(&self, path: &OwnedTargetPath) -> Result<Option<&VValue>, String> {
            Ok(match path.prefix {
                PathPrefix::Event => self.value.get(&path.path),
                PathPrefix::Metadata => self.meta.get(&path.path),
            })
        }

        fn target_get_mut(&mut self, path: &OwnedTargetPath) -> Result<Option<&mut VValue>, String> {
            match path.prefix {
                PathPrefix::Event => Ok(self.value.get_mut(&path.path)),
                PathPrefix::Metadata => Err(READ_ONLY.into()),
            }
        }

        fn target_remove(&mut self, path: &OwnedTargetPath, compact: bool) -> Result<Option<VValue>, String> {
            match path.prefix {
                PathPrefix::Event => Ok(self.value.remove(&path.path, compact)),
                PathPrefix::Metadata => Err(READ_ONLY.into()),
            }
        }
    }

    impl SecretTarget for EventTarget<'_> {
        fn get_secret(&self, key: &str) -> Option<&str> {
            self.secrets.get_secret(key)
        }

        fn insert_secret(&mut self, key: &str, value: &str) {
            self.secrets.insert_secret(key, value);
        }

        fn remove_secret(&mut self, key: &str) {
            self.secrets.remove_secret(key);
        }
    }

    /// The event as the VRL object the program sees: its fields plus
    /// `@timestamp` as a VRL timestamp.
    pub fn event_to_vrl(e: &Event) -> VValue {
        let mut map = ObjectMap::new();
        for (k, v) in e.fields().iter() {
            map.insert(KeyString::from(k), to_vrl(v));
        }
        map.insert("@timestamp".into(), VValue::Timestamp(chrono::DateTime::from_timestamp_nanos(e.timestamp)));
        VValue::Object(map)
    }

    /// A sluice value as a VRL value (exact: integers stay integers, floats
    /// floats; a NaN float, which JSON cannot hold, becomes null).
    pub fn to_vrl(v: &Value) -> VValue {
        match v {
            Value::Null => VValue::Null,
            Value::Bool(b) => VValue::Boolean(*b),
            Value::Int(i) => VValue::Integer(*i),
            Value::Float(f) => NotNan::new(*f).map_or(VValue::Null, VValue::Float),
            Value::String(s) => VValue::from(s.as_str()),
            Value::Array(a) => VValue::Array(a.iter().map(to_vrl).collect()),
            Value::Object(o) => VValue::Object(o.iter().map(|(k, v)| (KeyString::from(k), to_vrl(v))).collect()),
        }
    }

    /// A VRL value as a sluice value. Bytes become a string (invalid UTF-8
    /// replaced), timestamps an RFC 3339 string (as Vector encodes them), a
    /// regex its pattern, infinite floats null. Object keys keep the order of
    /// `orig` (the value before the program ran) where they existed; new
    /// keys follow in name order (VRL objects are sorted maps).
    pub fn from_vrl(v: VValue, orig: Option<&Value>) -> Value {
        match v {
            VValue::Null => Value::Null,
            VValue::Boolean(b) => Value::Bool(b),
            VValue::Integer(i) => Value::Int(i),
            VValue::Float(f) => Value::from(f.into_inner()),
            VValue::String(s) => Value::from(&*s),
            VValue::Bytes(b) => match std::str::from_utf8(&b) {
                Ok(s) => Value::from(s),
                Err(_) => Value::from(String::from_utf8_lossy(&b).into_owned()),
            },
            VValue::Regex(r) => Value::from(r.as_str()),
            VValue::Timestamp(t) => Value::from(t.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true)),
            VValue::Array(a) => {
                let olds = orig.and_then(Value::as_array);
                Value::Array(a.into_iter().enumerate().map(|(i, x)| from_vrl(x, olds.and_then(|o| o.get(i)))).collect())
            }
            VValue::Object(m) => Value::Object(object_from_vrl(m, orig.and_then(Value::as_object))),
        }
    }

    fn object_from_vrl(mut m: ObjectMap, orig: Option<&Object>) -> Object {
        let mut out = Object::with_capacity(m.len());
        if let Some(orig) = orig {
            for (k, old) in orig.iter() {
                if let Some(v) = m.remove(k) {
                    out.push_unique(Str::new(k), from_vrl(v, Some(old)));
                }
            }
        }
        for (k, v) in m {
            out.push_unique(Str::new(k.as_str()), from_vrl(v, None));
        }
        out
    }
}

#[cfg(all(test, not(feature = "remap")))]
mod tests_without_vrl {
    use super::*;
    use crate::testkit::build_filter;

    #[test]
    fn type_remap_is_a_config_error_naming_the_feature() {
        let err = build_filter(&SPEC, "source = '.a = 1'").err().map(|e| e.to_string()).unwrap_or_default();
        assert_eq!(err, format!("test.remap.type: {NOT_BUILT}"));
    }
}

#[cfg(all(test, feature = "remap"))]
mod tests {
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
        let text =
            std::fs::read_to_string(format!("{}/../../testdata/loghub/{file}", env!("CARGO_MANIFEST_DIR"))).unwrap();
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
        let thesis = include_str!("../../../../testdata/thesis/event.json");
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
        let (out, _) = run_with(
            &format!("timezone = \"Europe/Paris\"\n{}", program(p)),
            vec![ev(r#"{"w":"2020-01-01 00:00:00"}"#)],
        );
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
            format!(
                r#"{{"s":"abc","keep":true,"tags":["_remap_error"],"remap_error":{}}}"#,
                Value::from(ERROR).to_json()
            )
        );
        assert!(!out[1].dead_letter);
        assert_eq!(
            (m.events_in.get(), m.events_out.get(), m.events_failed.get(), m.events_dropped.get()),
            (2, 2, 1, 0)
        );
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
        assert_eq!(
            (m.events_in.get(), m.events_out.get(), m.events_failed.get(), m.events_dropped.get()),
            (3, 1, 2, 2)
        );
        let (out, m) =
            run_with(&format!("drop_on_error = true\nreroute_dropped = true\n{}", program(FAILING)), events());
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
            &program(
                ".who = join!([%group, %subgroup, %host, %source], \"/\")\n.@group = \"other\"\n.@host = \"evil\"",
            ),
            vec![ev("{}")],
        );
        assert_eq!(fields_json(&out[0]), r#"{"who":"acme/web/h1/tcp:5170"}"#);
        assert_eq!(*out[0].identity, Identity::new("acme", "web", "h1"));
        assert_eq!(m.counter("reserved_fields_removed").get(), 2);
        assert!(
            to_json_string(&out[0]).contains(r#""@group":"acme","@subgroup":"web","@host":"h1","@source":"tcp:5170""#)
        );
        // Replacing the whole event cannot smuggle identity in either.
        let (out, _) = run_with(&program(". = {\"@group\": \"x\", \"@subgroup\": \"y\", \"a\": 1}"), vec![ev("{}")]);
        assert_eq!(fields_json(&out[0]), r#"{"a":1}"#);
        assert_eq!(out[0].identity.group, "acme");
        // Writing the metadata is refused when the program is compiled.
        for p in ["%group = \"other\"", "del(%host)", "%new = 1"] {
            let err =
                build_in(&cx(), &program(p)).err().map(|e| e.to_string()).unwrap_or_else(|| panic!("{p} compiled"));
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
}
