//! Tests of the `parser` module.

use super::*;

fn t(value: &str) -> Query {
    Query::Term { field: None, value: value.into() }
}
fn ft(field: &str, value: &str) -> Query {
    Query::Term { field: Some(field.into()), value: value.into() }
}
fn ph(text: &str) -> Query {
    Query::Phrase { field: None, text: text.into() }
}
fn fph(field: &str, text: &str) -> Query {
    Query::Phrase { field: Some(field.into()), text: text.into() }
}
fn wc(pattern: &str) -> Query {
    Query::Wildcard { field: None, pattern: pattern.into() }
}
fn fwc(field: &str, pattern: &str) -> Query {
    Query::Wildcard { field: Some(field.into()), pattern: pattern.into() }
}
fn ex(field: &str) -> Query {
    Query::Exists { field: field.into() }
}
fn rng(field: &str, lower: Bound, upper: Bound) -> Query {
    Query::Range { field: field.into(), lower, upper }
}
fn inc(n: f64) -> Bound {
    Bound::Inclusive(Literal::Number(n))
}
fn exc(n: f64) -> Bound {
    Bound::Exclusive(Literal::Number(n))
}
fn inc_t(s: &str) -> Bound {
    Bound::Inclusive(Literal::Text(s.into()))
}
fn exc_t(s: &str) -> Bound {
    Bound::Exclusive(Literal::Text(s.into()))
}
const OPEN: Bound = Bound::Unbounded;
fn and(items: Vec<Query>) -> Query {
    Query::And(items)
}
fn or(items: Vec<Query>) -> Query {
    Query::Or(items)
}
fn not(q: Query) -> Query {
    Query::Not(Box::new(q))
}

