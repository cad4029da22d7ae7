//! Tool handlers: the async code behind a tool, stored in the built-in `handlers` table.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde_json::Value;

use crate::store::{BUILTIN_SCHEMA, Table, TableSchema};
use crate::tools::TOOLS;

/// A boxed, `Send` future, as handlers return them.
///
/// ```
/// use capstore::exec::BoxFuture;
/// let future: BoxFuture<u8> = Box::pin(async { 7 });
/// # drop(future);
/// ```
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// A tool handler's function: arguments in, a future of the output or an error out.
pub(crate) type HandlerFn =
    Arc<dyn Fn(Value) -> BoxFuture<Result<Value, HandlerError>> + Send + Sync>;

/// What a tool or hook handler returns when it fails: a message, and optionally the typed
/// error behind it ([`with_cause`](Self::with_cause)), which callers get back with
/// [`downcast_ref`](Self::downcast_ref).
///
/// Two `HandlerError`s are equal when their messages are.
///
/// ```
/// use capstore::HandlerError;
/// let err: HandlerError = "file not found".into();
/// assert_eq!(err.to_string(), "file not found");
/// assert_eq!(HandlerError::new(format!("code {}", 2)).message, "code 2");
/// ```
#[derive(Debug, Clone)]
pub struct HandlerError {
    /// What went wrong, for the model and for logs.
    pub message: String,
    /// The typed error behind the message, if the handler gave one.
    cause: Option<Arc<dyn std::error::Error + Send + Sync>>,
}

impl PartialEq for HandlerError {
    fn eq(&self, other: &Self) -> bool {
        self.message == other.message
    }
}

impl Eq for HandlerError {}

impl HandlerError {
    /// An error with a message.
    ///
    /// ```
    /// assert_eq!(capstore::HandlerError::new("boom").message, "boom");
    /// ```
    pub fn new(message: impl Into<String>) -> Self {
        HandlerError {
            message: message.into(),
            cause: None,
        }
    }

    /// An error that keeps `cause`, typed: its message is the cause's (see
    /// [`from_error`](Self::from_error)), and [`downcast_ref`](Self::downcast_ref) returns it.
    ///
    /// ```
    /// use capstore::HandlerError;
    /// let io = std::io::Error::new(std::io::ErrorKind::TimedOut, "too slow");
    /// let err = HandlerError::with_cause(io);
    /// assert_eq!(err.message, "too slow");
    /// assert_eq!(err.downcast_ref::<std::io::Error>().map(|e| e.kind()), Some(std::io::ErrorKind::TimedOut));
    /// ```
    pub fn with_cause<E: std::error::Error + Send + Sync + 'static>(cause: E) -> Self {
        let mut error = HandlerError::from_error(&cause);
        error.cause = Some(Arc::new(cause));
        error
    }

    /// The typed error behind the message, if it is an `E`.
    ///
    /// ```
    /// use capstore::HandlerError;
    /// assert!(HandlerError::new("plain").downcast_ref::<std::io::Error>().is_none());
    /// ```
    pub fn downcast_ref<E: std::error::Error + 'static>(&self) -> Option<&E> {
        self.cause.as_deref()?.downcast_ref::<E>()
    }

    /// An error carrying another error's message (and those of its sources, joined by `: `).
    ///
    /// ```
    /// use capstore::HandlerError;
    /// let io = std::io::Error::new(std::io::ErrorKind::NotFound, "no such file");
    /// assert_eq!(HandlerError::from_error(&io).message, "no such file");
    /// ```
    pub fn from_error(error: &(dyn std::error::Error + 'static)) -> Self {
        let mut message = error.to_string();
        let mut source = error.source();
        while let Some(inner) = source {
            message.push_str(": ");
            message.push_str(&inner.to_string());
            source = inner.source();
        }
        HandlerError::new(message)
    }
}

impl fmt::Display for HandlerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// No `source()`: the message already is the cause's, so a chain printed from `source()` would
/// say it twice. The typed cause is [`HandlerError::downcast_ref`]'s.
impl std::error::Error for HandlerError {}

impl From<String> for HandlerError {
    fn from(message: String) -> Self {
        HandlerError::new(message)
    }
}

