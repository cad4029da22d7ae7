//! [`Chat`]: one conversation's turns for a program that talks to its model itself. One call
//! selects a turn's tools, one call runs each tool call the model makes; everything a turn must
//! remember (what was sent, what was called, what the store learns from it) is recorded on the
//! way.
//!
//! What it costs beyond the steps it replaces: a finished turn's evidence is queued
//! ([`UsageQueue`]: a push, no store transaction; the queue counts its turns into the store in
//! batches), and the export names are computed again only when the `tools` table changed since
//! the last turn (linear in the catalog, as [`ToolExport::for_snapshot`] is; the usage the
//! queue writes leaves them be).

use std::sync::Arc;

use serde_json::Value;

use crate::context::{ContextBuilder, Conversation, SelectedTool, Selection};
use crate::exec::{Executor, ToolCall, ToolOutput};
use crate::provider::{Provider, ToolExport};
use crate::store::Store;
use crate::tools::bare_name;
use crate::usage::{UsageQueue, UsageRecorder};

/// One conversation with a model your program calls itself: [`turn`](Self::turn) selects the
/// turn's tools and gives their definitions in the provider's shape, [`call`](Self::call) runs
/// each tool call the model makes (by the name the model saw) through the
/// [`Executor`], and [`finish`](Self::finish) ends the conversation's last turn.
///
/// On the way it does what a turn wired by hand must not forget: the conversation remembers
/// what each turn sent and what the model called (the next turn's history, recent tools and
/// carried list); the calls are checked against the turn's selection (the executor's
/// [policy](crate::UnselectedCallPolicy)); and each finished turn's calls are counted into the
/// store's [usage](crate::usage) (turn it off with [`with_learning`](Self::with_learning)):
/// queued on a [`UsageQueue`], written in batches, and flushed by [`finish`](Self::finish) and
/// when the chat is dropped. A turn's evidence teaches the selections that start after its
/// batch is written ([`UsageQueue`] says when).
/// The steps underneath ([`ContextBuilder::select`], [`Conversation::record_selection`],
/// [`ToolExport::resolve`], [`Executor::execute`], [`Conversation::record_tool_use`],
/// [`learn`](crate::usage::learn)) stay public for programs that need them apart.
///
/// [`Agent`](super::Agent) is the same with the model inside the loop.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> capstore::Result<()> {
/// use capstore::agent::Chat;
/// use capstore::exec::register;
/// use capstore::{Store, Tool};
/// use serde_json::json;
///
/// let store = Store::new();
/// store.update(|tx| {
///     register(tx, Tool::new("get_weather", "Weather forecast for a city")
///         .with_handler(|args| async move { Ok(json!(format!("sunny in {}", args["city"]))) }))?;
///     Ok(())
/// })?;
///
/// let mut chat = Chat::new(store);
/// let turn = chat.turn("what is the weather in Oslo?")?;
/// // Send `turn.tools` to the model; it answers with a call by the name it saw.
/// let name = turn.tools[0]["function"]["name"].as_str().unwrap_or_default().to_string();
/// let out = chat.call(&name, json!({"city": "Oslo"})).await?;
/// assert_eq!(out.output, json!("sunny in \"Oslo\""));
/// chat.finish()?;
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct Chat {
    store: Store,
    builder: ContextBuilder,
    executor: Executor,
    provider: Provider,
    learn: bool,
    conversation: Conversation,
    usage: UsageRecorder,
    /// Where finished turns go, counted into the store in batches.
    queue: UsageQueue,
    /// The export names of the `tools` table's latest version seen.
    export: Option<Arc<ToolExport>>,
    /// The turn under way: its selection, the export names its tools were sent under, and the
    /// selected keys the executor checks calls against.
    current: Option<Current>,
    turns: u64,
    calls: u64,
}

#[derive(Debug)]
struct Current {
    selection: Arc<Selection>,
    export: Arc<ToolExport>,
    selected: Vec<String>,
}

