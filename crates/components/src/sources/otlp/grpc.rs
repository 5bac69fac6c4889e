//! OTLP/gRPC: the unary `LogsService/Export` call over HTTP/2, framed by
//! hand (ADR 0097): a request body is one message with gRPC's 5-byte prefix
//! (a compressed flag, a big-endian `u32` length); the answer is `200`,
//! `content-type: application/grpc`, one prefixed `ExportLogsServiceResponse`
//! and the trailers `grpc-status: 0`. An error is a trailers-only answer:
//! `grpc-status` and a percent-encoded `grpc-message` in the header block.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;
use bytes::Bytes;
use http_body::Frame;
use percent_encoding::{utf8_percent_encode, AsciiSet, CONTROLS};
use sluice_parsers::otlp;

use super::Port;
use crate::http_body::{gunzip, BodyError};
use crate::ingest_auth;

/// The one method served.
pub const EXPORT: &str = "/opentelemetry.proto.collector.logs.v1.LogsService/Export";

const INVALID_ARGUMENT: u8 = 3;
const RESOURCE_EXHAUSTED: u8 = 8;
const UNIMPLEMENTED: u8 = 12;
const UNAVAILABLE: u8 = 14;
const UNAUTHENTICATED: u8 = 16;

/// What `grpc-message` percent-encodes: controls, `%`, and non-ASCII.
const MESSAGE: &AsciiSet = &CONTROLS.add(b'%');

/// A trailers-only error answer.
fn error(code: u8, message: &str) -> Response {
    let mut r = Response::new(Body::empty());
    let h = r.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/grpc"));
    h.insert("grpc-status", HeaderValue::from(u16::from(code)));
    if let Ok(v) = HeaderValue::from_str(&utf8_percent_encode(message, MESSAGE).to_string()) {
        h.insert("grpc-message", v);
    }
    r
}

/// One prefixed message, then the trailers.
struct Unary {
    message: Option<Bytes>,
    trailers: Option<HeaderMap>,
}

impl http_body::Body for Unary {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        if let Some(m) = self.message.take() {
            return Poll::Ready(Some(Ok(Frame::data(m))));
        }
        Poll::Ready(self.trailers.take().map(|t| Ok(Frame::trailers(t))))
    }

    fn is_end_stream(&self) -> bool {
        self.message.is_none() && self.trailers.is_none()
    }
}

fn ok(message: &[u8]) -> Response {
    let mut framed = Vec::with_capacity(5 + message.len());
    framed.push(0);
    // INVARIANT: an ExportLogsServiceResponse is a count and one error string, far below 4 GiB.
    framed.extend_from_slice(&u32::try_from(message.len()).unwrap_or(u32::MAX).to_be_bytes());
    framed.extend_from_slice(message);
    let mut trailers = HeaderMap::new();
    trailers.insert("grpc-status", HeaderValue::from_static("0"));
    let mut r = Response::new(Body::new(Unary { message: Some(Bytes::from(framed)), trailers: Some(trailers) }));
    r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/grpc"));
    r
}

/// The message of a unary request body: `Err` names what was wrong.
fn unframe(body: &[u8], gzip: bool, max: usize) -> Result<Vec<u8>, (u8, String)> {
    let [flag, a, b, c, d, rest @ ..] = body else {
        return Err((INVALID_ARGUMENT, "the request holds no length-prefixed message".into()));
    };
    let len = u32::from_be_bytes([*a, *b, *c, *d]) as usize;
    if rest.len() != len {
        let m = format!("expected one message of {len} bytes, got {} bytes after the prefix", rest.len());
        return Err((INVALID_ARGUMENT, m));
    }
    match flag {
        0 => Ok(rest.to_vec()),
        1 if gzip => gunzip(rest, max).map_err(|e| match e {
            BodyError::TooLarge => (RESOURCE_EXHAUSTED, format!("the message inflates past {max} bytes")),
            e => (INVALID_ARGUMENT, e.to_string()),
        }),
        1 => Err((UNIMPLEMENTED, "a compressed message needs grpc-encoding: gzip (the only one served)".into())),
        f => Err((INVALID_ARGUMENT, format!("invalid compressed flag {f}"))),
    }
}

