"""Tool selection that belongs to the LangGraph thread: two threads taking turns over one
SQLite checkpointer, then the process started again over the same checkpoints."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from fakes import EMAIL, FORECASTS, TOOLS, RecordingChatModel, call
from langchain_core.messages import AIMessage
from langgraph.checkpoint.memory import InMemorySaver

import capstore
from capstore._follow import Follower, chain_ids
from capstore.langgraph import ThreadToolSelector

AGENT = Path(__file__).resolve().parent / "threads_agent.py"


def run_phase(db: Path, phase: str) -> list[dict[str, Any]]:
    run = subprocess.run([sys.executable, str(AGENT), str(db), phase], capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


def test_threads_keep_their_own_tools_across_a_restart(tmp_path: Path) -> None:
    db = tmp_path / "checkpoints.sqlite"
    a1, b1, a2 = run_phase(db, "1")
    b2, a3 = run_phase(db, "2")  # a new process, a new graph, the same checkpoints
    for turn in (a1, a2, a3):
        assert turn["thread"] == "A"
        for bound in turn["bound"]:
            assert not set(bound) & {"send_email"}, turn
    for turn in (b1, b2):
        assert turn["thread"] == "B"
        for bound in turn["bound"]:
            assert not set(bound) & FORECASTS, turn  # thread A's forecasts never reach B
    assert {"forecast_revenue", "forecast_demand"} <= set(a1["bound"][0])
    assert a1["bound"][1] == a1["bound"][0]  # the turn's second model call: the same tools
    assert EMAIL <= set(b1["bound"][0])
    assert "forecast_by_region" in a2["bound"][0]
    # After the restart each thread goes on from its own carried list, read from the checkpoint.
    assert b2["bound"][0][: len(b1["bound"][0])] == b1["bound"][0]
    assert a3["bound"][0][: len(a2["bound"][0])] == a2["bound"][0]


def test_create_react_agent_recipe() -> None:
    from langgraph.prebuilt import create_react_agent

    selector = ThreadToolSelector(TOOLS)
    llm = RecordingChatModel(
        messages=iter([call("forecast_revenue", {"quarter": "Q3"}, "r1"), AIMessage("4.2M."), AIMessage("Sent.")])
    )
    agent = create_react_agent(
        selector.model(llm), TOOLS, pre_model_hook=selector, state_schema=selector.agent_state(), checkpointer=InMemorySaver()
    )
    a = agent.invoke({"messages": [("user", "forecast Q3 revenue")]}, {"configurable": {"thread_id": "A"}})
    b = agent.invoke({"messages": [("user", "email the Q3 invoice to Bob")]}, {"configurable": {"thread_id": "B"}})
    first, after_call, other = llm.bound
    assert "forecast_revenue" in first and after_call == first and "send_email" not in first
    assert EMAIL <= set(other) and not set(other) & FORECASTS
    assert a["messages"][-1].content == "4.2M." and b["messages"][-1].content == "Sent."
    assert json.dumps(b["capstore"])  # the thread's state is plain JSON


def test_state_is_small_and_json() -> None:
    selector = ThreadToolSelector(TOOLS)
    _, update = selector.select({"messages": [("user", "forecast Q3 revenue and demand")]})
    state = update["capstore"]
    assert set(state) == {"version", "conversation", "turn", "calls", "tools"}
    assert len(json.dumps(state)) < 4000
    assert selector.last_selection is not None and "forecast_revenue" in selector.last_selection.names


def test_a_threads_turns_are_learned_once_whatever_the_calls_that_follow_them() -> None:
    store = capstore.Store.from_tools(
        [
            {"name": "mail_login", "description": "Log in to the mail service with a user id", "source": "mail"},
            {"name": "send_message", "description": "Send a message to a contact", "source": "mail"},
        ]
    )
    follower = Follower(store, {})
    raw: list[tuple[str | None, str, str]] = []
    state = None
    for turn in range(3):
        # Each model call of the turn resumes the thread's state, as each LangGraph step does.
        raw.append((f"u{turn}", "user", "send a message to Ana"))
        state = follower.advance(state, chain_ids(raw)).state
        raw += [(f"c{turn}a", "call", "mail_login"), (f"c{turn}b", "call", "send_message")]
        state = follower.advance(state, chain_ids(raw)).state
        state = follower.advance(state, chain_ids(raw)).state  # a step that saw nothing new
    raw.append(("u3", "user", "thanks"))
    follower.advance(state, chain_ids(raw))
    later = store.conversation(learn=False).select("send a message to Bob")
    login = {t.name: t for t in later}["mail/mail_login"]
    assert "called before mail/send_message in 3 of its 3 turns" in login.reasons
