//! The event: what flows through every pipeline.
//!
//! Fields are a JSON object ([`Object`]), as in Logstash: `message` is a
//! field like any other, reached through [`Event::message`]. The timestamp is
//! typed (nanoseconds since the Unix epoch) and the identity (group, subgroup,
//! host) and source are shared `Arc`s, so stamping a batch costs a reference
//! count, not a copy.

use std::sync::{Arc, OnceLock};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::path::FieldPath;
use crate::raw::RawJson;
use crate::value::{Object, Value};

/// Who an event belongs to: the tenant hierarchy used for permissions and routing.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Identity {
    /// Top level: a customer or organisation.
    pub group: String,
    /// Second level, inside the group (a team, an environment).
    pub subgroup: String,
    /// The host the event came from.
    pub host: String,
}

impl Identity {
    /// An identity from its three parts.
    pub fn new(group: impl Into<String>, subgroup: impl Into<String>, host: impl Into<String>) -> Self {
        Self { group: group.into(), subgroup: subgroup.into(), host: host.into() }
    }
}

/// One log event.
///
/// Fields may arrive as JSON text ([`RawJson`]) and are parsed on first use:
/// [`Event::fields`] parses them once (and keeps the text, which stays
/// authoritative until a change); [`Event::fields_mut`] parses them and drops
/// the text. See [`crate::raw`].
#[derive(Clone, Debug)]
pub struct Event {
    /// Event time, nanoseconds since the Unix epoch (UTC).
    pub timestamp: i64,
    /// Structured fields (`message` is one of them), or the JSON text they
    /// were read as. Reached through [`Event::fields`] / [`Event::fields_mut`].
    body: Body,
    /// Identity stamped by the agent or the receiving source.
    pub identity: Arc<Identity>,
    /// Where the event was read: a file path, a listener (`syslog_udp:0.0.0.0:514`).
    pub source: Arc<str>,
    /// Set by a filter that could not handle the event and was told to route
    /// failures to the pipeline's dead-letter sinks.
    pub dead_letter: bool,
    /// Which of its batch's queue records the event came from: an index into
    /// the batch's ack token's [`crate::ack::AckToken::origins`], set by the
    /// worker that made the batch; [`Event::NO_ORIGIN`] for an event made
    /// from nothing (a filter's flush), which is never skipped as a replay.
    /// Not encoded anywhere; it sits in the padding after `dead_letter`, so
    /// it costs no memory.
    origin: u32,
}

/// An event's fields: built, or JSON text parsed on first read.
///
/// Why not one `OnceLock<Object>` for both: filling a `OnceLock` that
/// starts empty (`OnceLock::from`) takes two locked instructions and a call
/// per event, about 1.5 % of the grok case's CPU (docs/benchmarks/journal.md,
/// 2026-11-27); built fields need no lock at all.
#[derive(Clone, Debug)]
enum Body {
    /// Fields built from values (a parsed line, a decoded record).
    Fields(Object),
    /// The fields as JSON text, authoritative while nothing changed them,
    /// and their parse once something read them.
    Raw(RawJson, OnceLock<Object>),
}

/// The empty identity, shared (no allocation per event).
pub fn no_identity() -> Arc<Identity> {
    static EMPTY: std::sync::LazyLock<Arc<Identity>> = std::sync::LazyLock::new(Arc::default);
    Arc::clone(&EMPTY)
}

/// The empty source, shared (no allocation per event).
pub fn no_source() -> Arc<str> {
    static EMPTY: std::sync::LazyLock<Arc<str>> = std::sync::LazyLock::new(|| Arc::from(""));
    Arc::clone(&EMPTY)
}

/// The name of the field holding the raw log line.
pub const MESSAGE: &str = "message";
/// The name of the field holding failure tags (`_grokparsefailure`, …).
pub const TAGS: &str = "tags";

/// Current wall-clock time in nanoseconds since the Unix epoch.
pub fn now_ns() -> i64 {
    match SystemTime::now().duration_since(UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_nanos()).unwrap_or(i64::MAX),
        Err(_) => 0,
    }
}

impl Event {
    /// An event with the given message, stamped now, with empty identity and source.
    pub fn from_message(message: impl AsRef<str>) -> Self {
        let mut fields = Object::with_capacity(4);
        fields.insert(MESSAGE, Value::from(message.as_ref()));
        Self::from_fields(fields)
    }

    /// An event with the given fields, stamped now.
    pub fn from_fields(fields: Object) -> Self {
        Self::new(now_ns(), fields, no_identity(), no_source())
    }