pub(super) async fn handle(State(p): State<Arc<Port>>, req: Request) -> Response {
    let s = &p.shared;
    if req.uri().path() != EXPORT {
        return error(UNIMPLEMENTED, &format!("unknown method {}: only {EXPORT}", req.uri().path()));
    }
    let ct = req.headers().get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
    if !(ct == "application/grpc" || ct.starts_with("application/grpc+proto") || ct.starts_with("application/grpc;")) {
        s.bad_requests.inc();
        let mut r = error(INVALID_ARGUMENT, "content-type must be application/grpc");
        *r.status_mut() = StatusCode::UNSUPPORTED_MEDIA_TYPE;
        return r;
    }
    if let Some((_, reason)) = ingest_auth::browser_refusal(req.headers()) {
        s.browser_refused.inc();
        return error(INVALID_ARGUMENT, reason.trim_end());
    }
    let Some(identity) = s.identity(req.headers()) else {
        return error(UNAUTHENTICATED, "no valid ingest token");
    };
    let gzip = match req.headers().get("grpc-encoding").map(|v| v.to_str().unwrap_or("?")) {
        None | Some("identity") => false,
        Some("gzip") => true,
        Some(e) => return error(UNIMPLEMENTED, &format!("grpc-encoding {e:?} is not served: use gzip or identity")),
    };
    let body = match axum::body::to_bytes(req.into_body(), s.max_body.saturating_add(5)).await {
        Ok(b) => b,
        Err(e) => {
            let text = format!("{e} {}", std::error::Error::source(&e).map(|s| s.to_string()).unwrap_or_default());
            if text.to_ascii_lowercase().contains("length limit") {
                s.body_too_large.inc();
                return error(
                    RESOURCE_EXHAUSTED,
                    &format!("the message is larger than max_body_bytes ({})", s.max_body),
                );
            }
            s.bad_requests.inc();
            return error(INVALID_ARGUMENT, &format!("reading the request: {text}"));
        }
    };
    s.cx.metrics.bytes_in.add(body.len() as u64);
    let message = match unframe(&body, gzip, s.max_decompressed) {
        Ok(m) => m,
        Err((code, m)) => {
            if code == RESOURCE_EXHAUSTED {
                s.body_too_large.inc();
            } else {
                s.bad_requests.inc();
            }
            return error(code, &m);
        }
    };
    let mut d = match otlp::decode_protobuf(&message, s.limits) {
        Ok(d) => d,
        Err(e) => {
            s.bad_requests.inc();
            s.cx.metrics.events_failed.inc();
            return error(INVALID_ARGUMENT, &e.to_string());
        }
    };
    if s.ingest(&mut d, &identity, &p.source).await.is_err() {
        return error(UNAVAILABLE, "the pipeline's queue is closed");
    }
    ok(&otlp::response_protobuf(&d))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unframe_takes_one_message_and_refuses_the_rest() {
        assert_eq!(unframe(b"\x00\x00\x00\x00\x02hi", false, 10), Ok(b"hi".to_vec()));
        assert_eq!(unframe(b"\x00\x00\x00", false, 10).unwrap_err().0, INVALID_ARGUMENT);
        assert_eq!(unframe(b"\x00\x00\x00\x00\x03hi", false, 10).unwrap_err().0, INVALID_ARGUMENT);
        assert_eq!(unframe(b"\x01\x00\x00\x00\x02hi", false, 10).unwrap_err().0, UNIMPLEMENTED);
        assert_eq!(unframe(b"\x01\x00\x00\x00\x02hi", true, 10).unwrap_err().0, INVALID_ARGUMENT);
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut gz, &[b'a'; 64]).unwrap();
        let gz = gz.finish().unwrap();
        let framed = [&[1u8][..], &(gz.len() as u32).to_be_bytes(), &gz].concat();
        assert_eq!(unframe(&framed, true, 64), Ok(vec![b'a'; 64]));
        assert_eq!(unframe(&framed, true, 63).unwrap_err().0, RESOURCE_EXHAUSTED);
    }
}
