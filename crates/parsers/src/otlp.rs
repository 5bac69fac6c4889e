//! OpenTelemetry OTLP logs (`ExportLogsServiceRequest`), as OTLP/HTTP
//! (`/v1/logs`, protobuf or JSON) and OTLP/gRPC carry it: the messages
//! written by hand with prost-derive (no protoc), the JSON form walked into
//! the same messages, and the mapping of every `LogRecord` to an event.
//! Pure and bounded, fuzzed by `fuzz/fuzz_targets/otlp.rs`; the mapping is
//! in `docs/specs/otlp.md`.
//!
//! A request that does not decode is refused whole ([`OtlpError`]). A
//! record that decodes but cannot be kept (an `AnyValue` nested deeper
//! than the limit, too many attributes, a trace id that is not 16 bytes, a
//! span id that is not 8, a time past year 2262) is *rejected* alone: the
//! others are kept and the answer carries OTLP's `partial_success`
//! ([`Decoded::rejected`], [`Decoded::error`]).

use base64ct::{Base64, Encoding};
use sluice_core::{Object, Value};
use thiserror::Error;

/// Limits of one request.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Most log records in one request.
    pub max_records: usize,
    /// Most attributes of one record, resource or scope.
    pub max_attributes: usize,
    /// Deepest nesting of `AnyValue` (arrays and key-value lists).
    pub max_depth: usize,
}

/// Why a request was refused whole.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum OtlpError {
    /// Not an `ExportLogsServiceRequest` protobuf.
    #[error("otlp: not an ExportLogsServiceRequest protobuf: {0}")]
    Protobuf(String),
    /// Not JSON, or not the OTLP/JSON shape.
    #[error("otlp: invalid OTLP/JSON body: {0}")]
    Json(String),
    /// JSON nested deeper than the limit allows.
    #[error("otlp: JSON nested deeper than {0}")]
    TooDeep(usize),
    /// Too many records.
    #[error("otlp: more than {0} log records in one request")]
    TooManyRecords(usize),
}

/// One record, mapped.
#[derive(Debug, Clone, PartialEq)]
pub struct OtlpRecord {
    /// Its fields.
    pub fields: Object,
    /// Its time (ns since the epoch); `None` when the sender gave neither
    /// `time_unix_nano` nor `observed_time_unix_nano` (the arrival time is used).
    pub timestamp: Option<i64>,
}

/// A decoded request: the records kept and how many were rejected.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Decoded {
    /// The records kept, in request order.
    pub records: Vec<OtlpRecord>,
    /// Records rejected.
    pub rejected: u64,
    /// Why the first rejected record was rejected.
    pub error: Option<String>,
}

// ---- the messages (opentelemetry-proto v1) ----

/// `opentelemetry.proto.collector.logs.v1.ExportLogsServiceRequest`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ExportLogsServiceRequest {
    /// The records, grouped by resource.
    #[prost(message, repeated, tag = "1")]
    pub resource_logs: Vec<ResourceLogs>,
}

/// `opentelemetry.proto.logs.v1.ResourceLogs`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ResourceLogs {
    /// The resource.
    #[prost(message, optional, tag = "1")]
    pub resource: Option<Resource>,
    /// The records, grouped by instrumentation scope.
    #[prost(message, repeated, tag = "2")]
    pub scope_logs: Vec<ScopeLogs>,
    /// Ignored.
    #[prost(string, tag = "3")]
    pub schema_url: String,
}

/// `opentelemetry.proto.resource.v1.Resource`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Resource {
    /// Its attributes (`service.name`, `host.name`, …).
    #[prost(message, repeated, tag = "1")]
    pub attributes: Vec<KeyValue>,
    /// Ignored.
    #[prost(uint32, tag = "2")]
    pub dropped_attributes_count: u32,
}

/// `opentelemetry.proto.logs.v1.ScopeLogs`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ScopeLogs {
    /// The instrumentation scope (the logger).
    #[prost(message, optional, tag = "1")]
    pub scope: Option<InstrumentationScope>,
    /// The records.
    #[prost(message, repeated, tag = "2")]
    pub log_records: Vec<LogRecord>,
    /// Ignored.
    #[prost(string, tag = "3")]
    pub schema_url: String,
}

