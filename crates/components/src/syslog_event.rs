//! The mapping shared by `syslog_udp` and `syslog_tcp`: one received syslog
//! message (a datagram or a stream frame) → one [`Event`].
//!
//! Why one place: both transports must produce identical events for the same
//! bytes, so a pipeline can take syslog over either without caring.
//!
//! Fields (RFC 5424 names, plus Logstash's `*_label` and `priority`):
//!
//! | field | from | type |
//! |---|---|---|
//! | `message` | MSG (trailing whitespace removed; a 5424 BOM stripped) | string |
//! | `priority` | `<PRI>` | number |
//! | `facility`, `severity` | `PRI / 8`, `PRI % 8` | number |
//! | `facility_label`, `severity_label` | `kern` … `local7`, `emerg` … `debug` | string |
//! | `hostname`, `appname`, `procid`, `msgid` | header (3164: host, tag, `[pid]`) | string |
//! | `structured_data` | `{SD-ID: {param: value}}` (a repeated SD-ID or param: last wins) | object |
//! | `syslog_version` | 5424 VERSION (absent for 3164) | number |
//! | `peer` | sender IP address | string |
//!
//! The header's HOSTNAME is also the event's identity host (`@host`): a
//! source that configures `group` / `subgroup` but not `host` keeps it, so
//! every sender is its own host (`sluice_runtime::stamp`); without a HOSTNAME
//! the source's host applies.
//!
//! Absent or NILVALUE (`-`) parts are left out, never `null`. The event
//! timestamp is the message's (3164: with `year` / `timezone` from the config),
//! else the receive time. A message that does not parse is kept: `message` is
//! the whole raw text (lossy UTF-8), it gets the tag `_syslogparsefailure`
//! and is counted in `events_failed`.

use std::cell::RefCell;
use std::net::IpAddr;
use std::sync::Arc;

use chrono::FixedOffset;
use sluice_core::component::BuildContext;
use sluice_core::config::ConfigError;
use sluice_core::event::now_ns;
use sluice_core::metrics::ComponentMetrics;
use sluice_core::value::{Object, Str, Value};
use sluice_core::{Event, Identity};
use sluice_parsers::syslog::{self, facility_name, severity_name, Options};

/// Tag on events whose text is not a syslog message.
pub(crate) const PARSE_FAILURE: &str = "_syslogparsefailure";
/// Tag on events cut at `max_message_bytes`.
pub(crate) const OVERSIZED: &str = "_oversized";

/// Parses a `timezone` setting: `UTC`, `Z`, `+HH:MM`, `-HHMM`, `+HH`.
pub(crate) fn parse_timezone(s: &str) -> Result<FixedOffset, String> {
    let t = s.trim();
    let err = || format!("invalid timezone {s:?}: expected \"UTC\" or an offset such as \"+02:00\"");
    if t.eq_ignore_ascii_case("utc") || t == "Z" {
        return FixedOffset::east_opt(0).ok_or_else(err);
    }
    sluice_parsers::date::parse_fixed_offset(t).ok_or_else(err)
}

/// The `year` / `timezone` keys both sources take (RFC 3164 timestamps have
/// neither).
#[derive(Debug, Default)]
pub(crate) struct DateKeys {
    /// Year for RFC 3164 timestamps; default: the current year, with the
    /// December/January rollover.
    pub year: Option<i32>,
    /// Zone of RFC 3164 timestamps; default UTC.
    pub timezone: Option<String>,
}

impl DateKeys {
    /// Parser options from the keys, errors naming the key.
    pub(crate) fn options(&self, cx: &BuildContext) -> Result<Options, ConfigError> {
        let mut o = Options::default();
        if let Some(y) = self.year {
            if !(1..=9999).contains(&y) {
                return Err(cx.error("year", format!("year {y} out of range 1..=9999")));
            }
            o.year = Some(y);
        }
        if let Some(tz) = &self.timezone {
            o.tz = parse_timezone(tz).map_err(|e| cx.error("timezone", e))?;
        }
        Ok(o)
    }
}

