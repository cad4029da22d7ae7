//! The `hooks` table: code that runs around tool execution and session events.
//!
//! This module holds the record, its events and its table declaration; running hooks builds on
//! it.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::store::{BUILTIN_SCHEMA, Index, IndexSchema, RecordError, Table, TableSchema};
use crate::tools::{check_name, refuse};

/// When a hook runs.
///
/// ```
/// use capstore::HookEvent;
/// assert_eq!(HookEvent::PreToolUse.as_str(), "pre-tool-use");
/// assert_eq!(serde_json::to_string(&HookEvent::SessionStart).unwrap(), "\"session-start\"");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum HookEvent {
    /// Before a tool runs; may allow, deny or rewrite the input.
    PreToolUse,
    /// After a tool ran; may observe or rewrite the output.
    PostToolUse,
    /// When a session starts.
    SessionStart,
    /// When a session ends.
    SessionEnd,
    /// When a user turn starts.
    TurnStart,
    /// When a turn ends.
    TurnEnd,
}

impl HookEvent {
    /// Every event, in declaration order.
    pub const ALL: [HookEvent; 6] = [
        HookEvent::PreToolUse,
        HookEvent::PostToolUse,
        HookEvent::SessionStart,
        HookEvent::SessionEnd,
        HookEvent::TurnStart,
        HookEvent::TurnEnd,
    ];

    /// The event's name as indexed and serialized (kebab-case).
    ///
    /// ```
    /// assert_eq!(capstore::HookEvent::PostToolUse.as_str(), "post-tool-use");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            HookEvent::PreToolUse => "pre-tool-use",
            HookEvent::PostToolUse => "post-tool-use",
            HookEvent::SessionStart => "session-start",
            HookEvent::SessionEnd => "session-end",
            HookEvent::TurnStart => "turn-start",
            HookEvent::TurnEnd => "turn-end",
        }
    }
}

impl fmt::Display for HookEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A hook: an id, the event it runs on, a matcher (a tool name, a qualified name, or a glob
/// pattern with `*` and `?`) and a priority (lower runs first).
///
/// ```
/// use capstore::{Hook, HookEvent};
/// let hook = Hook::new("deny-rm", HookEvent::PreToolUse, "shell/*").with_priority(-10);
/// assert_eq!(hook.matcher, "shell/*");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Hook {
    /// Unique id.
    pub id: String,
    /// When it runs.
    pub event: HookEvent,
    /// Which tools it applies to: an exact name or a glob pattern (`*` for all).
    pub matcher: String,
    /// Lower runs first; ties run in id order.
    #[serde(default)]
    pub priority: i32,
    /// What the hook is for.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
}

impl Hook {
    /// A hook with priority 0 and no description.
    ///
    /// ```
    /// use capstore::{Hook, HookEvent};
    /// assert_eq!(Hook::new("audit", HookEvent::PostToolUse, "*").priority, 0);
    /// ```
    pub fn new(id: impl Into<String>, event: HookEvent, matcher: impl Into<String>) -> Self {
        Hook {
            id: id.into(),
            event,
            matcher: matcher.into(),
            priority: 0,
            description: String::new(),
        }
    }

    /// Sets the priority.
    ///
    /// ```
    /// use capstore::{Hook, HookEvent};
    /// assert_eq!(Hook::new("a", HookEvent::PreToolUse, "*").with_priority(5).priority, 5);
    /// ```
    pub fn with_priority(mut self, priority: i32) -> Self {
        self.priority = priority;
        self
    }

    /// Sets the description.
    ///
    /// ```
    /// use capstore::{Hook, HookEvent};
    /// assert_eq!(Hook::new("a", HookEvent::PreToolUse, "*").with_description("x").description, "x");
    /// ```
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = description.into();
        self
    }

    /// Checks the id (same rules as tool names) and that the matcher is not empty and has no
    /// control characters.
    ///
    /// ```
    /// use capstore::{Hook, HookEvent};
    /// assert!(Hook::new("a", HookEvent::PreToolUse, "").validate().is_err());
    /// ```
    pub fn validate(&self) -> Result<(), RecordError> {
        check_name("id", &self.id)?;
        let bad = self.matcher.is_empty() || self.matcher.chars().any(char::is_control);
        refuse(
            "matcher",
            &self.matcher,
            bad.then_some("must be a non-empty name or pattern without control characters"),
        )
    }
}

/// The declaration of the built-in `hooks` table.
///
/// Primary key: the id. Indexes: `event`, `matcher`.
pub(crate) fn schema() -> TableSchema<Hook> {
    TableSchema::new("hooks", |h: &Hook| h.id.clone())
        .index(IndexSchema::single("event", |h: &Hook| {
            Some(h.event.as_str().to_string())
        }))
        .index(IndexSchema::single("matcher", |h: &Hook| {
            Some(h.matcher.clone())
        }))
        .validator(Hook::validate)
}

// Position 2 of the built-in tables, in the order `crate::tables` declares them.
/// The built-in `hooks` table (see [`Hook`]): key = id; indexes `event`, `matcher`.
///
/// ```
/// use capstore::{Hook, HookEvent, Store, HOOKS};
/// let store = Store::new();
/// store.write(|tx| tx.insert(&HOOKS, Hook::new("audit", HookEvent::PostToolUse, "*")))?;
/// assert_eq!(store.snapshot().count_by_index(&HOOKS, "event", "post-tool-use")?, 1);
/// # Ok::<(), capstore::StoreError>(())
/// ```
pub const HOOKS: Table<Hook> = Table::new(2, BUILTIN_SCHEMA);

/// The `hooks` table's index of events (`pre-tool-use`, `post-tool-use`).
///
/// ```
/// # use capstore::{Hook, HookEvent, Store, HOOKS, HOOKS_BY_EVENT};
/// # let store = Store::new();
/// # store.write(|tx| tx.insert(&HOOKS, Hook::new("audit", HookEvent::PreToolUse, "*")))?;
/// assert_eq!(store.snapshot().count_by(&HOOKS_BY_EVENT, "pre-tool-use")?, 1);
/// # Ok::<(), capstore::StoreError>(())
/// ```
pub const HOOKS_BY_EVENT: Index<Hook> = Index::new(HOOKS, "event");

/// The `hooks` table's index of matcher patterns.
///
/// ```
/// # use capstore::{Hook, HookEvent, Store, HOOKS, HOOKS_BY_MATCHER};
/// # let store = Store::new();
/// # store.write(|tx| tx.insert(&HOOKS, Hook::new("audit", HookEvent::PreToolUse, "fs/*")))?;
/// assert_eq!(store.snapshot().count_by(&HOOKS_BY_MATCHER, "fs/*")?, 1);
/// # Ok::<(), capstore::StoreError>(())
/// ```
pub const HOOKS_BY_MATCHER: Index<Hook> = Index::new(HOOKS, "matcher");