/// `opentelemetry.proto.common.v1.InstrumentationScope`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct InstrumentationScope {
    /// Its name.
    #[prost(string, tag = "1")]
    pub name: String,
    /// Its version.
    #[prost(string, tag = "2")]
    pub version: String,
    /// Its attributes.
    #[prost(message, repeated, tag = "3")]
    pub attributes: Vec<KeyValue>,
    /// Ignored.
    #[prost(uint32, tag = "4")]
    pub dropped_attributes_count: u32,
}

/// `opentelemetry.proto.logs.v1.LogRecord`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct LogRecord {
    /// When the event happened (ns since the epoch; 0 unknown).
    #[prost(fixed64, tag = "1")]
    pub time_unix_nano: u64,
    /// When the collector saw it.
    #[prost(fixed64, tag = "11")]
    pub observed_time_unix_nano: u64,
    /// `SeverityNumber` (1–24; 0 unspecified).
    #[prost(int32, tag = "2")]
    pub severity_number: i32,
    /// The severity as the source named it.
    #[prost(string, tag = "3")]
    pub severity_text: String,
    /// The body.
    #[prost(message, optional, tag = "5")]
    pub body: Option<AnyValue>,
    /// Its attributes.
    #[prost(message, repeated, tag = "6")]
    pub attributes: Vec<KeyValue>,
    /// Ignored.
    #[prost(uint32, tag = "7")]
    pub dropped_attributes_count: u32,
    /// W3C trace flags.
    #[prost(fixed32, tag = "8")]
    pub flags: u32,
    /// 16 bytes, or empty.
    #[prost(bytes = "vec", tag = "9")]
    pub trace_id: Vec<u8>,
    /// 8 bytes, or empty.
    #[prost(bytes = "vec", tag = "10")]
    pub span_id: Vec<u8>,
    /// The event's name (OTLP 1.5).
    #[prost(string, tag = "12")]
    pub event_name: String,
}

/// `opentelemetry.proto.common.v1.KeyValue`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct KeyValue {
    /// The key.
    #[prost(string, tag = "1")]
    pub key: String,
    /// The value.
    #[prost(message, optional, tag = "2")]
    pub value: Option<AnyValue>,
}

/// `opentelemetry.proto.common.v1.AnyValue`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct AnyValue {
    /// The value (none: empty).
    #[prost(oneof = "Any", tags = "1, 2, 3, 4, 5, 6, 7")]
    pub value: Option<Any>,
}

/// The kinds of [`AnyValue`].
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum Any {
    /// A string.
    #[prost(string, tag = "1")]
    String(String),
    /// A boolean.
    #[prost(bool, tag = "2")]
    Bool(bool),
    /// An integer.
    #[prost(int64, tag = "3")]
    Int(i64),
    /// A double.
    #[prost(double, tag = "4")]
    Double(f64),
    /// An array.
    #[prost(message, tag = "5")]
    Array(ArrayValue),
    /// A key-value list.
    #[prost(message, tag = "6")]
    Kvlist(KeyValueList),
    /// Bytes.
    #[prost(bytes = "vec", tag = "7")]
    Bytes(Vec<u8>),
}

/// `opentelemetry.proto.common.v1.ArrayValue`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ArrayValue {
    /// The elements.
    #[prost(message, repeated, tag = "1")]
    pub values: Vec<AnyValue>,
}

/// `opentelemetry.proto.common.v1.KeyValueList`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct KeyValueList {
    /// The pairs.
    #[prost(message, repeated, tag = "1")]
    pub values: Vec<KeyValue>,
}

/// `ExportLogsServiceResponse`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ExportLogsServiceResponse {
    /// Set when some records were rejected.
    #[prost(message, optional, tag = "1")]
    pub partial_success: Option<ExportLogsPartialSuccess>,
}

/// `ExportLogsPartialSuccess`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ExportLogsPartialSuccess {
    /// How many records were rejected.
    #[prost(int64, tag = "1")]
    pub rejected_log_records: i64,
    /// Why.
    #[prost(string, tag = "2")]
    pub error_message: String,
}

