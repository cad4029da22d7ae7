"""capstore in LangGraph and LangChain agents: each model call gets only the tools its turn needs.

Three ways in, all over a ``capstore.Store`` of the agent's tools:

- ``ThreadToolSelector``: per-thread selection for LangGraph graphs. The conversation's state
  (what the selector needs to go on: earlier messages, tools used, the list carried across
  turns, the turn under way) is kept in the graph's state under one key (``"capstore"``), so
  the graph's checkpointer keeps it per thread (``config["configurable"]["thread_id"]``) and
  across restarts: two threads taking turns never share tools. Use it in a node of your own
  (``tools, update = selector.select(state)``), or in ``create_react_agent`` as its
  ``pre_model_hook`` with ``selector.model(llm)`` as the model (see ``ThreadToolSelector``).
  For LangChain 1.x's ``create_agent``, ``capstore.langchain.ToolSelectionMiddleware`` does the
  same as a middleware.
- ``ToolSelector``: the same selection kept in the Python object, for one conversation at a
  time (no checkpointer, one user): ``llm.bind_tools(selector(state["messages"]))``.
- ``bigtool_retriever``: the ``retrieve_tools_function`` of ``langgraph-bigtool``'s
  ``create_agent``: capstore's selection for the model's query, as registry ids.

LangChain and LangGraph are imported only when these are used, so ``import capstore`` works
without them. The package is not on an index: from a clone,
``pip install './bindings/python[langgraph]'`` brings the versions these were tested with
(langgraph 1.0.1 with langgraph-prebuilt 1.0.1: ``langgraph-bigtool`` 0.0.3 fails with a newer
langgraph-prebuilt).

>>> from langchain_core.tools import tool
>>> @tool
... def get_forecast(city: str) -> str:
...     '''Weather forecast for a city.'''
...     return "sunny"
>>> selector = ToolSelector([get_forecast])
>>> [t.name for t in selector([("user", "what's the weather forecast for Oslo?")])]
['get_forecast']
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NotRequired

from ._follow import Event, Follower, chain_ids
from ._native import MiniLm, Selection, Store

if TYPE_CHECKING:
    from langchain_core.messages import BaseMessage
    from langchain_core.tools import BaseTool

__all__ = [
    "STATE_KEY",
    "ThreadToolSelector",
    "ToolSelector",
    "bigtool_retriever",
    "message_events",
    "store_from_tools",
    "tool_definition",
]

STATE_KEY = "capstore"
"""The graph-state key ``ThreadToolSelector`` keeps a thread's conversation under."""


def tool_definition(tool: BaseTool | Callable[..., Any]) -> dict[str, Any]:
    """The OpenAI function definition of a LangChain tool (or of a plain function with a
    docstring), as LangChain writes it (``convert_to_openai_tool``)."""
    from langchain_core.utils.function_calling import convert_to_openai_tool

    return convert_to_openai_tool(tool)


def _tool_name(tool: BaseTool | Callable[..., Any]) -> str:
    """The name a LangChain tool (or a plain function) is called by."""
    name = getattr(tool, "name", None)
    return name if isinstance(name, str) else tool.__name__


def store_from_tools(
    tools: Iterable[BaseTool | Callable[..., Any]], *, source: str | None = None
) -> Store:
    """A capstore ``Store`` of LangChain tools (or plain functions): their definitions, as
    LangChain would send them, indexed for selection. With ``source``, namespaced
    ``source/name`` as an MCP server's tools are."""
    return Store.from_tools([tool_definition(t) for t in tools], source=source)


def _text(message: BaseMessage) -> str:
    """A message's text: its content, or the text blocks of a multi-part content."""
    content = message.content
    if isinstance(content, str):
        return content
    parts = []
    for block in content:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, dict) and block.get("type") == "text":
            parts.append(str(block.get("text", "")))
    return " ".join(parts)