/// What [`Chat::turn`] gives for a turn: the tool definitions to send and why each was chosen.
/// [`sent`](Self::sent) reads them together, tool by tool (key, the name the model calls it
/// by, definition, reasons); [`name_of`](Self::name_of) finds the name of one.
///
/// ```
/// use capstore::{agent::Chat, Store, Tool, TOOLS};
/// let store = Store::new();
/// store.write(|tx| tx.insert(&TOOLS, Tool::new("get_weather", "Weather for a city").with_source("w")))?;
/// let turn = Chat::new(store).turn("weather in Oslo?")?;
/// let sent = turn.sent().next().expect("one tool sent");
/// assert_eq!((sent.key, sent.name), ("w/get_weather", "get_weather"));
/// assert_eq!(sent.definition["function"]["name"], "get_weather");
/// assert!(sent.selected.reasons[0].to_string().starts_with("BM25 "));
/// assert_eq!(turn.name_of("get_weather"), Some("get_weather"));
/// # Ok::<(), capstore::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct ChatTurn {
    /// The tools chosen, in send order, each with its reasons (`Display` says them).
    pub selection: Arc<Selection>,
    /// Their definitions in the chat's [provider](Chat::with_provider)'s shape, in the same
    /// order, under the names the model must call them by.
    pub tools: Vec<Value>,
    /// Those names, in the same order.
    names: Vec<String>,
}

/// One tool a turn sent ([`ChatTurn::sent`]): its key in the store, the name the model was
/// sent it under (what its calls name, what [`Chat::call`] takes), its definition as sent, and
/// why it was chosen. `Display` prints it on one line: name, key when it differs, channel and
/// reasons.
///
/// ```
/// use capstore::{agent::Chat, Store, Tool, TOOLS};
/// let store = Store::new();
/// store.write(|tx| tx.insert(&TOOLS, Tool::new("get_weather", "Weather for a city").with_source("w")))?;
/// let turn = Chat::new(store).turn("weather in Oslo?")?;
/// let line = turn.sent().next().expect("sent").to_string();
/// assert!(line.starts_with("get_weather (w/get_weather): asked for by this message: BM25 "), "{line}");
/// # Ok::<(), capstore::Error>(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct SentTool<'t> {
    /// The tool's key (qualified name) in the store.
    pub key: &'t str,
    /// The name the model was sent it under.
    pub name: &'t str,
    /// Its definition, in the provider's shape.
    pub definition: &'t Value,
    /// Why it was chosen: its reasons and the channel that brought it.
    pub selected: &'t SelectedTool,
}

impl std::fmt::Display for SentTool<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)?;
        if self.key != self.name {
            write!(f, " ({})", self.key)?;
        }
        write!(f, ": {}", self.selected.channel)?;
        let mut sep = ": ";
        for reason in self.selected.reasons.iter() {
            write!(f, "{sep}{reason}")?;
            sep = "; ";
        }
        Ok(())
    }
}

impl ChatTurn {
    /// The tools the turn sent, in send order, each with its key, name, definition and
    /// reasons (see [`SentTool`]).
    ///
    /// See the [type's example](Self).
    pub fn sent(&self) -> impl ExactSizeIterator<Item = SentTool<'_>> + '_ {
        self.selection
            .tools
            .iter()
            .zip(&self.tools)
            .zip(&self.names)
            .map(|((selected, definition), name)| SentTool {
                key: &selected.key,
                name,
                definition,
                selected,
            })
    }

    /// The name the model was sent `tool` under, by its key (`"w/get_weather"`) or its bare
    /// name (`"get_weather"`, the first sent with it); `None` when this turn did not send it.
    ///
    /// See the [type's example](Self).
    pub fn name_of(&self, tool: &str) -> Option<&str> {
        self.sent()
            .find(|sent| sent.key == tool)
            .or_else(|| self.sent().find(|sent| bare_name(sent.key) == tool))
            .map(|sent| sent.name)
    }
}

impl Chat {
    /// A conversation over `store` with the default [`ContextBuilder`], an [`Executor`] over the
    /// same store with its default policy, OpenAI chat's shape, learning on.
    ///
    /// ```
    /// let chat = capstore::agent::Chat::new(capstore::Store::new());
    /// assert!(chat.selection().is_none());
    /// ```
    pub fn new(store: Store) -> Self {
        Chat {
            builder: ContextBuilder::new(),
            executor: Executor::new(store.clone()),
            queue: UsageQueue::new(store.clone()),
            store,
            provider: Provider::OpenAiChat,
            learn: true,
            conversation: Conversation::new(),
            usage: UsageRecorder::new(),
            export: None,
            current: None,
            turns: 0,
            calls: 0,
        }
    }