/// `google.rpc.Status` (without `details`), the body of an OTLP/HTTP error.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Status {
    /// A gRPC status code (3 `INVALID_ARGUMENT`, …).
    #[prost(int32, tag = "1")]
    pub code: i32,
    /// Why.
    #[prost(string, tag = "2")]
    pub message: String,
}

// ---- answers ----

/// The protobuf `ExportLogsServiceResponse` for `d`.
pub fn response_protobuf(d: &Decoded) -> Vec<u8> {
    let partial_success = (d.rejected > 0).then(|| ExportLogsPartialSuccess {
        rejected_log_records: i64::try_from(d.rejected).unwrap_or(i64::MAX),
        error_message: d.error.clone().unwrap_or_default(),
    });
    prost::Message::encode_to_vec(&ExportLogsServiceResponse { partial_success })
}

/// The OTLP/JSON `ExportLogsServiceResponse` for `d` (`{}` when all were kept).
pub fn response_json(d: &Decoded) -> String {
    if d.rejected == 0 {
        return "{}".into();
    }
    let mut msg = Vec::new();
    sluice_core::value::write_json_str(&mut msg, d.error.as_deref().unwrap_or(""));
    format!(
        r#"{{"partialSuccess":{{"rejectedLogRecords":"{}","errorMessage":{}}}}}"#,
        d.rejected,
        String::from_utf8_lossy(&msg)
    )
}

/// A `google.rpc.Status` as protobuf.
pub fn status_protobuf(code: i32, message: &str) -> Vec<u8> {
    prost::Message::encode_to_vec(&Status { code, message: message.into() })
}

/// A `google.rpc.Status` as OTLP/JSON.
pub fn status_json(code: i32, message: &str) -> String {
    let mut msg = Vec::new();
    sluice_core::value::write_json_str(&mut msg, message);
    format!(r#"{{"code":{code},"message":{}}}"#, String::from_utf8_lossy(&msg))
}

// ---- decoding ----

/// Decodes a protobuf `ExportLogsServiceRequest` and maps its records.
pub fn decode_protobuf(body: &[u8], limits: Limits) -> Result<Decoded, OtlpError> {
    let req =
        <ExportLogsServiceRequest as prost::Message>::decode(body).map_err(|e| OtlpError::Protobuf(e.to_string()))?;
    map(req, limits)
}

/// Decodes an OTLP/JSON `ExportLogsServiceRequest` (lowerCamelCase keys,
/// as the spec writes them; snake_case accepted too) and maps its records.
pub fn decode_json(body: &[u8], limits: Limits) -> Result<Decoded, OtlpError> {
    // An AnyValue level is two JSON levels; the envelope about eight.
    let json_depth = limits.max_depth.saturating_mul(2).saturating_add(10);
    if crate::gelf::nesting_depth(body) > json_depth {
        return Err(OtlpError::TooDeep(json_depth));
    }
    let v = Value::from_json(body).map_err(|e| OtlpError::Json(e.to_string()))?;
    if !v.is_object() {
        return Err(json_err("the body is not an object"));
    }
    let mut req = ExportLogsServiceRequest::default();
    let mut total = 0usize;
    for rl in arr(&v, "resourceLogs", "resource_logs")? {
        let resource = match key(rl, "resource", "resource") {
            Some(r) => Some(Resource { attributes: kvs(r)?, dropped_attributes_count: 0 }),
            None => None,
        };
        let mut scope_logs = Vec::new();
        for sl in arr(rl, "scopeLogs", "scope_logs")? {
            let scope = match key(sl, "scope", "scope") {
                Some(s) => Some(InstrumentationScope {
                    name: string(s, "name", "name")?,
                    version: string(s, "version", "version")?,
                    attributes: kvs(s)?,
                    dropped_attributes_count: 0,
                }),
                None => None,
            };
            let records = arr(sl, "logRecords", "log_records")?;
            total = total.saturating_add(records.len());
            if total > limits.max_records {
                return Err(OtlpError::TooManyRecords(limits.max_records));
            }
            let log_records = records.iter().map(record_json).collect::<Result<_, _>>()?;
            scope_logs.push(ScopeLogs { scope, log_records, schema_url: String::new() });
        }
        req.resource_logs.push(ResourceLogs { resource, scope_logs, schema_url: String::new() });
    }
    map(req, limits)
}

fn json_err(m: &str) -> OtlpError {
    OtlpError::Json(m.to_string())
}

fn key<'a>(v: &'a Value, camel: &str, snake: &str) -> Option<&'a Value> {
    v.get(camel).or_else(|| v.get(snake)).filter(|v| !v.is_null())
}

