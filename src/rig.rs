//! capstore inside [rig](https://docs.rs/rig/0.44.0), Rust's agent framework (feature `rig`):
//! the store picks a rig agent's tools each turn, and capstore's handlers run as rig tools.
//!
//! A rig agent advertises, on each request, the tools its index answers for the prompt
//! (`AgentBuilder::retrieved_tools(samples, index, toolset)`, which rig calls "dynamic tools"
//! in its older releases): rig asks the index for the ids of the best `samples` tools and sends
//! the definitions its [`ToolSet`] holds under those ids. A [`ToolIndex`] is that index, and
//! answers with capstore's [selection](crate::context): BM25 over tools and skills, pinned
//! tools, the policy's tags and limits, the list carried across turns (so the provider's
//! prompt cache stays warm), and the reasons for each tool ([`ToolIndex::last_selection`]).
//! [`ToolIndex::toolset`] gives the matching [`ToolSet`]: each tool of the store that has a
//! handler, as a [`CapstoreTool`] that runs through an [`Executor`] (hooks, the unselected-call
//! policy, events).
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use capstore::context::ContextBuilder;
//! use capstore::exec::register_tool;
//! use capstore::rig::ToolIndex;
//! use capstore::{Store, Tool};
//! use serde_json::json;
//!
//! let store = Store::new();
//! store.write(|tx| {
//!     register_tool(tx, Tool::new("get_forecast", "Weather forecast for a city").with_source("weather"),
//!         |args| async move { Ok(json!({ "city": args["city"], "sky": "sunny" })) })?;
//!     register_tool(tx, Tool::new("send_email", "Send an email").with_source("mail"),
//!         |_| async { Ok(json!("sent")) })
//! })?;
//! let index = ToolIndex::new(store, ContextBuilder::new());
//! let tools = index.toolset()?;
//! // With a model: `AgentBuilder::new(model).retrieved_tools(index.max_tools(), index, tools).build()`.
//! // rig asks the index what a prompt needs, by the names the tool set knows:
//! let found = index.search("weather forecast for Oslo", index.max_tools())?;
//! assert_eq!(found[0].id, "get_forecast");
//! assert!(tools.contains("get_forecast"));
//! // and runs a call through capstore's executor:
//! let forecast = tools.get("get_forecast").expect("in the set")
//!     .execute(r#"{"city":"Oslo"}"#.into(), &mut rig::tool::ToolContext::new()).await;
//! assert!(forecast.is_success());
//! # Ok(())
//! # }
//! ```
//!
//! # Names
//! rig sends a tool to the provider under the name its tool set knows it by, and providers
//! accept only `^[a-zA-Z0-9_-]{1,64}$`. So both sides use capstore's export names
//! ([`ToolExport`]): the index answers with them and [`toolset`] registers each tool under
//! its own (`weather/get_forecast` is `get_forecast` while no other tool has that name, and
//! `github/search` beside `web/search` is `github__search`); a [`CapstoreTool`] runs the
//! qualified key behind its name. Export names are computed over the whole catalog of a
//! snapshot, so a new tool can rename another: once [`ToolIndex::toolset`] has built a tool
//! set, the index answers with that set's names, and only with its tools, until it builds
//! another. Build the tool set (and the agent) again to take in the store's new tools. The
//! index answers only with tools that have a handler (rig could not run the others).
//!
//! # Turns and conversations
//! rig's index sees only the prompt's text and `samples`: no conversation id reaches it. So
//! one [`ToolIndex`] holds one [`Conversation`] (earlier messages, recently called tools, the
//! list carried across turns): one index per conversation, and one agent per index. An index
//! is cheap; [`ToolIndex::new_conversation`] gives another over the same store, builder and
//! executor. The conversation sits behind a lock, so the index can be shared (rig holds it
//! in an `Arc`), and two runs of the same conversation at once take turns at the selection.
//! An agent that serves many conversations at once should use [`ToolIndex::stateless`]:
//! each search is then a first turn (no history, no carried list).
//!
//! rig asks its index once per model request, and a run of several steps (a tool call, its
//! result, the answer) asks again with the same prompt. So a search with the same text (and
//! `samples`) as the open turn's answers that turn's tools again, without a new selection;
//! any other text starts a new turn. [`ToolIndex::end_turn`] closes the turn (call it when a
//! run has finished): the next search is a new turn even with the same text. Calls made
//! through the index's own tool set ([`ToolIndex::toolset`]) mark their tools as used, as
//! capstore's agent does, and, while learning is on ([`ToolIndex::with_learning`]), each
//! finished turn's tools and calls are counted into the store's [`usage`](crate::usage).
//!
//! `samples` is a ceiling: when the selection holds more tools, the turn's own come first, most
//! relevant first, and the carried ones fill the rest, earliest first, all in send order
//! (the cut reported in
//! [`Selection::dropped`] as [`DropReason::MaxTools`]). Give rig at least the policy's
//! `max_tools` ([`ToolIndex::max_tools`]) to send the whole list. A request's similarity
//! threshold is ignored (capstore's scores are not similarities); a request with a filter is
//! refused (filter with the policy's tags instead).
//!
//! # What it costs
//! - **Build**: rig's facade crate with only its agent runtime (`rig`, `rig-agent`,
//!   `rig-core`, `rig-http` and about twenty small crates; no provider client, HTTP client
//!   or TLS), and Rust 1.95 (rig 0.44's minimum). The feature is off by default.
//! - **serde_json's `preserve_order`**: rig-core turns it on, and Cargo turns a feature on
//!   for the whole build, so with `rig` every `serde_json` object keeps its keys in the order
//!   they were written or read rather than sorted, your own included. What capstore makes is
//!   the same bytes either way: input schemas, tool definitions ([`ToolExport`]), its model
//!   adapters' requests, the gateway's tool list and answers, tape keys, all with their keys
//!   sorted (so a provider's prompt cache sees the same prefix in any build). JSON that only
//!   passes through (a tool's output as rig gets it, an MCP server's annotations) keeps its order.
//! - **Per request**: the first request of a turn is one [`ContextBuilder::select`] (as
//!   capstore's own agent makes), plus the export names of a new snapshot version (a pass
//!   over the catalog, once per version); the later requests of the turn, a look-up.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use ::rig::completion::ToolDefinition;
use ::rig::message::ToolName;
use ::rig::tool::{
    DynamicTool, ErasedTool, ToolContext, ToolExecutionError, ToolOutput, ToolResult, ToolSet,
};
use ::rig::vector_store::request::{Filter, FilterError, VectorSearchRequest};
use ::rig::vector_store::{
    VectorSearchIdResult, VectorSearchResult, VectorStoreError, VectorStoreIndex,
};
use ::rig::wasm_compat::{WasmBoxedFuture, WasmCompatSend};
use parking_lot::Mutex;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::context::{
    ContextBuilder, Conversation, DropReason, Dropped, SelectError, Selection, Turn,
};
use crate::exec::{ExecError, Executor, HANDLERS, ToolCall};
use crate::provider::ToolExport;
use crate::store::{Snapshot, Store, StoreError};
use crate::tools::TOOLS;
use crate::usage::{UsageQueue, UsageRecorder};

