//! The gateway's MCP server: what a client sees (`tools/list`) and what its calls do.

use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ErrorData, Peer, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Map, Value, json};

use crate::context::{ContextBuilder, SEARCH_TOOLS, SelectionPolicy, Turn, catalog_outline};
use crate::events::{Event, EventBus};
use crate::exec::{ExecError, Executor, ToolCall, UnselectedCallPolicy};
use crate::mcp::live::{CallError, LiveEvent, McpHub, ServerState, ServerStatus};
use crate::provider::ToolExport;
use crate::store::{Snapshot, Store};
use crate::tools::{TOOLS, Tool};
use crate::usage::{TurnUse, UsageQueue, UsageRecorder};

use crate::mcp::live::{Quarantine, QuarantineReason, Verdict};

use super::clients::{Client, Clients};
use super::metrics::{Metrics, Now, ReplicaProbe};

/// What the client is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// Two tools, `search_tools` and `call_tool`, plus the pinned tools: the client's context
    /// holds a few definitions whatever the number of upstream tools.
    #[default]
    Search,
    /// Every upstream tool under its provider-safe exported name, forwarded; upstream list
    /// changes are passed on.
    All,
}

/// How a [`Gateway`] behaves.
///
/// ```
/// let options = capstore::gateway::GatewayOptions::default();
/// assert_eq!(options.max_results, 8);
/// ```
#[derive(Debug, Clone)]
pub struct GatewayOptions {
    /// Search or all.
    pub mode: Mode,
    /// The most tools one `search_tools` answer returns (the client may ask for fewer).
    pub max_results: usize,
    /// Tools offered directly in search mode too (qualified or exported names).
    pub pinned: Vec<String>,
    /// The selection policy `search_tools` ranks with (its `max_tools` is set per query).
    pub policy: SelectionPolicy,
    /// What to tell the user to run to approve a quarantined tool (`capstore approve ...`).
    pub approve_hint: String,
    /// Where the gateway's tool calls are reported (each call's start and end, as
    /// [`Event`](crate::Event)s), e.g. to audit them. `None` (the default): a bus of the
    /// gateway's own, which only the admin page reads.
    pub events: Option<crate::events::EventBus>,
    /// Web origins let through over HTTP besides this listener's loopback ones
    /// (`--allow-origin`; see [`HttpGuard`](super::HttpGuard)).
    pub allowed_origins: Vec<String>,
    /// Whether the gateway learns from the calls it forwards ([`usage`](crate::usage)): each
    /// client session's turns (see [the module docs](super#learning-from-the-calls-it-forwards))
    /// are counted into the store's usage, or handed to `usage_sink`. Default true.
    pub learn: bool,
    /// Where each finished turn goes instead of the gateway's own store: a replica's log
    /// (`capstore serve --state`), or a store written and saved to a file. `None` (the
    /// default): the gateway's store.
    pub usage_sink: Option<UsageSink>,
    /// The admin page's token (and `/metrics`'), fixed: at least 32 characters of letters,
    /// digits, `-` and `_` (`capstore serve --admin-token-file FILE`), so that a scraper keeps
    /// one across restarts. `None` (the default): a new random one each start
    /// ([`HttpGateway::page_url`](super::HttpGateway::page_url) gives it).
    pub admin_token: Option<String>,
    /// The clients allowed over HTTP, each with its token and scope ([`Clients`]). With at
    /// least one, every MCP request must carry a client's token; `None` or none in it (the
    /// default): no token is asked, as for one person on loopback.
    pub clients: Option<Clients>,
    /// Where the gateway's replica is in the shared log (`capstore serve --state`), for
    /// `/metrics`' `capstore_gateway_replica_*` gauges. `None` (the default): no replica.
    pub replica: Option<ReplicaProbe>,
    /// Whether a client's call is audited with its arguments ([`Event::GatewayCall`]'s
    /// `arguments`; `serve --audit-arguments`). Default false: who, what and how it ended only,
    /// since arguments may carry what the audit's readers should not see.
    pub audit_arguments: bool,
}

/// Takes each turn a gateway's session finished ([`GatewayOptions::usage_sink`]). Called on the
/// thread that ends the turn (a request's task, or the one dropping the session): it must not
/// block for long (hand slow work to a task).
///
/// ```
/// use capstore::gateway::UsageSink;
/// let sink = UsageSink::new(|turn| println!("{} calls", turn.called.len()));
/// # drop(sink);
/// ```
#[derive(Clone)]
pub struct UsageSink(Arc<dyn Fn(TurnUse) + Send + Sync>);

impl UsageSink {
    /// A sink calling `take` with each finished turn.
    ///
    /// ```
    /// let sink = capstore::gateway::UsageSink::new(|_turn| {});
    /// # drop(sink);
    /// ```
    pub fn new(take: impl Fn(TurnUse) + Send + Sync + 'static) -> Self {
        UsageSink(Arc::new(take))
    }
}

