//! `date`: parses a timestamp field with Logstash's date formats and sets the
//! event's time from it.
//!
//! `match = ["timestamp", "ISO8601", "dd/MMM/yyyy:HH:mm:ss Z"]` is Logstash's
//! array form: the field, then formats tried in order (`ISO8601`, `UNIX`,
//! `UNIX_MS`, `RFC2822`, `RFC3164`, `HTTPDATE` or Joda patterns). By default
//! the result becomes the typed `event.timestamp` (`target = "@timestamp"`
//! means the same); any other `target` gets the RFC 3339 UTC string.
//! `timezone` is a fixed offset (`"+02:00"`, `"UTC"`) for inputs without one.
//! Numbers are read as text, so `UNIX`/`UNIX_MS` work on numeric fields.
//!
//! A missing field is left alone (as in Logstash); a value no format reads is
//! tagged `_dateparsefailure` (or dead-lettered) and counted in
//! `events_failed`. `remove_field` is applied only on success.
//!
//! Why: the event time must be the time in the log line, not the time it was
//! read, for every sink and time-based index downstream.

use std::sync::Arc;

use chrono::FixedOffset;
use serde::Deserialize;
use sluice_core::codec::format_timestamp;
use sluice_core::component::{BuildContext, Filter, FilterSpec};
use sluice_core::config::{parse_table, ConfigError};
use sluice_core::metrics::ComponentMetrics;
use sluice_core::path::FieldPath;
use sluice_core::{Event, Value};
use sluice_parsers::date::DateParser;

use super::{failure_config, FailurePolicy};

/// Registry entry.
pub const SPEC: FilterSpec = FilterSpec {
    name: "date",
    summary: "set the event time from a field (Logstash/Joda date formats)",
    example: "match = [\"timestamp\", \"ISO8601\", \"dd/MMM/yyyy:HH:mm:ss Z\"]\n",
    build,
};

failure_config! {
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    /// Field, then one or more formats.
    #[serde(rename = "match")]
    matches: Vec<String>,
    /// Where to store the result (default: the event's timestamp).
    #[serde(default)]
    target: Option<FieldPath>,
    /// Fixed offset for inputs without one (default UTC).
    #[serde(default)]
    timezone: Option<String>,
    /// Only English month and day names are read; accepted for compatibility.
    #[serde(default)]
    locale: Option<String>,
    /// Fields removed after a successful parse.
    #[serde(default)]
    remove_field: Vec<FieldPath>,
}
}

/// Parses `UTC`, `Z`, `GMT`, `+02:00`, `+0200`, `-05` into an offset.
fn parse_timezone(s: &str) -> Result<FixedOffset, String> {
    let t = s.trim();
    if ["UTC", "Z", "GMT", "Etc/UTC", "Etc/GMT", "UCT"].iter().any(|z| z.eq_ignore_ascii_case(t)) {
        return FixedOffset::east_opt(0).ok_or_else(|| "zero offset".to_string());
    }
    let bad = || format!("unsupported timezone {s:?}: use a fixed offset such as \"+02:00\" or \"UTC\"");
    sluice_parsers::date::parse_fixed_offset(t).ok_or_else(bad)
}

fn build(value: toml::Value, cx: &BuildContext) -> Result<Box<dyn Filter>, ConfigError> {
    let c: Config = parse_table(value, &cx.path)?;
    let failure = c.failure("_dateparsefailure");
    let Some((field, formats)) = c.matches.split_first().filter(|(_, f)| !f.is_empty()) else {
        return Err(cx.error("match", "expected [field, format, ...] with at least one format"));
    };
    let field = FieldPath::parse(field).map_err(|e| cx.error("match", e.to_string()))?;
    let tz = match &c.timezone {
        Some(z) => parse_timezone(z).map_err(|m| cx.error("timezone", m))?,
        None => FixedOffset::east_opt(0).ok_or_else(|| cx.error("timezone", "zero offset"))?,
    };
    if let Some(l) = &c.locale {
        let l = l.to_ascii_lowercase();
        if !(l == "en" || l.starts_with("en-") || l.starts_with("en_")) {
            return Err(cx.error("locale", format!("unsupported locale {l:?}: only English names are read")));
        }
    }
    let parser = DateParser::new(formats, tz).map_err(|e| cx.error("match", e.to_string()))?;
    let target = c.target.filter(|t| t.segments() != ["@timestamp"]);
    Ok(Box::new(Date {
        field,
        parser,
        target,
        remove_field: c.remove_field,
        failure,
        metrics: Arc::clone(&cx.metrics),
    }))
}

struct Date {
    field: FieldPath,
    parser: DateParser,
    /// `None`: the typed event timestamp.
    target: Option<FieldPath>,
    remove_field: Vec<FieldPath>,
    failure: FailurePolicy,
    metrics: Arc<ComponentMetrics>,
}

