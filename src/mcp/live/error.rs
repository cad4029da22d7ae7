//! What can go wrong with a live server: reaching it and listing its tools ([`LiveError`]), and
//! calling one of them ([`CallError`]).

use std::fmt;
use std::time::Duration;

use serde_json::Value;

use crate::mcp::McpError;

/// Why a server could not be connected to, or its tools not listed or imported. The store is
/// left exactly as it was by the attempt that failed; the other servers are not affected.
///
/// `stderr` fields hold the last lines the server wrote to its stderr (stdio servers), which
/// usually say why it stopped.
///
/// ```
/// use capstore::mcp::live::LiveError;
/// let err = LiveError::Spawn { server: "time".into(), command: "uvx".into(), reason: "not found".into() };
/// assert_eq!(err.server(), "time");
/// assert_eq!(err.to_string(), "MCP server `time`: cannot start `uvx`: not found");
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum LiveError {
    /// The stdio server's command could not be started (not found, not executable, bad `cwd`),
    /// or the HTTP server's configuration cannot be used (a header that is not valid HTTP).
    Spawn {
        /// The server.
        server: String,
        /// The command (or URL).
        command: String,
        /// The system's reason.
        reason: String,
    },
    /// The server did not finish the `initialize` handshake: it exited, closed the connection,
    /// answered something that is not MCP, or refused.
    Handshake {
        /// The server.
        server: String,
        /// What went wrong.
        reason: String,
        /// The tail of its stderr, if it wrote any.
        stderr: Option<String>,
    },
    /// The server did not answer in time.
    Timeout {
        /// The server.
        server: String,
        /// What it was asked: `initialize` or `tools/list`.
        phase: &'static str,
        /// How long capstore waited.
        after: Duration,
        /// The tail of its stderr, if it wrote any.
        stderr: Option<String>,
    },
    /// `tools/list` failed: an error answer, a reply that is not a tool list, or the connection
    /// lost on the way.
    List {
        /// The server.
        server: String,
        /// What went wrong.
        reason: String,
    },
    /// The server sent more than a limit of [`LiveOptions`](super::LiveOptions) allows (pages
    /// of one `tools/list`, tools): nothing of that listing was imported.
    Limit {
        /// The server.
        server: String,
        /// Which limit, in words: `pages per tools/list`, `tools per server`.
        limit: &'static str,
        /// Its value.
        max: usize,
        /// The command-line flag that raises it.
        flag: &'static str,
    },
    /// The server requires OAuth sign-in and has no usable token: never signed in, its refresh
    /// token was refused, or it answered 401 although its entry has no `"oauth"`. The message
    /// says what to do.
    ///
    /// ```
    /// use capstore::mcp::live::LiveError;
    /// let err = LiveError::SignInRequired { server: "docs".into(), reason: "no token is stored".into(),
    ///     command: "capstore auth docs --mcp-config mcp.json".into() };
    /// assert!(err.to_string().ends_with("run `capstore auth docs --mcp-config mcp.json`"));
    /// ```
    SignInRequired {
        /// The server.
        server: String,
        /// Why, in words (never a token).
        reason: String,
        /// The command that signs in (`capstore auth NAME --mcp-config FILE`).
        command: String,
    },
    /// The server's OAuth token needed a refresh that failed for a passing reason (the
    /// authorization server answered 5xx, or could not be reached). The stored token is kept:
    /// the server stays signed in and the next attempt refreshes again.
    TokenRefresh {
        /// The server.
        server: String,
        /// Why (never a token).
        reason: String,
    },
    /// The list arrived but cannot be imported (an invalid tool, duplicate names, a tool still
    /// listed by a skill): nothing of it was imported.
    Import {
        /// The server.
        server: String,
        /// The import's error, naming the tool.
        error: McpError,
    },
}

