//! `capstore.Conversation`: the library's `context::Conversation` (earlier messages, tools
//! used, the list carried across turns) over one store and one set of settings.

use std::sync::{Arc, Mutex};

use capstore::context;
use capstore::provider::Provider;
use capstore::usage::{TurnUse, UsageRecorder};
use pyo3::prelude::*;

use crate::errors;
use crate::options::{Settings, provider_name};
use crate::selection::{Made, Selection};
use crate::shared::{Inner, lock};

/// A multi-turn conversation over a store (`Store.conversation(...)`): `select` each user
/// message in turn and `record_tool_use` each tool the model calls.
///
/// The tool list is carried across turns: the last turn's tools keep their place and the
/// tools a new message needs are appended, so that the request's prefix (and the provider's
/// prompt cache) survives; a list grown past `max_tools` is re-packed once, the stalest tools
/// out first. Each selected tool says which channel brought it (this message, the
/// conversation, a companion, kept from an earlier turn, pinned).
///
/// Each turn's recorded calls are counted into the store's usage, unless the conversation was
/// opened with `learn=False`: later selections then bring the tools that were called together
/// (a login before a send). A turn ends when the next one starts; its evidence is queued on
/// the store's queue (shared by its conversations, no store transaction) and written in
/// batches (64 turns, or a turn a second after the oldest held), and at `finish`, when the
/// conversation is dropped, and when the store is. A selection reads only what was written.
#[pyclass(frozen, module = "capstore._native")]
pub(crate) struct Conversation {
    inner: Arc<Inner>,
    settings: Settings,
    provider: Provider,
    state: Mutex<context::Conversation>,
    /// The turn's offered tools and calls, counted into the store's usage when it ends.
    usage: UsageRecorder,
    learn: bool,
}

impl Conversation {
    pub(crate) fn new(
        inner: Arc<Inner>,
        settings: Settings,
        provider: Provider,
        learn: bool,
    ) -> Conversation {
        Conversation {
            inner,
            settings,
            provider,
            state: Mutex::new(context::Conversation::new()),
            usage: UsageRecorder::new(),
            learn,
        }
    }

    /// Ends the turn under way for learning: its tools sent and called are queued, when the
    /// conversation learns (the push writes the queue's batch when the turn fills it).
    fn end_turn(&self) -> PyResult<()> {
        let turn = self.usage.finish_turn();
        if self.learn {
            self.inner.usage.push(turn).map_err(errors::store)?;
        }
        Ok(())
    }

    /// Ends the turn under way and writes what the store's queue holds.
    fn end_and_flush(&self) -> PyResult<()> {
        self.end_turn()?;
        if self.learn {
            self.inner.usage.flush().map_err(errors::store)?;
        }
        Ok(())
    }
}

#[pymethods]
impl Conversation {
    /// The tools to send for the next user message, read with the conversation so far; the
    /// selection is remembered for the next turn's list, and the turn before ends (its calls
    /// are queued for learning; `finish` also writes them). Releases the GIL.
    fn select(&self, py: Python<'_>, message: String) -> PyResult<Selection> {
        let made = py.detach(|| -> PyResult<Made> {
            let builder = self.inner.builder(&self.settings)?;
            // One turn at a time: the next turn reads what this one recorded.
            let mut state = lock(&self.state);
            self.end_turn()?;
            self.inner.prepare(&self.settings)?;
            let snapshot = self.inner.store.snapshot();
            let turn = state.next_turn(message);
            let selection = builder.select(&snapshot, &turn).map_err(errors::select)?;
            state.record_selection(&selection);
            drop(state);
            self.usage.sent(selection.offered());
            let export = self.inner.export(&snapshot)?;
            Ok(Made::new(selection, &export, self.provider))
        })?;
        Ok(made.into_py())
    }

    /// Remembers that the model called the tool `name`: the name it was sent under (the
    /// exported name, as in the model's tool call) or its qualified name. A tool called is
    /// recent, and fresh again in the carried list. Raises `ToolNotFoundError` for a name that
    /// is no tool of the store.
    fn record_tool_use(&self, name: &str) -> PyResult<()> {
        let key = self.inner.resolve(name)?;
        self.usage.called(&key);
        lock(&self.state).record_tool_use(key);
        Ok(())
    }

