//! Which HTTP requests may reach the gateway's listener at all: the DNS-rebinding defence of a
//! server on localhost, in one place for every route served on it (`/mcp`, and any page added
//! beside it).
//!
//! A web page the user opens can make their browser send requests to `127.0.0.1`; with DNS
//! rebinding, even under a name of the attacker's. Two headers tell such requests apart, and
//! [`HttpGuard::check`] refuses them with `403 Forbidden` before anything else reads them:
//! - `Host` must name this listener on loopback: `127.0.0.1:PORT`, `localhost:PORT` or
//!   `[::1]:PORT`, PORT the listener's own (a rebound name fails here);
//! - `Origin`, when present, must be a loopback origin of the same port
//!   (`http://127.0.0.1:PORT`, `http://localhost:PORT`, `http://[::1]:PORT`) or one allowed
//!   explicitly ([`HttpGuard::allow_origin`], `capstore serve --allow-origin`). `Origin: null`
//!   (sandboxed frames, `file:` pages, some redirects) is never allowed. Clients that are not
//!   browsers send no `Origin` and pass.
//!
//! This is what the MCP transport specification asks of a Streamable HTTP server ("Servers MUST
//! validate the Origin header ... If the Origin header is present and invalid, servers MUST
//! respond with HTTP 403 Forbidden"). It costs a few string comparisons per request.
//!
//! ```
//! use capstore::gateway::HttpGuard;
//! let mut guard = HttpGuard::loopback(8808);
//! guard.allow_origin("https://app.example.com")?;
//! let request = |origin: Option<&str>| {
//!     let mut builder = http::Request::builder().uri("/mcp").header("host", "127.0.0.1:8808");
//!     if let Some(origin) = origin {
//!         builder = builder.header("origin", origin);
//!     }
//!     builder.body(()).unwrap()
//! };
//! assert!(guard.check(&request(None)).is_ok());
//! assert!(guard.check(&request(Some("http://localhost:8808"))).is_ok());
//! assert!(guard.check(&request(Some("https://app.example.com"))).is_ok());
//! assert!(guard.check(&request(Some("http://evil.example"))).is_err());
//! assert!(guard.check(&request(Some("null"))).is_err());
//! assert!(guard.check(&request(Some("http://127.0.0.1:9999"))).is_err());
//! # Ok::<(), String>(())
//! ```

use std::convert::Infallible;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, combinators::BoxBody};

/// The Host and Origin rules of one loopback listener. Cheap to clone; immutable once built,
/// so one guard serves every connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpGuard {
    port: u16,
    /// Normalized (lower case, no trailing `/`): loopback origins of the port, then the
    /// explicitly allowed ones.
    origins: Vec<String>,
}

/// Why a request was refused: answer it with [`into_response`](Self::into_response) (`403`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// What was wrong, for the response body and the logs.
    pub reason: String,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.reason)
    }
}

impl std::error::Error for Refusal {}

impl Refusal {
    /// `403 Forbidden` with the reason as plain text.
    ///
    /// ```
    /// let refusal = capstore::gateway::Refusal { reason: "Origin not allowed".into() };
    /// assert_eq!(refusal.into_response().status(), http::StatusCode::FORBIDDEN);
    /// ```
    pub fn into_response(self) -> http::Response<BoxBody<Bytes, Infallible>> {
        let mut response = http::Response::new(
            Full::new(Bytes::from(format!("Forbidden: {}\n", self.reason))).boxed(),
        );
        *response.status_mut() = http::StatusCode::FORBIDDEN;
        response.headers_mut().insert(
            http::header::CONTENT_TYPE,
            http::HeaderValue::from_static("text/plain; charset=utf-8"),
        );
        response
    }
}

/// The loopback hosts a listener answers to, as `Host` names them.
const LOOPBACK_HOSTS: [&str; 3] = ["127.0.0.1", "localhost", "[::1]"];

impl HttpGuard {
    /// The rules of a loopback listener on `port`: its own loopback hosts and origins only.
    ///
    /// ```
    /// let guard = capstore::gateway::HttpGuard::loopback(8808);
    /// # drop(guard);
    /// ```
    pub fn loopback(port: u16) -> Self {
        HttpGuard {
            port,
            origins: LOOPBACK_HOSTS
                .iter()
                .map(|host| format!("http://{host}:{port}"))
                .collect(),
        }
    }