#[test]
fn parses_to_the_expected_ast() {
    let cases: Vec<(&str, Query)> = vec![
        // Empty, everything.
        ("", Query::All),
        ("   \t\n", Query::All),
        ("*", Query::All),
        ("*:*", Query::All),
        ("  *  ", Query::All),
        // Free text.
        ("error", t("error")),
        ("Error", t("Error")),
        ("  error  ", t("error")),
        ("web-01", t("web-01")),
        ("10.0.0.1", t("10.0.0.1")),
        ("sshd[24200]", t("sshd[24200]")),
        ("/var/log/syslog", t("/var/log/syslog")),
        ("hello!", t("hello!")),
        ("NOTE", t("NOTE")),
        ("ORACLE ANDROID", and(vec![t("ORACLE"), t("ANDROID")])),
        ("and or not", and(vec![t("and"), t("or"), t("not")])),
        ("héllo wörld", and(vec![t("héllo"), t("wörld")])),
        // Fields.
        ("status:404", ft("status", "404")),
        ("status: 404", ft("status", "404")),
        ("http.status:404", ft("http.status", "404")),
        ("@host:web-01", ft("@host", "web-01")),
        ("beat.host_name:a", ft("beat.host_name", "a")),
        ("time:10:30:00", ft("time", "10:30:00")),
        ("@timestamp:2026-01-01T00:00:00Z", ft("@timestamp", "2026-01-01T00:00:00Z")),
        ("status:-1", ft("status", "-1")),
        ("url:http://x/y", ft("url", "http://x/y")),
        // Phrases and escapes.
        ("\"connection refused\"", ph("connection refused")),
        ("message:\"user root\"", fph("message", "user root")),
        ("\"say \\\"hi\\\" \\\\ bye\"", ph("say \"hi\" \\ bye")),
        ("\"\"", ph("")),
        ("\"a (b) OR c*\"", ph("a (b) OR c*")),
        ("foo\\ bar", t("foo bar")),
        ("a\\:b", t("a:b")),
        ("\\-x", t("-x")),
        ("\\(x\\)", t("(x)")),
        ("\\AND", t("AND")),
        ("path:C\\:\\\\temp", ft("path", "C:\\temp")),
        ("x\\*", t("x*")),
        // Wildcards.
        ("fail*", wc("fail*")),
        ("w?b", wc("w?b")),
        ("@host:web-*", fwc("@host", "web-*")),
        ("a\\*b*", wc("a\\*b*")),
        ("status:*", ex("status")),
        ("_exists_:http.status", ex("http.status")),
        // Ranges.
        ("status:[400 TO 499]", rng("status", inc(400.0), inc(499.0))),
        ("status:{400 TO 499}", rng("status", exc(400.0), exc(499.0))),
        ("status:[400 TO 500}", rng("status", inc(400.0), exc(500.0))),
        ("status:{400 TO 500]", rng("status", exc(400.0), inc(500.0))),
        ("status:[400 TO *]", rng("status", inc(400.0), OPEN)),
        ("status:[* TO 1.5]", rng("status", OPEN, inc(1.5))),
        ("status:[ -1e3   TO  +2 ]", rng("status", inc(-1000.0), inc(2.0))),
        ("n:[* TO *]", rng("n", OPEN, OPEN)),
        (
            "@timestamp:[2026-01-01T00:00:00Z TO 2026-01-02T00:00:00.5+01:00}",
            rng("@timestamp", inc_t("2026-01-01T00:00:00Z"), exc_t("2026-01-02T00:00:00.5+01:00")),
        ),
        ("@timestamp:[1700000000000 TO now]", rng("@timestamp", inc(1.7e12), inc_t("now"))),
        ("@host:[a TO m]", rng("@host", inc_t("a"), inc_t("m"))),
        ("s:[\"1\" TO \"a b\"]", rng("s", inc_t("1"), inc_t("a b"))),
        ("s:[inf TO NaN]", rng("s", inc_t("inf"), inc_t("NaN"))),
        ("status:>10", rng("status", exc(10.0), OPEN)),
        ("status:>=10", rng("status", inc(10.0), OPEN)),
        ("status:<10", rng("status", OPEN, exc(10.0))),
        ("status:<=10", rng("status", OPEN, inc(10.0))),
        ("status:> 10", rng("status", exc(10.0), OPEN)),
        ("@timestamp:>=2026-01-01", rng("@timestamp", inc_t("2026-01-01"), OPEN)),
        ("bytes:>-5.5", rng("bytes", exc(-5.5), OPEN)),
        // Boolean operators.
        ("a AND b", and(vec![t("a"), t("b")])),
        ("a && b", and(vec![t("a"), t("b")])),
        ("a&&b", and(vec![t("a"), t("b")])),
        ("a b", and(vec![t("a"), t("b")])),
        ("a OR b", or(vec![t("a"), t("b")])),
        ("a || b", or(vec![t("a"), t("b")])),
        ("a||b", or(vec![t("a"), t("b")])),
        ("NOT a", not(t("a"))),
        ("!a", not(t("a"))),
        ("! a", not(t("a"))),
        ("-a", not(t("a"))),
        ("+a", t("a")),
        ("+a -b c", and(vec![t("a"), not(t("b")), t("c")])),
        ("a -b", and(vec![t("a"), not(t("b"))])),
        ("NOT NOT a", not(not(t("a")))),
        ("NOT(a)", not(t("a"))),
        ("-status:404", not(ft("status", "404"))),
        ("a AND NOT b", and(vec![t("a"), not(t("b"))])),
        // Precedence NOT > AND > OR.
        ("a OR b AND c", or(vec![t("a"), and(vec![t("b"), t("c")])])),
        ("a AND b OR c", or(vec![and(vec![t("a"), t("b")]), t("c")])),
        ("a b OR c d", or(vec![and(vec![t("a"), t("b")]), and(vec![t("c"), t("d")])])),
        ("NOT a AND b", and(vec![not(t("a")), t("b")])),
        ("NOT a OR b", or(vec![not(t("a")), t("b")])),
        ("(a OR b) AND c", and(vec![or(vec![t("a"), t("b")]), t("c")])),
        ("NOT (a OR b)", not(or(vec![t("a"), t("b")]))),
        // Normalisation.
        ("a AND b AND c", and(vec![t("a"), t("b"), t("c")])),
        ("(a AND b) AND (c AND d)", and(vec![t("a"), t("b"), t("c"), t("d")])),
        ("a OR (b OR (c OR d))", or(vec![t("a"), t("b"), t("c"), t("d")])),
        ("((((a))))", t("a")),
        ("(a)", t("a")),
        ("* AND a", t("a")),
        ("* a", t("a")),
        ("a OR *", Query::All),
        ("-*", not(Query::All)),
        // Field groups.
        ("status:(404 OR 500)", or(vec![ft("status", "404"), ft("status", "500")])),
        ("level:(error warn)", and(vec![ft("level", "error"), ft("level", "warn")])),
        ("f:(a OR \"b c\" OR d*)", or(vec![ft("f", "a"), fph("f", "b c"), fwc("f", "d*")])),
        ("f:(a -b)", and(vec![ft("f", "a"), not(ft("f", "b"))])),
        ("f:(a OR g:b)", or(vec![ft("f", "a"), ft("g", "b")])),
        ("f:(a (b OR c))", and(vec![ft("f", "a"), or(vec![ft("f", "b"), ft("f", "c")])])),
        ("f:(>5 AND <10)", and(vec![rng("f", exc(5.0), OPEN), rng("f", OPEN, exc(10.0))])),
        ("f:([1 TO 2] OR *)", or(vec![rng("f", inc(1.0), inc(2.0)), ex("f")])),
        ("f:(a) b", and(vec![ft("f", "a"), t("b")])),
        // Mixed, realistic.
        (
            "\"Failed password\" AND (root OR admin) -@host:web-01",
            and(vec![ph("Failed password"), or(vec![t("root"), t("admin")]), not(ft("@host", "web-01"))]),
        ),
        (
            "level:error AND status:>=500 OR _exists_:exception",
            or(vec![and(vec![ft("level", "error"), rng("status", inc(500.0), OPEN)]), ex("exception")]),
        ),
        ("a\"b c\"", and(vec![t("a"), ph("b c")])),
    ];
    assert!(cases.len() >= 60, "{} cases", cases.len());
    for (input, expected) in cases {
        assert_eq!(parse(input), Ok(expected), "parsing {input:?}");
    }
}