impl Date {
    fn parse_value(&self, v: &Value) -> Option<i64> {
        match v {
            Value::String(s) => self.parser.parse(s).ok(),
            Value::Int(i) => self.parser.parse(&i.to_string()).ok(),
            Value::Float(f) => self.parser.parse(&f.to_string()).ok(),
            // Logstash tries each element; the first that parses wins.
            Value::Array(arr) => arr.iter().find_map(|x| self.parse_value(x)),
            _ => None,
        }
    }

    /// `None`: nothing to do; `Some(ok)`: parsed or failed.
    fn one(&self, e: &mut Event, last: &mut LastParse) -> Option<bool> {
        let v = e.get(&self.field)?;
        let parsed = match v {
            Value::Null => return None,
            Value::String(s) if last.valid && last.text == s.as_str() => Some(last.ns),
            Value::String(s) => {
                let r = self.parser.parse(s).ok();
                if let Some(ns) = r {
                    last.text.clear();
                    last.text.push_str(s);
                    last.ns = ns;
                    last.valid = true;
                }
                r
            }
            other => self.parse_value(other),
        };
        let Some(ns) = parsed else { return Some(false) };
        match &self.target {
            None => e.timestamp = ns,
            Some(t) => e.insert(t, Value::from(format_timestamp(ns))),
        }
        for f in &self.remove_field {
            e.remove(f);
        }
        Some(true)
    }
}

/// The last text parsed successfully in a batch and its result: lines of one
/// batch often carry the same second, and the text is compared in a few
/// nanoseconds where parsing it takes tens. Per batch, so workers share
/// nothing (formats without a year read the current one; a batch lasts
/// milliseconds).
#[derive(Default)]
struct LastParse {
    valid: bool,
    text: String,
    ns: i64,
}

