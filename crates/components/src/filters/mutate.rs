//! `mutate`: rename, copy, remove, add, replace, convert, lowercase,
//! uppercase, strip, split, join, merge, gsub and tags — applied in
//! Logstash's order (rename, replace, convert, gsub, uppercase, lowercase,
//! strip, remove_field, split, join, merge, copy, add_field, add_tag,
//! remove_tag). A conversion that fails leaves the value and tags the event
//! `_mutate_error`, counted in `events_failed`.

use std::sync::Arc;

use indexmap::IndexMap;
use regex::Regex;
use serde::Deserialize;
use sluice_core::component::{BuildContext, Filter, FilterSpec};
use sluice_core::config::{parse_table, ConfigError};
use sluice_core::metrics::ComponentMetrics;
use sluice_core::path::FieldPath;
use sluice_core::{Event, Value};

use crate::template::Template;

/// Registry entry.
pub const SPEC: FilterSpec = FilterSpec {
    name: "mutate",
    summary: "rename, copy, remove, add, convert, case, split, merge, gsub fields",
    example: "rename = { old = \"new\" }\nconvert = { n = \"integer\" }\ngsub = [\"message\", \"\\\\s+\", \" \"]\n",
    build,
};

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Conversion {
    Integer,
    Float,
    String,
    Boolean,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    #[serde(default)]
    rename: IndexMap<String, String>,
    #[serde(default)]
    replace: IndexMap<String, String>,
    #[serde(default)]
    convert: IndexMap<String, Conversion>,
    /// Flat list of triples: field, regex, replacement.
    #[serde(default)]
    gsub: Vec<String>,
    #[serde(default)]
    uppercase: Vec<String>,
    #[serde(default)]
    lowercase: Vec<String>,
    #[serde(default)]
    strip: Vec<String>,
    #[serde(default)]
    remove_field: Vec<String>,
    #[serde(default)]
    split: IndexMap<String, String>,
    #[serde(default)]
    join: IndexMap<String, String>,
    /// `dest = "src"`: appends src's value(s) to dest (making it an array).
    #[serde(default)]
    merge: IndexMap<String, String>,
    #[serde(default)]
    copy: IndexMap<String, String>,
    #[serde(default)]
    add_field: IndexMap<String, String>,
    #[serde(default)]
    add_tag: Vec<String>,
    #[serde(default)]
    remove_tag: Vec<String>,
}

struct Mutate {
    rename: Vec<(FieldPath, FieldPath)>,
    replace: Vec<(FieldPath, Template)>,
    convert: Vec<(FieldPath, Conversion)>,
    gsub: Vec<(FieldPath, Regex, String)>,
    uppercase: Vec<FieldPath>,
    lowercase: Vec<FieldPath>,
    strip: Vec<FieldPath>,
    remove_field: Vec<FieldPath>,
    split: Vec<(FieldPath, String)>,
    join: Vec<(FieldPath, String)>,
    merge: Vec<(FieldPath, FieldPath)>,
    copy: Vec<(FieldPath, FieldPath)>,
    add_field: Vec<(FieldPath, Template)>,
    add_tag: Vec<Template>,
    remove_tag: Vec<String>,
    metrics: Arc<ComponentMetrics>,
}

