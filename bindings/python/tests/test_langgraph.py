"""capstore.langgraph end to end: LangGraph agents over a scripted chat model, no network."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool

import capstore
from capstore.langgraph import ToolSelector, bigtool_retriever, store_from_tools, tool_definition

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "langgraph_agent.py"


@pytest.fixture(scope="module")
def example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("langgraph_agent", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_agent_gets_capstores_selection_and_calls_a_tool(example: ModuleType) -> None:
    llm, messages = example.run_selector_agent()
    # Each model call was bound to capstore's selection, not to all eight tools.
    first, after_tool, second, _ = llm.bound
    assert "get_forecast" in first and "create_issue" not in first
    assert len(first) < len(example.TOOLS)
    assert after_tool == first  # the same turn keeps its tools
    assert "search_flights" in second
    assert second[: len(first)] == first  # the list carried across turns
    results = [m for m in messages if isinstance(m, ToolMessage)]
    assert [m.name for m in results] == ["get_forecast", "search_flights"]
    assert "sunny" in results[0].content and "TP 541" in results[1].content
    assert messages[-1].content.startswith("TP 541")


def test_bigtool_agent_retrieves_with_capstore(example: ModuleType) -> None:
    llm, messages = example.run_bigtool_agent()
    retrieved = next(m for m in messages if isinstance(m, ToolMessage) and "Available tools" in m.content)
    assert "get_forecast" in retrieved.content
    assert "get_forecast" in llm.bound[1]  # bound after retrieval
    result = next(m for m in messages if isinstance(m, ToolMessage) and m.name == "get_forecast")
    assert "sunny" in result.content


def test_the_example_runs_as_a_script() -> None:
    for args in [[], ["--bigtool"]]:
        run = subprocess.run([sys.executable, str(EXAMPLE), *args], capture_output=True, text=True, check=False)
        assert run.returncode == 0, run.stderr
        assert "sunny" in run.stdout.lower()


@tool
def get_forecast(city: str) -> str:
    """Weather forecast for a city."""
    return "sunny"


@tool
def send_email(to: str, body: str) -> str:
    """Send an email message."""
    return "sent"


def plain_function(path: str) -> str:
    """Read a text file from disk."""
    return path


def test_selector_follows_a_conversation() -> None:
    selector = ToolSelector([get_forecast, send_email, plain_function])
    assert [t.name for t in selector([("user", "weather forecast for Oslo?")])] == ["get_forecast"]
    assert selector.last_selection is not None and selector.last_selection.names == ["get_forecast"]
    history = [
        HumanMessage("weather forecast for Oslo?"),
        AIMessage("", tool_calls=[{"name": "get_forecast", "args": {"city": "Oslo"}, "id": "1", "type": "tool_call"}]),
        ToolMessage("sunny", tool_call_id="1"),
    ]
    # The same turn: the same tools, no new selection.
    selection = selector.last_selection
    assert [t.name for t in selector(history)] == ["get_forecast"]
    assert selector.last_selection is selection
    # A new turn: carried on, the new tool appended; the plain function is a tool too.
    tools = selector([*history, AIMessage("Sunny."), HumanMessage("now email Ana the forecast and read notes.txt")])
    assert [t.name for t in tools][:1] == ["get_forecast"]
    assert {"send_email", "plain_function"} <= {t.name for t in tools}
    # A shorter list is another conversation.
    assert [t.name for t in selector([("user", "send an email to Ana")])] == ["send_email"]


def test_selector_over_a_larger_store() -> None:
    store = capstore.Store.bundled()
    store.add_tools([tool_definition(get_forecast)], source="mine")
    selector = ToolSelector({"mine/get_forecast": get_forecast}, store=store)
    tools = selector([("user", "what's the weather forecast for Oslo tomorrow?")])
    assert [t.name for t in tools] == ["get_forecast"]  # the catalog's tools have no implementation here
    assert selector.last_selection is not None and "mine/get_forecast" in selector.last_selection.names
    with pytest.raises(capstore.ToolNotFoundError):
        ToolSelector([plain_function], store=store)
    with pytest.raises(capstore.ToolNotFoundError):
        ToolSelector([get_forecast], store=store)  # two tools named get_forecast: say which


def test_bigtool_retriever_returns_registry_ids() -> None:
    registry = {"a": get_forecast, "b": send_email, "c": plain_function}
    retrieve = bigtool_retriever(store_from_tools(registry.values()), registry)
    assert retrieve("weather forecast") == ["a"]
    assert retrieve("send an email") == ["b"]
    assert retrieve.__doc__ and "query" in retrieve.__doc__


def test_doctests() -> None:
    import doctest

    import capstore.langgraph

    for module in (capstore, capstore.langgraph):
        failures, tried = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
        assert tried > 0 and failures == 0, module.__name__
