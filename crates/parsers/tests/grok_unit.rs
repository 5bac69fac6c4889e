//! Behavioural tests of the grok engine through its public API: expansion,
//! errors, conversions, Logstash capture rules, event merging, robustness
//! (unicode, long inputs, catastrophic backtracking) and thread safety.

use std::time::{Duration, Instant};

use serde_json::{json, Value as Json};
use sluice_parsers::grok::{
    insert_captures, insert_captures_with, Captured, GrokError, GrokLibrary, GrokMulti, InsertOptions,
};

fn event_json(obj: &sluice_core::Object) -> Json {
    serde_json::from_str(&obj.clone().into_value().to_json()).unwrap()
}

fn lib(defs: &str) -> GrokLibrary {
    let mut l = GrokLibrary::new();
    l.add_patterns_text(defs).unwrap();
    l
}

#[test]
fn every_library_pattern_compiles() {
    for (flavour, lib) in [("legacy", GrokLibrary::legacy()), ("ecs-v1", GrokLibrary::ecs_v1())] {
        assert!(lib.len() > 300, "{flavour}: only {} patterns", lib.len());
        let mut failed = Vec::new();
        for name in lib.names() {
            if let Err(e) = lib.compile(&format!("%{{{name}}}")) {
                failed.push(format!("{name}: {e}"));
            }
        }
        assert!(failed.is_empty(), "{flavour}: {failed:#?}");
    }
}

#[test]
fn nested_expansion() {
    let l = lib("INNER [a-z]+\nMIDDLE <%{INNER:inner}>\nOUTER %{MIDDLE:middle}!%{INNER}");
    let p = l.compile("^%{OUTER:outer}$").unwrap();
    let m = p.matches("<abc>!def").unwrap().unwrap();
    assert_eq!(m.get("outer"), Some(Captured::Str("<abc>!def")));
    assert_eq!(m.get("middle"), Some(Captured::Str("<abc>")));
    assert_eq!(m.get("inner"), Some(Captured::Str("abc")));
    // `%{INNER}` without a field name does not capture.
    assert_eq!(p.field_names(), ["outer", "middle", "inner"]);
}

#[test]
fn undefined_pattern_is_named() {
    let l = lib("A %{B}x");
    let err = l.compile("%{A:a}").unwrap_err();
    assert!(matches!(&err, GrokError::UndefinedPattern { name, .. } if name == "B"));
    let msg = err.to_string();
    assert!(msg.contains("%{B}") && msg.contains('A'), "{msg}");
    let err = GrokLibrary::legacy().compile("%{NOPE}").unwrap_err();
    assert!(err.to_string().contains("%{NOPE} is not defined"), "{err}");
}

#[test]
fn recursion_is_detected() {
    let l = lib("A x%{B}\nB y%{C:c}\nC %{A}");
    let err = l.compile("%{A}").unwrap_err();
    assert!(matches!(&err, GrokError::RecursivePattern { name, .. } if name == "A"));
    assert!(err.to_string().contains("A -> B -> C -> A"), "{err}");
    let err = lib("SELF a|%{SELF}").compile("%{SELF}").unwrap_err();
    assert!(err.to_string().contains("SELF -> SELF"), "{err}");
}

#[test]
fn exponential_expansion_is_bounded() {
    let mut defs = String::from("P0 ab\n");
    for i in 1..40 {
        defs.push_str(&format!("P{i} %{{P{}}}%{{P{}}}\n", i - 1, i - 1));
    }
    let err = lib(&defs).compile("%{P39}").unwrap_err();
    assert!(matches!(err, GrokError::TooLarge { .. }), "{err}");
}

#[test]
fn int_and_float_conversions() {
    let l = GrokLibrary::legacy();
    let p = l.compile("%{NUMBER:i:int} %{NUMBER:f:float} %{NUMBER:s} %{NUMBER:x:other}").unwrap();
    let m = p.matches("-42 0.5 7 8").unwrap().unwrap();
    assert_eq!(m.get("i"), Some(Captured::Int(-42)));
    assert_eq!(m.get("f"), Some(Captured::Float(0.5)));
    assert_eq!(m.get("s"), Some(Captured::Str("7")));
    assert_eq!(m.get("x"), Some(Captured::Str("8")));
    // Ruby to_i truncates.
    let m = p.matches("1.9 3 7 8").unwrap().unwrap();
    assert_eq!(m.get("i"), Some(Captured::Int(1)));
    assert_eq!(m.get("f"), Some(Captured::Float(3.0)));
}

#[test]
fn optional_and_empty_captures_are_not_set() {
    let l = GrokLibrary::legacy();
    let p = l.compile(r"%{WORD:a}(?: %{INT:b:int})?(?<empty>x?)(?<raw>[a-z]*)$").unwrap();
    let m = p.matches("hello").unwrap().unwrap();
    assert_eq!(m.get("a"), Some(Captured::Str("hello")));
    assert_eq!(m.get("b"), None);
    assert_eq!(m.get("empty"), None);
    let mut obj = sluice_core::Object::new();
    assert_eq!(insert_captures(&mut obj, &m), 1);
    assert_eq!(event_json(&obj), json!({"a": "hello"}));
}

