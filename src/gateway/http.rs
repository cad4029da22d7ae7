//! The gateway over HTTP: one loopback socket, the MCP endpoint at `/mcp` and the admin page
//! at `/` (and `/metrics`), every request behind one [`HttpGuard`] first, and an MCP request
//! behind a client's token when the gateway has clients. Kept apart from `server` (the MCP
//! side) and `admin` (the page), which it routes between, so neither imports the other.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use http::{Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full, combinators::BoxBody};

use super::admin::Page;
use super::clients::{Clients, TokenRefusal};
use super::guard::HttpGuard;
use super::server::{Gateway, GatewayError};

impl Gateway {
    /// Serves Streamable HTTP clients at `http://ADDR/mcp`, and the admin page at `/`, until
    /// the process ends: [`bind_http`](Self::bind_http), then [`HttpGateway::serve`].
    pub async fn serve_http(self, addr: SocketAddr) -> Result<(), GatewayError> {
        self.bind_http(addr).await?.serve().await
    }

    /// Listens on `addr` for Streamable HTTP clients (at `/mcp`) and the admin page (at `/`,
    /// behind a token: [`HttpGateway::page_url`]). `addr` must be a loopback address: the
    /// gateway runs tools on this machine and its MCP endpoint has no authentication of its
    /// own. Port 0 picks a free one ([`HttpGateway::local_addr`]). Every request will pass the
    /// [`HttpGuard`] of the listener's port (and [`GatewayOptions::allowed_origins`](super::GatewayOptions::allowed_origins)) first: a
    /// foreign `Host` or `Origin` is answered `403 Forbidden`, on either route.
    ///
    /// ```no_run
    /// # async fn f(gateway: capstore::gateway::Gateway) -> Result<(), capstore::gateway::GatewayError> {
    /// let http = gateway.bind_http("127.0.0.1:0".parse().unwrap()).await?;
    /// eprintln!("MCP at {}, the page at {}", http.mcp_url(), http.page_url());
    /// http.serve().await
    /// # }
    /// ```
    pub async fn bind_http(self, addr: SocketAddr) -> Result<HttpGateway, GatewayError> {
        if !addr.ip().is_loopback() {
            return Err(GatewayError(format!(
                "--http {addr}: the gateway binds to loopback addresses only (127.0.0.1, ::1)"
            )));
        }
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|e| GatewayError(format!("cannot listen on {addr}: {e}")))?;
        let local = listener
            .local_addr()
            .map_err(|e| GatewayError(format!("cannot listen on {addr}: {e}")))?;
        let mut guard = HttpGuard::loopback(local.port());
        for origin in self.allowed_origins() {
            guard
                .allow_origin(origin)
                .map_err(|e| GatewayError(format!("--allow-origin: {e}")))?;
        }
        let page = Arc::new(Page::new(self.clone(), local)?);
        Ok(HttpGateway {
            gateway: self,
            listener,
            local,
            guard: Arc::new(guard),
            page,
        })
    }
}

/// A gateway listening on a loopback address ([`Gateway::bind_http`]): the MCP endpoint at
/// `/mcp` and the admin page at `/`, on one socket, behind one [`HttpGuard`].
pub struct HttpGateway {
    gateway: Gateway,
    listener: tokio::net::TcpListener,
    local: SocketAddr,
    guard: Arc<HttpGuard>,
    page: Arc<Page>,
}

impl std::fmt::Debug for HttpGateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpGateway")
            .field("local", &self.local)
            .finish_non_exhaustive()
    }
}

impl HttpGateway {
    /// The address it listens on (the port chosen when port 0 was asked for).
    ///
    /// ```no_run
    /// # async fn f(gateway: capstore::gateway::Gateway) -> Result<(), capstore::gateway::GatewayError> {
    /// let http = gateway.bind_http("127.0.0.1:0".parse().unwrap()).await?;
    /// assert_ne!(http.local_addr().port(), 0);
    /// # Ok(()) }
    /// ```
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// Where MCP clients connect: `http://ADDR/mcp`.
    ///
    /// ```no_run
    /// # async fn f(gateway: capstore::gateway::Gateway) -> Result<(), capstore::gateway::GatewayError> {
    /// let http = gateway.bind_http("127.0.0.1:8808".parse().unwrap()).await?;
    /// assert_eq!(http.mcp_url(), "http://127.0.0.1:8808/mcp");
    /// # Ok(()) }
    /// ```
    pub fn mcp_url(&self) -> String {
        format!("http://{}/mcp", self.local)
    }

