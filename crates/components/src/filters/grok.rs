//! `grok`: extracts fields from text with named grok patterns, compatible
//! with Logstash's grok filter.
//!
//! `match = { message = "%{COMBINEDAPACHELOG}" }` (or a list of patterns per
//! field, several fields allowed) is compiled once at build time against the
//! legacy or ECS v1 pattern library (`ecs_compatibility`, default `v1` as in
//! Logstash 8), plus `patterns_dir` files and `pattern_definitions`; an
//! undefined pattern is a config error naming `match.<field>`. At run time
//! each field is matched against its patterns in order; with `break_on_match`
//! (default) the first match wins. Captures are merged with Logstash's rules
//! (a capture into an existing string makes an array unless the field is in
//! `overwrite`), at the root or under `target`. An event nothing matched is
//! tagged `_grokparsefailure` (or dead-lettered) and counted in
//! `events_failed`; a PCRE2 match-limit error also adds `_groktimeout`.
//!
//! Why: grok is the workhorse of Logstash pipelines, so existing configs and
//! pattern files must work unchanged.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use indexmap::IndexMap;
use serde::Deserialize;
use sluice_core::component::{BuildContext, Filter, FilterSpec};
use sluice_core::config::{parse_table, ConfigError};
use sluice_core::metrics::{ComponentMetrics, Counter};
use sluice_core::path::FieldPath;
use sluice_core::{Event, Text, Value};
use sluice_parsers::grok::{insert_captures_from, GrokLibrary, GrokPattern, InsertOptions};

use super::{failure_config, FailurePolicy};

/// Registry entry.
pub const SPEC: FilterSpec = FilterSpec {
    name: "grok",
    summary: "extract fields with grok patterns (Logstash-compatible, legacy or ECS v1 library)",
    example: "match = { message = \"%{COMBINEDAPACHELOG}\" }\necs_compatibility = \"disabled\"\n",
    build,
};

/// The tag added (besides the failure tags) when PCRE2 gave up matching.
const TIMEOUT_TAG: &str = "_groktimeout";

/// One pattern or a list of patterns.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

/// Which embedded pattern library to use.
#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
enum EcsCompatibility {
    /// logstash-patterns-core `legacy` (flat field names such as `clientip`).
    Disabled,
    /// logstash-patterns-core `ecs-v1` (nested ECS fields); `v8` is an alias.
    #[default]
    #[serde(alias = "v8")]
    V1,
}

failure_config! {
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    /// Field name -> pattern(s).
    #[serde(rename = "match")]
    matches: IndexMap<String, OneOrMany>,
    #[serde(default)]
    ecs_compatibility: EcsCompatibility,
    /// Directories whose files (every file, sorted by name) hold `NAME regex` lines.
    #[serde(default)]
    patterns_dir: Vec<PathBuf>,
    /// Extra patterns, `NAME = "regex"`; they win over library and files.
    #[serde(default)]
    pattern_definitions: BTreeMap<String, String>,
    /// Stop at the first matching pattern (and field).
    #[serde(default = "default_true")]
    break_on_match: bool,
    /// Fields whose existing value a capture replaces.
    #[serde(default)]
    overwrite: Vec<String>,
    /// Put captures under this field instead of the root.
    #[serde(default)]
    target: Option<FieldPath>,
}
}

fn default_true() -> bool {
    true
}