impl std::fmt::Debug for UsageSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("UsageSink")
    }
}

impl Default for GatewayOptions {
    fn default() -> Self {
        GatewayOptions {
            mode: Mode::Search,
            max_results: 8,
            pinned: Vec::new(),
            policy: SelectionPolicy::default(),
            approve_hint: "capstore approve".into(),
            events: None,
            allowed_origins: Vec::new(),
            learn: true,
            usage_sink: None,
            admin_token: None,
            clients: None,
            replica: None,
            audit_arguments: false,
        }
    }
}

/// An MCP server in front of a store: its tools are capstore's search and call (or every
/// upstream tool), backed by the live servers of an [`McpHub`]. See the [module docs](super).
#[derive(Clone)]
pub struct Gateway {
    shared: Arc<Shared>,
    /// The client session this instance serves (one for stdio; one per session over HTTP):
    /// its turn's offered tools and calls, for usage.
    session: Arc<SessionUse>,
}

/// How long a session may go without a call or a search before the next one starts a new
/// turn: a model's calls for one request come seconds apart; a person's next request, minutes.
const TURN_GAP: Duration = Duration::from_secs(120);

/// One client session's turn, for usage. The gateway sees no user messages: a turn ends when a
/// `search_tools` follows calls (a new task is looked for), when `TURN_GAP` passes, or when the
/// session ends. A finished turn goes to the sink, or to the gateway's queue (shared by its
/// sessions), which writes it into the store in a batch.
struct SessionUse {
    recorder: UsageRecorder,
    /// When the session last searched or called.
    last: Mutex<Option<Instant>>,
    queue: UsageQueue,
    learn: bool,
    sink: Option<UsageSink>,
}

impl SessionUse {
    fn new(shared: &Shared) -> SessionUse {
        SessionUse {
            recorder: UsageRecorder::new(),
            last: Mutex::new(None),
            queue: shared.usage.clone(),
            learn: shared.options.learn,
            sink: shared.options.usage_sink.clone(),
        }
    }

    /// Ends the turn if `TURN_GAP` has passed since the session's last search or call, or
    /// (`searching`) if the turn has calls; notes now as the last.
    fn next_step(&self, searching: bool) {
        let gap = {
            let mut last = self.last.lock();
            let gap = last.is_some_and(|t| t.elapsed() > TURN_GAP);
            *last = Some(Instant::now());
            gap
        };
        if gap || (searching && !self.recorder.peek().called.is_empty()) {
            self.end_turn();
        }
        // Each search and call checks the queue's time bound, for every session's turns.
        // A refused write (a store's own rule) loses those turns' counts, nothing else.
        let _ = self.queue.flush_if_due();
    }

    /// Counts the turn (into the store, or hands it to the sink) and starts the next.
    fn end_turn(&self) {
        let turn = self.recorder.finish_turn();
        if !self.learn || turn.called.is_empty() {
            return;
        }
        match &self.sink {
            Some(sink) => (sink.0)(turn),
            // A refused write (a store's own rule) loses the batch's refused turns, nothing
            // else.
            None => {
                let _ = self.queue.push(turn);
            }
        }
    }
}

impl Drop for SessionUse {
    /// The session ended: its turn is counted, and what the queue holds written.
    fn drop(&mut self) {
        self.end_turn();
        let _ = self.queue.flush();
    }
}

struct Shared {
    store: Store,
    /// The sessions' finished turns, counted into `store` in batches; written when the
    /// gateway (its last handle) is dropped.
    usage: UsageQueue,
    /// The export names of the `tools` table's latest version seen.
    export: Mutex<Option<Arc<ToolExport>>>,
    quarantine: Option<Quarantine>,
    options: GatewayOptions,
    executor: Executor,
    /// Connected clients, told when the tool list changes (all mode).
    peers: Mutex<Vec<Peer<RoleServer>>>,
    /// The hub followed ([`Gateway::follow`]): its held tools and its servers' states.
    hub: Mutex<Option<McpHub>>,
    /// The executor's events (each call's start and end): [`GatewayOptions::events`], or the
    /// gateway's own bus. The admin page's recent calls.
    events: EventBus,
    /// The numbers `/metrics` gives, counted from `events` and the searches.
    metrics: Arc<Metrics>,
}

/// A failure to serve at all (the listener or the transport); requests' own errors are
/// answered on the protocol.
#[derive(Debug)]
pub struct GatewayError(pub String);

impl std::fmt::Display for GatewayError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for GatewayError {}

/// The most characters of a `search_tools` query that are read; the rest is ignored (and the
/// answer says so).
pub const MAX_QUERY_CHARS: usize = 1_000;
/// The most characters of the query echoed back in a `search_tools` answer.
const ECHOED_QUERY_CHARS: usize = 100;
/// The gateway's tool that forwards a call to an upstream tool in search mode (a name the
/// export reserves: [`crate::tools::RESERVED_EXPORT_NAMES`]).
const CALL: &str = "call_tool";