    /// This chat selecting with `builder` (a policy, an embedder).
    ///
    /// ```
    /// use capstore::context::{ContextBuilder, SelectionPolicy};
    /// let policy = SelectionPolicy { max_tools: 5, ..SelectionPolicy::default() };
    /// let chat = capstore::agent::Chat::new(capstore::Store::new())
    ///     .with_builder(ContextBuilder::with_policy(policy)?);
    /// # let _ = chat;
    /// # Ok::<(), capstore::Error>(())
    /// ```
    pub fn with_builder(mut self, builder: ContextBuilder) -> Self {
        self.builder = builder;
        self
    }

    /// This chat running calls through `executor` (its policy for calls outside the turn's
    /// selection, its event bus). It should run over the chat's store: a call is resolved
    /// against the chat's store and run against the executor's.
    ///
    /// ```
    /// use capstore::{Executor, Store, UnselectedCallPolicy};
    /// let store = Store::new();
    /// let chat = capstore::agent::Chat::new(store.clone())
    ///     .with_executor(Executor::new(store).with_policy(UnselectedCallPolicy::Deny));
    /// # let _ = chat;
    /// ```
    pub fn with_executor(mut self, executor: Executor) -> Self {
        self.executor = executor;
        self
    }

    /// This chat giving definitions in `provider`'s shape.
    ///
    /// ```
    /// use capstore::provider::Provider;
    /// let chat = capstore::agent::Chat::new(capstore::Store::new()).with_provider(Provider::Anthropic);
    /// # let _ = chat;
    /// ```
    pub fn with_provider(mut self, provider: Provider) -> Self {
        self.provider = provider;
        self
    }

    /// Whether each finished turn's calls are counted into the store's
    /// [usage](crate::usage) (on by default), so that later selections bring the tools that
    /// go together.
    ///
    /// ```
    /// let chat = capstore::agent::Chat::new(capstore::Store::new()).with_learning(false);
    /// # let _ = chat;
    /// ```
    pub fn with_learning(mut self, learn: bool) -> Self {
        self.learn = learn;
        self
    }

    /// This chat queuing its finished turns on `queue` (by default a queue of its own, with
    /// the default [`BatchLimits`](crate::usage::BatchLimits)): share one among the
    /// conversations of a store, so that their turns are written together. It should be a
    /// queue over the chat's store.
    ///
    /// ```
    /// use capstore::usage::UsageQueue;
    /// let store = capstore::Store::new();
    /// let queue = UsageQueue::new(store.clone());
    /// let a = capstore::agent::Chat::new(store.clone()).with_usage_queue(queue.clone());
    /// let b = capstore::agent::Chat::new(store).with_usage_queue(queue);
    /// # drop((a, b));
    /// ```
    pub fn with_usage_queue(mut self, queue: UsageQueue) -> Self {
        self.queue = queue;
        self
    }

    /// Starts a turn for the user's `message`: ends the turn before it (its evidence queued,
    /// as [`finish`](Self::finish) queues it, without the flush), selects the tools from the store's current snapshot
    /// with the conversation so far, and remembers what it sends. Tools the executor keeps
    /// for the conversation ([`Executor::kept_tools`]) are part of it.
    ///
    /// Errors: the store or the selection failed (a bad embedder, say), or the queue's batch
    /// that the previous turn filled was refused; the conversation is then as it was before
    /// the call, and the previous turn ended.
    ///
    /// See the [type's example](Self).
    pub fn turn(&mut self, message: &str) -> crate::error::Result<ChatTurn> {
        self.end_turn()?;
        let snapshot = self.store.snapshot();
        let mut next = self.conversation.clone();
        let mut turn = next.next_turn(message);
        turn.add_discovered(self.executor.kept_tools());
        let selection = Arc::new(self.builder.select(&snapshot, &turn)?);
        let export = ToolExport::cached(&mut self.export, &snapshot)?;
        next.record_selection(&selection);
        self.conversation = next;
        // The tools the turn sent for reasons of its own: what its calls are read against.
        self.usage.sent(selection.offered());
        self.turns += 1;
        self.calls = 0;
        let tools = export.selection_json(self.provider, &selection);
        let names = selection
            .tools
            .iter()
            .map(|t| export.name_to_send(&t.key, &t.tool))
            .collect();
        self.current = Some(Current {
            selected: selection.keys().map(str::to_string).collect(),
            selection: Arc::clone(&selection),
            export,
        });
        Ok(ChatTurn {
            selection,
            tools,
            names,
        })
    }

