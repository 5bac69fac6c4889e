//! Finds the run id and sequence number again in whatever a pipeline made
//! of a generated event: the original JSON (`"seq":42`), a line
//! (`seq=42`), structured data (`seq="42"`), or the event re-serialised as a
//! string inside another JSON document (`\"seq\":42`). The first `seq` key
//! followed by `:` or `=` and digits wins; every template writes the same
//! number wherever it appears, so which occurrence is found does not matter.

use memchr::memmem;

/// Skips quotes, backslashes and spaces.
fn skip_noise(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && matches!(b[i], b'"' | b'\\' | b' ') {
        i += 1;
    }
    i
}

/// The value position after `key` followed by `:` or `=` (quotes and
/// escapes allowed around both), for the first such occurrence.
fn value_after(line: &[u8], finder: &memmem::Finder<'_>) -> Option<usize> {
    let klen = finder.needle().len();
    for at in finder.find_iter(line) {
        // A key starts at a boundary (`seq` in `subseq=` is not it).
        if at > 0 && (line[at - 1].is_ascii_alphanumeric() || line[at - 1] == b'_') {
            continue;
        }
        let i = skip_noise(line, at + klen);
        if i < line.len() && (line[i] == b':' || line[i] == b'=') {
            return Some(skip_noise(line, i + 1));
        }
    }
    None
}

/// The sequence number in `line`, if any.
pub fn seq(line: &[u8]) -> Option<u64> {
    static FINDER: std::sync::OnceLock<memmem::Finder<'static>> = std::sync::OnceLock::new();
    let f = FINDER.get_or_init(|| memmem::Finder::new(b"seq"));
    let mut i = value_after(line, f)?;
    let start = i;
    let mut n: u64 = 0;
    while i < line.len() && line[i].is_ascii_digit() {
        n = n.checked_mul(10)?.checked_add(u64::from(line[i] - b'0'))?;
        i += 1;
    }
    (i > start).then_some(n)
}

/// The run id in `line`, if any (letters, digits, `-`, `_`).
pub fn run(line: &[u8]) -> Option<&[u8]> {
    static FINDER: std::sync::OnceLock<memmem::Finder<'static>> = std::sync::OnceLock::new();
    let f = FINDER.get_or_init(|| memmem::Finder::new(b"run"));
    let start = value_after(line, f)?;
    let mut i = start;
    while i < line.len() && (line[i].is_ascii_alphanumeric() || line[i] == b'-' || line[i] == b'_') {
        i += 1;
    }
    (i > start).then(|| &line[start..i])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_seq_in_every_shape() {
        assert_eq!(seq(br#"{"a":1,"run":"r1","seq":42}"#), Some(42));
        assert_eq!(seq(b"GET /x?run=r1&seq=7 HTTP/1.1"), Some(7));
        assert_eq!(seq(br#"[bench run="r1" seq="9"] event"#), Some(9));
        assert_eq!(seq(br#"{"message":"{\"seq\":12,\"run\":\"r1\"}"}"#), Some(12));
        assert_eq!(seq(br#"{"subseq":3,"seq" : 4}"#), Some(4));
        assert_eq!(seq(b"no sequence here"), None);
        assert_eq!(seq(b"seq= x"), None);
        assert_eq!(seq(b"seq=99999999999999999999999"), None, "overflow is not a number");
    }

    #[test]
    fn finds_run() {
        assert_eq!(run(br#"{"run":"r1a2","seq":42}"#), Some(&b"r1a2"[..]));
        assert_eq!(run(b"x run=r-9_z seq=1"), Some(&b"r-9_z"[..]));
        assert_eq!(run(br#"{"rerun":"x"}"#), None);
        assert_eq!(run(b"run=\n"), None);
    }
}