impl Gateway {
    /// A gateway over `store` (fill it with an [`McpHub`], a catalog, or both), checking
    /// upstream tools against `quarantine` when given.
    ///
    /// ```
    /// use capstore::gateway::{Gateway, GatewayOptions};
    /// let gateway = Gateway::new(capstore::Store::new(), None, GatewayOptions::default());
    /// # drop(gateway);
    /// ```
    pub fn new(store: Store, quarantine: Option<Quarantine>, options: GatewayOptions) -> Self {
        let events = options.events.clone().unwrap_or_default();
        let executor = Executor::new(store.clone())
            .with_policy(UnselectedCallPolicy::Allow)
            .with_events(events.clone());
        let shared = Arc::new(Shared {
            metrics: Metrics::follow(&events),
            executor,
            usage: UsageQueue::new(store.clone()),
            export: Mutex::new(None),
            store,
            quarantine,
            options,
            peers: Mutex::new(Vec::new()),
            hub: Mutex::new(None),
            events,
        });
        let gateway = Gateway {
            session: Arc::new(SessionUse::new(&shared)),
            shared,
        };
        gateway.review();
        gateway
    }

    /// The gateway for a new client session: the same state, a turn of its own.
    pub(super) fn for_session(&self) -> Gateway {
        Gateway {
            shared: Arc::clone(&self.shared),
            session: Arc::new(SessionUse::new(&self.shared)),
        }
    }

    /// Follows the hub's tool-list changes: records them in the quarantine at once, and passes
    /// them on to every connected client as `notifications/tools/list_changed` (the tool list
    /// only changes in all mode, but a client may re-search in either). Runs until the hub
    /// stops.
    ///
    /// The hub's quarantine ([`LiveOptions::quarantine`](crate::mcp::live::LiveOptions)) is
    /// then the gateway's too: a call to a tool it holds back is answered with why, and
    /// `search_tools` says what is held back and which servers are down.
    pub fn follow(&self, hub: &McpHub) -> tokio::task::JoinHandle<()> {
        *self.shared.hub.lock() = Some(hub.clone());
        let gateway = self.clone();
        let mut events = hub.subscribe();
        tokio::spawn(async move {
            loop {
                match events.recv().await {
                    Ok(LiveEvent::ToolsChanged { .. } | LiveEvent::Reconnected { .. }) => {
                        gateway.review();
                        let peers = gateway.shared.peers.lock().clone();
                        for peer in peers {
                            let _ = peer.notify_tool_list_changed().await;
                        }
                    }
                    Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
                }
            }
        })
    }

    /// Serves one client over stdin and stdout until it disconnects. Nothing else may write
    /// to stdout meanwhile (upstream servers' stderr is captured, never printed).
    pub async fn serve_stdio(self) -> Result<(), GatewayError> {
        let service = self
            .serve(rmcp::transport::stdio())
            .await
            .map_err(|e| GatewayError(format!("the client did not initialize: {e}")))?;
        service
            .waiting()
            .await
            .map_err(|e| GatewayError(e.to_string()))?;
        Ok(())
    }

    /// The export names of `snap`, computed once for each state of the `tools` table.
    fn export(&self, snap: &Snapshot) -> Result<Arc<ToolExport>, crate::store::StoreError> {
        ToolExport::cached(&mut self.shared.export.lock(), snap)
    }

    /// The tools a client sees now.
    fn listed(&self, client: Option<&Client>) -> Vec<rmcp::model::Tool> {
        let snap = self.shared.store.snapshot();
        let Ok(export) = self.export(&snap) else {
            return Vec::new();
        };
        let mut tools = Vec::new();
        if self.shared.options.mode == Mode::Search {
            tools.push(search_tool(&snap));
            tools.push(call_tool());
        }
        let keys: Vec<String> = match self.shared.options.mode {
            Mode::All => snap
                .iter(&TOOLS)
                .map(|it| it.map(|(key, _)| key.to_string()).collect())
                .unwrap_or_default(),
            Mode::Search => self
                .shared
                .options
                .pinned
                .iter()
                .filter_map(|name| resolve(&snap, &export, name))
                .collect(),
        };
        let records: Vec<(String, &Tool)> = keys
            .into_iter()
            .filter_map(|key| {
                let tool = snap.get(&TOOLS, &key).ok()??;
                Some((key, tool))
            })
            .collect();
        let verdicts = self.verdicts(records.iter().map(|(_, tool)| *tool));
        for ((key, tool), verdict) in records.iter().zip(verdicts) {
            if verdict == Verdict::Trusted
                && in_scope(client, key, tool).is_ok()
                && let Some(name) = export.export_name(key)
            {
                tools.push(listed_tool(name, tool));
            }
        }
        tools
    }

