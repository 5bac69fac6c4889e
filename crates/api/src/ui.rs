//! The web UI, embedded in the binary and served on the API listener.
//!
//! `build.rs` turns `web/dist` (built by `scripts/web.sh build`) into the
//! static [`ASSETS`] table, so a release binary carries its UI and needs no
//! files next to it. [`serve`] answers, for `GET`/`HEAD` only:
//!
//! 1. a path that is a file of the bundle: that file, with its content type;
//!    hashed files under `/assets/` are cached for a year (`immutable`),
//!    everything else is revalidated (`no-cache` + `ETag`, `304` on a match);
//! 2. a browser navigation (`Accept` names `text/html`) to any other path
//!    outside `/api/` and `/_…`: `index.html`, so client routes such as
//!    `/search?q=…` or `/dashboards/7` survive a reload (SPA fallback);
//! 3. anything else: `None`, and the request goes on to the mounted routes.
//!
//! The API's own routes are matched before the fallback that calls this, so
//! they keep precedence. Rule 2 keys on `Accept` because `GET /` is also the
//! Elasticsearch handshake of a mounted `http` source: Beats, Logstash and
//! the Elasticsearch clients ask for JSON and still get it (ADR 0025).
//!
//! Built without a bundle, rule 2 answers a short page saying how to build
//! the UI.

use axum::body::Body;
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};

/// One file of the built UI.
#[derive(Debug)]
pub struct Asset {
    /// URL path, starting with `/` (`/index.html`, `/assets/index-3f2a.js`).
    pub path: &'static str,
    /// The file's bytes.
    pub body: &'static [u8],
    /// `Content-Type` header value.
    pub content_type: &'static str,
    /// Content-hashed name (under `/assets/`): cache forever.
    pub immutable: bool,
    /// Strong `ETag` (quoted) of the body.
    pub etag: &'static str,
}

include!(concat!(env!("OUT_DIR"), "/ui_assets.rs"));

/// Whether this binary was built with a UI bundle.
pub fn bundled() -> bool {
    ASSETS.iter().any(|a| a.path == "/index.html")
}

/// `Content-Security-Policy` of `index.html`: scripts and connections only to
/// this origin; inline styles are allowed because the chart library sizes its
/// elements with `style` attributes; images may be `data:` (the 2FA QR code).
pub const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; \
img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'";

/// The page a browser gets from a binary built without the UI.
const NOT_BUILT: &str = "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>sluice</title></head>\
<body style=\"font-family:sans-serif;max-width:40em;margin:3em auto\"><h1>sluice</h1>\
<p>This binary was built without the web UI. Build it, then rebuild sluice:</p>\
<pre>scripts/web.sh build\ncargo build --release -p sluice</pre>\
<p>(or run <code>scripts/run.sh</code>, which does both). The API is up: \
<a href=\"/api/v1/openapi.json\">/api/v1/openapi.json</a>, <a href=\"/_node/stats\">/_node/stats</a>.</p></body></html>\n";

/// Answers a UI request from the embedded bundle, or `None` to pass it on.
pub fn serve(method: &Method, path: &str, headers: &HeaderMap) -> Option<Response> {
    serve_from(ASSETS, method, path, headers)
}

/// [`serve`] over any asset table (tests use their own).
pub fn serve_from(assets: &[Asset], method: &Method, path: &str, headers: &HeaderMap) -> Option<Response> {
    if method != Method::GET && method != Method::HEAD {
        return None;
    }
    if let Some(a) = assets.iter().find(|a| a.path == path) {
        return Some(file(a, headers));
    }
    if !wants_html(headers) || path.starts_with("/api/") || path.starts_with("/_") {
        return None;
    }
    match assets.iter().find(|a| a.path == "/index.html") {
        Some(index) => Some(file(index, headers)),
        None => Some(
            (
                StatusCode::OK,
                [(header::CONTENT_TYPE, "text/html; charset=utf-8"), (header::CACHE_CONTROL, "no-cache")],
                NOT_BUILT,
            )
                .into_response(),
        ),
    }
}

/// Whether the client asks for HTML (a browser navigation).
fn wants_html(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.split(',').any(|t| t.trim().starts_with("text/html")))
}

