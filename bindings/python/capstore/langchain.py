"""capstore as a LangChain 1.x agent middleware: each model call of a ``create_agent`` agent is
sent only the tools its turn needs.

``ToolSelectionMiddleware(tools)`` takes the same tools as ``create_agent``. Before each model
call (``before_model``) it follows the thread's conversation, as ``capstore.langgraph``'s
``ThreadToolSelector`` does, and keeps its state in the agent's state under ``"capstore"`` (the
middleware's ``state_schema``), so the agent's checkpointer keeps it per thread and across
restarts; the model call (``wrap_model_call``) then gets ``request.override(tools=...)`` with
the turn's tools. Tools the middleware does not know (a structured-output tool, a provider's
built-in tool given as a dict) are left in the request.

>>> from langchain.agents import create_agent                       # doctest: +SKIP
>>> agent = create_agent(model, tools, middleware=[ToolSelectionMiddleware(tools)],
...                      checkpointer=saver)                         # doctest: +SKIP

Needs ``langchain`` 1.x (``pip install './bindings/python[langchain]'``); imported only here.
The settings are ``capstore.langgraph.ThreadToolSelector``'s; ``middleware.last_selection``
is the last selection made, for ``explain()``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, NotRequired

from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest, ModelResponse

from ._native import MiniLm, Selection, Store
from .langgraph import ThreadToolSelector

__all__ = ["CapstoreAgentState", "ToolSelectionMiddleware"]


class CapstoreAgentState(AgentState):
    """The agent's state and the thread's capstore conversation (the middleware's
    ``state_schema``)."""

    capstore: NotRequired[dict[str, Any]]


def _name(tool: Any) -> str | None:
    """The name a request's tool is called by (a ``BaseTool``, or a dict in a provider's
    shape)."""
    if isinstance(tool, Mapping):
        function = tool.get("function")
        return function.get("name") if isinstance(function, Mapping) else tool.get("name")
    return getattr(tool, "name", None)


class ToolSelectionMiddleware(AgentMiddleware):
    """Selects the tools of each model call of a LangChain 1.x agent (``create_agent``)."""

    state_schema = CapstoreAgentState

    def __init__(
        self,
        tools: Sequence[Any] | Mapping[str, Any],
        *,
        store: Store | None = None,
        max_tools: int | None = None,
        embedder: MiniLm | None = None,
        lexical_weight: float | None = None,
        policy: Mapping[str, Any] | None = None,
        learn: bool = True,
    ) -> None:
        super().__init__()
        self.selector = ThreadToolSelector(
            tools,
            store=store,
            max_tools=max_tools,
            embedder=embedder,
            lexical_weight=lexical_weight,
            policy=policy,
            learn=learn,
        )
        self._ours = {tool.name for tool in self.selector._tools.values()}

    @property
    def last_selection(self) -> Selection | None:
        """The last selection made (any thread's)."""
        return self.selector.last_selection

    def before_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        """Follows the thread's conversation up to this model call; the state update."""
        return self.selector(state)

    def _request(self, request: ModelRequest) -> ModelRequest:
        chosen = {tool.name for tool in self.selector.tools_for(request.state)}
        tools = [t for t in request.tools if _name(t) not in self._ours or _name(t) in chosen]
        return request.override(tools=tools)

    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]) -> Any:
        """The model call with the turn's tools."""
        return handler(self._request(request))

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> Any:
        """The model call with the turn's tools (async agents)."""
        return await handler(self._request(request))


