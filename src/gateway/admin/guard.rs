//! Who may use the page: what it asks beyond the listener's [`HttpGuard`], which every request
//! on the socket has passed already (`Host` names this listener on loopback; `Origin`, when
//! present, a loopback origin of its port or one given with `--allow-origin`).
//!
//! Whoever drives the page can approve a poisoned tool, so the page asks more:
//! - its own origin only: the rules of [`HttpGuard::loopback`] again, without the
//!   `--allow-origin` origins (those are web MCP clients' origins, not the page's);
//! - an `Origin` on every request that changes something (POST): browsers send one on every
//!   cross-origin and every same-origin POST, so a missing one is no browser's page;
//! - the token, given once in the URL (`/?token=...`), then kept in a cookie that is `HttpOnly`
//!   (no script reads it) and `SameSite=Strict` (no other site's request carries it).
//!
//! A few string comparisons a request; the token is compared in constant time.

use std::net::SocketAddr;

use http::{HeaderMap, Method, Request};

use crate::gateway::HttpGuard;

/// The page's secret and the origin it answers.
pub(super) struct Guard {
    token: String,
    cookie: String,
    /// This port's loopback hosts and origins only.
    own: HttpGuard,
}

impl Guard {
    /// A guard with `token` ([`GatewayOptions::admin_token`](crate::gateway::GatewayOptions::admin_token):
    /// at least 32 characters, letters, digits, `-` and `_` only, so that it is as hard to guess
    /// as 190 random bits and travels in a URL and a header as it is), or with a fresh random
    /// one (256 bits from the operating system).
    pub(super) fn new(local: SocketAddr, token: Option<&str>) -> Result<Guard, String> {
        if let Some(token) = token {
            let fits = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_';
            if token.len() < 32 || !token.chars().all(fits) {
                return Err(format!(
                    "the admin token must be at least 32 characters of letters, digits, `-` and \
                     `_` (it has {}{})",
                    token.chars().count(),
                    if token.chars().all(fits) {
                        ""
                    } else {
                        ", and others"
                    }
                ));
            }
            return Ok(Guard::with_token(token.to_string(), local.port()));
        }
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes).map_err(|e| format!("no random token for the page: {e}"))?;
        let token = bytes.iter().map(|b| format!("{b:02x}")).collect();
        Ok(Guard::with_token(token, local.port()))
    }

    fn with_token(token: String, port: u16) -> Guard {
        Guard {
            token,
            // One cookie per port: two gateways on one machine keep their own.
            cookie: format!("capstore-page-{port}"),
            own: HttpGuard::loopback(port),
        }
    }

    pub(super) fn token(&self) -> &str {
        &self.token
    }

    /// The page's own origin (or none, on a GET), and an `Origin` on a POST: `Err` with why.
    pub(super) fn check_origin<B>(&self, request: &Request<B>) -> Result<(), String> {
        self.own.check(request).map_err(|refusal| refusal.reason)?;
        let needs_origin = request.method() == Method::POST;
        if needs_origin && !request.headers().contains_key(http::header::ORIGIN) {
            return Err("a request that changes something must carry Origin".into());
        }
        Ok(())
    }

    /// Whether the request's cookie carries the token.
    pub(super) fn has_cookie(&self, headers: &HeaderMap) -> bool {
        headers
            .get_all(http::header::COOKIE)
            .iter()
            .filter_map(|value| value.to_str().ok())
            .flat_map(|value| value.split(';'))
            .filter_map(|pair| pair.trim().split_once('='))
            .any(|(name, value)| name == self.cookie && self.is_token(value))
    }

    /// Whether the request says `Authorization: Bearer TOKEN` with the token (a scraper's way).
    pub(super) fn has_bearer(&self, headers: &HeaderMap) -> bool {
        headers
            .get_all(http::header::AUTHORIZATION)
            .iter()
            .filter_map(|value| value.to_str().ok())
            .filter_map(|value| value.strip_prefix("Bearer "))
            .any(|token| self.is_token(token.trim()))
    }

    /// Whether the URL's query (`token=...`) carries the token.
    pub(super) fn query_token(&self, query: Option<&str>) -> bool {
        query
            .into_iter()
            .flat_map(|q| q.split('&'))
            .filter_map(|pair| pair.split_once('='))
            .any(|(name, value)| name == "token" && self.is_token(value))
    }

    /// Compared in time that does not depend on where the first difference is.
    fn is_token(&self, given: &str) -> bool {
        let (a, b) = (given.as_bytes(), self.token.as_bytes());
        a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
    }

    /// The `Set-Cookie` value that keeps the token for the page's later requests.
    pub(super) fn set_cookie(&self) -> String {
        format!(
            "{}={}; Path=/; HttpOnly; SameSite=Strict",
            self.cookie, self.token
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(method: &str, pairs: &[(&'static str, &str)]) -> Request<()> {
        let mut builder = Request::builder().method(method).uri("/admin/approve");
        for (name, value) in pairs {
            builder = builder.header(*name, *value);
        }
        builder.body(()).unwrap()
    }

    #[test]
    fn only_the_pages_own_origin_and_posts_with_an_origin_pass() {
        let guard = Guard::with_token("ab".repeat(32), 8808);
        let ok = |method, pairs: &[(&'static str, &str)]| {
            guard.check_origin(&request(method, pairs)).is_ok()
        };
        let host = ("host", "127.0.0.1:8808");
        assert!(ok("GET", &[host]));
        assert!(ok("GET", &[("host", "localhost:8808")]));
        assert!(!ok("POST", &[host]), "POST needs Origin");
        for own in [
            "http://127.0.0.1:8808",
            "http://localhost:8808",
            "http://[::1]:8808",
        ] {
            assert!(ok("POST", &[host, ("origin", own)]), "{own}");
        }
        // The listener may let a web MCP client's origin through (--allow-origin); the page
        // answers its own only.
        for foreign in [
            "https://app.example.com",
            "http://evil.example",
            "null",
            "http://127.0.0.1:9999",
            "https://127.0.0.1:8808",
        ] {
            assert!(!ok("GET", &[host, ("origin", foreign)]), "{foreign}");
            assert!(!ok("POST", &[host, ("origin", foreign)]), "{foreign}");
        }
        assert!(!ok("GET", &[("host", "evil.example:8808")]));
    }

    #[test]
    fn the_token_is_taken_from_the_query_once_then_from_its_cookie() {
        let token = "cd".repeat(32);
        let guard = Guard::with_token(token.clone(), 8808);
        assert!(guard.query_token(Some(&format!("x=1&token={token}"))));
        assert!(!guard.query_token(Some("token=cdcd")));
        assert!(!guard.query_token(None));
        let cookie = guard.set_cookie();
        assert!(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"));
        let sent = cookie.split(';').next().unwrap().to_string();
        let headers = |value: &str| {
            let mut map = HeaderMap::new();
            map.append(http::header::COOKIE, value.parse().unwrap());
            map
        };
        assert!(guard.has_cookie(&headers(&format!("a=b; {sent}"))));
        assert!(!guard.has_cookie(&headers("capstore-page-8808=00")));
        // Another gateway's cookie (another port) does not open this one.
        let other = Guard::with_token(token, 9000);
        assert!(!other.has_cookie(&headers(&sent)));
    }
}