/// capstore's selection as a rig agent's tool index: give it to
/// `AgentBuilder::retrieved_tools(samples, index, toolset)` with the tool set
/// [`toolset`](Self::toolset) builds. One index follows one conversation (see [turns and
/// conversations](self#turns-and-conversations)); clones share it.
///
/// rig also implements its `PortableTool` for every index (`search_vector_store`), so an agent
/// may offer an index to the model as a tool. Each call of it is a search, and so a turn of the
/// index's conversation: offer the model a [stateless](Self::stateless) index for that, or
/// capstore's own [`search_tools`](crate::context::search_tools).
///
/// ```
/// use capstore::context::ContextBuilder;
/// use capstore::rig::ToolIndex;
/// use capstore::{Store, Tool, TOOLS};
/// let store = Store::new();
/// store.write(|tx| tx.insert(&TOOLS, Tool::new("get_forecast", "Weather forecast for a city")))?;
/// let index = ToolIndex::new(store, ContextBuilder::new());
/// // A tool without a handler is never answered: rig could not run it.
/// assert!(index.search("weather forecast", 24)?.is_empty());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct ToolIndex {
    store: Store,
    builder: ContextBuilder,
    executor: Executor,
    keeps_conversation: bool,
    state: Arc<Mutex<State>>,
    /// Where finished turns go, counted into the store in batches; shared with the indexes
    /// of [`new_conversation`](Self::new_conversation).
    queue: UsageQueue,
}

/// What an index keeps between searches, behind its lock.
#[derive(Default)]
struct State {
    /// The conversation's selection state (unused by a stateless index).
    conversation: Conversation,
    /// The turn a search with the same text answers again, until it is ended.
    open: Option<OpenTurn>,
    /// The last answer's selection, with its reasons.
    last: Option<Arc<Selection>>,
    /// The conversation's tools sent and called, counted into `usage` when its turn ends.
    usage: Option<UsageRecorder>,
    /// Export names of the `tools` table's last version searched.
    export: Option<Arc<ToolExport>>,
    /// The export names of the tool set [`ToolIndex::toolset`] built last: the names rig
    /// knows, which the index answers with (and only tools it knows) from then on.
    pinned: Option<Arc<ToolExport>>,
}

/// A turn still answered from its first selection.
struct OpenTurn {
    message: String,
    samples: usize,
    answer: Answer,
}

/// An answer: the ids in send order, and the selection they are the tools of (as sent).
#[derive(Clone)]
struct Answer {
    ids: Vec<VectorSearchIdResult>,
    selection: Arc<Selection>,
}

