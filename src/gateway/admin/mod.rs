//! The gateway's admin page: a second face of `capstore serve --http`, on the same socket as
//! the MCP endpoint. A person sees which servers are up (and why one is down), what
//! `search_tools` finds for a query and why, each quarantined tool's approved and new
//! definitions side by side with Approve and Keep held buttons, and the recent calls.
//!
//! [`Page`] is the one entry point: [`Page::owns`] says which paths are the page's (`/` and
//! `/admin/...`; every other path stays the MCP endpoint's), [`Page::handle`] answers them.
//!
//! # Who may use it
//! Every request on the socket has passed the listener's [`HttpGuard`](crate::gateway::HttpGuard)
//! (its `Host` and `Origin`) before it gets here. Whoever holds the page can approve a
//! poisoned tool, so the page's own [`guard`] asks more: a random token (printed once on
//! stderr as `http://127.0.0.1:PORT/?token=...`, then kept in an `HttpOnly`, `SameSite=Strict`
//! cookie), an `Origin` that is absent or the page's own (no `--allow-origin` origin), and
//! one on every POST, whose body must also be JSON (no form of another site can send one).
//! Responses carry a strict Content-Security-Policy: scripts and styles only from the page's
//! own two files, nothing inline, no frames.
//!
//! # How it is built
//! Server-rendered HTML (`render`, with every server-provided text escaped), one small script
//! (`page.js`) and one style sheet (`page.css`) compiled into the binary with `include_str!`;
//! no build step, nothing fetched from elsewhere. The script polls `/admin/live` once a second
//! for the three live sections (rendered here) and swaps the ones that changed; search,
//! Approve and Keep held are `fetch` POSTs. The held tools are the followed hub's
//! ([`McpHub::held`](crate::mcp::live::McpHub::held)), their new definitions the ones their
//! servers offer now ([`McpHub::held_definition`](crate::mcp::live::McpHub::held_definition)).
//! Approve writes the trust file that `capstore approve` writes, only if the definition held
//! is still the one the page showed
//! ([`Quarantine::approve_pending`](crate::mcp::live::Quarantine::approve_pending)), then has
//! the hub import it at once. Keep held changes no trust: it records the decision beside the
//! trust file (`archive`), for the page to show.
//!
//! # What it costs
//! Nothing until the page is opened, besides recording definitions: each commit of the store
//! fingerprints every upstream tool (SHA-256, microseconds a tool; commits come from imports,
//! not from calls) and writes the definitions not seen before to a file beside the trust
//! file (`archive`), so that an
//! approved text can be shown after it changed (the trust file keeps fingerprints only, and
//! a held definition never reaches the store). An open page costs one request a second: a
//! few milliseconds of rendering; a held tool's diff is computed once per pair of definitions
//! (bounded: past 4 million compared pieces both texts are shown whole) and kept while it is
//! held.

mod archive;
mod calls;
mod diff;
mod escape;
mod guard;
mod render;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full, Limited, combinators::BoxBody};
use serde_json::{Value, json};

use super::clients::Clients;
use super::metrics::PATH as METRICS;
use super::server::{Gateway, GatewayError};
use crate::mcp::live::{McpHub, QuarantineReason, fingerprint};
use crate::tools::TOOLS;
use archive::Archive;
use calls::Calls;
use guard::Guard;
use render::HeldTool;

type Body = BoxBody<Bytes, Infallible>;

const PAGE_JS: &str = include_str!("page.js");
const PAGE_CSS: &str = include_str!("page.css");

/// What a page response may load: its own script and style sheet, its own requests, nothing
/// inline, no frames, no forms elsewhere.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; \
                   img-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// The largest POST body read (a query, or a tool's name and fingerprint).
const MAX_BODY: usize = 64 * 1024;

/// The admin page of one HTTP gateway. See the [module docs](self).
pub(crate) struct Page {
    gateway: Gateway,
    guard: Guard,
    url: String,
    mcp_url: String,
    archive: Option<Arc<Archive>>,
    calls: Calls,
    diffs: render::Diffs,
}

