//! Config primitives shared by every component: human durations ("5s",
//! "250ms"), sizes ("64MiB"), socket addresses, and [`ConfigError`], which
//! always names the key path it is about (`pipelines.main.sinks.out.path`).

use std::fmt;
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::Deserialize;

mod positive;
pub use positive::{Positive, Zero};

/// A config problem at a key path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// Dotted key path from the root of the config file.
    pub path: String,
    /// What is wrong there.
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.path, self.message)
        }
    }
}

impl std::error::Error for ConfigError {}

impl ConfigError {
    /// An error at `path`.
    pub fn new(path: impl Into<String>, message: impl Into<String>) -> Self {
        Self { path: path.into(), message: message.into() }
    }

    /// The same error below `prefix`.
    pub fn under(mut self, prefix: &str) -> Self {
        self.path = join_path(prefix, &self.path);
        self
    }
}

/// Joins two key paths with a dot, skipping empty parts.
pub fn join_path(prefix: &str, rest: &str) -> String {
    match (prefix.is_empty(), rest.is_empty() || rest == ".") {
        (true, _) => rest.to_string(),
        (false, true) => prefix.to_string(),
        (false, false) => format!("{prefix}.{rest}"),
    }
}

/// Deserializes a component's config table into `T`, reporting the key path of
/// the first error below `prefix`. Unknown keys are errors when `T` has
/// `#[serde(deny_unknown_fields)]`, which every component config has.
pub fn parse_table<T: DeserializeOwned>(value: toml::Value, prefix: &str) -> Result<T, ConfigError> {
    serde_path_to_error::deserialize::<_, T>(value).map_err(|e| {
        let path = e.path().to_string();
        // The TOML deserializer appends "in `key`" lines; the path says that already.
        let msg = e.inner().to_string().lines().next().unwrap_or_default().trim().to_string();
        ConfigError::new(join_path(prefix, &path), msg)
    })
}

/// A duration written as `"500ms"`, `"5s"`, `"2m"`, `"1h"`, `"1d"` or a plain
/// number of seconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct HumanDuration(pub Duration);

impl HumanDuration {
    /// Parses the textual form.
    pub fn parse(s: &str) -> Result<Self, String> {
        let s = s.trim();
        let split = s.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(s.len());
        let (num, unit) = s.split_at(split);
        let n: f64 =
            num.parse().map_err(|_| format!("invalid duration {s:?}: expected e.g. \"500ms\", \"5s\", \"1m\""))?;
        let secs = match unit.trim() {
            "ns" => n / 1e9,
            "us" | "µs" => n / 1e6,
            "ms" => n / 1e3,
            "" | "s" => n,
            "m" => n * 60.0,
            "h" => n * 3600.0,
            "d" => n * 86400.0,
            u => return Err(format!("invalid duration unit {u:?} in {s:?}: use ns, us, ms, s, m, h or d")),
        };
        if !secs.is_finite() || secs < 0.0 {
            return Err(format!("invalid duration {s:?}"));
        }
        Ok(Self(Duration::from_secs_f64(secs)))
    }
}

impl<'de> Deserialize<'de> for HumanDuration {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = HumanDuration;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a duration such as \"5s\" or \"250ms\"")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<HumanDuration, E> {
                HumanDuration::parse(v).map_err(E::custom)
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<HumanDuration, E> {
                u64::try_from(v)
                    .map(|s| HumanDuration(Duration::from_secs(s)))
                    .map_err(|_| E::custom("negative duration"))
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<HumanDuration, E> {
                HumanDuration::parse(&v.to_string()).map_err(E::custom)
            }
        }
        d.deserialize_any(V)
    }
}

/// A size in bytes written as `"64MiB"`, `"1GB"`, `"512k"` or a plain number.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct ByteSize(pub u64);

impl ByteSize {
    /// Parses the textual form (KiB/MiB/GiB are powers of 1024, KB/MB/GB of 1000, K/M/G of 1024).
    pub fn parse(s: &str) -> Result<Self, String> {
        let s = s.trim();
        let split = s.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(s.len());
        let (num, unit) = s.split_at(split);
        let n: f64 = num.parse().map_err(|_| format!("invalid size {s:?}: expected e.g. \"64MiB\""))?;
        let mult: f64 = match unit.trim().to_ascii_lowercase().as_str() {
            "" | "b" => 1.0,
            "k" | "kib" => 1024.0,
            "kb" => 1e3,
            "m" | "mib" => 1024.0 * 1024.0,
            "mb" => 1e6,
            "g" | "gib" => 1024.0 * 1024.0 * 1024.0,
            "gb" => 1e9,
            "t" | "tib" => 1024.0f64.powi(4),
            "tb" => 1e12,
            u => {
                return Err(format!("invalid size unit {u:?} in {s:?}: use B, KiB, MiB, GiB, TiB (or KB, MB, GB, TB)"))
            }
        };
        let v = n * mult;
        if !v.is_finite() || v < 0.0 {
            return Err(format!("invalid size {s:?}"));
        }
        Ok(Self(v as u64))
    }
}

impl<'de> Deserialize<'de> for ByteSize {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = ByteSize;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a size such as \"64MiB\" or a number of bytes")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<ByteSize, E> {
                ByteSize::parse(v).map_err(E::custom)
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<ByteSize, E> {
                u64::try_from(v).map(ByteSize).map_err(|_| E::custom("negative size"))
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(HumanDuration::parse("250ms").unwrap().0, Duration::from_millis(250));
        assert_eq!(HumanDuration::parse("2m").unwrap().0, Duration::from_secs(120));
        assert_eq!(HumanDuration::parse("1.5").unwrap().0, Duration::from_millis(1500));
        assert!(HumanDuration::parse("5 parsecs").unwrap_err().contains("invalid duration unit"));
    }

    #[test]
    fn sizes() {
        assert_eq!(ByteSize::parse("64MiB").unwrap().0, 64 << 20);
        assert_eq!(ByteSize::parse("1GB").unwrap().0, 1_000_000_000);
        assert_eq!(ByteSize::parse("512k").unwrap().0, 512 << 10);
        assert!(ByteSize::parse("lots").is_err());
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct T {
        a: u32,
        #[serde(default)]
        d: Option<HumanDuration>,
    }

    #[test]
    fn parse_table_names_the_key() {
        let v: toml::Value = toml::from_str("a = 1\nbogus = 2").unwrap();
        let e = parse_table::<T>(v, "pipelines.main.sinks.x").unwrap_err();
        assert!(e.to_string().starts_with("pipelines.main.sinks.x"), "{e}");
        assert!(e.to_string().contains("unknown field `bogus`"), "{e}");
        let v: toml::Value = toml::from_str("a = 1\nd = \"5 years\"").unwrap();
        let e = parse_table::<T>(v, "p").unwrap_err();
        assert_eq!(e.path, "p.d");
    }
}
