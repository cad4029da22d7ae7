//! One error type for the whole crate, so that `?` works across modules in your code.

use std::fmt;

use crate::agent::{AgentError, ApprovalError, ModelError};
use crate::catalog::CatalogError;
use crate::context::{PolicyError, SelectError};
use crate::embed::EmbedError;
use crate::eval::EvalError;
use crate::events::TapeError;
use crate::exec::{ExecError, HandlerError};
use crate::mcp::{ConfigError, McpError};
use crate::skills::SkillError;
use crate::store::{CommitInfo, RecordError, SchemaError, Store, StoreError, WriteTxn};
use crate::usage::UsageFileError;

/// The crate's error enum from one list of its variants: the enum, the module error each holds
/// (`inner`), and a `From` for each, so that a variant is written once. A variant marked
/// `boxed` holds its error in a `Box`: those that hold JSON values or a connection's state,
/// large enough (more so when a crate turns on serde_json's `preserve_order`) to make every
/// `Result` of the crate large.
macro_rules! errors {
    (
        $(#[$meta:meta])*
        pub enum Error {
            $(
                $(#[doc = $doc:literal])+
                $(#[cfg($cfg:meta)])?
                $variant:ident($error:ty) $($boxed:ident)?,
            )*
        }
    ) => {
        $(#[$meta])*
        pub enum Error {
            $(
                $(#[doc = $doc])+
                $(#[cfg($cfg)])?
                $variant(payload!($error $(, $boxed)?)),
            )*
        }

        impl Error {
            /// The module error, as the standard error trait sees it.
            fn inner(&self) -> &(dyn std::error::Error + 'static) {
                match self {
                    $(
                        $(#[cfg($cfg)])?
                        Error::$variant(e) => &**e_ref!(e $(, $boxed)?),
                    )*
                }
            }
        }

        $(
            $(#[cfg($cfg)])?
            impl From<$error> for Error {
                fn from(error: $error) -> Self {
                    Error::$variant(wrap!(error $(, $boxed)?))
                }
            }
        )*
    };
}

/// A variant's payload: the error, or the error boxed.
macro_rules! payload {
    ($error:ty) => { $error };
    ($error:ty, boxed) => { Box<$error> };
}

/// The error a variant holds, as a reference to a box or to itself.
macro_rules! e_ref {
    ($e:ident) => {
        &$e
    };
    ($e:ident, boxed) => {
        $e
    };
}

/// The payload made from the error.
macro_rules! wrap {
    ($e:ident) => {
        $e
    };
    ($e:ident, boxed) => {
        Box::new($e)
    };
}

errors! {
    /// Any of capstore's errors. Each module keeps its own precise error type (a [`StoreError`]
    /// from a write, a [`SkillError`] from registering a skill, ...); every one of them converts
    /// into this one, so that a function of yours returning [`capstore::Result`](Result) can use
    /// `?` on all of them, and [`Store::update`] takes a transaction that mixes them. The message is
    /// the module error's own; [`std::error::Error::source`] gives the module error.
    ///
    /// ```
    /// use capstore::skills::register_skill;
    /// use capstore::{Skill, Store, Tool, TOOLS};
    ///
    /// fn setup(store: &Store) -> capstore::Result<u64> {
    ///     let info = store.update(|tx| {
    ///         register_skill(tx, Skill::new("files", "Work with files"), [Tool::new("read_file", "Read a file")])?;
    ///         tx.insert(&TOOLS, Tool::new("ping", "Ping a host"))?;
    ///         Ok(())
    ///     })?;
    ///     Ok(info.version)
    /// }
    /// assert_eq!(setup(&Store::new())?, 1);
    /// # Ok::<(), capstore::Error>(())
    /// ```
    #[derive(Debug)]
    #[non_exhaustive]
    pub enum Error {
        /// A store read or write ([`StoreError`]).
        Store(StoreError),
        /// A table declaration ([`SchemaError`]).
        Schema(SchemaError),
        /// A record refused by its table's rules ([`RecordError`]).
        Record(RecordError),
        /// Registering or removing a skill ([`SkillError`]).
        Skill(SkillError),
        /// Running a tool ([`ExecError`]).
        Exec(ExecError),
        /// A tool's own handler ([`HandlerError`]).
        Handler(HandlerError),
        /// A selection ([`SelectError`]).
        Select(SelectError),
        /// A selection policy out of range ([`PolicyError`]).
        Policy(PolicyError),
        /// A catalog file ([`CatalogError`]).
        Catalog(CatalogError),
        /// An MCP `tools/list` result ([`McpError`]).
        Mcp(McpError) boxed,
        /// An `mcpServers` configuration ([`ConfigError`]).
        McpConfig(ConfigError),
        /// Embedding ([`EmbedError`]).
        Embed(EmbedError),
        /// The agent loop ([`AgentError`]).
        Agent(AgentError),
        /// An approval ([`ApprovalError`]).
        Approval(ApprovalError),
        /// A model ([`ModelError`]).
        Model(ModelError),
        /// An event tape ([`TapeError`]).
        Tape(TapeError),
        /// An evaluation file or run ([`EvalError`]).
        Eval(EvalError),
        /// A usage file ([`UsageFileError`]).
        Usage(UsageFileError),
        /// A live MCP server (feature `mcp-live`).
        #[cfg(feature = "mcp-live")]
        Live(crate::mcp::live::LiveError) boxed,
        /// A call to a live MCP server's tool (feature `mcp-live`).
        #[cfg(feature = "mcp-live")]
        Call(crate::mcp::live::CallError) boxed,
        /// The quarantine's trust file (feature `mcp-live`).
        #[cfg(feature = "mcp-live")]
        Quarantine(crate::mcp::live::QuarantineError) boxed,
        /// Replication through PostgreSQL (feature `postgres`).
        #[cfg(feature = "postgres")]
        Sync(crate::sync::SyncError) boxed,
        /// The MCP gateway (feature `gateway`).
        #[cfg(feature = "gateway")]
        Gateway(crate::gateway::GatewayError) boxed,
    }
}

/// `Result` with capstore's [`Error`].
///
/// ```
/// fn load() -> capstore::Result<capstore::catalog::Catalog> {
///     Ok(capstore::catalog::Catalog::bundled()?)
/// }
/// assert!(load().is_ok());
/// ```
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self.inner(), f)
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(self.inner())
    }
}

impl Store {
    /// [`write`](Store::write) with capstore's [`Error`]: the closure may use `?` on any of the
    /// crate's errors (a [`StoreError`] from `tx.insert`, a [`SkillError`] from
    /// `register_skill`, ...) without naming a type; on error nothing is committed and the
    /// error is returned. Use `write` when the closure has one error type of its own.
    ///
    /// ```
    /// use capstore::exec::register;
    /// use capstore::skills::register_skill;
    /// use capstore::{Skill, Store, Tool, TOOLS};
    /// let store = Store::new();
    /// store.update(|tx| {
    ///     register(tx, Tool::new("ping", "Ping").with_handler(|v| async move { Ok(v) }))?;
    ///     register_skill(tx, Skill::new("net", "Networking").with_tools(["ping"]), Vec::<Tool>::new())?;
    ///     Ok(())
    /// })?;
    /// assert_eq!(store.snapshot().count(&TOOLS)?, 1);
    /// # Ok::<(), capstore::Error>(())
    /// ```
    pub fn update<T>(&self, f: impl FnOnce(&mut WriteTxn) -> Result<T>) -> Result<CommitInfo> {
        self.write(f)
    }
}