impl fmt::Debug for ToolIndex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.state.lock();
        f.debug_struct("ToolIndex")
            .field("builder", &self.builder)
            .field("keeps_conversation", &self.keeps_conversation)
            .field("learning", &state.usage.is_some())
            .field("open_turn", &state.open.as_ref().map(|t| &t.message))
            .finish_non_exhaustive()
    }
}

impl ToolIndex {
    /// An index over `store` that selects with `builder` and keeps one conversation, learning
    /// from it ([`with_learning`](Self::with_learning)); its tools run through
    /// `Executor::new(store)` unless [`with_executor`](Self::with_executor) says otherwise.
    ///
    /// ```
    /// let index = capstore::rig::ToolIndex::new(capstore::Store::new(), Default::default());
    /// assert!(index.conversation().is_some());
    /// ```
    pub fn new(store: Store, builder: ContextBuilder) -> Self {
        ToolIndex {
            executor: Executor::new(store.clone()),
            queue: UsageQueue::new(store.clone()),
            store,
            builder,
            keeps_conversation: true,
            state: Arc::new(Mutex::new(State {
                usage: Some(UsageRecorder::new()),
                ..State::default()
            })),
        }
    }

    /// An index that keeps no conversation: each search is a first turn (no history, no list
    /// carried from the last), so one index can serve many conversations at once. It learns
    /// nothing.
    ///
    /// ```
    /// let index = capstore::rig::ToolIndex::stateless(capstore::Store::new(), Default::default());
    /// assert!(index.conversation().is_none());
    /// ```
    pub fn stateless(store: Store, builder: ContextBuilder) -> Self {
        ToolIndex {
            executor: Executor::new(store.clone()),
            queue: UsageQueue::new(store.clone()),
            store,
            builder,
            keeps_conversation: false,
            state: Arc::new(Mutex::new(State::default())),
        }
    }

    /// Runs the tools of [`toolset`](Self::toolset) through `executor` (its hooks, its policy
    /// for unselected calls, its event bus), which should be over the same store. The index
    /// records its conversation's calls itself: the executor needs no usage recorder of its
    /// own ([`Executor::with_usage`]), and one would count each call twice.
    ///
    /// ```
    /// use capstore::{Executor, Store, UnselectedCallPolicy};
    /// let store = Store::new();
    /// let index = capstore::rig::ToolIndex::new(store.clone(), Default::default())
    ///     .with_executor(Executor::new(store).with_policy(UnselectedCallPolicy::Deny));
    /// # let _ = index;
    /// ```
    pub fn with_executor(mut self, executor: Executor) -> Self {
        self.executor = executor;
        self
    }

    /// Whether each finished turn's tools (those the turn selected for its own reasons) and
    /// the calls made through [`toolset`](Self::toolset) are counted into the store's
    /// [`usage`](crate::usage), so that later selections bring the tools they go with. On by
    /// default for an index that keeps a conversation; a stateless index never learns. A turn
    /// ends when the next begins or at [`end_turn`](Self::end_turn); its evidence is queued
    /// ([`UsageQueue`]: no store transaction) and written in batches, and by `end_turn`.
    ///
    /// ```
    /// let index = capstore::rig::ToolIndex::new(capstore::Store::new(), Default::default())
    ///     .with_learning(false);
    /// # let _ = index;
    /// ```
    pub fn with_learning(self, learn: bool) -> Self {
        self.state.lock().usage = (learn && self.keeps_conversation).then(UsageRecorder::new);
        self
    }

    /// Continues `conversation` (kept from an earlier index, serialized perhaps: a
    /// [`Conversation`] is serde) rather than starting an empty one. A stateless index ignores
    /// it.
    ///
    /// ```
    /// use capstore::context::Conversation;
    /// let mut earlier = Conversation::new();
    /// earlier.next_turn("weather in Oslo?");
    /// let index = capstore::rig::ToolIndex::new(capstore::Store::new(), Default::default())
    ///     .with_conversation(earlier.clone());
    /// assert_eq!(index.conversation(), Some(earlier));
    /// ```
    pub fn with_conversation(self, conversation: Conversation) -> Self {
        if self.keeps_conversation {
            let mut state = self.state.lock();
            state.conversation = conversation;
            state.open = None;
        }
        self
    }

    /// An index for another conversation: the same store, builder, executor and learning,
    /// a new empty conversation (an empty tool list, no history).
    ///
    /// ```
    /// let first = capstore::rig::ToolIndex::new(capstore::Store::new(), Default::default());
    /// let second = first.new_conversation();
    /// # let _ = second;
    /// ```
    pub fn new_conversation(&self) -> Self {
        let learning = self.state.lock().usage.is_some();
        ToolIndex {
            store: self.store.clone(),
            builder: self.builder.clone(),
            executor: self.executor.clone(),
            keeps_conversation: self.keeps_conversation,
            state: Arc::new(Mutex::new(State {
                usage: learning.then(UsageRecorder::new),
                ..State::default()
            })),
            queue: self.queue.clone(),
        }
    }

