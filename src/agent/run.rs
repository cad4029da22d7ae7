//! The loop itself.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use parking_lot::Mutex;
use serde_json::{Value, json};

use crate::context::{
    ContextBuilder, Conversation, SEARCH_TOOLS, SelectError, Selection, all_tools, search_tools,
    search_tools_definition_for,
};
use crate::events::{Event, EventBus, Ticket};
use crate::exec::{Executor, ToolCall};
use crate::provider::{Provider, ToolExport};
use crate::store::{Snapshot, Store, StoreError};
use crate::tools::TOOLS;
use crate::usage::{UsageQueue, UsageRecorder};

use super::approval::{Approvals, Decision, Verdict};
use super::model::{Message, Model, ModelError, ModelReply, ModelRequest};
use super::suspend::{Gate, PendingCall, PendingTurn, TurnOutcome, TurnState, TurnStatus};

/// Why a turn could not finish.
#[derive(Debug, Clone, PartialEq)]
pub enum AgentError {
    /// The selection failed.
    Select(SelectError),
    /// The store could not answer.
    Store(StoreError),
    /// The model failed.
    Model(ModelError),
    /// The model kept calling tools past the step limit.
    StepLimit {
        /// The limit.
        steps: usize,
    },
    /// [`Agent::resume_turn`]: the session is not suspended at this pending turn (it was
    /// resumed already, or belongs to another session). Nothing ran.
    NotSuspended {
        /// The pending turn's number.
        turn: u64,
    },
    /// [`Agent::resume_turn`]: these tickets have no decision. Nothing ran; the session is
    /// still suspended.
    Undecided {
        /// The tickets without a decision.
        tickets: Vec<Ticket>,
    },
}

impl fmt::Display for AgentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AgentError::Select(e) => e.fmt(f),
            AgentError::Store(e) => e.fmt(f),
            AgentError::Model(e) => e.fmt(f),
            AgentError::StepLimit { steps } => {
                write!(f, "no final answer after {steps} model steps")
            }
            AgentError::NotSuspended { turn } => write!(
                f,
                "turn {turn} is not suspended in this session (already resumed, or another session's)"
            ),
            AgentError::Undecided { tickets } => {
                let list: Vec<String> = tickets.iter().map(Ticket::to_string).collect();
                write!(f, "no decision for ticket(s) {}", list.join(", "))
            }
        }
    }
}

impl std::error::Error for AgentError {}

impl From<SelectError> for AgentError {
    fn from(e: SelectError) -> Self {
        AgentError::Select(e)
    }
}
impl From<StoreError> for AgentError {
    fn from(e: StoreError) -> Self {
        AgentError::Store(e)
    }
}
impl From<ModelError> for AgentError {
    fn from(e: ModelError) -> Self {
        AgentError::Model(e)
    }
}

/// One conversation's state across turns: messages, the selection state, the turn counter,
/// and the turn it is suspended at, if any.
#[derive(Debug, Default)]
pub struct Session {
    /// The messages so far, oldest first.
    pub messages: Vec<Message>,
    /// The selection state (history, recent tools, last selection, discovered tools).
    pub conversation: Conversation,
    turns: u64,
    /// The id of the [`PendingTurn`] this session waits at; cleared when resumed, so that a
    /// pending turn resumes once.
    suspended: Option<u64>,
    /// The turn's offered tools and calls, counted into the store's usage when it ends.
    usage: UsageRecorder,
}

impl Session {
    /// A session to resume `pending` in, for when the one that suspended is gone (another
    /// process): it holds the conversation's messages up to the pending step and its selection
    /// state (history, recent tools, the tool list), and waits at `pending`.
    ///
    /// ```
    /// # fn demo(pending: &capstore::agent::PendingTurn) {
    /// let session = capstore::agent::Session::resuming(pending);
    /// assert_eq!(session.messages, pending.messages);
    /// # }
    /// ```
    pub fn resuming(pending: &PendingTurn) -> Self {
        Session {
            messages: pending.messages.clone(),
            conversation: pending.conversation.clone(),
            turns: pending.turn,
            suspended: Some(pending.id),
            usage: UsageRecorder::new(),
        }
    }