impl Filter for Date {
    fn process(&self, events: &mut Vec<Event>) {
        self.metrics.events_in.add(events.len() as u64);
        let mut last = LastParse::default();
        for e in events.iter_mut() {
            if self.one(e, &mut last) == Some(false) {
                self.metrics.events_failed.inc();
                self.failure.apply(e);
            }
        }
        self.metrics.events_out.add(events.len() as u64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::{build_filter, run_filter};
    use sluice_core::codec::event_from_json;

    fn ev(json: &str) -> Event {
        event_from_json(json.as_bytes()).unwrap().0
    }
    fn s(e: &Event, p: &str) -> String {
        e.get(&FieldPath::parse(p).unwrap()).map(|v| v.to_json()).unwrap_or_else(|| "<none>".into())
    }

    #[test]
    fn iso8601_sets_event_timestamp() {
        let out =
            run_filter(&SPEC, "match = [\"t\", \"ISO8601\"]", vec![ev(r#"{"t":"2016-05-18T10:44:30.045+02:00"}"#)]);
        assert_eq!(out[0].timestamp, 1_463_561_070_045_000_000);
        assert_eq!(s(&out[0], "t"), r#""2016-05-18T10:44:30.045+02:00""#);
        assert!(!out[0].has_tag("_dateparsefailure"));
    }

    #[test]
    fn repeated_text_in_a_batch_parses_the_same() {
        // The per-batch cache of the last parsed text must give what a fresh
        // parse gives, and must not leak a result to a different text or hide
        // a failure.
        let lines = [
            r#"{"t":"17/May/2015:10:05:03 +0000"}"#,
            r#"{"t":"17/May/2015:10:05:03 +0000"}"#,
            r#"{"t":"17/May/2015:10:05:04 +0000"}"#,
            r#"{"t":"nope"}"#,
            r#"{"t":"17/May/2015:10:05:04 +0000"}"#,
            r#"{"t":"17/May/2015:10:05:03 +0200"}"#,
        ];
        let out = run_filter(&SPEC, "match = [\"t\", \"HTTPDATE\"]", lines.iter().map(|l| ev(l)).collect());
        let ts: Vec<i64> = out.iter().map(|e| e.timestamp).collect();
        assert_eq!(ts[0], 1_431_857_103_000_000_000);
        assert_eq!(ts[1], ts[0]);
        assert_eq!(ts[2], ts[0] + 1_000_000_000);
        assert!(out[3].has_tag("_dateparsefailure"));
        assert_eq!(ts[4], ts[2]);
        assert_eq!(ts[5], ts[0] - 7_200_000_000_000);
        assert_eq!(out.iter().filter(|e| e.has_tag("_dateparsefailure")).count(), 1);
    }

    #[test]
    fn httpdate_second_format_and_remove_field() {
        let out = run_filter(
            &SPEC,
            "match = [\"timestamp\", \"ISO8601\", \"HTTPDATE\"]\nremove_field = [\"timestamp\"]",
            vec![ev(r#"{"timestamp":"17/May/2015:10:05:03 +0000"}"#)],
        );
        assert_eq!(out[0].timestamp, 1_431_857_103_000_000_000);
        assert_eq!(s(&out[0], "timestamp"), "<none>");
        let out = run_filter(
            &SPEC,
            "match = [\"timestamp\", \"dd/MMM/yyyy:HH:mm:ss Z\"]",
            vec![ev(r#"{"timestamp":"17/May/2015:12:05:03 +0200"}"#)],
        );
        assert_eq!(out[0].timestamp, 1_431_857_103_000_000_000);
    }

    #[test]
    fn thesis_format_with_fixed_timezone() {
        let out = run_filter(
            &SPEC,
            "match = [\"creation\", \"yyyy-MM-dd HH:mm:ss:SSS\"]\ntimezone = \"+02:00\"",
            vec![ev(r#"{"creation":"2016-05-18 10:44:30:045"}"#)],
        );
        // 2016-05-18T08:44:30.045Z
        assert_eq!(out[0].timestamp, 1_463_561_070_045_000_000);
        assert_eq!(format_timestamp(out[0].timestamp), "2016-05-18T08:44:30.045Z");
    }

    #[test]
    fn target_field_gets_rfc3339() {
        let out = run_filter(
            &SPEC,
            "match = [\"creation\", \"yyyy-MM-dd HH:mm:ss:SSS\"]\ntimezone = \"+0200\"\ntarget = \"[event][created]\"",
            vec![ev(r#"{"@timestamp":"2020-01-01T00:00:00Z","creation":"2016-05-18 10:44:30:045"}"#)],
        );
        assert_eq!(s(&out[0], "event.created"), r#""2016-05-18T08:44:30.045Z""#);
        assert_eq!(out[0].timestamp, 1_577_836_800_000_000_000, "event time untouched");
        let out = run_filter(
            &SPEC,
            "match = [\"t\", \"ISO8601\"]\ntarget = \"@timestamp\"",
            vec![ev(r#"{"t":"2016-05-18T08:44:30Z"}"#)],
        );
        assert_eq!(out[0].timestamp, 1_463_561_070_000_000_000);
        assert_eq!(s(&out[0], "@timestamp"), "<none>");
    }

    #[test]
    fn numbers_with_unix_formats() {
        let out = run_filter(
            &SPEC,
            "match = [\"t\", \"UNIX\"]",
            vec![ev(r#"{"t":1463561070}"#), ev(r#"{"t":1463561070.5}"#)],
        );
        assert_eq!(out[0].timestamp, 1_463_561_070_000_000_000);
        assert_eq!(out[1].timestamp, 1_463_561_070_500_000_000);
        let out = run_filter(&SPEC, "match = [\"t\", \"UNIX_MS\"]", vec![ev(r#"{"t":1463561070045}"#)]);
        assert_eq!(out[0].timestamp, 1_463_561_070_045_000_000);
    }

    #[test]
    fn failures_tagged_missing_field_ignored() {
        let input = vec![ev(r#"{"@timestamp":"2020-01-01T00:00:00Z","t":"yesterday"}"#), ev(r#"{"other":1}"#)];
        let before = input[1].timestamp;
        let out = run_filter(&SPEC, "match = [\"t\", \"ISO8601\"]\nremove_field = [\"t\"]", input);
        assert!(out[0].has_tag("_dateparsefailure"));
        assert_eq!(out[0].timestamp, 1_577_836_800_000_000_000);
        assert_eq!(s(&out[0], "t"), r#""yesterday""#, "remove_field only on success");
        assert!(!out[1].has_tag("_dateparsefailure"));
        assert_eq!(out[1].timestamp, before);
        let out = run_filter(
            &SPEC,
            "match = [\"t\", \"ISO8601\"]\non_failure = \"dead_letter\"",
            vec![ev(r#"{"t":{"a":1}}"#)],
        );
        assert!(out[0].dead_letter && out[0].has_tag("_dateparsefailure"));
    }

    #[test]
    fn config_errors() {
        let e = build_filter(&SPEC, "match = [\"t\"]").err().unwrap();
        assert_eq!(e.to_string(), "test.date.match: expected [field, format, ...] with at least one format");
        let e = build_filter(&SPEC, "match = [\"t\", \"ISO8601\"]\ntimezone = \"Europe/Paris\"").err().unwrap();
        assert_eq!(e.path, "test.date.timezone");
        let e = build_filter(&SPEC, "match = [\"t\", \"yyyy-MM-dd zzz\"]").err().unwrap();
        assert!(e.to_string().starts_with("test.date.match: unsupported pattern token 'z'"), "{e}");
        assert_eq!(parse_timezone("-05:30").unwrap().local_minus_utc(), -(5 * 3600 + 30 * 60));
        assert_eq!(parse_timezone("+02").unwrap().local_minus_utc(), 7200);
    }
}
