//! The index schema and how an [`Event`] becomes a tantivy document.
//!
//! | field        | type                    | options                                   |
//! |--------------|-------------------------|-------------------------------------------|
//! | `_ts`        | i64 (ns since epoch)    | fast (ranges and sorting run on the column)|
//! | `_seq`       | u64                     | fast (tiebreaker, hit id)                 |
//! | `@group` `@subgroup` `@host` `@source` | keyword | raw tokenizer, indexed (docs only), fast |
//! | `level`      | keyword                 | raw, indexed, fast: the first string of the top-level fields `level`, `severity`, `loglevel` |
//! | `message`    | text                    | `sluice_text` tokenizer, positions, no norms |
//! | `_present`   | keyword                 | `message` when the event has a string message (for `_exists_:message`) |
//! | `attrs`      | JSON                    | every other field, fast columns only (not inverted-indexed: queries scan the columns, see [`crate::columns`]): strings raw, numbers as f64, booleans |
//! | `_source`    | text                    | stored: the event as `sluice_core::codec` ndjson (zstd doc store) |
//!
//! Numbers in `attrs` are all stored as `f64` so that one term or range
//! query covers `404` and `404.0` alike (precision beyond 2^53 is lost in the
//! column only; `_source` keeps the original). Documents are [`EventDoc`]s:
//! tantivy reads the values where the event holds them.

use sluice_core::codec::{write_json, RESERVED};
use sluice_core::raw::{Items, Members, Place, Tape, TapeValue};
use sluice_core::{Event, Object, Value};
use tantivy::schema::document::{ReferenceValue, ReferenceValueLeaf};
use tantivy::schema::{
    Document, Field, IndexRecordOption, JsonObjectOptions, NumericOptions, Schema, TextFieldIndexing, TextOptions,
    STORED,
};
use tantivy::tokenizer::{LowerCaser, RemoveLongFilter, SimpleTokenizer, TextAnalyzer};

/// Schema version written in every partition's commit payload.
pub const SCHEMA_VERSION: u32 = 2;

/// Field names.
pub mod names {
    /// Event time, ns.
    pub const TS: &str = "_ts";
    /// Store sequence number.
    pub const SEQ: &str = "_seq";
    /// Group keyword.
    pub const GROUP: &str = "@group";
    /// Subgroup keyword.
    pub const SUBGROUP: &str = "@subgroup";
    /// Host keyword.
    pub const HOST: &str = "@host";
    /// Source keyword.
    pub const SOURCE: &str = "@source";
    /// Level keyword.
    pub const LEVEL: &str = "level";
    /// Full-text message.
    pub const MESSAGE: &str = "message";
    /// Presence markers.
    pub const PRESENT: &str = "_present";
    /// Dynamic fields.
    pub const ATTRS: &str = "attrs";
    /// Stored event.
    pub const SRC: &str = "_source";
}

/// Top-level event fields the `level` keyword is taken from, in order.
pub const LEVEL_SOURCES: [&str; 3] = ["level", "severity", "loglevel"];

/// Handles of the schema's fields.
#[derive(Clone, Debug)]
pub struct Fields {
    /// `_ts`.
    pub ts: Field,
    /// `_seq`.
    pub seq: Field,
    /// `@group`.
    pub group: Field,
    /// `@subgroup`.
    pub subgroup: Field,
    /// `@host`.
    pub host: Field,
    /// `@source`.
    pub source: Field,
    /// `level`.
    pub level: Field,
    /// `message`.
    pub message: Field,
    /// `_present`.
    pub present: Field,
    /// `attrs`.
    pub attrs: Field,
    /// `_source`.
    pub src: Field,
    /// The schema.
    pub schema: Schema,
}

