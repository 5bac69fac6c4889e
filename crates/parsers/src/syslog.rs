//! Syslog message parsing: RFC 5424 and (lenient) RFC 3164.