fn build(value: toml::Value, cx: &BuildContext) -> Result<Box<dyn Filter>, ConfigError> {
    let c: Config = parse_table(value, &cx.path)?;
    let failure = c.failure("_grokparsefailure");
    let mut lib = match c.ecs_compatibility {
        EcsCompatibility::Disabled => GrokLibrary::legacy(),
        EcsCompatibility::V1 => GrokLibrary::ecs_v1(),
    };
    for dir in &c.patterns_dir {
        load_dir(&mut lib, dir).map_err(|m| cx.error("patterns_dir", m))?;
    }
    for (name, regex) in &c.pattern_definitions {
        lib.add_pattern(name, regex).map_err(|e| cx.error(&format!("pattern_definitions.{name}"), e.to_string()))?;
    }
    if c.matches.is_empty() {
        return Err(cx.error("match", "expected at least one field = pattern(s)"));
    }
    let mut fields = Vec::with_capacity(c.matches.len());
    for (field, patterns) in &c.matches {
        let key = format!("match.{field}");
        let path = FieldPath::parse(field).map_err(|e| cx.error(&key, e.to_string()))?;
        let list = match patterns {
            OneOrMany::One(p) => vec![p.as_str()],
            OneOrMany::Many(v) => v.iter().map(String::as_str).collect(),
        };
        if list.is_empty() {
            return Err(cx.error(&key, "expected at least one pattern"));
        }
        let compiled = list
            .iter()
            .map(|p| lib.compile(p))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| cx.error(&key, e.to_string()))?;
        // Captures that may land in (or under) the matched field's top-level
        // key force matching a copy of the input (see `Grok::one`).
        let first = path.segments().first().map(String::as_str);
        let touches_source = match c.target.as_ref().and_then(|t| t.segments().first()) {
            Some(t) => Some(t.as_str()) == first,
            None => compiled.iter().any(|p| p.fields().iter().any(|f| f.path().first().map(|s| &**s) == first)),
        };
        fields.push(Match { path, patterns: compiled, touches_source });
    }
    let mut overwrite = Vec::with_capacity(c.overwrite.len());
    for o in &c.overwrite {
        overwrite.push(FieldPath::parse(o).map_err(|e| cx.error("overwrite", e.to_string()))?.to_string());
    }
    let target = c.target.as_ref().map(|t| t.segments().to_vec()).unwrap_or_default();
    Ok(Box::new(Grok {
        fields,
        break_on_match: c.break_on_match,
        insert: InsertOptions { overwrite, target },
        failure,
        matched: cx.metrics.counter("matched"),
        timeouts: cx.metrics.counter("timeouts"),
        metrics: Arc::clone(&cx.metrics),
    }))
}

/// Adds every file of `dir` (sorted by name, subdirectories skipped) to `lib`.
fn load_dir(lib: &mut GrokLibrary, dir: &std::path::Path) -> Result<(), String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
    let mut files = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
        if entry.file_type().map(|t| t.is_file()).unwrap_or(false) {
            files.push(entry.path());
        }
    }
    files.sort();
    for f in files {
        let text = std::fs::read_to_string(&f).map_err(|e| format!("cannot read {}: {e}", f.display()))?;
        lib.add_patterns_text(&text).map_err(|e| format!("{}: {e}", f.display()))?;
    }
    Ok(())
}

/// One `match` entry: a field and the patterns tried on it.
struct Match {
    path: FieldPath,
    patterns: Vec<GrokPattern>,
    /// Whether a capture may write into the field's top-level key.
    touches_source: bool,
}

struct Grok {
    fields: Vec<Match>,
    break_on_match: bool,
    insert: InsertOptions,
    failure: FailurePolicy,
    matched: Arc<Counter>,
    timeouts: Arc<Counter>,
    metrics: Arc<ComponentMetrics>,
}

/// What matching one event gave.
#[derive(Default)]
struct Outcome {
    matched: bool,
    timed_out: bool,
}

impl Grok {
    /// Matches one input against `patterns`, merging captures into `e`.
    /// String captures are slices of `input` (no copy when it is shared).
    fn match_input(&self, e: &mut Event, patterns: &[GrokPattern], input: &Text, out: &mut Outcome) -> bool {
        let mut any = false;
        for p in patterns {
            match p.matches(input) {
                Ok(Some(m)) => {
                    insert_captures_from(e.fields_mut(), &m, &self.insert, Some(input));
                    any = true;
                    if self.break_on_match {
                        break;
                    }
                }
                Ok(None) => {}
                // A match error is PCRE2 giving up (match limit, JIT stack).
                Err(_) => out.timed_out = true,
            }
        }
        any
    }