    /// Whether the session waits at a suspended turn.
    ///
    /// ```
    /// assert!(!capstore::agent::Session::default().is_suspended());
    /// ```
    pub fn is_suspended(&self) -> bool {
        self.suspended.is_some()
    }
}

/// The agent loop: a store, a model, a selector (or none: every tool is sent), an executor and
/// an optional event bus.
#[derive(Debug)]
pub struct Agent<M> {
    store: Store,
    model: M,
    builder: Option<ContextBuilder>,
    executor: Executor,
    events: Option<EventBus>,
    provider: Provider,
    max_steps: usize,
    offer_search_tools: bool,
    approvals: Option<Approvals>,
    export: Mutex<Option<Arc<ToolExport>>>,
    learn: bool,
    /// Where its sessions' finished turns go, counted into the store in batches.
    queue: UsageQueue,
}

impl<M: Model> Agent<M> {
    /// An agent with the default [`ContextBuilder`], an executor that allows unselected calls,
    /// OpenAI chat tool shapes, `search_tools` offered, and at most 8 model steps a turn.
    ///
    /// ```
    /// # use capstore::agent::{Agent, Model, ModelError, ModelReply, ModelRequest};
    /// # struct M; impl Model for M { async fn complete(&self, _: &ModelRequest) -> Result<ModelReply, ModelError> { Ok(ModelReply::Final(String::new())) } }
    /// let agent = Agent::new(capstore::Store::new(), M);
    /// # let _ = agent;
    /// ```
    pub fn new(store: Store, model: M) -> Self {
        Agent {
            executor: Executor::new(store.clone()),
            model,
            builder: Some(ContextBuilder::new()),
            events: None,
            provider: Provider::OpenAiChat,
            max_steps: 8,
            offer_search_tools: true,
            approvals: None,
            export: Mutex::new(None),
            learn: true,
            queue: UsageQueue::new(store.clone()),
            store,
        }
    }

    /// Whether each finished turn's calls (and the tools it offered) are counted into the
    /// store's [`usage`](crate::usage), so that later selections bring the tools they need
    /// first. Default true. The agent records its sessions' calls itself: its executor needs no
    /// recorder of its own ([`Executor::with_usage`]). Finished turns are queued on the agent's
    /// [`UsageQueue`] and written in batches: a turn teaches the selections that start after
    /// its batch is written; [`flush_usage`](Self::flush_usage) writes what the queue holds,
    /// and so does dropping the agent (its last handle on the queue).
    ///
    /// ```
    /// # use capstore::agent::{Agent, Model, ModelError, ModelReply, ModelRequest};
    /// # struct M; impl Model for M { async fn complete(&self, _: &ModelRequest) -> Result<ModelReply, ModelError> { Ok(ModelReply::Final(String::new())) } }
    /// let agent = Agent::new(capstore::Store::new(), M).with_learning(false);
    /// # let _ = agent;
    /// ```
    pub fn with_learning(mut self, learn: bool) -> Self {
        self.learn = learn;
        self
    }

    /// Queues its sessions' finished turns on `queue` (by default a queue of its own, with the
    /// default [`BatchLimits`](crate::usage::BatchLimits)): share one with the store's other
    /// conversations. It should be a queue over the agent's store.
    ///
    /// ```
    /// # use capstore::agent::{Agent, Model, ModelError, ModelReply, ModelRequest};
    /// # struct M; impl Model for M { async fn complete(&self, _: &ModelRequest) -> Result<ModelReply, ModelError> { Ok(ModelReply::Final(String::new())) } }
    /// use capstore::usage::{BatchLimits, UsageQueue};
    /// let store = capstore::Store::new();
    /// let each_turn = BatchLimits { max_turns: 1, ..BatchLimits::default() };
    /// let agent = Agent::new(store.clone(), M).with_usage_queue(UsageQueue::with_limits(store, each_turn));
    /// # let _ = agent;
    /// ```
    pub fn with_usage_queue(mut self, queue: UsageQueue) -> Self {
        self.queue = queue;
        self
    }

