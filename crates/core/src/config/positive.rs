//! [`Positive`]: a config number, size or duration that may not be zero,
//! rejected when the table is parsed, so a component's `build` never checks
//! `== 0` by hand and every such key reports the same message.

use std::fmt;
use std::ops::Deref;

use serde::{Deserialize, Deserializer};

use super::{ByteSize, HumanDuration};

/// A value that can be zero, and what a config key says when it is.
pub trait Zero {
    /// True for the zero value.
    fn is_zero(&self) -> bool;
    /// The message for a zero value at a config key (`"must be at least 1"`).
    const MESSAGE: &'static str;
}

/// A config value that is not zero, checked at parse time: a zero is the
/// error `<key>: must be at least 1` (counts) or `<key>: must be greater than
/// 0` (sizes, durations), with the key path from
/// [`parse_table`](super::parse_table).
///
/// Reads like the inner value: `c.max_line_bytes.0` (through [`Deref`]) or
/// `c.batch_size.get()`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Positive<T> {
    value: T,
}

impl<T: Zero> Positive<T> {
    /// `v`, or `None` when it is zero.
    pub fn new(v: T) -> Option<Self> {
        (!v.is_zero()).then_some(Self { value: v })
    }
}

impl<T: Copy> Positive<T> {
    /// The inner value (never zero).
    pub fn get(self) -> T {
        self.value
    }
}

impl<T> Deref for Positive<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.value
    }
}

impl<T: fmt::Display> fmt::Display for Positive<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.value.fmt(f)
    }
}

impl<'de, T: Zero + Deserialize<'de>> Deserialize<'de> for Positive<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Self::new(T::deserialize(d)?).ok_or_else(|| serde::de::Error::custom(T::MESSAGE))
    }
}

macro_rules! counts {
    ($($t:ty),*) => {$(
        impl Zero for $t {
            fn is_zero(&self) -> bool {
                *self == 0
            }
            const MESSAGE: &'static str = "must be at least 1";
        }
        impl Positive<$t> {
            /// A constant default; a zero fails to compile when used in a `const`.
            pub const fn of(v: $t) -> Self {
                assert!(v != 0, "Positive::of(0)");
                Self { value: v }
            }
        }
    )*};
}
counts!(u16, u32, u64, usize);

impl Zero for ByteSize {
    fn is_zero(&self) -> bool {
        self.0 == 0
    }
    const MESSAGE: &'static str = "must be greater than 0";
}

impl Positive<ByteSize> {
    /// A constant default of `bytes`; a zero fails to compile when used in a `const`.
    pub const fn bytes(bytes: u64) -> Self {
        assert!(bytes != 0, "Positive::bytes(0)");
        Self { value: ByteSize(bytes) }
    }
}

impl Zero for HumanDuration {
    fn is_zero(&self) -> bool {
        self.0.is_zero()
    }
    const MESSAGE: &'static str = "must be greater than 0";
}

impl Positive<HumanDuration> {
    /// A constant default of `d`; a zero fails to compile when used in a `const`.
    pub const fn duration(d: std::time::Duration) -> Self {
        assert!(!d.is_zero(), "Positive::duration(0)");
        Self { value: HumanDuration(d) }
    }

    /// The duration itself.
    pub fn duration_value(self) -> std::time::Duration {
        self.value.0
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::config::parse_table;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct T {
        #[serde(default)]
        n: Option<Positive<usize>>,
        #[serde(default)]
        size: Option<Positive<ByteSize>>,
        #[serde(default)]
        every: Option<Positive<HumanDuration>>,
    }

    fn parse(s: &str) -> Result<T, String> {
        parse_table::<T>(toml::from_str(s).unwrap(), "p.c").map_err(|e| e.to_string())
    }

    #[test]
    fn zero_is_rejected_with_the_key() {
        assert_eq!(parse("n = 0").unwrap_err(), "p.c.n: must be at least 1");
        assert_eq!(parse("size = \"0KiB\"").unwrap_err(), "p.c.size: must be greater than 0");
        assert_eq!(parse("size = 0").unwrap_err(), "p.c.size: must be greater than 0");
        assert_eq!(parse("every = \"0s\"").unwrap_err(), "p.c.every: must be greater than 0");
        assert_eq!(parse("every = \"0.1ns\"").unwrap_err(), "p.c.every: must be greater than 0");
    }

    #[test]
    fn other_values_pass_through() {
        let t = parse("n = 3\nsize = \"1KiB\"\nevery = \"250ms\"").unwrap();
        assert_eq!(t.n.unwrap().get(), 3);
        assert_eq!(t.size.unwrap().0, 1024);
        assert_eq!(t.every.unwrap().duration_value(), Duration::from_millis(250));
        assert!(parse("n = -1").unwrap_err().starts_with("p.c.n: "));
        const D: Positive<u32> = Positive::<u32>::of(7);
        assert_eq!(*D, 7);
    }
}
