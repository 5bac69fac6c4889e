//! Routes that components serve on the node's API listener.
//!
//! A component that speaks HTTP (the `http` source with `address = "api"`)
//! does not bind a port of its own; while it runs it *mounts* a router on the
//! node's API server. This crate does not know the HTTP library, so a mount is
//! type-erased: the component hands over an `Arc<dyn Any + Send + Sync>` (an
//! `axum::Router` in practice) together with the route patterns it serves, and
//! `sluice-api` downcasts it when it merges the mounts behind its own routes.
//!
//! Route patterns use axum's syntax (`/_bulk`, `/{index}/_bulk`,
//! `/_cluster/{*rest}`). Two patterns clash when they are equal after every
//! `{…}` segment is replaced by a placeholder; a clash is an error for the
//! component that comes second. The API server [`Mounts::reserve`]s its own
//! routes before any pipeline starts, so a component can never shadow them.
//!
//! A mount lasts as long as its [`MountGuard`]: the source drops it when it
//! stops (shutdown, reload), and the API server stops routing to it. Each
//! change bumps [`Mounts::generation`], so the server rebuilds its merged
//! router only when something changed.

use std::any::Any;
use std::sync::Arc;

use parking_lot::Mutex;

/// A router a component serves, type-erased (`axum::Router` for `sluice-api`).
pub type MountedRouter = Arc<dyn Any + Send + Sync>;

/// Why a mount was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MountError {
    /// The node has no API server (`[api] address` is empty).
    #[error("there is no API server to mount on ([api] address is empty)")]
    NoServer,
    /// A route is already served by someone else.
    #[error("route {path} is already served by {owner}")]
    Clash {
        /// The clashing route pattern.
        path: String,
        /// Who serves it (`api` or a component's key path).
        owner: String,
    },
}

/// One mounted router.
#[derive(Clone)]
pub struct Mount {
    /// Who mounted it: the component's key path (`pipelines.main.sources.http`).
    pub owner: String,
    /// The route patterns it serves.
    pub paths: Vec<String>,
    /// The router.
    pub router: MountedRouter,
    id: u64,
}

#[derive(Default)]
struct Table {
    generation: u64,
    next_id: u64,
    reserved: Vec<(String, String)>,
    mounts: Vec<Mount>,
}

/// The node's mount registry, shared by the runtime (through
/// [`crate::component::BuildContext::mounts`]) and the API server.
#[derive(Default)]
pub struct Mounts {
    address: Option<String>,
    table: Mutex<Table>,
}

impl std::fmt::Debug for Mounts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let t = self.table.lock();
        f.debug_struct("Mounts")
            .field("address", &self.address)
            .field("generation", &t.generation)
            .field("mounts", &t.mounts.iter().map(|m| (&m.owner, &m.paths)).collect::<Vec<_>>())
            .finish()
    }
}

/// A route pattern with every `{…}` segment replaced by `{}`.
fn shape(path: &str) -> String {
    path.split('/')
        .map(|seg| if seg.starts_with('{') && seg.ends_with('}') { "{}" } else { seg })
        .collect::<Vec<_>>()
        .join("/")
}

impl Mounts {
    /// A registry for an API server listening on `address` (shown to clients,
    /// e.g. in the Elasticsearch `_nodes` answer).
    pub fn new(address: impl Into<String>) -> Self {
        Self { address: Some(address.into()), table: Mutex::default() }
    }

    /// A registry of a node without an API server: every mount fails with
    /// [`MountError::NoServer`].
    pub fn disabled() -> Self {
        Self::default()
    }

    /// The API server's address, `None` when there is none.
    pub fn address(&self) -> Option<&str> {
        self.address.as_deref()
    }

    /// Bumped on every mount and unmount.
    pub fn generation(&self) -> u64 {
        self.table.lock().generation
    }