fn arr<'a>(v: &'a Value, camel: &str, snake: &str) -> Result<&'a [Value], OtlpError> {
    match key(v, camel, snake) {
        None => Ok(&[]),
        Some(a) => {
            a.as_array().map(Vec::as_slice).ok_or_else(|| OtlpError::Json(format!("\"{camel}\" is not an array")))
        }
    }
}

fn string(v: &Value, camel: &str, snake: &str) -> Result<String, OtlpError> {
    match key(v, camel, snake) {
        None => Ok(String::new()),
        Some(s) => {
            s.as_str().map(str::to_string).ok_or_else(|| OtlpError::Json(format!("\"{camel}\" is not a string")))
        }
    }
}

/// A 64-bit integer: a JSON number or a decimal string (proto3 JSON).
fn int(v: &Value, camel: &str, snake: &str) -> Result<Option<i128>, OtlpError> {
    let Some(x) = key(v, camel, snake) else { return Ok(None) };
    let n = match x {
        Value::String(s) => s.as_str().parse::<i128>().ok(),
        Value::Int(i) => Some(i128::from(*i)),
        other => other.as_u64().map(i128::from),
    };
    n.map(Some).ok_or_else(|| OtlpError::Json(format!("\"{camel}\" is not an integer")))
}

/// Hex ids; one that is not hex becomes a 1-byte id, which the mapping rejects.
fn hex_id(v: &Value, camel: &str, snake: &str) -> Result<Vec<u8>, OtlpError> {
    let s = string(v, camel, snake)?;
    if s.len() % 2 != 0 || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Ok(vec![0]);
    }
    Ok((0..s.len()).step_by(2).filter_map(|i| u8::from_str_radix(&s[i..i + 2], 16).ok()).collect())
}

fn kvs(v: &Value) -> Result<Vec<KeyValue>, OtlpError> {
    arr(v, "attributes", "attributes")?.iter().map(kv_json).collect()
}

fn kv_json(v: &Value) -> Result<KeyValue, OtlpError> {
    let k = v.get("key").and_then(Value::as_str).ok_or_else(|| json_err("an attribute has no \"key\" string"))?;
    let value = key(v, "value", "value").map(any_json).transpose()?;
    Ok(KeyValue { key: k.to_string(), value })
}

fn any_json(v: &Value) -> Result<AnyValue, OtlpError> {
    let o = v.as_object().ok_or_else(|| json_err("an AnyValue is not an object"))?;
    let Some((k, x)) = o.iter().find(|(_, x)| !x.is_null()) else { return Ok(AnyValue { value: None }) };
    let bad = || OtlpError::Json(format!("AnyValue \"{k}\" has the wrong type"));
    let value = match k {
        "stringValue" | "string_value" => Any::String(x.as_str().ok_or_else(bad)?.to_string()),
        "boolValue" | "bool_value" => Any::Bool(x.as_bool().ok_or_else(bad)?),
        "intValue" | "int_value" => {
            Any::Int(int(v, "intValue", "int_value")?.and_then(|n| i64::try_from(n).ok()).ok_or_else(bad)?)
        }
        "doubleValue" | "double_value" => Any::Double(match x {
            Value::String(s) => s.as_str().parse().map_err(|_| bad())?,
            other => other.as_f64().ok_or_else(bad)?,
        }),
        "bytesValue" | "bytes_value" => Any::Bytes(Base64::decode_vec(x.as_str().ok_or_else(bad)?).map_err(|_| bad())?),
        "arrayValue" | "array_value" => Any::Array(ArrayValue {
            values: arr(x, "values", "values")?.iter().map(any_json).collect::<Result<_, _>>()?,
        }),
        "kvlistValue" | "kvlist_value" => Any::Kvlist(KeyValueList {
            values: arr(x, "values", "values")?.iter().map(kv_json).collect::<Result<_, _>>()?,
        }),
        other => return Err(OtlpError::Json(format!("unknown AnyValue kind {other:?}"))),
    };
    Ok(AnyValue { value: Some(value) })
}