impl LiveError {
    /// The server the error is about.
    ///
    /// ```
    /// use capstore::mcp::live::LiveError;
    /// assert_eq!(LiveError::List { server: "fs".into(), reason: "closed".into() }.server(), "fs");
    /// ```
    pub fn server(&self) -> &str {
        match self {
            LiveError::Spawn { server, .. }
            | LiveError::Handshake { server, .. }
            | LiveError::Timeout { server, .. }
            | LiveError::List { server, .. }
            | LiveError::Limit { server, .. }
            | LiveError::SignInRequired { server, .. }
            | LiveError::TokenRefresh { server, .. }
            | LiveError::Import { server, .. } => server,
        }
    }
}

impl fmt::Display for LiveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LiveError::Spawn {
                server,
                command,
                reason,
            } => write!(
                f,
                "MCP server `{server}`: cannot start `{command}`: {reason}"
            ),
            LiveError::Handshake {
                server,
                reason,
                stderr,
            } => {
                write!(f, "MCP server `{server}`: initialize failed: {reason}")?;
                write_stderr(f, stderr)
            }
            LiveError::Timeout {
                server,
                phase,
                after,
                stderr,
            } => {
                write!(
                    f,
                    "MCP server `{server}`: no answer to {phase} within {:.1} s",
                    after.as_secs_f64()
                )?;
                write_stderr(f, stderr)
            }
            LiveError::List { server, reason } => {
                write!(f, "MCP server `{server}`: tools/list failed: {reason}")
            }
            LiveError::Limit {
                server,
                limit,
                max,
                flag,
            } => write!(
                f,
                "MCP server `{server}`: sent more than the limit of {max} {limit} \
                 (raise it with {flag} if the server is trusted); this listing was not imported"
            ),
            LiveError::Import { server, error } => {
                write!(
                    f,
                    "MCP server `{server}`: its tools cannot be imported: {error}"
                )
            }
            LiveError::SignInRequired {
                server,
                reason,
                command,
            } => write!(
                f,
                "MCP server `{server}` needs sign-in ({reason}): run `{command}`"
            ),
            LiveError::TokenRefresh { server, reason } => write!(
                f,
                "MCP server `{server}`: its OAuth token could not be refreshed ({reason}); \
                 the token is kept and the refresh is tried again"
            ),
        }
    }
}

fn write_stderr(f: &mut fmt::Formatter<'_>, stderr: &Option<String>) -> fmt::Result {
    match stderr {
        Some(tail) => write!(f, "; its stderr ends with: {tail}"),
        None => Ok(()),
    }
}

impl std::error::Error for LiveError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            LiveError::Import { error, .. } => Some(error),
            _ => None,
        }
    }
}

/// Why a call to a live server's tool failed. It reaches the caller of
/// [`Executor::execute`](crate::Executor::execute) as
/// [`ExecError::Handler`](crate::ExecError::Handler), whose [`HandlerError`](crate::HandlerError)
/// carries this value: get it back with
/// [`HandlerError::downcast_ref`](crate::HandlerError::downcast_ref).
///
/// ```
/// use capstore::mcp::live::CallError;
/// let err = CallError::Unavailable { server: "fs".into(), reason: "it exited".into() };
/// assert_eq!(err.to_string(), "MCP server `fs` is unavailable: it exited");
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum CallError {
    /// The server is not connected (it exited or crashed and is being reconnected, it never
    /// started, or the hub was shut down). Fails at once, without waiting.
    Unavailable {
        /// The server.
        server: String,
        /// Why, as last seen.
        reason: String,
    },
    /// No answer within the call timeout. The request was cancelled on the server
    /// (`notifications/cancelled`).
    Timeout {
        /// The server.
        server: String,
        /// The tool's MCP name.
        tool: String,
        /// How long capstore waited.
        after: Duration,
    },
    /// The connection was lost while the call was in flight.
    Disconnected {
        /// The server.
        server: String,
        /// The tool's MCP name.
        tool: String,
        /// What the transport said.
        reason: String,
    },
    /// The server answered with a JSON-RPC error (unknown tool, invalid params, internal
    /// error, ...).
    Protocol {
        /// The server.
        server: String,
        /// The tool's MCP name.
        tool: String,
        /// The JSON-RPC error code.
        code: i32,
        /// The server's message.
        message: String,
        /// The server's `data`, if any.
        data: Option<Value>,
    },
    /// The tool ran and reported a failure (`isError: true`).
    Tool {
        /// The server.
        server: String,
        /// The tool's MCP name.
        tool: String,
        /// The text of its content blocks, joined by new lines.
        text: String,
        /// The whole result (`content`, `structuredContent`, `isError`).
        result: Value,
    },
    /// The server requires OAuth sign-in and has no usable token (never signed in, or its
    /// refresh token was refused). Fails at once; the message names the command to run.
    ///
    /// ```
    /// use capstore::mcp::live::CallError;
    /// let err = CallError::SignInRequired { server: "docs".into(), reason: "the refresh token was refused".into(),
    ///     command: "capstore auth docs --mcp-config mcp.json".into() };
    /// assert!(err.to_string().contains("needs sign-in"));
    /// ```
    SignInRequired {
        /// The server.
        server: String,
        /// Why, in words (never a token).
        reason: String,
        /// The command that signs in (`capstore auth NAME --mcp-config FILE`).
        command: String,
    },
    /// The call needed a token refresh that failed for a passing reason (the authorization
    /// server answered 5xx, or could not be reached), after a few quick retries. The stored
    /// token is kept; the server stays signed in and the next call refreshes again.
    TokenRefresh {
        /// The server.
        server: String,
        /// The tool's MCP name.
        tool: String,
        /// Why (never a token).
        reason: String,
    },
    /// The arguments are not a JSON object (MCP's `arguments` must be one).
    InvalidArguments {
        /// The server.
        server: String,
        /// The tool's MCP name.
        tool: String,
    },
}

