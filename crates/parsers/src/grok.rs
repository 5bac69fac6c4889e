//! Grok: named regex patterns (logstash-patterns-core) compiled to PCRE2.
//!
//! A grok expression such as `%{IPORHOST:clientip} %{WORD:verb}` is expanded
//! once against a [`GrokLibrary`] (the embedded legacy or ECS v1 pattern set,
//! plus user patterns) into a single JIT-compiled PCRE2 regex; matching it
//! yields typed captures ([`Captured`]) keyed by field path. The semantics
//! follow Logstash's grok filter, which the test vectors pin down:
//! - a match is an unanchored search; `.` matches newlines and `^`/`$` are
//!   line anchors (Ruby `Regexp::MULTILINE`);
//! - `%{NAME}` without a field does not capture; unset or empty captures are
//!   not reported; `:int` / `:float` convert like Ruby `to_i` / `to_f`;
//! - [`insert_captures`] merges captures into an event: nested paths become
//!   nested objects, and a capture into an existing string field (or the
//!   same field captured twice) makes an array `[existing, captured]`.
//!
//! ```
//! use sluice_parsers::grok::{get_path, insert_captures, Captured, GrokLibrary};
//! let lib = GrokLibrary::ecs_v1();
//! let p = lib.compile("%{IP:[source][ip]} %{INT:[http][response][status_code]:int}").unwrap();
//! let m = p.matches("client 10.0.0.1 200").unwrap().unwrap();
//! assert_eq!(m.get("source.ip"), Some(Captured::Str("10.0.0.1")));
//! let mut event = sluice_core::Object::new();
//! insert_captures(&mut event, &m);
//! // {"source":{"ip":"10.0.0.1"},"http":{"response":{"status_code":200}}}
//! assert_eq!(get_path(&event, "http.response.status_code").and_then(|v| v.as_i64()), Some(200));
//! ```

mod error;
mod expand;
mod insert;
mod library;
mod multi;
mod pattern;

pub use error::GrokError;
pub use insert::{get_path, insert_captures, insert_captures_from, insert_captures_with, insert_path, InsertOptions};
pub use library::GrokLibrary;
pub use multi::GrokMulti;
pub use pattern::{Captured, CompileOptions, Conversion, GrokField, GrokMatch, GrokPattern};
