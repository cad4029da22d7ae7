"""capstore in the OpenAI Agents SDK: each model call of a run sent only the turn's tools.

The SDK gives its ``Model`` every request whole: the input items (the user's messages, the
model's function calls) and the agent's tools. ``SelectingModel`` wraps the model an agent
would use and, on each call, follows the conversation in those items with a capstore
``Conversation`` and passes on only the turn's function tools; the SDK still runs any tool of
the agent the model calls. One wrapped model serves every run and every conversation::

    from agents import Agent, Runner
    from agents.models.openai_responses import OpenAIResponsesModel
    model = SelectingModel(OpenAIResponsesModel("gpt-4.1", openai_client))
    agent = Agent(name="assistant", model=model, tools=[...])
    result = await Runner.run(agent, "email the Q3 invoice to Bob")

By default the store is made of the agent's function tools the first time the model is called
(their names, descriptions and parameter schemas); give ``store=`` to select from another (a
tool the store does not hold, or one that is not a ``FunctionTool``, is always passed on). A
conversation's state is kept in this process under the items that led to it (least recently
used dropped past ``cache_size``); a conversation it has not seen (a session continued after a
restart) is read from its items once. A turn with nothing matched gets no tools of the store
(``model.last_selection.explain()`` says so). The settings are ``Store.conversation``'s.

Needs ``openai-agents`` (``pip install './bindings/python[openai-agents]'``); imported only
here.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any

from agents.models.interface import Model
from agents.tool import FunctionTool

from ._follow import HistorySelector
from ._native import MiniLm, Selection, Store

__all__ = ["SelectingModel", "input_events"]


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts = []
    for part in content or ():
        text = part.get("text") if isinstance(part, Mapping) else getattr(part, "text", None)
        if isinstance(text, str):
            parts.append(text)
    return " ".join(parts)


def input_events(items: str | list[Any]) -> list[tuple[str | None, str, str]]:
    """A request's input items as events: each user message, each function call (by name and
    call id)."""
    if isinstance(items, str):
        return [(None, "user", items)]
    events: list[tuple[str | None, str, str]] = []
    for item in items:
        get = item.get if isinstance(item, Mapping) else lambda key, item=item: getattr(item, key, None)
        if get("type") == "function_call":
            events.append((get("call_id") or get("id"), "call", get("name")))
        elif get("role") == "user" and get("type") in (None, "message"):
            events.append((None, "user", _text(get("content"))))
    return events


class SelectingModel(Model):
    """An Agents SDK ``Model`` that passes on, each call, only the turn's tools."""

    def __init__(
        self,
        model: Model,
        *,
        store: Store | None = None,
        max_tools: int | None = None,
        embedder: MiniLm | None = None,
        lexical_weight: float | None = None,
        policy: Mapping[str, Any] | None = None,
        learn: bool = True,
        cache_size: int = 4096,
    ) -> None:
        self.model = model
        settings = {"max_tools": max_tools, "embedder": embedder, "lexical_weight": lexical_weight}
        settings["policy"] = dict(policy) if policy is not None else None
        self._selector = HistorySelector(store, settings, learn=learn, cache_size=cache_size)

    @property
    def store(self) -> Store | None:
        """The store selected from (made of the agent's tools at the first call, by default)."""
        return self._selector.store

    @property
    def last_selection(self) -> Selection | None:
        """The last selection made, for ``explain()``."""
        return self._selector.last_selection

    def select(self, items: str | list[Any], tools: list[Any]) -> list[Any]:
        """The tools to pass on for a request of ``items``."""
        functions = [t for t in tools if isinstance(t, FunctionTool)]
        follower = self._selector.follower(
            lambda: [
                {"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.params_json_schema}}
                for t in functions
            ]
        )
        names = self._selector.names(follower, input_events(items))
        if names is None:
            return tools
        return [t for t in tools if not isinstance(t, FunctionTool) or t.name in names or t.name not in follower.store]

    async def get_response(self, system_instructions: Any, input: Any, model_settings: Any, tools: Any, *args: Any, **kwargs: Any) -> Any:
        return await self.model.get_response(
            system_instructions, input, model_settings, self.select(input, tools), *args, **kwargs
        )

    def stream_response(self, system_instructions: Any, input: Any, model_settings: Any, tools: Any, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        return self.model.stream_response(
            system_instructions, input, model_settings, self.select(input, tools), *args, **kwargs
        )

    def get_retry_advice(self, request: Any) -> Any:
        return self.model.get_retry_advice(request)

    async def close(self) -> None:
        await self.model.close()
