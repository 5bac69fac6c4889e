//! Login throttling, in memory: a token bucket per client address
//! (`[auth.login_rate]`) and a failure count per user name *and* client
//! address with lockout (`[auth.lockout]`).
//!
//! A lock holds one name for one address: failures from elsewhere — a
//! password spray against `admin` from the internet — do not lock the
//! administrator out on the loopback interface or any other address
//! (issue #18). Names are counted whether or not such a user exists, so a
//! locked answer says nothing about which names are real. The state is per
//! process: a restart forgets it (an attacker cannot restart the node); an
//! admin unlocks a name for every address through the API, or with
//! `sluice user unlock` (the running node sees the `user.unlock` audit
//! record, see [`crate::Users::login`]). Both maps are pruned of expired
//! entries once they grow past [`PRUNE_AT`] so a spray of names or
//! addresses cannot exhaust memory.

use std::collections::{HashMap, VecDeque};

use parking_lot::Mutex;

use crate::config::{LockoutConfig, LoginRateConfig};

/// Entries in a map before expired ones are swept.
pub const PRUNE_AT: usize = 10_000;

#[derive(Debug, Default)]
struct NameState {
    failures: VecDeque<i64>,
    /// `(locked at, locked until)`.
    locked: Option<(i64, i64)>,
}

#[derive(Debug)]
struct Bucket {
    units: i64,
    at: i64,
}

/// Units of one attempt in a bucket.
const TOKEN: i64 = 60_000;

/// See the module doc.
#[derive(Debug)]
pub struct Limiter {
    lockout: LockoutConfig,
    rate: LoginRateConfig,
    /// Failures and locks by (name, client address).
    names: Mutex<HashMap<(String, String), NameState>>,
    addrs: Mutex<HashMap<String, Bucket>>,
}