fn file(a: &Asset, headers: &HeaderMap) -> Response {
    let cache = if a.immutable { "public, max-age=31536000, immutable" } else { "no-cache" };
    let not_modified = headers
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.split(',').any(|t| t.trim() == a.etag || t.trim() == "*"));
    let mut resp = if not_modified {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        let mut r = Response::new(Body::from(a.body));
        r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static(a.content_type));
        r
    };
    let h = resp.headers_mut();
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
    h.insert(header::ETAG, HeaderValue::from_static(a.etag));
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    if a.content_type.starts_with("text/html") {
        h.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
        h.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
        h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    }
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEST_ASSETS: &[Asset] = &[
        Asset {
            path: "/assets/index-abc123.js",
            body: b"console.log(1)",
            content_type: "text/javascript; charset=utf-8",
            immutable: true,
            etag: "\"js1\"",
        },
        Asset {
            path: "/favicon.svg",
            body: b"<svg/>",
            content_type: "image/svg+xml",
            immutable: false,
            etag: "\"ico\"",
        },
        Asset {
            path: "/index.html",
            body: b"<!doctype html><title>ui</title>",
            content_type: "text/html; charset=utf-8",
            immutable: false,
            etag: "\"idx\"",
        },
    ];

    fn hdrs(pairs: &[(header::HeaderName, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(k.clone(), HeaderValue::from_static(v));
        }
        h
    }

    const BROWSER: &str = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8";

    async fn body(r: Response) -> String {
        String::from_utf8(axum::body::to_bytes(r.into_body(), 1 << 20).await.unwrap().to_vec()).unwrap()
    }

    #[tokio::test]
    async fn hashed_assets_are_immutable_with_their_content_type() {
        let r = serve_from(TEST_ASSETS, &Method::GET, "/assets/index-abc123.js", &HeaderMap::new()).unwrap();
        assert_eq!(r.status(), 200);
        assert_eq!(r.headers()[header::CONTENT_TYPE], "text/javascript; charset=utf-8");
        assert_eq!(r.headers()[header::CACHE_CONTROL], "public, max-age=31536000, immutable");
        assert_eq!(r.headers()[header::ETAG], "\"js1\"");
        assert_eq!(body(r).await, "console.log(1)");
        let r = serve_from(TEST_ASSETS, &Method::GET, "/favicon.svg", &HeaderMap::new()).unwrap();
        assert_eq!(r.headers()[header::CONTENT_TYPE], "image/svg+xml");
        assert_eq!(r.headers()[header::CACHE_CONTROL], "no-cache");
    }

    #[tokio::test]
    async fn client_routes_fall_back_to_index_for_browsers_only() {
        for path in ["/", "/search", "/dashboards/7", "/live"] {
            let r = serve_from(TEST_ASSETS, &Method::GET, path, &hdrs(&[(header::ACCEPT, BROWSER)])).unwrap();
            assert_eq!(r.status(), 200, "{path}");
            assert_eq!(r.headers()[header::CONTENT_TYPE], "text/html; charset=utf-8");
            assert_eq!(r.headers()[header::CACHE_CONTROL], "no-cache");
            assert_eq!(r.headers()[header::CONTENT_SECURITY_POLICY], CSP);
            assert_eq!(body(r).await, "<!doctype html><title>ui</title>");
        }
        // An Elasticsearch client's handshake, curl, a POST, the API's and
        // the underscore namespaces: not the UI's.
        assert!(serve_from(TEST_ASSETS, &Method::GET, "/", &hdrs(&[(header::ACCEPT, "application/json")])).is_none());
        assert!(serve_from(TEST_ASSETS, &Method::GET, "/", &HeaderMap::new()).is_none());
        assert!(serve_from(TEST_ASSETS, &Method::POST, "/", &hdrs(&[(header::ACCEPT, BROWSER)])).is_none());
        assert!(serve_from(TEST_ASSETS, &Method::GET, "/api/v1/nope", &hdrs(&[(header::ACCEPT, BROWSER)])).is_none());
        assert!(serve_from(TEST_ASSETS, &Method::GET, "/_bulk", &hdrs(&[(header::ACCEPT, BROWSER)])).is_none());
        assert!(serve_from(TEST_ASSETS, &Method::GET, "/assets/missing.js", &HeaderMap::new()).is_none());
    }

    #[tokio::test]
    async fn etag_match_is_not_modified() {
        let h = hdrs(&[(header::IF_NONE_MATCH, "\"other\", \"idx\"")]);
        let r = serve_from(TEST_ASSETS, &Method::GET, "/index.html", &h).unwrap();
        assert_eq!(r.status(), 304);
        assert_eq!(r.headers()[header::ETAG], "\"idx\"");
        assert_eq!(body(r).await, "");
        let h = hdrs(&[(header::IF_NONE_MATCH, "\"stale\"")]);
        assert_eq!(serve_from(TEST_ASSETS, &Method::GET, "/index.html", &h).unwrap().status(), 200);
    }

    #[tokio::test]
    async fn without_a_bundle_browsers_learn_how_to_build_it() {
        let r = serve_from(&[], &Method::GET, "/", &hdrs(&[(header::ACCEPT, BROWSER)])).unwrap();
        assert_eq!(r.status(), 200);
        let b = body(r).await;
        assert!(b.contains("scripts/web.sh build"), "{b}");
        assert!(serve_from(&[], &Method::GET, "/", &HeaderMap::new()).is_none());
    }

    #[test]
    fn embedded_table_is_consistent() {
        // Whatever build.rs found: unique paths, immutable only under /assets/.
        let mut paths: Vec<_> = ASSETS.iter().map(|a| a.path).collect();
        paths.dedup();
        assert_eq!(paths.len(), ASSETS.len());
        for a in ASSETS {
            assert!(a.path.starts_with('/'), "{}", a.path);
            assert_eq!(a.immutable, a.path.starts_with("/assets/"), "{}", a.path);
            assert!(a.etag.starts_with('"') && a.etag.ends_with('"'), "{}", a.etag);
        }
        assert_eq!(bundled(), ASSETS.iter().any(|a| a.path == "/index.html"));
    }
}