    /// The conversation so far (a copy), to keep or to resume elsewhere
    /// ([`with_conversation`](Self::with_conversation)); `None` for a stateless index.
    ///
    /// ```
    /// # let index = capstore::rig::ToolIndex::new(capstore::Store::new(), Default::default());
    /// let conversation = index.conversation().expect("it keeps one");
    /// assert_eq!(conversation, capstore::context::Conversation::new());
    /// ```
    pub fn conversation(&self) -> Option<Conversation> {
        self.keeps_conversation
            .then(|| self.state.lock().conversation.clone())
    }

    /// The selection behind the last answer, as sent (its tools in send order, limited to those
    /// with a handler and to `samples`), with why each tool was chosen and why near misses
    /// were not. For a stateless index shared by several conversations, the last answer of
    /// any of them.
    ///
    /// ```
    /// use capstore::context::Reason;
    /// use capstore::exec::register_tool;
    /// use capstore::{Store, Tool};
    /// let store = Store::new();
    /// store.write(|tx| register_tool(tx, Tool::new("get_forecast", "Weather forecast for a city"),
    ///     |_| async { Ok(serde_json::json!("sunny")) }))?;
    /// let index = capstore::rig::ToolIndex::new(store, Default::default());
    /// index.search("weather forecast for Oslo", 24)?;
    /// let selection = index.last_selection().expect("searched");
    /// assert!(matches!(selection.tools[0].reasons[0], Reason::Retrieved { .. }));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn last_selection(&self) -> Option<Arc<Selection>> {
        self.state.lock().last.clone()
    }

    /// The policy's `max_tools`: the `samples` to give rig so that the whole list is sent.
    ///
    /// ```
    /// let index = capstore::rig::ToolIndex::new(capstore::Store::new(), Default::default());
    /// assert_eq!(index.max_tools(), 24);
    /// ```
    pub fn max_tools(&self) -> usize {
        self.builder.policy().max_tools
    }

    /// Closes the open turn: the next search starts a new turn even with the same text, and,
    /// while learning, the turn's tools and calls, with every turn the index's queue holds,
    /// are counted into the store's usage now. Call it when a run has finished.
    ///
    /// ```
    /// # let index = capstore::rig::ToolIndex::new(capstore::Store::new(), Default::default());
    /// index.end_turn()?;
    /// # Ok::<(), capstore::StoreError>(())
    /// ```
    pub fn end_turn(&self) -> Result<(), StoreError> {
        let mut state = self.state.lock();
        state.open = None;
        if let Some(usage) = &state.usage {
            self.queue.push(usage.finish_turn())?;
            self.queue.flush()?;
        }
        Ok(())
    }

    /// What the index answers rig for `query`: the export names of the selection's tools that
    /// have a handler, in send order, at most `samples` (the turn's own tools first), each with
    /// its relevance ([`SelectedTool::score`](crate::context::SelectedTool::score); carried
    /// tools 0). What rig's `top_n_ids` answers (which reports a failure as a datastore
    /// error), without the future; the [turn rules](self#turns-and-conversations) apply.
    ///
    /// ```
    /// use capstore::exec::register_tool;
    /// use capstore::{Store, Tool};
    /// let store = Store::new();
    /// store.write(|tx| {
    ///     register_tool(tx, Tool::new("get_forecast", "Weather forecast").with_source("weather"),
    ///         |_| async { Ok(serde_json::json!("sunny")) })?;
    ///     register_tool(tx, Tool::new("send_email", "Send an email").with_source("mail"),
    ///         |_| async { Ok(serde_json::json!("sent")) })
    /// })?;
    /// let index = capstore::rig::ToolIndex::new(store, Default::default());
    /// let first = index.search("weather forecast for Oslo", 24)?;
    /// assert_eq!(first.iter().map(|t| t.id.as_str()).collect::<Vec<_>>(), ["get_forecast"]);
    /// // A new turn carries the last turn's list on, and appends its own.
    /// let next = index.search("now send an email to Ann", 24)?;
    /// let names: Vec<&str> = next.iter().map(|t| t.id.as_str()).collect();
    /// assert_eq!(names, ["get_forecast", "send_email"]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn search(
        &self,
        query: &str,
        samples: usize,
    ) -> Result<Vec<VectorSearchIdResult>, SelectError> {
        Ok(self.answer(query, samples)?.ids)
    }

    /// [`search`](Self::search), with the selection the ids are the tools of.
    fn answer(&self, query: &str, samples: usize) -> Result<Answer, SelectError> {
        if samples == 0 {
            return Ok(Answer {
                ids: Vec::new(),
                selection: Arc::new(Selection::default()),
            });
        }
        let mut state = self.state.lock();
        if let Some(open) = &state.open
            && open.message == query
            && open.samples == samples
        {
            return Ok(open.answer.clone());
        }
        if let Some(usage) = &state.usage {
            self.queue.push(usage.finish_turn())?;
        }
        let snapshot = self.store.snapshot();
        let mut turn = if self.keeps_conversation {
            state.conversation.next_turn(query)
        } else {
            Turn::new(query)
        };
        turn.add_discovered(self.executor.kept_tools());
        let selection = self.builder.select(&snapshot, &turn)?;
        // The names rig knows: those of the tool set the index built, when it built one (a
        // tool added since is not in it); else the snapshot's.
        let (export, pinned) = match &state.pinned {
            Some(pinned) => (Arc::clone(pinned), true),
            None => (ToolExport::cached(&mut state.export, &snapshot)?, false),
        };
        let known = |key: &str| !pinned || export.export_name(key).is_some();
        let sent = sendable(&snapshot, selection, samples, known)?;
        let ids: Vec<VectorSearchIdResult> = sent
            .tools
            .iter()
            .map(|tool| VectorSearchIdResult {
                score: if tool.carried() {
                    0.0
                } else {
                    f64::from(tool.score)
                },
                id: export_name(&export, &tool.key, &tool.tool.name),
            })
            .collect();
        let answer = Answer {
            ids,
            selection: Arc::new(sent),
        };
        if self.keeps_conversation {
            state.conversation.record_selection(&answer.selection);
            if let Some(usage) = &state.usage {
                // Offered for the turn's own reasons: what its calls are read against.
                usage.sent(answer.selection.offered());
            }
            state.open = Some(OpenTurn {
                message: query.to_string(),
                samples,
                answer: answer.clone(),
            });
        }
        state.last = Some(Arc::clone(&answer.selection));
        Ok(answer)
    }

    /// The rig tools for this index: every tool of the store that has a handler, each under
    /// its export name (the names the index answers with), running through the index's
    /// executor. Their calls mark the tool as used in the index's conversation (it stays in
    /// the list, fresh) and, while learning, are counted into usage with the turn. Built from
    /// the store's current snapshot: build it again after the store's tools change.
    ///
    /// ```
    /// use capstore::exec::register_tool;
    /// use capstore::{Store, Tool, TOOLS};
    /// let store = Store::new();
    /// store.write(|tx| {
    ///     register_tool(tx, Tool::new("get_forecast", "Weather forecast").with_source("weather"),
    ///         |_| async { Ok(serde_json::json!("sunny")) })?;
    ///     tx.insert(&TOOLS, Tool::new("no_handler", "Listed only"))
    /// })?;
    /// let index = capstore::rig::ToolIndex::new(store, Default::default());
    /// let tools = index.toolset()?;
    /// assert_eq!(tools.names().collect::<Vec<_>>(), ["get_forecast"]);
    /// # Ok::<(), capstore::StoreError>(())
    /// ```
    pub fn toolset(&self) -> Result<ToolSet, StoreError> {
        let conversation = Recorder {
            state: Arc::clone(&self.state),
            keeps_conversation: self.keeps_conversation,
        };
        let (set, export) = build_toolset(&self.executor, Some(conversation))?;
        let mut state = self.state.lock();
        state.pinned = Some(Arc::new(export));
        // A turn answered with the old names is answered again.
        state.open = None;
        Ok(set)
    }
}

