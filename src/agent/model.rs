//! The model side of the agent loop: what a model is sent and what it answers.

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;

use crate::context::Selection;

/// One message of the conversation as the loop keeps it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    /// The user's words.
    User {
        /// The text.
        text: String,
    },
    /// The model's answer or tool calls.
    Assistant {
        /// Text, possibly empty when the model only calls tools.
        text: String,
        /// The calls it made, by exported name.
        tool_calls: Vec<ModelToolCall>,
    },
    /// A tool's result, fed back to the model.
    ToolResult {
        /// The call it answers.
        call_id: String,
        /// The output, or the error message.
        content: Value,
        /// Whether the call failed.
        is_error: bool,
    },
}

/// A tool call as a model makes it: the exported (provider-safe) name.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelToolCall {
    /// The call's id.
    pub id: String,
    /// The exported name the model saw.
    pub name: String,
    /// The arguments.
    pub arguments: Value,
}

/// What the loop sends to the model each step.
#[derive(Debug, Clone)]
pub struct ModelRequest {
    /// The conversation so far, oldest first.
    pub messages: Vec<Message>,
    /// The tool definitions, in the provider's shape and in send order.
    pub tools: Vec<Value>,
    /// The selection those tools came from (reasons, version).
    pub selection: Arc<Selection>,
}

/// What a model answers.
#[derive(Debug, Clone, PartialEq)]
pub enum ModelReply {
    /// A final answer: the turn ends.
    Final(String),
    /// Tool calls to run; their results go back to the model.
    ToolCalls(Vec<ModelToolCall>),
}

/// A model failed to answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelError {
    /// What went wrong.
    pub message: String,
}

impl fmt::Display for ModelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "model error: {}", self.message)
    }
}

impl std::error::Error for ModelError {}

/// A language model, from any provider: given the conversation and the tools, answer or call
/// tools. Implement it over your HTTP client; the loop does the rest.
///
/// ```
/// use capstore::agent::{Model, ModelError, ModelReply, ModelRequest};
///
/// struct Echo;
/// impl Model for Echo {
///     async fn complete(&self, request: &ModelRequest) -> Result<ModelReply, ModelError> {
///         Ok(ModelReply::Final(format!("{} tools offered", request.tools.len())))
///     }
/// }
/// ```
pub trait Model: Send + Sync {
    /// One step: the model's reply to `request`.
    fn complete(
        &self,
        request: &ModelRequest,
    ) -> impl Future<Output = Result<ModelReply, ModelError>> + Send;
}
