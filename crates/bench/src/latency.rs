//! Latency histograms (HDR, microsecond resolution, 3 significant digits,
//! up to one hour) and their summary for reports.

use std::time::Duration;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// The longest latency recorded exactly; longer values are clamped to it.
const MAX_US: u64 = 3_600_000_000;

/// A latency histogram.
#[derive(Debug, Clone)]
pub struct Latency {
    h: Histogram<u64>,
}

impl Default for Latency {
    fn default() -> Self {
        Self::new()
    }
}

/// Percentiles of a latency histogram, in milliseconds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencySummary {
    /// Events recorded.
    pub count: u64,
    /// Mean.
    pub mean_ms: f64,
    /// Median.
    pub p50_ms: f64,
    /// 90th percentile.
    pub p90_ms: f64,
    /// 99th percentile.
    pub p99_ms: f64,
    /// 99.9th percentile.
    pub p999_ms: f64,
    /// Largest.
    pub max_ms: f64,
}

impl Latency {
    /// An empty histogram.
    pub fn new() -> Self {
        // INVARIANT: the bounds are constants that hdrhistogram accepts (low 1 ≥ 1, high ≥ 2 × low, sigfig 3 ≤ 5).
        let h = Histogram::new_with_bounds(1, MAX_US, 3).expect("valid histogram bounds");
        Self { h }
    }

    /// Records one latency.
    #[inline]
    pub fn record(&mut self, d: Duration) {
        self.h.saturating_record((d.as_micros() as u64).clamp(1, MAX_US));
    }

    /// Adds every value of `other`.
    pub fn merge(&mut self, other: &Latency) {
        // Same bounds on both sides, so adding cannot fail; a failure would only lose samples.
        let _ = self.h.add(&other.h);
    }

    /// Values recorded.
    pub fn count(&self) -> u64 {
        self.h.len()
    }

    /// Empties the histogram.
    pub fn reset(&mut self) {
        self.h.reset();
    }

    /// The summary.
    pub fn summary(&self) -> LatencySummary {
        if self.h.is_empty() {
            return LatencySummary::default();
        }
        let ms = |us: u64| us as f64 / 1000.0;
        LatencySummary {
            count: self.h.len(),
            mean_ms: self.h.mean() / 1000.0,
            p50_ms: ms(self.h.value_at_quantile(0.50)),
            p90_ms: ms(self.h.value_at_quantile(0.90)),
            p99_ms: ms(self.h.value_at_quantile(0.99)),
            p999_ms: ms(self.h.value_at_quantile(0.999)),
            max_ms: ms(self.h.max()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_and_merge() {
        let mut a = Latency::new();
        for i in 1..=900u64 {
            a.record(Duration::from_micros(i));
        }
        let mut b = Latency::new();
        for _ in 0..100 {
            b.record(Duration::from_millis(500));
        }
        a.merge(&b);
        let s = a.summary();
        assert_eq!(s.count, 1000);
        assert!((s.p50_ms - 0.5).abs() < 0.01, "{s:?}");
        assert!((s.p99_ms - 500.0).abs() < 1.0, "{s:?}");
        assert!((s.max_ms - 500.0).abs() < 1.0, "{s:?}");
        assert_eq!(Latency::new().summary(), LatencySummary::default());
    }
}
