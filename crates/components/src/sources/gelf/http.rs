//! `mode = "http"` of the `gelf` source: `POST /gelf`, one GELF payload per
//! request, as Graylog's GELF HTTP input takes it (see the parent module).

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::response::Response;
use axum::Router;
use sluice_net::HttpTimeouts;

use super::*;
use crate::http_body::{self, BodyError};

/// Shared by every request.
struct Shared {
    cx: SourceContext,
    decoder: Decoder,
    max_message: usize,
    auth: AuthMode,
    tokens: Vec<IngestToken>,
    identity: Arc<Identity>,
    auth_failures: Arc<Counter>,
    browser_refused: Arc<Counter>,
    bad_requests: Arc<Counter>,
    body_too_large: Arc<Counter>,
}

fn text(status: StatusCode, body: String) -> Response {
    let mut r = Response::new(Body::from(body));
    *r.status_mut() = status;
    r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
    r
}

impl Gelf {
    pub(super) async fn run_http(self: Box<Self>, cx: SourceContext) -> Result<(), BoxError> {
        let listener = TcpListener::bind(self.address).await.map_err(|e| format!("bind {}: {e}", self.address))?;
        let local = listener.local_addr()?;
        tracing::info!(source = %cx.id, address = %local, tls = self.tls.is_some(), "gelf source listening (http)");
        let listener = Listener::new(listener, &cx.id, self.max_connections, ListenerCounters::of(&cx.metrics));
        let m = &cx.metrics;
        let shared = Arc::new(Shared {
            decoder: self.decoder(local, &cx),
            max_message: self.max_message,
            auth: self.auth,
            identity: Arc::clone(&self.identity),
            tokens: self.tokens,
            auth_failures: m.counter("auth_failures"),
            browser_refused: m.counter("browser_requests_refused"),
            bad_requests: m.counter("bad_requests"),
            body_too_large: m.counter("body_too_large"),
            cx: cx.clone(),
        });
        let app = Router::new().fallback(handle).with_state(shared);
        let timeouts = HttpTimeouts { idle: self.idle, ..HttpTimeouts::default() };
        let tls = crate::http_listen::http_tls(self.tls.clone(), &cx);
        let proto = sluice_net::http::Proto::Http1;
        sluice_net::http::serve_secure(listener, app, timeouts, m.counter("timeouts"), cx.shutdown.clone(), proto, tls)
            .await;
        Ok(())
    }
}

/// Runs each request to its end in its own task: a sender that closes the
/// connection without reading the answer (pygelf's `GelfHttpHandler` does)
/// would otherwise cancel the request while its event is on the way to the
/// queue, losing what it sent.
async fn handle(State(s): State<Arc<Shared>>, req: Request) -> Response {
    match tokio::spawn(ingest(s, req)).await {
        Ok(r) => r,
        Err(e) => text(StatusCode::INTERNAL_SERVER_ERROR, format!("request task failed: {e}\n")),
    }
}

async fn ingest(s: Arc<Shared>, req: Request) -> Response {
    if req.uri().path().trim_end_matches('/') != "/gelf" || *req.method() != Method::POST {
        return text(StatusCode::NOT_FOUND, "POST /gelf\n".into());
    }
    if let Some((status, reason)) = ingest_auth::browser_refusal(req.headers()) {
        s.browser_refused.inc();
        return text(status, reason);
    }
    let identity = match s.auth {
        AuthMode::None => Arc::clone(&s.identity),
        AuthMode::Token => match ingest_auth::authenticate(req.headers(), &s.tokens) {
            Some(t) => Arc::clone(&t.identity),
            None => {
                s.auth_failures.inc();
                return text(StatusCode::UNAUTHORIZED, "no valid ingest token\n".into());
            }
        },
    };
    // GELF payloads say their compression by magic (gzip, zlib), and
    // senders label it loosely (pygelf: `gzip,deflate` on a zlib stream), so
    // the header is not trusted: the payload is inflated by its magic, bounded
    // by `max_decompressed_bytes`.
    let mut req = req;
    req.headers_mut().remove(header::CONTENT_ENCODING);
    let payload = match http_body::read(req, s.max_message).await {
        Ok((body, wire)) => {
            s.cx.metrics.bytes_in.add(wire as u64);
            body
        }
        Err(BodyError::TooLarge) => {
            s.body_too_large.inc();
            return text(StatusCode::PAYLOAD_TOO_LARGE, format!("larger than max_message_bytes ({})\n", s.max_message));
        }
        Err(e) => {
            s.bad_requests.inc();
            return text(StatusCode::BAD_REQUEST, format!("{e}\n"));
        }
    };
    let d = &s.decoder;
    let decoded = gelf::decompress(&payload, d.max_decompressed).and_then(|json| gelf::decode(&json, d.max_depth));
    let m = match decoded {
        Ok(m) => m,
        Err(e) => {
            s.bad_requests.inc();
            s.cx.metrics.events_failed.inc();
            return text(StatusCode::BAD_REQUEST, format!("{e}\n"));
        }
    };
    let mut e = Event::new(m.timestamp.unwrap_or_else(now_ns), m.fields, identity, Arc::clone(&d.source));
    if m.bad_timestamp {
        e.add_tag("_timestampparsefailure");
    }
    s.cx.metrics.events_in.inc();
    if s.cx.out.send(vec![e]).await.is_err() {
        return text(StatusCode::SERVICE_UNAVAILABLE, "the pipeline's queue is closed\n".into());
    }
    s.cx.metrics.events_out.inc();
    Response::builder().status(StatusCode::ACCEPTED).body(Body::empty()).unwrap_or_default()
}