impl VectorStoreIndex for ToolIndex {
    type Filter = Filter<Value>;

    /// Each answered tool's definition as the document: `{"name", "key", "description",
    /// "parameters"}` (the export name, the qualified name, the description, the input
    /// schema), deserialized as `T`.
    async fn top_n<T: DeserializeOwned + WasmCompatSend>(
        &self,
        request: VectorSearchRequest<Self::Filter>,
    ) -> Result<Vec<VectorSearchResult<T>>, VectorStoreError> {
        if request.filter().is_some() {
            return Err(filter_refused());
        }
        let samples = samples(&request);
        let Answer { ids, selection } = self
            .answer(request.query(), samples)
            .map_err(VectorStoreError::datastore)?;
        let documents: Result<Vec<_>, serde_json::Error> = ids
            .into_iter()
            .zip(&selection.tools)
            .map(|(hit, tool)| {
                let document = json!({
                    "name": hit.id,
                    "key": &*tool.key,
                    "description": tool.tool.description,
                    "parameters": tool.tool.input_schema.to_value(),
                });
                Ok(VectorSearchResult {
                    score: hit.score,
                    id: hit.id,
                    document: serde_json::from_value(document)?,
                })
            })
            .collect();
        Ok(documents?)
    }

    /// [`ToolIndex::search`] with the request's query and samples.
    async fn top_n_ids(
        &self,
        request: VectorSearchRequest<Self::Filter>,
    ) -> Result<Vec<VectorSearchIdResult>, VectorStoreError> {
        if request.filter().is_some() {
            return Err(filter_refused());
        }
        self.search(request.query(), samples(&request))
            .map_err(VectorStoreError::datastore)
    }
}

