//! Date histogram layout shared by every backend: the round intervals an
//! automatic histogram picks, interval parsing, and where the buckets of a
//! request start and how many there are (so the embedded store and
//! OpenSearch answer the same buckets for the same request).

use crate::api::{AggregationResult, Bucket};
use crate::backend::BackendError;

/// Round intervals an automatic histogram chooses from, milliseconds.
pub const AUTO_INTERVALS_MS: &[i64] = &[
    1_000,
    5_000,
    10_000,
    30_000,
    60_000,
    300_000,
    600_000,
    1_800_000,
    3_600_000,
    10_800_000,
    43_200_000,
    86_400_000,
    604_800_000,
    2_592_000_000,
    31_536_000_000,
];

/// Default number of histogram buckets.
pub const DEFAULT_BUCKETS: usize = 60;
/// Most histogram buckets a request may produce.
pub const MAX_BUCKETS: usize = 10_000;

/// Parses `"30s"`, `"5m"`, `"1h"`, `"1d"`, `"1w"` (or a number of ms) to milliseconds.
pub fn parse_interval(s: &str) -> Result<i64, BackendError> {
    let s = s.trim();
    let unit_at = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let n: i64 = s[..unit_at].parse().map_err(|_| BackendError::BadRequest(format!("invalid interval {s:?}")))?;
    let unit = match &s[unit_at..] {
        "" | "ms" => 1,
        "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        "w" => 604_800_000,
        u => return Err(BackendError::BadRequest(format!("invalid interval {s:?}: unknown unit {u:?}"))),
    };
    if n <= 0 {
        return Err(BackendError::BadRequest(format!("invalid interval {s:?}: must be positive")));
    }
    Ok(n * unit)
}

/// The smallest round interval giving at most `buckets` buckets over `[lo, hi)`.
pub fn auto_interval_ms(lo_ns: i64, hi_ns: i64, buckets: usize) -> i64 {
    let buckets = buckets.max(1) as i64;
    for &iv in AUTO_INTERVALS_MS {
        let ns = iv * 1_000_000;
        let n = bucket_count(lo_ns, hi_ns, ns);
        if n <= buckets {
            return iv;
        }
    }
    let last = *AUTO_INTERVALS_MS.last().unwrap_or(&31_536_000_000);
    let span_ms = (hi_ns - lo_ns) / 1_000_000;
    (span_ms / buckets + 1).div_euclid(last).max(1) * last
}

pub fn bucket_count(lo_ns: i64, hi_ns: i64, iv_ns: i64) -> i64 {
    let origin = lo_ns.div_euclid(iv_ns) * iv_ns;
    let end = hi_ns.max(lo_ns + 1);
    (end - origin + iv_ns - 1).div_euclid(iv_ns)
}

/// The buckets of one date histogram over a request.
pub struct HistogramLayout {
    /// Bucket width, ms.
    pub interval_ms: i64,
    /// Start of the first bucket, ns (a multiple of the width).
    pub origin_ns: i64,
    /// Buckets; 0 when there is nothing to count (no range and no match).
    pub buckets: usize,
}

impl HistogramLayout {
    /// Bucket width, ns.
    pub fn interval_ns(&self) -> i64 {
        self.interval_ms * 1_000_000
    }
}

/// Validates a date histogram and lays out its buckets over `extent`.
pub fn histogram_layout(
    name: &str,
    interval: Option<&str>,
    buckets: Option<usize>,
    extent: Option<(i64, i64)>,
) -> Result<HistogramLayout, BackendError> {
    let want = buckets.unwrap_or(DEFAULT_BUCKETS);
    if want == 0 || want > MAX_BUCKETS {
        return Err(BackendError::BadRequest(format!("{name}: buckets must be between 1 and {MAX_BUCKETS}")));
    }
    let Some((lo, hi)) = extent else {
        let interval_ms = match interval {
            Some(s) if s != "auto" => parse_interval(s)?,
            _ => AUTO_INTERVALS_MS[0],
        };
        return Ok(HistogramLayout { interval_ms, origin_ns: 0, buckets: 0 });
    };
    let interval_ms = match interval {
        Some(s) if s != "auto" => parse_interval(s)?,
        _ => auto_interval_ms(lo, hi, want),
    };
    let iv = interval_ms * 1_000_000;
    let n = bucket_count(lo, hi, iv);
    if n as usize > MAX_BUCKETS {
        return Err(BackendError::BadRequest(format!(
            "{name}: interval {interval_ms}ms gives {n} buckets (at most {MAX_BUCKETS})"
        )));
    }
    Ok(HistogramLayout { interval_ms, origin_ns: lo.div_euclid(iv) * iv, buckets: n as usize })
}

/// The response of a date histogram.
pub fn histogram_result(layout: &HistogramLayout, counts: Vec<u64>) -> AggregationResult {
    let iv = layout.interval_ns();
    let buckets = counts
        .into_iter()
        .enumerate()
        .map(|(i, count)| Bucket {
            key: serde_json::Value::from((layout.origin_ns + i as i64 * iv).div_euclid(1_000_000)),
            count,
        })
        .collect();
    AggregationResult::DateHistogram { interval_ms: layout.interval_ms, buckets }
}
