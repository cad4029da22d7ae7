//! Who may use the page: the token, and the Host and Origin a request carries.
//!
//! A page on `127.0.0.1` is reachable from every web page the person's browser opens (DNS
//! rebinding, cross-site requests), so each request must prove it comes from the page itself:
//! - `Host` names a loopback host with the gateway's port: a rebound name (`evil.example`)
//!   is refused;
//! - `Origin`, when present, is a loopback origin with the same port; a request that changes
//!   something (POST) must carry one;
//! - the token, given once in the URL (`/?token=...`), then kept in a cookie that is
//!   `HttpOnly` (no script reads it) and `SameSite=Strict` (no other site's request carries it).

use std::net::SocketAddr;

use http::HeaderMap;

/// Why a request is refused (the body of the 403).
pub(super) type Refusal = &'static str;

/// The loopback host names a request may use for the gateway.
const LOOPBACK_HOSTS: [&str; 3] = ["127.0.0.1", "localhost", "[::1]"];

/// The page's secret and the address it answers on.
pub(super) struct Guard {
    token: String,
    port: u16,
    cookie: String,
}

impl Guard {
    /// A guard with a fresh random token (256 bits from the operating system).
    pub(super) fn new(local: SocketAddr) -> Result<Guard, String> {
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes).map_err(|e| format!("no random token for the page: {e}"))?;
        let token = bytes.iter().map(|b| format!("{b:02x}")).collect();
        Ok(Guard::with_token(token, local.port()))
    }

    fn with_token(token: String, port: u16) -> Guard {
        Guard {
            token,
            port,
            // One cookie per port: two gateways on one machine keep their own.
            cookie: format!("capstore-page-{port}"),
        }
    }

    pub(super) fn token(&self) -> &str {
        &self.token
    }

    /// `Host` must be a loopback name with the gateway's port; `Origin` absent or the page's
    /// own (any loopback name, same port), and present when `needs_origin`.
    pub(super) fn check_headers(
        &self,
        headers: &HeaderMap,
        needs_origin: bool,
    ) -> Result<(), Refusal> {
        let host = headers
            .get(http::header::HOST)
            .and_then(|h| h.to_str().ok())
            .ok_or("a Host header naming this gateway is required")?;
        if !self.is_own_authority(host) {
            return Err("the Host header does not name this gateway (127.0.0.1 and its port)");
        }
        match headers.get(http::header::ORIGIN) {
            None if needs_origin => Err("a request that changes something must carry Origin"),
            None => Ok(()),
            Some(origin) => {
                let origin = origin.to_str().unwrap_or("");
                match origin.strip_prefix("http://") {
                    Some(authority) if self.is_own_authority(authority) => Ok(()),
                    _ => Err("the Origin is not this gateway's page"),
                }
            }
        }
    }

    /// `host:port` with a loopback host and the gateway's port, exactly.
    fn is_own_authority(&self, authority: &str) -> bool {
        let Some((host, port)) = authority.rsplit_once(':') else {
            return false;
        };
        LOOPBACK_HOSTS
            .iter()
            .any(|loopback| host.eq_ignore_ascii_case(loopback))
            && port.parse::<u16>() == Ok(self.port)
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

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(*name, value.parse().unwrap());
        }
        map
    }

    #[test]
    fn host_and_origin_must_be_this_gateway() {
        let guard = Guard::with_token("ab".repeat(32), 8808);
        let ok = |pairs: &[(&'static str, &str)], post| {
            guard.check_headers(&headers(pairs), post).is_ok()
        };
        assert!(ok(&[("host", "127.0.0.1:8808")], false));
        assert!(ok(&[("host", "localhost:8808")], false));
        assert!(ok(&[("host", "[::1]:8808")], false));
        assert!(
            !ok(&[("host", "127.0.0.1:8808")], true),
            "POST needs Origin"
        );
        assert!(ok(
            &[
                ("host", "127.0.0.1:8808"),
                ("origin", "http://127.0.0.1:8808")
            ],
            true
        ));
        for bad_host in [
            "evil.example:8808",
            "127.0.0.1:9999",
            "127.0.0.1",
            "127.0.0.1.evil:8808",
        ] {
            assert!(!ok(&[("host", bad_host)], false), "{bad_host}");
        }
        assert!(!ok(&[], false), "no Host");
        for bad_origin in [
            "http://evil.example",
            "null",
            "http://127.0.0.1:9999",
            "https://127.0.0.1:8808",
            "http://127.0.0.1:8808.evil.example",
        ] {
            assert!(
                !ok(&[("host", "127.0.0.1:8808"), ("origin", bad_origin)], false),
                "{bad_origin}"
            );
        }
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
        assert!(guard.has_cookie(&headers(&[("cookie", &format!("a=b; {sent}"))])));
        assert!(!guard.has_cookie(&headers(&[("cookie", "capstore-page-8808=00")])));
        // Another gateway's cookie (another port) does not open this one.
        let other = Guard::with_token(token, 9000);
        assert!(!other.has_cookie(&headers(&[("cookie", &sent)])));
    }
}