impl CallError {
    /// The error's kind in snake case (`unavailable`, `timeout`, `disconnected`, `protocol`,
    /// `tool`, `invalid_arguments`, `sign_in_required`, `token_refresh`): a trace's
    /// `error.type`, a label.
    ///
    /// ```
    /// use capstore::mcp::live::CallError;
    /// let err = CallError::Unavailable { server: "fs".into(), reason: "it exited".into() };
    /// assert_eq!(err.kind(), "unavailable");
    /// ```
    pub fn kind(&self) -> &'static str {
        match self {
            CallError::Unavailable { .. } => "unavailable",
            CallError::Timeout { .. } => "timeout",
            CallError::Disconnected { .. } => "disconnected",
            CallError::Protocol { .. } => "protocol",
            CallError::Tool { .. } => "tool",
            CallError::InvalidArguments { .. } => "invalid_arguments",
            CallError::SignInRequired { .. } => "sign_in_required",
            CallError::TokenRefresh { .. } => "token_refresh",
        }
    }
}

impl fmt::Display for CallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CallError::Unavailable { server, reason } => {
                write!(f, "MCP server `{server}` is unavailable: {reason}")
            }
            CallError::Timeout {
                server,
                tool,
                after,
            } => write!(
                f,
                "MCP server `{server}`: `{tool}` did not answer within {:.1} s (cancelled)",
                after.as_secs_f64()
            ),
            CallError::Disconnected {
                server,
                tool,
                reason,
            } => write!(
                f,
                "MCP server `{server}`: connection lost during `{tool}`: {reason}"
            ),
            CallError::Protocol {
                server,
                tool,
                code,
                message,
                ..
            } => write!(
                f,
                "MCP server `{server}` answered `{tool}` with error {code}: {message}"
            ),
            CallError::Tool {
                server, tool, text, ..
            } => write!(f, "MCP server `{server}`: `{tool}` failed: {text}"),
            CallError::SignInRequired {
                server,
                reason,
                command,
            } => write!(
                f,
                "MCP server `{server}` needs sign-in ({reason}): run `{command}`"
            ),
            CallError::TokenRefresh {
                server,
                tool,
                reason,
            } => write!(
                f,
                "MCP server `{server}`: `{tool}` was not sent: its OAuth token could not be \
                 refreshed ({reason}); the token is kept, try again"
            ),
            CallError::InvalidArguments { server, tool } => write!(
                f,
                "MCP server `{server}`: arguments for `{tool}` must be a JSON object"
            ),
        }
    }
}

impl std::error::Error for CallError {}
