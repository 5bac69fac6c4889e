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
mod tests;
