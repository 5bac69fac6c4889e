//! Credentials in an HTTP `Authorization` header, in the forms the
//! Elasticsearch clients and shippers send them, reduced to the secret they
//! present (the `http` source compares it with its ingest tokens).
//!
//! | header | sent by | secret |
//! |---|---|---|
//! | `Bearer <t>` | Elasticsearch clients' `bearer_auth`, Vector `auth.strategy = "bearer"`, curl | `<t>` |
//! | `ApiKey <t>` | a raw key in `headers` | `<t>` |
//! | `ApiKey base64(<id>:<t>)` | Filebeat / Logstash `api_key => "<id>:<t>"`, clients' `api_key=(id, key)` | `<t>` (any id) |
//! | `ApiKey base64(<t>)` | clients given an "encoded" key without an id | `<t>` |
//! | `Basic base64(<user>:<t>)` | `username`/`password` in Filebeat, Logstash, Fluent Bit (`HTTP_User`/`HTTP_Passwd`), Vector `auth.strategy = "basic"` | `<t>` (any user) |
//!
//! Base64 is the standard alphabet, padded or not (RFC 4648 §4). Anything
//! else — another scheme, bad base64, a Basic value without `:` — presents
//! no secret. Parsing never panics and allocates at most the decoded value
//! (`fuzz/fuzz_targets/http_auth.rs`).

use base64ct::Encoding as _;

/// The scheme of an `Authorization` header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    /// `Bearer`.
    Bearer,
    /// `ApiKey` (Elasticsearch).
    ApiKey,
    /// `Basic` (RFC 7617).
    Basic,
}

/// What a header presents: its scheme and up to two candidate secrets (an
/// `ApiKey` value is tried as given and as its base64 decoding).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Presented {
    /// The scheme.
    pub scheme: Scheme,
    /// Candidate secrets, most literal first.
    pub secrets: Vec<Vec<u8>>,
}

/// Largest header value looked at (a longer one presents nothing).
pub const MAX_HEADER: usize = 8 << 10;

/// The secrets an `Authorization` header value presents, if its scheme is
/// one of [`Scheme`]; the scheme name is case-insensitive.
pub fn presented(value: &[u8]) -> Option<Presented> {
    if value.len() > MAX_HEADER {
        return None;
    }
    let value = std::str::from_utf8(value).ok()?.trim();
    let (scheme, cred) = value.split_once(' ').unwrap_or((value, ""));
    let cred = cred.trim();
    let scheme = if scheme.eq_ignore_ascii_case("bearer") {
        Scheme::Bearer
    } else if scheme.eq_ignore_ascii_case("apikey") {
        Scheme::ApiKey
    } else if scheme.eq_ignore_ascii_case("basic") {
        Scheme::Basic
    } else {
        return None;
    };
    let mut secrets = Vec::new();
    match scheme {
        Scheme::Bearer => {
            if !cred.is_empty() {
                secrets.push(cred.as_bytes().to_vec());
            }
        }
        Scheme::ApiKey => {
            if !cred.is_empty() {
                secrets.push(cred.as_bytes().to_vec());
            }
            if let Some(decoded) = base64(cred) {
                let secret = match decoded.iter().position(|b| *b == b':') {
                    Some(colon) => decoded[colon + 1..].to_vec(),
                    None => decoded,
                };
                if !secret.is_empty() && secrets.first() != Some(&secret) {
                    secrets.push(secret);
                }
            }
        }
        Scheme::Basic => {
            let decoded = base64(cred)?;
            let colon = decoded.iter().position(|b| *b == b':')?;
            secrets.push(decoded[colon + 1..].to_vec());
        }
    }
    Some(Presented { scheme, secrets })
}

/// Standard base64, padded or not; `None` on anything else (or nothing).
pub fn base64(s: &str) -> Option<Vec<u8>> {
    if s.is_empty() {
        return None;
    }
    if s.ends_with('=') {
        base64ct::Base64::decode_vec(s).ok()
    } else {
        base64ct::Base64Unpadded::decode_vec(s).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secrets(h: &str) -> Option<Vec<String>> {
        presented(h.as_bytes()).map(|p| p.secrets.into_iter().map(|s| String::from_utf8(s).unwrap()).collect())
    }

    #[test]
    fn every_form_a_shipper_sends() {
        assert_eq!(secrets("Bearer s3cret"), Some(vec!["s3cret".into()]));
        assert_eq!(secrets("bearer   s3cret "), Some(vec!["s3cret".into()]));
        // base64("elastic:s3cret")
        assert_eq!(secrets("Basic ZWxhc3RpYzpzM2NyZXQ="), Some(vec!["s3cret".into()]));
        assert_eq!(secrets("Basic ZWxhc3RpYzpzM2NyZXQ"), Some(vec!["s3cret".into()]), "unpadded");
        // base64("my-id:s3cret") as Filebeat's api_key: "my-id:s3cret" sends it
        assert_eq!(secrets("ApiKey bXktaWQ6czNjcmV0"), Some(vec!["bXktaWQ6czNjcmV0".into(), "s3cret".into()]));
        // base64("s3cret"): an encoded key without an id
        assert_eq!(secrets("ApiKey czNjcmV0"), Some(vec!["czNjcmV0".into(), "s3cret".into()]));
        // a raw token that is not base64
        assert_eq!(secrets("ApiKey s3cret!"), Some(vec!["s3cret!".into()]));
        // a Basic password may contain ':'
        assert_eq!(secrets("Basic dTphOmI="), Some(vec!["a:b".into()]));
    }

    #[test]
    fn anything_else_presents_nothing() {
        assert_eq!(secrets("Token s3cret"), None);
        assert_eq!(secrets(""), None);
        assert_eq!(secrets("Basic not*base64"), None);
        assert_eq!(secrets("Basic bm9jb2xvbg=="), None, "no ':' in the decoded value");
        assert_eq!(secrets("Bearer"), Some(vec![]));
        assert!(presented(&[0xff, 0xfe]).is_none());
        assert!(presented(format!("Bearer {}", "a".repeat(MAX_HEADER)).as_bytes()).is_none());
        assert_eq!(base64("YQ"), Some(b"a".to_vec()));
        assert_eq!(base64("YQ=="), Some(b"a".to_vec()));
        assert_eq!(base64("YQ="), None);
    }
}
