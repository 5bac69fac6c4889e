//! Serving the routers components mounted (see [`sluice_core::mount`]).
//!
//! The API's own routes are matched first, then the web UI ([`crate::ui`]);
//! anything else falls through to the merged router of every current mount. The merge is rebuilt only when
//! the registry's generation changed (a source started or stopped). A mount
//! that is not an `axum::Router`, or that cannot be merged, is skipped and
//! logged — it never takes the API down.

use std::sync::{Arc, Mutex};

use axum::extract::{Request, State};
use axum::http::Method;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use sluice_core::mount::Mounts;
use tower::ServiceExt as _;

use crate::error::ApiError;
use crate::ApiState;

/// The merged router of the current mounts, with the generation it was built for.
#[derive(Default)]
pub(crate) struct MountCache {
    current: Mutex<Option<(u64, Router)>>,
}

impl MountCache {
    fn router(&self, mounts: &Mounts) -> Router {
        let generation = mounts.generation();
        let mut cur = self.current.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((g, r)) = &*cur {
            if *g == generation {
                return r.clone();
            }
        }
        let (generation, list) = mounts.snapshot();
        let mut merged = Router::new();
        let mut has_root = false;
        for m in &list {
            let Some(r) = m.router.downcast_ref::<Router>() else {
                tracing::error!(owner = %m.owner, "mounted router is not an axum::Router; skipped");
                continue;
            };
            let attempt = merged.clone();
            let r = r.clone();
            match std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || attempt.merge(r))) {
                Ok(next) => {
                    merged = next;
                    has_root |= m.paths.iter().any(|p| p == "/");
                }
                Err(_) => tracing::error!(owner = %m.owner, "mounted routes conflict with another mount; skipped"),
            }
        }
        if !has_root {
            merged = merged.route("/", get(|| async { "sluice\n" }));
        }
        let merged = merged.fallback(not_found);
        *cur = Some((generation, merged.clone()));
        merged
    }
}

async fn not_found(method: Method, req: Request) -> Response {
    ApiError::NotFound(format!("no route for {method} {}", req.uri().path())).into_response()
}

/// The API router's fallback: the web UI's files and client routes
/// ([`crate::ui`]), then the mounts.
pub(crate) async fn dispatch(State(s): State<ApiState>, req: Request) -> Response {
    if let Some(resp) = crate::ui::serve(req.method(), req.uri().path(), req.headers()) {
        return resp;
    }
    let router = s.mounted.router(&s.mounts);
    match router.oneshot(req).await {
        Ok(r) => r,
        Err(never) => match never {},
    }
}

/// Reserves the API's own routes in `mounts`, so no component can mount on them.
pub fn reserve_routes(mounts: &Arc<Mounts>) -> Result<(), sluice_core::mount::MountError> {
    let mut paths: Vec<&str> = crate::ROUTES.iter().map(|(_, p)| *p).collect();
    paths.dedup();
    mounts.reserve("api", &paths)
}