    /// Writes the finished turns the agent's queue holds into the store's usage now (what
    /// dropping the agent does): call it when the agent stops, or before reading what its
    /// turns taught.
    ///
    /// Errors: the store refused the write ([`UsageQueue::flush`]).
    ///
    /// ```
    /// # use capstore::agent::{Agent, Model, ModelError, ModelReply, ModelRequest};
    /// # struct M; impl Model for M { async fn complete(&self, _: &ModelRequest) -> Result<ModelReply, ModelError> { Ok(ModelReply::Final(String::new())) } }
    /// let agent = Agent::new(capstore::Store::new(), M);
    /// agent.flush_usage()?;
    /// # Ok::<(), capstore::agent::AgentError>(())
    /// ```
    pub fn flush_usage(&self) -> Result<(), AgentError> {
        self.queue.flush()?;
        Ok(())
    }

    /// Uses `builder` to select tools; `None` sends every tool each turn.
    ///
    /// ```
    /// # use capstore::agent::{Agent, Model, ModelError, ModelReply, ModelRequest};
    /// # struct M; impl Model for M { async fn complete(&self, _: &ModelRequest) -> Result<ModelReply, ModelError> { Ok(ModelReply::Final(String::new())) } }
    /// let agent = Agent::new(capstore::Store::new(), M).with_builder(None);
    /// # let _ = agent;
    /// ```
    pub fn with_builder(mut self, builder: Option<ContextBuilder>) -> Self {
        self.builder = builder;
        self
    }

    /// Uses `executor` (its policy for unselected calls, its hooks, its events).
    ///
    /// ```
    /// # use capstore::agent::{Agent, Model, ModelError, ModelReply, ModelRequest};
    /// # struct M; impl Model for M { async fn complete(&self, _: &ModelRequest) -> Result<ModelReply, ModelError> { Ok(ModelReply::Final(String::new())) } }
    /// use capstore::{Executor, Store, UnselectedCallPolicy};
    /// let store = Store::new();
    /// let agent = Agent::new(store.clone(), M)
    ///     .with_executor(Executor::new(store).with_policy(UnselectedCallPolicy::Deny));
    /// # let _ = agent;
    /// ```
    pub fn with_executor(mut self, executor: Executor) -> Self {
        self.executor = executor;
        self
    }

    /// Emits turn-started and selection-made events on `bus` (give the executor the same bus
    /// for tool-call events).
    ///
    /// ```
    /// # use capstore::agent::{Agent, Model, ModelError, ModelReply, ModelRequest};
    /// # struct M; impl Model for M { async fn complete(&self, _: &ModelRequest) -> Result<ModelReply, ModelError> { Ok(ModelReply::Final(String::new())) } }
    /// let agent = Agent::new(capstore::Store::new(), M).with_events(capstore::EventBus::new());
    /// # let _ = agent;
    /// ```
    pub fn with_events(mut self, bus: EventBus) -> Self {
        self.events = Some(bus);
        self
    }

    /// The provider shape of the tool definitions sent.
    ///
    /// ```
    /// # use capstore::agent::{Agent, Model, ModelError, ModelReply, ModelRequest};
    /// # struct M; impl Model for M { async fn complete(&self, _: &ModelRequest) -> Result<ModelReply, ModelError> { Ok(ModelReply::Final(String::new())) } }
    /// use capstore::provider::Provider;
    /// let agent = Agent::new(capstore::Store::new(), M).with_provider(Provider::Anthropic);
    /// # let _ = agent;
    /// ```
    pub fn with_provider(mut self, provider: Provider) -> Self {
        self.provider = provider;
        self
    }

    /// At most `steps` model calls per turn.
    ///
    /// ```
    /// # use capstore::agent::{Agent, Model, ModelError, ModelReply, ModelRequest};
    /// # struct M; impl Model for M { async fn complete(&self, _: &ModelRequest) -> Result<ModelReply, ModelError> { Ok(ModelReply::Final(String::new())) } }
    /// let agent = Agent::new(capstore::Store::new(), M).with_max_steps(3);
    /// # let _ = agent;
    /// ```
    pub fn with_max_steps(mut self, steps: usize) -> Self {
        self.max_steps = steps.max(1);
        self
    }