/// Builds events from raw messages, counting parse failures.
pub(crate) struct Mapper {
    pub opts: Options,
    pub source: Arc<str>,
    pub metrics: Arc<ComponentMetrics>,
}

impl Mapper {
    /// The event for one message received from `peer`.
    pub(crate) fn event(&self, raw: &[u8], peer: &Value) -> Event {
        let mut fields = Object::with_capacity(16);
        let mut ts = None;
        let mut host = None;
        let ok = match syslog::parse(raw, &self.opts) {
            Ok(m) => {
                ts = m.timestamp.and_then(|t| t.timestamp_nanos_opt());
                host = m.hostname.as_deref().map(host_identity);
                fields.push_unique(Str::new("message"), m.message.as_deref().unwrap_or("").into());
                if let Some(p) = m.priority {
                    fields.push_unique(Str::new("priority"), Value::from(p));
                }
                if let Some(f) = m.facility {
                    fields.push_unique(Str::new("facility"), Value::from(f));
                    if let Some(n) = facility_name(f) {
                        fields.push_unique(Str::new("facility_label"), n.into());
                    }
                }
                if let Some(s) = m.severity {
                    fields.push_unique(Str::new("severity"), Value::from(s));
                    if let Some(n) = severity_name(s) {
                        fields.push_unique(Str::new("severity_label"), n.into());
                    }
                }
                for (k, v) in
                    [("hostname", &m.hostname), ("appname", &m.appname), ("procid", &m.procid), ("msgid", &m.msgid)]
                {
                    if let Some(v) = v {
                        fields.push_unique(Str::new(k), Value::from(&**v));
                    }
                }
                if !m.structured_data.is_empty() {
                    let mut sd = Object::with_capacity(m.structured_data.len());
                    for el in &m.structured_data {
                        let mut params = Object::with_capacity(el.params.len());
                        for (k, v) in &el.params {
                            params.insert(&**k, &**v);
                        }
                        sd.insert(&*el.id, params.into_value());
                    }
                    fields.push_unique(Str::new("structured_data"), sd.into_value());
                }
                if let Some(v) = m.version {
                    fields.push_unique(Str::new("syslog_version"), Value::from(v));
                }
                true
            }
            Err(_) => {
                let text = String::from_utf8_lossy(raw);
                fields.push_unique(Str::new("message"), text.trim_end().into());
                false
            }
        };
        fields.push_unique(Str::new("peer"), peer.clone());
        let mut e = Event::from_fields(fields);
        e.timestamp = ts.unwrap_or_else(now_ns);
        e.source = Arc::clone(&self.source);
        if let Some(host) = host {
            e.identity = host;
        }
        if !ok {
            self.metrics.events_failed.inc();
            e.add_tag(PARSE_FAILURE);
        }
        e
    }
}

thread_local! {
    /// The identity made for the last header host on this thread: a
    /// sender's messages come in runs, so they share one instead of
    /// allocating one per message.
    static LAST_HOST: RefCell<Option<Arc<Identity>>> = const { RefCell::new(None) };
}

/// The identity carrying header host `h` (group and subgroup are the
/// source's to stamp).
fn host_identity(h: &str) -> Arc<Identity> {
    LAST_HOST.with(|last| {
        let mut last = last.borrow_mut();
        match &*last {
            Some(id) if id.host == h => Arc::clone(id),
            _ => {
                let id = Arc::new(Identity::new("", "", h));
                *last = Some(Arc::clone(&id));
                id
            }
        }
    })
}

