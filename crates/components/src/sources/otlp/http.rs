//! OTLP/HTTP: `POST /v1/logs`, protobuf or JSON, answered in the request's
//! encoding (see the parent module for the answers and limits).

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::response::Response;
use sluice_parsers::otlp;

use super::Port;
use crate::http_body::{self, BodyError};
use crate::ingest_auth;

/// gRPC status codes used in `google.rpc.Status` bodies.
const INVALID_ARGUMENT: i32 = 3;
const RESOURCE_EXHAUSTED: i32 = 8;
const UNIMPLEMENTED: i32 = 12;
const UNAVAILABLE: i32 = 14;
const UNAUTHENTICATED: i32 = 16;

fn answer(status: StatusCode, json: bool, body: Vec<u8>) -> Response {
    let mut r = Response::new(Body::from(body));
    *r.status_mut() = status;
    let ct = if json { "application/json" } else { "application/x-protobuf" };
    r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static(ct));
    r
}

/// A `google.rpc.Status` answer in the request's encoding.
fn status(http: StatusCode, json: bool, code: i32, message: &str) -> Response {
    let body = if json { otlp::status_json(code, message).into_bytes() } else { otlp::status_protobuf(code, message) };
    answer(http, json, body)
}

pub(super) async fn handle(State(p): State<Arc<Port>>, req: Request) -> Response {
    let s = &p.shared;
    let ct = req.headers().get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
    let ct = ct.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
    let json = ct == "application/json";
    let path = req.uri().path().trim_end_matches('/');
    if path != "/v1/logs" {
        return status(StatusCode::NOT_FOUND, json, UNIMPLEMENTED, "not found: OTLP logs are POSTed to /v1/logs");
    }
    if *req.method() != Method::POST {
        let mut r = status(StatusCode::METHOD_NOT_ALLOWED, json, UNIMPLEMENTED, "POST /v1/logs");
        r.headers_mut().insert(header::ALLOW, HeaderValue::from_static("POST"));
        return r;
    }
    if let Some((code, reason)) = ingest_auth::browser_refusal(req.headers()) {
        s.browser_refused.inc();
        return status(code, json, INVALID_ARGUMENT, reason.trim_end());
    }
    if !json && ct != "application/x-protobuf" {
        s.bad_requests.inc();
        return status(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            false,
            INVALID_ARGUMENT,
            "send Content-Type: application/x-protobuf or application/json",
        );
    }
    let Some(identity) = s.identity(req.headers()) else {
        let mut r = status(StatusCode::UNAUTHORIZED, json, UNAUTHENTICATED, "no valid ingest token");
        r.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer realm=\"otlp\""));
        return r;
    };
    let body = match http_body::read_limited(req, s.max_body, s.max_decompressed).await {
        Ok((body, wire)) => {
            s.cx.metrics.bytes_in.add(wire as u64);
            body
        }
        Err(BodyError::TooLarge) => {
            s.body_too_large.inc();
            let m = format!(
                "request body is larger than max_body_bytes ({}) or, inflated, max_decompressed_bytes ({})",
                s.max_body, s.max_decompressed
            );
            return status(StatusCode::PAYLOAD_TOO_LARGE, json, RESOURCE_EXHAUSTED, &m);
        }
        Err(e) => {
            s.bad_requests.inc();
            return status(StatusCode::BAD_REQUEST, json, INVALID_ARGUMENT, &e.to_string());
        }
    };
    let decoded = if json { otlp::decode_json(&body, s.limits) } else { otlp::decode_protobuf(&body, s.limits) };
    let mut d = match decoded {
        Ok(d) => d,
        Err(e) => {
            s.bad_requests.inc();
            s.cx.metrics.events_failed.inc();
            return status(StatusCode::BAD_REQUEST, json, INVALID_ARGUMENT, &e.to_string());
        }
    };
    if s.ingest(&mut d, &identity, &p.source).await.is_err() {
        return status(StatusCode::SERVICE_UNAVAILABLE, json, UNAVAILABLE, "the pipeline's queue is closed");
    }
    let body = if json { otlp::response_json(&d).into_bytes() } else { otlp::response_protobuf(&d) };
    answer(StatusCode::OK, json, body)
}
