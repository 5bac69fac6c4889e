//! Merging grok captures into an event's fields, with Logstash's rules.
//!
//! This is logstash-filter-grok's `handle()`: a capture into a field that
//! does not exist (or is null) sets it; into an array appends; into a string
//! promotes it to `[existing, captured]` (so `%{GREEDYDATA:message}` on the
//! `message` field yields `[original, captured]`, and a field captured twice
//! in one pattern becomes a two-element array); into anything else (number,
//! object, bool) is dropped. Fields listed in `overwrite` are replaced
//! instead. Bracket paths (`[http][request][method]`) become nested objects.

use sluice_core::{Object, Text, Value};

use super::pattern::GrokMatch;

/// Options for [`insert_captures_with`] (Logstash grok's `overwrite` and
/// `target` settings).
#[derive(Debug, Clone, Default)]
pub struct InsertOptions {
    /// Dotted field names (as in [`super::GrokField::name`]) whose existing
    /// value is replaced rather than promoted to an array.
    pub overwrite: Vec<String>,
    /// Path segments of an object to write captures under (empty: the root).
    pub target: Vec<String>,
}

/// Merges every set capture of `m` into `obj` with Logstash's default
/// rules. Returns how many captures were stored.
pub fn insert_captures(obj: &mut Object, m: &GrokMatch<'_>) -> usize {
    obj.reserve(m.count());
    let mut stored = 0;
    for (field, value) in m.iter() {
        if insert_path(obj, field.path(), value.to_value(), false) {
            stored += 1;
        }
    }
    stored
}

/// [`insert_captures`] with `overwrite` / `target` options.
pub fn insert_captures_with(obj: &mut Object, m: &GrokMatch<'_>, options: &InsertOptions) -> usize {
    insert_captures_from(obj, m, options, None)
}

/// [`insert_captures_with`] where the matched input is `line`: string
/// captures become slices of it ([`Text::slice_of`]: no copy when `line` is
/// a shared text) instead of copies.
pub fn insert_captures_from(
    obj: &mut Object,
    m: &GrokMatch<'_>,
    options: &InsertOptions,
    line: Option<&Text>,
) -> usize {
    let Some(root) = descend(obj, options.target.iter().map(String::as_str)) else {
        return 0;
    };
    // Room for the captures that matched, not for every field the pattern
    // names: an alternative's unset fields would make a source's presized
    // object regrow (a copy per event).
    root.reserve(m.count());
    if options.overwrite.is_empty() {
        if let Some(stored) = append_fresh(root, m, line) {
            return stored;
        }
    }
    let mut stored = 0;
    for (field, value) in m.iter() {
        let overwrite = options.overwrite.iter().any(|o| o == field.name());
        if insert_path(root, field.path(), value.to_value_in(line), overwrite) {
            stored += 1;
        }
    }
    stored
}

/// The common case without per-key lookups: the pattern captures distinct
/// top-level fields and the object has none of them yet (a line just read),
/// so every capture is a new key. `None` when that does not hold.
fn append_fresh(obj: &mut Object, m: &GrokMatch<'_>, line: Option<&Text>) -> Option<usize> {
    let keys = m.pattern().flat_keys()?;
    if obj.iter().any(|(k, _)| keys.iter().any(|c| c.as_str() == k)) {
        return None;
    }
    let mut stored = 0;
    for (key, field) in keys.iter().zip(m.pattern().fields()) {
        if let Some(value) = m.value(field) {
            obj.push_unique(key.clone(), value.to_value_in(line));
            stored += 1;
        }
    }
    Some(stored)
}

/// Walks (creating as needed) nested objects along `path`. `None` if a
/// non-object value is in the way.
fn descend<'o, 'p>(obj: &'o mut Object, path: impl IntoIterator<Item = &'p str>) -> Option<&'o mut Object> {
    let mut cur = obj;
    for seg in path {
        // Not `entry()`: it would tie the key's lifetime to the result.
        if cur.get(&seg).is_none() {
            cur.insert(seg, Object::new());
        }
        let v = cur.get_mut(&seg)?;
        if v.is_null() {
            *v = Value::Object(Object::new());
        }
        cur = v.as_object_mut()?;
    }
    Some(cur)
}