    fn verdict(&self, tool: &Tool) -> Verdict {
        self.verdicts([tool]).pop().unwrap_or(Verdict::Trusted)
    }

    /// The verdicts of many tools, in one look at the quarantine file.
    fn verdicts<'t>(&self, tools: impl IntoIterator<Item = &'t Tool>) -> Vec<Verdict> {
        let tools: Vec<&Tool> = tools.into_iter().collect();
        match &self.shared.quarantine {
            // A file that cannot be read or written holds everything back: fail closed.
            Some(q) => q.check_all(tools.iter().copied()).unwrap_or_else(|_| {
                vec![Verdict::Quarantined(QuarantineReason::Changed); tools.len()]
            }),
            None => vec![Verdict::Trusted; tools.len()],
        }
    }

    /// Checks every tool of the store at once, so that a server seen for the first time has
    /// all its tools trusted together (see [`Quarantine::check_all`]) and changes are recorded
    /// as soon as they are imported.
    fn review(&self) {
        let snap = self.shared.store.snapshot();
        if let Ok(tools) = snap.iter(&TOOLS) {
            self.verdicts(tools.map(|(_, tool)| tool));
        }
    }

    /// `search_tools`: capstore's selection for the query, upstream definitions included.
    fn search(
        &self,
        args: &Map<String, Value>,
        client: Option<&Client>,
    ) -> Result<CallToolResult, ErrorData> {
        let whole = args
            .get("query")
            .and_then(Value::as_str)
            .filter(|q| !q.trim().is_empty())
            .ok_or_else(|| {
                ErrorData::invalid_params("search_tools needs a `query` string", None)
            })?;
        // A query is a task in plain words: what is past the first MAX_QUERY_CHARS is not
        // read (a 100 KB query would cost selection time and say nothing more).
        let query = cut(whole, MAX_QUERY_CHARS);
        let limit = match args.get("limit") {
            None | Some(Value::Null) => self.shared.options.max_results,
            Some(value) => value
                .as_u64()
                .filter(|&n| n >= 1)
                .map(|n| (n as usize).min(self.shared.options.max_results))
                .ok_or_else(|| {
                    ErrorData::invalid_params("`limit` must be a whole number of at least 1", None)
                })?,
        };
        let snap = self.shared.store.snapshot();
        // Room for the quarantined ones the answer leaves out (and, for a client with a
        // scope, the ones outside it).
        let room = if client.is_some() { 4 } else { 2 };
        let mut policy = self
            .shared
            .options
            .policy
            .clone()
            .with_tool_limit(limit * room);
        // An answer to the query only: pinned tools are offered in the tool list itself
        // (`--pin`), and a query that matches nothing gets nothing.
        policy.pinned_tools.clear();
        policy.pinned_skills.clear();
        policy.on_no_match = crate::context::NoMatch::PinnedOnly;
        let internal = |e: &dyn std::fmt::Display| ErrorData::internal_error(e.to_string(), None);
        let selection = ContextBuilder::with_policy(policy)
            .map_err(|e| internal(&e))?
            .select(&snap, &Turn::new(query))
            .map_err(|e| internal(&e))?;
        let verdicts = self.verdicts(selection.tools.iter().map(|s| &*s.tool));
        let hub = self.shared.hub.lock().clone();
        let down: std::collections::HashMap<String, ServerStatus> = hub
            .iter()
            .flat_map(McpHub::status)
            .filter(|s| s.state != ServerState::Ready)
            .map(|s| (s.name.clone(), s))
            .collect();
        let mut held_back = 0;
        let mut found = Vec::new();
        for (selected, verdict) in selection.tools.iter().zip(verdicts) {
            if found.len() == limit {
                break;
            }
            if verdict != Verdict::Trusted {
                held_back += 1;
                continue;
            }
            if in_scope(client, &selected.key, &selected.tool).is_err() {
                continue;
            }
            let runnable = snap
                .contains(&crate::exec::HANDLERS, &selected.key)
                .unwrap_or(false);
            let why: Vec<String> = selected.reasons.iter().map(ToString::to_string).collect();
            let mut entry = json!({
                "name": &*selected.key,
                "server": selected.tool.source,
                "description": selected.tool.description,
                "inputSchema": selected.tool.input_schema.to_value(),
                "score": selected.score,
                "why": why,
                "runnable": runnable,
            });
            // What the agent's calls taught goes with it (its prerequisites, mostly).
            let goes_with = goes_with(&snap, &selected.key);
            if !goes_with.is_empty() {
                entry["goes_with"] = json!(goes_with);
            }
            // A tool of a server that is down fails at once: say so, and since when.
            if let Some(status) = selected.tool.source.as_deref().and_then(|s| down.get(s)) {
                entry["runnable"] = json!(false);
                entry["unavailable"] = json!({
                    "why": status.last_error.as_deref().unwrap_or("its server is not connected"),
                    "since": status.down_since.map(rfc3339),
                });
            }
            found.push(entry);
        }
        let skills: Vec<&str> = selection.skills.iter().map(|s| &*s.name).collect();
        let mut answer = json!({
            "query": cut(query, ECHOED_QUERY_CHARS),
            "tools": found,
            "skills": skills,
            "how_to_call": "call_tool with {\"name\": <name>, \"arguments\": {...}}",
        });
        if query.len() < whole.len() {
            answer["query_truncated"] = json!(format!(
                "the query was {} characters; only the first {MAX_QUERY_CHARS} were read",
                whole.chars().count()
            ));
        }
        let held = hub.map(|hub| hub.held()).unwrap_or_default();
        if held_back > 0 || !held.is_empty() {
            let names: Vec<&str> = held.iter().take(20).map(|h| h.key.as_str()).collect();
            let mut note = format!(
                "{} tool(s) held back until a person approves them (their definitions changed \
                 since approved, or they are new)",
                held_back + held.len()
            );
            if !names.is_empty() {
                note.push_str(&format!(": {}", names.join(", ")));
            }
            answer["quarantined"] = json!(note);
        }
        if found.is_empty() {
            answer["note"] = json!("no tool matched; try other words, or fewer");
        }
        self.shared.metrics.searched(found.len());
        // Keys sorted: the same answer is the same text in every build (as `object` says).
        answer.sort_all_objects();
        Ok(CallToolResult::structured(answer))
    }

    /// Runs the tool `key` with `args` through the executor; cancelled if the client cancels.
    /// [`Self::run_once`], then, for a client's call, its audit event
    /// ([`Event::GatewayCall`]: who, what, how it ended) on the gateway's bus; with feature
    /// `otel`, in a span of its own ([`crate::trace`]).
    async fn run(
        &self,
        name: &str,
        args: Value,
        context: &RequestContext<RoleServer>,
        client: Option<&Client>,
    ) -> Result<CallToolResult, ErrorData> {
        let mut refused = None;
        let audited = match client {
            Some(_) if self.shared.options.audit_arguments => Some(args.clone()),
            _ => None,
        };
        #[cfg(feature = "otel")]
        let span = crate::trace::CallSpan::start(
            context
                .extensions
                .get::<http::request::Parts>()
                .map(|parts| &parts.headers),
            &context.meta,
            name,
            client.map(|c| &*c.name),
        );
        let call = self.run_once(name, args, context, client, &mut refused);
        #[cfg(feature = "otel")]
        let result = span.around(call).await;
        #[cfg(not(feature = "otel"))]
        let result = call.await;
        let outcome = match (&result, refused) {
            (_, Some(_)) => "refused",
            (Ok(answer), None) if answer.is_error != Some(true) => "ok",
            _ => "error",
        };
        #[cfg(feature = "otel")]
        span.end(outcome, || match &result {
            Ok(answer) => Some(
                answer
                    .content
                    .iter()
                    .filter_map(|block| Some(block.as_text()?.text.as_str()))
                    .collect::<Vec<_>>()
                    .join("\n"),
            ),
            Err(error) => Some(error.message.to_string()),
        });
        if let Some(client) = client {
            self.shared.events.emit(&Event::GatewayCall {
                client: client.name.to_string(),
                call_id: context.id.to_string(),
                tool: name.to_string(),
                outcome: outcome.to_string(),
                arguments: audited,
            });
        }
        result
    }

    /// Runs the tool the model knows as `name` with `args`, through the executor, unless it is
    /// held, unknown or outside `client`'s scope (then `refused` says which); cancelled if the
    /// client cancels.
    async fn run_once(
        &self,
        name: &str,
        args: Value,
        context: &RequestContext<RoleServer>,
        client: Option<&Client>,
        refused: &mut Option<&'static str>,
    ) -> Result<CallToolResult, ErrorData> {
        let mut refuse = |reason: &'static str| {
            self.shared.metrics.refused(reason);
            *refused = Some(reason);
        };
        let mut snap = self.shared.store.snapshot();
        let mut export = self
            .export(&snap)
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        if resolve(&snap, &export, name).is_none() {
            if let Some(answer) = self.held(name) {
                refuse("held");
                return Ok(answer);
            }
            // Not held (any more: an approval may just have been imported): look again.
            snap = self.shared.store.snapshot();
            export = self
                .export(&snap)
                .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        }
        let Some(key) = resolve(&snap, &export, name) else {
            refuse("unknown_tool");
            return Err(self.unknown_tool(name));
        };
        let tool = snap
            .get(&TOOLS, &key)
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?
            .ok_or_else(|| ErrorData::invalid_params(format!("unknown tool `{name}`"), None))?;
        if let Verdict::Quarantined(reason) = self.verdict(tool) {
            refuse("held");
            return Ok(self.quarantined(&key, &reason.to_string()));
        }
        // Outside the client's scope: refused here, never forwarded.
        if let (Some(client), Err(why)) = (client, in_scope(client, &key, tool)) {
            refuse("out_of_scope");
            return Ok(error_result(format!(
                "client `{}` may not call `{key}`: {why}",
                client.name
            )));
        }
        let call = ToolCall::new(context.id.to_string(), key.as_str(), args);
        let outcome = tokio::select! {
            outcome = self.shared.executor.execute(call, &[]) => outcome,
            // Dropping the call cancels it upstream too (notifications/cancelled).
            () = context.ct.cancelled() => {
                return Err(ErrorData::internal_error("cancelled by the client", None));
            }
        };
        match outcome {
            Ok(output) => {
                self.session.next_step(false);
                self.session.recorder.called(&key);
                Ok(as_result(output.output))
            }
            // A tool-execution error, not a protocol one, so that the model reads it and can
            // correct its arguments (as MCP asks for input validation errors).
            Err(ExecError::InvalidArguments { tool, reason }) => Ok(error_result(format!(
                "invalid arguments for `{tool}`: {reason}"
            ))),
            // It left the store between the look-up and the call: a re-import (a rug pull the
            // hub now holds back, or the server dropped it).
            Err(ExecError::UnknownTool { tool }) => Ok(self.held(&tool).unwrap_or_else(|| {
                error_result(format!("tool `{tool}` is no longer offered by its server"))
            })),
            Err(ExecError::NoHandler { tool }) => Ok(error_result(format!(
                "`{tool}` comes from a catalog and has no handler here: it is listed for \
                 discovery, not runnable through this gateway"
            ))),
            Err(ExecError::Handler { error, .. }) => Ok(match error.downcast_ref::<CallError>() {
                Some(CallError::Tool { server, result, .. }) => {
                    // The server's own error result, with a first line naming it.
                    let mut result = as_result(result.clone());
                    result.content.insert(
                        0,
                        ContentBlock::text(format!("MCP server `{server}` reported an error:")),
                    );
                    result.is_error = Some(true);
                    result
                }
                _ => error_result(error.message),
            }),
            Err(other) => Ok(error_result(other.to_string())),
        }
    }
}

