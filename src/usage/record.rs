//! The usage record: one tool's learned counts and its strongest companions.

use serde::{Deserialize, Serialize};

use crate::store::{BUILTIN_SCHEMA, Snapshot, StoreError, Table, TableSchema};
use crate::tools::TOOLS;

/// How many companions a [`Usage`] row keeps: the strongest, by turns called together (then
/// turns called in the next turn). A new companion takes the place of the weakest when the row
/// is full. Bounds a row to about a kilobyte whatever the catalog's size.
///
/// ```
/// assert_eq!(capstore::usage::MAX_COMPANIONS, 16);
/// ```
pub const MAX_COMPANIONS: usize = 16;

/// What the agent's own calls taught about one tool: counts, never arguments. The built-in
/// [`USAGE`](crate::USAGE) table keeps one per tool that was sent or called, keyed by the
/// tool's key; [`learn`](super::learn) writes it, from a [`TurnUse`](super::TurnUse).
///
/// A *turn* is one user message and everything the model did for it. `turns` counts the turns
/// that called the tool, so `companions[i].together / turns` is how often the companion was
/// called when this tool was ("`pressBrakePedal`: with `startEngine` in 23 of its 25 turns").
///
/// ```
/// use capstore::usage::{Companion, Usage};
/// let u = Usage { tool: "car/startEngine".into(), turns: 25, calls: 27, sent: 30, sent_and_called: 24,
///     companions: vec![Companion { tool: "car/pressBrakePedal".into(), together: 23, before: 23, next_turn: 0 }] };
/// assert_eq!(u.companion("car/pressBrakePedal").map(|c| c.together), Some(23));
/// assert_eq!(u.call_rate_when_sent(), Some(0.8));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Usage {
    /// The tool's key (`source/name`).
    pub tool: String,
    /// Turns in which it was called at least once.
    pub turns: u32,
    /// Calls in all.
    pub calls: u64,
    /// Turns in which it was sent to the model (when the turn's selection was recorded).
    pub sent: u32,
    /// Of those, the turns in which it was called.
    pub sent_and_called: u32,
    /// The tools called in the same turns as this one (or in the turn right after), strongest
    /// first; at most [`MAX_COMPANIONS`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub companions: Vec<Companion>,
}

/// A tool called beside another: in the same turn, or in the turn after.
///
/// ```
/// let c = capstore::usage::Companion { tool: "fs/cd".into(), together: 9, before: 9, next_turn: 1 };
/// assert_eq!(c.strength(), (9, 1));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Companion {
    /// The companion's key.
    pub tool: String,
    /// Turns in which both were called.
    pub together: u32,
    /// Of those, the turns in which the companion was called first (its first call came
    /// before the row's tool's first call): a prerequisite, such as `cd` before `mv`.
    pub before: u32,
    /// Turns in which the companion was called right after a turn that called the row's tool
    /// (in the same conversation): what the next message tends to need.
    pub next_turn: u32,
}

impl Companion {
    /// A companion first seen now, with no counts yet.
    pub(crate) fn new(tool: &str) -> Self {
        Companion {
            tool: tool.to_string(),
            together: 0,
            before: 0,
            next_turn: 0,
        }
    }

    /// The order in which a row keeps its companions, strongest first: turns together, then
    /// turns in the next turn (ties by key, so equal evidence keeps one order).
    ///
    /// ```
    /// let c = capstore::usage::Companion { tool: "a".into(), together: 2, before: 0, next_turn: 5 };
    /// assert_eq!(c.strength(), (2, 5));
    /// ```
    pub fn strength(&self) -> (u32, u32) {
        (self.together, self.next_turn)
    }
}

impl Usage {
    /// A row for `tool` with nothing counted yet.
    ///
    /// ```
    /// let u = capstore::usage::Usage::new("fs/cd");
    /// assert_eq!((u.turns, u.calls, u.companions.len()), (0, 0, 0));
    /// ```
    pub fn new(tool: impl Into<String>) -> Self {
        Usage {
            tool: tool.into(),
            turns: 0,
            calls: 0,
            sent: 0,
            sent_and_called: 0,
            companions: Vec::new(),
        }
    }

    /// The companion `tool`, if the row keeps it.
    ///
    /// ```
    /// assert!(capstore::usage::Usage::new("a").companion("b").is_none());
    /// ```
    pub fn companion(&self, tool: &str) -> Option<&Companion> {
        self.companions.iter().find(|c| c.tool == tool)
    }

    /// The share of the turns it was sent in that called it; `None` if it was never sent (as
    /// far as recorded selections tell).
    ///
    /// ```
    /// let mut u = capstore::usage::Usage::new("a");
    /// assert_eq!(u.call_rate_when_sent(), None);
    /// u.sent = 4;
    /// u.sent_and_called = 1;
    /// assert_eq!(u.call_rate_when_sent(), Some(0.25));
    /// ```
    pub fn call_rate_when_sent(&self) -> Option<f32> {
        (self.sent > 0).then(|| self.sent_and_called as f32 / self.sent as f32)
    }

    /// Whether the agent ever called it (a row is also kept for a tool that was only sent).
    ///
    /// ```
    /// let mut u = capstore::usage::Usage::new("a");
    /// u.sent = 2;
    /// assert!(!u.was_called());
    /// ```
    pub fn was_called(&self) -> bool {
        self.turns > 0
    }

