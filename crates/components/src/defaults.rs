//! Constant config defaults for `#[serde(default = "…")]`, one generic
//! function per kind instead of a three-line function per key:
//! `#[serde(default = "crate::defaults::count::<4096>")]`,
//! `"crate::defaults::mib::<10>"`, `"crate::defaults::secs::<30>"`. A zero
//! fails to compile (each is a [`Positive`]).

use std::time::Duration;

use sluice_core::config::{ByteSize, HumanDuration, Positive};

/// `N` (a count).
pub fn count<const N: usize>() -> Positive<usize> {
    const { Positive::<usize>::of(N) }
}

/// `N` (a `u32` count).
pub fn count_u32<const N: u32>() -> Positive<u32> {
    const { Positive::<u32>::of(N) }
}

/// `N` bytes.
pub fn bytes<const N: u64>() -> Positive<ByteSize> {
    const { Positive::bytes(N) }
}

/// `N` KiB.
pub fn kib<const N: u64>() -> Positive<ByteSize> {
    const { Positive::bytes(N << 10) }
}

/// `N` MiB.
pub fn mib<const N: u64>() -> Positive<ByteSize> {
    const { Positive::bytes(N << 20) }
}

/// `N` seconds.
pub fn secs<const N: u64>() -> Positive<HumanDuration> {
    const { Positive::duration(Duration::from_secs(N)) }
}

/// `N` milliseconds.
pub fn millis<const N: u64>() -> Positive<HumanDuration> {
    const { Positive::duration(Duration::from_millis(N)) }
}