impl Page {
    /// The page of `gateway`, listening at `local`. Starts recording the store's definitions
    /// (when the gateway quarantines) and the executor's calls.
    pub(crate) fn new(gateway: Gateway, local: SocketAddr) -> Result<Page, GatewayError> {
        let guard = Guard::new(local, gateway.admin_token()).map_err(GatewayError)?;
        let host = match local {
            SocketAddr::V4(_) => format!("127.0.0.1:{}", local.port()),
            SocketAddr::V6(_) => format!("[::1]:{}", local.port()),
        };
        // The archive lives beside the trust file; a trust state shared through PostgreSQL
        // (`serve --state`) has none, and the page says so instead of offering decisions.
        let archive = gateway.quarantine().and_then(|q| q.path()).map(|trust| {
            let archive = Arc::new(Archive::open(trust));
            record_definitions(&gateway, &archive);
            archive
        });
        Ok(Page {
            calls: Calls::follow(gateway.events()),
            url: format!("http://{host}/?token={}", guard.token()),
            mcp_url: format!("http://{host}/mcp"),
            guard,
            archive,
            gateway,
            diffs: render::Diffs::default(),
        })
    }

    /// The page's address with its token.
    pub(crate) fn url(&self) -> String {
        self.url.clone()
    }

    /// Whether `path` is the page's (the rest is the MCP endpoint's).
    pub(crate) fn owns(path: &str) -> bool {
        path == "/" || path == "/favicon.ico" || path.starts_with("/admin/") || path == METRICS
    }