#[test]
fn malformed_queries_report_message_and_position() {
    let cases: &[(&str, &str, usize)] = &[
        ("(a OR b", "unbalanced parenthesis: '(' is never closed", 0),
        ("x (a (b)", "unbalanced parenthesis: '(' is never closed", 2),
        ("a)", "unbalanced parenthesis: ')' without a matching '('", 1),
        ("(a))", "unbalanced parenthesis: ')' without a matching '('", 3),
        (")", "unbalanced parenthesis: ')' without a matching '('", 0),
        ("()", "empty parentheses", 0),
        ("a ( )", "empty parentheses", 2),
        ("(", "unbalanced parenthesis: '(' is never closed", 0),
        ("\"abc", "unterminated quoted phrase", 0),
        ("x \"abc\\\"", "unterminated quoted phrase", 2),
        ("status:", "expected a value after 'status:'", 7),
        ("status:   ", "expected a value after 'status:'", 10),
        ("status: AND x", "expected a value after 'status:'", 8),
        ("(status:)", "expected a value after 'status:'", 8),
        ("a AND", "expected a term after AND", 5),
        ("a OR", "expected a term after OR", 4),
        ("a &&", "expected a term after AND", 4),
        ("a AND OR b", "expected a term after AND", 6),
        ("NOT", "expected a term after NOT", 3),
        ("a -", "expected a term after '-'", 3),
        ("a !", "expected a term after '!'", 3),
        ("(NOT)", "expected a term after NOT", 4),
        ("AND a", "expected a term, found AND", 0),
        ("OR a", "expected a term, found OR", 0),
        ("|| a", "expected a term, found OR", 0),
        ("s:[1 TO]", "expected an upper bound after TO", 7),
        ("s:[1 TO ]", "expected an upper bound after TO", 8),
        ("s:[ TO 5]", "expected TO in the range", 7),
        ("s:[]", "expected a lower bound in the range", 3),
        ("s:[1 5]", "expected TO in the range", 5),
        ("s:[1 to 5]", "expected TO in the range", 5),
        ("s:[1 TO 5", "unterminated range", 2),
        ("s:[1 TO 5 6]", "expected ']' or '}' to close the range", 10),
        ("s:{1", "unterminated range", 2),
        ("s:[1 TO \"5]", "unterminated quoted phrase", 8),
        ("s:>", "expected a value after '>'", 3),
        ("s:>= ", "expected a value after '>='", 5),
        ("(s:<)", "expected a value after '<'", 4),
        ("[1 TO 5]", "a range needs a field", 0),
        ("a >5", "a comparison needs a field", 2),
        (":a", "expected a field name before ':'", 0),
        ("a/b:c", "invalid field name \"a/b\"", 0),
        ("a*:c", "invalid field name \"a*\"", 0),
        ("a..b:c", "invalid field name \"a..b\"", 0),
        ("a\\ b:c", "invalid field name", 0),
        ("_exists_:", "expected a value after '_exists_:'", 9),
        ("_exists_:\"a\"", "_exists_ needs a field name", 9),
        ("_exists_:a*", "_exists_ needs a field name", 9),
        ("error^2", "boosts ('^') are not supported", 5),
        ("error~", "fuzzy and proximity searches ('~') are not supported", 5),
        ("\"a b\"~2", "fuzzy and proximity searches", 5),
        ("]", "unexpected ']'", 0),
        ("s:}", "unexpected '}'", 2),
        ("abc\\", "a backslash at the end of the query escapes nothing", 3),
        ("s:[1 TO 5\\", "a backslash at the end of the query escapes nothing", 9),
        ("é)", "unbalanced parenthesis", 2),
    ];
    for &(input, message, position) in cases {
        let err = parse(input).expect_err(input);
        assert!(err.message.contains(message), "{input:?}: {:?} does not contain {message:?}", err.message);
        assert_eq!(err.position, position, "{input:?}: {err}");
        assert!(err.to_string().ends_with(&format!("at position {position}")));
    }
}

