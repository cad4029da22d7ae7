//! Why a call failed. Every variant names the tool.

use std::fmt;

use crate::hooks::HookEvent;
use crate::store::StoreError;

use super::handler::HandlerError;

/// Why [`Executor::execute`](super::Executor::execute) failed. No failure writes to the store.
///
/// ```
/// use capstore::ExecError;
/// let err = ExecError::UnknownTool { tool: "nope".into() };
/// assert_eq!(err.tool(), "nope");
/// assert_eq!(err.to_string(), "unknown tool `nope`");
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum ExecError {
    /// No tool has this qualified name (in the snapshot the call used).
    UnknownTool {
        /// The name called.
        tool: String,
    },
    /// The tool was not offered this turn and the policy is
    /// [`Deny`](super::UnselectedCallPolicy::Deny).
    NotSelected {
        /// The tool.
        tool: String,
    },
    /// The arguments are not a JSON object, miss a required property, or have a property of
    /// the wrong primitive type (as sent by the model, or as rewritten by a hook).
    InvalidArguments {
        /// The tool.
        tool: String,
        /// What is wrong.
        reason: String,
    },
    /// The tool is registered but has no handler.
    NoHandler {
        /// The tool.
        tool: String,
    },
    /// A pre-tool-use hook denied the call; the handler did not run.
    HookDenied {
        /// The tool.
        tool: String,
        /// The hook's id.
        hook: String,
        /// The hook's reason.
        reason: String,
    },
    /// A hook's handler returned an error or panicked; the call stops there (hooks fail closed).
    HookFailed {
        /// The tool.
        tool: String,
        /// The hook's id.
        hook: String,
        /// The error, or the panic's message.
        message: String,
    },
    /// A hook returned an outcome its event does not allow (see
    /// [`HookOutcome`](super::HookOutcome)).
    InvalidHookOutcome {
        /// The tool.
        tool: String,
        /// The hook's id.
        hook: String,
        /// The event it ran on.
        event: HookEvent,
        /// The outcome's variant name.
        outcome: &'static str,
    },
    /// The handler returned an error.
    Handler {
        /// The tool.
        tool: String,
        /// The handler's error.
        error: HandlerError,
    },
    /// The handler panicked; the panic was caught.
    HandlerPanicked {
        /// The tool.
        tool: String,
        /// The panic's message.
        message: String,
    },
    /// The store could not be read as the executor expects (a store without the built-in
    /// tables).
    Store {
        /// The tool.
        tool: String,
        /// The store's error.
        error: StoreError,
    },
}

impl ExecError {
    /// The qualified name of the tool the failed call was for.
    ///
    /// ```
    /// let err = capstore::ExecError::NoHandler { tool: "fs/read_file".into() };
    /// assert_eq!(err.tool(), "fs/read_file");
    /// ```
    pub fn tool(&self) -> &str {
        match self {
            ExecError::UnknownTool { tool }
            | ExecError::NotSelected { tool }
            | ExecError::InvalidArguments { tool, .. }
            | ExecError::NoHandler { tool }
            | ExecError::HookDenied { tool, .. }
            | ExecError::HookFailed { tool, .. }
            | ExecError::InvalidHookOutcome { tool, .. }
            | ExecError::Handler { tool, .. }
            | ExecError::HandlerPanicked { tool, .. }
            | ExecError::Store { tool, .. } => tool,
        }
    }
}

impl fmt::Display for ExecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExecError::UnknownTool { tool } => write!(f, "unknown tool `{tool}`"),
            ExecError::NotSelected { tool } => {
                write!(f, "tool `{tool}` was not offered this turn")
            }
            ExecError::InvalidArguments { tool, reason } => {
                write!(f, "tool `{tool}`: invalid arguments: {reason}")
            }
            ExecError::NoHandler { tool } => write!(f, "tool `{tool}` has no handler"),
            ExecError::HookDenied { tool, hook, reason } => {
                write!(f, "tool `{tool}`: denied by hook `{hook}`: {reason}")
            }
            ExecError::HookFailed {
                tool,
                hook,
                message,
            } => write!(f, "tool `{tool}`: hook `{hook}` failed: {message}"),
            ExecError::InvalidHookOutcome {
                tool,
                hook,
                event,
                outcome,
            } => write!(
                f,
                "tool `{tool}`: hook `{hook}` returned {outcome}, which {event} hooks may not"
            ),
            ExecError::Handler { tool, error } => write!(f, "tool `{tool}` failed: {error}"),
            ExecError::HandlerPanicked { tool, message } => {
                write!(f, "tool `{tool}` panicked: {message}")
            }
            ExecError::Store { tool, error } => write!(f, "tool `{tool}`: {error}"),
        }
    }
}

impl std::error::Error for ExecError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ExecError::Handler { error, .. } => Some(error),
            ExecError::Store { error, .. } => Some(error),
            _ => None,
        }
    }
}
