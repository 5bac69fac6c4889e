//! Request bodies: read up to `max_body_bytes`, gunzipped when sent with
//! `Content-Encoding: gzip` (bounded too), drained after a refusal.

use super::*;

// ---------------------------------------------------------------- body

pub(super) enum BodyError {
    TooLarge,
    Encoding(String),
    Read(String),
}

/// Reads the whole body (gunzipping it when asked), at most `max` bytes.
pub(super) async fn read_body(s: &Shared, req: Request) -> Result<Vec<u8>, Response> {
    let gzip = match req.headers().get(header::CONTENT_ENCODING).map(|v| v.to_str().unwrap_or("?").trim()) {
        None | Some("") | Some("identity") => false,
        Some(e) if e.eq_ignore_ascii_case("gzip") || e.eq_ignore_ascii_case("x-gzip") => true,
        Some(e) => {
            s.counters.bad_requests.inc();
            return Err(es_error(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "illegal_argument_exception",
                &format!("unsupported Content-Encoding {e:?}: send identity or gzip"),
            ));
        }
    };
    let result = match collect(req.into_body(), s.max_body).await {
        Ok(raw) if gzip => {
            s.counters.gzip_bodies.inc();
            gunzip(&raw, s.max_body).map(|d| (raw.len(), d))
        }
        Ok(raw) => Ok((raw.len(), raw)),
        Err(e) => Err(e),
    };
    match result {
        Ok((wire, body)) => {
            s.cx.metrics.bytes_in.add(wire as u64);
            Ok(body)
        }
        Err(BodyError::TooLarge) => {
            s.counters.body_too_large.inc();
            Err(es_error(
                StatusCode::PAYLOAD_TOO_LARGE,
                "content_too_long_exception",
                &format!("request body is larger than max_body_bytes ({} bytes)", s.max_body),
            ))
        }
        Err(BodyError::Encoding(e)) => {
            s.counters.bad_requests.inc();
            Err(es_error(StatusCode::BAD_REQUEST, "parse_exception", &format!("invalid gzip body: {e}")))
        }
        Err(BodyError::Read(e)) => {
            s.cx.metrics.errors.inc();
            Err(es_error(StatusCode::BAD_REQUEST, "parse_exception", &format!("reading the request body: {e}")))
        }
    }
}

pub(super) async fn collect(mut body: Body, max: usize) -> Result<Vec<u8>, BodyError> {
    if body.size_hint().lower() > max as u64 {
        drain(body).await;
        return Err(BodyError::TooLarge);
    }
    let mut buf = Vec::new();
    while let Some(frame) = std::future::poll_fn(|c| Pin::new(&mut body).poll_frame(c)).await {
        let frame = frame.map_err(|e| BodyError::Read(e.to_string()))?;
        if let Ok(data) = frame.into_data() {
            if buf.len() + data.len() > max {
                drain(body).await;
                return Err(BodyError::TooLarge);
            }
            buf.extend_from_slice(&data);
        }
    }
    Ok(buf)
}

/// Reads and drops up to [`DRAIN_LIMIT`] more bytes, so the error response is
/// not lost to a connection reset while the client is still sending.
pub(super) async fn drain(mut body: Body) {
    let mut seen = 0usize;
    while seen < DRAIN_LIMIT {
        match std::future::poll_fn(|c| Pin::new(&mut body).poll_frame(c)).await {
            Some(Ok(frame)) => seen += frame.data_ref().map_or(0, |d| d.len()),
            _ => return,
        }
    }
}

pub(super) fn gunzip(raw: &[u8], max: usize) -> Result<Vec<u8>, BodyError> {
    let mut out = Vec::with_capacity(raw.len().saturating_mul(4).min(max));
    let limit = u64::try_from(max).unwrap_or(u64::MAX).saturating_add(1);
    flate2::read::MultiGzDecoder::new(raw)
        .take(limit)
        .read_to_end(&mut out)
        .map_err(|e| BodyError::Encoding(e.to_string()))?;
    if out.len() > max {
        return Err(BodyError::TooLarge);
    }
    Ok(out)
}