    /// Answers one request for the page (one that passed the listener's
    /// [`HttpGuard`](crate::gateway::HttpGuard)).
    pub(crate) async fn handle<B>(&self, request: Request<B>) -> Response<Body>
    where
        B: hyper::body::Body<Data = Bytes>,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let post = request.method() == Method::POST;
        if let Err(refusal) = self.guard.check_origin(&request) {
            return text(StatusCode::FORBIDDEN, &format!("Forbidden: {refusal}"));
        }
        let path = request.uri().path().to_string();
        if path == METRICS {
            return self.metrics(&request);
        }
        let token_in_url = self.guard.query_token(request.uri().query());
        if path == "/" && request.method() == Method::GET && token_in_url {
            // Into the cookie, and out of the address bar and the history.
            let mut response = text(StatusCode::SEE_OTHER, "to the page");
            let headers = response.headers_mut();
            headers.insert(header::LOCATION, http::HeaderValue::from_static("/"));
            if let Ok(cookie) = self.guard.set_cookie().parse() {
                headers.insert(header::SET_COOKIE, cookie);
            }
            return response;
        }
        if !self.guard.has_cookie(request.headers()) {
            return text(
                StatusCode::FORBIDDEN,
                "this page needs its token: open the address `capstore serve --http` printed on \
                 stderr (http://127.0.0.1:PORT/?token=...)",
            );
        }
        let (get, post) = (request.method() == Method::GET, post);
        match path.as_str() {
            "/" | "/admin/page.js" | "/admin/page.css" | "/admin/live" if !get => text(
                StatusCode::METHOD_NOT_ALLOWED,
                "method not allowed: use GET",
            ),
            "/" => html(self.shell()),
            "/admin/page.js" => asset("text/javascript; charset=utf-8", PAGE_JS),
            "/admin/page.css" => asset("text/css; charset=utf-8", PAGE_CSS),
            "/admin/live" => json_response(StatusCode::OK, &self.live()),
            "/admin/search" | "/admin/approve" | "/admin/hold" if !post => text(
                StatusCode::METHOD_NOT_ALLOWED,
                "method not allowed: use POST",
            ),
            "/admin/search" | "/admin/approve" | "/admin/hold" => {
                let body = match json_body(request).await {
                    Ok(body) => body,
                    Err(refusal) => return text(StatusCode::BAD_REQUEST, &refusal),
                };
                match path.as_str() {
                    "/admin/search" => {
                        let query = body["query"].as_str().unwrap_or("");
                        html(render::search(query, self.gateway.search_answer(query)))
                    }
                    "/admin/approve" => self.decide(&body, true),
                    _ => self.decide(&body, false),
                }
            }
            _ => text(StatusCode::NOT_FOUND, "not found"),
        }
    }

    fn shell(&self) -> String {
        let live = self.live();
        let part = |key: &str| live[key].as_str().unwrap_or("").to_string();
        render::shell(
            &self.mcp_url,
            &part("servers"),
            &part("quarantine"),
            &part("clients"),
            &part("calls"),
        )
    }

    /// `GET /metrics` for a scraper: the token as a bearer (or the page's cookie).
    fn metrics<B>(&self, request: &Request<B>) -> Response<Body> {
        if request.method() != Method::GET {
            return text(
                StatusCode::METHOD_NOT_ALLOWED,
                "method not allowed: use GET",
            );
        }
        let headers = request.headers();
        if !self.guard.has_bearer(headers) && !self.guard.has_cookie(headers) {
            return text(
                StatusCode::UNAUTHORIZED,
                "the metrics need the admin page's token: send `Authorization: Bearer TOKEN`",
            );
        }
        respond(
            StatusCode::OK,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
            self.gateway.metrics_text(),
        )
    }

    /// The live sections, rendered.
    fn live(&self) -> Value {
        json!({
            "servers": render::servers(self.gateway.hub().map(|hub| hub.status()).as_deref()),
            "quarantine": self.quarantine(),
            "clients": render::clients(
                &self.gateway.clients().map(Clients::list).unwrap_or_default(),
                self.gateway.clients().is_some_and(Clients::asks_tokens),
            ),
            "calls": render::calls(&self.calls.recent()),
        })
    }

    fn quarantine(&self) -> String {
        let Some(quarantine) = self.gateway.quarantine() else {
            return render::quarantine(
                Ok(Vec::new()),
                Some("Quarantine is off (--no-quarantine)."),
                &self.diffs,
            );
        };
        let Some(archive) = &self.archive else {
            return render::quarantine(Ok(Vec::new()), Some(&self.shared_note()), &self.diffs);
        };
        let hub = self.gateway.hub();
        let held = hub.as_ref().map(McpHub::held).unwrap_or_default();
        // A trust file that cannot be trusted holds every tool back, none for a reason of its
        // own: there is nothing to approve until it is fixed.
        if let Some(untrusted) = held.iter().find(|h| h.reason.is_none()) {
            return render::quarantine(
                Err(untrusted.why.clone()),
                archive.error().as_deref(),
                &self.diffs,
            );
        }
        let held = held
            .into_iter()
            .filter_map(|held| {
                let record = quarantine.record(&held.key).ok()??;
                let pending = record.pending?;
                let approved = record
                    .trusted
                    .as_deref()
                    .and_then(|print| archive.definition(&held.key, print));
                // What the server offers now, if it is still what the trust file holds back.
                let new = hub
                    .as_ref()
                    .and_then(|hub| hub.held_definition(&held.key))
                    .filter(|tool| fingerprint(tool) == pending)
                    .map(|tool| archive::Definition {
                        fingerprint: pending.clone(),
                        description: tool.description.clone(),
                        input_schema: tool.input_schema.to_value(),
                        first_seen: archive::now(),
                    });
                Some(HeldTool {
                    kept: archive.held(&held.key),
                    reason: held.reason.unwrap_or(QuarantineReason::Changed),
                    key: held.key,
                    pending,
                    trusted: record.trusted,
                    approved,
                    new,
                })
            })
            .collect();
        render::quarantine(Ok(held), archive.error().as_deref(), &self.diffs)
    }

    /// What the page says in place of its decisions when the trust state is shared (no trust
    /// file to keep definitions beside): what is held, and the command that approves it.
    fn shared_note(&self) -> String {
        let held: Vec<String> = self
            .gateway
            .hub()
            .map(|hub| hub.held().into_iter().map(|h| h.key).collect())
            .unwrap_or_default();
        let held = if held.is_empty() {
            "Nothing is held.".to_string()
        } else {
            format!("Held: {}.", held.join(", "))
        };
        format!(
            "{held} The trust state is shared through PostgreSQL (--state): this page does not \
             show definitions or decide on them yet; approve with `{} TOOL`.",
            self.gateway.approve_hint()
        )
    }

    /// Approve (or keep held) the definition the page showed: `{"tool": KEY, "fingerprint":
    /// FP}`. Refused when the held definition is no longer `FP` (it changed again meanwhile).
    fn decide(&self, body: &Value, approve: bool) -> Response<Body> {
        let (Some(tool), Some(print)) = (body["tool"].as_str(), body["fingerprint"].as_str())
        else {
            return decision(StatusCode::BAD_REQUEST, "give `tool` and `fingerprint`");
        };
        let Some(quarantine) = self.gateway.quarantine() else {
            return decision(StatusCode::CONFLICT, "quarantine is off");
        };
        let Some(archive) = &self.archive else {
            return decision(StatusCode::CONFLICT, &self.shared_note());
        };
        match quarantine.record(tool) {
            Err(e) => return decision(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
            Ok(Some(record)) if record.pending.as_deref() == Some(print) => {}
            Ok(Some(record)) if record.pending.is_some() => {
                return decision(
                    StatusCode::CONFLICT,
                    &format!("`{tool}` changed again since the page showed it: look again"),
                );
            }
            Ok(_) => return decision(StatusCode::CONFLICT, &format!("`{tool}` is not held")),
        }
        if !approve {
            return match archive.hold(tool, print) {
                Ok(()) => decision(StatusCode::OK, &format!("`{tool}` stays held")),
                Err(e) => decision(StatusCode::INTERNAL_SERVER_ERROR, &e),
            };
        }
        // Checked again under the trust file's lock: a definition the server sent since the
        // check above is not approved.
        match quarantine.approve_pending(tool, print) {
            Ok(true) => {
                // Imported now, not at the hub's next look at the file.
                if let Some(hub) = self.gateway.hub() {
                    hub.recheck();
                }
                decision(
                    StatusCode::OK,
                    &format!("approved `{tool}`: it is offered and callable again"),
                )
            }
            Ok(false) => decision(
                StatusCode::CONFLICT,
                &format!("`{tool}` changed again since the page showed it: look again"),
            ),
            Err(e) => decision(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
        }
    }
}

/// Records the store's definitions now and after each commit that changes the tools, while
/// the archive is in use (usage written by the turns does not wake it).
fn record_definitions(gateway: &Gateway, archive: &Arc<Archive>) {
    let store = gateway.store().clone();
    archive.record(&store.snapshot());
    let mut versions = store
        .table_versions(&TOOLS)
        .unwrap_or_else(|_| store.versions());
    let archive = Arc::downgrade(archive);
    tokio::spawn(async move {
        while versions.changed().await.is_ok() {
            let Some(archive) = archive.upgrade() else {
                return;
            };
            archive.record(&store.snapshot());
        }
    });
}

/// A POST's JSON body (`Content-Type: application/json`, at most [`MAX_BODY`] bytes).
async fn json_body<B>(request: Request<B>) -> Result<Value, String>
where
    B: hyper::body::Body<Data = Bytes>,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let json = request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if !json {
        return Err("the body must be JSON (Content-Type: application/json)".into());
    }
    let bytes = Limited::new(request.into_body(), MAX_BODY)
        .collect()
        .await
        .map_err(|_| format!("the body must be JSON of at most {MAX_BODY} bytes"))?
        .to_bytes();
    serde_json::from_slice(&bytes).map_err(|e| format!("the body is not JSON: {e}"))
}

