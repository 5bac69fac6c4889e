//! The OpenAPI 3.1 document of the API, generated from the handlers'
//! `#[utoipa::path]` attributes and the request/response types' `ToSchema`
//! derives (ADR 0104): one description, served at `GET /api/v1/openapi.json`
//! and committed as `docs/openapi.json`, from which the web UI's TypeScript
//! types are generated (`web/src/api/schema.d.ts`).
//!
//! Regenerate the committed copy after changing a handler or a type:
//!
//! ```text
//! cargo run -p sluice-api --example openapi > docs/openapi.json
//! ```
//!
//! (`crates/api/tests/openapi_document.rs` fails when it differs.)

use std::sync::OnceLock;

use utoipa::openapi::extensions::ExtensionsBuilder;
use utoipa::openapi::path::Operation;
use utoipa::openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::{ContentBuilder, OpenApi as Document, PathItem, Ref, RefOr, Response, ResponseBuilder};
use utoipa::{Modify, OpenApi};

use crate::{admin, content, context, export, search, session};

/// Where the committed copy lives, relative to the repository root.
pub const COMMITTED_PATH: &str = "docs/openapi.json";

/// The command that rewrites [`COMMITTED_PATH`].
pub const REGENERATE: &str = "cargo run -p sluice-api --example openapi > docs/openapi.json";

/// What a mounted route's `x-sluice-mount` says.
const MOUNT: &str = "http source with address = \"api\"";

#[derive(OpenApi)]
#[openapi(
    info(
        title = "sluice API",
        version = "1",
        description = "The HTTP API of a sluice node: search, aggregations, fields and live tail over the node's store, \
node statistics, Prometheus metrics, and the ingest endpoints of an `http` source mounted on the API listener \
(`address = \"api\"`). Search endpoints need `Authorization: Bearer <token>` (`[api.tokens.<name>]`); every query \
runs only over the sources the token may read. With `[auth]`, users log in (password or LDAP, plus TOTP) and get a \
session cookie; every search then runs over the sources assigned to the user and their groups. Semantics and \
examples: `docs/specs/ui-api.md`. Generated from the code (`sluice-api`'s `openapi` module); do not edit by hand."
    ),
    servers((url = "http://127.0.0.1:8080")),
    modifiers(&SecuritySchemes),
    paths(
        search::search_get,
        search::search_post,
        search::aggregate,
        search::fields,
        search::tail,
        export::export,
        context::context,
        crate::openapi,
        crate::node_stats,
        crate::prometheus,
        bulk,
        ndjson,
        session::auth_config,
        session::login,
        session::login_totp,
        session::logout,
        session::me,
        session::change_password,
        session::totp_enroll,
        session::totp_confirm,
        session::recovery_codes,
        session::totp_disable,
        admin::list_users,
        admin::create_user,
        admin::get_user,
        admin::update_user,
        admin::delete_user,
        admin::unlock_user,
        admin::reset_totp,
        admin::list_groups,
        admin::create_group,
        admin::get_group,
        admin::update_group,
        admin::delete_group,
        admin::add_member,
        admin::remove_member,
        admin::list_assignments,
        admin::create_assignment,
        admin::delete_assignment,
        admin::list_tokens,
        admin::create_token,
        admin::revoke_token,
        admin::audit,
        content::list_dashboards,
        content::create_dashboard,
        content::get_dashboard,
        content::update_dashboard,
        content::delete_dashboard,
        content::dashboard_data,
        content::list_saved,
        content::create_saved,
        content::get_saved,
        content::update_saved,
        content::delete_saved,
        admin::auth_settings,
        admin::get_ldap,
        admin::put_ldap,
        admin::delete_ldap,
        admin::test_ldap,
        admin::node_stats,
    ),
    components(schemas(sluice_query::Hit, crate::error::ErrorBody))
)]
struct ApiDoc;

/// The `bearer` and `session` security schemes.
struct SecuritySchemes;

impl Modify for SecuritySchemes {
    fn modify(&self, doc: &mut Document) {
        let components = doc.components.get_or_insert_with(Default::default);
        let mut bearer = HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build();
        bearer.description = Some(
            "A user API token (`slt_…`, `POST /api/v1/tokens`) or a token of `[api.tokens.<name>]` (search endpoints only)."
                .into(),
        );
        components.add_security_scheme("bearer", SecurityScheme::Http(bearer));
        components.add_security_scheme(
            "session",
            SecurityScheme::ApiKey(ApiKey::Cookie(ApiKeyValue::with_description(
                "sluice_session",
                "Set by `POST /api/v1/auth/login`. Requests other than GET/HEAD must also send `X-CSRF-Token` (the \
`sluice_csrf` cookie / `csrf_token`).",
            ))),
        );
    }
}

