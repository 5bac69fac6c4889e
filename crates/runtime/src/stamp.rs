//! The identity a source stamps on what it emits (`group`, `subgroup`,
//! `host` in the source's table) and how it meets the identity an event
//! already carries.
//!
//! - Nothing configured: events keep their own identity (an agent's, an
//!   ingest token's, a syslog header's host).
//! - `group` / `subgroup` configured: they replace the event's — the tenant
//!   is the receiving side's decision, never the sender's.
//! - `host` configured (*pinned*): it replaces the event's host too.
//!   Not pinned: the event's own host is kept when it has one (a syslog
//!   header's HOSTNAME, an agent's host), as rsyslog and Graylog do, so
//!   senders behind one source stay apart; otherwise this machine's host
//!   name. A sender can name any host *inside* the pinned group; pin `host`
//!   where that matters.

use std::sync::Arc;

use sluice_core::{Event, Identity};

/// A source's configured identity.
#[derive(Debug, Clone, PartialEq)]
pub struct SourceIdentity {
    /// The configured parts; `host` is this machine's name when not pinned.
    identity: Arc<Identity>,
    /// `host` was configured.
    host_pinned: bool,
}

impl SourceIdentity {
    /// None when none of `group`, `subgroup` and `host` is configured.
    pub fn new(group: Option<String>, subgroup: Option<String>, host: Option<String>) -> Option<Self> {
        if group.is_none() && subgroup.is_none() && host.is_none() {
            return None;
        }
        let host_pinned = host.is_some();
        let host = host.or_else(crate::config::hostname).unwrap_or_default();
        let identity = Arc::new(Identity::new(group.unwrap_or_default(), subgroup.unwrap_or_default(), host));
        Some(Self { identity, host_pinned })
    }

    /// The configured identity (host: the pinned one or this machine's).
    pub fn identity(&self) -> &Arc<Identity> {
        &self.identity
    }

    /// Stamps a batch. Events of one sender come in runs, so the identity
    /// made for a kept host is reused while the host stays the same.
    pub fn stamp(&self, events: &mut [Event]) {
        let mut last: Option<Arc<Identity>> = None;
        for e in events.iter_mut() {
            if self.host_pinned || e.identity.host.is_empty() {
                e.identity = Arc::clone(&self.identity);
                continue;
            }
            if e.identity.group == self.identity.group && e.identity.subgroup == self.identity.subgroup {
                continue;
            }
            let id = match &last {
                Some(id) if id.host == e.identity.host => Arc::clone(id),
                _ => {
                    let id = Arc::new(Identity::new(
                        self.identity.group.clone(),
                        self.identity.subgroup.clone(),
                        e.identity.host.clone(),
                    ));
                    last = Some(Arc::clone(&id));
                    id
                }
            };
            e.identity = id;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(host: &str) -> Event {
        let mut e = Event::from_message("m");
        e.identity = Arc::new(Identity::new("sender-group", "sender-sub", host));
        e
    }

    #[test]
    fn host_defaults_to_the_hostname_when_identity_is_configured() {
        let me = crate::config::hostname().unwrap();
        assert!(!me.is_empty());
        let id = SourceIdentity::new(Some("acme".into()), None, None).unwrap();
        assert_eq!(**id.identity(), Identity::new("acme", "", me.clone()));
        let id = SourceIdentity::new(None, Some("web".into()), None).unwrap();
        assert_eq!(id.identity().host, me);
        let id = SourceIdentity::new(Some("acme".into()), Some("web".into()), Some("db1".into())).unwrap();
        assert_eq!(**id.identity(), Identity::new("acme", "web", "db1"));
        assert!(SourceIdentity::new(None, None, None).is_none(), "unconfigured: the events' own identity is kept");
    }

    #[test]
    fn an_unpinned_host_is_the_senders_and_group_and_subgroup_are_the_sources() {
        let me = crate::config::hostname().unwrap();
        let id = SourceIdentity::new(Some("acme".into()), Some("web".into()), None).unwrap();
        let mut batch = vec![event("router-1"), event("router-1"), event(""), event("router-2")];
        id.stamp(&mut batch);
        let got: Vec<Identity> = batch.iter().map(|e| (*e.identity).clone()).collect();
        assert_eq!(
            got,
            vec![
                Identity::new("acme", "web", "router-1"),
                Identity::new("acme", "web", "router-1"),
                Identity::new("acme", "web", me),
                Identity::new("acme", "web", "router-2"),
            ]
        );
        assert!(Arc::ptr_eq(&batch[0].identity, &batch[1].identity), "one identity per run of a host");
    }

    #[test]
    fn a_pinned_host_replaces_the_senders() {
        let id = SourceIdentity::new(Some("acme".into()), None, Some("gw".into())).unwrap();
        let mut batch = vec![event("router-1"), event("")];
        id.stamp(&mut batch);
        assert!(batch.iter().all(|e| *e.identity == Identity::new("acme", "", "gw")));
    }
}
