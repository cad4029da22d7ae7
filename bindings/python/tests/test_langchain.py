"""capstore.langchain: LangChain 1.x's create_agent with the tool-selection middleware, over a
fake chat model, two threads on one checkpointer."""

from __future__ import annotations

from fakes import EMAIL, FORECASTS, TOOLS, RecordingChatModel, call
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver

from capstore.langchain import ToolSelectionMiddleware


def test_create_agent_middleware_selects_per_thread() -> None:
    middleware = ToolSelectionMiddleware(TOOLS)
    llm = RecordingChatModel(
        messages=iter(
            [
                call("forecast_revenue", {"quarter": "Q3"}, "c1"),
                AIMessage("4.2M."),
                AIMessage("Sent to Bob."),
                AIMessage("EMEA 40%."),
            ]
        )
    )
    agent = create_agent(llm, TOOLS, middleware=[middleware], checkpointer=InMemorySaver())
    a = {"configurable": {"thread_id": "A"}}
    b = {"configurable": {"thread_id": "B"}}
    first = agent.invoke({"messages": [("user", "forecast Q3 revenue and demand")]}, a)
    agent.invoke({"messages": [("user", "email the Q3 invoice to Bob")]}, b)
    agent.invoke({"messages": [("user", "break the forecast down by region")]}, a)
    a1, a1_after_call, b1, a2 = llm.bound
    assert {"forecast_revenue", "forecast_demand"} <= set(a1) and "send_email" not in a1
    assert a1_after_call == a1  # the same turn keeps its tools
    assert EMAIL <= set(b1) and not set(b1) & FORECASTS
    assert a2[: len(a1)] == a1 and "forecast_by_region" in a2
    assert len(a1) < len(TOOLS)
    assert any(isinstance(m, ToolMessage) and "4.2M" in m.content for m in first["messages"])
    assert middleware.last_selection is not None
    state = agent.get_state(a).values["capstore"]
    assert "forecast_by_region" in state["tools"]


def test_unknown_tools_are_left_in_the_request() -> None:
    middleware = ToolSelectionMiddleware(TOOLS[:3])
    llm = RecordingChatModel(messages=iter([AIMessage("ok")]))
    agent = create_agent(llm, TOOLS, middleware=[middleware])
    agent.invoke({"messages": [("user", "revenue from the pipeline")]})
    (bound,) = llm.bound
    assert "forecast_revenue" in bound and "forecast_by_region" not in bound
    assert {"send_email", "get_weather", "create_issue"} <= set(bound)  # not the middleware's
