//! What a selection looks at: the turn's message, earlier messages, and what happened before.

use std::collections::VecDeque;
use std::sync::Arc;

use super::selection::Selection;

/// The input of one selection: the latest user message plus the conversation state that should
/// influence it. Build one by hand, or let a [`Conversation`] keep the state for you.
///
/// ```
/// use capstore::context::Turn;
/// let turn = Turn::new("and tomorrow?")
///     .with_history(["what's the weather in Paris?"])
///     .with_recent_tools(["weather/get_forecast"]);
/// assert_eq!(turn.history.len(), 1);
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Turn {
    /// The latest user message.
    pub message: String,
    /// Earlier user messages, oldest first.
    pub history: Vec<String>,
    /// Qualified names of tools the model called in recent turns, oldest first.
    pub recent_tools: Vec<String>,
    /// The tools of the previous selection, in the order they were sent, each with how many
    /// turns it has gone unneeded: the list this turn's selection carries on
    /// ([`SelectionPolicy`](super::SelectionPolicy)'s `keep_previous`).
    pub previous: Vec<PreviousTool>,
    /// Tools the model pulled in with `search_tools`, kept selected from then on.
    pub discovered: Vec<String>,
    /// The message's vector from the builder's embedder, when the caller made it already (in
    /// a batch, say), of the text [`HintPolicy::embedding_text`](super::HintPolicy::embedding_text)
    /// gives for the message. Without it, hybrid retrieval embeds that text itself; but a
    /// message of more than [`GIST_WORDS`](super::GIST_WORDS) words by its
    /// [`gist`](super::gist()), and a short message of several asks as the mean of its asks'
    /// vectors. A message of more than `GIST_WORDS` words takes `max_lexical_weight` in the
    /// fusion, whatever its vector read.
    pub query_vector: Option<Arc<[f32]>>,
}

impl Turn {
    /// A turn with just a message.
    ///
    /// ```
    /// assert_eq!(capstore::context::Turn::new("hi").message, "hi");
    /// ```
    pub fn new(message: impl Into<String>) -> Self {
        Turn {
            message: message.into(),
            ..Turn::default()
        }
    }

    /// Sets the message's vector, made by the same embedder as the builder's (hybrid
    /// retrieval then does not embed the message again).
    ///
    /// ```
    /// let t = capstore::context::Turn::new("hi").with_query_vector(vec![0.6, 0.8]);
    /// assert_eq!(t.query_vector.as_deref(), Some(&[0.6, 0.8][..]));
    /// ```
    pub fn with_query_vector(mut self, vector: Vec<f32>) -> Self {
        self.query_vector = Some(vector.into());
        self
    }

    /// Sets the earlier user messages, oldest first.
    ///
    /// ```
    /// let t = capstore::context::Turn::new("b").with_history(["a"]);
    /// assert_eq!(t.history, ["a"]);
    /// ```
    pub fn with_history<S: Into<String>>(mut self, history: impl IntoIterator<Item = S>) -> Self {
        self.history = history.into_iter().map(Into::into).collect();
        self
    }

    /// Sets the tools used recently, oldest first.
    ///
    /// ```
    /// let t = capstore::context::Turn::new("b").with_recent_tools(["fs/read_file"]);
    /// assert_eq!(t.recent_tools, ["fs/read_file"]);
    /// ```
    pub fn with_recent_tools<S: Into<String>>(
        mut self,
        tools: impl IntoIterator<Item = S>,
    ) -> Self {
        self.recent_tools = tools.into_iter().map(Into::into).collect();
        self
    }

    /// Sets the previous selection's tools, in sent order: names (needed last turn) or
    /// [`PreviousTool`]s.
    ///
    /// ```
    /// use capstore::context::{PreviousTool, Turn};
    /// let t = Turn::new("b").with_previous(["a", "b"]);
    /// assert_eq!(t.previous[1], PreviousTool::new("b", 0));
    /// let t = Turn::new("b").with_previous([PreviousTool::new("a", 3)]);
    /// assert_eq!(t.previous[0].idle_turns, 3);
    /// ```
    pub fn with_previous<S: Into<PreviousTool>>(
        mut self,
        tools: impl IntoIterator<Item = S>,
    ) -> Self {
        self.previous = tools.into_iter().map(Into::into).collect();
        self
    }

