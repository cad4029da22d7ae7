"""capstore in PydanticAI agents: each step's tools prepared by capstore's selection.

PydanticAI asks, before every model request of a run, which tool definitions to send (its
per-step tool preparation, a ``ToolsPrepareFunc``: ``(ctx, tool_defs) -> tool_defs``).
``ToolSelection`` is one: it reads the run's messages (``ctx.messages``: the user's prompts and
the tools the model called), follows the conversation with a capstore ``Conversation`` and
keeps only the turn's tools. Give it to the agent as the ``PrepareTools`` capability::

    from pydantic_ai import Agent
    selection = ToolSelection()
    agent = Agent(model, tools=[...], capabilities=[selection.capability()])

By default the store is made of the agent's own tool definitions the first time it is asked
(their names, descriptions and parameter schemas); give ``store=`` to select from another
(a tool of the agent that the store does not hold is always sent). A conversation's state is
kept in this process under the history that led to it (least recently used dropped past
``cache_size``); a conversation it has not seen, continued with ``message_history`` after a
restart, is read from its history once. A turn with nothing matched gets no tools of the store
(``last_selection.explain()`` says so). The settings are ``Store.conversation``'s.

Needs ``pydantic-ai`` (``pip install './bindings/python[pydantic-ai]'``); imported only here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic_ai import RunContext
from pydantic_ai.capabilities import PrepareTools
from pydantic_ai.messages import ModelRequest, ModelResponse, ToolCallPart, UserPromptPart
from pydantic_ai.tools import ToolDefinition

from ._follow import HistorySelector
from ._native import MiniLm, Selection, Store

__all__ = ["ToolSelection", "run_events"]


def _prompt_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return " ".join(part for part in content if isinstance(part, str))


def run_events(messages: list[Any]) -> list[tuple[str | None, str, str]]:
    """A run's messages as events: each user prompt, each tool call (by name and call id)."""
    events: list[tuple[str | None, str, str]] = []
    for message in messages:
        if isinstance(message, ModelRequest):
            for part in message.parts:
                if isinstance(part, UserPromptPart):
                    events.append((None, "user", _prompt_text(part.content)))
        elif isinstance(message, ModelResponse):
            for part in message.parts:
                if isinstance(part, ToolCallPart):
                    events.append((part.tool_call_id or None, "call", part.tool_name))
    return events


class ToolSelection:
    """A ``ToolsPrepareFunc`` that keeps, each step, the tools capstore selects for the turn."""

    def __init__(
        self,
        store: Store | None = None,
        *,
        max_tools: int | None = None,
        embedder: MiniLm | None = None,
        lexical_weight: float | None = None,
        policy: Mapping[str, Any] | None = None,
        learn: bool = True,
        cache_size: int = 4096,
    ) -> None:
        settings = {"max_tools": max_tools, "embedder": embedder, "lexical_weight": lexical_weight}
        settings["policy"] = dict(policy) if policy is not None else None
        self._selector = HistorySelector(store, settings, learn=learn, cache_size=cache_size)

    @property
    def store(self) -> Store | None:
        """The store selected from (made of the agent's tools at the first step, by default)."""
        return self._selector.store

    @property
    def last_selection(self) -> Selection | None:
        """The last selection made, for ``explain()``."""
        return self._selector.last_selection

    def __call__(self, ctx: RunContext[Any], tool_defs: list[ToolDefinition]) -> list[ToolDefinition]:
        """The step's tool definitions: those of the turn's selection, and those the store
        does not hold."""
        follower = self._selector.follower(lambda: [_definition(d) for d in tool_defs])
        names = self._selector.names(follower, run_events(ctx.messages))
        if names is None:
            return tool_defs
        return [d for d in tool_defs if d.name in names or d.name not in follower.store]

    def capability(self) -> PrepareTools:
        """This selection as PydanticAI's ``PrepareTools`` capability (``Agent(capabilities=...)``)."""
        return PrepareTools(self)


def _definition(tool: ToolDefinition) -> dict[str, Any]:
    """A PydanticAI tool definition as an OpenAI function dict, for a store."""
    return {
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description or "",
            "parameters": tool.parameters_json_schema,
        },
    }
