//! `if`: conditional routing inside the filter chain, as Logstash's
//! `if … else if … else`. Events are split by the first branch whose
//! condition matches, each branch's filters run on its share, and the
//! shares are joined again (events matching no branch pass unchanged).
//!
//! ```toml
//! [[pipelines.main.filters]]
//! type = "if"
//! condition = '[type] == "apache"'
//! then = [{ type = "grok", match = { message = "%{COMBINEDAPACHELOG}" } }]
//! else_if = [{ condition = '[type] == "json"', then = [{ type = "json" }] }]
//! else = [{ type = "drop" }]
//! ```

use serde::Deserialize;
use sluice_core::component::{BuildContext, Filter, FilterSpec};
use sluice_core::condition::Condition;
use sluice_core::config::{parse_table, ConfigError};
use sluice_core::Event;

/// Registry entry.
pub const SPEC: FilterSpec = FilterSpec {
    name: "if",
    summary: "conditional routing: if / else_if / else blocks of filters",
    example: "condition = '[level] == \"debug\"'\nthen = [{ type = \"drop\" }]\n",
    build,
};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ElseIf {
    condition: Condition,
    #[serde(default)]
    then: Vec<toml::Value>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    /// The condition (Logstash syntax: `[field] == "x"`, `=~ /re/`, `in`, `and`, …).
    condition: Condition,
    /// Filters for matching events.
    #[serde(default)]
    then: Vec<toml::Value>,
    /// Further branches, tried in order.
    #[serde(default)]
    else_if: Vec<ElseIf>,
    /// Filters for events no branch matched.
    #[serde(default, rename = "else")]
    otherwise: Vec<toml::Value>,
}

struct Branch {
    condition: Option<Condition>,
    filters: Vec<Box<dyn Filter>>,
}

fn build(value: toml::Value, cx: &BuildContext) -> Result<Box<dyn Filter>, ConfigError> {
    let c: Config = parse_table(value, &cx.path)?;
    let mut errors = Vec::new();
    let mut branches = Vec::new();
    let mut chain = |list: &[toml::Value], key: &str, cond: Option<Condition>, errors: &mut Vec<ConfigError>| {
        let path = format!("{}.{key}", cx.path);
        match super::build_chain(list, cx, &path, &format!("{}.{key}.", cx.id)) {
            Ok(filters) => branches.push(Branch { condition: cond, filters }),
            Err(mut e) => errors.append(&mut e),
        }
    };
    chain(&c.then, "then", Some(c.condition), &mut errors);
    for (i, b) in c.else_if.into_iter().enumerate() {
        chain(&b.then, &format!("else_if[{i}].then"), Some(b.condition), &mut errors);
    }
    chain(&c.otherwise, "else", None, &mut errors);
    if let Some(first) = errors.first() {
        let mut e = first.clone();
        if errors.len() > 1 {
            let rest: Vec<String> = errors[1..].iter().map(ToString::to_string).collect();
            e.message = format!("{} (also: {})", e.message, rest.join("; "));
        }
        return Err(e);
    }
    Ok(Box::new(If { branches }))
}

struct If {
    branches: Vec<Branch>,
}

impl Filter for If {
    fn process(&self, events: &mut Vec<Event>) {
        let mut shares: Vec<Vec<Event>> = self.branches.iter().map(|_| Vec::new()).collect();
        let mut unmatched = Vec::new();
        for e in events.drain(..) {
            let idx = self.branches.iter().position(|b| b.condition.as_ref().is_none_or(|c| c.eval(&e)));
            match idx {
                Some(i) => shares[i].push(e),
                None => unmatched.push(e),
            }
        }
        for (b, mut share) in self.branches.iter().zip(shares) {
            if share.is_empty() {
                continue;
            }
            for f in &b.filters {
                f.process(&mut share);
            }
            events.append(&mut share);
        }
        events.append(&mut unmatched);
    }

    fn flush(&self, out: &mut Vec<Event>) {
        for b in &self.branches {
            for (i, f) in b.filters.iter().enumerate() {
                let mut emitted = Vec::new();
                f.flush(&mut emitted);
                for g in &b.filters[i + 1..] {
                    g.process(&mut emitted);
                }
                out.append(&mut emitted);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::{build_filter, run_filter};
    use sluice_core::codec::event_from_json;

    fn ev(j: &str) -> Event {
        event_from_json(j.as_bytes()).unwrap().0
    }

    #[test]
    fn routes_each_event_to_one_branch() {
        let cfg = r#"
condition = '[kind] == "a"'
then = [{ type = "mutate", add_tag = ["A"] }]
else_if = [{ condition = '[kind] == "b"', then = [{ type = "drop" }] }]
else = [{ type = "mutate", add_tag = ["OTHER"] }]
"#;
        let out = run_filter(
            &SPEC,
            cfg,
            vec![ev(r#"{"kind":"a"}"#), ev(r#"{"kind":"b"}"#), ev(r#"{"kind":"c"}"#), ev(r#"{"kind":"a"}"#)],
        );
        assert_eq!(out.len(), 3);
        assert_eq!(out.iter().filter(|e| e.has_tag("A")).count(), 2);
        assert_eq!(out.iter().filter(|e| e.has_tag("OTHER")).count(), 1);
    }

    #[test]
    fn without_else_unmatched_pass_through() {
        let out = run_filter(
            &SPEC,
            "condition = '[x]'\nthen = [{ type = \"drop\" }]",
            vec![ev(r#"{"x":1}"#), ev(r#"{"y":1}"#)],
        );
        assert_eq!(out.len(), 1);
        assert!(out[0].fields().contains_key(&"y"));
    }

    #[test]
    fn nested_errors_name_their_path() {
        let e = build_filter(&SPEC, "condition = '[x]'\nthen = [{ type = \"nope\" }]").err().unwrap();
        assert!(e.to_string().starts_with("test.if.then[0].type: unknown filter type \"nope\""), "{e}");
        let e = build_filter(&SPEC, "condition = '[x] =='").err().unwrap();
        assert!(e.to_string().starts_with("test.if.condition:"), "{e}");
    }
}