impl Fields {
    /// Builds the schema.
    pub fn new() -> Self {
        let mut b = Schema::builder();
        let ts = b.add_i64_field(names::TS, NumericOptions::default().set_fast());
        let seq = b.add_u64_field(names::SEQ, NumericOptions::default().set_fast());
        let keyword = TextOptions::default()
            .set_indexing_options(
                TextFieldIndexing::default()
                    .set_tokenizer("raw")
                    .set_index_option(IndexRecordOption::Basic)
                    .set_fieldnorms(false),
            )
            .set_fast("raw");
        let group = b.add_text_field(names::GROUP, keyword.clone());
        let subgroup = b.add_text_field(names::SUBGROUP, keyword.clone());
        let host = b.add_text_field(names::HOST, keyword.clone());
        let source = b.add_text_field(names::SOURCE, keyword.clone());
        let level = b.add_text_field(names::LEVEL, keyword);
        let text = TextFieldIndexing::default()
            .set_tokenizer(TEXT_TOKENIZER)
            .set_index_option(IndexRecordOption::WithFreqsAndPositions)
            .set_fieldnorms(false);
        let message = b.add_text_field(names::MESSAGE, TextOptions::default().set_indexing_options(text));
        let present = b.add_text_field(
            names::PRESENT,
            TextOptions::default().set_indexing_options(
                TextFieldIndexing::default()
                    .set_tokenizer("raw")
                    .set_index_option(IndexRecordOption::Basic)
                    .set_fieldnorms(false),
            ),
        );
        // Not in the inverted index: queries on dynamic fields read the fast
        // columns (see `crate::columns`).
        let attrs =
            b.add_json_field(names::ATTRS, JsonObjectOptions::default().set_fast("raw").set_expand_dots_enabled());
        let src = b.add_text_field(names::SRC, STORED);
        let schema = b.build();
        Self { ts, seq, group, subgroup, host, source, level, message, present, attrs, src, schema }
    }

    /// The keyword field for a reserved name.
    pub fn keyword(&self, name: &str) -> Option<Field> {
        match name {
            names::GROUP => Some(self.group),
            names::SUBGROUP => Some(self.subgroup),
            names::HOST => Some(self.host),
            names::SOURCE => Some(self.source),
            _ => None,
        }
    }

    /// The document for `event` with sequence number `seq` (see [`EventDoc`]).
    pub fn document(&self, event: Event, seq: u64) -> EventDoc {
        EventDoc::new(self, event, seq)
    }
}

impl Default for Fields {
    fn default() -> Self {
        Self::new()
    }
}

/// The `level` keyword of an event (see [`LEVEL_SOURCES`]).
pub fn level_of(event: &Event) -> Option<&str> {
    LEVEL_SOURCES.iter().find_map(|k| event.fields().get(k).and_then(|v| v.as_str()))
}

/// A document over an [`Event`], handed to tantivy without copying the
/// event's values into tantivy's own document type: the indexer reads the
/// strings, numbers and nested objects of the event where they are. Only
/// `_source` (the event's ndjson) is built up front, once.
///
/// An event still held as JSON text (`Event::raw`) is not parsed into an
/// [`Object`] for indexing: the indexer reads its values from a [`Tape`] of
/// `_source` (one allocation instead of one per object, array and long
/// string). Where the tape refuses the text (a duplicate key, a `\u`
/// escape), the event's parsed fields are read instead.
pub struct EventDoc {
    event: Event,
    seq: u64,
    source: Source,
    f: DocFields,
    /// Counts the document while it waits for or is in the indexer.
    pub(crate) guard: Option<crate::inflight::DocGuard>,
}

/// The field handles an [`EventDoc`] needs (copied: `Field` is a `u32`).
#[derive(Clone, Copy)]
struct DocFields {
    ts: Field,
    seq: Field,
    group: Field,
    subgroup: Field,
    host: Field,
    source: Field,
    level: Field,
    message: Field,
    present: Field,
    attrs: Field,
    src: Field,
}

impl EventDoc {
    fn new(fields: &Fields, event: Event, seq: u64) -> Self {
        let mut buf = Vec::with_capacity(event.raw().map_or(512, |r| r.len() + 160));
        write_json(&event, &mut buf);
        // INVARIANT: `write_json` writes JSON text (UTF-8) only.
        let text = String::from_utf8(buf).unwrap_or_default();
        let source = match event.raw() {
            Some(_) => Tape::build(text).map_or_else(Source::Text, |t| {
                let s = Summary::of(&t);
                Source::Tape(t, s)
            }),
            None => Source::Text(text),
        };
        let f = DocFields {
            ts: fields.ts,
            seq: fields.seq,
            group: fields.group,
            subgroup: fields.subgroup,
            host: fields.host,
            source: fields.source,
            level: fields.level,
            message: fields.message,
            present: fields.present,
            attrs: fields.attrs,
            src: fields.src,
        };
        Self { event, seq, source, f, guard: None }
    }

    /// The document's `_seq`.
    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// The event.
    pub fn event(&self) -> &Event {
        &self.event
    }

    /// Gives the event back.
    pub fn into_event(self) -> Event {
        self.event
    }

    /// `_source`: the event as ndjson.
    pub fn source_json(&self) -> &str {
        match &self.source {
            Source::Text(s) => s,
            Source::Tape(t, _) => t.text(),
        }
    }
}

