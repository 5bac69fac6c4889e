//! Grok: named regex patterns (logstash-patterns-core) compiled to PCRE2.
