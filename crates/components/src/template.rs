//! `%{field}` templates (Logstash's sprintf format) used by `mutate`'s
//! `add_field`/`replace`, file sink paths and the like. Parsed once; a
//! missing field renders as the literal `%{field}`, as Logstash does.

use sluice_core::path::{FieldPath, PathError};
use sluice_core::Event;

#[derive(Debug, Clone)]
enum Part {
    Lit(String),
    Field(FieldPath, String),
}

/// A parsed template.
#[derive(Debug, Clone)]
pub struct Template {
    parts: Vec<Part>,
}

impl Template {
    /// Parses `text`; `%{name}` references a field (either path syntax).
    pub fn parse(text: &str) -> Result<Self, PathError> {
        let mut parts = Vec::new();
        let mut rest = text;
        while let Some(i) = rest.find("%{") {
            let Some(end) = rest[i + 2..].find('}') else { break };
            if i > 0 {
                parts.push(Part::Lit(rest[..i].to_string()));
            }
            let name = &rest[i + 2..i + 2 + end];
            parts.push(Part::Field(FieldPath::parse(name)?, rest[i..i + 3 + end].to_string()));
            rest = &rest[i + 3 + end..];
        }
        if !rest.is_empty() {
            parts.push(Part::Lit(rest.to_string()));
        }
        Ok(Self { parts })
    }

    /// Whether the template has no field references.
    pub fn is_static(&self) -> bool {
        self.parts.iter().all(|p| matches!(p, Part::Lit(_)))
    }

    /// Renders against `event`.
    pub fn render(&self, event: &Event) -> String {
        let mut out = String::new();
        for p in &self.parts {
            match p {
                Part::Lit(s) => out.push_str(s),
                Part::Field(path, raw) => match event.get(path) {
                    Some(v) => match v.as_str() {
                        Some(s) => out.push_str(s),
                        None => out.push_str(&v.to_json()),
                    },
                    None => out.push_str(raw),
                },
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_fields_and_keeps_missing() {
        let mut e = Event::from_message("hi");
        e.fields_mut().insert("n", sluice_core::Value::from(3));
        let t = Template::parse("msg=%{message} n=%{n} x=%{[a][b]}!").unwrap();
        assert_eq!(t.render(&e), "msg=hi n=3 x=%{[a][b]}!");
        assert!(Template::parse("plain").unwrap().is_static());
    }
}
