//! The open-file limit, raised at start.
//!
//! Why: every connection takes a descriptor, and distributions start
//! services with a soft limit of 1,024 although the hard limit is usually
//! 524,288 or more. A process may raise its soft limit up to the hard one
//! without privileges, so the node does, once, before it listens anywhere,
//! and logs both figures. The accept loops handle the limit being reached
//! anyway ([`crate::listener`]).

use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};

/// The soft limit before and after, and the hard limit (`None`: unlimited).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NofileLimits {
    /// Soft limit found at start.
    pub before: Option<u64>,
    /// Soft limit now.
    pub after: Option<u64>,
    /// Hard limit.
    pub hard: Option<u64>,
}

/// Linux refuses a soft limit above `fs.nr_open` (1,048,576 by default),
/// which an "unlimited" hard limit does not tell.
const UNLIMITED_CAP: u64 = 1 << 20;

/// Raises the soft `RLIMIT_NOFILE` to the hard limit (or to 2^20 when the
/// hard limit is unlimited). Never lowers it.
pub fn raise_nofile() -> std::io::Result<NofileLimits> {
    let before = getrlimit(Resource::Nofile);
    let target = before.maximum.unwrap_or(UNLIMITED_CAP);
    if before.current.is_some_and(|c| c < target) {
        setrlimit(Resource::Nofile, Rlimit { current: Some(target), maximum: before.maximum })?;
    }
    let after = getrlimit(Resource::Nofile);
    Ok(NofileLimits { before: before.current, after: after.current, hard: after.maximum })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raises_to_the_hard_limit_and_never_lowers() {
        let l = raise_nofile().unwrap();
        assert_eq!(l.after, l.hard.or(Some(UNLIMITED_CAP)).max(l.before));
        assert_eq!(raise_nofile().unwrap().before, l.after);
    }
}