    /// An event with every part given.
    pub fn new(timestamp: i64, fields: Object, identity: Arc<Identity>, source: Arc<str>) -> Self {
        Self { timestamp, body: Body::Fields(fields), identity, source, dead_letter: false, origin: Self::NO_ORIGIN }
    }

    /// An event whose fields are JSON text, parsed when first needed.
    pub fn from_raw(timestamp: i64, raw: RawJson, identity: Arc<Identity>, source: Arc<str>) -> Self {
        Self {
            timestamp,
            body: Body::Raw(raw, OnceLock::new()),
            identity,
            source,
            dead_letter: false,
            origin: Self::NO_ORIGIN,
        }
    }

    /// The structured fields (parsed now if they were still JSON text).
    #[inline]
    pub fn fields(&self) -> &Object {
        match &self.body {
            Body::Fields(fields) => fields,
            Body::Raw(raw, parsed) => parsed.get_or_init(|| raw.parse()),
        }
    }

    /// The structured fields, mutably. The JSON text, if any, is dropped.
    #[inline]
    pub fn fields_mut(&mut self) -> &mut Object {
        if let Body::Raw(raw, parsed) = &mut self.body {
            let fields = parsed.take().unwrap_or_else(|| raw.parse());
            self.body = Body::Fields(fields);
        }
        match &mut self.body {
            Body::Fields(fields) => fields,
            // INVARIANT: made `Fields` just above.
            Body::Raw(..) => unreachable!("fields made above"),
        }
    }

    /// Takes the fields out.
    pub fn into_fields(mut self) -> Object {
        std::mem::take(self.fields_mut())
    }

    /// The fields as JSON text while they are unchanged since the event was
    /// read (`None` once parsed for a change, or built from values).
    #[inline]
    pub fn raw(&self) -> Option<&RawJson> {
        match &self.body {
            Body::Raw(raw, _) => Some(raw),
            Body::Fields(_) => None,
        }
    }

    /// [`Event::origin`] of an event that came from no queue record.
    pub const NO_ORIGIN: u32 = u32::MAX;

    /// The index of the queue record this event came from in its batch's
    /// [`crate::ack::AckToken::origins`] ([`Event::NO_ORIGIN`] when none).
    /// A filter that builds an event from another one keeps it.
    #[inline]
    pub fn origin(&self) -> u32 {
        self.origin
    }

    /// Sets [`Event::origin`] (the runtime's workers, when they merge records).
    #[inline]
    pub fn set_origin(&mut self, origin: u32) {
        self.origin = origin;
    }

    /// The `message` field when it is a string.
    pub fn message(&self) -> Option<&str> {
        self.fields().get(&MESSAGE).and_then(|v| v.as_str())
    }

    /// Looks up a field by path.
    pub fn get(&self, path: &FieldPath) -> Option<&Value> {
        let (first, rest) = path.segments().split_first()?;
        let mut cur = self.fields().get(first)?;
        for seg in rest {
            cur = cur.as_object()?.get(seg)?;
        }
        Some(cur)
    }

    /// Looks up a field by path, mutably.
    pub fn get_mut(&mut self, path: &FieldPath) -> Option<&mut Value> {
        let (first, rest) = path.segments().split_first()?;
        let mut cur = self.fields_mut().get_mut(first)?;
        for seg in rest {
            cur = cur.as_object_mut()?.get_mut(seg)?;
        }
        Some(cur)
    }

    /// Sets a field, creating intermediate objects (and replacing non-object
    /// intermediates) as needed.
    pub fn insert(&mut self, path: &FieldPath, value: Value) {
        insert_path(self.fields_mut(), path.segments(), value);
    }

    /// Removes a field, returning it.
    pub fn remove(&mut self, path: &FieldPath) -> Option<Value> {
        let (last, parents) = path.segments().split_last()?;
        if parents.is_empty() {
            return self.fields_mut().remove(last);
        }
        let (first, mid) = parents.split_first()?;
        let mut cur = self.fields_mut().get_mut(first)?;
        for seg in mid {
            cur = cur.as_object_mut()?.get_mut(seg)?;
        }
        cur.as_object_mut()?.remove(last)
    }

    /// Adds a tag to the `tags` array (created if missing; a scalar `tags` becomes
    /// an array). A tag already present is not added twice.
    pub fn add_tag(&mut self, tag: &str) {
        match self.fields_mut().get_mut(&TAGS) {
            Some(Value::Array(arr)) => {
                if !arr.iter().any(|t| t.as_str() == Some(tag)) {
                    arr.push(Value::from(tag));
                }
            }
            Some(v) => {
                let old = std::mem::take(v);
                *v = Value::Array(vec![old, Value::from(tag)]);
            }
            None => {
                self.fields_mut().insert(TAGS, Value::Array(vec![Value::from(tag)]));
            }
        }
    }

