//! Outlier ejection and slow-start for the receivers of a `sluice` sink (a
//! dispatcher's processors): pure bookkeeping over `Instant`s, no I/O, so it
//! is tested deterministically.
//!
//! Why: a processor that keeps failing (its connection drops, it answers
//! `retry`, its acks are slower than `slow_ack`) would otherwise get its
//! share of batches and delay or bounce each of them. After
//! `consecutive_failures` in a row it is *ejected*: it gets no new batch for
//! `ejection_time` (× the number of times it was ejected, at most 10×); the
//! batches it holds stay with it (they are acknowledged or failed over as
//! usual). At most `max_ejected_percent` of the pool is ejected at once (at
//! least one receiver always stays), so a pool-wide slowdown does not empty
//! the pool.
//!
//! A receiver that returns — ejection over, reconnected after a failure, or
//! added at run time — starts *slowly*: for `slow_start` it is admitted only
//! for a fraction of the batches the balancer gives it, growing linearly
//! from 10 % to 100 %, so a cold processor (empty caches, a queue replaying
//! its backlog) is not flooded at once.

use std::time::{Duration, Instant};

use serde::Deserialize;
use sluice_core::config::{HumanDuration, Positive};

/// `outlier_detection = { … }` on a `sluice` sink.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutlierConfig {
    /// Failures in a row that eject a receiver (lost connection, `retry`
    /// ack, an ack slower than `slow_ack`); a good ack resets the count.
    #[serde(default = "crate::defaults::count_u32::<3>")]
    pub consecutive_failures: Positive<u32>,
    /// An ack slower than this counts as a failure (`"0s"`: latency never does).
    #[serde(default = "default_slow_ack")]
    pub slow_ack: HumanDuration,
    /// How long the first ejection lasts; the n-th lasts n times this (at most 10×).
    #[serde(default = "crate::defaults::secs::<10>")]
    pub ejection_time: Positive<HumanDuration>,
    /// Most receivers ejected at once, in percent of the pool (rounded down;
    /// one receiver is never ejected alone).
    #[serde(default = "default_max_ejected")]
    pub max_ejected_percent: u32,
}

fn default_slow_ack() -> HumanDuration {
    HumanDuration(Duration::from_secs(2))
}
fn default_max_ejected() -> u32 {
    50
}

impl OutlierConfig {
    /// How many of `members` may be ejected at once.
    pub fn max_ejected(&self, members: usize) -> usize {
        members * self.max_ejected_percent.min(100) as usize / 100
    }
}

/// One receiver's health.
#[derive(Debug, Default, Clone)]
pub struct Health {
    failures: u32,
    ejections: u32,
    ejected_until: Option<Instant>,
    ramp_from: Option<Instant>,
}

/// The admission fraction a returning receiver starts with.
const RAMP_FLOOR: f64 = 0.1;

impl Health {
    /// A good ack: the failure count starts again.
    pub fn success(&mut self) {
        self.failures = 0;
    }

    /// A failure; `true` when it reaches the threshold (the caller decides
    /// whether the pool can afford an ejection and calls [`Health::eject`]).
    pub fn failure(&mut self, cfg: &OutlierConfig) -> bool {
        self.failures = self.failures.saturating_add(1);
        self.failures >= cfg.consecutive_failures.get()
    }

    /// Ejects the receiver from `now`; returns for how long.
    pub fn eject(&mut self, now: Instant, cfg: &OutlierConfig) -> Duration {
        self.ejections = self.ejections.saturating_add(1);
        self.failures = 0;
        let d = cfg.ejection_time.0 * self.ejections.min(10);
        self.ejected_until = Some(now + d);
        d
    }

    /// Whether the receiver is ejected at `now`; when its ejection just
    /// ended it starts its slow-start.
    pub fn ejected(&mut self, now: Instant) -> bool {
        match self.ejected_until {
            Some(t) if now < t => true,
            Some(_) => {
                self.ejected_until = None;
                self.ramp_from = Some(now);
                false
            }
            None => false,
        }
    }

    /// Whether it is ejected, without ending an expired ejection.
    pub fn is_ejected(&self, now: Instant) -> bool {
        self.ejected_until.is_some_and(|t| now < t)
    }

    /// The receiver (re)joined at `now`: slow-start begins.
    pub fn returned(&mut self, now: Instant) {
        self.ramp_from = Some(now);
    }

    /// The fraction of the batches the balancer gives it that it takes, at
    /// `now`: 1.0 outside a slow-start (or with `slow_start` zero).
    pub fn admission(&mut self, now: Instant, slow_start: Duration) -> f64 {
        let Some(from) = self.ramp_from else { return 1.0 };
        if slow_start.is_zero() {
            self.ramp_from = None;
            return 1.0;
        }
        let f = now.saturating_duration_since(from).as_secs_f64() / slow_start.as_secs_f64();
        if f >= 1.0 {
            self.ramp_from = None;
            return 1.0;
        }
        RAMP_FLOOR + (1.0 - RAMP_FLOOR) * f
    }

    /// Times ejected so far.
    pub fn ejections(&self) -> u32 {
        self.ejections
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> OutlierConfig {
        toml::from_str("consecutive_failures = 3\nejection_time = \"10s\"").unwrap()
    }

    #[test]
    fn three_failures_in_a_row_eject_and_a_success_resets() {
        let c = cfg();
        let mut h = Health::default();
        assert!(!h.failure(&c));
        assert!(!h.failure(&c));
        h.success();
        assert!(!h.failure(&c));
        assert!(!h.failure(&c));
        assert!(h.failure(&c), "third in a row");
        let t0 = Instant::now();
        assert_eq!(h.eject(t0, &c), Duration::from_secs(10));
        assert!(h.ejected(t0 + Duration::from_secs(9)));
        assert!(!h.ejected(t0 + Duration::from_secs(10)), "over after ejection_time");
        // The second ejection lasts twice as long.
        for _ in 0..3 {
            h.failure(&c);
        }
        assert_eq!(h.eject(t0, &c), Duration::from_secs(20));
        assert_eq!(h.ejections(), 2);
    }

    #[test]
    fn slow_start_ramps_from_ten_percent_to_all_after_an_ejection() {
        let c = cfg();
        let mut h = Health::default();
        let t0 = Instant::now();
        assert_eq!(h.admission(t0, Duration::from_secs(10)), 1.0, "no ramp without a return");
        h.eject(t0, &c);
        assert!(h.ejected(t0));
        let back = t0 + Duration::from_secs(10);
        assert!(!h.ejected(back));
        let ss = Duration::from_secs(10);
        assert!((h.admission(back, ss) - 0.1).abs() < 1e-9);
        assert!((h.admission(back + Duration::from_secs(5), ss) - 0.55).abs() < 1e-9);
        assert_eq!(h.admission(back + Duration::from_secs(10), ss), 1.0);
        assert_eq!(h.admission(back, ss), 1.0, "the ramp is over for good");
        h.returned(back);
        assert_eq!(h.admission(back, Duration::ZERO), 1.0, "slow_start = 0 turns it off");
    }

    #[test]
    fn at_most_max_ejected_percent_of_the_pool() {
        let c = cfg();
        assert_eq!(c.max_ejected(1), 0, "a lone receiver is never ejected");
        assert_eq!(c.max_ejected(2), 1);
        assert_eq!(c.max_ejected(4), 2);
        assert_eq!(c.max_ejected(5), 2);
    }
}