/// What the admin page (`super::admin`) and the HTTP listener (`super::http`) read of a gateway.
impl Gateway {
    pub(super) fn store(&self) -> &Store {
        &self.shared.store
    }

    pub(super) fn quarantine(&self) -> Option<&Quarantine> {
        self.shared.quarantine.as_ref()
    }

    /// The origins `--allow-origin` admits to `/mcp` besides the loopback ones.
    pub(super) fn clients(&self) -> Option<&Clients> {
        self.shared.options.clients.as_ref()
    }

    pub(super) fn admin_token(&self) -> Option<&str> {
        self.shared.options.admin_token.as_deref()
    }

    pub(super) fn allowed_origins(&self) -> &[String] {
        &self.shared.options.allowed_origins
    }

    /// How a person approves a held tool (`capstore approve ...`).
    pub(super) fn approve_hint(&self) -> &str {
        &self.shared.options.approve_hint
    }

    pub(super) fn events(&self) -> &EventBus {
        &self.shared.events
    }

    /// The gateway's metrics now, in the OpenMetrics text format ([`super::metrics`]).
    pub(super) fn metrics_text(&self) -> String {
        let hub = self.hub();
        let snapshot = self.shared.store.snapshot();
        self.shared.metrics.render(&Now {
            hub: hub.as_ref(),
            snapshot: &snapshot,
            replica: self.shared.options.replica.as_ref().map(ReplicaProbe::read),
        })
    }

