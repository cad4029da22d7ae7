//! One turn's evidence, and how it changes the usage rows.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::record::USAGE;
use crate::store::{StoreError, WriteTxn};
use crate::tools::TOOLS;

use super::record::Usage;

/// What one turn of a conversation did: the tools sent to the model and the tools it called,
/// in call order, with the tools the conversation's previous turn called. The unit
/// [`learn`] counts; a [`UsageRecorder`](super::UsageRecorder) gathers one per turn.
///
/// ```
/// use capstore::usage::TurnUse;
/// let turn = TurnUse::new(["car/pressBrakePedal", "car/startEngine"]).with_sent(["car/startEngine"]);
/// assert_eq!(turn.called[0], "car/pressBrakePedal");
/// assert!(!turn.is_empty());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TurnUse {
    /// The tools called this turn (qualified names), in call order; a tool called twice is
    /// listed twice.
    pub called: Vec<String>,
    /// The tools sent to the model this turn, when the turn's selection is known.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sent: Vec<String>,
    /// The distinct tools the conversation's previous turn called.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub previous: Vec<String>,
}

impl TurnUse {
    /// A turn that called `called`, in that order.
    ///
    /// ```
    /// assert_eq!(capstore::usage::TurnUse::new(["fs/cd", "fs/mv"]).called, ["fs/cd", "fs/mv"]);
    /// ```
    pub fn new<S: Into<String>>(called: impl IntoIterator<Item = S>) -> Self {
        TurnUse {
            called: called.into_iter().map(Into::into).collect(),
            ..TurnUse::default()
        }
    }

    /// Sets the tools sent this turn.
    ///
    /// ```
    /// let t = capstore::usage::TurnUse::new(["a"]).with_sent(["a", "b"]);
    /// assert_eq!(t.sent, ["a", "b"]);
    /// ```
    pub fn with_sent<S: Into<String>>(mut self, sent: impl IntoIterator<Item = S>) -> Self {
        self.sent = sent.into_iter().map(Into::into).collect();
        self
    }

    /// Sets the tools the conversation's previous turn called.
    ///
    /// ```
    /// let t = capstore::usage::TurnUse::new(["b"]).with_previous(["a"]);
    /// assert_eq!(t.previous, ["a"]);
    /// ```
    pub fn with_previous<S: Into<String>>(mut self, previous: impl IntoIterator<Item = S>) -> Self {
        self.previous = previous.into_iter().map(Into::into).collect();
        self
    }

    /// Whether the turn neither sent nor called anything (there is nothing to learn).
    ///
    /// ```
    /// assert!(capstore::usage::TurnUse::default().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.called.is_empty() && self.sent.is_empty()
    }

    /// The distinct tools called, in the order of their first calls, each with its calls.
    fn distinct_calls(&self) -> Vec<(&str, u64)> {
        let mut out: Vec<(&str, u64)> = Vec::new();
        for tool in &self.called {
            match out.iter_mut().find(|(t, _)| *t == tool.as_str()) {
                Some((_, n)) => *n += 1,
                None => out.push((tool.as_str(), 1)),
            }
        }
        out
    }
}

/// Counts one turn into the [`USAGE`](crate::USAGE) table, in `tx`:
/// - each tool called: its turns and calls; each other tool called with it, as a companion
///   (called together, and first if its first call came first);
/// - each tool the previous turn called: each tool this turn called, as a companion in the
///   next turn;
/// - each tool sent: sent, and sent and called if it was called.
///
/// Only tools in the `tools` table count (a removed tool's calls teach nothing; its row went
/// with it); a row keeps its [`MAX_COMPANIONS`](super::MAX_COMPANIONS) strongest companions.
/// Cost: a look-up and an upsert per tool the turn names, and a pass over a called tool's
/// companions per other tool called (a turn of *k* distinct calls: *k*² small steps).
///
/// ```
/// use capstore::usage::{TurnUse, learn};
/// use capstore::{Store, Tool, TOOLS, USAGE};
/// let store = Store::new();
/// store.write(|tx| {
///     tx.insert(&TOOLS, Tool::new("cd", "Change directory").with_source("fs"))?;
///     tx.insert(&TOOLS, Tool::new("mv", "Move a file").with_source("fs"))
/// })?;
/// store.write(|tx| learn(tx, &TurnUse::new(["fs/cd", "fs/mv"])))?;
/// let mv = store.snapshot().get_arc(&USAGE, "fs/mv")?.expect("learned");
/// assert_eq!((mv.turns, mv.companion("fs/cd").map(|c| (c.together, c.before))), (1, Some((1, 1))));
/// # Ok::<(), capstore::StoreError>(())
/// ```
pub fn learn(tx: &mut WriteTxn, turn: &TurnUse) -> Result<(), StoreError> {
    learn_with(tx, turn, Known::InTools)
}