fn record_json(v: &Value) -> Result<LogRecord, OtlpError> {
    if !v.is_object() {
        return Err(json_err("a log record is not an object"));
    }
    // A time that does not fit u64 becomes u64::MAX, which the mapping rejects.
    let time = |c, s| int(v, c, s).map(|n| n.map_or(0, |n| u64::try_from(n).unwrap_or(u64::MAX)));
    Ok(LogRecord {
        time_unix_nano: time("timeUnixNano", "time_unix_nano")?,
        observed_time_unix_nano: time("observedTimeUnixNano", "observed_time_unix_nano")?,
        severity_number: int(v, "severityNumber", "severity_number")?
            .map_or(0, |n| i32::try_from(n).unwrap_or(i32::MAX)),
        severity_text: string(v, "severityText", "severity_text")?,
        body: key(v, "body", "body").map(any_json).transpose()?,
        attributes: kvs(v)?,
        dropped_attributes_count: 0,
        flags: int(v, "flags", "flags")?.map_or(0, |n| u32::try_from(n).unwrap_or(0)),
        trace_id: hex_id(v, "traceId", "trace_id")?,
        span_id: hex_id(v, "spanId", "span_id")?,
        event_name: string(v, "eventName", "event_name")?,
    })
}

// ---- mapping ----

/// An `AnyValue` as an event value, at most `depth` levels deep.
fn value_of(a: &AnyValue, depth: usize) -> Result<Value, String> {
    let Some(v) = &a.value else { return Ok(Value::Null) };
    Ok(match v {
        Any::String(s) => Value::from(s.as_str()),
        Any::Bool(b) => Value::Bool(*b),
        Any::Int(i) => Value::Int(*i),
        Any::Double(d) => Value::from(*d),
        Any::Bytes(b) => Value::from(Base64::encode_string(b)),
        Any::Array(_) | Any::Kvlist(_) if depth == 0 => return Err("an attribute or body is nested too deep".into()),
        Any::Array(a) => Value::Array(a.values.iter().map(|x| value_of(x, depth - 1)).collect::<Result<_, _>>()?),
        Any::Kvlist(l) => attributes(&l.values, usize::MAX, depth - 1)?.into_value(),
    })
}

/// Attributes as an object (a repeated key keeps its last value).
fn attributes(kvs: &[KeyValue], max: usize, depth: usize) -> Result<Object, String> {
    if kvs.len() > max {
        return Err(format!("more than {max} attributes"));
    }
    let mut o = Object::with_capacity(kvs.len());
    for kv in kvs {
        let v = kv.value.as_ref().map_or(Ok(Value::Null), |v| value_of(v, depth))?;
        o.insert(kv.key.as_str(), v);
    }
    Ok(o)
}

/// `level` from `SeverityNumber` ranges, else the lowercased `severity_text`.
pub fn level(number: i32, text: &str) -> Option<String> {
    let l = match number {
        1..=4 => "trace",
        5..=8 => "debug",
        9..=12 => "info",
        13..=16 => "warn",
        17..=20 => "error",
        21..=24 => "fatal",
        _ if !text.is_empty() => return Some(text.to_ascii_lowercase()),
        _ => return None,
    };
    Some(l.to_string())
}

fn hex(b: &[u8]) -> String {
    use std::fmt::Write as _;
    b.iter().fold(String::with_capacity(b.len() * 2), |mut s, x| {
        let _ = write!(s, "{x:02x}");
        s
    })
}

/// Event fields a record attribute may not overwrite (it is kept as `attributes.<key>` then).
const OWN: &[&str] = &[
    "message",
    "severity_text",
    "severity_number",
    "level",
    "trace_id",
    "span_id",
    "trace_flags",
    "event_name",
    "resource",
    "scope",
    "attributes",
];

