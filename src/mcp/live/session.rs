//! One server's connection: a task that connects, imports the server's tools, re-imports them
//! when the server says its list changed, and reconnects with back-off when it goes away; and
//! the forwarding of `tools/call` over whatever connection is current.

use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use parking_lot::{Mutex, RwLock};
use rmcp::model::{
    CallToolRequestParams, ClientConfig, ClientRequest, CustomRequest, CustomResult,
    Implementation, ProtocolVersion, ServerResult,
};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, Peer, RoleClient, ServiceError, ServiceExt};
use serde_json::Value;
use tokio::sync::{Notify, broadcast, oneshot, watch};

use crate::exec::{HANDLERS, HandlerError, ToolHandler};
use crate::mcp::config::{ServerConfig, ServerTransport};
use crate::mcp::{ImportReport, McpError, McpToolList, import_server_in};
use crate::store::{Store, StoreError};
use crate::tools::TOOLS;

use super::error::{CallError, LiveError};
use super::quarantine::{HeldTool, Quarantine, Verdict};
use super::status::{LiveEvent, LiveOptions, ServerState, ServerStatus};
use super::stderr::StderrTail;
#[cfg(feature = "mcp-oauth")]
use super::upstream_auth::{OAuthSession, TokenCheck};

/// How long a stdio server that failed is given to finish writing to stderr, so that its last
/// words make it into the error.
const STDERR_SETTLE: Duration = Duration::from_millis(500);
/// How long shutting down waits for a server to close before it is killed.
const CLOSE_GRACE: Duration = Duration::from_secs(3);

/// A server's shared state: what the task keeps up to date and what its tools' handlers use.
pub(crate) struct Session {
    pub(crate) name: String,
    /// The connection, while there is one; `None` makes calls fail fast.
    peer: RwLock<Option<Peer<RoleClient>>>,
    status: RwLock<ServerStatus>,
    stderr: Arc<StderrTail>,
    call_timeout: Duration,
    /// The trust file every list is checked against before it is imported.
    quarantine: Option<Quarantine>,
    /// The server's whole last list (held tools included), kept so that an approval can be
    /// imported without asking the server again. Locked for the whole of an import, so that
    /// imports of one server never interleave.
    last_list: Mutex<Option<McpToolList>>,
    /// The tools of the last list held back by the quarantine.
    held: RwLock<Vec<HeldTool>>,
    /// The sign-in of a server with `"oauth"` in its entry.
    #[cfg(feature = "mcp-oauth")]
    oauth: Option<OAuthSession>,
}

/// The rmcp client handler: it tells the session task that the server's tool list changed.
struct Client {
    list_changed: Arc<Notify>,
}

impl ClientHandler for Client {
    fn on_tool_list_changed(
        &self,
        _context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + Send + '_ {
        // A permit is kept if the task is busy: several notifications make one re-list.
        self.list_changed.notify_one();
        std::future::ready(())
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            Default::default(),
            Implementation::new("capstore", env!("CARGO_PKG_VERSION")),
        )
        // The newest version with an `initialize` handshake; servers answer with theirs.
        .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
    }
}

type Connection = RunningService<RoleClient, Client>;

impl Session {
    pub(crate) fn new(server: &ServerConfig, options: &LiveOptions) -> Self {
        let name = server.name.as_str();
        Session {
            #[cfg(feature = "mcp-oauth")]
            oauth: server
                .oauth()
                .map(|_| OAuthSession::new(name, options.tokens.clone())),
            name: name.to_string(),
            peer: RwLock::new(None),
            status: RwLock::new(ServerStatus::new(name)),
            stderr: Arc::default(),
            call_timeout: options.call_timeout,
            quarantine: options.quarantine.clone(),
            last_list: Mutex::new(None),
            held: RwLock::new(Vec::new()),
        }
    }

    /// The tools of this server held back by the quarantine.
    pub(crate) fn held(&self) -> Vec<HeldTool> {
        self.held.read().clone()
    }

