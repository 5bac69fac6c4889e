//! The search backend the API reads, replaceable while the node runs: a
//! reload that adds a `store` sink, or changes `[search]`, hands the API
//! its new backend without restarting the listener (issue #20). Requests
//! take a clone of the `Arc` at their start, so a request in flight keeps
//! the backend it began with.

use std::sync::{Arc, RwLock};

use sluice_query::SearchBackend;

/// A shared, swappable `Option<Arc<dyn SearchBackend>>`; clones see the
/// same slot. `None` makes the search routes answer `503 no_store`.
#[derive(Clone, Default)]
pub struct BackendSlot(Arc<RwLock<Option<Arc<dyn SearchBackend>>>>);

impl BackendSlot {
    /// The backend now in the slot.
    pub fn get(&self) -> Option<Arc<dyn SearchBackend>> {
        // A writer cannot panic while holding the lock (it only assigns),
        // so a poisoned lock still holds a whole value.
        self.0.read().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }

    /// Puts `backend` in the slot; requests that start afterwards use it.
    pub fn set(&self, backend: Option<Arc<dyn SearchBackend>>) {
        *self.0.write().unwrap_or_else(std::sync::PoisonError::into_inner) = backend;
    }
}

impl std::fmt::Debug for BackendSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BackendSlot").field("set", &self.get().is_some()).finish()
    }
}