/// A request's samples.
fn samples(request: &VectorSearchRequest<Filter<Value>>) -> usize {
    usize::try_from(request.samples()).unwrap_or(usize::MAX)
}

/// The error for a request with a filter.
fn filter_refused() -> VectorStoreError {
    VectorStoreError::FilterError(FilterError::TypeError(
        "a filter (capstore's tool index selects by its policy: include_tags, exclude_tags)".into(),
    ))
}

/// A capstore tool as a rig tool: its definition under its export name, and calls forwarded
/// to [`Executor::execute`] (arguments in, the handler's JSON output out; an [`ExecError`]
/// becomes a [`ToolExecutionError`] carrying its message). rig registers runtime-named tools as
/// [`DynamicTool`]s (`DynamicTool::from(tool)`); [`ErasedTool`], rig's object-safe tool
/// contract, is implemented too.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use capstore::exec::register_tool;
/// use capstore::rig::CapstoreTool;
/// use capstore::{Executor, Store, Tool};
/// use serde_json::json;
/// let store = Store::new();
/// store.write(|tx| register_tool(tx, Tool::new("add", "Add two numbers").with_source("math"),
///     |args| async move { Ok(json!(args["a"].as_i64().unwrap_or(0) + args["b"].as_i64().unwrap_or(0))) }))?;
/// let tool = CapstoreTool::new(&Executor::new(store), "math/add")?;
/// assert_eq!(tool.definition().name, "add");
/// assert_eq!(tool.call(json!({ "a": 2, "b": 3 })).await?, json!(5));
/// let rig_tool = rig::tool::DynamicTool::from(tool);
/// assert_eq!(rig_tool.name(), "add");
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct CapstoreTool {
    executor: Executor,
    key: Arc<str>,
    definition: ToolDefinition,
    conversation: Option<Recorder>,
}

/// Where a tool of an index's tool set records its calls: that index's conversation.
#[derive(Clone)]
struct Recorder {
    state: Arc<Mutex<State>>,
    keeps_conversation: bool,
}

impl Recorder {
    fn called(&self, key: &str) {
        let mut state = self.state.lock();
        if self.keeps_conversation {
            state.conversation.record_tool_use(key);
        }
        if let Some(usage) = &state.usage {
            usage.called(key);
        }
    }
}

impl fmt::Debug for CapstoreTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CapstoreTool")
            .field("key", &self.key)
            .field("name", &self.definition.name)
            .finish_non_exhaustive()
    }
}

/// Ids of the calls rig makes, for the executor's events (rig's tools are not told the
/// provider's call id).
static NEXT_CALL: AtomicU64 = AtomicU64::new(1);

impl CapstoreTool {
    /// The tool keyed `key` (its qualified name) in the executor's store, as a rig tool. Fails
    /// with [`ExecError::UnknownTool`] when there is none and [`ExecError::NoHandler`] when it
    /// has no handler. Computes the snapshot's export names (a pass over the catalog): to
    /// wrap every tool, [`toolset`] computes them once.
    ///
    /// ```
    /// use capstore::rig::CapstoreTool;
    /// use capstore::{ExecError, Executor, Store, Tool, TOOLS};
    /// let store = Store::new();
    /// store.write(|tx| tx.insert(&TOOLS, Tool::new("listed", "No handler")))?;
    /// let executor = Executor::new(store);
    /// assert!(matches!(CapstoreTool::new(&executor, "listed"), Err(ExecError::NoHandler { .. })));
    /// assert!(matches!(CapstoreTool::new(&executor, "nope"), Err(ExecError::UnknownTool { .. })));
    /// # Ok::<(), capstore::StoreError>(())
    /// ```
    pub fn new(executor: &Executor, key: &str) -> Result<Self, ExecError> {
        let snapshot = executor.store().snapshot();
        let store_error = |error| ExecError::Store {
            tool: key.to_string(),
            error,
        };
        let export = ToolExport::for_snapshot(&snapshot).map_err(store_error)?;
        let tool = snapshot
            .get(&TOOLS, key)
            .map_err(store_error)?
            .ok_or_else(|| ExecError::UnknownTool {
                tool: key.to_string(),
            })?;
        if !snapshot.contains(&HANDLERS, key).map_err(store_error)? {
            return Err(ExecError::NoHandler {
                tool: key.to_string(),
            });
        }
        // Export names are never empty (at least one character of `[a-zA-Z0-9_-]`).
        CapstoreTool::from_parts(executor, &export, key, tool, None).ok_or_else(|| {
            ExecError::UnknownTool {
                tool: key.to_string(),
            }
        })
    }