/// Which tools a turn's evidence counts for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Known {
    /// The tools the transaction's `tools` table holds ([`learn`]).
    InTools,
    /// Every tool named: a replica's log applies the evidence of calls run by gateways whose
    /// live tools its own store does not hold; a selection still brings only tools in its own
    /// store.
    #[cfg(feature = "postgres")]
    Any,
}

/// Counts `turns` into the [`USAGE`](crate::USAGE) table in `tx`, in order: the same rows as
/// one [`learn`] per turn in that order, each row read and written once for all of them (the
/// batch a [`UsageQueue`](super::UsageQueue) writes). Which tools count is decided by the
/// `tools` table `tx` sees, for every turn alike.
///
/// ```
/// use capstore::usage::{TurnUse, learn, learn_all};
/// use capstore::{Store, Tool, TOOLS, USAGE};
/// let stores = [Store::new(), Store::new()];
/// for store in &stores {
///     store.write(|tx| {
///         tx.insert(&TOOLS, Tool::new("cd", "Change directory").with_source("fs"))?;
///         tx.insert(&TOOLS, Tool::new("mv", "Move a file").with_source("fs"))
///     })?;
/// }
/// let turns = [TurnUse::new(["fs/cd", "fs/mv"]), TurnUse::new(["fs/mv"]).with_previous(["fs/cd"])];
/// for turn in &turns {
///     stores[0].write(|tx| learn(tx, turn))?;
/// }
/// stores[1].write(|tx| learn_all(tx, &turns))?;
/// let row = |store: &Store| store.snapshot().get_arc(&USAGE, "fs/cd");
/// assert_eq!(row(&stores[0])?, row(&stores[1])?);
/// # Ok::<(), capstore::StoreError>(())
/// ```
pub fn learn_all(tx: &mut WriteTxn, turns: &[TurnUse]) -> Result<(), StoreError> {
    let mut rows: HashMap<&str, Usage> = HashMap::new();
    for turn in turns {
        count(tx, &mut rows, turn, Known::InTools)?;
    }
    write(tx, rows)
}

/// [`learn_all`], counting the tools `known` says: the batch of a replica's log entry.
#[cfg(feature = "postgres")]
pub(crate) fn learn_all_with(
    tx: &mut WriteTxn,
    turns: &[TurnUse],
    known: Known,
) -> Result<(), StoreError> {
    let mut rows: HashMap<&str, Usage> = HashMap::new();
    for turn in turns {
        count(tx, &mut rows, turn, known)?;
    }
    write(tx, rows)
}

/// [`learn`], counting the tools `known` says.
pub(crate) fn learn_with(
    tx: &mut WriteTxn,
    turn: &TurnUse,
    known: Known,
) -> Result<(), StoreError> {
    let mut rows: HashMap<&str, Usage> = HashMap::new();
    count(tx, &mut rows, turn, known)?;
    write(tx, rows)
}

/// Writes the rows counted in memory, in key order (so that the change set is the same
/// whatever the turns' order).
fn write(tx: &mut WriteTxn, rows: HashMap<&str, Usage>) -> Result<(), StoreError> {
    let mut rows: Vec<(&str, Usage)> = rows.into_iter().collect();
    rows.sort_unstable_by(|a, b| a.0.cmp(b.0));
    for (_, usage) in rows {
        tx.upsert(&USAGE, usage)?;
    }
    Ok(())
}