fn map_record(r: &LogRecord, resource: &Value, scope: &Value, limits: Limits) -> Result<OtlpRecord, String> {
    let depth = limits.max_depth;
    if !(r.trace_id.is_empty() || r.trace_id.len() == 16) {
        return Err("trace_id must be 16 bytes (32 hex digits)".into());
    }
    if !(r.span_id.is_empty() || r.span_id.len() == 8) {
        return Err("span_id must be 8 bytes (16 hex digits)".into());
    }
    let t = if r.time_unix_nano != 0 { r.time_unix_nano } else { r.observed_time_unix_nano };
    let timestamp = match t {
        0 => None,
        t => Some(i64::try_from(t).map_err(|_| format!("time_unix_nano {t} is past year 2262"))?),
    };
    let attrs = attributes(&r.attributes, limits.max_attributes, depth)?;
    let mut f = Object::with_capacity(8 + attrs.len());
    if let Some(b) = &r.body {
        let v = value_of(b, depth)?;
        let m = match v {
            Value::String(s) => Value::String(s),
            Value::Null => Value::from(""),
            other => Value::from(other.to_json()),
        };
        f.insert("message", m);
    }
    if !r.severity_text.is_empty() {
        f.insert("severity_text", r.severity_text.as_str());
    }
    if r.severity_number != 0 {
        f.insert("severity_number", Value::Int(i64::from(r.severity_number)));
    }
    if let Some(l) = level(r.severity_number, &r.severity_text) {
        f.insert("level", l);
    }
    if !r.trace_id.is_empty() {
        f.insert("trace_id", hex(&r.trace_id));
    }
    if !r.span_id.is_empty() {
        f.insert("span_id", hex(&r.span_id));
    }
    if r.flags != 0 {
        f.insert("trace_flags", Value::Int(i64::from(r.flags)));
    }
    if !r.event_name.is_empty() {
        f.insert("event_name", r.event_name.as_str());
    }
    if !resource.is_null() {
        f.insert("resource", resource.clone());
    }
    if !scope.is_null() {
        f.insert("scope", scope.clone());
    }
    let mut clashes = Object::new();
    for (k, v) in attrs.iter() {
        if OWN.contains(&k) || k.starts_with('@') {
            clashes.insert(k, v.clone());
        } else {
            f.insert(k, v.clone());
        }
    }
    if !clashes.is_empty() {
        f.insert("attributes", clashes.into_value());
    }
    Ok(OtlpRecord { fields: f, timestamp })
}

/// Maps every record of `req`; see the module docs for what is rejected.
pub fn map(req: ExportLogsServiceRequest, limits: Limits) -> Result<Decoded, OtlpError> {
    let total: usize = req
        .resource_logs
        .iter()
        .flat_map(|r| &r.scope_logs)
        .map(|s| s.log_records.len())
        .fold(0, usize::saturating_add);
    if total > limits.max_records {
        return Err(OtlpError::TooManyRecords(limits.max_records));
    }
    let mut out = Decoded { records: Vec::with_capacity(total), ..Decoded::default() };
    let reject = |out: &mut Decoded, n: usize, why: String| {
        out.rejected += n as u64;
        out.error.get_or_insert(why);
    };
    for rl in &req.resource_logs {
        let resource = match &rl.resource {
            Some(r) if !r.attributes.is_empty() => {
                attributes(&r.attributes, limits.max_attributes, limits.max_depth).map(Object::into_value)
            }
            _ => Ok(Value::Null),
        };
        for sl in &rl.scope_logs {
            let n = sl.log_records.len();
            let resource = match &resource {
                Ok(r) => r,
                Err(e) => {
                    reject(&mut out, n, format!("resource: {e}"));
                    continue;
                }
            };
            let scope = match &sl.scope {
                None => Ok(Value::Null),
                Some(s) => scope_value(s, limits),
            };
            let scope = match scope {
                Ok(s) => s,
                Err(e) => {
                    reject(&mut out, n, format!("scope: {e}"));
                    continue;
                }
            };
            for r in &sl.log_records {
                match map_record(r, resource, &scope, limits) {
                    Ok(rec) => out.records.push(rec),
                    Err(e) => reject(&mut out, 1, e),
                }
            }
        }
    }
    Ok(out)
}