    /// Whether to offer the built-in `search_tools` beside the selected tools.
    ///
    /// ```
    /// # use capstore::agent::{Agent, Model, ModelError, ModelReply, ModelRequest};
    /// # struct M; impl Model for M { async fn complete(&self, _: &ModelRequest) -> Result<ModelReply, ModelError> { Ok(ModelReply::Final(String::new())) } }
    /// let agent = Agent::new(capstore::Store::new(), M).with_search_tools(false);
    /// # let _ = agent;
    /// ```
    pub fn with_search_tools(mut self, offer: bool) -> Self {
        self.offer_search_tools = offer;
        self
    }

    /// Calls to the tools `approvals`' policy names wait for a decision on its desk (keep a
    /// clone to approve or reject), or suspend the turn under [`start_turn`](Self::start_turn).
    /// Give the agent an event bus to learn the tickets (`ToolCallPending`).
    ///
    /// ```
    /// # use capstore::agent::{Agent, Model, ModelError, ModelReply, ModelRequest};
    /// # struct M; impl Model for M { async fn complete(&self, _: &ModelRequest) -> Result<ModelReply, ModelError> { Ok(ModelReply::Final(String::new())) } }
    /// use capstore::agent::{ApprovalPolicy, Approvals};
    /// let approvals = Approvals::new(ApprovalPolicy::destructive());
    /// let agent = Agent::new(capstore::Store::new(), M).with_approvals(approvals.clone());
    /// # let _ = agent;
    /// ```
    pub fn with_approvals(mut self, approvals: Approvals) -> Self {
        self.approvals = Some(approvals);
        self
    }

    /// A new, empty session.
    ///
    /// ```
    /// # use capstore::agent::{Agent, Model, ModelError, ModelReply, ModelRequest};
    /// # struct M; impl Model for M { async fn complete(&self, _: &ModelRequest) -> Result<ModelReply, ModelError> { Ok(ModelReply::Final(String::new())) } }
    /// let session = Agent::new(capstore::Store::new(), M).session();
    /// assert!(session.messages.is_empty());
    /// ```
    pub fn session(&self) -> Session {
        Session::default()
    }

    /// Export names for `snapshot`, computed once per version and shared.
    fn export_for(&self, snapshot: &Snapshot) -> Result<Arc<ToolExport>, StoreError> {
        ToolExport::cached(&mut self.export.lock(), snapshot)
    }

    /// Runs one user turn to a final answer: select, ask the model, run its tool calls (any
    /// registered tool, selected or not, under the executor's policy), feed back the results,
    /// repeat. Tool failures go back to the model as error results; they do not end the turn.
    ///
    /// Calls that need approval ([`with_approvals`](Self::with_approvals)) wait on their
    /// ticket, all of one step's tickets opened at once, each call run as soon as it is approved;
    /// a rejected or timed-out call goes back to the model as an error result saying so.
    ///
    /// See the [module example](crate::agent).
    pub async fn run_turn(
        &self,
        session: &mut Session,
        user_message: &str,
    ) -> Result<TurnOutcome, AgentError> {
        let (state, selection) = self.begin(session, user_message)?;
        match self.drive(session, state, selection, None, false).await? {
            TurnStatus::Finished(outcome) => Ok(outcome),
            // `drive` suspends only when asked to; kept as an error rather than a panic.
            TurnStatus::Suspended(pending) => Err(AgentError::Undecided {
                tickets: pending.tickets(),
            }),
        }
    }

