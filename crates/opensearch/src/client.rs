//! The HTTP client: JSON requests to the first endpoint that answers.
//!
//! Endpoints are tried in order starting from the last one that answered; a
//! connection error, a timeout or a 5xx moves on to the next. A 4xx is the
//! request's fault and is returned at once, with OpenSearch's reason.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use reqwest::Method;
use serde_json::Value;
use sluice_query::BackendError;

use crate::config::{Auth, OpenSearchConfig};

/// A request body.
#[derive(Clone, Copy)]
enum Body<'a> {
    Json(&'a Value),
    Ndjson(&'a [u8]),
}

/// A client for one cluster.
pub struct Client {
    http: reqwest::Client,
    endpoints: Vec<String>,
    auth: Option<String>,
    current: AtomicUsize,
}

/// Why the client could not be built (a file that cannot be read, a bad CA).
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// A secret or CA file.
    #[error("search.{key}: {path}: {msg}")]
    File {
        /// The config key naming the file.
        key: &'static str,
        /// The file.
        path: String,
        /// What went wrong.
        msg: String,
    },
    /// A setting is wrong.
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
    /// The HTTP client.
    #[error("search: {0}")]
    Http(#[from] reqwest::Error),
}

fn read_secret(key: &'static str, path: &std::path::Path) -> Result<String, ClientError> {
    let text = std::fs::read_to_string(path).map_err(|e| ClientError::File {
        key,
        path: path.display().to_string(),
        msg: e.to_string(),
    })?;
    let line = text.lines().next().unwrap_or("").trim().to_string();
    if line.is_empty() {
        return Err(ClientError::File { key, path: path.display().to_string(), msg: "is empty".into() });
    }
    Ok(line)
}

fn basic(user: &str, password: &str) -> String {
    use base64ct::Encoding;
    format!("Basic {}", base64ct::Base64::encode_string(format!("{user}:{password}").as_bytes()))
}

impl Client {
    /// Builds the client (reads the secret and CA files once).
    pub fn new(cfg: &OpenSearchConfig) -> Result<Self, ClientError> {
        let mut b = reqwest::Client::builder().timeout(Duration::from_secs(cfg.timeout_secs)).use_rustls_tls();
        let read = |key: &'static str, path: &std::path::Path| {
            std::fs::read(path).map_err(|e| ClientError::File {
                key,
                path: path.display().to_string(),
                msg: e.to_string(),
            })
        };
        if let Some(ca) = &cfg.ca_file {
            let cert = reqwest::Certificate::from_pem(&read("ca_file", ca)?).map_err(|e| ClientError::File {
                key: "ca_file",
                path: ca.display().to_string(),
                msg: e.to_string(),
            })?;
            b = b.add_root_certificate(cert);
        }
        if let (Some(cert), Some(key)) = (&cfg.client_cert_file, &cfg.client_key_file) {
            let mut pem = read("client_cert_file", cert)?;
            pem.push(b'\n');
            pem.extend(read("client_key_file", key)?);
            let id = reqwest::Identity::from_pem(&pem).map_err(|e| ClientError::File {
                key: "client_cert_file",
                path: format!("{} + {}", cert.display(), key.display()),
                msg: e.to_string(),
            })?;
            b = b.identity(id);
        }
        let auth = match &cfg.auth {
            Auth::None => None,
            Auth::Basic { user, password_file } => {
                Some(basic(user, &read_secret("auth.password_file", password_file)?))
            }
            Auth::ApiKey { key_file } => Some(format!("ApiKey {}", read_secret("auth.key_file", key_file)?)),
        };
        let endpoints = cfg.endpoints.iter().map(|e| e.trim_end_matches('/').to_string()).collect();
        Ok(Self { http: b.build()?, endpoints, auth, current: AtomicUsize::new(0) })
    }

    /// Sends `body` (if any) to `path` and returns the JSON answer.
    pub async fn request(&self, method: Method, path: &str, body: Option<&Value>) -> Result<Value, BackendError> {
        self.send(method, path, body.map(Body::Json)).await
    }

    /// `POST {path}` with an ndjson body (`_bulk`).
    pub async fn post_ndjson(&self, path: &str, body: &[u8]) -> Result<Value, BackendError> {
        self.send(Method::POST, path, Some(Body::Ndjson(body))).await
    }

    async fn send(&self, method: Method, path: &str, body: Option<Body<'_>>) -> Result<Value, BackendError> {
        let n = self.endpoints.len();
        let start = self.current.load(Ordering::Relaxed);
        let mut last = String::new();
        for k in 0..n {
            let i = (start + k) % n;
            let url = format!("{}{path}", self.endpoints[i]);
            let mut req = self.http.request(method.clone(), &url);
            if let Some(a) = &self.auth {
                req = req.header(reqwest::header::AUTHORIZATION, a);
            }
            match body {
                Some(Body::Json(b)) => req = req.json(b),
                Some(Body::Ndjson(b)) => {
                    req = req.header(reqwest::header::CONTENT_TYPE, "application/x-ndjson").body(b.to_vec())
                }
                None => {}
            }
            match req.send().await {
                Ok(resp) => {
                    let status = resp.status();
                    let text = resp.text().await.map_err(|e| BackendError::Internal(format!("{url}: {e}")))?;
                    if status.is_server_error() {
                        last = format!("{url}: {status}: {}", reason(&text));
                        continue;
                    }
                    self.current.store(i, Ordering::Relaxed);
                    // Refused credentials are this node's configuration, not
                    // the caller's request: a 500 that says where to look.
                    if status == reqwest::StatusCode::UNAUTHORIZED || status == reqwest::StatusCode::FORBIDDEN {
                        return Err(BackendError::Internal(format!(
                            "OpenSearch refused this node's credentials ({url}: HTTP {}): check [search] auth",
                            status.as_u16()
                        )));
                    }
                    if status.is_client_error() {
                        return Err(BackendError::BadRequest(format!("opensearch {status}: {}", reason(&text))));
                    }
                    return serde_json::from_str(&text)
                        .map_err(|e| BackendError::Internal(format!("{url}: invalid JSON answer: {e}")));
                }
                Err(e) => last = format!("{url}: {e}"),
            }
        }
        Err(BackendError::Internal(format!("no OpenSearch endpoint answered: {last}")))
    }

    /// `POST {path}` with a JSON body.
    pub async fn post(&self, path: &str, body: &Value) -> Result<Value, BackendError> {
        self.request(Method::POST, path, Some(body)).await
    }

    /// `GET {path}`.
    pub async fn get(&self, path: &str) -> Result<Value, BackendError> {
        self.request(Method::GET, path, None).await
    }

    /// `DELETE {path}`.
    pub async fn delete(&self, path: &str) -> Result<Value, BackendError> {
        self.request(Method::DELETE, path, None).await
    }

    /// `PUT {path}` with a JSON body.
    pub async fn put(&self, path: &str, body: &Value) -> Result<Value, BackendError> {
        self.request(Method::PUT, path, Some(body)).await
    }
}

/// OpenSearch's `error.reason` (or the start of the body).
fn reason(body: &str) -> String {
    serde_json::from_str::<Value>(body)
        .ok()
        .and_then(|v| {
            let e = v.get("error")?;
            let root = e.get("root_cause").and_then(|r| r.get(0)).and_then(|r| r.get("reason"));
            root.or_else(|| e.get("reason")).and_then(Value::as_str).map(String::from)
        })
        .unwrap_or_else(|| body.chars().take(300).collect())
}

#[cfg(test)]
mod tests {
    #[test]
    fn basic_auth_header() {
        assert_eq!(super::basic("admin", "admin"), "Basic YWRtaW46YWRtaW4=");
        assert_eq!(super::basic("a", "bc"), "Basic YTpiYw==");
        assert_eq!(super::basic("ab", "c"), "Basic YWI6Yw==");
    }
}