    /// The admin page with its token, `http://ADDR/?token=...`: whoever has it can approve
    /// quarantined tools, so print it where only the person who started the gateway reads it
    /// (`capstore serve` prints it on stderr). The token is new each time the gateway starts.
    ///
    /// ```no_run
    /// # async fn f(gateway: capstore::gateway::Gateway) -> Result<(), capstore::gateway::GatewayError> {
    /// let http = gateway.bind_http("127.0.0.1:8808".parse().unwrap()).await?;
    /// assert!(http.page_url().starts_with("http://127.0.0.1:8808/?token="));
    /// # Ok(()) }
    /// ```
    pub fn page_url(&self) -> String {
        self.page.url()
    }

    /// Serves until the process ends. Each connection gets its own task; each request passes
    /// the [`HttpGuard`] first, then goes to the page (`/`, `/admin/...`) or to the MCP
    /// endpoint (any other path).
    pub async fn serve(self) -> Result<(), GatewayError> {
        use rmcp::transport::streamable_http_server::{
            StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
        };
        let gateway = self.gateway.clone();
        let service = StreamableHttpService::new(
            // A session's turns are its own (usage).
            move || Ok(gateway.for_session()),
            Arc::new(LocalSessionManager::default()),
            StreamableHttpServerConfig::default(),
        );
        loop {
            let (stream, _) = match self.listener.accept().await {
                Ok(accepted) => accepted,
                Err(_) => {
                    // Out of file descriptors and the like: back off, keep serving.
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                    continue;
                }
            };
            let service = service.clone();
            let guard = Arc::clone(&self.guard);
            let page = Arc::clone(&self.page);
            let clients = self.gateway.clients().cloned();
            tokio::spawn(async move {
                let io = hyper_util::rt::TokioIo::new(stream);
                let service = hyper::service::service_fn(move |mut request| {
                    let service = service.clone();
                    let guard = Arc::clone(&guard);
                    let page = Arc::clone(&page);
                    let clients = clients.clone();
                    async move {
                        Ok::<_, std::convert::Infallible>(match guard.check(&request) {
                            Err(refusal) => refusal.into_response(),
                            Ok(()) if Page::owns(request.uri().path()) => {
                                page.handle(request).await
                            }
                            Ok(()) => match authenticate(clients.as_ref(), &mut request) {
                                Err(why) => unauthorized(why),
                                Ok(()) => service.handle(request).await,
                            },
                        })
                    }
                });
                let _ = hyper_util::server::conn::auto::Builder::new(
                    hyper_util::rt::TokioExecutor::new(),
                )
                .serve_connection(io, service)
                .await;
            });
        }
    }
}

/// With clients ([`Clients`]), an MCP request must name one by its token
/// (`Authorization: Bearer TOKEN`): the client goes into the request's extensions, where the
/// gateway's handlers read its scope; without a known token, `Err` says why (answered `401`).
/// Without clients, nothing is asked.
fn authenticate<B>(
    clients: Option<&Clients>,
    request: &mut Request<B>,
) -> Result<(), TokenRefusal> {
    let Some(clients) = clients else {
        return Ok(());
    };
    let token = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "))
        .map(str::trim);
    if let Some(client) = clients.check(token)? {
        request.extensions_mut().insert(client);
    }
    Ok(())
}

/// `401 Unauthorized` with a Bearer challenge, saying why.
fn unauthorized(why: TokenRefusal) -> Response<BoxBody<Bytes, Infallible>> {
    let mut response = Response::new(Full::new(Bytes::from(format!("{why}\n"))).boxed());
    *response.status_mut() = StatusCode::UNAUTHORIZED;
    let headers = response.headers_mut();
    headers.insert(
        header::WWW_AUTHENTICATE,
        http::HeaderValue::from_static("Bearer"),
    );
    headers.insert(
        header::CONTENT_TYPE,
        http::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}