    fn one(&self, e: &mut Event) -> Outcome {
        let mut out = Outcome::default();
        for m in &self.fields {
            let field_matched = match e.get_mut(&m.path) {
                // The common case: a string that no capture writes into. It is
                // taken out (a null stays in its place, keeping the key order),
                // matched, and put back: no copy of the line.
                Some(v @ Value::String(_)) if !m.touches_source => {
                    let taken = std::mem::take(v);
                    let matched = match &taken {
                        Value::String(input) => self.match_input(e, &m.patterns, input, &mut out),
                        _ => false,
                    };
                    if let Some(slot) = e.get_mut(&m.path) {
                        *slot = taken;
                    }
                    matched
                }
                found => {
                    // The captures may write into the source field, so match a copy.
                    let inputs: Vec<Text> = match found {
                        Some(Value::String(s)) => vec![s.clone()],
                        Some(Value::Array(arr)) => arr.iter().map(value_text).collect(),
                        Some(v) => vec![value_text(v)],
                        // Logstash matches a missing field as "".
                        None => vec![Text::default()],
                    };
                    let mut any = false;
                    for input in &inputs {
                        if self.match_input(e, &m.patterns, input, &mut out) {
                            any = true;
                        }
                    }
                    any
                }
            };
            if field_matched {
                out.matched = true;
                if self.break_on_match {
                    break;
                }
            }
        }
        out
    }
}

/// A value as the text Logstash would match (`to_s`).
fn value_text(v: &Value) -> Text {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => Text::default(),
        other => Text::from(other.to_json()),
    }
}