/// Counts one turn into `rows`: the rows it names, read from `tx` the first time any turn
/// names them and kept in `rows` from then on. Leaves each row it changed with its
/// companions in order, as a write after the turn would: the next turn's eviction of the
/// weakest companion reads that order.
fn count<'k>(
    tx: &WriteTxn,
    rows: &mut HashMap<&'k str, Usage>,
    turn: &'k TurnUse,
    known: Known,
) -> Result<(), StoreError> {
    // A tool with a row in `rows` was known when the row was read, and the `tools` table does
    // not change inside the batch: no look-up again.
    let known = |tx: &WriteTxn, rows: &HashMap<&'k str, Usage>, key: &str| {
        if rows.contains_key(key) {
            return Ok(true);
        }
        match known {
            Known::InTools => tx.view().contains(&TOOLS, key),
            #[cfg(feature = "postgres")]
            Known::Any => Ok(!key.is_empty()),
        }
    };
    // Each row is read once, put in order (as a write after each turn leaves a row: one
    // written otherwise may not be), then changed in `rows`.
    fn row<'k>(
        tx: &WriteTxn,
        rows: &mut HashMap<&'k str, Usage>,
        key: &'k str,
    ) -> Result<(), StoreError> {
        if !rows.contains_key(key) {
            let current = tx.view().get(&USAGE, key)?;
            let mut usage = current.cloned().unwrap_or_else(|| Usage::new(key));
            usage.sort_companions();
            rows.insert(key, usage);
        }
        Ok(())
    }
    // The rows whose companions this turn changed, to put back in order at its end.
    let mut touched: Vec<&'k str> = Vec::new();

    let mut called: Vec<(&str, u64)> = Vec::new();
    for (tool, calls) in turn.distinct_calls() {
        if known(tx, rows, tool)? {
            called.push((tool, calls));
        }
    }
    for (position, &(tool, calls)) in called.iter().enumerate() {
        row(tx, rows, tool)?;
        let Some(usage) = rows.get_mut(tool) else {
            continue;
        };
        touched.push(tool);
        usage.turns = usage.turns.saturating_add(1);
        usage.calls = usage.calls.saturating_add(calls);
        for (other_position, &(other, _)) in called.iter().enumerate() {
            if other == tool {
                continue;
            }
            if let Some(c) = usage.companion_mut(other) {
                c.together = c.together.saturating_add(1);
                if other_position < position {
                    c.before = c.before.saturating_add(1);
                }
            }
        }
    }
    let mut previous: Vec<&str> = Vec::new();
    for tool in &turn.previous {
        if !previous.contains(&tool.as_str()) && known(tx, rows, tool)? {
            previous.push(tool);
        }
    }
    for tool in previous {
        row(tx, rows, tool)?;
        let Some(usage) = rows.get_mut(tool) else {
            continue;
        };
        touched.push(tool);
        for &(next, _) in &called {
            if next == tool {
                continue;
            }
            if let Some(c) = usage.companion_mut(next) {
                c.next_turn = c.next_turn.saturating_add(1);
            }
        }
    }
    let mut sent: Vec<&str> = Vec::new();
    for tool in &turn.sent {
        if !sent.contains(&tool.as_str()) && known(tx, rows, tool)? {
            sent.push(tool);
        }
    }
    for tool in sent {
        row(tx, rows, tool)?;
        let was_called = called.iter().any(|(t, _)| *t == tool);
        if let Some(usage) = rows.get_mut(tool) {
            usage.sent = usage.sent.saturating_add(1);
            if was_called {
                usage.sent_and_called = usage.sent_and_called.saturating_add(1);
            }
        }
    }
    for tool in touched {
        if let Some(usage) = rows.get_mut(tool) {
            usage.sort_companions();
        }
    }
    Ok(())
}
