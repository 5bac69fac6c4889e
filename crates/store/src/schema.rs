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
//! | `attrs`      | JSON                    | every other field: strings tokenized with positions + raw fast column; numbers as f64; booleans |
//! | `_source`    | bytes                   | stored: the event as `sluice_core::codec` ndjson (zstd doc store) |
//!
//! Numbers in `attrs` are all indexed as `f64` so that one term or range
//! query covers `404` and `404.0` alike (precision beyond 2^53 is lost in the
//! index only; `_source` keeps the original).

use sluice_core::codec::{write_json, RESERVED};
use sluice_core::{Event, Value};
use tantivy::schema::{
    Field, IndexRecordOption, JsonObjectOptions, NumericOptions, OwnedValue, Schema, TextFieldIndexing, TextOptions,
    STORED,
};
use tantivy::tokenizer::{LowerCaser, RemoveLongFilter, SimpleTokenizer, TextAnalyzer};
use tantivy::TantivyDocument;

/// Schema version written in every partition's commit payload.
pub const SCHEMA_VERSION: u32 = 1;

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
        let message = b.add_text_field(names::MESSAGE, TextOptions::default().set_indexing_options(text.clone()));
        let present = b.add_text_field(
            names::PRESENT,
            TextOptions::default().set_indexing_options(
                TextFieldIndexing::default()
                    .set_tokenizer("raw")
                    .set_index_option(IndexRecordOption::Basic)
                    .set_fieldnorms(false),
            ),
        );
        let attrs = b.add_json_field(
            names::ATTRS,
            JsonObjectOptions::default().set_indexing_options(text).set_fast("raw").set_expand_dots_enabled(),
        );
        let src = b.add_bytes_field(names::SRC, STORED);
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

    /// Builds the document for `event` with sequence number `seq`; `buf` is scratch.
    pub fn document(&self, event: &Event, seq: u64, buf: &mut Vec<u8>) -> TantivyDocument {
        let mut doc = TantivyDocument::new();
        doc.add_i64(self.ts, event.timestamp);
        doc.add_u64(self.seq, seq);
        let id = &event.identity;
        for (f, v) in [(self.group, &id.group), (self.subgroup, &id.subgroup), (self.host, &id.host)] {
            if !v.is_empty() {
                doc.add_text(f, v);
            }
        }
        if !event.source.is_empty() {
            doc.add_text(self.source, &*event.source);
        }
        if let Some(level) = level_of(event) {
            doc.add_text(self.level, level);
        }
        let message = event.message();
        if let Some(m) = message {
            doc.add_text(self.message, m);
            doc.add_text(self.present, names::MESSAGE);
        }
        let mut attrs = Vec::with_capacity(event.fields().len());
        for (k, v) in event.fields().iter() {
            if RESERVED.contains(&k) || (k == names::MESSAGE && message.is_some()) {
                continue;
            }
            if let Some(v) = to_owned_value(v) {
                attrs.push((k.to_string(), v));
            }
        }
        if !attrs.is_empty() {
            doc.add_field_value(self.attrs, &OwnedValue::Object(attrs));
        }
        buf.clear();
        write_json(event, buf);
        doc.add_bytes(self.src, buf);
        doc
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

/// A field value for the JSON field; `None` for null (absent for `_exists_`).
fn to_owned_value(v: &Value) -> Option<OwnedValue> {
    Some(match v {
        Value::Null => return None,
        Value::Bool(b) => OwnedValue::Bool(*b),
        Value::Int(i) => OwnedValue::F64(*i as f64),
        Value::Float(f) => OwnedValue::F64(*f),
        Value::String(s) => OwnedValue::Str(s.to_string()),
        Value::Array(a) => {
            let items: Vec<OwnedValue> = a.iter().filter_map(to_owned_value).collect();
            if items.is_empty() {
                return None;
            }
            OwnedValue::Array(items)
        }
        Value::Object(o) => {
            let items: Vec<(String, OwnedValue)> =
                o.iter().filter_map(|(k, v)| to_owned_value(v).map(|v| (k.to_string(), v))).collect();
            if items.is_empty() {
                return None;
            }
            OwnedValue::Object(items)
        }
    })
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