impl Filter for Grok {
    fn process(&self, events: &mut Vec<Event>) {
        self.metrics.events_in.add(events.len() as u64);
        let mut matched = 0u64;
        for e in events.iter_mut() {
            let out = self.one(e);
            if out.matched {
                matched += 1;
            } else {
                self.metrics.events_failed.inc();
                self.failure.apply(e);
            }
            if out.timed_out {
                self.timeouts.inc();
                if !out.matched {
                    e.add_tag(TIMEOUT_TAG);
                }
            }
        }
        self.matched.add(matched);
        self.metrics.events_out.add(events.len() as u64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::{build_filter, run_filter};
    use sluice_core::codec::to_json_string;
    use sluice_core::event::MESSAGE as MESSAGE_KEY;

    const COMBINED: &str = r#"83.149.9.216 - frank [17/May/2015:10:05:03 +0000] "GET /presentations/logstash-monitorama-2013/images/kibana-search.png HTTP/1.1" 200 203023 "http://semicomplete.com/presentations/logstash-monitorama-2013/" "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_9_1)""#;

    fn s(e: &Event, p: &str) -> String {
        e.get(&FieldPath::parse(p).unwrap()).map(|v| v.to_json()).unwrap_or_else(|| "<none>".into())
    }

    #[test]
    fn combined_apache_legacy() {
        let out = run_filter(
            &SPEC,
            "match = { message = \"%{COMBINEDAPACHELOG}\" }\necs_compatibility = \"disabled\"",
            vec![Event::from_message(COMBINED)],
        );
        let e = &out[0];
        assert_eq!(s(e, "clientip"), r#""83.149.9.216""#);
        assert_eq!(s(e, "ident"), r#""-""#);
        assert_eq!(s(e, "auth"), r#""frank""#);
        assert_eq!(s(e, "timestamp"), r#""17/May/2015:10:05:03 +0000""#);
        assert_eq!(s(e, "verb"), r#""GET""#);
        assert_eq!(s(e, "request"), r#""/presentations/logstash-monitorama-2013/images/kibana-search.png""#);
        assert_eq!(s(e, "httpversion"), r#""1.1""#);
        assert_eq!(s(e, "response"), r#""200""#);
        assert_eq!(s(e, "bytes"), r#""203023""#);
        assert_eq!(s(e, "referrer"), r#""\"http://semicomplete.com/presentations/logstash-monitorama-2013/\"""#);
        assert_eq!(s(e, "agent"), r#""\"Mozilla/5.0 (Macintosh; Intel Mac OS X 10_9_1)\"""#);
        assert_eq!(e.message(), Some(COMBINED));
        assert!(!e.has_tag("_grokparsefailure"));
        // The matched field keeps its value and its place (first key).
        assert_eq!(e.fields().iter().next().map(|(k, _)| k), Some("message"));
    }

    #[test]
    fn long_captures_of_a_shared_line_share_it() {
        let mut fields = sluice_core::Object::new();
        fields.insert(MESSAGE_KEY, Value::String(Text::shared(Arc::from(COMBINED))));
        let out = run_filter(
            &SPEC,
            "match = { message = \"%{COMBINEDAPACHELOG}\" }\necs_compatibility = \"disabled\"",
            vec![Event::from_fields(fields)],
        );
        let text = |k: &str| match out[0].fields().get(k) {
            Some(Value::String(t)) => (t.as_str().to_owned(), t.is_shared()),
            other => panic!("{k} is {other:?}"),
        };
        // Longer than 24 bytes: a slice of the line; shorter: an inline copy.
        assert_eq!(text("message"), (COMBINED.to_owned(), true));
        assert_eq!(text("timestamp"), ("17/May/2015:10:05:03 +0000".to_owned(), true));
        assert_eq!(
            text("request"),
            ("/presentations/logstash-monitorama-2013/images/kibana-search.png".to_owned(), true)
        );
        assert_eq!(text("agent"), ("\"Mozilla/5.0 (Macintosh; Intel Mac OS X 10_9_1)\"".to_owned(), true));
        assert_eq!(text("clientip"), ("83.149.9.216".to_owned(), false));
        assert_eq!(text("verb"), ("GET".to_owned(), false));
        assert_eq!(out[0].fields().len(), 12);
        // Output is the same as for an owned line.
        let owned = run_filter(
            &SPEC,
            "match = { message = \"%{COMBINEDAPACHELOG}\" }\necs_compatibility = \"disabled\"",
            vec![Event::from_message(COMBINED)],
        );
        assert_eq!(owned[0].fields(), out[0].fields());
    }

    #[test]
    fn fields_are_tried_in_config_order() {
        // With break_on_match (the default) the first field in the config
        // that matches wins, as in Logstash — not the alphabetically first.
        let mut e = Event::from_message("x");
        e.insert(&FieldPath::parse("zfield").unwrap(), Value::from("word"));
        e.insert(&FieldPath::parse("afield").unwrap(), Value::from("42"));
        let out = run_filter(&SPEC, "match = { zfield = \"%{WORD:w}\", afield = \"%{NUMBER:n}\" }", vec![e]);
        assert_eq!(s(&out[0], "w"), r#""word""#);
        assert_eq!(s(&out[0], "n"), "<none>");
    }

    #[test]
    fn captures_into_the_source_field_follow_logstash() {
        // The line is matched from a copy: the capture promotes `message`
        // to [original, captured], as logstash-filter-grok does.
        let out = run_filter(
            &SPEC,
            "match = { message = \"%{WORD} %{GREEDYDATA:message}\" }",
            vec![Event::from_message("hello big world")],
        );
        assert_eq!(s(&out[0], "message"), r#"["hello big world","big world"]"#);
        // A capture under the source field's key turns a string into nothing
        // else: Logstash drops a capture into a non-object.
        let out = run_filter(
            &SPEC,
            "match = { message = \"%{WORD:[message][w]} %{GREEDYDATA}\" }",
            vec![Event::from_message("hello big world")],
        );
        assert_eq!(s(&out[0], "message"), r#""hello big world""#);
        // A target under the source key, too.
        let out = run_filter(
            &SPEC,
            "match = { message = \"%{WORD:w} %{GREEDYDATA}\" }\ntarget = \"[message]\"",
            vec![Event::from_message("hello big world")],
        );
        assert_eq!(s(&out[0], "message"), r#""hello big world""#);
        assert_eq!(s(&out[0], "w"), "<none>");
    }

    #[test]
    fn combined_apache_ecs_v1_nested() {
        // Default ecs_compatibility is v1.
        let f = build_filter(&SPEC, "match = { message = \"%{HTTPD_COMBINEDLOG}\" }").unwrap();
        let mut out = vec![Event::from_message(COMBINED)];
        f.process(&mut out);
        let e = &out[0];
        assert_eq!(s(e, "source.address"), r#""83.149.9.216""#);
        assert_eq!(s(e, "user.name"), r#""frank""#);
        assert_eq!(s(e, "apache.access.user.identity"), "<none>");
        assert_eq!(s(e, "timestamp"), r#""17/May/2015:10:05:03 +0000""#);
        assert_eq!(s(e, "http.request.method"), r#""GET""#);
        assert_eq!(s(e, "url.original"), r#""/presentations/logstash-monitorama-2013/images/kibana-search.png""#);
        assert_eq!(s(e, "http.version"), r#""1.1""#);
        assert_eq!(s(e, "http.response.status_code"), "200");
        assert_eq!(s(e, "http.response.body.bytes"), "203023");
        assert_eq!(
            s(e, "http.request.referrer"),
            r#""http://semicomplete.com/presentations/logstash-monitorama-2013/""#
        );
        assert_eq!(s(e, "user_agent.original"), r#""Mozilla/5.0 (Macintosh; Intel Mac OS X 10_9_1)""#);
        assert_eq!(s(e, "tags"), "<none>");
    }

    #[test]
    fn pattern_list_with_and_without_break_on_match() {
        let cfg = "match = { message = [\"%{INT:num}\", \"%{WORD:word}\"] }";
        let out = run_filter(&SPEC, cfg, vec![Event::from_message("abc 42"), Event::from_message("just words")]);
        assert_eq!((s(&out[0], "num"), s(&out[0], "word")), (r#""42""#.into(), "<none>".into()));
        assert_eq!((s(&out[1], "num"), s(&out[1], "word")), ("<none>".into(), r#""just""#.into()));
        let out = run_filter(&SPEC, &format!("{cfg}\nbreak_on_match = false"), vec![Event::from_message("abc 42")]);
        assert_eq!((s(&out[0], "num"), s(&out[0], "word")), (r#""42""#.into(), r#""abc""#.into()));
    }

    #[test]
    fn overwrite_and_target() {
        let out = run_filter(
            &SPEC,
            "match = { message = \"%{WORD:verb} %{GREEDYDATA:message}\" }\noverwrite = [\"message\"]",
            vec![Event::from_message("GET rest of line")],
        );
        assert_eq!(s(&out[0], "message"), r#""rest of line""#);
        let out = run_filter(
            &SPEC,
            "match = { message = \"%{WORD:verb} %{GREEDYDATA:message}\" }",
            vec![Event::from_message("GET rest")],
        );
        assert_eq!(s(&out[0], "message"), r#"["GET rest","rest"]"#);
        let out = run_filter(
            &SPEC,
            "match = { message = \"%{WORD:verb}\" }\ntarget = \"[parsed][req]\"",
            vec![Event::from_message("POST")],
        );
        assert_eq!(s(&out[0], "parsed.req.verb"), r#""POST""#);
        assert_eq!(s(&out[0], "verb"), "<none>");
    }

    #[test]
    fn failure_is_tagged_counted_or_dead_lettered() {
        let f = build_filter(&SPEC, "match = { message = \"^%{INT:n}$\" }").unwrap();
        let mut evs =
            vec![Event::from_message("12"), Event::from_message("nope"), Event::from_fields(Default::default())];
        f.process(&mut evs);
        assert_eq!(evs.len(), 3);
        assert!(!evs[0].has_tag("_grokparsefailure"));
        assert!(evs[1].has_tag("_grokparsefailure") && !evs[1].dead_letter);
        assert!(evs[2].has_tag("_grokparsefailure"), "missing field matches as empty text");
        assert_eq!(evs[1].message(), Some("nope"));
        let out = run_filter(
            &SPEC,
            "match = { message = \"^%{INT:n}$\" }\non_failure = \"dead_letter\"\ntag_on_failure = [\"bad\", \"grok\"]",
            vec![Event::from_message("x")],
        );
        assert!(out[0].dead_letter && out[0].has_tag("bad") && out[0].has_tag("grok"));
        assert!(!out[0].has_tag("_grokparsefailure"));
    }

    #[test]
    fn match_limit_is_a_timeout_failure() {
        let line = format!("{}!", "a".repeat(40));
        let out = run_filter(&SPEC, "match = { message = \"^(a+)+$\" }", vec![Event::from_message(&line)]);
        assert!(out[0].has_tag("_groktimeout"), "{}", to_json_string(&out[0]));
        assert!(out[0].has_tag("_grokparsefailure"));
        assert_eq!(out[0].message(), Some(line.as_str()));
    }

    #[test]
    fn counters() {
        let mut cx = BuildContext::for_test("filter", "g");
        cx.path = "f".into();
        let v: toml::Value = toml::from_str("match = { message = \"^%{INT:n}$\" }").unwrap();
        let f = (SPEC.build)(v, &cx).unwrap();
        let mut evs = vec![Event::from_message("1"), Event::from_message("x"), Event::from_message("2")];
        f.process(&mut evs);
        assert_eq!(cx.metrics.events_in.get(), 3);
        assert_eq!(cx.metrics.events_out.get(), 3);
        assert_eq!(cx.metrics.events_failed.get(), 1);
        assert_eq!(cx.metrics.counter("matched").get(), 2);
    }

    #[test]
    fn custom_pattern_definitions_and_patterns_dir() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("mine"), "# comment\nQUEUE_ID [0-9A-F]{10,11}\n").unwrap();
        let cfg = format!(
            "match = {{ message = \"%{{QUEUE_ID:queue_id}}: %{{MYWORD:w}}\" }}\npattern_definitions = {{ MYWORD = \"[a-z]+\" }}\npatterns_dir = [{:?}]",
            dir.path().display().to_string()
        );
        let out = run_filter(&SPEC, &cfg, vec![Event::from_message("BEF25A72965: hello WORLD")]);
        assert_eq!(s(&out[0], "queue_id"), r#""BEF25A72965""#);
        assert_eq!(s(&out[0], "w"), r#""hello""#);
        let j = to_json_string(&out[0]);
        assert!(!j.contains("_grokparsefailure"), "{j}");
    }

    #[test]
    fn config_errors_name_the_key() {
        let e = build_filter(&SPEC, "match = { message = \"%{NOPE_NOT_DEFINED:x}\" }").err().unwrap();
        assert_eq!(e.path, "test.grok.match.message");
        assert_eq!(
            e.to_string(),
            "test.grok.match.message: grok pattern %{NOPE_NOT_DEFINED} is not defined (referenced from \"%{NOPE_NOT_DEFINED:x}\")"
        );
        let e = build_filter(&SPEC, "match = { message = \"x\" }\necs_compatibility = \"v2\"").err().unwrap();
        assert_eq!(e.path, "test.grok.ecs_compatibility");
        let e = build_filter(&SPEC, "match = { message = \"x\" }\nkeep_empty = true").err().unwrap();
        assert!(e.to_string().contains("unknown field `keep_empty`"), "{e}");
        let e =
            build_filter(&SPEC, "match = { message = \"x\" }\npatterns_dir = [\"/nonexistent/dir\"]").err().unwrap();
        assert!(e.to_string().starts_with("test.grok.patterns_dir: cannot read /nonexistent/dir"), "{e}");
    }
}