    /// The definition of the held tool `key` (`server/name`) in the server's last list: what
    /// an approval would trust. `None` when it is not held.
    pub(crate) fn held_definition(&self, key: &str) -> Option<crate::tools::Tool> {
        if !self.held.read().iter().any(|held| held.key == key) {
            return None;
        }
        let name = key.strip_prefix(&self.name)?.strip_prefix('/')?;
        let last = self.last_list.lock();
        let tool = last
            .as_ref()?
            .tools()
            .iter()
            .find(|tool| tool.name == name)?;
        Some(tool.to_tool(&self.name))
    }

    pub(crate) fn status(&self) -> ServerStatus {
        let mut status = self.status.read().clone();
        status.stderr = self.stderr.lines();
        #[cfg(feature = "mcp-oauth")]
        {
            status.auth = self.oauth.as_ref().map(OAuthSession::status);
        }
        status
    }

    /// Changes the status; keeps `down_since` in step with the state.
    fn update(&self, change: impl FnOnce(&mut ServerStatus)) {
        let mut status = self.status.write();
        change(&mut status);
        match status.state {
            ServerState::Ready => status.down_since = None,
            ServerState::Reconnecting | ServerState::Stopped | ServerState::SignInRequired => {
                status.down_since.get_or_insert_with(SystemTime::now);
            }
            ServerState::Connecting => {}
        }
    }

    /// Calls the server's tool `tool` over the current connection. Fails at once when there is
    /// none; a call that outlives the timeout is dropped, which sends `notifications/cancelled`.
    /// With feature `otel`, in a span of its own whose trace goes on upstream in the request's
    /// `_meta` ([`crate::trace`]).
    pub(crate) async fn call(&self, tool: &str, args: Value) -> Result<Value, CallError> {
        #[cfg(feature = "otel")]
        let (span, meta) = crate::trace::UpstreamSpan::start(&self.name, tool);
        #[cfg(not(feature = "otel"))]
        let meta = None;
        let result = self.forward(tool, args, meta).await;
        #[cfg(feature = "otel")]
        span.end(result.as_ref().err().map(|e| (e.kind(), e.to_string())));
        result
    }

    /// [`Self::call`], with the request's `_meta`.
    async fn forward(
        &self,
        tool: &str,
        args: Value,
        meta: Option<rmcp::model::RequestMetaObject>,
    ) -> Result<Value, CallError> {
        let arguments = match args {
            Value::Object(arguments) => Some(arguments),
            Value::Null => None,
            _ => {
                return Err(CallError::InvalidArguments {
                    server: self.name.clone(),
                    tool: tool.to_string(),
                });
            }
        };
        #[cfg(feature = "mcp-oauth")]
        self.check_token(tool).await?;
        let peer = self.peer.read().clone();
        let Some(peer) = peer.filter(|peer| !peer.is_transport_closed()) else {
            self.forget_closed_connection(|| "the connection closed".to_string());
            return Err(CallError::Unavailable {
                server: self.name.clone(),
                reason: self.down_reason(),
            });
        };
        let mut params = CallToolRequestParams::new(tool.to_string());
        params.arguments = arguments;
        params.meta = meta;
        let reply = tokio::time::timeout(self.call_timeout, peer.call_tool(params)).await;
        let tool = tool.to_string();
        let server = self.name.clone();
        match reply {
            Err(_) => Err(CallError::Timeout {
                server,
                tool,
                after: self.call_timeout,
            }),
            Ok(Err(ServiceError::McpError(error))) => Err(CallError::Protocol {
                server,
                tool,
                code: error.code.0,
                message: error.message.into_owned(),
                data: error.data,
            }),
            Ok(Err(error)) => {
                let reason = error.to_string();
                self.forget_closed_connection(|| {
                    format!("the connection was lost during `{tool}`: {reason}")
                });
                Err(CallError::Disconnected {
                    server,
                    tool,
                    reason,
                })
            }
            Ok(Ok(result)) => {
                let is_error = result.is_error == Some(true);
                let result =
                    serde_json::to_value(&result).map_err(|e| CallError::Disconnected {
                        server: server.clone(),
                        tool: tool.clone(),
                        reason: format!("unreadable result: {e}"),
                    })?;
                if is_error {
                    Err(CallError::Tool {
                        server,
                        tool,
                        text: content_text(&result),
                        result,
                    })
                } else {
                    Ok(result)
                }
            }
        }
    }

