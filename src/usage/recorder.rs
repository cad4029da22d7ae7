//! Gathering one conversation's turns as they happen.

use std::sync::Arc;

use parking_lot::Mutex;

use crate::store::{CommitInfo, Store, StoreError};

use super::learn::{TurnUse, learn};

/// Gathers what one conversation does, turn by turn, for [`learn`]: the tools each turn sent
/// and the tools the model called, in order. Recording a call is a push onto a list under a
/// lock (well under a microsecond); nothing reaches the store until the turn ends
/// ([`finish_turn`](Self::finish_turn) hands over the turn, [`commit_turn`](Self::commit_turn)
/// also writes it), so a selection never sees half a turn.
///
/// One recorder per conversation (it remembers the last turn's calls, for the tools that
/// follow them); cheap to clone, clones share it, `Send + Sync`.
/// [`Executor::with_usage`](crate::Executor::with_usage) records every call it runs.
///
/// ```
/// use capstore::usage::UsageRecorder;
/// use capstore::{Store, Tool, TOOLS, USAGE};
/// let store = Store::new();
/// store.write(|tx| {
///     tx.insert(&TOOLS, Tool::new("cd", "Change directory").with_source("fs"))?;
///     tx.insert(&TOOLS, Tool::new("mv", "Move a file").with_source("fs"))
/// })?;
/// let recorder = UsageRecorder::new();
/// recorder.sent(["fs/mv"]);
/// recorder.called("fs/cd");
/// recorder.called("fs/mv");
/// recorder.commit_turn(&store)?;
/// let mv = store.snapshot().get_arc(&USAGE, "fs/mv")?.expect("learned");
/// assert_eq!((mv.sent, mv.sent_and_called, mv.companions[0].before), (1, 1, 1));
/// # Ok::<(), capstore::StoreError>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct UsageRecorder {
    turn: Arc<Mutex<TurnUse>>,
}

impl UsageRecorder {
    /// A recorder for a new conversation.
    ///
    /// ```
    /// assert!(capstore::usage::UsageRecorder::new().peek().is_empty());
    /// ```
    pub fn new() -> Self {
        UsageRecorder::default()
    }

    /// Records tools sent to the model this turn (a selection's keys, or what a search
    /// returned), after those recorded before in the turn; each counts once.
    ///
    /// ```
    /// let r = capstore::usage::UsageRecorder::new();
    /// r.sent(["fs/cd", "fs/mv"]);
    /// r.sent(["fs/mv", "fs/ls"]);
    /// assert_eq!(r.peek().sent, ["fs/cd", "fs/mv", "fs/ls"]);
    /// ```
    pub fn sent<S: AsRef<str>>(&self, tools: impl IntoIterator<Item = S>) {
        let mut turn = self.turn.lock();
        for tool in tools {
            let tool = tool.as_ref();
            if !turn.sent.iter().any(|t| t == tool) {
                turn.sent.push(tool.to_string());
            }
        }
    }

    /// Records a call the model made this turn (the tool's qualified name), after the others.
    ///
    /// ```
    /// let r = capstore::usage::UsageRecorder::new();
    /// r.called("fs/cd");
    /// assert_eq!(r.peek().called, ["fs/cd"]);
    /// ```
    pub fn called(&self, tool: &str) {
        self.turn.lock().called.push(tool.to_string());
    }

    /// The turn so far, without ending it.
    ///
    /// ```
    /// assert!(capstore::usage::UsageRecorder::new().peek().called.is_empty());
    /// ```
    pub fn peek(&self) -> TurnUse {
        self.turn.lock().clone()
    }

    /// Ends the turn: returns what it did (for [`learn`], or a replica's log), and starts the
    /// next, which remembers this one's calls as its `previous`. A turn that called nothing
    /// leaves the next turn's `previous` empty.
    ///
    /// ```
    /// let r = capstore::usage::UsageRecorder::new();
    /// r.called("fs/cd");
    /// assert_eq!(r.finish_turn().called, ["fs/cd"]);
    /// assert_eq!(r.peek().previous, ["fs/cd"]);
    /// ```
    pub fn finish_turn(&self) -> TurnUse {
        let mut turn = self.turn.lock();
        let mut previous: Vec<String> = Vec::new();
        for tool in &turn.called {
            if !previous.contains(tool) {
                previous.push(tool.clone());
            }
        }
        std::mem::replace(
            &mut *turn,
            TurnUse {
                previous,
                ..TurnUse::default()
            },
        )
    }

    /// Ends the turn and counts it into `store`'s [`USAGE`](crate::USAGE) table in one
    /// transaction; `None` when the turn sent and called nothing (nothing is written).
    ///
    /// ```
    /// let store = capstore::Store::new();
    /// assert!(capstore::usage::UsageRecorder::new().commit_turn(&store)?.is_none());
    /// # Ok::<(), capstore::StoreError>(())
    /// ```
    pub fn commit_turn(&self, store: &Store) -> Result<Option<CommitInfo>, StoreError> {
        let turn = self.finish_turn();
        if turn.is_empty() {
            return Ok(None);
        }
        store.write(|tx| learn(tx, &turn)).map(Some)
    }
}
