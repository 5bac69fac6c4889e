//! TLS for network components (rustls with the ring provider, TLS 1.2 and
//! 1.3): a server side from a PEM certificate chain and key, and a client
//! side that verifies the server against the system-independent roots given
//! in a PEM file (`ca`). Files are read when the config is built, so
//! `sluice validate` reports a bad file at its key.
//!
//! Not a component: it has no `SPEC`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use tokio_rustls::rustls::server::WebPkiClientVerifier;
use tokio_rustls::rustls::{ClientConfig, RootCertStore, ServerConfig};
use tokio_rustls::{TlsAcceptor, TlsConnector};

/// `tls = { cert = "server.pem", key = "server.key" }` on a listening component.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerTls {
    /// PEM certificate (chain), server certificate first.
    pub cert: PathBuf,
    /// PEM private key (PKCS#8, PKCS#1 or SEC1).
    pub key: PathBuf,
}

/// `tls = { ca = "ca.pem", server_name = "logs.example" }` on a connecting component.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClientTls {
    /// PEM file with the certificates that may sign the server's certificate.
    pub ca: PathBuf,
    /// Name to verify the server's certificate against (default: the host
    /// part of the address).
    #[serde(default)]
    pub server_name: Option<String>,
    /// PEM client certificate (chain) presented to servers that ask for one;
    /// needs `key`.
    #[serde(default)]
    pub cert: Option<PathBuf>,
    /// PEM private key of `cert`.
    #[serde(default)]
    pub key: Option<PathBuf>,
}

fn read_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let pem = std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let certs: Vec<CertificateDer<'static>> = rustls_pemfile::certs(&mut pem.as_slice())
        .collect::<Result<_, _>>()
        .map_err(|e| format!("invalid PEM in {}: {e}", path.display()))?;
    if certs.is_empty() {
        return Err(format!("no certificate in {}", path.display()));
    }
    Ok(certs)
}

fn read_key(path: &Path) -> Result<PrivateKeyDer<'static>, (&'static str, String)> {
    let key_pem = std::fs::read(path).map_err(|e| ("key", format!("cannot read {}: {e}", path.display())))?;
    rustls_pemfile::private_key(&mut key_pem.as_slice())
        .map_err(|e| ("key", format!("invalid PEM in {}: {e}", path.display())))?
        .ok_or_else(|| ("key", format!("no private key in {}", path.display())))
}

/// Builds an acceptor. Errors are `(key, message)` with key `cert`, `key` or
/// empty (the pair does not fit).
pub fn acceptor(t: &ServerTls) -> Result<TlsAcceptor, (&'static str, String)> {
    let certs = read_certs(&t.cert).map_err(|m| ("cert", m))?;
    let key = read_key(&t.key)?;
    let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
    let config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| ("", e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| ("", format!("certificate and key do not fit: {e}")))?;
    Ok(TlsAcceptor::from(Arc::new(config)))
}

/// `tls = { cert = "server.pem", key = "server.key", client_ca = "ca.pem" }`
/// on a listening component: with `client_ca`, a client must present a
/// certificate signed by it (mutual TLS).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListenTls {
    /// PEM certificate (chain), server certificate first.
    pub cert: PathBuf,
    /// PEM private key.
    pub key: PathBuf,
    /// PEM CA(s) client certificates must be signed by (mutual TLS).
    #[serde(default)]
    pub client_ca: Option<PathBuf>,
}

/// The acceptor of a [`ListenTls`]; errors are `(key, message)` with key
/// `cert`, `key`, `client_ca` or empty (the pair does not fit).
pub fn listen_acceptor(t: &ListenTls) -> Result<TlsAcceptor, (&'static str, String)> {
    let server = ServerTls { cert: t.cert.clone(), key: t.key.clone() };
    match &t.client_ca {
        None => acceptor(&server),
        Some(ca) => client_verifying(&server, ca),
    }
}

/// The config key of an error of [`listen_acceptor`]: `tls` or `tls.<key>`.
pub fn listen_key(k: &str) -> String {
    if k.is_empty() {
        "tls".into()
    } else {
        format!("tls.{k}")
    }
}

fn client_verifying(server: &ServerTls, ca: &Path) -> Result<TlsAcceptor, (&'static str, String)> {
    let mut roots = RootCertStore::empty();
    for c in read_certs(ca).map_err(|m| ("client_ca", m))? {
        roots.add(c).map_err(|e| ("client_ca", format!("unusable certificate in {}: {e}", ca.display())))?;
    }
    let certs = read_certs(&server.cert).map_err(|m| ("cert", m))?;
    let key = read_key(&server.key)?;
    let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
    let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), Arc::clone(&provider))
        .build()
        .map_err(|e| ("client_ca", e.to_string()))?;
    let config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| ("", e.to_string()))?
        .with_client_cert_verifier(verifier)
        .with_single_cert(certs, key)
        .map_err(|e| ("", format!("certificate and key do not fit: {e}")))?;
    Ok(TlsAcceptor::from(Arc::new(config)))
}

/// A connector and the server name to verify. `address` is `host:port`;
/// errors are `(key, message)` with key `ca`, `server_name`, `cert` or `key`.
pub fn connector(t: &ClientTls, address: &str) -> Result<(TlsConnector, ServerName<'static>), (&'static str, String)> {
    let mut roots = RootCertStore::empty();
    for c in read_certs(&t.ca).map_err(|m| ("ca", m))? {
        roots.add(c).map_err(|e| ("ca", format!("unusable certificate in {}: {e}", t.ca.display())))?;
    }
    let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| ("ca", e.to_string()))?
        .with_root_certificates(roots);
    let config = match (&t.cert, &t.key) {
        (None, None) => builder.with_no_client_auth(),
        (Some(cert), Some(key)) => {
            let certs = read_certs(cert).map_err(|m| ("cert", m))?;
            builder
                .with_client_auth_cert(certs, read_key(key)?)
                .map_err(|e| ("cert", format!("certificate and key do not fit: {e}")))?
        }
        (Some(_), None) => return Err(("key", "a client cert needs its key".into())),
        (None, Some(_)) => return Err(("cert", "a client key needs its cert".into())),
    };
    let host = match &t.server_name {
        Some(n) => n.clone(),
        None => {
            let h = address.rsplit_once(':').map_or(address, |(h, _)| h);
            h.trim_start_matches('[').trim_end_matches(']').to_string()
        }
    };
    let name =
        ServerName::try_from(host.clone()).map_err(|e| ("server_name", format!("invalid name {host:?}: {e}")))?;
    Ok((TlsConnector::from(Arc::new(config)), name))
}

/// Test helper: a self-signed certificate for `localhost` (and 127.0.0.1)
/// made with `openssl`, as `(cert.pem, key.pem)` in `dir`.
#[cfg(test)]
pub fn self_signed(dir: &Path) -> (PathBuf, PathBuf) {
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    let st = std::process::Command::new("openssl")
        .args(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"])
        .args(["-days", "1", "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"])
        .args(["-addext", "basicConstraints=critical,CA:FALSE", "-keyout"])
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(st.success(), "openssl req failed");
    (cert, key)
}
