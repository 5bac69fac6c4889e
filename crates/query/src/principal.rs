//! Principals: who a query runs for, and which log sources they may read.
//!
//! A principal holds a list of [`SourcePattern`]s; an event is visible when
//! any pattern matches its identity. An empty list sees nothing. Backends
//! AND the principal's filter into every query, aggregation and tail inside
//! the store layer (not in the HTTP layer, not in the UI).

use serde::{Deserialize, Serialize};
use sluice_core::Identity;

/// A glob over one identity part: `*` matches any run of characters, `?`
/// one character; anything else matches itself. `*` alone matches all.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(transparent)]
pub struct Glob(pub String);

impl Glob {
    /// Whether `s` matches.
    pub fn matches(&self, s: &str) -> bool {
        glob_match(self.0.as_bytes(), s.as_bytes())
    }

    /// Whether this glob matches everything.
    pub fn is_any(&self) -> bool {
        self.0 == "*"
    }

    /// Whether this glob has no wildcard (an exact value).
    pub fn is_exact(&self) -> bool {
        !self.0.contains(['*', '?'])
    }
}

fn glob_match(p: &[u8], s: &[u8]) -> bool {
    // Iterative matcher with one backtrack point (classic wildcard matching).
    let (mut pi, mut si) = (0, 0);
    let (mut star, mut mark) = (None, 0);
    while si < s.len() {
        if pi < p.len() && (p[pi] == b'?' || p[pi] == s[si]) {
            pi += 1;
            si += 1;
        } else if pi < p.len() && p[pi] == b'*' {
            star = Some(pi);
            mark = si;
            pi += 1;
        } else if let Some(st) = star {
            pi = st + 1;
            mark += 1;
            si = mark;
        } else {
            return false;
        }
    }
    while pi < p.len() && p[pi] == b'*' {
        pi += 1;
    }
    pi == p.len()
}

/// Sources a principal may read: group, subgroup and host globs, all of
/// which must match. Unknown keys are rejected: a misspelt `host` must not
/// silently widen the pattern to every host.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SourcePattern {
    /// Group glob.
    pub group: Glob,
    /// Subgroup glob (`*` for all subgroups).
    #[serde(default = "any")]
    pub subgroup: Glob,
    /// Host glob (`*` for all hosts).
    #[serde(default = "any")]
    pub host: Glob,
}

fn any() -> Glob {
    Glob("*".into())
}

impl SourcePattern {
    /// A pattern from three globs.
    pub fn new(group: &str, subgroup: &str, host: &str) -> Self {
        Self { group: Glob(group.into()), subgroup: Glob(subgroup.into()), host: Glob(host.into()) }
    }

    /// Every source.
    pub fn all() -> Self {
        Self::new("*", "*", "*")
    }

    /// Whether an event with this identity is covered.
    pub fn matches(&self, id: &Identity) -> bool {
        self.group.matches(&id.group) && self.subgroup.matches(&id.subgroup) && self.host.matches(&id.host)
    }
}

/// Who a query runs for.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Principal {
    /// A name for audit logs (user name, token name).
    pub name: String,
    /// What they may read; empty means nothing.
    pub allowed: Vec<SourcePattern>,
}

impl Principal {
    /// A principal that may read `allowed`.
    pub fn new(name: impl Into<String>, allowed: Vec<SourcePattern>) -> Self {
        Self { name: name.into(), allowed }
    }

    /// Whether this principal may read events with `id`.
    pub fn may_read(&self, id: &Identity) -> bool {
        self.allowed.iter().any(|p| p.matches(id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        assert!(Glob("*".into()).matches(""));
        assert!(Glob("web-*".into()).matches("web-01"));
        assert!(!Glob("web-*".into()).matches("db-01"));
        assert!(Glob("w?b".into()).matches("web"));
        assert!(!Glob("acme".into()).matches("acme2"));
        assert!(Glob("*-prod-*".into()).matches("eu-prod-7"));
    }

    #[test]
    fn principal_sees_only_its_patterns() {
        let p = Principal::new("alice", vec![SourcePattern::new("acme", "*", "*")]);
        assert!(p.may_read(&Identity::new("acme", "web", "h1")));
        assert!(!p.may_read(&Identity::new("globex", "web", "h1")));
        assert!(!Principal::new("nobody", vec![]).may_read(&Identity::new("acme", "", "")));
    }
}
