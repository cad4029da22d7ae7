//! How a turn ends ([`TurnStatus`]): finished, with its [`TurnOutcome`], or suspended at a step
//! whose calls need approval, kept as data until the decisions come (minutes or days later, in
//! this process or another), then resumed.
//!
//! A [`PendingTurn`] is plain serializable data: the conversation so far, the tools offered, the
//! step reached, and the step's calls with their tickets. It costs what those weigh; nothing
//! waits in memory meanwhile.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::context::{Conversation, Selection};
use crate::events::Ticket;

use super::approval::{Verdict, Waiting};
use super::model::{Message, ModelToolCall};

/// How far a turn got: what it needs to go on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct TurnState {
    pub turn: u64,
    /// Model calls made so far this turn.
    pub step: usize,
    /// The tool definitions offered, in the provider's shape.
    pub tools: Vec<Value>,
    /// Qualified names of the selected tools.
    pub selected: Vec<String>,
    /// The calls run so far: qualified name, success.
    pub calls: Vec<(String, bool)>,
}

/// One call of a suspended step.
///
/// ```
/// use capstore::agent::{ModelToolCall, PendingCall, Ticket};
/// let call = PendingCall {
///     call: ModelToolCall { id: "c1".into(), name: "fs__delete".into(), arguments: serde_json::json!({}) },
///     tool: "fs/delete".into(),
///     ticket: Some(Ticket(3)),
/// };
/// assert_eq!(call.ticket, Some(Ticket(3)));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PendingCall {
    /// The call as the model made it.
    pub call: ModelToolCall,
    /// The tool's qualified name.
    pub tool: String,
    /// The ticket to decide, when the call needs approval; `None` runs without one.
    pub ticket: Option<Ticket>,
}

/// A turn suspended for approvals, from [`Agent::start_turn`](super::Agent::start_turn) or
/// [`Agent::resume_turn`](super::Agent::resume_turn). Serialize it to keep it; resume it with
/// a [`Decision`](super::Decision) for each of [`tickets`](Self::tickets).
///
/// After a round trip through serde, the outcome's `selection` holds only what the turn
/// needs to go on (the tool definitions are kept; the selection's reasons are not).
///
/// See [`Agent::start_turn`](super::Agent::start_turn) for an example.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PendingTurn {
    /// Identifies this suspension (its first ticket's number).
    pub id: u64,
    /// The turn's number in its session.
    pub turn: u64,
    /// The step's calls, in the order the model made them; they run in this order.
    pub calls: Vec<PendingCall>,
    /// The conversation up to and including the model's calls.
    pub messages: Vec<Message>,
    /// The selection state of the session (earlier messages, recent tools, the tool list), so
    /// that a session rebuilt elsewhere ([`Session::resuming`](super::Session::resuming))
    /// selects its next turns as the one that suspended would.
    pub conversation: Conversation,
    pub(crate) state: TurnState,
    #[serde(skip)]
    pub(crate) selection: Arc<Selection>,
}

impl PendingTurn {
    pub(crate) fn new(
        state: TurnState,
        calls: Vec<PendingCall>,
        messages: Vec<Message>,
        conversation: Conversation,
        selection: Arc<Selection>,
    ) -> Self {
        let id = calls.iter().find_map(|c| c.ticket).map_or(0, |t| t.0);
        PendingTurn {
            id,
            turn: state.turn,
            calls,
            messages,
            conversation,
            state,
            selection,
        }
    }

    /// The tickets that need a decision, in call order.
    ///
    /// ```
    /// # fn demo(pending: &capstore::agent::PendingTurn) {
    /// for ticket in pending.tickets() {
    ///     println!("waiting on {ticket}");
    /// }
    /// # }
    /// ```
    pub fn tickets(&self) -> Vec<Ticket> {
        self.calls.iter().filter_map(|c| c.ticket).collect()
    }
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

/// How a turn that may suspend ended.
#[derive(Debug, Clone)]
pub enum TurnStatus {
    /// The model answered.
    Finished(TurnOutcome),
    /// The turn waits for decisions (boxed: a pending turn carries the conversation so far).
    Suspended(Box<PendingTurn>),
}

/// What lets a call run: nothing, a ticket being waited on, or a decision already made.
pub(crate) enum Gate {
    Free,
    Wait(Waiting),
    Decided(Verdict),
}
