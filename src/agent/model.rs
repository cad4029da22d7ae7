//! The model side of the agent loop: what a model is sent and what it answers.

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::context::Selection;

/// One message of the conversation as the loop keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
///
/// ```
/// use capstore::agent::ModelReply;
/// let reply = ModelReply::Final("hi".into());
/// assert_eq!(serde_json::to_value(&reply)?, serde_json::json!({"final": "hi"}));
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ModelReply {
    /// A final answer: the turn ends.
    Final(String),
    /// Tool calls to run; their results go back to the model.
    ToolCalls(Vec<ModelToolCall>),
}

/// What kind of failure a [`ModelError`] is, for code that retries or reports.
///
/// ```
/// use capstore::agent::ModelErrorKind;
/// assert_eq!(ModelErrorKind::default(), ModelErrorKind::Other);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ModelErrorKind {
    /// Anything else (a model of your own that failed).
    #[default]
    Other,
    /// The model's server could not be reached, or the connection failed mid-reply.
    Transport,
    /// The server answered with an error status.
    Http {
        /// The HTTP status.
        status: u16,
    },
    /// The server refused for now (HTTP 429, or a provider's overload status): try again later.
    RateLimited {
        /// How long the server asked to wait (`retry-after`), when it said.
        retry_after: Option<Duration>,
    },
    /// The reply was not shaped as the provider documents it.
    Malformed,
    /// The model is not set up: a missing key, a bad base URL.
    Config,
    /// A [`ReplayModel`](super::ReplayModel) was asked something its tape does not hold.
    ReplayDiverged {
        /// The request's number on the tape, from 1.
        request: usize,
        /// The user turn it belongs to (the count of user messages in it).
        turn: usize,
    },
}

/// A model failed to answer: what kind of failure, and a message saying what happened.
///
/// ```
/// use capstore::agent::{ModelError, ModelErrorKind};
/// let err = ModelError::new(ModelErrorKind::Http { status: 500 }, "HTTP 500: upstream failed");
/// assert_eq!(err.to_string(), "model error: HTTP 500: upstream failed");
/// assert_eq!(ModelError::other("offline").kind, ModelErrorKind::Other);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelError {
    /// What kind of failure.
    #[serde(default)]
    pub kind: ModelErrorKind,
    /// What went wrong.
    pub message: String,
}

impl ModelError {
    /// An error of `kind`.
    ///
    /// ```
    /// let err = capstore::agent::ModelError::new(capstore::agent::ModelErrorKind::Malformed, "no choices");
    /// assert_eq!(err.message, "no choices");
    /// ```
    pub fn new(kind: ModelErrorKind, message: impl Into<String>) -> Self {
        ModelError {
            kind,
            message: message.into(),
        }
    }

    /// An error of kind [`Other`](ModelErrorKind::Other).
    ///
    /// ```
    /// assert_eq!(capstore::agent::ModelError::other("down").message, "down");
    /// ```
    pub fn other(message: impl Into<String>) -> Self {
        ModelError::new(ModelErrorKind::Other, message)
    }
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
