//! The Elasticsearch bulk body format (`POST /_bulk`): newline-delimited
//! action lines `{"<action>": {metadata}}`, each `index` / `create` /
//! `update` followed by its source line. This module only splits a body into
//! actions with their metadata and source lines; what becomes of them is the
//! `http` source's business.
//!
//! Rules (as Elasticsearch applies them):
//! - lines end at `\n` (a `\r` before it is dropped); blank lines between
//!   actions are skipped; trailing blank lines are dropped, so an action on
//!   the last line has no source line whatever follows it;
//! - an action line must be a JSON object with one key whose value is an
//!   object, else the whole body is refused ([`Malformed`]);
//! - metadata read: `_index`, `_id` (a string, or a number taken as its
//!   text), `op_type` (`"index"` or `"create"`: an `index` action with
//!   `op_type: "create"` is a `create`; anything else refuses the body) and
//!   `require_alias` (a boolean); other keys are ignored;
//! - `index` / `create` / `update` without a source line refuse the body; an
//!   unknown action takes the next line as its source unless that line is
//!   itself a known action line.
//!
//! Parsing never panics (`fuzz/fuzz_targets/es_bulk.rs`).

use sluice_core::Value;

/// The known actions.
pub const ACTIONS: [&str; 4] = ["index", "create", "update", "delete"];

/// What an action asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Add or replace a document.
    Index,
    /// Add a document that must not exist yet.
    Create,
    /// Change a document.
    Update,
    /// Remove a document.
    Delete,
    /// Anything else (answered per item).
    Unknown,
}

/// One action of a bulk body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Action<'a> {
    /// The action as the response names it (`index` with `op_type: "create"`
    /// is `create`; an unknown action keeps its own name).
    pub name: String,
    /// What it asks for.
    pub kind: Kind,
    /// `_index` of the metadata.
    pub index: Option<String>,
    /// `_id` of the metadata (`Some("")` when given empty).
    pub id: Option<String>,
    /// `require_alias` of the metadata.
    pub require_alias: Option<bool>,
    /// Line number of the action line (1-based).
    pub line: usize,
    /// The source line (`index`, `create`, `update`; an unknown action's
    /// next line when it is not an action line).
    pub source: Option<&'a [u8]>,
}

/// The body breaks the bulk format: refused as a whole with this
/// Elasticsearch error type and reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Malformed {
    /// Elasticsearch error type (`x_content_parse_exception`, …).
    pub kind: &'static str,
    /// The reason.
    pub reason: String,
}

fn malformed(kind: &'static str, reason: String) -> Malformed {
    Malformed { kind, reason }
}

/// Splits `body` into its actions.
pub fn parse(body: &[u8]) -> Result<Vec<Action<'_>>, Malformed> {
    let lines = lines(body);
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        i += 1;
        if blank(line) {
            continue;
        }
        let lineno = i;
        let mut action = parse_action(line, lineno)?;
        match action.kind {
            Kind::Index | Kind::Create | Kind::Update => {
                let Some(&doc) = lines.get(i).filter(|l| action.kind != Kind::Update || !blank(l)) else {
                    return Err(malformed(
                        "illegal_argument_exception",
                        format!("Validation Failed: 1: the {} action on line [{i}] has no source line", action.name),
                    ));
                };
                i += 1;
                action.source = Some(doc);
            }
            Kind::Delete => {}
            Kind::Unknown => {
                if let Some(&next) = lines.get(i).filter(|l| !blank(l) && !is_known_action(l)) {
                    i += 1;
                    action.source = Some(next);
                }
            }
        }
        out.push(action);
    }
    if out.is_empty() {
        return Err(malformed(
            "action_request_validation_exception",
            "Validation Failed: 1: no requests added;".into(),
        ));
    }
    Ok(out)
}

/// An action line: `{"<action>": {metadata}}`.
fn parse_action(line: &[u8], lineno: usize) -> Result<Action<'static>, Malformed> {
    let v: Value = sonic_rs::from_slice(line).map_err(|e| {
        malformed("x_content_parse_exception", format!("[{lineno}] malformed action/metadata line: {e}"))
    })?;
    let one_key = || {
        malformed(
            "illegal_argument_exception",
            format!("Malformed action/metadata line [{lineno}], expected an object with one key, the action"),
        )
    };
    let obj = v.as_object().ok_or_else(one_key)?;
    if obj.len() != 1 {
        return Err(one_key());
    }
    let (name, meta) = obj.iter().next().ok_or_else(one_key)?;
    let meta = meta.as_object().ok_or_else(|| {
        malformed(
            "illegal_argument_exception",
            format!("Malformed action/metadata line [{lineno}], expected an object of metadata under {name:?}"),
        )
    })?;
    let text = |k: &str| {
        meta.get(&k).and_then(|v| match v.as_str() {
            Some(s) => Some(s.to_string()),
            None if v.is_number() => Some(v.to_string()),
            None => None,
        })
    };
    let mut kind = match name {
        "index" => Kind::Index,
        "create" => Kind::Create,
        "update" => Kind::Update,
        "delete" => Kind::Delete,
        _ => Kind::Unknown,
    };
    let mut name = name.to_string();
    if let Some(op) = meta.get(&"op_type") {
        match (kind, op.as_str()) {
            (Kind::Index | Kind::Create, Some("create")) => {
                kind = Kind::Create;
                name = "create".into();
            }
            (Kind::Index, Some("index")) => {}
            (_, other) => {
                return Err(malformed(
                    "illegal_argument_exception",
                    format!(
                        "Action/metadata line [{lineno}]: opType must be 'create' or 'index', found: [{}]",
                        other.map_or_else(|| op.to_string(), str::to_string)
                    ),
                ))
            }
        }
    }
    let require_alias = match meta.get(&"require_alias") {
        None => None,
        Some(v) => Some(v.as_bool().ok_or_else(|| {
            malformed(
                "illegal_argument_exception",
                format!("Action/metadata line [{lineno}]: require_alias must be true or false, found [{v}]"),
            )
        })?),
    };
    Ok(Action { name, kind, index: text("_index"), id: text("_id"), require_alias, line: lineno, source: None })
}