    /// Sets the tools discovered through `search_tools`.
    ///
    /// ```
    /// let t = capstore::context::Turn::new("b").with_discovered(["x/y"]);
    /// assert_eq!(t.discovered, ["x/y"]);
    /// ```
    pub fn with_discovered<S: Into<String>>(mut self, tools: impl IntoIterator<Item = S>) -> Self {
        self.discovered = tools.into_iter().map(Into::into).collect();
        self
    }

    /// Adds tools to the discovered ones, each once, after those it holds: the tools an
    /// executor keeps for the conversation ([`Executor::kept_tools`](crate::Executor::kept_tools)),
    /// say.
    ///
    /// ```
    /// let mut t = capstore::context::Turn::new("b").with_discovered(["x/y"]);
    /// t.add_discovered(["x/z", "x/y"]);
    /// assert_eq!(t.discovered, ["x/y", "x/z"]);
    /// ```
    pub fn add_discovered<S: Into<String>>(&mut self, tools: impl IntoIterator<Item = S>) {
        extend_unique(&mut self.discovered, tools);
    }
}

/// A tool of the previous turn's list, and how long the conversation has gone without needing
/// it: the staleness by which the list evicts when it must (see [the cache
/// model](super#the-tool-list-across-turns)).
///
/// ```
/// use capstore::context::PreviousTool;
/// let fresh: PreviousTool = "weather/get_forecast".into();
/// assert_eq!(fresh, PreviousTool::new("weather/get_forecast", 0));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct PreviousTool {
    /// Qualified name.
    pub key: String,
    /// Turns since a turn last needed it (selected it for its own reasons) or the model last
    /// called it: 0 if the last turn did.
    pub idle_turns: u32,
}

impl PreviousTool {
    /// A tool of the previous list, unneeded for `idle_turns` turns.
    ///
    /// ```
    /// assert_eq!(capstore::context::PreviousTool::new("a", 2).idle_turns, 2);
    /// ```
    pub fn new(key: impl Into<String>, idle_turns: u32) -> Self {
        PreviousTool {
            key: key.into(),
            idle_turns,
        }
    }
}

/// A name alone: needed last turn.
impl From<&str> for PreviousTool {
    fn from(key: &str) -> Self {
        PreviousTool::new(key, 0)
    }
}

/// A name alone: needed last turn.
impl From<String> for PreviousTool {
    fn from(key: String) -> Self {
        PreviousTool::new(key, 0)
    }
}

/// How many recent messages and tool uses a [`Conversation`] remembers.
const MEMORY: usize = 16;

/// The state a [`Turn`] needs, kept across an agent's turns: earlier messages, recently used
/// tools, the last selection (with how long each of its tools has gone unneeded) and
/// discovered tools. It serializes (serde), so that a conversation can be kept and resumed
/// elsewhere.
///
/// ```
/// use capstore::context::{Conversation, ContextBuilder};
/// use capstore::{Store, Tool, TOOLS};
///
/// let store = Store::new();
/// store.write(|tx| tx.insert(&TOOLS, Tool::new("get_weather", "Weather for a city")))?;
/// let builder = ContextBuilder::new();
/// let mut conversation = Conversation::new();
/// let turn = conversation.next_turn("weather in Paris?");
/// let selection = builder.select(&store.snapshot(), &turn)?;
/// conversation.record_selection(&selection);
/// conversation.record_tool_use("get_weather");
/// let next = conversation.next_turn("and in Rome?");
/// assert_eq!(next.history, ["weather in Paris?"]);
/// assert_eq!(next.previous[0].key, "get_weather");
/// assert_eq!(next.recent_tools, ["get_weather"]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Conversation {
    messages: VecDeque<String>,
    recent_tools: VecDeque<String>,
    previous: Vec<PreviousTool>,
    discovered: Vec<String>,
}