    /// Also lets requests from the web origin `origin` through (`scheme://host[:port]`, as
    /// browsers send it, e.g. `https://app.example.com`). `null`, wildcards and anything with
    /// a path are refused with a message.
    ///
    /// ```
    /// let mut guard = capstore::gateway::HttpGuard::loopback(8808);
    /// assert!(guard.allow_origin("https://app.example.com:8443").is_ok());
    /// assert!(guard.allow_origin("null").is_err());
    /// assert!(guard.allow_origin("*").is_err());
    /// assert!(guard.allow_origin("example.com").is_err());
    /// ```
    pub fn allow_origin(&mut self, origin: &str) -> Result<(), String> {
        let normalized = normalize_origin(origin);
        let valid = normalized.split_once("://").is_some_and(|(scheme, rest)| {
            !scheme.is_empty()
                && scheme
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b))
                && !rest.is_empty()
                && !rest.contains(['/', '*', ' ', '?', '#', '@'])
        });
        if !valid {
            return Err(format!(
                "`{origin}` is not a web origin like https://app.example.com (scheme://host[:port]; \
                 `null` and wildcards are never allowed)"
            ));
        }
        if !self.origins.contains(&normalized) {
            self.origins.push(normalized);
        }
        Ok(())
    }

    /// Whether `request` may be served: `Ok`, or the [`Refusal`] to answer with. Reads the
    /// `Host` (or the URI's authority) and `Origin` headers only; the rules are in
    /// [the gateway's docs](crate::gateway) (Over HTTP).
    pub fn check<B>(&self, request: &http::Request<B>) -> Result<(), Refusal> {
        let refuse = |reason: String| Err(Refusal { reason });
        let headers = request.headers();
        let host = match headers
            .get_all(http::header::HOST)
            .iter()
            .collect::<Vec<_>>()[..]
        {
            [one] => one.to_str().ok().map(str::to_ascii_lowercase),
            [] => request
                .uri()
                .authority()
                .map(|a| a.as_str().to_ascii_lowercase()),
            _ => return refuse("more than one Host header".into()),
        };
        let Some(host) = host else {
            return refuse("no Host header".into());
        };
        let port = self.port;
        let host_ok = LOOPBACK_HOSTS
            .iter()
            .any(|name| host == format!("{name}:{port}") || (port == 80 && host == *name));
        if !host_ok {
            return refuse(format!(
                "Host `{host}` is not this server (127.0.0.1:{port}, localhost:{port} or [::1]:{port})"
            ));
        }
        match headers
            .get_all(http::header::ORIGIN)
            .iter()
            .collect::<Vec<_>>()[..]
        {
            [] => Ok(()),
            [origin] => {
                let origin = origin.to_str().map(normalize_origin).unwrap_or_default();
                if self.origins.contains(&origin) {
                    Ok(())
                } else {
                    refuse(format!(
                        "Origin `{origin}` is not allowed (loopback origins of port {port}, or \
                         one given with --allow-origin)"
                    ))
                }
            }
            _ => refuse("more than one Origin header".into()),
        }
    }
}

fn normalize_origin(origin: &str) -> String {
    origin.trim().trim_end_matches('/').to_ascii_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(host: Option<&str>, origin: &[&str]) -> http::Request<()> {
        let mut builder = http::Request::builder().uri("/mcp");
        if let Some(host) = host {
            builder = builder.header("host", host);
        }
        for origin in origin {
            builder = builder.header("origin", *origin);
        }
        builder.body(()).unwrap()
    }

    #[test]
    fn hosts_and_origins_of_the_same_loopback_port_pass_and_nothing_else() {
        let mut guard = HttpGuard::loopback(4000);
        guard.allow_origin("HTTPS://App.Example.com/").unwrap();
        for host in [
            "127.0.0.1:4000",
            "localhost:4000",
            "[::1]:4000",
            "LOCALHOST:4000",
        ] {
            assert_eq!(guard.check(&request(Some(host), &[])), Ok(()), "{host}");
        }
        for host in [
            "evil.example:4000",
            "127.0.0.1:4001",
            "localhost",
            "127.0.0.1",
        ] {
            assert!(guard.check(&request(Some(host), &[])).is_err(), "{host}");
        }
        assert!(guard.check(&request(None, &[])).is_err());
        let host = Some("127.0.0.1:4000");
        for origin in [
            "http://127.0.0.1:4000",
            "http://localhost:4000",
            "http://[::1]:4000",
            "https://app.example.com",
        ] {
            assert_eq!(guard.check(&request(host, &[origin])), Ok(()), "{origin}");
        }
        for origin in [
            "null",
            "http://evil.example",
            "http://127.0.0.1:4001",
            "https://127.0.0.1:4000",
            "http://localhost",
            "https://app.example.com:8443",
            "",
        ] {
            let refused = guard.check(&request(host, &[origin])).unwrap_err();
            assert!(
                refused.reason.contains("is not allowed"),
                "{origin}: {refused}"
            );
        }
        assert!(
            guard
                .check(&request(
                    host,
                    &["http://localhost:4000", "http://evil.example"]
                ))
                .is_err()
        );
    }
}