/// Elasticsearch-compatible bulk ingest.
///
/// Served when an `http` source has `address = "api"` (else 404). Elasticsearch bulk format: action lines
/// (`index`, `create`) each followed by a document. Authentication is the source's own `auth_token`, not the
/// search tokens. The Elasticsearch handshake (`GET /`, `/_license`, `/_xpack`, `/_cluster/health`, `/_nodes`,
/// template and ILM set-up calls) is served as well.
#[utoipa::path(
    post,
    path = "/_bulk",
    operation_id = "bulk",
    tag = "ingest",
    request_body(content = String, content_type = "application/x-ndjson"),
    responses(
        (status = 200, description = "One item per action, in order: `{\"took\", \"errors\", \"items\"}`", body = Object),
        (status = 400, description = "The body breaks the bulk format (Elasticsearch error shape)"),
        (status = 401, description = "The source's auth_token is set and missing from the request"),
        (status = 413, description = "Body larger than max_body_bytes"),
        (status = 503, description = "The pipeline is shutting down")
    )
)]
#[allow(dead_code)]
fn bulk() {}

/// Newline-delimited JSON ingest (also `POST /`).
///
/// Served when an `http` source has `address = "api"` (else 404). One event per line; a line that is not a JSON
/// object becomes `message` tagged `_jsonparsefailure`.
#[utoipa::path(
    post,
    path = "/ndjson",
    operation_id = "ingestNdjson",
    tag = "ingest",
    request_body(content = String, content_type = "application/x-ndjson"),
    responses(
        (status = 200, description = "Events queued: `{\"accepted\", \"failed\"}`", body = Object),
        (status = 413, description = "Body larger than max_body_bytes"),
        (status = 503, description = "The pipeline is shutting down")
    )
)]
#[allow(dead_code)]
fn ndjson() {}

/// Paths whose errors are not an [`ErrorBody`](crate::ErrorBody): the
/// mounted ingest routes answer in their own shapes; this document cannot fail.
const OWN_ERRORS: &[&str] = &["/_bulk", "/ndjson", "/api/v1/openapi.json"];

/// The document, built from the code.
pub fn document() -> Document {
    let mut doc = ApiDoc::openapi();
    for (path, item) in doc.paths.paths.iter_mut() {
        // The routes another component mounts on this listener say so.
        if MOUNTED.contains(&path.as_str()) {
            if let Some(op) = item.post.as_mut() {
                let ext = ExtensionsBuilder::new().add("x-sluice-mount", MOUNT).build();
                op.extensions.get_or_insert_with(Default::default).merge(ext);
            }
        }
        // Every other operation answers its errors as an `ErrorBody`
        // (`crate::error`), said once here rather than on each handler.
        if !OWN_ERRORS.contains(&path.as_str()) {
            for op in operations(item) {
                op.responses.responses.entry("default".into()).or_insert_with(error_response);
            }
        }
    }
    doc
}

/// The routes the `http` source mounts with `address = "api"`.
const MOUNTED: &[&str] = &["/_bulk", "/ndjson"];

fn operations(item: &mut PathItem) -> impl Iterator<Item = &mut Operation> {
    [&mut item.get, &mut item.put, &mut item.post, &mut item.delete, &mut item.patch].into_iter().flatten()
}

fn error_response() -> RefOr<Response> {
    let content = ContentBuilder::new().schema(Some(Ref::from_schema_name("ErrorBody"))).build();
    ResponseBuilder::new()
        .description("An error: `{\"error\": {\"type\", \"message\"}}` with the status of its `type` (see `ErrorType`)")
        .content("application/json", content)
        .build()
        .into()
}

/// The document as pretty-printed JSON with a final newline: what is served
/// and what [`COMMITTED_PATH`] holds.
pub fn json() -> &'static str {
    static JSON: OnceLock<String> = OnceLock::new();
    JSON.get_or_init(|| {
        // INVARIANT: the document is plain data (maps, strings, numbers); serde_json cannot fail on it.
        let mut s = document().to_pretty_json().expect("the OpenAPI document serializes");
        s.push('\n');
        s
    })
}
