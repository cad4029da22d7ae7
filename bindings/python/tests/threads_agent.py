"""A LangGraph agent over a SQLite checkpointer whose threads keep their own tool selection
(``capstore.langgraph.ThreadToolSelector``), run in a process of its own by test_threads.py:

    python threads_agent.py DB PHASE     # PHASE 1: three turns; 2: two more, after a restart

Prints, as JSON, each turn's thread, message and the tools bound to each of its model calls.
"""

from __future__ import annotations

import json
import sqlite3
import sys
from typing import Any

from fakes import TOOLS, RecordingChatModel, call
from langchain_core.messages import AIMessage
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from capstore.langgraph import CapstoreState, ThreadToolSelector

PHASES: dict[str, list[tuple[str, str, list[AIMessage]]]] = {
    "1": [
        ("A", "forecast Q3 revenue and demand", [call("forecast_revenue", {"quarter": "Q3"}, "a1"), AIMessage("4.2M, demand +8%.")]),
        ("B", "email the Q3 invoice to Bob", [call("find_invoice", {"quarter": "Q3"}, "b1"), AIMessage("Found INV-Q3-001; sending.")]),
        ("A", "break the forecast down by region", [AIMessage("EMEA 40%, Americas 45%, APAC 15%.")]),
    ],
    "2": [
        ("B", "and cc Alice on it too", [AIMessage("Done.")]),
        ("A", "same for Q4 please", [AIMessage("Q4: 4.6M.")]),
    ],
}


def build(llm: RecordingChatModel, selector: ThreadToolSelector, saver: Any) -> Any:
    def agent(state: CapstoreState) -> dict[str, Any]:
        tools, update = selector.select(state)
        return {"messages": [llm.bind_tools(tools).invoke(state["messages"])], **update}

    graph = StateGraph(CapstoreState)
    graph.add_node("agent", agent)
    graph.add_node("tools", ToolNode(TOOLS))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition, ["tools", END])
    graph.add_edge("tools", "agent")
    return graph.compile(checkpointer=saver)


def main(db: str, phase: str) -> list[dict[str, Any]]:
    turns = PHASES[phase]
    llm = RecordingChatModel(messages=iter([reply for *_, replies in turns for reply in replies]))
    with sqlite3.connect(db, check_same_thread=False) as connection:
        graph = build(llm, ThreadToolSelector(TOOLS), SqliteSaver(connection))
        out = []
        for thread, message, _ in turns:
            before = len(llm.bound)
            graph.invoke({"messages": [("user", message)]}, {"configurable": {"thread_id": thread}})
            out.append({"thread": thread, "message": message, "bound": llm.bound[before:]})
    return out


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], sys.argv[2])))