fn build(value: toml::Value, cx: &BuildContext) -> Result<Box<dyn Filter>, ConfigError> {
    let c: Config = parse_table(value, &cx.path)?;
    let path = |key: &str, s: &str| FieldPath::parse(s).map_err(|e| cx.error(key, e.to_string()));
    let pairs = |key: &str, m: &IndexMap<String, String>| -> Result<Vec<(FieldPath, FieldPath)>, ConfigError> {
        m.iter().map(|(a, b)| Ok((path(key, a)?, path(key, b)?))).collect()
    };
    let templates = |key: &str, m: &IndexMap<String, String>| -> Result<Vec<(FieldPath, Template)>, ConfigError> {
        m.iter()
            .map(|(a, b)| Ok((path(key, a)?, Template::parse(b).map_err(|e| cx.error(key, e.to_string()))?)))
            .collect()
    };
    let list =
        |key: &str, v: &[String]| -> Result<Vec<FieldPath>, ConfigError> { v.iter().map(|s| path(key, s)).collect() };
    if !c.gsub.len().is_multiple_of(3) {
        return Err(
            cx.error("gsub", format!("expected triples of field, regex, replacement; got {} strings", c.gsub.len()))
        );
    }
    let mut gsub = Vec::new();
    let group_ref = Regex::new(r"\\(\d)").ok();
    for t in c.gsub.chunks(3) {
        let re = Regex::new(&t[1]).map_err(|e| cx.error("gsub", format!("invalid regex {:?}: {e}", t[1])))?;
        // Logstash/Ruby use \1 for groups; the regex crate uses ${1}.
        let repl = group_ref.as_ref().map_or_else(|| t[2].clone(), |r| r.replace_all(&t[2], "$${$1}").into_owned());
        gsub.push((path("gsub", &t[0])?, re, repl));
    }
    let mut add_tag = Vec::new();
    for t in &c.add_tag {
        add_tag.push(Template::parse(t).map_err(|e| cx.error("add_tag", e.to_string()))?);
    }
    Ok(Box::new(Mutate {
        rename: pairs("rename", &c.rename)?,
        replace: templates("replace", &c.replace)?,
        convert: c.convert.iter().map(|(a, k)| Ok((path("convert", a)?, *k))).collect::<Result<_, ConfigError>>()?,
        gsub,
        uppercase: list("uppercase", &c.uppercase)?,
        lowercase: list("lowercase", &c.lowercase)?,
        strip: list("strip", &c.strip)?,
        remove_field: list("remove_field", &c.remove_field)?,
        split: c.split.iter().map(|(a, s)| Ok((path("split", a)?, s.clone()))).collect::<Result<_, ConfigError>>()?,
        join: c.join.iter().map(|(a, s)| Ok((path("join", a)?, s.clone()))).collect::<Result<_, ConfigError>>()?,
        merge: pairs("merge", &c.merge)?,
        copy: pairs("copy", &c.copy)?,
        add_field: templates("add_field", &c.add_field)?,
        add_tag,
        remove_tag: c.remove_tag,
        metrics: Arc::clone(&cx.metrics),
    }))
}

fn convert(v: &Value, k: Conversion) -> Option<Value> {
    if let Some(arr) = v.as_array() {
        let mut out = Vec::new();
        for x in arr.iter() {
            out.push(convert(x, k)?);
        }
        return Some(Value::Array(out));
    }
    match k {
        Conversion::String => Some(match v.as_str() {
            Some(_) => v.clone(),
            None => Value::from(v.to_json()),
        }),
        Conversion::Integer => {
            if let Some(i) = v.as_i64() {
                Some(Value::from(i))
            } else if let Some(f) = v.as_f64() {
                Some(Value::from(f.trunc() as i64))
            } else if let Some(b) = v.as_bool() {
                Some(Value::from(i64::from(b)))
            } else {
                let s = v.as_str()?.trim();
                s.parse::<i64>()
                    .ok()
                    .or_else(|| s.parse::<f64>().ok().filter(|f| f.is_finite()).map(|f| f.trunc() as i64))
                    .map(Value::from)
            }
        }
        Conversion::Float => {
            if let Some(f) = v.as_f64() {
                Value::new_f64(f)
            } else {
                v.as_str()?.trim().parse::<f64>().ok().and_then(Value::new_f64)
            }
        }
        Conversion::Boolean => {
            if let Some(b) = v.as_bool() {
                return Some(Value::from(b));
            }
            let s = match v.as_str() {
                Some(s) => s.to_ascii_lowercase(),
                None => v.as_i64()?.to_string(),
            };
            match s.as_str() {
                "true" | "t" | "yes" | "y" | "1" => Some(Value::from(true)),
                "false" | "f" | "no" | "n" | "0" => Some(Value::from(false)),
                _ => None,
            }
        }
    }
}