    /// The hub followed, if any.
    pub(super) fn hub(&self) -> Option<McpHub> {
        self.shared.hub.lock().clone()
    }

    /// What `search_tools` answers for `query` (its structured content), or its error.
    pub(super) fn search_answer(&self, query: &str) -> Result<Value, String> {
        let mut args = Map::new();
        args.insert("query".into(), Value::String(query.to_string()));
        let result = self
            .search(&args, None)
            .map_err(|e| e.message.to_string())?;
        result
            .structured_content
            .ok_or_else(|| "search_tools gave no structured answer".to_string())
    }
}

impl Gateway {
    /// The answer to a call of `name` when the followed hub holds it back: why, and how to
    /// approve it. An approval made since is imported first (then `None`: run it).
    /// `None` when the hub does not hold it (or no longer does).
    fn held(&self, name: &str) -> Option<CallToolResult> {
        let hub = self.shared.hub.lock().clone()?;
        hub.held().iter().find(|held| held.key == name)?;
        // `capstore approve` may have just trusted it: import it now rather than within the
        // hub's next look at the file.
        hub.recheck();
        let held = hub.held().into_iter().find(|held| held.key == name)?;
        Some(self.quarantined(&held.key, &held.why))
    }

    fn quarantined(&self, key: &str, why: &str) -> CallToolResult {
        error_result(format!(
            "tool `{key}` is quarantined: {why}. A person can approve it with `{} {key}`.",
            self.shared.options.approve_hint
        ))
    }

