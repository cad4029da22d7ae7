"""Following a conversation whose state is kept elsewhere: what the framework integrations share.

An agent framework hands each model call the conversation so far (LangGraph's ``messages``,
PydanticAI's run messages, the OpenAI Agents SDK's input items). ``Follower.advance`` reads it
as ``Event``\\ s (a user's message, a tool the model called), takes the state that the previous
call left (``saved``, a small JSON-serializable dict, or ``None`` for a new conversation),
feeds the events it has not seen to a capstore ``Conversation``, and returns the tools for this
turn with the state to keep. Where the state is kept is the integration's business: in a
LangGraph thread's state (so its checkpointer keeps it, per thread, across restarts), or in a
bounded map keyed by the conversation's own history.

The state holds the native conversation (``Conversation.suspend``: earlier messages, tools
used, the carried list and the turn under way for learning), the turn's user message and the
calls seen since, and the turn's tools. A turn's calls are counted into the store's usage once,
when the next turn starts; history seen for the first time (a conversation handed in whole) is
read without learning.
"""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ._native import Selection, Store

STATE_VERSION = 1


@dataclass(frozen=True)
class Event:
    """One thing that happened in a conversation: ``kind`` "user" (``text`` is the message) or
    "call" (``text`` is the tool's name as the model called it). ``id`` stays the same for the
    same event on every call (a message id, a tool-call id, or a hash of the history up to it)."""

    id: str
    kind: str
    text: str


def chain_ids(events: Sequence[tuple[str | None, str, str]]) -> list[Event]:
    """``Event``\\ s of ``(id or None, kind, text)``: an event without an id of its own gets a
    hash of everything up to it, so that the same history gives the same ids."""
    out = []
    digest = hashlib.sha256()
    for own, kind, text in events:
        digest.update(f"{kind}\x00{text}\x00{own or ''}\x01".encode())
        out.append(Event(own or digest.copy().hexdigest()[:24], kind, text))
    return out


@dataclass
class Step:
    """What ``Follower.advance`` returns: the turn's tools (the store's qualified names, in send
    order), the selection made by this call (``None`` when the turn had begun before), and the
    state to keep for the next call."""

    names: list[str]
    selection: Selection | None
    state: dict[str, Any]


class Follower:
    """Advances conversations over one store and one set of ``Store.conversation`` settings.
    Holds no conversation itself: each call resumes one from the state given."""

    def __init__(self, store: Store, settings: Mapping[str, Any], *, learn: bool = True) -> None:
        self.store = store
        self.settings = {k: v for k, v in settings.items() if v is not None}
        self.learn = learn

    def advance(self, saved: Mapping[str, Any] | None, events: Sequence[Event]) -> Step:
        """Feeds the events after those ``saved`` has seen to the conversation; the turn's tools
        and the new state. ``saved`` ``None``: a new conversation, whose events before its last
        user message are read as history (without learning)."""
        if saved is not None and saved.get("version") != STATE_VERSION:
            saved = None
        if saved is None:
            users = [i for i, e in enumerate(events) if e.kind == "user"]
            cut = users[-1] if users else len(events)
            history, live = events[:cut], events[cut:]
            state: dict[str, Any] = {"version": STATE_VERSION, "conversation": None, "turn": None, "calls": [], "tools": []}
            selection = None
            if history:
                reader = self.store.conversation(**self.settings, learn=False)
                selection = self._feed(reader, state, history)
                state["conversation"] = _history_read(reader.suspend())
        else:
            state = {**saved, "calls": list(saved.get("calls", ())), "tools": list(saved.get("tools", ()))}
            live = self._unseen(state, events)
            selection = None
        if live:
            conversation = self.store.conversation(**self.settings, learn=self.learn)
            if state["conversation"] is not None:
                conversation.resume(state["conversation"])
            selection = self._feed(conversation, state, live) or selection
            state["conversation"] = conversation.suspend()
        return Step(list(state["tools"]), selection, state)

    @staticmethod
    def _unseen(state: Mapping[str, Any], events: Sequence[Event]) -> list[Event]:
        """The events after the turn's user message that were not fed yet; when that message
        is gone from the history (trimmed, summarized), those from the last user message on."""
        ids = [e.id for e in events]
        turn = state["turn"]
        if turn is not None and turn in ids:
            start = len(ids) - 1 - ids[::-1].index(turn) + 1
        else:
            users = [i for i, e in enumerate(events) if e.kind == "user"]
            start = users[-1] if users else len(events)
        seen = set(state["calls"])
        return [e for e in events[start:] if not (e.kind == "call" and e.id in seen)]

    def _feed(self, conversation: Any, state: dict[str, Any], events: Sequence[Event]) -> Selection | None:
        selection = None
        for event in events:
            if event.kind == "user":
                selection = conversation.select(event.text)
                state["turn"], state["calls"], state["tools"] = event.id, [], selection.names
            elif event.kind == "call":
                if event.text in self.store:
                    conversation.record_tool_use(event.text)
                state["calls"].append(event.id)
        return selection