/// The `peer` value for an address.
pub(crate) fn peer_value(ip: IpAddr) -> Value {
    // An IPv4 client of a dual-stack socket shows as ::ffff:a.b.c.d.
    let ip = match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4),
        v4 => v4,
    };
    Value::from(ip.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mapper() -> Mapper {
        let opts = Options { year: Some(2024), tz: parse_timezone("+02:00").unwrap(), ..Default::default() };
        Mapper { opts, source: Arc::from("t"), metrics: Arc::new(ComponentMetrics::new("source", "t", "t")) }
    }

    #[test]
    fn maps_5424_with_structured_data() {
        let m = mapper();
        let raw = br#"<165>1 2003-10-11T22:14:15.003Z mymachine.example.com evntslog 1234 ID47 [exampleSDID@32473 iut="3" eventSource="Application" eventID="1011"][examplePriority@32473 class="high"] An application event log entry"#;
        let e = m.event(raw, &peer_value("::ffff:10.1.2.3".parse().unwrap()));
        let j = Value::Object(e.fields().clone()).to_json();
        assert_eq!(
            j,
            r#"{"message":"An application event log entry","priority":165,"facility":20,"facility_label":"local4","severity":5,"severity_label":"notice","hostname":"mymachine.example.com","appname":"evntslog","procid":"1234","msgid":"ID47","structured_data":{"exampleSDID@32473":{"iut":"3","eventSource":"Application","eventID":"1011"},"examplePriority@32473":{"class":"high"}},"syslog_version":1,"peer":"10.1.2.3"}"#
        );
        assert_eq!(e.timestamp, 1_065_910_455_003_000_000);
        assert_eq!(*e.identity, Identity::new("", "", "mymachine.example.com"), "@host from the header");
        let again = m.event(raw, &peer_value("10.1.2.3".parse().unwrap()));
        assert!(Arc::ptr_eq(&e.identity, &again.identity), "one identity for a run of one host");
        assert_eq!(m.metrics.events_failed.get(), 0);
        let nil = m.event(b"<165>1 2003-10-11T22:14:15.003Z - app - - - no host", &Value::from("1.2.3.4"));
        assert_eq!(nil.identity.host, "", "a NILVALUE HOSTNAME leaves the host to the source");
    }

    #[test]
    fn maps_3164_with_configured_year_and_zone() {
        let m = mapper();
        let e = m.event(b"<34>Oct 11 22:14:15 mymachine su[99]: 'su root' failed\n", &Value::from("1.2.3.4"));
        assert_eq!(e.message(), Some("'su root' failed"));
        assert_eq!(e.fields().get("appname").and_then(Value::as_str), Some("su"));
        assert_eq!(e.fields().get("procid").and_then(Value::as_str), Some("99"));
        assert_eq!(e.fields().get("hostname").and_then(Value::as_str), Some("mymachine"));
        assert_eq!(e.identity.host, "mymachine");
        assert_eq!(e.fields().get("severity_label").and_then(Value::as_str), Some("crit"));
        assert!(e.fields().get("syslog_version").is_none());
        // 2024-10-11T22:14:15+02:00
        assert_eq!(e.timestamp, 1_728_677_655_000_000_000);
    }

    #[test]
    fn garbage_is_kept_tagged_and_counted() {
        let m = mapper();
        let before = now_ns();
        let e = m.event(b"<999>\xffnot syslog\n", &Value::from("1.2.3.4"));
        assert!(e.has_tag(PARSE_FAILURE));
        assert_eq!(e.message(), Some("<999>\u{fffd}not syslog"));
        assert!(e.timestamp >= before);
        assert_eq!(m.metrics.events_failed.get(), 1);
    }

    #[test]
    fn timezones() {
        assert_eq!(parse_timezone("UTC").unwrap().local_minus_utc(), 0);
        assert_eq!(parse_timezone("-0530").unwrap().local_minus_utc(), -(5 * 3600 + 30 * 60));
        assert_eq!(parse_timezone("+01").unwrap().local_minus_utc(), 3600);
        assert!(parse_timezone("Europe/Paris").is_err());
        assert!(parse_timezone("+25:00").is_err());
    }
}