    /// The error for a name that is no tool: search mode points at `search_tools`, all mode
    /// (which has no `search_tools`) at the tool list.
    fn unknown_tool(&self, name: &str) -> ErrorData {
        ErrorData::invalid_params(
            match self.shared.options.mode {
                Mode::Search => {
                    format!("unknown tool `{name}`: use search_tools to find tools by what they do")
                }
                Mode::All => format!("unknown tool `{name}`: see tools/list for the tools offered"),
            },
            None,
        )
    }
}

/// The first `max` characters of `text`.
fn cut(text: &str, max: usize) -> &str {
    text.char_indices()
        .nth(max)
        .map_or(text, |(at, _)| &text[..at])
}

/// `time` as RFC 3339 UTC, to the second (`2026-11-27T10:49:00Z`).
fn rfc3339(time: std::time::SystemTime) -> String {
    let secs = time
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (days, rest) = ((secs / 86_400) as i64, secs % 86_400);
    // Howard Hinnant's civil-from-days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rest / 3_600,
        rest % 3_600 / 60,
        rest % 60
    )
}

/// A tool's key from a qualified or exported name.
fn resolve(snap: &Snapshot, export: &ToolExport, name: &str) -> Option<String> {
    if snap.contains(&TOOLS, name).unwrap_or(false) {
        return Some(name.to_string());
    }
    export.resolve(name).map(str::to_string)
}

/// The client a request over HTTP was authenticated as ([`super::clients`]), if any: the HTTP
/// layer put it in the request's extensions, which rmcp hands on with the request's parts.
fn client_of(context: &RequestContext<RoleServer>) -> Option<Client> {
    context
        .extensions
        .get::<http::request::Parts>()?
        .extensions
        .get::<Client>()
        .cloned()
}

/// Whether `client` (none: everything) may use the tool under `key`; `Err` says why not.
fn in_scope(client: Option<&Client>, key: &str, tool: &Tool) -> Result<(), String> {
    client.map_or(Ok(()), |client| client.scope.allows(key, tool))
}

/// An upstream result (`{"content": ..., "structuredContent": ...}`) as it was, or any other
/// output as JSON text.
/// The tools the agent's calls taught go with `key` (called in at least a third of its turns,
/// twice or more), strongest first, at most three, in words: `fs/cd (before it, in 9 of its 10
/// turns)`.
fn goes_with(snap: &Snapshot, key: &str) -> Vec<String> {
    let Ok(Some(usage)) = snap.get(&crate::usage::USAGE, key) else {
        return Vec::new();
    };
    usage
        .companions
        .iter()
        .filter(|c| c.together >= 2 && c.together * 3 >= usage.turns)
        .filter(|c| snap.contains(&TOOLS, &c.tool).unwrap_or(false))
        .take(3)
        .map(|c| {
            let how = if c.before * 2 >= c.together {
                "before it"
            } else {
                "after it"
            };
            format!(
                "{} ({how}, in {} of its {} turns)",
                c.tool, c.together, usage.turns
            )
        })
        .collect()
}

fn as_result(output: Value) -> CallToolResult {
    if output.get("content").is_some_and(Value::is_array)
        && let Ok(result) = serde_json::from_value::<CallToolResult>(output.clone())
    {
        return result;
    }
    // Keys sorted, as `object` has them.
    let text = crate::tools::canonical_json(&output);
    CallToolResult::success(vec![ContentBlock::text(text)])
}

fn error_result(message: String) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message)])
}

/// `schema` as a listed tool's input schema, its keys sorted, so that `tools/list` is the same
/// bytes in every build (serde_json keeps the order written where a crate turned on its
/// `preserve_order`: rig does).
fn object(mut schema: Value) -> Arc<Map<String, Value>> {
    schema.sort_all_objects();
    match schema {
        Value::Object(map) => Arc::new(map),
        _ => Arc::new(Map::new()),
    }
}

fn listed_tool(name: &str, tool: &Tool) -> rmcp::model::Tool {
    rmcp::model::Tool::new(
        name.to_string(),
        tool.description.clone(),
        object(tool.input_schema.to_value()),
    )
}

fn search_tool(snap: &Snapshot) -> rmcp::model::Tool {
    let count = snap.count(&TOOLS).unwrap_or(0);
    // What it can find, so a client's model knows when to search (O(skills + servers)).
    let outline = catalog_outline(snap).unwrap_or_default();
    let servers = if outline.is_empty() {
        String::new()
    } else {
        format!(" They include those of: {outline}.")
    };
    rmcp::model::Tool::new(
        SEARCH_TOOLS,
        format!(
            "Find the right tool among the {count} tools of the connected MCP servers. Describe \
             the task in plain words; the answer lists the best-matching tools with their \
             names, descriptions and input schemas (and the skills they belong to). Then run \
             one with call_tool.{servers}"
        ),
        object(json!({
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "What you want to do, in plain words (the first 1,000 characters are read)"},
                "limit": {"type": "integer", "minimum": 1, "description": "At most this many tools"}
            },
            "required": ["query"]
        })),
    )
}