    /// Runs one user turn like [`run_turn`](Self::run_turn), except that a step whose calls
    /// need approval does not wait: the turn stops there and returns
    /// [`TurnStatus::Suspended`] with a [`PendingTurn`] (serializable, to keep until the
    /// decisions come), after emitting `ToolCallPending` for each of its tickets. Continue it
    /// with [`resume_turn`](Self::resume_turn).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use std::collections::HashMap;
    /// use capstore::agent::{Agent, ApprovalPolicy, Approvals, Decision, Message, Model, ModelError,
    ///     ModelReply, ModelRequest, ModelToolCall, PendingTurn, TurnStatus};
    /// use capstore::{exec::register_tool, Store, Tool};
    /// use serde_json::json;
    ///
    /// struct Deleter;
    /// impl Model for Deleter {
    ///     async fn complete(&self, req: &ModelRequest) -> Result<ModelReply, ModelError> {
    ///         Ok(match req.messages.last() {
    ///             Some(Message::ToolResult { content, .. }) => ModelReply::Final(content.to_string()),
    ///             _ => ModelReply::ToolCalls(vec![ModelToolCall {
    ///                 id: "c1".into(), name: "delete_file".into(), arguments: json!({}),
    ///             }]),
    ///         })
    ///     }
    /// }
    ///
    /// let store = Store::new();
    /// store.write(|tx| register_tool(tx, Tool::new("delete_file", "Delete a file").with_tags(["write"]),
    ///     |_| async { Ok(json!("deleted")) }))?;
    /// let agent = Agent::new(store, Deleter)
    ///     .with_approvals(Approvals::new(ApprovalPolicy::destructive()));
    /// let mut session = agent.session();
    /// let TurnStatus::Suspended(pending) = agent.start_turn(&mut session, "delete it").await? else {
    ///     panic!("the call needs approval");
    /// };
    /// // Days later, perhaps in another process:
    /// let kept = serde_json::to_string(&pending)?;
    /// let pending: PendingTurn = serde_json::from_str(&kept)?;
    /// let decisions = HashMap::from([(pending.tickets()[0], Decision::Approve)]);
    /// let TurnStatus::Finished(outcome) = agent.resume_turn(&mut session, &pending, &decisions).await? else {
    ///     panic!("nothing else to approve");
    /// };
    /// assert_eq!(outcome.answer, "\"deleted\"");
    /// # Ok(())
    /// # }
    /// ```
    pub async fn start_turn(
        &self,
        session: &mut Session,
        user_message: &str,
    ) -> Result<TurnStatus, AgentError> {
        let (state, selection) = self.begin(session, user_message)?;
        self.drive(session, state, selection, None, true).await
    }

    /// Continues a turn [suspended](Self::start_turn) in `session`, with a decision for each of
    /// its tickets; may suspend again at a later step. Fails, running nothing, if `session` is
    /// not suspended at `pending` ([`AgentError::NotSuspended`]: e.g. it was resumed already,
    /// so no call runs twice) or a ticket has no decision ([`AgentError::Undecided`]; the
    /// session stays suspended). Decisions for other tickets are ignored.
    ///
    /// See [`start_turn`](Self::start_turn) for an example.
    pub async fn resume_turn(
        &self,
        session: &mut Session,
        pending: &PendingTurn,
        decisions: &HashMap<Ticket, Decision>,
    ) -> Result<TurnStatus, AgentError> {
        if session.suspended != Some(pending.id) {
            return Err(AgentError::NotSuspended { turn: pending.turn });
        }
        let undecided: Vec<Ticket> = pending
            .tickets()
            .into_iter()
            .filter(|t| !decisions.contains_key(t))
            .collect();
        if !undecided.is_empty() {
            return Err(AgentError::Undecided { tickets: undecided });
        }
        session.suspended = None;
        let calls = pending
            .calls
            .iter()
            .map(|call| {
                let gate = match call.ticket.and_then(|t| decisions.get(&t)) {
                    Some(decision) => Gate::Decided(decision.clone().into()),
                    None => Gate::Free,
                };
                (call.clone(), gate)
            })
            .collect();
        self.drive(
            session,
            pending.state.clone(),
            Arc::clone(&pending.selection),
            Some(calls),
            true,
        )
        .await
    }

    /// The start of a turn: the selection and the tools to offer.
    fn begin(
        &self,
        session: &mut Session,
        user_message: &str,
    ) -> Result<(TurnState, Arc<Selection>), AgentError> {
        session.turns += 1;
        session.suspended = None;
        let turn_no = session.turns;
        self.emit(Event::TurnStarted {
            turn: turn_no,
            message: user_message.to_string(),
        });
        let snapshot = self.store.snapshot();
        let mut turn = session.conversation.next_turn(user_message);
        turn.add_discovered(self.executor.kept_tools());
        let selection = Arc::new(match &self.builder {
            Some(builder) => builder.select(&snapshot, &turn)?,
            None => all_tools(&snapshot)?,
        });
        session.conversation.record_selection(&selection);
        session.usage.sent(selection.offered());
        self.emit(Event::SelectionMade {
            turn: turn_no,
            version: selection.version,
            tools: selection.keys().map(str::to_string).collect(),
            selection: Arc::clone(&selection),
        });
        let export = self.export_for(&snapshot)?;
        let mut tools = export.selection_json(self.provider, &selection);
        if self.offer_search_tools {
            // Its description names the skills and servers it can find (O(skills + sources)).
            let def = search_tools_definition_for(&snapshot)?;
            // Under its own name, never a catalog tool's: the export reserves it
            // (`RESERVED_EXPORT_NAMES`), even from a catalog tool keyed `search_tools`.
            tools.push(ToolExport::default().tool_json(self.provider, SEARCH_TOOLS, &def));
        }
        session.messages.push(Message::User {
            text: user_message.to_string(),
        });
        let state = TurnState {
            turn: turn_no,
            step: 0,
            tools,
            selected: selection.keys().map(str::to_string).collect(),
            calls: Vec::new(),
        };
        Ok((state, selection))
    }

