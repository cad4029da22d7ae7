//! The events themselves.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::context::Selection;

/// The handle of one call waiting for approval; unique within its
/// [`Approvals`](crate::agent::Approvals), which opens it, and named by the events of that call
/// ([`Event::ToolCallPending`] and the decision's). Also `capstore::agent::Ticket`.
///
/// ```
/// let ticket = capstore::agent::Ticket(7);
/// assert_eq!(ticket, capstore::events::Ticket(7));
/// assert_eq!(ticket.to_string(), "#7");
/// assert_eq!(serde_json::to_string(&ticket)?, "7");
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Ticket(pub u64);

impl fmt::Display for Ticket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{}", self.0)
    }
}

/// Something that happened in the agent, as told to [`EventBus`](super::EventBus) subscribers.
///
/// Serialized with a `type` tag in snake_case, for logs and traces, and read back the same way
/// (see [`EventTape`](super::EventTape) for the file format). Durations are
/// `{"secs": u64, "nanos": u32}`.
///
/// ```
/// use capstore::Event;
/// let event = Event::ToolCallStarted { call_id: "c1".into(), tool: "fs/read_file".into() };
/// assert_eq!(event.kind(), "tool_call_started");
/// assert_eq!(
///     serde_json::to_value(&event)?,
///     serde_json::json!({ "type": "tool_call_started", "call_id": "c1", "tool": "fs/read_file" })
/// );
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    /// A user turn started.
    TurnStarted {
        /// The turn's number.
        turn: u64,
        /// The user's message.
        message: String,
    },
    /// The tools to offer the model this turn were chosen.
    SelectionMade {
        /// The turn's number.
        turn: u64,
        /// The store version the selection was made from.
        version: u64,
        /// Qualified names of the selected tools, in the order they are offered.
        tools: Vec<String>,
        /// The whole selection: every tool's reasons, the near misses, the query. Not
        /// serialized (the tool list above is its summary); read back as an empty selection.
        #[serde(skip)]
        selection: Arc<Selection>,
    },
    /// The executor took a call; always the first event of a call.
    ToolCallStarted {
        /// The call's id.
        call_id: String,
        /// The tool's qualified name, as called.
        tool: String,
    },
    /// The call succeeded; its last event.
    ToolCallFinished {
        /// The call's id.
        call_id: String,
        /// The tool's qualified name.
        tool: String,
        /// Time from the start of the call to the end of the last post-tool-use hook.
        elapsed: Duration,
    },
    /// The call failed (for any reason, a hook's denial included); its last event.
    ToolCallFailed {
        /// The call's id.
        call_id: String,
        /// The tool's qualified name, as called.
        tool: String,
        /// The error, as displayed.
        error: String,
    },
    /// A pre-tool-use hook denied a call; comes just before that call's `ToolCallFailed`.
    HookDenied {
        /// The call's id.
        call_id: String,
        /// The hook's id.
        hook: String,
        /// The tool's qualified name.
        tool: String,
        /// The hook's reason.
        reason: String,
    },
    /// A call needs a person's approval and waits on `ticket` (the agent's
    /// [`Approvals`](crate::agent::Approvals)), or is part of a suspended turn. Comes before any
    /// other event of the call; then `ToolCallApproved` (and the executor's events) or
    /// `ToolCallRejected`.
    ToolCallPending {
        /// The ticket to approve or reject.
        ticket: Ticket,
        /// The call's id.
        call_id: String,
        /// The tool's qualified name.
        tool: String,
        /// The arguments the model gave, for the person to judge.
        arguments: Value,
    },
    /// The pending call was approved; it runs next.
    ToolCallApproved {
        /// The ticket.
        ticket: Ticket,
        /// The call's id.
        call_id: String,
        /// The tool's qualified name.
        tool: String,
    },
    /// The pending call was rejected, or not approved in time; it did not run, and the model is
    /// told `reason`. The call's last event.
    ToolCallRejected {
        /// The ticket.
        ticket: Ticket,
        /// The call's id.
        call_id: String,
        /// The tool's qualified name.
        tool: String,
        /// Why, as the model reads it.
        reason: String,
    },
    /// A turn ended with the model's answer.
    TurnFinished {
        /// The turn's number.
        turn: u64,
        /// How many times the model was called in the turn.
        steps: usize,
        /// The answer.
        answer: String,
    },
    /// A commit changed the store.
    CatalogChanged {
        /// The new version.
        version: u64,
        /// How many records the commit inserted, updated or deleted (all tables).
        changes: usize,
    },
    /// A client of the gateway (over HTTP, named by its token: `gateway::Clients`) called a
    /// tool: who called what, and how it ended. After the call's own events, if it ran. Its
    /// arguments are told only when the gateway is asked to (`GatewayOptions::audit_arguments`,
    /// `serve --audit-arguments`).
    GatewayCall {
        /// The client's name.
        client: String,
        /// The call's id.
        call_id: String,
        /// The tool, as the client named it.
        tool: String,
        /// `ok`; `error` (the call failed, or the server said it did); `refused` (held, unknown,
        /// or outside the client's scope: never run).
        outcome: String,
        /// The call's arguments, when the gateway audits them; `None` otherwise.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        arguments: Option<Value>,
    },
}

impl Event {
    /// The variant's name in snake_case, as serialized in `type`.
    ///
    /// ```
    /// use capstore::Event;
    /// assert_eq!(Event::CatalogChanged { version: 1, changes: 2 }.kind(), "catalog_changed");
    /// ```
    pub fn kind(&self) -> &'static str {
        match self {
            Event::TurnStarted { .. } => "turn_started",
            Event::SelectionMade { .. } => "selection_made",
            Event::ToolCallStarted { .. } => "tool_call_started",
            Event::ToolCallFinished { .. } => "tool_call_finished",
            Event::ToolCallFailed { .. } => "tool_call_failed",
            Event::HookDenied { .. } => "hook_denied",
            Event::ToolCallPending { .. } => "tool_call_pending",
            Event::ToolCallApproved { .. } => "tool_call_approved",
            Event::ToolCallRejected { .. } => "tool_call_rejected",
            Event::TurnFinished { .. } => "turn_finished",
            Event::CatalogChanged { .. } => "catalog_changed",
            Event::GatewayCall { .. } => "gateway_call",
        }
    }

    /// The call id of a tool-call event (started, finished, failed, hook denied, pending,
    /// approved, rejected).
    ///
    /// ```
    /// use capstore::Event;
    /// let event = Event::ToolCallFailed { call_id: "c1".into(), tool: "t".into(), error: "e".into() };
    /// assert_eq!(event.call_id(), Some("c1"));
    /// assert_eq!(Event::CatalogChanged { version: 1, changes: 1 }.call_id(), None);
    /// ```
    pub fn call_id(&self) -> Option<&str> {
        match self {
            Event::ToolCallStarted { call_id, .. }
            | Event::ToolCallFinished { call_id, .. }
            | Event::ToolCallFailed { call_id, .. }
            | Event::HookDenied { call_id, .. }
            | Event::ToolCallPending { call_id, .. }
            | Event::ToolCallApproved { call_id, .. }
            | Event::ToolCallRejected { call_id, .. }
            | Event::GatewayCall { call_id, .. } => Some(call_id),
            _ => None,
        }
    }
}
