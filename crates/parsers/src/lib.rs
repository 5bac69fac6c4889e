//! Pure parsers used by sources and filters. Nothing here does I/O at run time
//! (pattern files are embedded at compile time), so every parser can be fuzzed.

pub mod grok;
pub mod syslog;