    /// Claims routes for `owner` without a router (the API server's own
    /// routes). Replaces an earlier reservation of the same owner.
    pub fn reserve(&self, owner: &str, paths: &[&str]) -> Result<(), MountError> {
        let mut t = self.table.lock();
        for p in paths {
            if let Some(m) = t.mounts.iter().find(|m| m.paths.iter().any(|q| shape(q) == shape(p))) {
                return Err(MountError::Clash { path: (*p).to_string(), owner: m.owner.clone() });
            }
        }
        t.reserved.retain(|(o, _)| o != owner);
        t.reserved.extend(paths.iter().map(|p| (owner.to_string(), (*p).to_string())));
        Ok(())
    }

    /// Mounts `router` serving `paths` for `owner` until the guard is dropped.
    /// A mount of the same owner is replaced (a reloaded component).
    pub fn mount(
        self: &Arc<Self>,
        owner: &str,
        paths: Vec<String>,
        router: MountedRouter,
    ) -> Result<MountGuard, MountError> {
        if self.address.is_none() {
            return Err(MountError::NoServer);
        }
        let mut t = self.table.lock();
        for p in &paths {
            let s = shape(p);
            if let Some((o, _)) = t.reserved.iter().find(|(_, q)| shape(q) == s) {
                return Err(MountError::Clash { path: p.clone(), owner: o.clone() });
            }
            if let Some(m) = t.mounts.iter().find(|m| m.owner != owner && m.paths.iter().any(|q| shape(q) == s)) {
                return Err(MountError::Clash { path: p.clone(), owner: m.owner.clone() });
            }
        }
        t.mounts.retain(|m| m.owner != owner);
        t.next_id += 1;
        let id = t.next_id;
        t.mounts.push(Mount { owner: owner.to_string(), paths, router, id });
        t.generation += 1;
        tracing::info!(owner, "routes mounted on the API server");
        Ok(MountGuard { mounts: Arc::clone(self), id })
    }

    /// The current mounts, in mount order, and the generation they belong to.
    pub fn snapshot(&self) -> (u64, Vec<Mount>) {
        let t = self.table.lock();
        (t.generation, t.mounts.clone())
    }
}

/// Keeps a mount alive; dropping it unmounts.
#[must_use = "the mount is removed when the guard is dropped"]
pub struct MountGuard {
    mounts: Arc<Mounts>,
    id: u64,
}

impl Drop for MountGuard {
    fn drop(&mut self) {
        let mut t = self.mounts.table.lock();
        let before = t.mounts.len();
        t.mounts.retain(|m| m.id != self.id);
        if t.mounts.len() != before {
            t.generation += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn router() -> MountedRouter {
        Arc::new(())
    }

    #[test]
    fn clashes_are_refused_and_guards_unmount() {
        let m = Arc::new(Mounts::new("127.0.0.1:8080"));
        m.reserve("api", &["/metrics", "/api/v1/search"]).unwrap();
        let err = m.mount("pipelines.a.sources.h", vec!["/metrics".into()], router()).err().unwrap();
        assert_eq!(err, MountError::Clash { path: "/metrics".into(), owner: "api".into() });
        let g = m.mount("pipelines.a.sources.h", vec!["/_bulk".into(), "/{index}/_bulk".into()], router()).unwrap();
        assert_eq!(m.generation(), 1);
        let err = m.mount("pipelines.b.sources.h", vec!["/{idx}/_bulk".into()], router()).err().unwrap();
        assert_eq!(err, MountError::Clash { path: "/{idx}/_bulk".into(), owner: "pipelines.a.sources.h".into() });
        // The same owner replaces its mount (reload); the old guard then removes nothing.
        let g2 = m.mount("pipelines.a.sources.h", vec!["/_bulk".into()], router()).unwrap();
        drop(g);
        assert_eq!(m.snapshot().1.len(), 1);
        drop(g2);
        assert_eq!(m.snapshot().1.len(), 0);
        assert_eq!(m.generation(), 3);
    }

    #[test]
    fn no_server_no_mount() {
        let m = Arc::new(Mounts::disabled());
        assert_eq!(m.mount("x", vec!["/a".into()], router()).err().unwrap(), MountError::NoServer);
    }
}