/// `_source`, and for an event kept as JSON text the tape its values are read from.
enum Source {
    Text(String),
    Tape(Tape, Summary),
}

/// What a document's fields need from a tape's top-level members, found in
/// one pass when the document is made (tantivy asks for the fields once per
/// index part: postings, columns, stored document).
struct Summary {
    level: Option<Place>,
    message: Option<Place>,
    attrs: bool,
}

impl Summary {
    fn of(t: &Tape) -> Self {
        let (mut message, mut levels, mut attrs) = (None, [None; LEVEL_SOURCES.len()], false);
        for (place, k, v) in t.members().with_places() {
            if let TapeValue::Str(_) = v {
                if k == names::MESSAGE {
                    message = Some(place);
                    continue;
                }
                if let Some(i) = LEVEL_SOURCES.iter().position(|l| *l == k) {
                    levels[i] = Some(place);
                }
            }
            attrs |= !is_reserved(k);
        }
        Self { level: levels.into_iter().flatten().next(), message, attrs }
    }
}

/// The string at `place` (a [`Summary`] keeps only strings' places).
fn str_at(t: &Tape, place: Option<Place>) -> Option<&str> {
    match t.at(place?) {
        TapeValue::Str(s) => Some(s),
        _ => None,
    }
}

impl std::fmt::Debug for EventDoc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventDoc").field("seq", &self.seq).field("source", &self.source_json()).finish()
    }
}

impl Document for EventDoc {
    type Value<'a> = DocValue<'a>;
    type FieldsValuesIter<'a> = std::vec::IntoIter<(Field, DocValue<'a>)>;

    fn iter_fields_and_values(&self) -> Self::FieldsValuesIter<'_> {
        let f = &self.f;
        let e = &self.event;
        let mut out = Vec::with_capacity(11);
        out.push((f.ts, DocValue::Leaf(ReferenceValueLeaf::I64(e.timestamp))));
        out.push((f.seq, DocValue::Leaf(ReferenceValueLeaf::U64(self.seq))));
        let id = &*e.identity;
        for (field, v) in [(f.group, &id.group), (f.subgroup, &id.subgroup), (f.host, &id.host)] {
            if !v.is_empty() {
                out.push((field, DocValue::Leaf(ReferenceValueLeaf::Str(v))));
            }
        }
        if !e.source.is_empty() {
            out.push((f.source, DocValue::Leaf(ReferenceValueLeaf::Str(&e.source))));
        }
        let (level, message, attrs) = match &self.source {
            Source::Tape(t, s) => (str_at(t, s.level), str_at(t, s.message), s.attrs.then_some(DocValue::TapeAttrs(t))),
            Source::Text(_) => {
                let fields = e.fields();
                let attrs = fields.iter().any(|(k, v)| is_attr(k, v)).then_some(DocValue::Attrs(fields));
                (level_of(e), e.message(), attrs)
            }
        };
        if let Some(level) = level {
            out.push((f.level, DocValue::Leaf(ReferenceValueLeaf::Str(level))));
        }
        if let Some(m) = message {
            out.push((f.message, DocValue::Leaf(ReferenceValueLeaf::Str(m))));
            out.push((f.present, DocValue::Leaf(ReferenceValueLeaf::Str(names::MESSAGE))));
        }
        if let Some(attrs) = attrs {
            out.push((f.attrs, attrs));
        }
        out.push((f.src, DocValue::Leaf(ReferenceValueLeaf::Str(self.source_json()))));
        out.into_iter()
    }
}

fn is_reserved(key: &str) -> bool {
    key.starts_with('@') && RESERVED.contains(&key)
}

/// Whether a top-level field goes into `attrs`: every field but the reserved
/// `@` keys and a string `message` (which has its own field).
fn is_attr(key: &str, v: &Value) -> bool {
    !(RESERVED.contains(&key) || (key == names::MESSAGE && matches!(v, Value::String(_))))
}

