//! Pure parsers used by sources and filters. Nothing here does I/O at run time
//! (pattern files are embedded at compile time), so every parser can be fuzzed.

pub mod date;
pub mod es_bulk;
pub mod fluent_forward;
pub mod framing;
pub mod gelf;
pub mod grok;
pub mod http_auth;
pub mod kv;
pub mod loki;
pub mod lumberjack;
pub mod otlp;
pub mod splunk_hec;
pub mod syslog;