    /// Forgets the current connection if its transport has closed, so that the calls after
    /// this one fail fast with [`CallError::Unavailable`] instead of reaching a dead connection.
    /// The reason quotes what the server's stderr holds so far; the task serving the connection
    /// notices its end a moment later, records the fuller reason (once the stderr is read to its
    /// end) and reconnects. A connection that is still open (a failed HTTP request on a live
    /// session) is kept.
    fn forget_closed_connection(&self, reason: impl FnOnce() -> String) {
        let mut peer = self.peer.write();
        if peer.as_ref().is_some_and(|peer| peer.is_transport_closed()) {
            *peer = None;
            let reason = self.stderr.annotate(reason());
            self.update(|s| {
                s.state = ServerState::Reconnecting;
                s.last_error = Some(reason);
            });
        }
    }

    /// For an OAuth server: fails at once when it needs sign-in, and otherwise makes sure the
    /// token is fresh before the call is sent (a refresh that fails for a passing reason fails
    /// the call and keeps the token; one that is refused puts the server in
    /// [`ServerState::SignInRequired`]). Bounded by the call timeout.
    #[cfg(feature = "mcp-oauth")]
    async fn check_token(&self, tool: &str) -> Result<(), CallError> {
        let Some(oauth) = &self.oauth else {
            return Ok(());
        };
        let sign_in = |reason: String| CallError::SignInRequired {
            server: self.name.clone(),
            reason,
            command: oauth.command(),
        };
        if self.status.read().state == ServerState::SignInRequired {
            return Err(sign_in(
                "no usable token: never signed in, or the refresh token was refused".to_string(),
            ));
        }
        let Some(client) = oauth.current() else {
            // Not connected: the peer check after this says so.
            return Ok(());
        };
        let checked = tokio::time::timeout(self.call_timeout, oauth.check(&client)).await;
        match checked {
            Ok(TokenCheck::Ready) => Ok(()),
            Ok(TokenCheck::SignIn(reason)) => {
                *self.peer.write() = None;
                oauth.signed_out();
                // The task drops the connection and waits for a new sign-in.
                oauth.sign_in_needed.notify_one();
                let error = oauth.sign_in_error(reason.clone());
                self.update(|s| {
                    s.state = ServerState::SignInRequired;
                    s.last_error = Some(error.to_string());
                });
                Err(sign_in(reason))
            }
            Ok(TokenCheck::Failed(reason)) => Err(CallError::TokenRefresh {
                server: self.name.clone(),
                tool: tool.to_string(),
                reason,
            }),
            Err(_) => Err(CallError::TokenRefresh {
                server: self.name.clone(),
                tool: tool.to_string(),
                reason: format!(
                    "no answer from the authorization server within {:.1} s",
                    self.call_timeout.as_secs_f64()
                ),
            }),
        }
    }

    fn down_reason(&self) -> String {
        let status = self.status.read();
        match (&status.state, &status.last_error) {
            (ServerState::Stopped, _) => "the hub was shut down".to_string(),
            (_, Some(error)) => error.clone(),
            (ServerState::Connecting, None) => "not connected yet".to_string(),
            _ => "not connected".to_string(),
        }
    }

    /// The handler that runs `tool` (its MCP name) on this server, for the tool keyed `key`.
    fn handler(self: &Arc<Self>, key: &str, tool: &str) -> ToolHandler {
        let session = Arc::clone(self);
        let tool: Arc<str> = tool.into();
        ToolHandler::new(key, move |args| {
            let session = Arc::clone(&session);
            let tool = Arc::clone(&tool);
            async move {
                session
                    .call(&tool, args)
                    .await
                    .map_err(HandlerError::with_cause)
            }
        })
    }