fn ms(d: std::time::Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

fn secs_until(now: i64, until: i64) -> u64 {
    u64::try_from((until - now + 999) / 1000).unwrap_or(0).max(1)
}

impl Limiter {
    /// A limiter with the given policy.
    pub fn new(lockout: LockoutConfig, rate: LoginRateConfig) -> Self {
        Self { lockout, rate, names: Mutex::default(), addrs: Mutex::default() }
    }

    /// Takes one attempt from `addr`'s bucket; `Err(retry_after_secs)` when empty.
    pub fn attempt(&self, addr: &str, now: i64) -> Result<(), u64> {
        if self.rate.per_minute == 0 {
            return Ok(());
        }
        // Integer units: one attempt is 60 000 units, refilled at
        // `per_minute` units per millisecond (exact, no float drift).
        let per_ms = i64::from(self.rate.per_minute);
        let cap = i64::from(self.rate.burst) * TOKEN;
        let mut addrs = self.addrs.lock();
        if addrs.len() > PRUNE_AT {
            // A bucket that has refilled completely carries no state.
            addrs.retain(|_, b| b.units + (now - b.at) * per_ms < cap);
        }
        let b = addrs.entry(addr.to_string()).or_insert(Bucket { units: cap, at: now });
        b.units = (b.units + (now - b.at).max(0).saturating_mul(per_ms)).min(cap);
        b.at = now;
        if b.units >= TOKEN {
            b.units -= TOKEN;
            Ok(())
        } else {
            let wait_ms = (TOKEN - b.units + per_ms - 1) / per_ms;
            Err(secs_until(now, now + wait_ms))
        }
    }

    /// `Err((retry_after_secs, locked_at))` while `name` is locked for `addr`.
    pub fn check(&self, name: &str, addr: &str, now: i64) -> Result<(), (u64, i64)> {
        match self.names.lock().get(&key(name, addr)).and_then(|s| s.locked) {
            Some((at, until)) if until > now => Err((secs_until(now, until), at)),
            _ => Ok(()),
        }
    }

    /// When the last of `name`'s locks (any address) ends, if it is locked.
    pub fn locked_until(&self, name: &str, now: i64) -> Option<i64> {
        self.names
            .lock()
            .iter()
            .filter(|((n, _), _)| n == name)
            .filter_map(|(_, s)| s.locked.map(|(_, until)| until))
            .filter(|u| *u > now)
            .max()
    }

    /// Counts a failure of `name` from `addr`; `true` when this failure
    /// locked the name for that address.
    pub fn failure(&self, name: &str, addr: &str, now: i64) -> bool {
        if self.lockout.threshold == 0 {
            return false;
        }
        let window = ms(self.lockout.window.0);
        let mut names = self.names.lock();
        if names.len() > PRUNE_AT {
            names.retain(|_, s| {
                s.locked.is_some_and(|(_, u)| u > now) || s.failures.back().is_some_and(|t| now - t < window)
            });
        }
        let s = names.entry(key(name, addr)).or_default();
        while s.failures.front().is_some_and(|t| now - t >= window) {
            s.failures.pop_front();
        }
        s.failures.push_back(now);
        if s.failures.len() >= self.lockout.threshold as usize {
            s.failures.clear();
            s.locked = Some((now, now + ms(self.lockout.duration.0)));
            return true;
        }
        false
    }

    /// Forgets `name`'s failures and lock from `addr` (a successful login there).
    pub fn reset_for(&self, name: &str, addr: &str) {
        self.names.lock().remove(&key(name, addr));
    }

    /// Forgets `name`'s failures and locks from every address (admin unlock,
    /// deleted user).
    pub fn reset(&self, name: &str) {
        self.names.lock().retain(|(n, _), _| n != name);
    }
}

fn key(name: &str, addr: &str) -> (String, String) {
    (name.to_string(), addr.to_string())
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use sluice_core::config::HumanDuration;

    use super::*;

    fn limiter() -> Limiter {
        Limiter::new(
            LockoutConfig {
                threshold: 3,
                window: HumanDuration(Duration::from_secs(60)),
                duration: HumanDuration(Duration::from_secs(300)),
            },
            LoginRateConfig { per_minute: 6, burst: 2 },
        )
    }

    const A: &str = "10.0.0.1";

    #[test]
    fn lockout_after_threshold_within_window() {
        let l = limiter();
        assert!(!l.failure("bob", A, 0));
        assert!(!l.failure("bob", A, 30_000));
        // The first failure leaves the window: still two, not three.
        assert!(!l.failure("bob", A, 61_000));
        assert_eq!(l.check("bob", A, 61_000), Ok(()));
        assert!(l.failure("bob", A, 62_000));
        assert_eq!(l.check("bob", A, 62_000), Err((300, 62_000)));
        assert_eq!(l.check("bob", A, 361_999), Err((1, 62_000)));
        assert_eq!(l.check("bob", A, 362_000), Ok(()));
        assert_eq!(l.check("alice", A, 62_000), Ok(()));
        assert!(!l.failure("x", A, 0) && !l.failure("x", A, 0) && l.failure("x", A, 0));
        l.reset("x");
        assert_eq!(l.check("x", A, 1), Ok(()));
    }

    /// Issue #18: failures from one address lock the name for that address
    /// only; an admin unlock clears every address.
    #[test]
    fn issue_18_a_lock_holds_one_name_for_one_address() {
        let l = limiter();
        for t in 0..3 {
            l.failure("admin", "203.0.113.9", t);
        }
        assert_eq!(l.check("admin", "203.0.113.9", 10), Err((300, 2)));
        assert_eq!(l.check("admin", "127.0.0.1", 10), Ok(()));
        assert_eq!(l.locked_until("admin", 10), Some(300_002));
        // Failures spread over addresses lock none of them.
        assert!(!l.failure("admin", "127.0.0.1", 20));
        assert!(!l.failure("admin", "127.0.0.1", 21));
        assert_eq!(l.check("admin", "127.0.0.1", 22), Ok(()));
        l.reset_for("admin", "127.0.0.1");
        assert_eq!(l.check("admin", "203.0.113.9", 30), Err((300, 2)), "a success elsewhere keeps the lock");
        l.reset("admin");
        assert_eq!(l.check("admin", "203.0.113.9", 31), Ok(()));
        assert_eq!(l.locked_until("admin", 31), None);
    }

    #[test]
    fn token_bucket_per_address() {
        let l = limiter();
        assert_eq!(l.attempt("a", 0), Ok(()));
        assert_eq!(l.attempt("a", 0), Ok(()));
        assert_eq!(l.attempt("a", 0), Err(10));
        assert_eq!(l.attempt("b", 0), Ok(()));
        // 6 per minute: one token every 10 s.
        assert_eq!(l.attempt("a", 9_000), Err(1));
        assert_eq!(l.attempt("a", 10_000), Ok(()));
        assert_eq!(l.attempt("a", 10_000), Err(10));
    }
}