impl From<&str> for HandlerError {
    fn from(message: &str) -> Self {
        HandlerError::new(message)
    }
}

impl From<serde_json::Error> for HandlerError {
    fn from(error: serde_json::Error) -> Self {
        HandlerError::from_error(&error)
    }
}

/// The code that runs a tool: a record of the built-in [`HANDLERS`](crate::HANDLERS) table,
/// keyed by the tool's qualified name.
///
/// Register it with its tool in one transaction ([`register_tool`](super::register_tool)), or
/// attach it to a tool registered otherwise with `tx.upsert(&HANDLERS, handler)`.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), capstore::HandlerError> {
/// use capstore::ToolHandler;
/// use serde_json::json;
///
/// let handler = ToolHandler::new("fs/read_file", |args| async move {
///     Ok(json!({ "path": args["path"], "text": "hello" }))
/// });
/// let out = handler.call(json!({ "path": "a.txt" })).await?;
/// assert_eq!(out["text"], "hello");
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct ToolHandler {
    /// The qualified name of the tool it runs (the record's key).
    pub tool: String,
    f: HandlerFn,
}

impl ToolHandler {
    /// A handler from an async closure (or any function returning a `Send` future).
    ///
    /// ```
    /// use capstore::ToolHandler;
    /// let handler = ToolHandler::new("echo", |args| async move { Ok(args) });
    /// assert_eq!(handler.tool, "echo");
    /// ```
    pub fn new<F, Fut>(tool: impl Into<String>, f: F) -> Self
    where
        F: Fn(Value) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Value, HandlerError>> + Send + 'static,
    {
        ToolHandler {
            tool: tool.into(),
            f: Arc::new(move |args| Box::pin(f(args))),
        }
    }

    /// A handler from a plain, non-async function (it runs inside the executor's task, so keep
    /// it quick).
    ///
    /// ```
    /// use capstore::ToolHandler;
    /// use serde_json::json;
    /// let handler = ToolHandler::sync("add", |args| {
    ///     Ok(json!(args["a"].as_i64().unwrap_or(0) + args["b"].as_i64().unwrap_or(0)))
    /// });
    /// assert_eq!(handler.tool, "add");
    /// ```
    pub fn sync<F>(tool: impl Into<String>, f: F) -> Self
    where
        F: Fn(Value) -> Result<Value, HandlerError> + Send + Sync + 'static,
    {
        ToolHandler {
            tool: tool.into(),
            f: Arc::new(move |args| Box::pin(std::future::ready(f(args)))),
        }
    }

    /// Starts the handler on `args`. Panics in the handler are not caught here; the
    /// [`Executor`](super::Executor) catches them.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), capstore::HandlerError> {
    /// let handler = capstore::ToolHandler::new("echo", |args| async move { Ok(args) });
    /// assert_eq!(handler.call(serde_json::json!(1)).await?, 1);
    /// # Ok(())
    /// # }
    /// ```
    pub fn call(&self, args: Value) -> BoxFuture<Result<Value, HandlerError>> {
        (self.f)(args)
    }
}

impl fmt::Debug for ToolHandler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolHandler")
            .field("tool", &self.tool)
            .finish_non_exhaustive()
    }
}

/// The declaration of the built-in `handlers` table. Primary key: the tool's qualified name;
/// each handler belongs to its tool: written only while the tool is there, removed with it.
pub(crate) fn schema() -> TableSchema<ToolHandler> {
    TableSchema::new("handlers", |h: &ToolHandler| h.tool.clone()).belongs_to(&TOOLS)
}

// Position 3 of the built-in tables, in the order `crate::tables` declares them.
/// The built-in `handlers` table (see [`ToolHandler`]): key = the tool's qualified name; no
/// indexes. Fill it with [`register_tool`](crate::exec::register_tool).
///
/// ```
/// use capstore::{Store, Tool, HANDLERS};
/// let store = Store::new();
/// store.write(|tx| capstore::exec::register_tool(tx, Tool::new("a", "b"), |v| async move { Ok(v) }))?;
/// assert!(store.snapshot().contains(&HANDLERS, "a")?);
/// # Ok::<(), capstore::StoreError>(())
/// ```
pub const HANDLERS: Table<ToolHandler> = Table::new(3, BUILTIN_SCHEMA);
