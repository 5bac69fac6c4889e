//! Time bounds of a query: RFC 3339, epoch milliseconds, or relative to now
//! (`now`, `now-15m`, `now-2h`, `now-7d`).

use serde::Serialize;

/// A time range in nanoseconds since the epoch: `from` inclusive, `to` exclusive.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct TimeRange {
    /// Start (inclusive); `None` is unbounded.
    pub from_ns: Option<i64>,
    /// End (exclusive); `None` is unbounded.
    pub to_ns: Option<i64>,
}

/// A time bound that does not parse, or a range that ends before it starts.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct TimeError(pub String);

impl TimeRange {
    /// Parses both bounds.
    pub fn parse(from: Option<&str>, to: Option<&str>, now_ns: i64) -> Result<Self, TimeError> {
        let from_ns =
            from.map(|s| parse_time(s, now_ns).map_err(|e| TimeError(format!("from: {}", e.0)))).transpose()?;
        let to_ns = to.map(|s| parse_time(s, now_ns).map_err(|e| TimeError(format!("to: {}", e.0)))).transpose()?;
        if let (Some(f), Some(t)) = (from_ns, to_ns) {
            if t < f {
                return Err(TimeError("the time range ends before it starts".into()));
            }
        }
        Ok(Self { from_ns, to_ns })
    }

    /// Whether `ts` lies in the range.
    pub fn contains(&self, ts: i64) -> bool {
        self.from_ns.is_none_or(|f| ts >= f) && self.to_ns.is_none_or(|t| ts < t)
    }
}

/// Parses one time bound to nanoseconds since the epoch.
pub fn parse_time(s: &str, now_ns: i64) -> Result<i64, TimeError> {
    let s = s.trim();
    if let Some(rest) = s.strip_prefix("now") {
        if rest.is_empty() {
            return Ok(now_ns);
        }
        let (sign, amount) = match rest.as_bytes()[0] {
            b'-' => (-1i64, &rest[1..]),
            b'+' => (1i64, &rest[1..]),
            _ => return Err(TimeError(format!("invalid relative time {s:?}: expected now-<n><unit>"))),
        };
        let unit_at = amount.find(|c: char| !c.is_ascii_digit()).unwrap_or(amount.len());
        let n: i64 = amount[..unit_at].parse().map_err(|_| {
            TimeError(format!("invalid relative time {s:?}: expected a number after now{}", &rest[..1]))
        })?;
        let unit: i64 = match &amount[unit_at..] {
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            "d" => 86_400_000_000_000,
            "w" => 7 * 86_400_000_000_000,
            u => return Err(TimeError(format!("invalid relative time {s:?}: unknown unit {u:?} (use s, m, h, d, w)"))),
        };
        return Ok(now_ns.saturating_add(sign * n.saturating_mul(unit)));
    }
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
        let ms: i64 = s.parse().map_err(|_| TimeError(format!("invalid epoch milliseconds {s:?}")))?;
        return Ok(ms.saturating_mul(1_000_000));
    }
    chrono::DateTime::parse_from_rfc3339(s)
        .ok()
        .and_then(|t| t.timestamp_nanos_opt())
        .ok_or_else(|| TimeError(format!("invalid time {s:?}: expected RFC 3339, epoch milliseconds or now-<n><unit>")))
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_700_000_000_000_000_000;

    #[test]
    fn forms() {
        assert_eq!(parse_time("now", NOW).unwrap(), NOW);
        assert_eq!(parse_time("now-15m", NOW).unwrap(), NOW - 900_000_000_000);
        assert_eq!(parse_time("1700000000000", NOW).unwrap(), NOW);
        assert_eq!(parse_time("2023-11-14T22:13:20Z", NOW).unwrap(), NOW);
        assert!(parse_time("yesterday", NOW).unwrap_err().0.contains("RFC 3339"));
        assert!(parse_time("now-5y", NOW).unwrap_err().0.contains("unknown unit"));
        assert!(TimeRange::parse(Some("now"), Some("now-1h"), NOW).is_err());
    }
}
