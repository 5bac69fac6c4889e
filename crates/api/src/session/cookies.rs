//! The session and CSRF cookies: when they are `Secure`, setting them at
//! login and clearing them at logout.

use axum::http::{header, HeaderValue};
use axum::response::Response;
use sluice_users::Users;

use super::{CSRF_COOKIE, SESSION_COOKIE};

pub(super) fn secure(users: &Users, https: bool) -> bool {
    match users.config().cookie_secure.as_str() {
        "always" => true,
        "never" => false,
        _ => https,
    }
}

/// `Set-Cookie` values for a new session.
pub(super) fn session_cookies(session_id: &str, csrf: &str, secure: bool) -> [HeaderValue; 2] {
    let s = if secure { "; Secure" } else { "" };
    [
        HeaderValue::from_str(&format!("{SESSION_COOKIE}={session_id}; HttpOnly; SameSite=Strict; Path=/{s}"))
            .unwrap_or_else(|_| HeaderValue::from_static("")),
        HeaderValue::from_str(&format!("{CSRF_COOKIE}={csrf}; SameSite=Strict; Path=/{s}"))
            .unwrap_or_else(|_| HeaderValue::from_static("")),
    ]
}

pub(super) fn clear_cookies(secure: bool) -> [HeaderValue; 2] {
    let s = if secure { "; Secure" } else { "" };
    [
        HeaderValue::from_str(&format!("{SESSION_COOKIE}=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0{s}"))
            .unwrap_or_else(|_| HeaderValue::from_static("")),
        HeaderValue::from_str(&format!("{CSRF_COOKIE}=; SameSite=Strict; Path=/; Max-Age=0{s}"))
            .unwrap_or_else(|_| HeaderValue::from_static("")),
    ]
}

pub(super) fn with_cookies(mut resp: Response, cookies: [HeaderValue; 2]) -> Response {
    for c in cookies {
        resp.headers_mut().append(header::SET_COOKIE, c);
    }
    resp
}