fn call_tool() -> rmcp::model::Tool {
    rmcp::model::Tool::new(
        CALL,
        "Run a tool found with search_tools, by its name (`server/tool`), with arguments that \
         follow its input schema. Returns the tool's own result.",
        object(json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "The tool's name as search_tools gave it"},
                "arguments": {"type": "object", "description": "The tool's arguments"}
            },
            "required": ["name"]
        })),
    )
}

impl ServerHandler for Gateway {
    fn get_info(&self) -> ServerConfig {
        let mut info = ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
        );
        info.server_info = Implementation::new("capstore", env!("CARGO_PKG_VERSION"));
        info.instructions = Some(match self.shared.options.mode {
            Mode::Search => "capstore gateway: many tools behind two. Call search_tools with \
                             what you want to do, then call_tool with the name it returns."
                .into(),
            Mode::All => "capstore gateway: the tools of several MCP servers, forwarded.".into(),
        });
        info
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        self.shared.peers.lock().push(context.peer);
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(
            self.listed(client_of(&context).as_ref()),
        ))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = request.arguments.unwrap_or_default();
        let search_mode = self.shared.options.mode == Mode::Search;
        // Over HTTP with clients, the one the request's token named (see `clients`).
        let client = client_of(&context);
        let result = match &*request.name {
            SEARCH_TOOLS if search_mode => {
                // A search after calls starts the session's next turn (whose search sees what
                // the last one taught); what it returns is offered in it.
                self.session.next_step(true);
                let result = self.search(&args, client.as_ref())?;
                let found = result.structured_content.as_ref().map(|a| &a["tools"]);
                let names = found.and_then(Value::as_array).into_iter().flatten();
                self.session
                    .recorder
                    .sent(names.filter_map(|t| t["name"].as_str()));
                result
            }
            CALL if search_mode => {
                let name = args.get("name").and_then(Value::as_str).ok_or_else(|| {
                    ErrorData::invalid_params("call_tool needs a `name` string", None)
                })?;
                let arguments = match args.get("arguments") {
                    None | Some(Value::Null) => Value::Object(Map::new()),
                    Some(value @ Value::Object(_)) => value.clone(),
                    Some(_) => {
                        return Err(ErrorData::invalid_params(
                            "call_tool's `arguments` must be an object",
                            None,
                        ));
                    }
                };
                self.run(name, arguments, &context, client.as_ref()).await?
            }
            name => {
                // All mode's tools, and pinned ones in search mode, by exported name.
                if search_mode && !self.is_pinned(name) {
                    return Err(ErrorData::invalid_params(
                        format!("unknown tool `{name}`: use search_tools, then call_tool"),
                        None,
                    ));
                }
                self.run(name, Value::Object(args), &context, client.as_ref())
                    .await?
            }
        };
        Ok(result.into())
    }
}

impl Gateway {
    fn is_pinned(&self, name: &str) -> bool {
        let snap = self.shared.store.snapshot();
        let Ok(export) = self.export(&snap) else {
            return false;
        };
        let key = resolve(&snap, &export, name);
        self.shared
            .options
            .pinned
            .iter()
            .any(|pinned| key.is_some() && resolve(&snap, &export, pinned) == key)
    }
}

#[cfg(test)]
#[path = "usage_tests.rs"]
mod usage_tests;

#[cfg(test)]
mod tests {
    use super::{CALL, SEARCH_TOOLS, cut, rfc3339};
    use crate::tools::RESERVED_EXPORT_NAMES;
    use std::time::{Duration, UNIX_EPOCH};

    #[test]
    fn the_gateways_own_tool_names_are_reserved_in_exports() {
        // An upstream tool is listed under its export name, which never takes these.
        assert!(RESERVED_EXPORT_NAMES.contains(&SEARCH_TOOLS));
        assert!(RESERVED_EXPORT_NAMES.contains(&CALL));
    }

    #[test]
    fn times_are_rfc3339_utc() {
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00Z");
        let leap_day = UNIX_EPOCH + Duration::from_secs(951_782_400 + 3_661);
        assert_eq!(rfc3339(leap_day), "2000-02-29T01:01:01Z");
        let later = UNIX_EPOCH + Duration::from_secs(1_795_776_540);
        assert_eq!(rfc3339(later), "2026-11-27T10:49:00Z");
    }

    #[test]
    fn queries_are_cut_on_character_boundaries() {
        assert_eq!(cut("héllo", 2), "hé");
        assert_eq!(cut("hi", 5), "hi");
        assert_eq!(cut(&"é".repeat(2_000), 1_000).chars().count(), 1_000);
    }
}