#[test]
fn bracket_paths_become_nested_objects() {
    let l = GrokLibrary::ecs_v1();
    let p = l.compile("%{HTTPD_COMMONLOG}").unwrap();
    let line = r#"127.0.0.1 - frank [10/Oct/2000:13:55:36 -0700] "GET /a.gif HTTP/1.0" 200 2326"#;
    let m = p.matches(line).unwrap().unwrap();
    assert_eq!(m.get("http.request.method"), Some(Captured::Str("GET")));
    let mut obj = sluice_core::Object::new();
    insert_captures(&mut obj, &m);
    assert_eq!(
        event_json(&obj),
        json!({
            "source": {"address": "127.0.0.1"},
            "user": {"name": "frank"},
            "timestamp": "10/Oct/2000:13:55:36 -0700",
            "http": {"request": {"method": "GET"}, "version": "1.0",
                     "response": {"status_code": 200, "body": {"bytes": 2326}}},
            "url": {"original": "/a.gif"}
        })
    );
    // `@metadata` and raw bracket groups.
    let p = l.compile(r"(?<[@metadata][x]>\d+) %{WORD:@metadata}").unwrap();
    let m = p.matches("12 w").unwrap().unwrap();
    let mut obj = sluice_core::Object::new();
    insert_captures(&mut obj, &m);
    // `@metadata` is first created as an object, so the string is dropped
    // (Logstash does not merge a string into an object either).
    assert_eq!(event_json(&obj), json!({"@metadata": {"x": "12"}}));
}

#[test]
fn existing_field_becomes_array() {
    let l = GrokLibrary::legacy();
    let p = l.compile("%{WORD:w} %{GREEDYDATA:message}").unwrap();
    let input = "hi there you";
    let m = p.matches(input).unwrap().unwrap();
    let mut obj = sluice_core::Object::new();
    obj.insert(&"message", input);
    obj.insert(&"w", 5i64);
    insert_captures(&mut obj, &m);
    // String -> array; non-string existing values are kept (Logstash).
    assert_eq!(event_json(&obj), json!({"message": ["hi there you", "there you"], "w": 5}));
    // Same field twice in one pattern -> array.
    let p = l.compile("%{WORD:x} %{WORD:x} %{WORD:x}").unwrap();
    let m = p.matches("a b c").unwrap().unwrap();
    let mut obj = sluice_core::Object::new();
    insert_captures(&mut obj, &m);
    assert_eq!(event_json(&obj), json!({"x": ["a", "b", "c"]}));
    // overwrite + target.
    let p = l.compile("%{WORD:message}").unwrap();
    let m = p.matches("new").unwrap().unwrap();
    let mut obj = sluice_core::Object::new();
    obj.insert(&"message", "old");
    let opts = InsertOptions { overwrite: vec!["message".into()], target: vec![] };
    insert_captures_with(&mut obj, &m, &opts);
    assert_eq!(event_json(&obj), json!({"message": "new"}));
    let opts = InsertOptions { overwrite: vec![], target: vec!["parsed".into()] };
    insert_captures_with(&mut obj, &m, &opts);
    assert_eq!(event_json(&obj), json!({"message": "new", "parsed": {"message": "new"}}));
}

#[test]
fn invalid_regex_is_reported() {
    let l = lib("BAD (unclosed");
    let err = l.compile("x %{BAD:b}").unwrap_err();
    assert!(matches!(err, GrokError::InvalidRegex { .. }));
    assert!(err.to_string().contains("x %{BAD:b}"), "{err}");
    assert!(matches!(GrokLibrary::new().add_pattern("bad name", "x"), Err(GrokError::InvalidName(_))));
    let err = GrokLibrary::new().add_patterns_text("# c\n\nOK a\nNODEF\n").unwrap_err();
    assert!(matches!(err, GrokError::PatternsText { line: 4, .. }), "{err}");
}

#[test]
fn patterns_text_and_add_pattern() {
    let mut l = GrokLibrary::legacy();
    let n = l.add_patterns_text("  # comment\nMYID [A-Z]{3}-%{INT}\r\n\nMYLINE %{MYID:id} %{WORD:w}\n").unwrap();
    assert_eq!(n, 2);
    l.add_pattern("INT", "[0-9]{2}").unwrap(); // overrides the library
    let p = l.compile("%{MYLINE}").unwrap();
    assert!(p.matches("ABC-12 word").unwrap().is_some());
    assert!(p.matches("ABC-123 word").unwrap().is_none());
}

