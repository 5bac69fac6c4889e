//! Event encodings shared by the network sinks (`tcp`, `udp`): ndjson (the
//! same object [`write_json`] produces for every sink) and RFC 5424 syslog.
//!
//! Not a component: it has no `SPEC`. It lives here so that `tcp` and `udp`
//! format syslog identically.
//!
//! Syslog fields are taken from the event:
//! - PRI from `facility` (0–23 or a name: `kern`, `user`, … `local7`) and
//!   `severity` (0–7 or a name: `emerg` … `debug`); a missing or unknown
//!   value falls back to `user` / `notice` (PRI 13 when both are missing);
//! - TIMESTAMP from the event time, RFC 3339 UTC, at most microseconds (the
//!   RFC allows six fractional digits);
//! - HOSTNAME from the `@host` identity, else the `hostname` field, else `-`;
//! - APP-NAME from `appname`, else `sluice`; PROCID from `procid`, MSGID from
//!   `msgid`, else `-`; header values are cut to the RFC's lengths and any
//!   character outside printable ASCII becomes `_`;
//! - no structured data (`-`); MSG is the `message` field (a non-string
//!   message is written as JSON).

use serde::Deserialize;
use sluice_core::codec::{format_timestamp, write_json};
use sluice_core::Event;
use sluice_core::Value;

/// How an event becomes bytes.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Encoding {
    /// One JSON object ([`write_json`]).
    Ndjson,
    /// One RFC 5424 syslog message.
    Syslog,
}

/// Default PRI: facility `user` (1), severity `notice` (5).
pub const DEFAULT_FACILITY: u8 = 1;
/// Default severity: `notice`.
pub const DEFAULT_SEVERITY: u8 = 5;

const FACILITIES: [(&str, u8); 26] = [
    ("kern", 0),
    ("user", 1),
    ("mail", 2),
    ("daemon", 3),
    ("auth", 4),
    ("syslog", 5),
    ("lpr", 6),
    ("news", 7),
    ("uucp", 8),
    ("cron", 9),
    ("authpriv", 10),
    ("ftp", 11),
    ("ntp", 12),
    ("security", 13),
    ("console", 14),
    ("solaris-cron", 15),
    ("local0", 16),
    ("local1", 17),
    ("local2", 18),
    ("local3", 19),
    ("local4", 20),
    ("local5", 21),
    ("local6", 22),
    ("local7", 23),
    ("audit", 13),
    ("clock", 15),
];

const SEVERITIES: [(&str, u8); 12] = [
    ("emerg", 0),
    ("panic", 0),
    ("alert", 1),
    ("crit", 2),
    ("err", 3),
    ("error", 3),
    ("warning", 4),
    ("warn", 4),
    ("notice", 5),
    ("info", 6),
    ("informational", 6),
    ("debug", 7),
];

fn code(v: Option<&Value>, names: &[(&str, u8)], max: u8, default: u8) -> u8 {
    let Some(v) = v else { return default };
    if let Some(n) = v.as_u64() {
        return u8::try_from(n).ok().filter(|n| *n <= max).unwrap_or(default);
    }
    let Some(s) = v.as_str() else { return default };
    let s = s.trim();
    if let Ok(n) = s.parse::<u8>() {
        return if n <= max { n } else { default };
    }
    names.iter().find(|(name, _)| name.eq_ignore_ascii_case(s)).map_or(default, |(_, c)| *c)
}

/// The PRI value (`facility * 8 + severity`) of an event.
pub fn priority(event: &Event) -> u8 {
    let f = code(event.fields().get(&"facility"), &FACILITIES, 23, DEFAULT_FACILITY);
    let s = code(event.fields().get(&"severity"), &SEVERITIES, 7, DEFAULT_SEVERITY);
    f * 8 + s
}

/// Appends a syslog header field: printable ASCII only, at most `max` bytes, `-` when empty.
fn push_header(out: &mut Vec<u8>, value: Option<&str>, max: usize) {
    let value = value.unwrap_or("");
    let start = out.len();
    for c in value.chars().take(max) {
        out.push(if c.is_ascii_graphic() { c as u8 } else { b'_' });
    }
    if out.len() == start {
        out.push(b'-');
    }
}