    fn from_parts(
        executor: &Executor,
        export: &ToolExport,
        key: &str,
        tool: &crate::tools::Tool,
        conversation: Option<Recorder>,
    ) -> Option<Self> {
        let name = ToolName::new(export_name(export, key, &tool.name)).ok()?;
        Some(CapstoreTool {
            executor: executor.clone(),
            key: key.into(),
            definition: ToolDefinition::new(
                name,
                tool.description.clone(),
                tool.input_schema.to_value(),
            ),
            conversation,
        })
    }

    /// The tool's qualified name in the store.
    ///
    /// ```
    /// # use capstore::{exec::register_tool, Executor, Store, Tool};
    /// # let store = Store::new();
    /// # store.write(|tx| register_tool(tx, Tool::new("add", "Add").with_source("math"), |v| async move { Ok(v) }))?;
    /// let tool = capstore::rig::CapstoreTool::new(&Executor::new(store), "math/add")?;
    /// assert_eq!(tool.key(), "math/add");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The definition rig sends: the export name, the description and the input schema.
    ///
    /// ```
    /// # use capstore::{exec::register_tool, Executor, Store, Tool};
    /// # let store = Store::new();
    /// # store.write(|tx| register_tool(tx, Tool::new("add", "Add two numbers").with_source("math"), |v| async move { Ok(v) }))?;
    /// let definition = capstore::rig::CapstoreTool::new(&Executor::new(store), "math/add")?.definition();
    /// assert_eq!((definition.name.as_str(), definition.description.as_str()), ("add", "Add two numbers"));
    /// assert_eq!(definition.parameters["type"], "object");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn definition(&self) -> ToolDefinition {
        self.definition.clone()
    }

    /// Runs the tool through the executor with `arguments` (a JSON object) and returns the
    /// handler's output, after the hooks. The call counts as offered this turn (rig runs only
    /// the tools its request advertised), so the executor's unselected-call policy never
    /// refuses it. A failure keeps the [`ExecError`] as its source, and its message for the
    /// model: invalid arguments as [`invalid_args`](ToolExecutionError::invalid_args), an
    /// unknown tool or one without a handler as
    /// [`not_found`](ToolExecutionError::not_found), a hook's denial as a
    /// [refusal](ToolExecutionError::refused), the rest as [`other`](ToolExecutionError::other).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use capstore::exec::register_tool;
    /// use capstore::{ExecError, Executor, HandlerError, Store, Tool};
    /// let store = Store::new();
    /// store.write(|tx| register_tool(tx, Tool::new("fail", "Always fails"),
    ///     |_| async { Err(HandlerError::new("disk full")) }))?;
    /// let tool = capstore::rig::CapstoreTool::new(&Executor::new(store), "fail")?;
    /// let error = tool.call(serde_json::json!({})).await.unwrap_err();
    /// assert_eq!(error.message(), "tool `fail` failed: disk full");
    /// assert!(matches!(error.downcast_ref::<ExecError>(), Some(ExecError::Handler { .. })));
    /// # Ok(())
    /// # }
    /// ```
    pub async fn call(&self, arguments: Value) -> Result<Value, ToolExecutionError> {
        let id = format!("rig-{}", NEXT_CALL.fetch_add(1, Ordering::Relaxed));
        let offered = [self.key.to_string()];
        let call = ToolCall::new(id, &*self.key, arguments);
        match self.executor.execute(call, &offered).await {
            Ok(out) => {
                if let Some(conversation) = &self.conversation {
                    conversation.called(&self.key);
                }
                Ok(out.output)
            }
            Err(error) => Err(tool_error(error)),
        }
    }
}

impl ErasedTool for CapstoreTool {
    fn name(&self) -> String {
        self.definition.name.to_string()
    }

    fn description(&self) -> String {
        self.definition.description.clone()
    }

    fn parameters(&self) -> Value {
        self.definition.parameters.clone()
    }

    fn execute<'a>(
        &'a self,
        args: String,
        _context: &'a mut ToolContext,
    ) -> WasmBoxedFuture<'a, ToolResult> {
        Box::pin(async move {
            let arguments = match serde_json::from_str::<Value>(&args) {
                Ok(Value::Null) => json!({}),
                Ok(arguments) => arguments,
                Err(error) => {
                    return ToolResult::failed(
                        ToolExecutionError::invalid_args(format!(
                            "tool `{}`: arguments are not JSON: {error}",
                            self.key
                        ))
                        .with_source(error),
                    );
                }
            };
            match self.call(arguments).await {
                Ok(output) => ToolResult::success(ToolOutput::json(output)),
                Err(error) => ToolResult::failed(error),
            }
        })
    }
}

/// Registered in a rig [`ToolSet`] or agent under its export name.
impl From<CapstoreTool> for DynamicTool {
    fn from(tool: CapstoreTool) -> Self {
        let definition = tool.definition();
        let tool = Arc::new(tool);
        DynamicTool::new(
            definition.name,
            definition.description,
            definition.parameters,
            move |arguments| {
                let tool = Arc::clone(&tool);
                Box::pin(async move { tool.call(arguments).await.map(ToolOutput::json) })
            },
        )
    }
}

