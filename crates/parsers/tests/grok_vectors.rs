//! Runs the grok test vectors in `testdata/vectors/` (taken from logstash-patterns-core's
//! RSpec suite) through `sluice_parsers::grok`, the way the Logstash grok
//! filter would: the event starts as `{"message": input}`, the pattern is
//! matched against `message`, and captures are merged with
//! `insert_captures`. Every vector must pass unless it is listed in
//! `KNOWN_DIFFERENCES` with a reason.

use std::collections::HashMap;

use serde_json::Value as Json;
use sluice_parsers::grok::{get_path, insert_captures, GrokLibrary, GrokPattern};

const VECTORS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/vectors/grok-vectors.jsonl");
const MATCH_VECTORS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/vectors/grok-match-vectors.jsonl");

/// Lines in each file (testdata/vectors/README.md): a truncated or emptied
/// file must fail the test, not pass it with nothing run.
const VECTOR_COUNT: usize = 227;
const MATCH_VECTOR_COUNT: usize = 99;

/// Vectors we knowingly disagree with: (file, 1-based line, reason).
/// Empty: every vector passes.
const KNOWN_DIFFERENCES: &[(&str, usize, &str)] = &[];

fn read(path: &str) -> Vec<(usize, Json)> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read grok test vectors at {path}: {e}"));
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| (i + 1, serde_json::from_str(l).expect("vector line is JSON")))
        .collect()
}

struct Libraries {
    legacy: GrokLibrary,
    ecs: GrokLibrary,
    cache: HashMap<(String, bool), GrokPattern>,
}

impl Libraries {
    fn pattern(&mut self, pattern: &str, ecs: bool) -> Result<&GrokPattern, String> {
        let key = (pattern.to_owned(), ecs);
        if !self.cache.contains_key(&key) {
            let lib = if ecs { &self.ecs } else { &self.legacy };
            let p = lib.compile(pattern).map_err(|e| e.to_string())?;
            self.cache.insert(key.clone(), p);
        }
        Ok(&self.cache[&key])
    }
}

/// Compares an expected value with ours; numbers must agree in kind
/// (integer vs float) and value.
fn same(expected: &Json, actual: &Json) -> bool {
    match (expected, actual) {
        (Json::Number(e), Json::Number(a)) => {
            if e.is_f64() != a.is_f64() {
                return false;
            }
            match (e.as_i64(), a.as_i64()) {
                (Some(x), Some(y)) => x == y,
                _ => e.as_f64() == a.as_f64(),
            }
        }
        (Json::Array(e), Json::Array(a)) => e.len() == a.len() && e.iter().zip(a).all(|(x, y)| same(x, y)),
        _ => expected == actual,
    }
}

fn run_expect(libs: &mut Libraries, v: &Json) -> Result<(), String> {
    let pattern = v["pattern"].as_str().ok_or("no pattern")?;
    let ecs = v["ecs"].as_bool().ok_or("no ecs")?;
    let input = v["input"].as_str().ok_or("no input")?;
    let p = libs.pattern(pattern, ecs)?;
    let m = p.matches(input).map_err(|e| e.to_string())?.ok_or("no match")?;
    let mut event = sluice_core::Object::new();
    event.insert(&"message", input);
    insert_captures(&mut event, &m);
    let mut problems = Vec::new();
    for (key, expected) in v["expect"].as_object().ok_or("no expect")? {
        let actual = get_path(&event, key).map(|a| serde_json::from_str::<Json>(&a.to_json()));
        match actual {
            Some(Ok(a)) if same(expected, &a) => {}
            Some(Ok(a)) => problems.push(format!("{key}: expected {expected}, got {a}")),
            _ => problems.push(format!("{key}: expected {expected}, missing")),
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("; "))
    }
}

fn run_match(libs: &mut Libraries, v: &Json) -> Result<(), String> {
    let pattern = v["pattern"].as_str().ok_or("no pattern")?;
    let ecs = v["ecs"].as_bool().ok_or("no ecs")?;
    let input = v["input"].as_str().ok_or("no input")?;
    let want = v["match"].as_bool().ok_or("no match flag")?;
    let got = libs.pattern(pattern, ecs)?.is_match(input).map_err(|e| e.to_string())?;
    if got == want {
        Ok(())
    } else {
        Err(format!("expected match={want}, got {got}"))
    }
}

fn run_file(
    libs: &mut Libraries,
    name: &str,
    path: &str,
    expected_count: usize,
    run: fn(&mut Libraries, &Json) -> Result<(), String>,
) -> Vec<String> {
    let vectors = read(path);
    assert_eq!(
        vectors.len(),
        expected_count,
        "{name}: {path} holds {} vectors, expected {expected_count}",
        vectors.len()
    );
    let mut passed = 0;
    let mut failures = Vec::new();
    for (line, v) in &vectors {
        let known = KNOWN_DIFFERENCES.iter().find(|(f, l, _)| *f == name && l == line);
        match (run(libs, v), known) {
            (Ok(()), None) => passed += 1,
            (Ok(()), Some(_)) => {
                failures.push(format!("{name}:{line} passes but is listed in KNOWN_DIFFERENCES: remove it"))
            }
            (Err(e), Some((_, _, why))) => {
                println!("{name}:{line}: known difference ({why}): {e}")
            }
            (Err(e), None) => {
                failures.push(format!("{name}:{line} {} (ecs={}) on {:?}: {e}", v["pattern"], v["ecs"], v["input"]))
            }
        }
    }
    println!("{name}: {passed}/{} passed", vectors.len());
    failures
}

#[test]
fn grok_vectors() {
    let mut libs = Libraries { legacy: GrokLibrary::legacy(), ecs: GrokLibrary::ecs_v1(), cache: HashMap::new() };
    let mut failures = run_file(&mut libs, "grok vectors", VECTORS, VECTOR_COUNT, run_expect);
    failures.extend(run_file(&mut libs, "grok match vectors", MATCH_VECTORS, MATCH_VECTOR_COUNT, run_match));
    assert!(failures.is_empty(), "{} failing vectors:\n{}", failures.len(), failures.join("\n"));
}