fn field_str<'a>(event: &'a Event, key: &str) -> Option<&'a str> {
    event.fields().get(&key).and_then(|v| v.as_str()).filter(|s| !s.is_empty())
}

/// Appends one RFC 5424 message (no framing, no trailing newline). With
/// `single_line`, CR and LF inside MSG become spaces so that newline framing
/// stays intact.
pub fn write_syslog(event: &Event, single_line: bool, out: &mut Vec<u8>) {
    out.push(b'<');
    out.extend_from_slice(priority(event).to_string().as_bytes());
    out.extend_from_slice(b">1 ");
    let micros = event.timestamp - event.timestamp.rem_euclid(1000);
    out.extend_from_slice(format_timestamp(micros).as_bytes());
    out.push(b' ');
    let host = Some(event.identity.host.as_str()).filter(|h| !h.is_empty()).or_else(|| field_str(event, "hostname"));
    push_header(out, host, 255);
    out.push(b' ');
    push_header(out, Some(field_str(event, "appname").unwrap_or("sluice")), 48);
    out.push(b' ');
    push_header(out, field_str(event, "procid"), 128);
    out.push(b' ');
    push_header(out, field_str(event, "msgid"), 32);
    out.extend_from_slice(b" -");
    let start = out.len() + 1;
    match event.fields().get(&sluice_core::event::MESSAGE) {
        Some(v) if v.is_str() => {
            let s = v.as_str().unwrap_or("");
            if !s.is_empty() {
                out.push(b' ');
                out.extend_from_slice(s.as_bytes());
            }
        }
        Some(v) => {
            out.push(b' ');
            v.write_json(out);
        }
        None => {}
    }
    if single_line && start <= out.len() {
        for b in &mut out[start..] {
            if *b == b'\n' || *b == b'\r' {
                *b = b' ';
            }
        }
    }
}

/// Appends `event` in `encoding` (no framing, no trailing newline).
pub fn encode(encoding: Encoding, event: &Event, single_line: bool, out: &mut Vec<u8>) {
    match encoding {
        Encoding::Ndjson => write_json(event, out),
        Encoding::Syslog => write_syslog(event, single_line, out),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_core::Identity;
    use std::sync::Arc;

    fn syslog(e: &Event, single_line: bool) -> String {
        let mut out = Vec::new();
        write_syslog(e, single_line, &mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn syslog_defaults_and_fields() {
        let mut e = Event::from_message("disk full");
        e.timestamp = 1_700_000_000_123_456_789;
        assert_eq!(syslog(&e, true), "<13>1 2023-11-14T22:13:20.123456Z - sluice - - - disk full");

        e.fields_mut().insert("facility", Value::from("local3"));
        e.fields_mut().insert("severity", Value::from(3u64));
        e.fields_mut().insert("hostname", Value::from("field-host"));
        e.fields_mut().insert("appname", Value::from("my app"));
        e.fields_mut().insert("procid", Value::from("42"));
        e.fields_mut().insert("msgid", Value::from("ID47"));
        e.fields_mut().insert("message", Value::from("line1\nline2"));
        assert_eq!(syslog(&e, true), "<155>1 2023-11-14T22:13:20.123456Z field-host my_app 42 ID47 - line1 line2");
        e.identity = Arc::new(Identity::new("g", "s", "id-host"));
        assert!(syslog(&e, false).starts_with("<155>1 2023-11-14T22:13:20.123456Z id-host "));
        assert!(syslog(&e, false).ends_with("line1\nline2"));
    }

    #[test]
    fn priority_names_numbers_and_fallbacks() {
        let mut e = Event::from_message("x");
        assert_eq!(priority(&e), 13);
        e.fields_mut().insert("facility", Value::from("kern"));
        e.fields_mut().insert("severity", Value::from("emerg"));
        assert_eq!(priority(&e), 0);
        e.fields_mut().insert("facility", Value::from("23"));
        e.fields_mut().insert("severity", Value::from("DEBUG"));
        assert_eq!(priority(&e), 191);
        e.fields_mut().insert("facility", Value::from(99u64));
        e.fields_mut().insert("severity", Value::from("loud"));
        assert_eq!(priority(&e), 13);
    }
}