/// A value of an [`EventDoc`], borrowed from the event.
#[derive(Clone, Debug)]
pub enum DocValue<'a> {
    /// A leaf tantivy reads as is.
    Leaf(ReferenceValueLeaf<'a>),
    /// The `attrs` object: the event's fields but the reserved ones and a string message.
    Attrs(&'a Object),
    /// A value inside `attrs`. Integers are given as `f64` so that one
    /// numeric column per path covers `404` and `404.0`; `null` is skipped
    /// by tantivy (absent for `_exists_`).
    Json(&'a Value),
    /// The `attrs` object read from a tape: its members but the reserved
    /// ones and a string message.
    TapeAttrs(&'a Tape),
    /// A value inside `attrs`, read from a tape (numbers are `f64`).
    Tape(TapeValue<'a>),
}

/// The members of an object value: of a parsed object (boxed), or of a tape
/// (no allocation), `attrs` leaving out the reserved keys and a string `message`.
pub enum ObjIter<'a> {
    /// A parsed object's.
    Boxed(Box<dyn Iterator<Item = (&'a str, DocValue<'a>)> + 'a>),
    /// A tape object's; `attrs`: the top level, filtered.
    Tape { members: Members<'a>, attrs: bool },
}

impl<'a> Iterator for ObjIter<'a> {
    type Item = (&'a str, DocValue<'a>);

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        match self {
            ObjIter::Boxed(it) => it.next(),
            ObjIter::Tape { members, attrs } => loop {
                let (k, v) = members.next()?;
                if *attrs && (is_reserved(k) || (k == names::MESSAGE && matches!(v, TapeValue::Str(_)))) {
                    continue;
                }
                return Some((k, DocValue::Tape(v)));
            },
        }
    }
}

/// The items of an array value: of a parsed array (boxed) or of a tape.
pub enum ArrIter<'a> {
    /// A parsed array's.
    Boxed(Box<dyn Iterator<Item = DocValue<'a>> + 'a>),
    /// A tape array's.
    Tape(Items<'a>),
}

impl<'a> Iterator for ArrIter<'a> {
    type Item = DocValue<'a>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        match self {
            ArrIter::Boxed(it) => it.next(),
            ArrIter::Tape(items) => items.next().map(DocValue::Tape),
        }
    }
}

impl<'a> tantivy::schema::Value<'a> for DocValue<'a> {
    type ArrayIter = ArrIter<'a>;
    type ObjectIter = ObjIter<'a>;

    fn as_value(&self) -> ReferenceValue<'a, Self> {
        match self {
            DocValue::Leaf(l) => ReferenceValue::Leaf(l.clone()),
            DocValue::Attrs(o) => {
                let it = ObjIter::Boxed(Box::new(
                    o.iter().filter(|(k, v)| is_attr(k, v)).map(|(k, v)| (k, DocValue::Json(v))),
                ));
                ReferenceValue::Object(it)
            }
            DocValue::TapeAttrs(t) => ReferenceValue::Object(ObjIter::Tape { members: t.members(), attrs: true }),
            DocValue::Tape(v) => match v {
                TapeValue::Null => ReferenceValue::Leaf(ReferenceValueLeaf::Null),
                TapeValue::Bool(b) => ReferenceValue::Leaf(ReferenceValueLeaf::Bool(*b)),
                TapeValue::Number(x) => ReferenceValue::Leaf(ReferenceValueLeaf::F64(*x)),
                TapeValue::Str(s) => ReferenceValue::Leaf(ReferenceValueLeaf::Str(s)),
                TapeValue::Array(items) => ReferenceValue::Array(ArrIter::Tape(items.clone())),
                TapeValue::Object(members) => {
                    ReferenceValue::Object(ObjIter::Tape { members: members.clone(), attrs: false })
                }
            },
            DocValue::Json(v) => match v {
                Value::Null => ReferenceValue::Leaf(ReferenceValueLeaf::Null),
                Value::Bool(b) => ReferenceValue::Leaf(ReferenceValueLeaf::Bool(*b)),
                Value::Int(i) => ReferenceValue::Leaf(ReferenceValueLeaf::F64(*i as f64)),
                Value::Float(x) => ReferenceValue::Leaf(ReferenceValueLeaf::F64(*x)),
                Value::String(s) => ReferenceValue::Leaf(ReferenceValueLeaf::Str(s.as_str())),
                Value::Array(a) => {
                    let it = ArrIter::Boxed(Box::new(a.iter().map(DocValue::Json)));
                    ReferenceValue::Array(it)
                }
                Value::Object(o) => {
                    let it = ObjIter::Boxed(Box::new(o.iter().map(|(k, v)| (k, DocValue::Json(v)))));
                    ReferenceValue::Object(it)
                }
            },
        }
    }
}

/// Name under which [`analyzer`] is registered on every partition index.
pub const TEXT_TOKENIZER: &str = "sluice_text";