/// Stores `value` at `path` under `obj` following Logstash's rules; returns
/// whether it was stored.
pub fn insert_path(obj: &mut Object, path: &[Box<str>], value: Value, overwrite: bool) -> bool {
    let Some((last, parents)) = path.split_last() else {
        return false;
    };
    let Some(parent) = descend(obj, parents.iter().map(|s| &**s)) else {
        return false;
    };
    let existing = match parent.get_mut(&**last) {
        Some(v) => v,
        None => {
            parent.push_unique(sluice_core::Str::new(&**last), value);
            return true;
        }
    };
    if overwrite || existing.is_null() {
        *existing = value;
    } else if let Some(arr) = existing.as_array_mut() {
        arr.push(value);
    } else if existing.is_str() {
        let old = std::mem::take(existing);
        *existing = Value::Array(vec![old, value]);
    } else {
        return false;
    }
    true
}

/// Looks up a dotted path in an object, trying nested objects first and
/// then keys that themselves contain dots. Handy for tests and filters.
pub fn get_path<'o>(obj: &'o Object, dotted: &str) -> Option<&'o Value> {
    if let Some(v) = obj.get(&dotted) {
        return Some(v);
    }
    // `a.b.c` may be `a` -> `b.c` or `a.b` -> `c`: try every split point.
    dotted.match_indices('.').find_map(|(i, _)| {
        let inner = obj.get(&&dotted[..i])?.as_object()?;
        get_path(inner, &dotted[i + 1..])
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(p: &[&str]) -> Vec<Box<str>> {
        p.iter().map(|s| (*s).into()).collect()
    }

    #[test]
    fn nested_and_arrays() {
        let mut obj = Object::new();
        obj.insert(&"message", "orig");
        assert!(insert_path(&mut obj, &path(&["message"]), "cap".into(), false));
        assert!(insert_path(&mut obj, &path(&["message"]), "third".into(), false));
        assert!(insert_path(&mut obj, &path(&["http", "request", "method"]), "GET".into(), false));
        assert!(insert_path(&mut obj, &path(&["n"]), 1i64.into(), false));
        assert!(!insert_path(&mut obj, &path(&["n"]), 2i64.into(), false));
        assert!(!insert_path(&mut obj, &path(&["n", "x"]), 2i64.into(), false));
        assert!(insert_path(&mut obj, &path(&["n"]), 3i64.into(), true));
        let got: serde_json::Value = serde_json::from_str(&obj.clone().into_value().to_json()).unwrap();
        let want = serde_json::json!({"message":["orig","cap","third"],"http":{"request":{"method":"GET"}},"n":3});
        assert_eq!(got, want);
        assert_eq!(get_path(&obj, "http.request.method").unwrap().as_str(), Some("GET"));
    }

    #[test]
    fn count_is_the_captures_that_matched_not_the_fields_named() {
        let lib = crate::grok::GrokLibrary::legacy();
        // Two alternatives: either `verb` and `request`, or `raw`.
        let p = lib.compile("(?:%{WORD:verb} %{NOTSPACE:request}|%{DATA:raw}) %{INT:code:int}").unwrap();
        assert_eq!(p.fields().len(), 4);
        let m = p.matches("GET /x 200").unwrap().unwrap();
        assert_eq!((m.count(), m.iter().count()), (3, 3));
        let m = p.matches("- 404").unwrap().unwrap();
        assert_eq!((m.count(), m.iter().count()), (2, 2));
        let mut obj = Object::with_capacity(3);
        obj.insert(&"message", "- 404");
        assert_eq!(insert_captures(&mut obj, &m), 2);
        let got: serde_json::Value = serde_json::from_str(&obj.into_value().to_json()).unwrap();
        assert_eq!(got, serde_json::json!({"message": "- 404", "raw": "-", "code": 404}));
    }
}
