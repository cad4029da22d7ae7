"""Store: opening, adding tools in every shape, selecting, searching, errors."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

import capstore

FLIGHT = "book a flight to Lisbon next Friday and put it in my calendar"

WEATHER_OPENAI = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather for a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        "strict": True,
    },
}
EMAIL_ANTHROPIC = {
    "name": "send_email",
    "description": "Send an email message to a recipient",
    "input_schema": {"type": "object", "properties": {"to": {"type": "string"}}},
    "cache_control": {"type": "ephemeral"},
}
FILE_MCP = {
    "name": "read_file",
    "title": "Read File",
    "description": "Read a text file from disk",
    "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}},
    "annotations": {"readOnlyHint": True},
}
SEARCH_RESPONSES = {
    "type": "function",
    "name": "search_web",
    "description": "Search the web for pages",
    "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
}
NOTE_CAPSTORE = {"name": "write_note", "description": "Write a note", "source": "notes", "tags": ["write"]}


def test_bundled_catalog_selects_with_reasons(bundled: capstore.Store) -> None:
    assert len(bundled) == 222
    assert "travel/book_flight" in bundled
    selection = bundled.select(FLIGHT)
    assert "travel/book_flight" in selection.names
    assert "calendar/create_event" in selection.names
    assert len(selection) == len(selection.definitions) == len(selection.tools)
    assert selection.tokens == sum(t.tokens for t in selection)
    book = next(t for t in selection if t.name == "travel/book_flight")
    assert book.export_name == "book_flight"
    assert book.definition["function"]["name"] == "book_flight"
    assert book.definition is selection.definitions[selection.names.index("travel/book_flight")]
    assert book.reasons and all(isinstance(r, str) for r in book.reasons)
    assert any(r.startswith("BM25") for r in book.reasons), book.reasons
    assert book.channel == "asked for by this message" and book.channel_kind == "message"
    pinned = [t for t in selection if t.channel_kind == "pinned"]
    assert pinned and all(t.channel == "pinned" for t in pinned)
    assert "book_flight" in selection.explain()
    assert "book_flight" in selection and "travel/book_flight" in selection
    assert selection.version == bundled.version
    assert "travel" in selection.skills


@pytest.mark.parametrize(
    ("provider", "schema_key"),
    [("openai", "parameters"), ("openai-responses", "parameters"), ("anthropic", "input_schema")],
)
def test_provider_shapes(bundled: capstore.Store, provider: str, schema_key: str) -> None:
    selection = bundled.select("weather forecast for Oslo", provider=provider, max_tools=3)
    assert selection.provider == provider
    assert len(selection) == 3
    for definition, name in zip(selection.definitions, selection.export_names):
        body = definition["function"] if provider == "openai" else definition
        assert body["name"] == name
        assert body[schema_key]["type"] == "object"
        assert (definition.get("type") == "function") == (provider != "anthropic")
        assert definition == bundled.definition(name, provider=provider)


def test_max_tools_and_policy(bundled: capstore.Store) -> None:
    # The catalog's three pinned tools are always sent; max_tools bounds the rest.
    assert len(bundled.select(FLIGHT, max_tools=5)) == 5
    assert len(capstore.Store.from_tools([WEATHER_OPENAI, EMAIL_ANTHROPIC]).select("weather email", max_tools=1)) == 1
    with_budget = bundled.select(FLIGHT, policy={"token_budget": 400})
    assert with_budget.tokens <= 400
    assert any(why.startswith("needs ") for _, why in with_budget.dropped), with_budget.dropped
    no_pins = bundled.select(FLIGHT, policy={"pinned_tools": []})
    # The catalog's pins are added to any policy.
    assert [t.channel_kind for t in no_pins][:1] == ["pinned"]
    with pytest.raises(capstore.PolicyError, match="history_decay"):
        bundled.select(FLIGHT, policy={"history_decay": 2.0})
    with pytest.raises(capstore.PolicyError, match="unknown field"):
        bundled.select(FLIGHT, policy={"max_toolz": 3})
    with pytest.raises(ValueError, match="max_tools"):
        bundled.select(FLIGHT, max_tools=0)
    with pytest.raises(ValueError, match="provider"):
        bundled.select(FLIGHT, provider="gemini")
    with pytest.raises(ValueError, match="embedder"):
        bundled.select(FLIGHT, lexical_weight=0.5)
    with pytest.raises(capstore.SelectError, match="embedder"):
        bundled.select(FLIGHT, policy={"retrieval": {"hybrid": {}}})


def test_tools_in_every_shape() -> None:
    store = capstore.Store.from_tools([WEATHER_OPENAI, EMAIL_ANTHROPIC, FILE_MCP, SEARCH_RESPONSES, NOTE_CAPSTORE])
    assert store.tools() == ["get_weather", "notes/write_note", "read_file", "search_web", "send_email"]
    weather = store.definition("get_weather", provider="anthropic")
    assert weather == {
        "name": "get_weather",
        "description": "Current weather for a city",
        "input_schema": WEATHER_OPENAI["function"]["parameters"],
    }
    assert store.definition("send_email")["function"]["parameters"] == EMAIL_ANTHROPIC["input_schema"]
    assert store.select("what's the weather in Paris?").names == ["get_weather"]
    assert store.select("email Ana the report").names == ["send_email"]
    assert store.select("read the file notes.txt").names[0] == "read_file"
    assert store.export_name("notes/write_note") == "write_note"
    assert store.resolve("write_note") == "notes/write_note"
    assert store.estimate_tokens("get_weather") == capstore.estimate_tokens(WEATHER_OPENAI)


def test_source_namespaces_like_an_mcp_server() -> None:
    store = capstore.Store.from_tools([FILE_MCP, WEATHER_OPENAI], source="local")
    assert store.tools() == ["local/get_weather", "local/read_file"]
    other = store.add_tools([{"name": "read_file", "description": "Read a remote file", "inputSchema": {"type": "object"}}], source="remote")
    assert other == ["remote/read_file"]
    # Two tools named read_file: each is exported under a distinct, provider-safe name.
    names = {store.export_name("local/read_file"), store.export_name("remote/read_file")}
    assert len(names) == 2 and all("/" not in n for n in names)
    assert {store.resolve(n) for n in names} == {"local/read_file", "remote/read_file"}


def test_bad_tools_are_refused_whole() -> None:
    store = capstore.Store.from_tools([WEATHER_OPENAI])
    with pytest.raises(capstore.ToolError, match=r"tools\[1\] \(\"x\"\): field `inputSchema`"):
        store.add_tools([EMAIL_ANTHROPIC, {"name": "x", "inputSchema": {"type": "string"}}])
    with pytest.raises(capstore.ToolError, match="already exists"):
        store.add_tools([EMAIL_ANTHROPIC, WEATHER_OPENAI])
    with pytest.raises(capstore.ToolError, match="unknown field `bogus`"):
        store.add_tools([{"name": "x", "bogus": 1}])
    with pytest.raises(capstore.ToolError, match="must be a dict"):
        store.add_tools(["get_weather"])
    with pytest.raises(ValueError, match="list of tool dicts"):
        store.add_tools(WEATHER_OPENAI)
    assert store.tools() == ["get_weather"]  # nothing of the failed calls was written
    assert isinstance(capstore.ToolError("x"), capstore.CapstoreError)


def test_catalog_file(tmp_path: Path) -> None:
    catalog = {
        "format": "capstore.catalog/v1",
        "skills": [
            {
                "name": "calendar",
                "description": "Meetings and events",
                "tools": [{"name": "create_event", "source": "calendar", "description": "Create a calendar event"}],
            }
        ],
        "tools": [{"name": "ask_user", "description": "Ask the user a question"}],
        "pinned": ["ask_user"],
    }
    path = tmp_path / "catalog.json"
    path.write_text(json.dumps(catalog))
    store = capstore.Store.from_catalog(path)
    selection = store.select("put the meeting in my calendar")
    assert selection.names == ["ask_user", "calendar/create_event"]
    assert selection.tools[0].channel_kind == "pinned"

    catalog["skills"][0]["dependencies"] = ["contacts"]
    path.write_text(json.dumps(catalog))
    with pytest.raises(capstore.CatalogError) as error:
        capstore.Store.from_catalog(path)
    assert str(path) in str(error.value) and "/skills/0/dependencies/0" in str(error.value)
    with pytest.raises(capstore.CatalogError, match="cannot read the file"):
        capstore.Store.from_catalog(tmp_path / "missing.json")


def test_search(bundled: capstore.Store) -> None:
    hits = bundled.search("weather forecast", 3)
    assert len(hits) == 3
    assert all(set(h) == {"name", "description", "score"} for h in hits)
    assert hits[0]["name"].startswith("weather/")
    assert hits[0]["score"] >= hits[1]["score"] >= hits[2]["score"]
    assert bundled.search("", 3) == []


def test_unknown_names(bundled: capstore.Store) -> None:
    with pytest.raises(capstore.ToolNotFoundError, match="nope"):
        bundled.resolve("nope")
    with pytest.raises(capstore.ToolNotFoundError):
        bundled.definition("nope")
    assert "nope" not in bundled


def test_selections_from_threads(bundled: capstore.Store) -> None:
    messages = ["weather in Oslo", FLIGHT, "open a pull request", "send an email to Ana"] * 10
    expected = {m: bundled.select(m).names for m in set(messages)}
    results: dict[int, list[str]] = {}

    def run(i: int, message: str) -> None:
        results[i] = bundled.select(message).names

    threads = [threading.Thread(target=run, args=(i, m)) for i, m in enumerate(messages)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(results[i] == expected[m] for i, m in enumerate(messages))


def test_repr(bundled: capstore.Store) -> None:
    assert repr(bundled) == f"Store(tools=222, version={bundled.version})"
    selection = bundled.select("weather in Oslo", max_tools=2)
    assert repr(selection).startswith("Selection(names=[")
    assert repr(selection.tools[0]).startswith("SelectedTool(name=")
