"""capstore in LangGraph and LangChain agents.

Two ways in, both over a ``capstore.Store`` of the agent's tools:

- ``ToolSelector``: a tool-selection step. Given a conversation's messages, it returns the
  LangChain tools to bind for this turn (``llm.bind_tools(selector(state["messages"]))``),
  chosen by a capstore ``Conversation``: the list is carried across turns, tools the model
  called stay fresh, and each choice has reasons (``selector.last_selection``).
- ``bigtool_retriever``: the ``retrieve_tools_function`` of ``langgraph-bigtool``'s
  ``create_agent``: capstore's selection for the model's query, as registry ids.

LangChain and LangGraph are imported only when these are used, so ``import capstore`` works
without them (``pip install 'capstore[langgraph]'`` brings them).

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
from typing import TYPE_CHECKING, Any

from ._native import MiniLm, Selection, Store

if TYPE_CHECKING:
    from langchain_core.messages import BaseMessage
    from langchain_core.tools import BaseTool

__all__ = ["ToolSelector", "bigtool_retriever", "store_from_tools", "tool_definition"]


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