fn map_strings(v: &mut Value, f: &dyn Fn(&str) -> String) {
    if let Some(s) = v.as_str() {
        *v = Value::from(f(s).as_str());
    } else if let Some(arr) = v.as_array_mut() {
        for x in arr.iter_mut() {
            if let Some(s) = x.as_str() {
                *x = Value::from(f(s).as_str());
            }
        }
    }
}

fn to_list(v: Value) -> Vec<Value> {
    match v {
        Value::Array(arr) => arr,
        other => vec![other],
    }
}

impl Mutate {
    fn one(&self, e: &mut Event) -> bool {
        let mut ok = true;
        for (from, to) in &self.rename {
            if let Some(v) = e.remove(from) {
                e.insert(to, v);
            }
        }
        for (f, t) in &self.replace {
            if e.get(f).is_some() {
                let s = t.render(e);
                e.insert(f, Value::from(s.as_str()));
            }
        }
        for (f, k) in &self.convert {
            if let Some(v) = e.get_mut(f) {
                match convert(v, *k) {
                    Some(n) => *v = n,
                    None => ok = false,
                }
            }
        }
        for (f, re, repl) in &self.gsub {
            if let Some(v) = e.get_mut(f) {
                map_strings(v, &|s| re.replace_all(s, repl.as_str()).into_owned());
            }
        }
        for f in &self.uppercase {
            if let Some(v) = e.get_mut(f) {
                map_strings(v, &|s| s.to_uppercase());
            }
        }
        for f in &self.lowercase {
            if let Some(v) = e.get_mut(f) {
                map_strings(v, &|s| s.to_lowercase());
            }
        }
        for f in &self.strip {
            if let Some(v) = e.get_mut(f) {
                map_strings(v, &|s| s.trim().to_string());
            }
        }
        for f in &self.remove_field {
            e.remove(f);
        }
        for (f, sep) in &self.split {
            if let Some(v) = e.get_mut(f) {
                if let Some(s) = v.as_str() {
                    let mut arr = Vec::new();
                    for part in s.split(sep.as_str()) {
                        arr.push(Value::from(part));
                    }
                    *v = Value::Array(arr);
                }
            }
        }
        for (f, sep) in &self.join {
            if let Some(v) = e.get_mut(f) {
                if let Some(arr) = v.as_array() {
                    let parts: Vec<String> =
                        arr.iter().map(|x| x.as_str().map(str::to_string).unwrap_or_else(|| x.to_json())).collect();
                    *v = Value::from(parts.join(sep).as_str());
                }
            }
        }
        for (dest, src) in &self.merge {
            if let Some(sv) = e.get(src).cloned() {
                let mut list = e.remove(dest).map(to_list).unwrap_or_default();
                list.extend(to_list(sv));
                let mut arr = Vec::new();
                for x in list {
                    arr.push(x);
                }
                e.insert(dest, Value::Array(arr));
            }
        }
        for (from, to) in &self.copy {
            if let Some(v) = e.get(from).cloned() {
                e.insert(to, v);
            }
        }
        for (f, t) in &self.add_field {
            let s = t.render(e);
            match e.get_mut(f) {
                // Logstash: adding to an existing field makes it an array.
                Some(existing) => {
                    let mut list = to_list(std::mem::take(existing));
                    list.push(Value::from(s.as_str()));
                    let mut arr = Vec::new();
                    for x in list {
                        arr.push(x);
                    }
                    *existing = Value::Array(arr);
                }
                None => e.insert(f, Value::from(s.as_str())),
            }
        }
        for t in &self.add_tag {
            let s = t.render(e);
            e.add_tag(&s);
        }
        if !self.remove_tag.is_empty() {
            if let Some(arr) = e.fields_mut().get_mut(&"tags").and_then(|v| v.as_array_mut()) {
                arr.retain(|t| !t.as_str().is_some_and(|s| self.remove_tag.iter().any(|r| r == s)));
            }
        }
        ok
    }
}