    /// The model steps of a turn, from `state`: first the calls of a resumed step (`ready`),
    /// then ask the model, gate and run its calls, until it answers, the step limit, or (when
    /// `suspend`) a step with calls needing approval.
    async fn drive(
        &self,
        session: &mut Session,
        mut state: TurnState,
        selection: Arc<Selection>,
        mut ready: Option<Vec<(PendingCall, Gate)>>,
        suspend: bool,
    ) -> Result<TurnStatus, AgentError> {
        let snapshot = self.store.snapshot();
        let export = self.export_for(&snapshot)?;
        loop {
            if let Some(calls) = ready.take() {
                for (call, gate) in calls {
                    let (key, content, ok) = self
                        .gated_call(&snapshot, session, &call, gate, &state.selected)
                        .await;
                    state.calls.push((key, ok));
                    session.messages.push(Message::ToolResult {
                        call_id: call.call.id,
                        content,
                        is_error: !ok,
                    });
                }
            }
            if state.step >= self.max_steps {
                // The calls ran all the same: they teach what they teach.
                self.learn_turn(session)?;
                return Err(AgentError::StepLimit {
                    steps: self.max_steps,
                });
            }
            state.step += 1;
            let request = ModelRequest {
                messages: session.messages.clone(),
                tools: state.tools.clone(),
                selection: Arc::clone(&selection),
            };
            let model_calls = match self.model.complete(&request).await? {
                ModelReply::Final(answer) => {
                    session.messages.push(Message::Assistant {
                        text: answer.clone(),
                        tool_calls: Vec::new(),
                    });
                    self.learn_turn(session)?;
                    self.emit(Event::TurnFinished {
                        turn: state.turn,
                        steps: state.step,
                        answer: answer.clone(),
                    });
                    return Ok(TurnStatus::Finished(TurnOutcome {
                        answer,
                        steps: state.step,
                        selection,
                        calls: state.calls,
                    }));
                }
                ModelReply::ToolCalls(calls) => calls,
            };
            session.messages.push(Message::Assistant {
                text: String::new(),
                tool_calls: model_calls.clone(),
            });
            let snap = &snapshot;
            let calls: Vec<(PendingCall, bool)> = model_calls
                .into_iter()
                .map(|call| {
                    // Map the provider-safe name back; a name the export does not know may be a
                    // qualified name already (models sometimes echo them).
                    let key = export.resolve(&call.name).unwrap_or(&call.name).to_string();
                    let gated =
                        !self.is_search_tools(&call.name) && self.needs_approval(snap, &key);
                    let pending = PendingCall {
                        call,
                        tool: key,
                        ticket: None,
                    };
                    (pending, gated)
                })
                .collect();
            let approvals = self
                .approvals
                .as_ref()
                .filter(|_| calls.iter().any(|c| c.1));
            let Some(approvals) = approvals else {
                ready = Some(calls.into_iter().map(|(c, _)| (c, Gate::Free)).collect());
                continue;
            };
            if suspend {
                let calls: Vec<PendingCall> = calls
                    .into_iter()
                    .map(|(mut call, gated)| {
                        if gated {
                            call.ticket = Some(approvals.issue());
                            self.emit_pending(&call);
                        }
                        call
                    })
                    .collect();
                let pending = PendingTurn::new(
                    state,
                    calls,
                    session.messages.clone(),
                    session.conversation.clone(),
                    selection,
                );
                session.suspended = Some(pending.id);
                return Ok(TurnStatus::Suspended(Box::new(pending)));
            }
            // Every ticket of the step opens before any call runs, so the person sees them all.
            ready = Some(
                calls
                    .into_iter()
                    .map(|(mut call, gated)| {
                        if !gated {
                            return (call, Gate::Free);
                        }
                        let waiting = approvals.open();
                        call.ticket = Some(waiting.ticket);
                        self.emit_pending(&call);
                        (call, Gate::Wait(waiting))
                    })
                    .collect(),
            );
        }
    }