/// The analyzer of `message` and string values in `attrs`, per
/// `docs/query-semantics.md`: split on every non-alphanumeric character,
/// drop tokens longer than 40 bytes, lower-case. (tantivy's `default` drops
/// tokens of 40 bytes already, hence our own registration.)
pub fn analyzer() -> TextAnalyzer {
    TextAnalyzer::builder(SimpleTokenizer::default()).filter(RemoveLongFilter::limit(41)).filter(LowerCaser).build()
}

/// The analysed tokens of `text`.
pub fn tokens(text: &str) -> Vec<String> {
    let mut a = analyzer();
    let mut stream = a.token_stream(text);
    let mut out = Vec::new();
    while stream.advance() {
        out.push(stream.token().text.clone());
    }
    out
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use bytes::Bytes;
    use sluice_core::event::Identity;
    use tantivy::schema::Value as _;

    use super::*;

    /// Every (field, path, leaf) tantivy reads from `doc`, in order, but
    /// `_source` (a raw event's keeps its number literals as written).
    fn flat(doc: &EventDoc) -> Vec<String> {
        fn walk(v: DocValue<'_>, path: &str, out: &mut Vec<String>) {
            match v.as_value() {
                ReferenceValue::Leaf(l) => out.push(format!("{path}={l:?}")),
                ReferenceValue::Array(items) => items.for_each(|x| walk(x, &format!("{path}[]"), out)),
                ReferenceValue::Object(members) => members.for_each(|(k, x)| walk(x, &format!("{path}.{k}"), out)),
            }
        }
        let mut out = Vec::new();
        for (field, v) in doc.iter_fields_and_values().filter(|(f, _)| *f != doc.f.src) {
            walk(v, &format!("{}", field.field_id()), &mut out);
        }
        out
    }

    #[test]
    fn a_raw_events_document_is_its_parsed_events_document() {
        let fields = Fields::new();
        let id = Arc::new(Identity::new("g", "sub", "h"));
        let src: Arc<str> = Arc::from("tcp");
        for text in [
            r#"{"message":"2016-05-18 10:44:30:045 INFO LogGenerator run This is lognumber 1","@version":"1","@timestamp":"2016-05-18T08:44:34.737Z","source":"/home/kakor/log.log","offset":0,"type":"log","input_type":"log","beat":{"hostname":"ubuntu-1","name":"ubuntu-1"},"count":1,"fields":null,"host":"ubuntu-1","tags":["beats_input_codec_plain_applied"],"creation":"2016-05-18 10:44:30:045","logcount":"1"}"#,
            r#"{"severity":"warn","loglevel":"x","level":7,"message":{"not":"a string"},"n":[1,2.5,-3e2,18446744073709551615],"e":"q\"\\\n/"}"#,
            r#"{"loglevel":"debug","severity":3,"a":{"b":{"c":[true,false,null,[],{}]}},"k\ty":"tab key"}"#,
            r#"{"message":"only a message"}"#,
            r#"{}"#,
        ] {
            let scanned = sluice_core::raw::scan(&Bytes::from(text)).unwrap_or_else(|| panic!("{text}"));
            let raw = Event::from_raw(1_000, scanned.raw.clone(), id.clone(), src.clone());
            let parsed = Event::new(1_000, scanned.raw.parse(), id.clone(), src.clone());
            let (a, b) = (fields.document(raw, 7), fields.document(parsed, 7));
            assert!(matches!(a.source, Source::Tape(..)), "{text}: not read from a tape");
            assert!(matches!(b.source, Source::Text(_)));
            assert_eq!(flat(&a), flat(&b), "{text}");
            // And the parse was never needed.
            assert!(a.event().raw().is_some());
        }
    }

    #[test]
    fn a_raw_event_the_tape_refuses_is_read_from_its_fields() {
        let fields = Fields::new();
        // A duplicate key: the scan keeps it raw, the parser keeps the last value.
        let text = r#"{"a":1,"level":"info","a":2}"#;
        let scanned = sluice_core::raw::scan(&Bytes::from(text)).expect("raw");
        let doc = fields.document(Event::from_raw(5, scanned.raw, Arc::default(), Arc::from("")), 1);
        assert!(matches!(doc.source, Source::Text(_)));
        let flat = flat(&doc);
        assert!(flat.iter().any(|l| l.ends_with(".a=F64(2.0)")), "{flat:?}");
        assert!(!flat.iter().any(|l| l.ends_with(".a=F64(1.0)")), "{flat:?}");
        assert!(flat.iter().any(|l| l.ends_with("=Str(\"info\")")), "{flat:?}");
    }
}
