//! A call as the model makes it, its result, and what to do with calls to tools the model was
//! not offered.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One tool call from the model.
///
/// ```
/// use capstore::ToolCall;
/// use serde_json::json;
/// let call = ToolCall::new("call_1", "fs/read_file", json!({ "path": "a.txt" }));
/// assert_eq!(call.name, "fs/read_file");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The call's id, as the model gave it; it names the call in events and hook contexts.
    pub id: String,
    /// The tool's qualified name (map provider-safe export names back before executing).
    pub name: String,
    /// The arguments; must be a JSON object.
    pub arguments: Value,
}

impl ToolCall {
    /// A call.
    ///
    /// ```
    /// let call = capstore::ToolCall::new("1", "echo", serde_json::json!({}));
    /// assert_eq!(call.id, "1");
    /// ```
    pub fn new(id: impl Into<String>, name: impl Into<String>, arguments: Value) -> Self {
        ToolCall {
            id: id.into(),
            name: name.into(),
            arguments,
        }
    }
}

/// The result of a successful call.
///
/// ```
/// use std::time::Duration;
/// use capstore::ToolOutput;
/// let out = ToolOutput {
///     call_id: "1".into(), tool: "echo".into(), output: serde_json::json!("hi"),
///     version: 3, elapsed: Duration::from_millis(2),
/// };
/// assert_eq!(out.output, "hi");
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    /// The call's id.
    pub call_id: String,
    /// The tool's qualified name.
    pub tool: String,
    /// The handler's output, as rewritten by post-tool-use hooks.
    pub output: Value,
    /// The store version the whole call ran against (tool, handler and hooks).
    pub version: u64,
    /// Time from the start of the call to the end of the last post-tool-use hook.
    pub elapsed: Duration,
}

/// What to do when the model calls a registered tool it was not offered this turn (models do:
/// from earlier turns, or by guessing).
///
/// ```
/// use capstore::UnselectedCallPolicy;
/// assert_eq!(UnselectedCallPolicy::default(), UnselectedCallPolicy::Allow);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum UnselectedCallPolicy {
    /// Run it.
    #[default]
    Allow,
    /// Refuse it with [`ExecError::NotSelected`](super::ExecError::NotSelected).
    Deny,
    /// Run it, and remember it in [`Executor::kept_tools`](super::Executor::kept_tools) so that
    /// tool selection can keep offering it from then on.
    AllowAndKeep,
}