    /// Makes the server's tools in the store exactly the trusted tools of `list`, with a
    /// forwarding handler for each tool that has none, in one transaction (committed only if
    /// something changed). The tools the quarantine holds back are left out, and kept in
    /// [`held`](Self::held).
    fn import(
        self: &Arc<Self>,
        store: &Store,
        list: &McpToolList,
    ) -> Result<ImportReport, McpError> {
        let mut last = self.last_list.lock();
        let report = self.import_trusted(store, list);
        *last = Some(list.clone());
        report
    }

    /// Imports the last list again if some of it was held back and the trust file now trusts
    /// more of it (an approval). `None` when there was nothing to do.
    pub(crate) fn recheck(
        self: &Arc<Self>,
        store: &Store,
    ) -> Option<Result<ImportReport, McpError>> {
        let last = self.last_list.lock();
        let list = last.as_ref()?;
        if self.held.read().is_empty() {
            return None;
        }
        let report = self.import_trusted(store, list);
        Some(report).filter(|r| !matches!(r, Ok(report) if report.is_unchanged()))
    }

    /// The tools of `list` the quarantine lets through, and those it holds back (all of them,
    /// with the file's error, when the trust file cannot be read: fail closed).
    fn screen(&self, list: &McpToolList) -> (McpToolList, Vec<HeldTool>) {
        let Some(quarantine) = &self.quarantine else {
            return (list.clone(), Vec::new());
        };
        let tools: Vec<crate::tools::Tool> =
            list.tools().iter().map(|t| t.to_tool(&self.name)).collect();
        let verdicts: Vec<Result<(), HeldTool>> = match quarantine.check_all(tools.iter()) {
            Ok(verdicts) => tools
                .iter()
                .zip(verdicts)
                .map(|(tool, verdict)| match verdict {
                    Verdict::Trusted => Ok(()),
                    Verdict::Quarantined(reason) => Err(HeldTool {
                        key: tool.qualified_name(),
                        reason: Some(reason),
                        why: reason.to_string(),
                    }),
                })
                .collect(),
            Err(error) => tools
                .iter()
                .map(|tool| {
                    Err(HeldTool {
                        key: tool.qualified_name(),
                        reason: None,
                        why: error.to_string(),
                    })
                })
                .collect(),
        };
        let mut trusted = list.clone();
        let mut verdict = verdicts.iter();
        trusted.retain(|_| verdict.next().is_some_and(Result::is_ok));
        let held = verdicts.into_iter().filter_map(Result::err).collect();
        (trusted, held)
    }

    fn import_trusted(
        self: &Arc<Self>,
        store: &Store,
        list: &McpToolList,
    ) -> Result<ImportReport, McpError> {
        let (list, held) = self.screen(list);
        let list = &list;
        let mut tx = store.begin();
        let mut report = import_server_in(&mut tx, &self.name, list)?;
        *self.held.write() = held;
        let handlers_added = tx.all_or_nothing(|tx| {
            let mut added = false;
            for tool in list.tools() {
                let key = format!("{}/{}", self.name, tool.name);
                // A handler belongs to its tool: only for the tools the import holds.
                if tx.view().contains(&TOOLS, &key)? && !tx.view().contains(&HANDLERS, &key)? {
                    tx.upsert(&HANDLERS, self.handler(&key, &tool.name))?;
                    added = true;
                }
            }
            Ok::<_, StoreError>(added)
        })?;
        if handlers_added || !report.is_unchanged() {
            report.version = Some(tx.commit().version);
        }
        Ok(report)
    }
}

/// Whether a connection's error is a server asking for OAuth (a 401 with `WWW-Authenticate`,
/// which rmcp reports as "Auth required"), anywhere in its chain of causes.
fn asks_for_oauth(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut next = Some(error);
    while let Some(error) = next {
        if error.to_string().contains("Auth required") {
            return true;
        }
        next = error.source();
    }
    false
}