    /// Ends the last turn: its recorded calls, and every finished turn the store's queue
    /// holds, are counted into the store's usage now (unless the conversation was opened
    /// with `learn=False`). `select` ends the turn before without writing; calling it twice
    /// counts once.
    fn finish(&self) -> PyResult<()> {
        let _state = lock(&self.state);
        self.end_and_flush()
    }

    /// Remembers tools the model found with a tool search (qualified or exported names), so
    /// that they stay selected from the next turn on.
    fn record_discovered(&self, names: Vec<String>) -> PyResult<()> {
        let keys = names
            .iter()
            .map(|name| self.inner.resolve(name))
            .collect::<PyResult<Vec<String>>>()?;
        lock(&self.state).record_discovered(keys);
        Ok(())
    }

    /// The provider whose shape the definitions are in.
    #[getter]
    fn provider(&self) -> &'static str {
        provider_name(self.provider)
    }

    /// The conversation's state (earlier messages, tools used, the carried list) as JSON
    /// text, to keep it and resume it elsewhere with `Conversation.restore`.
    fn to_json(&self) -> PyResult<String> {
        serde_json::to_string(&*lock(&self.state))
            .map_err(|e| errors::CapstoreError::new_err(e.to_string()))
    }

    /// Puts back a state `to_json` gave.
    fn restore(&self, state: &str) -> PyResult<()> {
        let restored: context::Conversation = serde_json::from_str(state)
            .map_err(|e| errors::CapstoreError::new_err(format!("conversation state: {e}")))?;
        *lock(&self.state) = restored;
        Ok(())
    }

    /// Hands the whole conversation over as JSON text: `to_json`'s state and the turn under
    /// way (the tools it sent and called so far, not yet counted into usage). This object is
    /// left as a new conversation with nothing under way, so dropping it counts nothing;
    /// `resume` on another (in another process, say) goes on where this one stopped, and the
    /// turn is counted once, when it ends there. What `capstore.langgraph` keeps in a thread's
    /// state.
    fn suspend(&self) -> PyResult<String> {
        let mut state = lock(&self.state);
        let turn = self.usage.finish_turn();
        // Dropping what `finish_turn` left (the turn's calls as the next one's `previous`).
        let _ = self.usage.finish_turn();
        let taken = std::mem::take(&mut *state);
        serde_json::to_string(&serde_json::json!({ "conversation": taken, "turn": turn }))
            .map_err(|e| errors::CapstoreError::new_err(e.to_string()))
    }

    /// Goes on from a state `suspend` gave: the conversation and its turn under way replace
    /// this one's (a turn under way here is dropped, not counted).
    fn resume(&self, state: &str) -> PyResult<()> {
        let bad = |e: serde_json::Error| {
            errors::CapstoreError::new_err(format!("conversation state: {e}"))
        };
        let mut value: serde_json::Value = serde_json::from_str(state).map_err(bad)?;
        let mut part = |key: &str| value.get_mut(key).map(serde_json::Value::take);
        let conversation: context::Conversation =
            serde_json::from_value(part("conversation").unwrap_or_default()).map_err(bad)?;
        let turn: TurnUse =
            serde_json::from_value(part("turn").unwrap_or_default()).map_err(bad)?;
        let mut state = lock(&self.state);
        // The recorder takes no turn whole: its `previous` is what a finished turn called.
        let _ = self.usage.finish_turn();
        for tool in &turn.previous {
            self.usage.called(tool);
        }
        let _ = self.usage.finish_turn();
        self.usage.sent(&turn.sent);
        for tool in &turn.called {
            self.usage.called(tool);
        }
        *state = conversation;
        Ok(())
    }

    /// The provider.
    fn __repr__(&self) -> String {
        format!("Conversation(provider={:?})", provider_name(self.provider))
    }
}

impl Drop for Conversation {
    /// The conversation is gone: its last turn is counted and the queue written (a refusal
    /// has no one to go to).
    fn drop(&mut self) {
        let _ = self.end_and_flush();
    }
}