impl Conversation {
    /// An empty conversation.
    ///
    /// ```
    /// let c = capstore::context::Conversation::new();
    /// # let _ = c;
    /// ```
    pub fn new() -> Self {
        Conversation::default()
    }

    /// The turn for a new user message; the message joins the history afterwards.
    ///
    /// ```
    /// let mut c = capstore::context::Conversation::new();
    /// assert!(c.next_turn("a").history.is_empty());
    /// assert_eq!(c.next_turn("b").history, ["a"]);
    /// ```
    pub fn next_turn(&mut self, message: impl Into<String>) -> Turn {
        let message = message.into();
        let turn = Turn {
            message: message.clone(),
            history: self.messages.iter().cloned().collect(),
            recent_tools: self.recent_tools.iter().cloned().collect(),
            previous: self.previous.clone(),
            discovered: self.discovered.clone(),
            query_vector: None,
        };
        push_bounded(&mut self.messages, message);
        turn
    }

    /// Remembers the tools a selection sent, in order, for the next turn's list: a tool the
    /// turn needed (selected for a reason of its own, not only
    /// [carried](super::SelectedTool::carried)) is fresh again; one it only carried has gone
    /// unneeded one turn longer.
    ///
    /// ```
    /// # use capstore::context::{Conversation, ContextBuilder, Turn};
    /// # let store = capstore::Store::new();
    /// let mut c = Conversation::new();
    /// let selection = ContextBuilder::new().select(&store.snapshot(), &Turn::new("x"))?;
    /// c.record_selection(&selection);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn record_selection(&mut self, selection: &Selection) {
        let idle_before = |key: &str| {
            self.previous
                .iter()
                .find(|p| p.key == key)
                .map_or(0, |p| p.idle_turns)
        };
        self.previous = selection
            .tools
            .iter()
            .map(|t| {
                let idle = if t.carried() {
                    idle_before(&t.key).saturating_add(1)
                } else {
                    0
                };
                PreviousTool::new(&*t.key, idle)
            })
            .collect();
    }

    /// Remembers that the model called a tool (qualified name): it is recent, and fresh again
    /// in the list.
    ///
    /// ```
    /// let mut c = capstore::context::Conversation::new();
    /// c.record_tool_use("fs/read_file");
    /// assert_eq!(c.next_turn("x").recent_tools, ["fs/read_file"]);
    /// ```
    pub fn record_tool_use(&mut self, tool: impl Into<String>) {
        let tool = tool.into();
        if let Some(sent) = self.previous.iter_mut().find(|p| p.key == tool) {
            sent.idle_turns = 0;
        }
        self.recent_tools.retain(|t| *t != tool);
        push_bounded(&mut self.recent_tools, tool);
    }

    /// Remembers tools found by `search_tools`, so they stay selected.
    ///
    /// ```
    /// let mut c = capstore::context::Conversation::new();
    /// c.record_discovered(["x/y"]);
    /// assert_eq!(c.next_turn("x").discovered, ["x/y"]);
    /// ```
    pub fn record_discovered<S: Into<String>>(&mut self, tools: impl IntoIterator<Item = S>) {
        extend_unique(&mut self.discovered, tools);
    }
}

/// Appends each of `items` that `list` does not hold yet, in order.
fn extend_unique<S: Into<String>>(list: &mut Vec<String>, items: impl IntoIterator<Item = S>) {
    for item in items {
        let item = item.into();
        if !list.contains(&item) {
            list.push(item);
        }
    }
}

fn push_bounded(queue: &mut VecDeque<String>, item: String) {
    if queue.len() == MEMORY {
        queue.pop_front();
    }
    queue.push_back(item);
}