fn respond(status: StatusCode, content_type: &str, body: String) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from(body)).boxed());
    *response.status_mut() = status;
    let headers = response.headers_mut();
    for (name, value) in [
        (header::CONTENT_TYPE, content_type),
        (header::CONTENT_SECURITY_POLICY, CSP),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::REFERRER_POLICY, "no-referrer"),
        (header::CACHE_CONTROL, "no-store"),
        (header::X_FRAME_OPTIONS, "DENY"),
    ] {
        if let Ok(value) = value.parse() {
            headers.insert(name, value);
        }
    }
    response
}

fn text(status: StatusCode, body: &str) -> Response<Body> {
    respond(status, "text/plain; charset=utf-8", format!("{body}\n"))
}

fn html(body: String) -> Response<Body> {
    respond(StatusCode::OK, "text/html; charset=utf-8", body)
}

fn asset(content_type: &str, body: &'static str) -> Response<Body> {
    respond(StatusCode::OK, content_type, body.to_string())
}

fn json_response(status: StatusCode, value: &Value) -> Response<Body> {
    respond(status, "application/json", value.to_string())
}

fn decision(status: StatusCode, message: &str) -> Response<Body> {
    json_response(
        status,
        &json!({"ok": status == StatusCode::OK, "message": message}),
    )
}