    /// Whether the `tags` array holds `tag`.
    pub fn has_tag(&self, tag: &str) -> bool {
        match self.fields().get(&TAGS) {
            Some(v) => match v.as_array() {
                Some(arr) => arr.iter().any(|t| t.as_str() == Some(tag)),
                None => v.as_str() == Some(tag),
            },
            None => false,
        }
    }
}

impl PartialEq for Event {
    fn eq(&self, other: &Self) -> bool {
        self.timestamp == other.timestamp
            && self.dead_letter == other.dead_letter
            && self.identity == other.identity
            && self.source == other.source
            && self.fields() == other.fields()
    }
}

/// Inserts `value` at `segments` inside `obj`, creating objects on the way.
pub fn insert_path(obj: &mut Object, segments: &[String], value: Value) {
    let Some((first, rest)) = segments.split_first() else { return };
    if rest.is_empty() {
        obj.insert(first, value);
        return;
    }
    let child = obj.get_or_insert_with(first, || Object::new().into_value());
    if !child.is_object() {
        *child = Object::new().into_value();
    }
    if let Some(child_obj) = child.as_object_mut() {
        insert_path(child_obj, rest, value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `origin` fits in the padding after `dead_letter`: an event is no
    /// larger than without it.
    #[test]
    fn origin_costs_no_memory() {
        #[allow(dead_code)]
        struct WithoutOrigin {
            timestamp: i64,
            body: Body,
            identity: Arc<Identity>,
            source: Arc<str>,
            dead_letter: bool,
        }
        assert_eq!(std::mem::size_of::<Event>(), std::mem::size_of::<WithoutOrigin>());
        let mut e = Event::from_message("m");
        assert_eq!(e.origin(), Event::NO_ORIGIN);
        e.set_origin(3);
        assert_eq!(e.clone().origin(), 3);
    }

    /// JSON text stays the event's fields until something changes them,
    /// whether or not something read them first; a change keeps every value.
    #[test]
    fn raw_text_is_authoritative_until_a_change() {
        let raw = || RawJson::from_parts(bytes::Bytes::from_static(br#"{"message":"m","n":3}"#), None).unwrap();
        let mut read_first = Event::from_raw(7, raw(), no_identity(), no_source());
        assert_eq!(read_first.fields().get("n").and_then(Value::as_i64), Some(3));
        assert!(read_first.raw().is_some(), "a read keeps the text");
        read_first.fields_mut().insert("k", "v");
        let mut changed_first = Event::from_raw(7, raw(), no_identity(), no_source());
        changed_first.fields_mut().insert("k", "v");
        for e in [&read_first, &changed_first] {
            assert!(e.raw().is_none(), "a change drops the text");
            assert_eq!(e.fields().clone().into_value().to_json(), r#"{"message":"m","n":3,"k":"v"}"#);
        }
        let built = Event::new(7, Object::new(), no_identity(), no_source());
        assert!(built.raw().is_none() && built.fields().is_empty());
    }

    #[test]
    fn nested_insert_get_remove() {
        let mut e = Event::from_message("hello");
        let p = FieldPath::parse("[http][request][method]").unwrap();
        e.insert(&p, Value::from("GET"));
        assert_eq!(e.get(&p).and_then(|v| v.as_str()), Some("GET"));
        let dotted = FieldPath::parse("http.request.method").unwrap();
        assert_eq!(e.get(&dotted).and_then(|v| v.as_str()), Some("GET"));
        assert_eq!(e.remove(&dotted).and_then(|v| v.as_str().map(String::from)), Some("GET".into()));
        assert!(e.get(&p).is_none());
        assert_eq!(e.message(), Some("hello"));
    }

    #[test]
    fn tags_are_unique_and_scalar_becomes_array() {
        let mut e = Event::from_message("x");
        e.add_tag("_grokparsefailure");
        e.add_tag("_grokparsefailure");
        e.add_tag("_jsonparsefailure");
        assert_eq!(e.fields().get(TAGS).unwrap().to_json(), r#"["_grokparsefailure","_jsonparsefailure"]"#);
        let mut e = Event::from_message("x");
        e.fields_mut().insert(TAGS, Value::from("a"));
        e.add_tag("b");
        assert!(e.has_tag("a") && e.has_tag("b"));
    }
}