#[test]
fn nesting_is_limited() {
    let ok = format!("{}a{}", "(".repeat(MAX_DEPTH), ")".repeat(MAX_DEPTH));
    assert_eq!(parse(&ok), Ok(t("a")));
    let deep = format!("{}a{}", "(".repeat(MAX_DEPTH + 1), ")".repeat(MAX_DEPTH + 1));
    let err = parse(&deep).unwrap_err();
    assert!(err.message.contains("nested too deeply"), "{err}");
    assert_eq!(err.position, MAX_DEPTH);
    let nots = format!("{}a", "NOT ".repeat(MAX_DEPTH + 1));
    assert!(parse(&nots).unwrap_err().message.contains("nested too deeply"));
    let dashes = format!("{}a", "-".repeat(100_000));
    assert!(parse(&dashes).is_err());
    let parens = "(".repeat(100_000);
    assert!(parse(&parens).is_err());
    // Long but flat queries are fine.
    let flat = vec!["a"; 10_000].join(" OR ");
    assert!(matches!(parse(&flat), Ok(Query::Or(v)) if v.len() == 10_000));
}

#[test]
fn numbers() {
    for (s, n) in [("404", 404.0), ("-1.5", -1.5), ("+2", 2.0), (".5", 0.5), ("1e3", 1000.0), ("5.", 5.0)] {
        assert_eq!(parse_number(s), Some(n), "{s}");
    }
    for s in ["", "-", ".", "e5", "inf", "NaN", "1e999", "1_000", "0x10", "1.2.3", "2026-01-01"] {
        assert_eq!(parse_number(s), None, "{s}");
    }
}

#[test]
fn display_round_trips() {
    for input in [
        "a OR b AND c",
        "(a OR b) c",
        "NOT (a b)",
        "f:(a OR \"b c\") -g:[1 TO 5} h:>=2026-01-01T00:00:00Z",
        "\"say \\\"hi\\\"\" AND x\\ y AND \\AND AND a\\*b* AND _exists_:k",
        "s:[\"1\" TO \"a b\"] OR s:{* TO -2.5]",
        "-*",
        // Found by fuzzing: a field named like an operator.
        "AND:* OR:x NOT:[1 TO 2]",
    ] {
        let q = parse(input).unwrap();
        let printed = q.to_string();
        assert_eq!(parse(&printed), Ok(q), "{input:?} printed as {printed:?}");
    }
    assert_eq!(parse("a b OR NOT c").unwrap().to_string(), "a AND b OR NOT c");
    assert_eq!(parse("status:>10").unwrap().to_string(), "status:{10 TO *]");
}

mod props {
    use proptest::prelude::*;

    use super::super::parse;

    /// Fragments that exercise every branch of the grammar.
    fn soup() -> impl Strategy<Value = String> {
        let piece = prop::sample::select(vec![
            "a",
            "B",
            "web-01",
            "AND",
            "OR",
            "NOT",
            "&&",
            "||",
            "!",
            "-",
            "+",
            "(",
            ")",
            "\"",
            "\\",
            ":",
            "f:",
            "f.g:",
            "_exists_:",
            "AND:",
            "NOT:",
            "*",
            "?",
            "[",
            "]",
            "{",
            "}",
            "TO",
            ">",
            ">=",
            "<",
            "<=",
            "1",
            "-2.5",
            "1e3",
            " ",
            "  ",
            "\t",
            "é",
            "2026-01-01T00:00:00Z",
            "^",
            "~",
            "/",
            "\\ ",
            "\\*",
            "\"x y\"",
        ]);
        prop::collection::vec(piece, 0..24).prop_map(|v| v.concat())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn never_panics_on_arbitrary_text(s in any::<String>()) {
            let _ = parse(&s);
        }

        #[test]
        fn never_panics_and_round_trips(s in soup()) {
            match parse(&s) {
                Ok(q) => {
                    let printed = q.to_string();
                    prop_assert_eq!(parse(&printed), Ok(q), "printed as {:?}", printed);
                }
                Err(e) => prop_assert!(e.position <= s.len() && s.is_char_boundary(e.position)),
            }
        }
    }
}
