//! Tests of the `condition` module.

use super::*;
use crate::event::Identity;
use std::sync::Arc;

fn event(json: &str) -> Event {
    let fields: crate::value::Object = sonic_rs::from_str(json).unwrap();
    let mut e = Event::from_fields(fields);
    e.timestamp = 1_700_000_000_123_456_789;
    e.identity = Arc::new(Identity::new("acme", "prod", "web-1"));
    e.source = Arc::from("/var/log/app.log");
    e
}

fn eval(expr: &str, json: &str) -> bool {
    Condition::parse(expr).unwrap_or_else(|e| panic!("{expr:?}: {e}")).eval(&event(json))
}

fn err(expr: &str) -> (usize, String) {
    let e = Condition::parse(expr).unwrap_err();
    (e.position, e.message)
}

const E: &str = r#"{
        "message": "GET /index.html failed: connection refused",
        "status": 503, "latency": 12.5, "big": 18446744073709551615,
        "service": "api", "ok": false, "flag": true, "nothing": null,
        "empty": "", "zero": 0,
        "tags": ["_grokparsefailure", "beta"],
        "http": {"request": {"method": "GET", "bytes": 512}},
        "codes": [200, 404], "weird name": "x"
    }"#;

#[test]
fn equality_and_inequality() {
    assert!(eval(r#"[service] == "api""#, E));
    assert!(!eval(r#"[service] == "API""#, E));
    assert!(eval(r#"[service] != "web""#, E));
    assert!(!eval(r#"[service] != "api""#, E));
    assert!(eval("[status] == 503", E));
    assert!(eval("[status] == 503.0", E));
    assert!(eval("[latency] == 12.5", E));
    assert!(eval("[ok] == false", E));
    assert!(eval("[flag] == true", E));
    assert!(eval("[nothing] == null", E));
    assert!(eval("[missing] == null", E));
    assert!(!eval("[zero] == null", E));
    assert!(eval("[codes] == [200, 404]", E));
    assert!(!eval("[codes] == [404, 200]", E));
    assert!(eval("[http] == [http]", E));
    assert!(eval("[big] == 18446744073709551615.0", E));
    assert!(eval("[big] > 9223372036854775807", E));
}

#[test]
fn ordering() {
    assert!(eval("[status] > 500", E));
    assert!(!eval("[status] > 503", E));
    assert!(eval("[status] >= 503", E));
    assert!(eval("[status] < 503.5", E));
    assert!(!eval("[status] < 503", E));
    assert!(eval("[status] <= 503", E));
    assert!(eval("[latency] < 13", E));
    assert!(eval(r#"[service] < "b""#, E));
    assert!(eval(r#"[service] >= "api""#, E));
    assert!(!eval(r#"[service] > "api""#, E));
    assert!(eval("-1 < 0", E));
    assert!(eval("1e3 == 1000", E));
}

#[test]
fn type_mismatches_are_false() {
    assert!(!eval(r#"[status] == "503""#, E));
    assert!(eval(r#"[status] != "503""#, E));
    assert!(!eval(r#"[status] > "100""#, E));
    assert!(!eval(r#"[status] < "100""#, E));
    assert!(!eval("[service] > 1", E));
    assert!(!eval("[service] <= 1", E));
    assert!(!eval("[missing] < 1", E));
    assert!(!eval("[missing] >= 1", E));
    assert!(!eval("[tags] > 1", E));
    assert!(!eval("[ok] < true", E));
    assert!(!eval("[status] =~ /503/", E));
    assert!(eval("[status] !~ /503/", E));
    assert!(!eval(r#""x" in [status]"#, E));
    assert!(!eval("1 in [message]", E));
}

#[test]
fn regex_match() {
    assert!(eval("[message] =~ /connection (refused|reset)/", E));
    assert!(!eval("[message] =~ /^connection/", E));
    assert!(eval("[message] !~ /^connection/", E));
    assert!(!eval("[message] !~ /refused/", E));
    assert!(eval(r"[message] =~ /GET \/index\.html/", E));
    assert!(eval("[service] =~ /(?i)^API$/", E));
    assert!(eval(r#"[service] =~ "^a.i$""#, E));
    assert!(!eval("[missing] =~ /.*/", E));
    assert!(eval("[missing] !~ /.*/", E));
}

#[test]
fn membership() {
    assert!(eval(r#""_grokparsefailure" in [tags]"#, E));
    assert!(!eval(r#""_jsonparsefailure" in [tags]"#, E));
    assert!(eval(r#""_jsonparsefailure" not in [tags]"#, E));
    assert!(!eval(r#""_grokparsefailure" not in [tags]"#, E));
    assert!(eval(r#""x" not in [missing]"#, E));
    assert!(!eval(r#""x" in [missing]"#, E));
    assert!(eval(r#"[service] in ["web", "api"]"#, E));
    assert!(!eval(r#"[service] in ["web", "db"]"#, E));
    assert!(eval(r#"[service] not in ["web", "db"]"#, E));
    assert!(eval("[status] in [500, 502, 503]", E));
    assert!(eval("404 in [codes]", E));
    assert!(!eval("500 in [codes]", E));
    assert!(!eval("[status] in []", E));
    assert!(eval(r#""request" in [http]"#, E));
    assert!(!eval(r#""response" in [http]"#, E));
    assert!(eval(r#"[service] in [service]"#, E));
}

#[test]
fn substring_in() {
    assert!(eval(r#""refused" in [message]"#, E));
    assert!(!eval(r#""accepted" in [message]"#, E));
    assert!(eval(r#""accepted" not in [message]"#, E));
    assert!(eval(r#""" in [empty]"#, E));
    assert!(eval(r#""pi" in "api""#, E));
}

#[test]
fn truthiness_and_exists() {
    assert!(eval("[service]", E));
    assert!(eval("[flag]", E));
    assert!(!eval("[ok]", E));
    assert!(!eval("[nothing]", E));
    assert!(!eval("[missing]", E));
    assert!(eval("[empty]", E));
    assert!(eval("[zero]", E));
    assert!(eval("[tags]", E));
    assert!(eval("![missing]", E));
    assert!(eval("exists([nothing])", E));
    assert!(eval("exists([ok])", E));
    assert!(!eval("exists([missing])", E));
    assert!(eval("exists([http][request][method])", E));
    assert!(!eval("exists([http][request][path])", E));
    assert!(eval("exists([@host])", E));
    assert!(eval("not exists([missing])", E));
    assert!(eval("true", E));
    assert!(!eval("false", E));
    assert!(!eval("null", E));
}

#[test]
fn nested_fields() {
    assert!(eval(r#"[http][request][method] == "GET""#, E));
    assert!(eval("[http][request][bytes] > 500", E));
    assert!(!eval("[http][request][bytes][deeper] > 500", E));
    assert!(!eval("[message][x]", E));
    assert!(eval(r#"[weird name] == "x""#, E));
    assert!(eval(r#"[a.b] == 1 and [a][b] == 2"#, r#"{"a.b": 1, "a": {"b": 2}}"#));
}

#[test]
fn identity_refs() {
    assert!(eval(r#"[@group] == "acme""#, E));
    assert!(eval(r#"[@subgroup] == "prod""#, E));
    assert!(eval(r#"[@host] =~ /^web-\d+$/"#, E));
    assert!(eval(r#"[@source] == "/var/log/app.log""#, E));
    assert!(eval(r#""app" in [@source]"#, E));
    assert!(eval("[@timestamp] == 1700000000123456789", E));
    assert!(eval("[@timestamp] > 1700000000123456788", E));
    assert!(!eval("[@timestamp] > 1700000000123456789", E));
    assert!(eval(r#"[@group] in ["globex", "acme"]"#, E));
    // Typed identity shadows a field of the same name.
    assert!(eval(r#"[@group] == "acme""#, r#"{"@group": "evil"}"#));
    // Other @-names are ordinary fields.
    assert!(eval(r#"[@metadata][index] == "logs""#, r#"{"@metadata": {"index": "logs"}}"#));
}

#[test]
fn logic_operators() {
    assert!(eval("[flag] and [service]", E));
    assert!(!eval("[flag] and [ok]", E));
    assert!(eval("[ok] or [flag]", E));
    assert!(!eval("[ok] or [missing]", E));
    assert!(eval("[flag] xor [ok]", E));
    assert!(!eval("[flag] xor [service]", E));
    assert!(!eval("[ok] xor [missing]", E));
    assert!(!eval("[flag] nand [service]", E));
    assert!(eval("[flag] nand [ok]", E));
    assert!(eval("[ok] nand [missing]", E));
    assert!(eval("![ok]", E));
    assert!(eval("not [ok]", E));
    assert!(eval("!![flag]", E));
    assert!(eval("! not [flag]", E));
    assert!(eval("!([status] == 200)", E));
}

#[test]
fn precedence() {
    // and binds tighter than or.
    assert!(eval("true or false and false", E));
    assert!(!eval("(true or false) and false", E));
    // and binds tighter than xor: true xor (true and false) = true.
    assert!(eval("true xor true and false", E));
    assert!(!eval("(true xor true) and false", E));
    // xor binds tighter than or: (false xor false) or true = true; true or ... = true.
    assert!(eval("false xor false or true", E));
    // or is loosest: true or (true xor true) = true, (true or true) xor true = false.
    assert!(eval("true or true xor true", E));
    assert!(!eval("(true or true) xor true", E));
    // nand at the level of and, left-assoc: (true nand true) and true = false.
    assert!(!eval("true nand true and true", E));
    assert!(eval("true nand (true and false)", E));
    // ! binds to the primary only.
    assert!(eval("!false and true", E));
    assert!(!eval("!(false or true)", E));
    assert!(eval("!false or false", E));
    // Comparisons bind tighter than and/or.
    assert!(eval(r#"[status] == 503 and [service] == "api""#, E));
    assert!(eval(r#"[status] == 200 or [service] == "api""#, E));
    // xor is left-assoc: (true xor true) xor true = true.
    assert!(eval("true xor true xor true", E));
}

#[test]
fn parse_error_positions() {
    assert_eq!(err("[foo == 1"), (9, "expected ']'".into()));
    assert_eq!(err("[a][b == 1"), (10, "expected ']'".into()));
    assert_eq!(err("[a] == \"abc"), (7, "unterminated string".into()));
    assert_eq!(err("[a] == 'abc\\'"), (7, "unterminated string".into()));
    assert_eq!(err("[a] =="), (6, "expected a value".into()));
    assert_eq!(err("[a] == 1 and"), (12, "expected a condition".into()));
    assert_eq!(err("[a] == 1 or or"), (12, "expected a condition".into()));
    assert_eq!(err("[a] =~ /(abc/"), (7, "invalid regex: unclosed group".into()));
    assert_eq!(
        err("[a] =~ \"[z-a]\""),
        (7, "invalid regex: invalid character class range, the start must be <= the end".into())
    );
    assert_eq!(err("[a] =~ /abc"), (7, "unterminated regex".into()));
    assert_eq!(err(""), (0, "empty condition".into()));
    assert_eq!(err("   "), (0, "empty condition".into()));
    assert_eq!(err("([a] == 1"), (9, "expected ')'".into()));
    assert_eq!(
        err("[a] [b]"),
        (4, "expected 'and', 'or', 'xor', 'nand' or end of condition, found a field reference".into())
    );
    assert_eq!(err("[a] == 1 == 2"), (9, "expected 'and', 'or', 'xor', 'nand' or end of condition, found '=='".into()));
    assert_eq!(err("[a][] == 1"), (4, "empty field name".into()));
    assert_eq!(err("a.b == 1"), (0, "unknown word 'a.b'; field references are written [a][b]".into()));
    assert_eq!(err("[a] == 1 AND [b]"), (9, "unknown word 'AND'; keywords are lowercase: 'and'".into()));
    assert_eq!(err("[a] = 1"), (4, "expected '==' or '=~'".into()));
    assert_eq!(err("[a] && [b]"), (4, "unexpected '&&'; use 'and'".into()));
    assert_eq!(err("[a] == 1 # x"), (9, "unexpected character '#'".into()));
    assert_eq!(
        err("![a] == 1"),
        (5, "'==' cannot follow a negated value; write !( ... ) around the comparison".into())
    );
    assert_eq!(err("[a] not [b]"), (8, "expected 'in' after 'not'".into()));
    assert_eq!(err("[a] == /x/"), (7, "a regex may only follow '=~' or '!~'".into()));
    assert_eq!(err("[a] =~ 1"), (7, "expected a regex /.../ or a string".into()));
    assert_eq!(err("[a] in [\"x\", 1"), (14, "expected ',' or ']'".into()));
    assert_eq!(err("[a] in [\"x\" 1]"), (12, "expected ',' or ']'".into()));
    assert_eq!(err("[a] in [\"x\", [b]]"), (13, "lists may only hold literals, not field references".into()));
    assert_eq!(err("[a] == \"\\q\""), (8, "unknown escape '\\q'".into()));
    assert_eq!(err("[a] == 12ab"), (7, "invalid number".into()));
    assert_eq!(err("[a] == 99999999999999999999"), (7, "number out of range".into()));
    assert_eq!(err("[a] == - 1"), (7, "unexpected '-'".into()));
    assert_eq!(err("exists [a]"), (7, "expected '(' after 'exists'".into()));
    assert_eq!(err("exists(\"a\")"), (7, "expected a field reference".into()));
    assert_eq!(err("exists([a]"), (10, "expected ')'".into()));
    assert_eq!(err("[@host][x] == 1"), (7, "[@host] has no sub-fields".into()));
    assert_eq!(err("[a] == )"), (7, "expected a value".into()));
    // Positions are byte offsets.
    assert_eq!(err("[é] == \"ü"), (8, "unterminated string".into()));
}

#[test]
fn error_display_and_serde() {
    let e = Condition::parse("[foo == 1").unwrap_err();
    assert_eq!(e.to_string(), "expected ']' at position 9");
    #[derive(serde::Deserialize, Debug)]
    struct Cfg {
        when: Condition,
    }
    let cfg: Cfg = toml::from_str(r#"when = '[status] >= 500 and "_grokparsefailure" not in [tags]'"#).unwrap();
    assert_eq!(cfg.when.as_str(), r#"[status] >= 500 and "_grokparsefailure" not in [tags]"#);
    assert!(cfg.when.eval(&event(r#"{"status": 500}"#)));
    assert!(!cfg.when.eval(&event(r#"{"status": 500, "tags": ["_grokparsefailure"]}"#)));
    let bad = toml::from_str::<Cfg>(r#"when = '[a] =='"#).unwrap_err();
    assert!(bad.to_string().contains(r#"invalid condition "[a] ==": expected a value at position 6"#), "{bad}");
    let c: Condition = "[a]".parse().unwrap();
    assert_eq!(c.to_string(), "[a]");
}

#[test]
fn condition_is_send_sync_clone() {
    fn assert_traits<T: Clone + std::fmt::Debug + Send + Sync>() {}
    assert_traits::<Condition>();
    let c = Condition::parse("[a] =~ /x/").unwrap();
    let d = c.clone();
    assert!(d.eval(&event(r#"{"a": "xyz"}"#)));
}

#[test]
fn strings_and_escapes() {
    assert!(eval(r#"[q] == "say \"hi\"""#, r#"{"q": "say \"hi\""}"#));
    assert!(eval(r#"[q] == 'it\'s'"#, r#"{"q": "it's"}"#));
    assert!(eval(r#"[q] == 'a"b'"#, r#"{"q": "a\"b"}"#));
    assert!(eval(r#"[q] == "a\tb\\""#, r#"{"q": "a\tb\\"}"#));
    assert!(eval(r#"[q] == "x\ny""#, r#"{"q": "x\ny"}"#));
    assert!(eval(r#"[q] in ['a', "b"]"#, r#"{"q": "a"}"#));
    assert!(eval("[q] in [[1, 2], [3]]", r#"{"q": [3]}"#));
    assert!(eval("[q] == []", r#"{"q": []}"#));
    assert!(eval("[q] in [[true], [null, -1]]", r#"{"q": [null, -1]}"#));
    assert!(!eval("[q] in [[true], [null, -1]]", r#"{"q": [-1, null]}"#));
    // Outside a list, a bracket without quotes or commas is a field.
    assert!(eval("[1] == [true]", r#"{"1": "x", "true": "x"}"#));
}

#[test]
fn table() {
    const T: &[(&str, &str, bool)] = &[
        (r#"[type] == "nginx""#, r#"{"type": "nginx"}"#, true),
        (r#"[type] == "nginx""#, r#"{"type": "apache"}"#, false),
        (r#"[type] == "nginx""#, r#"{}"#, false),
        (r#"[type] != "nginx""#, r#"{}"#, true),
        ("[response] >= 400 and [response] < 500", r#"{"response": 404}"#, true),
        ("[response] >= 400 and [response] < 500", r#"{"response": 500}"#, false),
        ("[response] >= 400 and [response] < 500", r#"{"response": "404"}"#, false),
        (r#"[loglevel] in ["ERROR", "FATAL"]"#, r#"{"loglevel": "FATAL"}"#, true),
        (r#"[loglevel] in ["ERROR", "FATAL"]"#, r#"{"loglevel": "WARN"}"#, false),
        (r#""_grokparsefailure" in [tags]"#, r#"{"tags": ["_grokparsefailure"]}"#, true),
        (r#""_grokparsefailure" in [tags]"#, r#"{"tags": "_grokparsefailure"}"#, true),
        (r#""_grokparsefailure" in [tags]"#, r#"{"tags": []}"#, false),
        (r#""_grokparsefailure" not in [tags]"#, r#"{}"#, true),
        (r#""error" in [message]"#, r#"{"message": "an error occurred"}"#, true),
        (r#""error" in [message]"#, r#"{"message": "all good"}"#, false),
        (r"[message] =~ /^\d{4}-\d{2}-\d{2}/", r#"{"message": "2024-01-02 boot"}"#, true),
        (r"[message] =~ /^\d{4}-\d{2}-\d{2}/", r#"{"message": "boot 2024-01-02"}"#, false),
        ("[message] !~ /DEBUG/", r#"{"message": "INFO ok"}"#, true),
        ("[user][id]", r#"{"user": {"id": 0}}"#, true),
        ("[user][id]", r#"{"user": {"id": null}}"#, false),
        ("[user][id]", r#"{"user": "bob"}"#, false),
        ("![user][id]", r#"{"user": {}}"#, true),
        ("exists([user][id])", r#"{"user": {"id": null}}"#, true),
        ("[a] == 1 or [b] == 2 and [c] == 3", r#"{"a": 1}"#, true),
        ("([a] == 1 or [b] == 2) and [c] == 3", r#"{"a": 1}"#, false),
        ("[a] xor [b]", r#"{"a": true, "b": true}"#, false),
        ("[a] xor [b]", r#"{"a": true}"#, true),
        ("[a] nand [b]", r#"{"a": true, "b": true}"#, false),
        ("[n] > 1.5", r#"{"n": 2}"#, true),
        ("[n] > 1.5", r#"{"n": 1.5}"#, false),
        ("[n] == -3", r#"{"n": -3}"#, true),
        ("[n] < [m]", r#"{"n": 1, "m": 2}"#, true),
        ("[n] < [m]", r#"{"n": 1, "m": "2"}"#, false),
        (r#"[@group] == "acme" and [@host] != "db-1""#, r#"{}"#, true),
        ("[flag] == true", r#"{"flag": "true"}"#, false),
        ("not [flag]", r#"{"flag": false}"#, true),
    ];
    for (expr, json, want) in T {
        assert_eq!(eval(expr, json), *want, "{expr} on {json}");
    }
}