    /// Whether the model called the discovery tool: by the name it was offered under, which no
    /// catalog tool is exported as (`RESERVED_EXPORT_NAMES`), so a catalog tool of that name,
    /// exported under another, still runs as itself.
    fn is_search_tools(&self, called: &str) -> bool {
        self.offer_search_tools && called == SEARCH_TOOLS
    }

    fn needs_approval(&self, snapshot: &Snapshot, key: &str) -> bool {
        let Some(approvals) = &self.approvals else {
            return false;
        };
        let tool = snapshot.get(&TOOLS, key).ok().flatten();
        approvals.policy().requires(key, tool)
    }

    fn emit_pending(&self, call: &PendingCall) {
        if let Some(ticket) = call.ticket {
            self.emit(Event::ToolCallPending {
                ticket,
                call_id: call.call.id.clone(),
                tool: call.tool.clone(),
                arguments: call.call.arguments.clone(),
            });
        }
    }

    /// Runs one call once its gate allows: returns the qualified name, the content for the
    /// model, and whether it succeeded.
    async fn gated_call(
        &self,
        snapshot: &Snapshot,
        session: &mut Session,
        call: &PendingCall,
        gate: Gate,
        selected: &[String],
    ) -> (String, Value, bool) {
        let verdict = match gate {
            Gate::Free => Verdict::Run,
            Gate::Wait(waiting) => waiting.verdict().await,
            Gate::Decided(verdict) => verdict,
        };
        if let Some(ticket) = call.ticket {
            let (call_id, tool) = (call.call.id.clone(), call.tool.clone());
            self.emit(match &verdict {
                Verdict::Run => Event::ToolCallApproved {
                    ticket,
                    call_id,
                    tool,
                },
                Verdict::Refuse(reason) => Event::ToolCallRejected {
                    ticket,
                    call_id,
                    tool,
                    reason: reason.clone(),
                },
            });
        }
        match verdict {
            Verdict::Run => self.run_call(snapshot, session, call, selected).await,
            Verdict::Refuse(reason) => (call.tool.clone(), json!(reason), false),
        }
    }

    /// Runs one model tool call; returns the qualified name, the content for the model, and
    /// whether it succeeded.
    async fn run_call(
        &self,
        snapshot: &Snapshot,
        session: &mut Session,
        call: &PendingCall,
        selected: &[String],
    ) -> (String, Value, bool) {
        let (key, call) = (call.tool.clone(), &call.call);
        if self.is_search_tools(&call.name) {
            return match search_tools(snapshot, &call.arguments) {
                Ok(found) => {
                    session
                        .conversation
                        .record_discovered(found.iter().map(|f| f.name.clone()));
                    (SEARCH_TOOLS.to_string(), json!(found), true)
                }
                Err(e) => (SEARCH_TOOLS.to_string(), json!(e.to_string()), false),
            };
        }
        let tool_call = ToolCall::new(call.id.clone(), key.clone(), call.arguments.clone());
        match self.executor.execute(tool_call, selected).await {
            Ok(out) => {
                session.conversation.record_tool_use(key.clone());
                session.usage.called(&key);
                (key, out.output, true)
            }
            Err(e) => (key, json!(e.to_string()), false),
        }
    }

    /// Ends the session's turn for usage: queues it, when the agent learns (which writes the
    /// queue's batch when the turn fills it).
    fn learn_turn(&self, session: &mut Session) -> Result<(), AgentError> {
        let turn = session.usage.finish_turn();
        if self.learn {
            self.queue.push(turn)?;
        }
        Ok(())
    }

    fn emit(&self, event: Event) {
        if let Some(bus) = &self.events {
            bus.emit(&event);
        }
    }
}