class ToolSelector:
    """A LangChain tool-selection step over a capstore ``Conversation``.

    ``selector(messages)`` returns the LangChain tools to bind for the conversation's current
    turn: the latest user message selects them (read with the conversation so far), the tool
    calls in the AI messages are recorded (so called tools stay in the carried list), and an
    agent's further model calls within the same turn get the same tools. Give it the whole
    message list each time (a LangGraph state's ``messages``); one selector follows one
    conversation, and a shorter list than it has seen starts a new one (``reset()`` does too).
    A graph with several threads (a checkpointer, several users) needs ``ThreadToolSelector``,
    which keeps each thread's conversation in the thread's state: this one would carry one
    thread's tools into another's turns.

    ``tools`` are the LangChain tools (or plain functions) the agent can run, each found in
    the store by its name; or a mapping of store names (qualified or exported) to them, for a
    store where a tool's own name is ambiguous (two sources offer it). ``store`` is the
    capstore store to select from; by default one made of ``tools`` (``store_from_tools``).
    A store may hold more tools than ``tools`` (the bundled catalog, say): selected tools
    without an implementation here are left out. The other settings are
    ``Store.conversation``'s.
    """

    def __init__(
        self,
        tools: Sequence[BaseTool | Callable[..., Any]] | Mapping[str, BaseTool | Callable[..., Any]],
        *,
        store: Store | None = None,
        max_tools: int | None = None,
        embedder: MiniLm | None = None,
        lexical_weight: float | None = None,
        policy: Mapping[str, Any] | None = None,
    ) -> None:
        from langchain_core.tools import BaseTool, StructuredTool

        named = dict(tools) if isinstance(tools, Mapping) else {_tool_name(t): t for t in tools}
        self.store = store if store is not None else store_from_tools(named.values())
        self._settings: dict[str, Any] = {
            "max_tools": max_tools,
            "embedder": embedder,
            "lexical_weight": lexical_weight,
            "policy": dict(policy) if policy is not None else None,
        }
        self._tools: dict[str, BaseTool] = {}
        for name, tool in named.items():
            runnable = tool if isinstance(tool, BaseTool) else StructuredTool.from_function(tool)
            self._tools[self.store.resolve(name)] = runnable
        self.reset()

    def reset(self) -> None:
        """Forgets the conversation: the next call starts a new one."""
        self.conversation = self.store.conversation(**self._settings)
        self.last_selection: Selection | None = None
        self._seen = 0
        self._selected: list[BaseTool] = []

    def __call__(self, messages: Sequence[Any]) -> list[BaseTool]:
        """The LangChain tools to bind for the turn of the last user message in ``messages``
        (LangChain messages, or anything ``convert_to_messages`` takes)."""
        from langchain_core.messages import AIMessage, HumanMessage, convert_to_messages

        messages = convert_to_messages(messages)
        if len(messages) < self._seen:
            self.reset()
        for message in messages[self._seen :]:
            if isinstance(message, HumanMessage):
                self.last_selection = self.conversation.select(_text(message))
                self._selected = [
                    self._tools[name] for name in self.last_selection.names if name in self._tools
                ]
            elif isinstance(message, AIMessage):
                for call in message.tool_calls:
                    if call["name"] in self.store:
                        self.conversation.record_tool_use(call["name"])
        self._seen = len(messages)
        return list(self._selected)


def message_events(messages: Sequence[Any]) -> list[Event]:
    """A LangChain message list as the events a conversation follows: each human message's
    text, each tool call of an AI message (by the tool's name); ids from the messages' and
    calls' own ids where they have them."""
    from langchain_core.messages import AIMessage, HumanMessage, convert_to_messages

    raw: list[tuple[str | None, str, str]] = []
    for message in convert_to_messages(messages):
        if isinstance(message, HumanMessage):
            raw.append((message.id, "user", _text(message)))
        elif isinstance(message, AIMessage):
            for call in message.tool_calls:
                raw.append((call.get("id"), "call", call["name"]))
    return chain_ids(raw)


def _runnables(
    tools: Sequence[BaseTool | Callable[..., Any]] | Mapping[str, BaseTool | Callable[..., Any]],
    store: Store | None,
) -> tuple[Store, dict[str, BaseTool]]:
    """The store (given, or made of ``tools``) and the tools as LangChain tools by their
    qualified names in it."""
    from langchain_core.tools import BaseTool, StructuredTool

    named = dict(tools) if isinstance(tools, Mapping) else {_tool_name(t): t for t in tools}
    store = store if store is not None else store_from_tools(named.values())
    runnable = {}
    for name, tool in named.items():
        runnable[store.resolve(name)] = tool if isinstance(tool, BaseTool) else StructuredTool.from_function(tool)
    return store, runnable


