//! The loop itself.

use std::fmt;
use std::sync::Arc;

use parking_lot::Mutex;
use serde_json::{Value, json};

use crate::context::{
    ContextBuilder, Conversation, SEARCH_TOOLS, SelectError, Selection, all_tools, search_tools,
    search_tools_definition,
};
use crate::events::{Event, EventBus};
use crate::exec::{Executor, ToolCall};
use crate::provider::{Provider, ToolExport};
use crate::store::{Snapshot, Store, StoreError};

use super::model::{Message, Model, ModelError, ModelReply, ModelRequest};

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

/// One conversation's state across turns: messages, the selection state, the turn counter.
#[derive(Debug, Default)]
pub struct Session {
    /// The messages so far, oldest first.
    pub messages: Vec<Message>,
    /// The selection state (history, recent tools, last selection, discovered tools).
    pub conversation: Conversation,
    turns: u64,
}

/// What one turn produced.
#[derive(Debug, Clone)]
pub struct TurnOutcome {
    /// The model's final answer.
    pub answer: String,
    /// How many times the model was called.
    pub steps: usize,
    /// The selection the turn's requests were built from.
    pub selection: Arc<Selection>,
    /// Qualified names of the tools the model called, in order, with whether each succeeded.
    pub calls: Vec<(String, bool)>,
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
    export: Mutex<Option<Arc<ToolExport>>>,
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
            store,
            model,
            builder: Some(ContextBuilder::new()),
            events: None,
            provider: Provider::OpenAiChat,
            max_steps: 8,
            offer_search_tools: true,
            export: Mutex::new(None),
        }
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
        let mut cache = self.export.lock();
        if let Some(export) = cache.as_ref().filter(|e| e.version() == snapshot.version()) {
            return Ok(Arc::clone(export));
        }
        let export = Arc::new(ToolExport::for_snapshot(snapshot)?);
        *cache = Some(Arc::clone(&export));
        Ok(export)
    }

    /// Runs one user turn to a final answer: select, ask the model, run its tool calls (any
    /// registered tool, selected or not, under the executor's policy), feed back the results,
    /// repeat. Tool failures go back to the model as error results; they do not end the turn.
    ///
    /// See the [module example](crate::agent).
    pub async fn run_turn(
        &self,
        session: &mut Session,
        user_message: &str,
    ) -> Result<TurnOutcome, AgentError> {
        session.turns += 1;
        let turn_no = session.turns;
        self.emit(Event::TurnStarted {
            turn: turn_no,
            message: user_message.to_string(),
        });
        let snapshot = self.store.snapshot();
        let mut turn = session.conversation.next_turn(user_message);
        for kept in self.executor.kept_tools() {
            if !turn.discovered.contains(&kept) {
                turn.discovered.push(kept);
            }
        }
        let selection = Arc::new(match &self.builder {
            Some(builder) => builder.select(&snapshot, &turn)?,
            None => all_tools(&snapshot)?,
        });
        session.conversation.record_selection(&selection);
        self.emit(Event::SelectionMade {
            turn: turn_no,
            version: selection.version,
            tools: selection.keys().map(str::to_string).collect(),
            selection: Arc::clone(&selection),
        });
        let export = self.export_for(&snapshot)?;
        let mut tools = export.selection_json(self.provider, &selection);
        if self.offer_search_tools {
            let def = search_tools_definition();
            tools.push(export.tool_json(self.provider, SEARCH_TOOLS, &def));
        }
        let selected: Vec<String> = selection.keys().map(str::to_string).collect();
        session.messages.push(Message::User {
            text: user_message.to_string(),
        });

        let mut calls = Vec::new();
        for step in 1..=self.max_steps {
            let request = ModelRequest {
                messages: session.messages.clone(),
                tools: tools.clone(),
                selection: Arc::clone(&selection),
            };
            match self.model.complete(&request).await? {
                ModelReply::Final(answer) => {
                    session.messages.push(Message::Assistant {
                        text: answer.clone(),
                        tool_calls: Vec::new(),
                    });
                    return Ok(TurnOutcome {
                        answer,
                        steps: step,
                        selection,
                        calls,
                    });
                }
                ModelReply::ToolCalls(model_calls) => {
                    session.messages.push(Message::Assistant {
                        text: String::new(),
                        tool_calls: model_calls.clone(),
                    });
                    for call in model_calls {
                        let (key, content, ok) = self
                            .run_call(&snapshot, &export, session, &call, &selected)
                            .await;
                        calls.push((key, ok));
                        session.messages.push(Message::ToolResult {
                            call_id: call.id,
                            content,
                            is_error: !ok,
                        });
                    }
                }
            }
        }
        Err(AgentError::StepLimit {
            steps: self.max_steps,
        })
    }

    /// Runs one model tool call; returns the qualified name, the content for the model, and
    /// whether it succeeded.
    async fn run_call(
        &self,
        snapshot: &Snapshot,
        export: &ToolExport,
        session: &mut Session,
        call: &super::model::ModelToolCall,
        selected: &[String],
    ) -> (String, Value, bool) {
        if self.offer_search_tools && call.name == SEARCH_TOOLS {
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
        // Map the provider-safe name back; a name the export does not know may be a qualified
        // name already (models sometimes echo them).
        let key = export.resolve(&call.name).unwrap_or(&call.name).to_string();
        let tool_call = ToolCall::new(call.id.clone(), key.clone(), call.arguments.clone());
        match self.executor.execute(tool_call, selected).await {
            Ok(out) => {
                session.conversation.record_tool_use(key.clone());
                (key, out.output, true)
            }
            Err(e) => (key, json!(e.to_string()), false),
        }
    }

    fn emit(&self, event: Event) {
        if let Some(bus) = &self.events {
            bus.emit(&event);
        }
    }
}