impl Filter for Mutate {
    fn process(&self, events: &mut Vec<Event>) {
        self.metrics.events_in.add(events.len() as u64);
        for e in events.iter_mut() {
            if !self.one(e) {
                self.metrics.events_failed.inc();
                e.add_tag("_mutate_error");
            }
        }
        self.metrics.events_out.add(events.len() as u64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::run_filter;
    use sluice_core::codec::event_from_json;

    fn ev(json: &str) -> Event {
        event_from_json(json.as_bytes()).unwrap().0
    }
    fn get(e: &Event, p: &str) -> String {
        e.get(&FieldPath::parse(p).unwrap()).map(|v| v.to_json()).unwrap_or_else(|| "<none>".into())
    }

    #[test]
    fn each_operation() {
        let cfg = r#"
rename = { a = "[x][a]" }
copy = { b = "b2" }
convert = { n = "integer", f = "float", t = "boolean", s = "string" }
lowercase = ["up"]
uppercase = ["low"]
strip = ["pad"]
split = { csv = "," }
join = { arr = "-" }
merge = { m1 = "m2" }
remove_field = ["gone"]
gsub = ["g", "(\\d+)", "<\\1>"]
add_field = { "new" = "n=%{n}", "b" = "again" }
add_tag = ["t_%{b2}"]
"#;
        let out = run_filter(
            &SPEC,
            cfg,
            vec![ev(
                r#"{"a":1,"b":"bee","n":"42","f":"1.5","t":"yes","s":7,"up":"ABC","low":"abc","pad":"  p ","csv":"a,b,c","arr":["x",1],"m1":"one","m2":["two"],"gone":true,"g":"a1b22"}"#,
            )],
        );
        let e = &out[0];
        assert_eq!(get(e, "x.a"), "1");
        assert_eq!(get(e, "a"), "<none>");
        assert_eq!(get(e, "b2"), "\"bee\"");
        assert_eq!(get(e, "n"), "42");
        assert_eq!(get(e, "f"), "1.5");
        assert_eq!(get(e, "t"), "true");
        assert_eq!(get(e, "s"), "\"7\"");
        assert_eq!(get(e, "up"), "\"abc\"");
        assert_eq!(get(e, "low"), "\"ABC\"");
        assert_eq!(get(e, "pad"), "\"p\"");
        assert_eq!(get(e, "csv"), r#"["a","b","c"]"#);
        assert_eq!(get(e, "arr"), "\"x-1\"");
        assert_eq!(get(e, "m1"), r#"["one","two"]"#);
        assert_eq!(get(e, "gone"), "<none>");
        assert_eq!(get(e, "g"), "\"a<1>b<22>\"");
        assert_eq!(get(e, "new"), "\"n=42\"");
        assert_eq!(get(e, "b"), r#"["bee","again"]"#);
        assert!(e.has_tag("t_bee"));
        assert!(!e.has_tag("_mutate_error"));
    }

    #[test]
    fn failed_conversion_is_tagged() {
        let out = run_filter(&SPEC, "convert = { n = \"integer\" }", vec![ev(r#"{"n":"forty"}"#)]);
        assert!(out[0].has_tag("_mutate_error"));
        assert_eq!(get(&out[0], "n"), "\"forty\"");
    }

    #[test]
    fn bad_config() {
        let e = crate::testkit::build_filter(&SPEC, "gsub = [\"a\", \"(\"]").err().unwrap();
        assert!(e.to_string().starts_with("test.mutate.gsub: expected triples"), "{e}");
        let e = crate::testkit::build_filter(&SPEC, "convert = { n = \"complex\" }").err().unwrap();
        assert!(e.to_string().starts_with("test.mutate.convert.n: unknown variant"), "{e}");
    }
}
