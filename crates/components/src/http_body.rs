//! Request bodies of the HTTP ingest sources (`splunk_hec`, `loki`, `otlp`): read
//! whole, at most `max` bytes, gunzipped when sent with
//! `Content-Encoding: gzip` (never past `max` either). Each source maps a
//! [`BodyError`] to its protocol's answer.

use std::io::Read;

use axum::extract::Request;
use axum::http::header;

/// Why a body could not be read.
#[derive(Debug)]
pub enum BodyError {
    /// Larger than the limit (on the wire or inflated).
    TooLarge,
    /// A `Content-Encoding` other than identity or gzip.
    Encoding(String),
    /// A corrupt gzip stream.
    Gzip(String),
    /// The connection failed while reading.
    Read(String),
}

impl std::fmt::Display for BodyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BodyError::TooLarge => write!(f, "request body is larger than max_body_bytes"),
            BodyError::Encoding(e) => write!(f, "unsupported Content-Encoding {e:?}: send identity or gzip"),
            BodyError::Gzip(e) => write!(f, "invalid gzip body: {e}"),
            BodyError::Read(e) => write!(f, "reading the request body: {e}"),
        }
    }
}

/// The body (inflated) and its size on the wire.
pub async fn read(req: Request, max: usize) -> Result<(Vec<u8>, usize), BodyError> {
    read_limited(req, max, max).await
}

/// [`read`] with its own limit on the inflated size (`max_inflated`).
pub async fn read_limited(req: Request, max: usize, max_inflated: usize) -> Result<(Vec<u8>, usize), BodyError> {
    let gzip = match req.headers().get(header::CONTENT_ENCODING).map(|v| v.to_str().unwrap_or("?").trim()) {
        None | Some("") | Some("identity") => false,
        Some(e) if e.eq_ignore_ascii_case("gzip") || e.eq_ignore_ascii_case("x-gzip") => true,
        Some(e) => return Err(BodyError::Encoding(e.to_string())),
    };
    let raw = match axum::body::to_bytes(req.into_body(), max).await {
        Ok(b) => b,
        Err(e) => {
            let text = format!("{e} {}", std::error::Error::source(&e).map(|s| s.to_string()).unwrap_or_default());
            if text.to_ascii_lowercase().contains("length limit") {
                return Err(BodyError::TooLarge);
            }
            return Err(BodyError::Read(text));
        }
    };
    let wire = raw.len();
    if !gzip {
        return Ok((raw.to_vec(), wire));
    }
    Ok((gunzip(&raw, max_inflated)?, wire))
}

/// Inflates a gzip body, at most `max` bytes ([`BodyError::TooLarge`] past it).
pub fn gunzip(raw: &[u8], max: usize) -> Result<Vec<u8>, BodyError> {
    let mut out = Vec::new();
    let limit = u64::try_from(max).unwrap_or(u64::MAX).saturating_add(1);
    flate2::read::MultiGzDecoder::new(raw)
        .take(limit)
        .read_to_end(&mut out)
        .map_err(|e| BodyError::Gzip(e.to_string()))?;
    if out.len() > max {
        return Err(BodyError::TooLarge);
    }
    Ok(out)
}