/// A rig [`ToolSet`] of every tool in the executor's store that has a handler, each a
/// [`CapstoreTool`] under its export name, running through `executor`. For an agent that
/// picks its tools with a [`ToolIndex`], use [`ToolIndex::toolset`], whose tools also mark
/// their calls in the index's conversation. Built from the store's current snapshot (the
/// export names are computed once, over the whole catalog).
///
/// ```
/// use capstore::exec::register_tool;
/// use capstore::{Executor, Store, Tool};
/// let store = Store::new();
/// store.write(|tx| {
///     register_tool(tx, Tool::new("search", "Search code").with_source("github"), |v| async move { Ok(v) })?;
///     register_tool(tx, Tool::new("search", "Search the web").with_source("web"), |v| async move { Ok(v) })
/// })?;
/// let tools = capstore::rig::toolset(&Executor::new(store))?;
/// assert_eq!(tools.names().collect::<Vec<_>>(), ["github__search", "web__search"]);
/// # Ok::<(), capstore::StoreError>(())
/// ```
pub fn toolset(executor: &Executor) -> Result<ToolSet, StoreError> {
    Ok(build_toolset(executor, None)?.0)
}

/// The tool set, and the export names it was built with.
fn build_toolset(
    executor: &Executor,
    conversation: Option<Recorder>,
) -> Result<(ToolSet, ToolExport), StoreError> {
    let snapshot = executor.store().snapshot();
    let export = ToolExport::for_snapshot(&snapshot)?;
    let mut set = ToolSet::default();
    for (key, tool) in snapshot.iter(&TOOLS)? {
        if snapshot.contains(&HANDLERS, key)? {
            let tool = CapstoreTool::from_parts(executor, &export, key, tool, conversation.clone());
            if let Some(tool) = tool {
                set.add_dynamic_tool(tool.into());
            }
        }
    }
    Ok((set, export))
}

/// The selection as rig will send it: the tools with a handler that rig `known`s, at most
/// `samples` of them (the turn's own by relevance first, then the carried ones, earliest
/// first), in send order; the tools cut for `samples` are reported as dropped ([`DropReason::MaxTools`]).
fn sendable(
    snapshot: &Snapshot,
    mut selection: Selection,
    samples: usize,
    known: impl Fn(&str) -> bool,
) -> Result<Selection, StoreError> {
    let mut runnable = Vec::with_capacity(selection.tools.len());
    for tool in std::mem::take(&mut selection.tools) {
        if known(&tool.key) && snapshot.contains(&HANDLERS, &tool.key)? {
            runnable.push(tool);
        } else {
            selection.tokens = selection.tokens.saturating_sub(tool.tokens);
        }
    }
    if runnable.len() > samples {
        // The turn's own tools by relevance, then the carried ones in list order.
        let mut order: Vec<usize> = (0..runnable.len()).collect();
        order.sort_by_key(|&i| {
            let tool = &runnable[i];
            match tool.carried() {
                false => (0, tool.rank, i),
                true => (1, 0, i),
            }
        });
        let mut keep = vec![false; runnable.len()];
        for &i in order.iter().take(samples) {
            keep[i] = true;
        }
        let mut kept = Vec::with_capacity(samples);
        for (tool, keep) in runnable.into_iter().zip(keep) {
            if keep {
                kept.push(tool);
            } else {
                selection.tokens = selection.tokens.saturating_sub(tool.tokens);
                selection.dropped.push(Dropped {
                    key: Arc::clone(&tool.key),
                    reason: DropReason::MaxTools { max: samples },
                    candidate: tool.reasons,
                });
            }
        }
        runnable = kept;
    }
    selection.tools = runnable;
    Ok(selection)
}

/// A tool's export name, as [`ToolExport::tool_json`] names it.
fn export_name(export: &ToolExport, key: &str, name: &str) -> String {
    export
        .export_name(key)
        .map_or_else(|| crate::tools::sanitize(name), str::to_string)
}

/// An executor's failure as rig's tool error: its message (for the model and for logs), a
/// kind for rig's policies, and the error itself as the source.
fn tool_error(error: ExecError) -> ToolExecutionError {
    let message = error.to_string();
    let rig_error = match &error {
        ExecError::InvalidArguments { .. } => ToolExecutionError::invalid_args(message),
        ExecError::UnknownTool { .. } | ExecError::NoHandler { .. } => {
            ToolExecutionError::not_found(message)
        }
        ExecError::HookDenied { .. } | ExecError::NotSelected { .. } => {
            ToolExecutionError::refused(message)
        }
        _ => ToolExecutionError::other(message),
    };
    rig_error.with_source(error)
}
