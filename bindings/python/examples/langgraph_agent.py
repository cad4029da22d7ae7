"""A LangGraph agent whose model sees, each turn, only the tools capstore selects.

    python bindings/python/examples/langgraph_agent.py            # a scripted model, no network
    python bindings/python/examples/langgraph_agent.py --bigtool  # langgraph-bigtool's agent

The agent has eight tools. Each turn, ``capstore.langgraph.ToolSelector`` picks the few the
conversation needs (carrying last turn's list, so the request's prefix stays cached) and the
model is bound to those alone; a ``ToolNode`` runs the calls. With ``--bigtool``, the same
tools sit in a ``langgraph-bigtool`` registry and capstore is the agent's
``retrieve_tools_function``. A real chat model plugs in where ``ScriptedChatModel`` is
(``init_chat_model("openai:gpt-4o-mini")``, say); the scripted one replays fixed replies with
tool calls and records the tools it was given, so that this runs anywhere.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from typing import Any

from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.tools import BaseTool, tool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from pydantic import Field

from capstore.langgraph import ToolSelector, bigtool_retriever, store_from_tools


@tool
def get_forecast(city: str, days: int = 3) -> str:
    """Weather forecast for a city: temperature and rain for the next days."""
    return f"{city}: sunny, 24°C, no rain for {days} days"


@tool
def search_flights(origin: str, destination: str, date: str) -> str:
    """Search flights between two cities on a date."""
    return f"TP 541 {origin}-{destination} {date} 18:40, 129 EUR"


@tool
def book_flight(flight: str) -> str:
    """Book a flight found by search_flights."""
    return f"booked {flight}"


@tool
def create_event(title: str, start: str) -> str:
    """Create an event in the user's calendar."""
    return f"created {title!r} at {start}"


@tool
def send_email(to: str, subject: str, body: str) -> str:
    """Send an email message."""
    return f"sent {subject!r} to {to}"


@tool
def read_file(path: str) -> str:
    """Read a text file from disk."""
    return f"contents of {path}"


@tool
def convert_currency(amount: float, source: str, target: str) -> str:
    """Convert an amount of money from one currency to another."""
    return f"{amount} {source} = {amount * 1.08:.2f} {target}"


@tool
def create_issue(repo: str, title: str) -> str:
    """Open an issue in a GitHub repository."""
    return f"opened {repo}#1: {title}"


TOOLS: list[BaseTool] = [
    get_forecast,
    search_flights,
    book_flight,
    create_event,
    send_email,
    read_file,
    convert_currency,
    create_issue,
]


class ScriptedChatModel(GenericFakeChatModel):
    """A chat model that replays fixed replies and records the tools bound to it each call."""

    bound: list[list[str]] = Field(default_factory=list)

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedChatModel:
        self.bound.append([t.name if isinstance(t, BaseTool) else str(t) for t in tools])
        return self


def call(name: str, args: dict[str, Any], call_id: str) -> AIMessage:
    """A reply that calls one tool."""
    return AIMessage("", tool_calls=[{"name": name, "args": args, "id": call_id, "type": "tool_call"}])


def scripted_replies() -> Iterator[AIMessage]:
    """Two turns: the weather in Lisbon, then a flight there."""
    yield call("get_forecast", {"city": "Lisbon"}, "call-1")
    yield AIMessage("Sunny in Lisbon, 24°C, no rain for three days.")
    yield call("search_flights", {"origin": "Berlin", "destination": "Lisbon", "date": "Friday"}, "call-2")
    yield AIMessage("TP 541 leaves Berlin on Friday at 18:40 for 129 EUR.")


def build_agent(llm: Any, selector: ToolSelector) -> Any:
    """A tool-calling agent that binds, each turn, the tools ``selector`` picks."""

    def agent(state: MessagesState) -> dict[str, list[BaseMessage]]:
        tools = selector(state["messages"])
        return {"messages": [llm.bind_tools(tools).invoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("agent", agent)
    graph.add_node("tools", ToolNode(TOOLS))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition, ["tools", END])
    graph.add_edge("tools", "agent")
    return graph.compile()


def run_selector_agent() -> tuple[ScriptedChatModel, list[BaseMessage]]:
    """Two user turns through the agent; the model and the whole conversation."""
    llm = ScriptedChatModel(messages=scripted_replies())
    selector = ToolSelector(TOOLS)
    agent = build_agent(llm, selector)
    messages: list[BaseMessage] = []
    for question in ["What's the weather forecast for Lisbon?", "Find me a flight there from Berlin on Friday"]:
        messages = agent.invoke({"messages": [*messages, ("user", question)]})["messages"]
        print(f"> {question}")
        print(f"  capstore sent: {llm.bound[-1]}")
        assert selector.last_selection is not None
        for line in selector.last_selection.explain().splitlines():
            print(f"    {line}")
        print(f"  {messages[-1].content}")
    return llm, messages


def run_bigtool_agent() -> tuple[ScriptedChatModel, list[BaseMessage]]:
    """langgraph-bigtool's agent with capstore as its retrieval function."""
    from langgraph_bigtool import create_agent

    registry = {f"tool-{i}": t for i, t in enumerate(TOOLS)}
    retrieve = bigtool_retriever(store_from_tools(TOOLS), registry, max_tools=3)
    llm = ScriptedChatModel(
        messages=iter(
            [
                call("retrieve_tools", {"query": "weather forecast for a city"}, "call-1"),
                call("get_forecast", {"city": "Lisbon"}, "call-2"),
                AIMessage("Sunny in Lisbon, 24°C."),
            ]
        )
    )
    agent = create_agent(llm, registry, retrieve_tools_function=retrieve).compile()
    result = agent.invoke({"messages": [("user", "What's the weather forecast for Lisbon?")]})
    for message in result["messages"]:
        if isinstance(message, ToolMessage):
            print(f"  {message.name or 'tool'}: {message.content}")
    print(f"  {result['messages'][-1].content}")
    return llm, result["messages"]


if __name__ == "__main__":
    if "--bigtool" in sys.argv[1:]:
        run_bigtool_agent()
    else:
        run_selector_agent()