    /// The companion `tool`'s entry, made (in the place of the weakest, if the row is full)
    /// when it is new.
    pub(crate) fn companion_mut(&mut self, tool: &str) -> Option<&mut Companion> {
        let at = match self.companions.iter().position(|c| c.tool == tool) {
            Some(at) => at,
            None if self.companions.len() < MAX_COMPANIONS => {
                self.companions.push(Companion::new(tool));
                self.companions.len() - 1
            }
            None => {
                // The weakest goes: the least evidence, and of equals the last in order.
                let weakest = self
                    .companions
                    .iter()
                    .enumerate()
                    .min_by(|(i, a), (j, b)| a.strength().cmp(&b.strength()).then(j.cmp(i)))
                    .map(|(i, _)| i)?;
                let slot = self.companions.get_mut(weakest)?;
                *slot = Companion::new(tool);
                weakest
            }
        };
        self.companions.get_mut(at)
    }

    /// Puts the companions back in their order, strongest first (after counts changed).
    pub(crate) fn sort_companions(&mut self) {
        self.companions.sort_by(|a, b| {
            b.strength()
                .cmp(&a.strength())
                .then_with(|| a.tool.cmp(&b.tool))
        });
    }
}

/// One line: the tool, its counts and its strongest companions (at most three: called with it
/// in as many turns, or in the turn after).
///
/// ```
/// use capstore::usage::{Companion, Usage};
/// let u = Usage { tool: "car/startEngine".into(), turns: 25, calls: 27, sent: 30, sent_and_called: 24,
///     companions: vec![Companion { tool: "car/pressBrakePedal".into(), together: 23, before: 23, next_turn: 0 }] };
/// assert_eq!(u.to_string(), "car/startEngine: called in 25 turns (27 calls); sent in 30, called in 24 of those; \
///     with car/pressBrakePedal in 23");
/// let mut sent_only = Usage::new("fs/ls");
/// sent_only.sent = 3;
/// assert_eq!(sent_only.to_string(), "fs/ls: never called; sent in 3");
/// ```
impl std::fmt::Display for Usage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: ", self.tool)?;
        if self.was_called() {
            let turns = if self.turns == 1 { "turn" } else { "turns" };
            let calls = if self.calls == 1 { "call" } else { "calls" };
            write!(
                f,
                "called in {} {turns} ({} {calls})",
                self.turns, self.calls
            )?;
        } else {
            f.write_str("never called")?;
        }
        if self.sent > 0 {
            write!(f, "; sent in {}", self.sent)?;
            if self.was_called() {
                write!(f, ", called in {} of those", self.sent_and_called)?;
            }
        }
        for (i, c) in self.companions.iter().take(3).enumerate() {
            f.write_str(if i == 0 { "; " } else { ", " })?;
            if c.together > 0 {
                write!(f, "with {} in {}", c.tool, c.together)?;
            } else {
                write!(f, "followed by {} in {}", c.tool, c.next_turn)?;
            }
        }
        Ok(())
    }
}

/// The rows of the tools the agent called, by key: what it learned, without the rows of tools
/// that were only sent. Fails only for a snapshot of a store without the built-in tables.
///
/// ```
/// use capstore::usage::{called, learn, TurnUse};
/// use capstore::{Store, Tool, TOOLS};
/// let store = Store::new();
/// store.write(|tx| {
///     tx.insert(&TOOLS, Tool::new("ls", "List files").with_source("fs"))?;
///     tx.insert(&TOOLS, Tool::new("cd", "Change directory").with_source("fs"))?;
///     learn(tx, &TurnUse::new(["fs/cd"]).with_sent(["fs/cd", "fs/ls"]))
/// })?;
/// let snap = store.snapshot();
/// let learned: Vec<String> = called(&snap)?.map(|u| u.to_string()).collect();
/// assert_eq!(learned, ["fs/cd: called in 1 turn (1 call); sent in 1, called in 1 of those"]);
/// # Ok::<(), capstore::StoreError>(())
/// ```
pub fn called(snapshot: &Snapshot) -> Result<impl Iterator<Item = &Usage>, StoreError> {
    Ok(snapshot.iter(&USAGE)?.records().filter(|u| u.was_called()))
}

/// The `usage` table's schema: keyed by tool key; a row goes when its tool is removed (not when
/// it is replaced: a new description does not undo what its calls taught).
pub(crate) fn schema() -> TableSchema<Usage> {
    TableSchema::new("usage", |u: &Usage| u.tool.clone()).follows_removals(&TOOLS)
}

// Position 6 of the built-in tables, in the order `crate::tables` declares them.
/// The built-in `usage` table (see [`Usage`]): what the agent's calls
/// taught about each tool, key = the tool's key; no indexes. A row goes when its tool is removed
/// (not when it is replaced). Filled by [`learn`](crate::usage::learn), through a
/// [`UsageRecorder`](crate::usage::UsageRecorder).
///
/// ```
/// use capstore::usage::{TurnUse, learn};
/// use capstore::{Store, Tool, TOOLS, USAGE};
/// let store = Store::new();
/// store.write(|tx| tx.insert(&TOOLS, Tool::new("a", "b")))?;
/// store.write(|tx| learn(tx, &TurnUse::new(["a"])))?;
/// assert_eq!(store.snapshot().get(&USAGE, "a")?.map(|u| u.calls), Some(1));
/// store.write(|tx| tx.delete(&TOOLS, "a").map(drop))?;
/// assert!(!store.snapshot().contains(&USAGE, "a")?);
/// # Ok::<(), capstore::StoreError>(())
/// ```
pub const USAGE: Table<Usage> = Table::new(6, BUILTIN_SCHEMA);