    /// Runs the model's call of the tool it knows as `name` (the name in the turn's
    /// definitions; a qualified name is taken as it is) with `arguments`, through the
    /// executor, checked against the turn's selection. A call that succeeds is remembered:
    /// the tool is recent for the next turns, and counted with the turn's calls.
    ///
    /// Errors: what the executor says ([`ExecError`](crate::ExecError): an unknown tool, a
    /// call outside the selection under a denying policy, a hook that denied it, the handler's
    /// own error, a timeout). A failed call is not remembered. Before any
    /// [`turn`](Self::turn), a call is checked against an empty selection.
    ///
    /// See the [type's example](Self).
    pub async fn call(&mut self, name: &str, arguments: Value) -> crate::error::Result<ToolOutput> {
        let (key, selected) = match &self.current {
            Some(current) => (
                current.export.resolve(name).unwrap_or(name).to_string(),
                current.selected.as_slice(),
            ),
            None => (name.to_string(), &[][..]),
        };
        self.calls += 1;
        let id = format!("turn{}-call{}", self.turns, self.calls);
        let out = self
            .executor
            .execute(ToolCall::new(id, key, arguments), selected)
            .await?;
        self.conversation.record_tool_use(out.tool.clone());
        self.usage.called(&out.tool);
        Ok(out)
    }

    /// Ends the turn under way for learning and writes what the chat's queue holds: the tools
    /// it sent and called are counted into the store's usage (when the chat learns).
    /// [`turn`](Self::turn) ends the turn before it without writing; call this after the
    /// conversation's last turn (dropping the chat does it too, its errors unseen). Calling
    /// it twice counts once.
    ///
    /// Errors: the store refused the write ([`UsageQueue::flush`]: the turns refused are
    /// dropped, the others counted).
    ///
    /// See the [type's example](Self).
    pub fn finish(&mut self) -> crate::error::Result<()> {
        self.end_turn()?;
        if self.learn {
            self.queue.flush()?;
        }
        Ok(())
    }

    /// Ends the turn under way: its evidence queued when the chat learns (which writes the
    /// queue's batch when the turn fills it), dropped otherwise.
    fn end_turn(&mut self) -> crate::error::Result<()> {
        let turn = self.usage.finish_turn();
        if self.learn {
            self.queue.push(turn)?;
        }
        Ok(())
    }

    /// The export names the turn under way was sent under (those of the store's `tools`
    /// table when it started), if a turn started: the names to read the model's calls by.
    /// The same `Arc` serves turn after turn until the `tools` table changes.
    ///
    /// ```
    /// use capstore::{agent::Chat, Store, Tool, TOOLS};
    /// let store = Store::new();
    /// store.write(|tx| tx.insert(&TOOLS, Tool::new("get_weather", "Weather for a city").with_source("w")))?;
    /// let mut chat = Chat::new(store);
    /// chat.turn("weather in Oslo?")?;
    /// let export = chat.export().expect("a turn started");
    /// assert_eq!(export.resolve("get_weather"), Some("w/get_weather"));
    /// # Ok::<(), capstore::Error>(())
    /// ```
    pub fn export(&self) -> Option<&Arc<ToolExport>> {
        self.current.as_ref().map(|c| &c.export)
    }

    /// The selection of the turn under way, if a turn started.
    ///
    /// ```
    /// let mut chat = capstore::agent::Chat::new(capstore::Store::new());
    /// chat.turn("hello")?;
    /// assert!(chat.selection().is_some_and(|s| s.tools.is_empty()));
    /// # Ok::<(), capstore::Error>(())
    /// ```
    pub fn selection(&self) -> Option<&Selection> {
        self.current.as_ref().map(|c| &*c.selection)
    }

    /// The conversation so far (history, recent tools, the last list), as the next turn's
    /// selection reads it.
    ///
    /// ```
    /// let mut chat = capstore::agent::Chat::new(capstore::Store::new());
    /// chat.turn("hello")?;
    /// assert_eq!(chat.conversation().clone().next_turn("again").history, ["hello"]);
    /// # Ok::<(), capstore::Error>(())
    /// ```
    pub fn conversation(&self) -> &Conversation {
        &self.conversation
    }
}

impl Drop for Chat {
    /// Finishes the conversation ([`Chat::finish`]): its last turn is queued and the queue
    /// written. A refusal has no one to go to and is dropped.
    fn drop(&mut self) {
        let _ = self.finish();
    }
}