class ThreadToolSelector:
    """Tool selection whose conversation lives in the LangGraph thread's state.

    ``select(state)`` reads the state's ``messages`` and its ``"capstore"`` entry (what the last
    call of the same thread left), and returns the LangChain tools for this model call with the
    state update to return from the node: ``{"capstore": {...}}``, a small JSON-serializable
    dict (the conversation's state, the turn's user message and calls seen, the turn's tools).
    A graph whose state has that key (``CapstoreState``, or ``capstore: NotRequired[dict]`` in
    your own) and a checkpointer keeps it per thread; a process that starts again over the same
    checkpoints goes on where each thread stopped. The selector itself holds no conversation:
    one serves every thread.

    In a graph of your own::

        selector = ThreadToolSelector(tools)
        def agent(state: CapstoreState):
            tools, update = selector.select(state)
            return {"messages": [llm.bind_tools(tools).invoke(state["messages"])], **update}

    In ``langgraph.prebuilt.create_react_agent``: the selector is the ``pre_model_hook`` (it
    returns the update) and ``selector.model(llm)`` the model (it binds the tools the hook
    chose); the state schema needs the key::

        agent = create_react_agent(selector.model(llm), tools, pre_model_hook=selector,
                                   state_schema=selector.agent_state(), checkpointer=saver)

    A new user message selects (read with the thread's conversation so far); the model's tool
    calls are recorded; further model calls of the same turn get the same tools. When nothing
    matches, the turn gets no tools (or the policy's ``on_no_match``): ``last_selection``
    says so (``no_match``, ``explain()``). ``tools`` and ``store`` are ``ToolSelector``'s; the
    other settings are ``Store.conversation``'s. With ``learn`` (the default) each turn's calls
    are counted into the store's usage when the thread's next turn starts.
    """

    def __init__(
        self,
        tools: Sequence[BaseTool | Callable[..., Any]] | Mapping[str, BaseTool | Callable[..., Any]],
        *,
        store: Store | None = None,
        key: str = STATE_KEY,
        max_tools: int | None = None,
        embedder: MiniLm | None = None,
        lexical_weight: float | None = None,
        policy: Mapping[str, Any] | None = None,
        learn: bool = True,
    ) -> None:
        self.store, self._tools = _runnables(tools, store)
        self.key = key
        settings = {"max_tools": max_tools, "embedder": embedder, "lexical_weight": lexical_weight}
        settings["policy"] = dict(policy) if policy is not None else None
        self._follower = Follower(self.store, settings, learn=learn)
        self.last_selection: Selection | None = None
        """The selection of the last call that made one (any thread's): for ``explain()``."""

    def select(self, state: Mapping[str, Any]) -> tuple[list[BaseTool], dict[str, Any]]:
        """The tools for this model call of the thread whose state is ``state``, and the state
        update that keeps the thread's conversation (``{key: ...}``)."""
        step = self._follower.advance(state.get(self.key), message_events(state["messages"]))
        if step.selection is not None:
            self.last_selection = step.selection
        return self._chosen(step.names), {self.key: step.state}

    def __call__(self, state: Mapping[str, Any]) -> dict[str, Any]:
        """The state update alone: the selector as a node or ``create_react_agent``'s
        ``pre_model_hook``."""
        return self.select(state)[1]

    def tools_for(self, state: Mapping[str, Any]) -> list[BaseTool]:
        """The tools the thread's turn was given, as kept in ``state`` (no new selection): what
        a model bound after the hook ran gets."""
        saved = state.get(self.key) or {}
        return self._chosen(saved.get("tools", ()))

    def model(self, llm: Any) -> Callable[[Any, Any], Any]:
        """``create_react_agent``'s dynamic model: ``llm`` bound, each call, to the tools the
        ``pre_model_hook`` (this selector) chose for the thread."""

        def bound(state: Any, runtime: Any = None) -> Any:
            return llm.bind_tools(self.tools_for(state))

        return bound

    def agent_state(self) -> type:
        """``create_react_agent``'s ``AgentState`` with the ``"capstore"`` key: its
        ``state_schema`` (a selector with another ``key`` declares its own)."""
        if self.key != STATE_KEY:
            raise ValueError(f"agent_state() has the key {STATE_KEY!r}; declare {self.key!r} in a state schema of yours")
        from langgraph.prebuilt.chat_agent_executor import AgentState

        class CapstoreAgentState(AgentState):
            """``create_react_agent``'s state and the thread's capstore conversation."""

            capstore: NotRequired[dict[str, Any]]

        return CapstoreAgentState

    def _chosen(self, names: Iterable[str]) -> list[BaseTool]:
        return [self._tools[name] for name in names if name in self._tools]


def __getattr__(name: str) -> Any:
    """``CapstoreState``: LangGraph's ``MessagesState`` with the ``"capstore"`` key, made when
    first asked for (LangGraph is imported only then)."""
    if name == "CapstoreState":
        from langgraph.graph import MessagesState

        class CapstoreState(MessagesState):
            """``MessagesState`` and the thread's capstore conversation (``ThreadToolSelector``)."""

            capstore: NotRequired[dict[str, Any]]

        globals()["CapstoreState"] = CapstoreState
        return CapstoreState
    raise AttributeError(name)


def bigtool_retriever(
    store: Store,
    tool_registry: Mapping[str, BaseTool | Callable[..., Any]],
    *,
    max_tools: int | None = None,
    embedder: MiniLm | None = None,
    lexical_weight: float | None = None,
    policy: Mapping[str, Any] | None = None,
) -> Callable[[str], list[str]]:
    """A ``retrieve_tools_function`` for ``langgraph_bigtool.create_agent``.

    ``store`` holds the registry's tools (e.g. ``store_from_tools(tool_registry.values())``);
    ``tool_registry`` maps ids to tools, as ``create_agent`` takes it. The function returned
    runs capstore's selection (``Store.select``) for the model's query and returns the ids of
    the selected tools, best placed first; selected tools that are not in the registry are
    left out. The settings are ``Store.select``'s.
    """
    ids: dict[str, str] = {}
    for tool_id, tool in tool_registry.items():
        name = _tool_name(tool)
        if name in store:
            ids[store.resolve(name)] = tool_id
    settings: dict[str, Any] = {
        "max_tools": max_tools,
        "embedder": embedder,
        "lexical_weight": lexical_weight,
        "policy": dict(policy) if policy is not None else None,
    }

    def retrieve_tools(query: str) -> list[str]:
        """Retrieve the tools to use, given a search query describing the task."""
        selection = store.select(query, **settings)
        return [ids[name] for name in selection.names if name in ids]

    return retrieve_tools