#[test]
fn ruby_regex_semantics() {
    let l = GrokLibrary::legacy();
    // Search, not anchored match.
    let p = l.compile("%{INT:n}").unwrap();
    assert_eq!(p.matches("abc 12 x").unwrap().unwrap().get("n"), Some(Captured::Str("12")));
    // `.` matches newlines, `^`/`$` are line anchors.
    let p = l.compile("^%{WORD:a}$").unwrap();
    assert_eq!(p.matches("x y\nline\nz").unwrap().unwrap().get("a"), Some(Captured::Str("line")));
    let p = l.compile("a%{GREEDYDATA:rest}").unwrap();
    assert_eq!(p.matches("a1\n2").unwrap().unwrap().get("rest"), Some(Captured::Str("1\n2")));
    // Ruby `\h` is a hex digit.
    let p = l.compile(r"^(?<h>\h+)$").unwrap();
    assert!(p.matches("00ffAB").unwrap().is_some());
    assert!(p.matches(" ").unwrap().is_none());
}

#[test]
fn unicode_input() {
    let l = GrokLibrary::legacy();
    let p = l.compile("%{WORD:w} %{DATA:d} %{GREEDYDATA:rest}").unwrap();
    let m = p.matches("héllo wörld ✓ 日本語 😀").unwrap().unwrap();
    // \w is ASCII (as in Ruby): WORD stops at the `é`.
    assert_eq!(m.get("w"), Some(Captured::Str("llo")));
    assert_eq!(m.get("d"), Some(Captured::Str("wörld")));
    assert_eq!(m.get("rest"), Some(Captured::Str("✓ 日本語 😀")));
    // `.` consumes whole characters, never half a UTF-8 sequence.
    let p = l.compile("^(?<one>.)(?<two>.)").unwrap();
    let m = p.matches("😀é").unwrap().unwrap();
    assert_eq!((m.get("one"), m.get("two")), (Some(Captured::Str("😀")), Some(Captured::Str("é"))));
    // Code points above U+00FF only compile in UTF mode; still usable.
    let p = l.compile(r"(?<c>\x{263A})").unwrap();
    assert_eq!(p.matches("a☺").unwrap().unwrap().get("c"), Some(Captured::Str("☺")));
    assert!(p.matches("ascii only").unwrap().is_none());
    // POSIX classes are Unicode-aware, as in Ruby.
    let p = l.compile("^%{UNIXPATH:p}$").unwrap();
    assert!(p.matches("/tmp/répertoire").unwrap().is_some());
}

#[test]
fn long_input_does_not_hang() {
    let l = GrokLibrary::legacy();
    // Plain long lines.
    let long = "x".repeat(1 << 20);
    let p = l.compile("%{COMBINEDAPACHELOG}").unwrap();
    let t = Instant::now();
    assert!(p.matches(&long).unwrap().is_none());
    let quoted = format!("\"{}", "\\\"".repeat(200_000));
    assert!(!p.is_match(&quoted).unwrap_or(false));
    // Catastrophic backtracking: PCRE2's match limit turns it into an error.
    let p = l.compile(r"^(?<a>(?:x+x+)+)y$").unwrap();
    let evil = "x".repeat(64);
    let res = p.matches(&evil);
    assert!(matches!(res, Err(GrokError::Match(_)) | Ok(None)), "{res:?}");
    let p = l.compile("%{GREEDYDATA:a} %{GREEDYDATA:b} %{GREEDYDATA:c} %{GREEDYDATA:d}=$").unwrap();
    let spaces = "a ".repeat(5_000);
    let res = p.matches(&spaces);
    assert!(matches!(res, Err(GrokError::Match(_)) | Ok(None)), "{res:?}");
    assert!(t.elapsed() < Duration::from_secs(20), "took {:?}", t.elapsed());
}

#[test]
fn multi_first_match() {
    let l = GrokLibrary::legacy();
    let multi = GrokMulti::compile(&l, ["^%{INT:n}$", "^%{WORD:w}$", "%{GREEDYDATA:all}"]).unwrap();
    let (i, m) = multi.first_match("abc").unwrap().unwrap();
    assert_eq!((i, m.get("w")), (1, Some(Captured::Str("abc"))));
    let (i, _) = multi.first_match("12").unwrap().unwrap();
    assert_eq!(i, 0);
    let (i, _) = multi.first_match("a b").unwrap().unwrap();
    assert_eq!(i, 2);
    assert!(GrokMulti::compile(&l, ["%{NOPE}"]).is_err());
}

#[test]
fn shared_across_threads() {
    let l = GrokLibrary::legacy();
    let p = std::sync::Arc::new(l.compile("%{COMBINEDAPACHELOG}").unwrap());
    let handles: Vec<_> = (0..4)
        .map(|t| {
            let p = p.clone();
            std::thread::spawn(move || {
                for i in 0..500 {
                    let line = format!(
                        r#"10.0.{t}.{} - - [10/Oct/2000:13:55:36 -0700] "GET /{i} HTTP/1.1" 200 {i} "-" "agent {t}""#,
                        i % 250
                    );
                    let m = p.matches(&line).unwrap().unwrap();
                    assert_eq!(m.get("bytes"), Some(Captured::Str(&i.to_string())));
                    assert_eq!(m.get("agent"), Some(Captured::Str(&format!("\"agent {t}\""))));
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
}