/// Whether `line` looks like an action line of a known action (used to decide
/// whether an unknown action has a source line).
fn is_known_action(line: &[u8]) -> bool {
    match sonic_rs::from_slice::<Value>(line) {
        Ok(v) => v.as_object().is_some_and(|o| {
            o.len() == 1 && o.iter().next().is_some_and(|(k, m)| ACTIONS.contains(&k) && m.is_object())
        }),
        Err(_) => false,
    }
}

/// The body's lines without line ends; trailing blank lines are dropped.
fn lines(body: &[u8]) -> Vec<&[u8]> {
    let mut lines: Vec<&[u8]> = body.split(|b| *b == b'\n').map(|l| l.strip_suffix(b"\r").unwrap_or(l)).collect();
    while lines.last().is_some_and(|l| blank(l)) {
        lines.pop();
    }
    lines
}

/// Whether a line (or a body) holds only ASCII white space.
pub fn blank(line: &[u8]) -> bool {
    line.iter().all(u8::is_ascii_whitespace)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An action as (name, kind, index, id, source line).
    type Row = (String, Kind, Option<String>, Option<String>, Option<String>);

    fn kinds(body: &str) -> Vec<Row> {
        parse(body.as_bytes())
            .unwrap()
            .into_iter()
            .map(|a| (a.name, a.kind, a.index, a.id, a.source.map(|s| String::from_utf8(s.to_vec()).unwrap())))
            .collect()
    }

    #[test]
    fn actions_with_metadata_and_source_lines() {
        let got = kinds(
            "{\"index\":{\"_index\":\"a\",\"_id\":\"1\"}}\r\n{\"m\":1}\n\n{\"delete\":{\"_id\":7}}\n\
             {\"create\":{}}\n{\"m\":2}\n{\"frob\":{}}\n{\"x\":1}\n{\"frob\":{}}\n{\"index\":{}}\n{\"m\":3}\n\n\n",
        );
        assert_eq!(
            got,
            vec![
                ("index".into(), Kind::Index, Some("a".into()), Some("1".into()), Some("{\"m\":1}".into())),
                ("delete".into(), Kind::Delete, None, Some("7".into()), None),
                ("create".into(), Kind::Create, None, None, Some("{\"m\":2}".into())),
                ("frob".into(), Kind::Unknown, None, None, Some("{\"x\":1}".into())),
                ("frob".into(), Kind::Unknown, None, None, None),
                ("index".into(), Kind::Index, None, None, Some("{\"m\":3}".into())),
            ]
        );
    }

    #[test]
    fn op_type_and_require_alias() {
        let a = parse(b"{\"index\":{\"op_type\":\"create\",\"require_alias\":true,\"_id\":\"\"}}\n{}\n").unwrap();
        assert_eq!((a[0].name.as_str(), a[0].kind, a[0].require_alias), ("create", Kind::Create, Some(true)));
        assert_eq!(a[0].id.as_deref(), Some(""));
        assert_eq!(a[0].line, 1);
        let a = parse(b"{\"index\":{\"op_type\":\"index\"}}\n{}\n").unwrap();
        assert_eq!(a[0].kind, Kind::Index);
        let e = parse(b"{\"index\":{\"op_type\":\"upsert\"}}\n{}\n").unwrap_err();
        assert_eq!(e.kind, "illegal_argument_exception");
        assert_eq!(e.reason, "Action/metadata line [1]: opType must be 'create' or 'index', found: [upsert]");
        let e = parse(b"{\"delete\":{\"op_type\":\"create\"}}\n").unwrap_err();
        assert!(e.reason.contains("opType"), "{e:?}");
        let e = parse(b"{\"index\":{\"require_alias\":\"yes\"}}\n{}\n").unwrap_err();
        assert!(e.reason.contains("require_alias must be true or false"), "{e:?}");
    }

    #[test]
    fn malformed_bodies() {
        let cases: [(&[u8], &str); 6] = [
            (b"", "action_request_validation_exception"),
            (b"\n\n", "action_request_validation_exception"),
            (b"{\"index\":{\"_index\":\"a\"}}\n{\"ok\":1}\nnot an action\n", "x_content_parse_exception"),
            (
                b"{\"index\":{\"_index\":\"a\"}}\n{\"ok\":1}\n{\"index\":{\"_index\":\"a\"}}\n",
                "illegal_argument_exception",
            ),
            (b"{\"index\":{},\"create\":{}}\n{\"ok\":1}\n", "illegal_argument_exception"),
            (b"{\"update\":{}}\n\n", "illegal_argument_exception"),
        ];
        for (body, kind) in cases {
            assert_eq!(parse(body).unwrap_err().kind, kind, "{}", String::from_utf8_lossy(body));
        }
    }
}