/// A server whose entry has `"oauth"` always has an OAuth session (both come from the same
/// entry); should that ever not hold, the server is reported as needing sign-in, not a panic.
#[cfg(feature = "mcp-oauth")]
fn no_oauth_session(server: &str) -> LiveError {
    LiveError::SignInRequired {
        server: server.to_string(),
        reason: "its OAuth session was not set up".to_string(),
        command: format!("capstore auth {server} --mcp-config FILE"),
    }
}

/// A dropped tool's error, naming the field.
fn describe_dropped(error: &McpError) -> String {
    match error {
        McpError::InvalidTool {
            index,
            name,
            field,
            reason,
        } => {
            let name = name
                .as_deref()
                .map(|n| format!(" `{n}`"))
                .unwrap_or_default();
            format!("tool #{index}{name}, field `{field}`: {reason}")
        }
        other => other.to_string(),
    }
}

/// The text of a `tools/call` result's text blocks, joined by new lines.
fn content_text(result: &Value) -> String {
    let texts: Vec<&str> = result["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|block| block["text"].as_str())
        .collect();
    if texts.is_empty() {
        "the tool reported an error with no text".to_string()
    } else {
        texts.join("\n")
    }
}

/// Resolves when a call found that the server needs sign-in; never for other servers.
async fn sign_in_needed(session: &Session) {
    #[cfg(feature = "mcp-oauth")]
    if let Some(oauth) = &session.oauth {
        return oauth.sign_in_needed.notified().await;
    }
    let _ = session;
    std::future::pending::<()>().await
}

/// What the task needs besides the session.
pub(crate) struct Task {
    pub(crate) session: Arc<Session>,
    pub(crate) config: ServerConfig,
    pub(crate) store: Store,
    pub(crate) options: LiveOptions,
    pub(crate) events: broadcast::Sender<LiveEvent>,
    pub(crate) shutdown: watch::Receiver<bool>,
}

/// How a connection ended.
enum End {
    Closed(String),
    /// A call found the OAuth token unusable: sign-in is needed.
    SignIn,
    Shutdown,
}

impl Task {
    /// Connects, imports, serves until the connection ends, and again with back-off, until shut
    /// down. The first attempt's outcome goes to `first`.
    pub(crate) async fn run(
        mut self,
        first: oneshot::Sender<(Result<ImportReport, LiveError>, Duration)>,
    ) {
        let mut first = Some(first);
        let mut delay = self.options.reconnect_initial;
        loop {
            let start = Instant::now();
            self.session.update(|s| s.state = ServerState::Connecting);
            let mut stop = self.shutdown.clone();
            let attempt = tokio::select! {
                attempt = self.connect_and_import() => attempt,
                _ = stop.changed() => break,
            };
            match attempt {
                Ok((connection, list_changed, report)) => {
                    delay = self.options.reconnect_initial;
                    match first.take() {
                        Some(first) => {
                            let _ = first.send((Ok(report.clone()), start.elapsed()));
                        }
                        None => {
                            let _ = self.events.send(LiveEvent::Reconnected {
                                server: self.session.name.clone(),
                                report,
                            });
                        }
                    }
                    let end = self.serve(connection, list_changed).await;
                    *self.session.peer.write() = None;
                    match end {
                        End::Shutdown => break,
                        End::SignIn => {
                            let reason = self.session.status.read().last_error.clone();
                            let _ = self.events.send(LiveEvent::Down {
                                server: self.session.name.clone(),
                                reason: reason.unwrap_or_else(|| "needs sign-in".to_string()),
                            });
                            if !self.wait_for_sign_in().await {
                                break;
                            }
                            delay = self.options.reconnect_initial;
                            continue;
                        }
                        End::Closed(reason) => {
                            self.session.stderr.settle(STDERR_SETTLE).await;
                            let reason = self.session.stderr.annotate(reason);
                            self.session.update(|s| {
                                s.state = ServerState::Reconnecting;
                                s.last_error = Some(reason.clone());
                            });
                            let _ = self.events.send(LiveEvent::Down {
                                server: self.session.name.clone(),
                                reason,
                            });
                        }
                    }
                }
                Err(error) => {
                    let sign_in = matches!(error, LiveError::SignInRequired { .. });
                    self.session.update(|s| {
                        s.state = if sign_in {
                            ServerState::SignInRequired
                        } else {
                            ServerState::Reconnecting
                        };
                        s.last_error = Some(error.to_string());
                    });
                    match first.take() {
                        Some(first) => {
                            let _ = first.send((Err(error), start.elapsed()));
                        }
                        None => {
                            let _ = self.events.send(LiveEvent::Failed { error });
                        }
                    }
                    if sign_in {
                        if !self.wait_for_sign_in().await {
                            break;
                        }
                        delay = self.options.reconnect_initial;
                        continue;
                    }
                }
            }
            tokio::select! {
                () = tokio::time::sleep(delay) => {}
                _ = self.shutdown.changed() => break,
            }
            delay = (delay * 2).min(self.options.reconnect_max);
        }
        *self.session.peer.write() = None;
        self.session.update(|s| s.state = ServerState::Stopped);
    }

    /// Waits for a new token in the server's store (or shutdown: `false`). Without the
    /// `mcp-oauth` feature, a server cannot be signed in to: waits for shutdown.
    async fn wait_for_sign_in(&mut self) -> bool {
        #[cfg(feature = "mcp-oauth")]
        if let Some(oauth) = &self.session.oauth {
            return oauth.wait_for_sign_in(&mut self.shutdown).await;
        }
        let _ = self.shutdown.changed().await;
        false
    }

    async fn connect_and_import(
        &self,
    ) -> Result<(Connection, Arc<Notify>, ImportReport), LiveError> {
        let list_changed = Arc::new(Notify::new());
        let client = Client {
            list_changed: Arc::clone(&list_changed),
        };
        let connection = self.connect(client).await?;
        let peer = connection.peer().clone();
        let info = peer.peer_info();
        let list = self.list(&peer).await?;
        // Calls work from the moment the tools are visible.
        *self.session.peer.write() = Some(peer);
        let report = self.session.import(&self.store, &list).map_err(|error| {
            *self.session.peer.write() = None;
            LiveError::Import {
                server: self.session.name.clone(),
                error,
            }
        })?;
        self.session.update(|s| {
            s.state = ServerState::Ready;
            s.tools = list.len();
            s.connects += 1;
            s.last_error = None;
            if let Some(info) = &info {
                s.protocol_version = Some(info.protocol_version.to_string());
                s.server_info = info
                    .server_info
                    .as_ref()
                    .map(|i| format!("{} {}", i.name, i.version));
            }
        });
        Ok((connection, list_changed, report))
    }

    /// Starts the server (stdio) or opens the session (HTTP) and runs `initialize`.
    async fn connect(&self, client: Client) -> Result<Connection, LiveError> {
        let server = self.session.name.clone();
        let handshake = match &self.config.transport {
            ServerTransport::Stdio {
                command,
                args,
                env,
                cwd,
            } => {
                let mut cmd = tokio::process::Command::new(command);
                cmd.args(args).envs(env);
                if let Some(cwd) = cwd {
                    cmd.current_dir(cwd);
                }
                let mut wrapped = process_wrap::tokio::CommandWrap::from(cmd);
                // Its own process group, so that stopping it stops what it started.
                wrapped.wrap(process_wrap::tokio::ProcessGroup::leader());
                let (transport, pipe) = TokioChildProcess::builder(wrapped)
                    .stderr(Stdio::piped())
                    .spawn()
                    .map_err(|e| LiveError::Spawn {
                        server: server.clone(),
                        command: command.clone(),
                        reason: e.to_string(),
                    })?;
                if let Some(pipe) = pipe {
                    self.session.stderr.read(pipe);
                }
                tokio::time::timeout(self.options.connect_timeout, client.serve(transport)).await
            }
            ServerTransport::Http {
                url,
                headers,
                oauth,
            } => {
                let mut custom = std::collections::HashMap::new();
                for (name, value) in headers {
                    let header = http::HeaderName::from_bytes(name.as_bytes())
                        .map_err(|e| e.to_string())
                        .and_then(|n| {
                            http::HeaderValue::from_str(value)
                                .map(|v| (n, v))
                                .map_err(|e| e.to_string())
                        })
                        .map_err(|reason| LiveError::Spawn {
                            server: server.clone(),
                            command: url.clone(),
                            reason: format!("header `{name}`: {reason}"),
                        })?;
                    custom.insert(header.0, header.1);
                }
                let config = StreamableHttpClientTransportConfig::with_uri(url.as_str())
                    .custom_headers(custom);
                let timeout = self.options.connect_timeout;
                match oauth {
                    #[cfg(feature = "mcp-oauth")]
                    Some(_) => match &self.session.oauth {
                        Some(session) => {
                            // Every request asks the client for the token (refreshed before
                            // it expires); none is fixed in the configuration.
                            let http = session.connect(url, timeout).await?;
                            let transport =
                                rmcp::transport::StreamableHttpClientTransport::with_client(
                                    http, config,
                                );
                            tokio::time::timeout(timeout, client.serve(transport)).await
                        }
                        None => return Err(no_oauth_session(&server)),
                    },
                    #[cfg(not(feature = "mcp-oauth"))]
                    Some(_) => {
                        return Err(LiveError::SignInRequired {
                            server: server.clone(),
                            reason: "this build of capstore has no OAuth support (cargo \
                                     feature `mcp-oauth`)"
                                .to_string(),
                            command: format!("capstore auth {server} --mcp-config FILE"),
                        });
                    }
                    None => {
                        let transport =
                            rmcp::transport::StreamableHttpClientTransport::from_config(config);
                        tokio::time::timeout(timeout, client.serve(transport)).await
                    }
                }
            }
        };
        match handshake {
            Ok(Ok(connection)) => Ok(connection),
            Ok(Err(error)) if asks_for_oauth(&error) => {
                let command = format!("capstore auth {server} --mcp-config FILE");
                #[cfg(feature = "mcp-oauth")]
                if let Some(oauth) = &self.session.oauth {
                    // The token was refused by the server itself, and a refresh did not help.
                    oauth.signed_out();
                    return Err(oauth.sign_in_error("the server refused the stored token (401)"));
                }
                Err(LiveError::SignInRequired {
                    server: server.clone(),
                    reason: "it answered 401 and asks for OAuth sign-in, but its entry has no \
                             `\"oauth\": true`; add it to the configuration"
                        .to_string(),
                    command,
                })
            }
            Ok(Err(error)) => {
                self.session.stderr.settle(STDERR_SETTLE).await;
                Err(LiveError::Handshake {
                    server,
                    reason: error.to_string(),
                    stderr: self.session.stderr.quote(),
                })
            }
            Err(_) => Err(LiveError::Timeout {
                server,
                phase: "initialize",
                after: self.options.connect_timeout,
                stderr: self.session.stderr.quote(),
            }),
        }
    }

    /// Every page of `tools/list`, within the list timeout and the page and tool limits. A
    /// malformed or oversized tool is dropped alone and named in the status's `dropped`.
    async fn list(&self, peer: &Peer<RoleClient>) -> Result<McpToolList, LiveError> {
        let (list, dropped) =
            tokio::time::timeout(self.options.list_timeout, self.list_pages(peer))
                .await
                .map_err(|_| LiveError::Timeout {
                    server: self.session.name.clone(),
                    phase: "tools/list",
                    after: self.options.list_timeout,
                    stderr: self.session.stderr.quote(),
                })??;
        self.session.update(|s| s.dropped = dropped);
        Ok(list)
    }

    async fn list_pages(
        &self,
        peer: &Peer<RoleClient>,
    ) -> Result<(McpToolList, Vec<String>), LiveError> {
        let server = || self.session.name.clone();
        let options = &self.options;
        let mut list = McpToolList::default();
        let mut dropped = Vec::new();
        let mut cursor: Option<String> = None;
        for _page in 0..options.max_pages {
            // Asked raw and read with capstore's own parser (not rmcp's typed list), so that
            // one malformed tool is named and dropped, not the whole answer refused.
            let params = cursor.take().map(|c| serde_json::json!({ "cursor": c }));
            let request = ClientRequest::CustomRequest(CustomRequest::new("tools/list", params));
            let value = match peer.send_request(request).await {
                Ok(ServerResult::CustomResult(CustomResult(value))) => value,
                Ok(other) => serde_json::to_value(other).unwrap_or(Value::Null),
                Err(ServiceError::McpError(error)) => {
                    return Err(LiveError::List {
                        server: server(),
                        reason: format!("error {}: {}", error.code.0, error.message),
                    });
                }
                Err(error) => {
                    return Err(LiveError::List {
                        server: server(),
                        reason: error.to_string(),
                    });
                }
            };
            let (page, bad) =
                McpToolList::from_value_dropping(value, list.len(), options.max_tool_bytes)
                    .map_err(|error| LiveError::Import {
                        server: server(),
                        error,
                    })?;
            dropped.extend(bad.into_iter().map(|error| {
                format!(
                    "MCP server `{}`: {}; dropped, its other tools are kept",
                    self.session.name,
                    describe_dropped(&error)
                )
            }));
            list.extend(page).map_err(|error| LiveError::Import {
                server: server(),
                error,
            })?;
            if list.len() > options.max_tools {
                return Err(LiveError::Limit {
                    server: server(),
                    limit: "tools per server",
                    max: options.max_tools,
                    flag: "--max-server-tools",
                });
            }
            match list.next_cursor() {
                None => return Ok((list, dropped)),
                Some(next) => cursor = Some(next.to_string()),
            }
        }
        Err(LiveError::Limit {
            server: server(),
            limit: "pages per tools/list",
            max: options.max_pages,
            flag: "--max-pages",
        })
    }

    /// Waits for the connection to end, re-importing on each list change; `Shutdown` when told to.
    async fn serve(&mut self, connection: Connection, list_changed: Arc<Notify>) -> End {
        let peer = connection.peer().clone();
        let cancel = connection.cancellation_token();
        let waiting = connection.waiting();
        tokio::pin!(waiting);
        loop {
            tokio::select! {
                quit = &mut waiting => {
                    return End::Closed(match quit {
                        Ok(reason) => format!("the connection ended ({reason:?})"),
                        Err(e) => format!("the connection task failed: {e}"),
                    });
                }
                () = list_changed.notified() => self.relist(&peer).await,
                () = sign_in_needed(&self.session) => {
                    cancel.cancel();
                    let _ = tokio::time::timeout(CLOSE_GRACE, &mut waiting).await;
                    return End::SignIn;
                }
                _ = self.shutdown.changed() => {
                    cancel.cancel();
                    let _ = tokio::time::timeout(CLOSE_GRACE, &mut waiting).await;
                    return End::Shutdown;
                }
            }
        }
    }

    /// After `notifications/tools/list_changed`: list again and re-import in one transaction.
    /// A failure keeps the tools as they were and is reported; the connection stays.
    async fn relist(&self, peer: &Peer<RoleClient>) {
        let start = Instant::now();
        let outcome = match self.list(peer).await {
            Ok(list) => self
                .session
                .import(&self.store, &list)
                .map(|report| (report, list.len()))
                .map_err(|error| LiveError::Import {
                    server: self.session.name.clone(),
                    error,
                }),
            Err(error) => Err(error),
        };
        match outcome {
            Ok((report, tools)) => {
                self.session.update(|s| s.tools = tools);
                let _ = self.events.send(LiveEvent::ToolsChanged {
                    report,
                    elapsed: start.elapsed(),
                });
            }
            Err(error) => {
                self.session
                    .update(|s| s.last_error = Some(error.to_string()));
                let _ = self.events.send(LiveEvent::Failed { error });
            }
        }
    }
}
