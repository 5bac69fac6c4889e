//! Two-factor authentication: RFC 6238 TOTP (HMAC-SHA-1, 6 digits, 30 s
//! steps, one step of skew either way) through `totp-rs`, the `otpauth://`
//! URI and its QR code as an SVG data URL for enrolment, and single-use
//! recovery codes.
//!
//! Replay: [`check`] returns the time step a code matched; the caller stores
//! the last accepted step per user and refuses any code whose step is not
//! newer, so a code (or an older one still in the skew window) works once.

use base64ct::Encoding as _;
use qrcodegen::{QrCode, QrCodeEcc};
use totp_rs::{Secret, Totp};

use crate::error::UsersError;
use crate::secret::{random_bytes, sha256_parts};

/// Seconds per step.
pub const STEP: u64 = 30;
/// Recovery codes issued at once.
pub const RECOVERY_CODES: usize = 10;

/// A new random 160-bit secret, base32 (no padding).
pub fn new_secret() -> Result<String, UsersError> {
    Ok(Secret::new(random_bytes(20)?.into_boxed_slice()).to_base32())
}

fn totp(secret_b32: &str) -> Result<Totp, UsersError> {
    let secret =
        Secret::try_from_base32(secret_b32).map_err(|e| UsersError::Internal(format!("totp secret: {e:?}")))?;
    totp_rs::Builder::new()
        .with_secret(secret)
        .with_step_duration(STEP)
        .with_skew(1)
        .with_digits(6)
        .build()
        .map_err(|e| UsersError::Internal(format!("totp: {e:?}")))
}

/// The time step a code matches at `now_ms` (±1 step), if any.
pub fn check(secret_b32: &str, code: &str, now_ms: i64) -> Result<Option<u64>, UsersError> {
    let code: String = code.chars().filter(|c| !c.is_whitespace()).collect();
    if code.len() != 6 || !code.bytes().all(|b| b.is_ascii_digit()) {
        return Ok(None);
    }
    let now = u64::try_from(now_ms / 1000).unwrap_or(0);
    Ok(totp(secret_b32)?.check(&code, now))
}

/// The code for `now_ms` (tests and the CLI's self-check).
pub fn generate(secret_b32: &str, now_ms: i64) -> Result<String, UsersError> {
    Ok(totp(secret_b32)?.generate(u64::try_from(now_ms / 1000).unwrap_or(0)).to_string())
}

/// `otpauth://totp/ISSUER:ACCOUNT?secret=…&issuer=…&algorithm=SHA1&digits=6&period=30`.
pub fn otpauth_uri(issuer: &str, account: &str, secret_b32: &str) -> String {
    let issuer = percent(issuer);
    format!(
        "otpauth://totp/{issuer}:{}?secret={secret_b32}&issuer={issuer}&algorithm=SHA1&digits=6&period={STEP}",
        percent(account)
    )
}

fn percent(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The QR code of `text` as an SVG document (one path, 4-module quiet zone).
pub fn qr_svg(text: &str) -> Result<String, UsersError> {
    let qr =
        QrCode::encode_text(text, QrCodeEcc::Medium).map_err(|e| UsersError::Internal(format!("qr code: {e:?}")))?;
    let border = 4;
    let size = qr.size();
    let dim = size + 2 * border;
    let mut path = String::new();
    for y in 0..size {
        for x in 0..size {
            if qr.get_module(x, y) {
                path.push_str(&format!("M{},{}h1v1h-1z", x + border, y + border));
            }
        }
    }
    Ok(format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" viewBox=\"0 0 {dim} {dim}\" stroke=\"none\" shape-rendering=\"crispEdges\"><rect width=\"100%\" height=\"100%\" fill=\"#FFFFFF\"/><path d=\"{path}\" fill=\"#000000\"/></svg>"
    ))
}

/// `data:image/svg+xml;base64,…` of [`qr_svg`].
pub fn qr_data_url(text: &str) -> Result<String, UsersError> {
    Ok(format!("data:image/svg+xml;base64,{}", base64ct::Base64::encode_string(qr_svg(text)?.as_bytes())))
}

/// Ten recovery codes `xxxx-xxxx-xxxx-xxxx` (80 random bits each, base32).
pub fn new_recovery_codes() -> Result<Vec<String>, UsersError> {
    const A: &[u8; 32] = b"abcdefghijklmnopqrstuvwxyz234567";
    let mut codes = Vec::with_capacity(RECOVERY_CODES);
    for _ in 0..RECOVERY_CODES {
        let bytes = random_bytes(16)?;
        let chars: Vec<char> = bytes.iter().map(|b| char::from(A[usize::from(b & 31)])).collect();
        let groups: Vec<String> = chars.chunks(4).map(|c| c.iter().collect()).collect();
        codes.push(groups.join("-"));
    }
    Ok(codes)
}

/// The stored form of a recovery code (case, spaces and dashes ignored).
pub fn recovery_hash(user_id: i64, code: &str) -> String {
    let norm: String = code.chars().filter(|c| c.is_ascii_alphanumeric()).collect::<String>().to_ascii_lowercase();
    sha256_parts(&[b"sluice-recovery", user_id.to_string().as_bytes(), norm.as_bytes()])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 6238 appendix B, SHA-1 (secret "12345678901234567890"), last 6 digits.
    #[test]
    fn rfc6238_vectors() {
        let secret = Secret::new(b"12345678901234567890".to_vec().into_boxed_slice()).to_base32();
        for (t, code) in [
            (59, "287082"),
            (1111111109, "081804"),
            (1111111111, "050471"),
            (1234567890, "005924"),
            (2000000000, "279037"),
        ] {
            assert_eq!(generate(&secret, t * 1000).unwrap(), code, "t={t}");
            assert_eq!(check(&secret, code, t * 1000).unwrap(), Some(t as u64 / STEP));
        }
        // One step of skew either way, not two.
        let t = 1111111109_i64 * 1000;
        assert_eq!(check(&secret, "081804", t + 30_000).unwrap(), Some(1111111109 / 30));
        assert_eq!(check(&secret, "081804", t + 61_000).unwrap(), None);
        assert_eq!(check(&secret, "08180", t).unwrap(), None);
        assert_eq!(check(&secret, "abcdef", t).unwrap(), None);
        assert_eq!(check(&secret, " 081 804 ", t).unwrap(), Some(1111111109 / 30));
    }

    #[test]
    fn uri_qr_and_codes() {
        let s = new_secret().unwrap();
        assert_eq!(s.len(), 32);
        let uri = otpauth_uri("sluice", "alice@example.org", &s);
        assert_eq!(
            uri,
            format!(
                "otpauth://totp/sluice:alice%40example.org?secret={s}&issuer=sluice&algorithm=SHA1&digits=6&period=30"
            )
        );
        let svg = qr_svg(&uri).unwrap();
        assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\"") && svg.ends_with("</svg>"));
        assert!(qr_data_url(&uri).unwrap().starts_with("data:image/svg+xml;base64,PHN2Zy"));
        let codes = new_recovery_codes().unwrap();
        assert_eq!(codes.len(), 10);
        assert!(codes.iter().all(|c| c.len() == 19 && c.split('-').count() == 4));
        assert_eq!(recovery_hash(1, &codes[0]), recovery_hash(1, &codes[0].to_uppercase().replace('-', " ")));
        assert_ne!(recovery_hash(1, &codes[0]), recovery_hash(2, &codes[0]));
    }
}