class StateCache:
    """States of conversations kept in this process, for frameworks that hand each call the
    whole history but keep no state of ours: keyed by the id of the last event fed (a hash of
    the history up to it), the least recently used dropped past ``size``."""

    def __init__(self, size: int = 4096) -> None:
        self.size = size
        self._states: OrderedDict[str, dict[str, Any]] = OrderedDict()

    def find(self, events: Sequence[Event]) -> dict[str, Any] | None:
        """The state left after the latest of ``events`` that has one."""
        for event in reversed(events):
            state = self._states.get(event.id)
            if state is not None:
                self._states.move_to_end(event.id)
                return state
        return None

    def keep(self, events: Sequence[Event], state: dict[str, Any]) -> None:
        if events:
            self._states[events[-1].id] = state
            self._states.move_to_end(events[-1].id)
            while len(self._states) > self.size:
                self._states.popitem(last=False)


def _history_read(suspended: str) -> str:
    """A suspended conversation whose turn under way was read as history: nothing of it is left
    to count but its calls, as the next turn's previous ones."""
    data = json.loads(suspended)
    called = (data.get("turn") or {}).get("called", [])
    data["turn"] = {"called": [], "previous": list(dict.fromkeys(called))}
    return json.dumps(data)


class HistorySelector:
    """Selection for frameworks that give each model call the run's whole history and keep no
    state of ours (PydanticAI, the OpenAI Agents SDK): the state each call leaves is kept in a
    ``StateCache`` under the history it read, and the next call of the same conversation finds
    it there. A conversation this process has not seen (a restart, another worker) is read from
    its history once, without learning from the turns before its last.

    The store is the one given, or one made of the first call's tool definitions
    (``definitions(tools)``: OpenAI function dicts)."""

    def __init__(self, store: Store | None, settings: Mapping[str, Any], *, learn: bool, cache_size: int) -> None:
        self.store = store
        self._settings = settings
        self._learn = learn
        self._follower = Follower(store, settings, learn=learn) if store is not None else None
        self._cache = StateCache(cache_size)
        self.last_selection: Selection | None = None

    def follower(self, definitions: Callable[[], list[dict[str, Any]]]) -> Follower:
        if self._follower is None:
            self.store = Store.from_tools(definitions())
            self._follower = Follower(self.store, self._settings, learn=self._learn)
        return self._follower

    def names(self, follower: Follower, raw: Sequence[tuple[str | None, str, str]]) -> set[str] | None:
        """The names (as the model calls them) of the turn's tools; ``None`` before any user
        message (nothing to select with: every tool stays)."""
        events = chain_ids(raw)
        if not any(e.kind == "user" for e in events):
            return None
        step = follower.advance(self._cache.find(events), events)
        self._cache.keep(events, step.state)
        if step.selection is not None:
            self.last_selection = step.selection
        return {self.store.export_name(name) for name in step.names} | set(step.names)
