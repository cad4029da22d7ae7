//! A minimal agent loop that plugs the store, the
//! [`ContextBuilder`](crate::context::ContextBuilder) and the [`Executor`](crate::exec::Executor) into
//! any model: each turn, select tools, call the model, execute its tool calls, repeat until it
//! answers or a step limit is hit.
//!
//! A program that calls its model itself drives a conversation with [`Chat`] instead: one call
//! selects a turn's tools, one runs each tool call, and what a turn must remember is recorded
//! on the way.
//!
//! Around the loop:
//! - **Approval** ([`Approvals`], [`ApprovalPolicy`]): calls to tools that delete, pay or send
//!   wait for a person ([`Agent::run_turn`]), or suspend the turn as data until the decisions
//!   come ([`Agent::start_turn`], [`Agent::resume_turn`], [`PendingTurn`]).
//! - **Record and replay** ([`RecordingModel`], [`ReplayModel`]): a model's replies kept on a
//!   JSONL tape once and played back in tests, failing loudly when the conversation diverges.
//! - Events of every turn go to an [`EventBus`](crate::EventBus), and from there to a file with
//!   [`EventTape`](crate::events::EventTape).
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use capstore::agent::{Agent, Model, ModelError, ModelReply, ModelRequest, ModelToolCall};
//! use capstore::exec::register_tool;
//! use capstore::{Store, Tool};
//! use serde_json::json;
//!
//! /// Calls the first offered tool once, then answers with its result.
//! struct FirstTool;
//! impl Model for FirstTool {
//!     async fn complete(&self, req: &ModelRequest) -> Result<ModelReply, ModelError> {
//!         match req.messages.last() {
//!             Some(capstore::agent::Message::ToolResult { content, .. }) => Ok(ModelReply::Final(content.to_string())),
//!             _ => Ok(ModelReply::ToolCalls(vec![ModelToolCall {
//!                 id: "c1".into(),
//!                 name: req.tools[0]["function"]["name"].as_str().unwrap_or("").into(),
//!                 arguments: json!({"city": "Oslo"}),
//!             }])),
//!         }
//!     }
//! }
//!
//! let store = Store::new();
//! store.write(|tx| register_tool(tx, Tool::new("get_weather", "Weather for a city"), |args| async move {
//!     Ok(json!(format!("sunny in {}", args["city"].as_str().unwrap_or("?"))))
//! }))?;
//! let agent = Agent::new(store, FirstTool);
//! let mut session = agent.session();
//! let outcome = agent.run_turn(&mut session, "weather in Oslo?").await?;
//! assert_eq!(outcome.answer, "\"sunny in Oslo\"");
//! # Ok(())
//! # }
//! ```

mod approval;
mod chat;
mod model;
mod record;
mod run;
mod suspend;

pub use crate::events::Ticket;
pub use approval::{ApprovalError, ApprovalPolicy, Approvals, Decision};
pub use chat::{Chat, ChatTurn, SentTool};
pub use model::{
    Message, Model, ModelError, ModelErrorKind, ModelReply, ModelRequest, ModelToolCall,
};
pub use record::{RecordingModel, ReplayModel, TapeEntry, request_key};
pub use run::{Agent, AgentError, Session};
pub use suspend::{PendingCall, PendingTurn, TurnOutcome, TurnStatus};
