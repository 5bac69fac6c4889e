//! kv parser tests, mostly cases from the Logstash kv filter documentation and
//! spec (logstash-filter-kv), plus robustness on odd input.

use std::borrow::Cow;

use sluice_parsers::kv::{KvError, KvOptions, KvParser, Transform, Whitespace};

fn kv(opts: KvOptions, input: &str) -> Vec<(String, String)> {
    KvParser::new(opts).unwrap().parse(input).into_iter().map(|(k, v)| (k.into_owned(), v.into_owned())).collect()
}

fn pairs(p: &[(&str, &str)]) -> Vec<(String, String)> {
    p.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

#[test]
fn defaults() {
    assert_eq!(kv(KvOptions::default(), "ip=1.2.3.4 error=REFUSED"), pairs(&[("ip", "1.2.3.4"), ("error", "REFUSED")]));
    assert_eq!(
        kv(
            KvOptions::default(),
            "hello=world foo=bar baz=fizz doublequoted=\"hello world\" singlequoted='hello world'"
        ),
        pairs(&[
            ("hello", "world"),
            ("foo", "bar"),
            ("baz", "fizz"),
            ("doublequoted", "hello world"),
            ("singlequoted", "hello world"),
        ])
    );
}

#[test]
fn borrowed_when_possible() {
    let p = KvParser::new(KvOptions::default()).unwrap();
    for (k, v) in p.parse("a=1 b=\"two words\" c=(x y)") {
        assert!(matches!(k, Cow::Borrowed(_)));
        assert!(matches!(v, Cow::Borrowed(_)));
    }
}

#[test]
fn field_split_set() {
    let opts = KvOptions { field_split: "&?".into(), ..KvOptions::default() };
    assert_eq!(
        kv(opts, "pin=12345~0&d=123&e=foo@bar.com&oq=bobo&ss=12345"),
        pairs(&[("pin", "12345~0"), ("d", "123"), ("e", "foo@bar.com"), ("oq", "bobo"), ("ss", "12345"),])
    );
}

#[test]
fn value_split_colon() {
    let opts = KvOptions { value_split: ":".into(), ..KvOptions::default() };
    assert_eq!(kv(opts, "hello:world foo:bar"), pairs(&[("hello", "world"), ("foo", "bar")]));
}

#[test]
fn brackets() {
    let input = "bracketsone=(hello world) bracketstwo=[hello world] bracketsthree=<hello world>";
    assert_eq!(
        kv(KvOptions::default(), input),
        pairs(&[("bracketsone", "hello world"), ("bracketstwo", "hello world"), ("bracketsthree", "hello world"),])
    );
    let opts = KvOptions { include_brackets: false, ..KvOptions::default() };
    assert_eq!(
        kv(opts, input),
        pairs(&[("bracketsone", "(hello"), ("bracketstwo", "[hello"), ("bracketsthree", "<hello"),])
    );
}

#[test]
fn trim_key_and_value() {
    let opts =
        KvOptions { trim_value: "<>,".into(), trim_key: "[]".into(), include_brackets: false, ..KvOptions::default() };
    assert_eq!(kv(opts, "[key1]=<value1>, key2=value2,"), pairs(&[("key1", "value1"), ("key2", "value2")]));
}

#[test]
fn remove_chars_transform_prefix() {
    let opts = KvOptions {
        remove_char_key: "-_".into(),
        remove_char_value: "<>".into(),
        transform_key: Some(Transform::Lowercase),
        transform_value: Some(Transform::Capitalize),
        prefix: "arg_".into(),
        include_brackets: false,
        ..KvOptions::default()
    };
    assert_eq!(kv(opts, "Key-1=<vAL>ue A_B=x"), pairs(&[("arg_key1", "Value"), ("arg_ab", "X")]));
    let opts = KvOptions { transform_value: Some(Transform::Uppercase), ..KvOptions::default() };
    assert_eq!(kv(opts, "a=b"), pairs(&[("a", "B")]));
}

#[test]
fn include_exclude_keys() {
    let opts = KvOptions { include_keys: vec!["foo".into(), "bar".into()], ..KvOptions::default() };
    assert_eq!(kv(opts, "foo=1 bar=2 baz=3"), pairs(&[("foo", "1"), ("bar", "2")]));
    let opts = KvOptions { exclude_keys: vec!["bar".into()], ..KvOptions::default() };
    assert_eq!(kv(opts, "foo=1 bar=2 baz=3"), pairs(&[("foo", "1"), ("baz", "3")]));
}

#[test]
fn empty_and_duplicate_values() {
    let strict = KvOptions { whitespace: Whitespace::Strict, ..KvOptions::default() };
    assert_eq!(kv(strict.clone(), "a= b=2"), pairs(&[("b", "2")]));
    let opts = KvOptions { allow_empty_values: true, ..strict };
    assert_eq!(kv(opts, "a= b=2 c=\"\""), pairs(&[("a", ""), ("b", "2"), ("c", "")]));
    assert_eq!(kv(KvOptions::default(), "a=1 a=1 a=2"), pairs(&[("a", "1"), ("a", "1"), ("a", "2")]));
    let opts = KvOptions { allow_duplicate_values: false, ..KvOptions::default() };
    assert_eq!(kv(opts, "a=1 a=1 a=2"), pairs(&[("a", "1"), ("a", "2")]));
}

#[test]
fn lenient_whitespace() {
    assert_eq!(kv(KvOptions::default(), "a = 1 junk b =2 c= 3"), pairs(&[("a", "1"), ("b", "2"), ("c", "3")]));
}

#[test]
fn value_may_contain_value_split() {
    assert_eq!(kv(KvOptions::default(), "url=http://x/?a=b next=1"), pairs(&[("url", "http://x/?a=b"), ("next", "1")]));
}

#[test]
fn quoted_value_with_escaped_quote_kept_raw() {
    assert_eq!(kv(KvOptions::default(), r#"msg="say \"hi\"" x=1"#), pairs(&[("msg", r#"say \"hi\""#), ("x", "1")]));
}

#[test]
fn unterminated_quote_reads_unquoted() {
    assert_eq!(kv(KvOptions::default(), "a=\"open b=2"), pairs(&[("a", "\"open"), ("b", "2")]));
}

#[test]
fn unicode_separators() {
    let opts = KvOptions { field_split: "│".into(), value_split: "→".into(), ..KvOptions::default() };
    assert_eq!(kv(opts, "ключ→значение│k2→v2"), pairs(&[("ключ", "значение"), ("k2", "v2")]));
}

#[test]
fn config_errors() {
    let e = KvParser::new(KvOptions { field_split: String::new(), ..KvOptions::default() }).unwrap_err();
    assert_eq!(e, KvError::EmptyFieldSplit);
    let e = KvParser::new(KvOptions { field_split: " =".into(), ..KvOptions::default() }).unwrap_err();
    assert_eq!(e, KvError::Overlap('='));
    assert_eq!(e.to_string(), "character '=' is in both field_split and value_split");
}

#[test]
fn garbage_never_panics() {
    let p = KvParser::new(KvOptions::default()).unwrap();
    for s in [
        "", "=", "==", "= =", "a", "a=", "=a", "\"", "a=\"", "a='", "a=(", "é=ü", "a=\\", "a=\"\\", "  ", "\t=\t",
        "[=]", "a=[b", "=é=",
    ] {
        let _ = p.parse(s);
    }
}