fn scope_value(s: &InstrumentationScope, limits: Limits) -> Result<Value, String> {
    let mut o = Object::with_capacity(3);
    if !s.name.is_empty() {
        o.insert("name", s.name.as_str());
    }
    if !s.version.is_empty() {
        o.insert("version", s.version.as_str());
    }
    if !s.attributes.is_empty() {
        o.insert("attributes", attributes(&s.attributes, limits.max_attributes, limits.max_depth)?.into_value());
    }
    Ok(if o.is_empty() { Value::Null } else { o.into_value() })
}

#[cfg(test)]
mod tests {
    use super::*;

    const L: Limits = Limits { max_records: 10, max_attributes: 8, max_depth: 3 };

    fn s<'a>(r: &'a OtlpRecord, k: &str) -> Option<&'a str> {
        r.fields.get(k).and_then(Value::as_str)
    }

    fn sv(x: &str) -> Option<AnyValue> {
        Some(AnyValue { value: Some(Any::String(x.into())) })
    }

    fn kv(k: &str, v: Option<AnyValue>) -> KeyValue {
        KeyValue { key: k.into(), value: v }
    }

    fn request(records: Vec<LogRecord>) -> ExportLogsServiceRequest {
        ExportLogsServiceRequest {
            resource_logs: vec![ResourceLogs {
                resource: Some(Resource { attributes: vec![kv("service.name", sv("checkout"))], ..Default::default() }),
                scope_logs: vec![ScopeLogs {
                    scope: Some(InstrumentationScope {
                        name: "app.pay".into(),
                        version: "1.2".into(),
                        ..Default::default()
                    }),
                    log_records: records,
                    schema_url: String::new(),
                }],
                schema_url: String::new(),
            }],
        }
    }

    fn good() -> LogRecord {
        LogRecord {
            time_unix_nano: 1_700_000_000_000_000_005,
            severity_number: 13,
            severity_text: "WARNING".into(),
            body: sv("card declined"),
            attributes: vec![
                kv("user", sv("ann")),
                kv("message", sv("clash")),
                kv("n", Some(AnyValue { value: Some(Any::Int(7)) })),
            ],
            trace_id: (1..=16).collect(),
            span_id: vec![0xab; 8],
            ..Default::default()
        }
    }

    #[test]
    fn protobuf_records_map_severity_ids_resource_scope_and_attributes() {
        let body = prost::Message::encode_to_vec(&request(vec![good()]));
        let d = decode_protobuf(&body, L).unwrap();
        assert_eq!((d.records.len(), d.rejected, d.error.as_deref()), (1, 0, None));
        let r = &d.records[0];
        assert_eq!(r.timestamp, Some(1_700_000_000_000_000_005));
        assert_eq!(
            (s(r, "message"), s(r, "level"), s(r, "severity_text"), s(r, "user")),
            (Some("card declined"), Some("warn"), Some("WARNING"), Some("ann"))
        );
        assert_eq!(r.fields.get("severity_number").and_then(Value::as_i64), Some(13));
        assert_eq!(r.fields.get("n").and_then(Value::as_i64), Some(7));
        assert_eq!(s(r, "trace_id"), Some("0102030405060708090a0b0c0d0e0f10"));
        assert_eq!(s(r, "span_id"), Some("abababababababab"));
        assert_eq!(r.fields.get("resource").unwrap().to_json(), r#"{"service.name":"checkout"}"#);
        assert_eq!(r.fields.get("scope").unwrap().to_json(), r#"{"name":"app.pay","version":"1.2"}"#);
        assert_eq!(r.fields.get("attributes").unwrap().to_json(), r#"{"message":"clash"}"#);
        assert_eq!(response_protobuf(&d), Vec::<u8>::new());
        assert_eq!(response_json(&d), "{}");
    }

    #[test]
    fn bad_records_are_rejected_alone_with_a_partial_success() {
        let deep = AnyValue {
            value: Some(Any::Array(ArrayValue {
                values: vec![AnyValue {
                    value: Some(Any::Array(ArrayValue {
                        values: vec![AnyValue {
                            value: Some(Any::Array(ArrayValue {
                                values: vec![AnyValue { value: Some(Any::Array(ArrayValue::default())) }],
                            })),
                        }],
                    })),
                }],
            })),
        };
        let bad_trace = LogRecord { trace_id: vec![1, 2, 3], ..good() };
        let too_deep = LogRecord { body: Some(deep), ..good() };
        let future = LogRecord { time_unix_nano: u64::MAX, ..good() };
        let observed = LogRecord { time_unix_nano: 0, observed_time_unix_nano: 42, severity_number: 0, ..good() };
        let d = map(request(vec![bad_trace, good(), too_deep, future, observed]), L).unwrap();
        assert_eq!((d.records.len(), d.rejected), (2, 3));
        assert_eq!(d.error.as_deref(), Some("trace_id must be 16 bytes (32 hex digits)"));
        assert_eq!((d.records[1].timestamp, s(&d.records[1], "level")), (Some(42), Some("warning")));
        let resp = <ExportLogsServiceResponse as prost::Message>::decode(response_protobuf(&d).as_slice()).unwrap();
        let p = resp.partial_success.unwrap();
        assert_eq!(
            (p.rejected_log_records, p.error_message.as_str()),
            (3, "trace_id must be 16 bytes (32 hex digits)")
        );
        assert_eq!(
            response_json(&d),
            r#"{"partialSuccess":{"rejectedLogRecords":"3","errorMessage":"trace_id must be 16 bytes (32 hex digits)"}}"#
        );
        let many = request((0..11).map(|_| good()).collect());
        assert_eq!(map(many, L), Err(OtlpError::TooManyRecords(10)));
        assert!(matches!(decode_protobuf(b"\x0a\xff\xff", L), Err(OtlpError::Protobuf(_))));
    }

    #[test]
    fn json_bodies_decode_like_protobuf() {
        let b = br#"{"resourceLogs":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"checkout"}}]},
            "scopeLogs":[{"scope":{"name":"app.pay","version":"1.2"},"logRecords":[
              {"timeUnixNano":"1700000000000000005","severityNumber":13,"severityText":"WARNING",
               "body":{"stringValue":"card declined"},"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"abababababababab",
               "attributes":[{"key":"user","value":{"stringValue":"ann"}},{"key":"message","value":{"stringValue":"clash"}},{"key":"n","value":{"intValue":"7"}}]},
              {"body":{"kvlistValue":{"values":[{"key":"a","value":{"boolValue":true}}]}},"traceId":"zz"}
            ]}]}]}"#;
        let d = decode_json(b, L).unwrap();
        let p = decode_protobuf(&prost::Message::encode_to_vec(&request(vec![good()])), L).unwrap();
        assert_eq!(d.records, p.records);
        assert_eq!((d.rejected, d.error.as_deref()), (1, Some("trace_id must be 16 bytes (32 hex digits)")));
        let d = decode_json(br#"{"resource_logs":[{"scope_logs":[{"log_records":[{"body":{"kvlistValue":{"values":[{"key":"a","value":{"boolValue":true}}]}}}]}]}]}"#, L).unwrap();
        assert_eq!((s(&d.records[0], "message"), d.records[0].timestamp), (Some(r#"{"a":true}"#), None));
        for bad in [
            &b"{"[..],
            b"[]",
            br#"{"resourceLogs":{}}"#,
            br#"{"resourceLogs":[{"scopeLogs":[{"logRecords":[{"body":{"intValue":"x"}}]}]}]}"#,
        ] {
            assert!(matches!(decode_json(bad, L), Err(OtlpError::Json(_))), "{}", String::from_utf8_lossy(bad));
        }
        let deep = format!("{}{}", "[".repeat(40), "]".repeat(40));
        assert_eq!(decode_json(deep.as_bytes(), L), Err(OtlpError::TooDeep(16)));
        assert_eq!(status_json(3, "bad \"x\""), r#"{"code":3,"message":"bad \"x\""}"#);
    }
}
