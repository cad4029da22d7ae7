"""capstore: the few tool definitions that should reach an agent's model, each turn.

A store holds an agent's tools (from a catalog file, the bundled catalog, tool dicts in
OpenAI, Anthropic or MCP shape, or live MCP servers). Each turn, ``Store.select`` (or a
``Conversation``'s ``select``, which carries the tool list across turns) returns the tool
definitions to send, in the provider's shape, with why each was chosen. Selection is BM25
over the tools' text, optionally fused with a local sentence embedder (``MiniLm``).

>>> import capstore
>>> store = capstore.Store.bundled()
>>> selection = store.select("will it rain in Oslo tomorrow?", max_tools=5)
>>> "weather/get_forecast" in selection.names
True
>>> tools = selection.definitions          # the request's `tools`, in OpenAI's shape
>>> print(selection.explain())             # doctest: +SKIP
ask_user                         pinned: pinned
...
get_forecast                     asked for by this message: BM25 9.41; skill weather matched (11.02)

The work is done by the Rust library (``capstore._native``); this package adds the
LangGraph and LangChain glue in ``capstore.langgraph`` (imported on demand).
"""

from ._native import (
    CapstoreError,
    CatalogError,
    Conversation,
    EmbedError,
    McpError,
    MiniLm,
    PolicyError,
    SelectedTool,
    Selection,
    SelectError,
    Store,
    ToolError,
    ToolNotFoundError,
    __version__,
    estimate_tokens,
)

__all__ = [
    "CapstoreError",
    "CatalogError",
    "Conversation",
    "EmbedError",
    "McpError",
    "MiniLm",
    "PolicyError",
    "SelectError",
    "SelectedTool",
    "Selection",
    "Store",
    "ToolError",
    "ToolNotFoundError",
    "__version__",
    "estimate_tokens",
]
