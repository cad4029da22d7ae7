"""Store.from_mcp_config: live MCP servers through the library's McpHub."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import capstore


def write_config(tmp_path: Path, servers: dict[str, object]) -> Path:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": servers}))
    return path


def test_a_live_server(tmp_path: Path, time_server: Path) -> None:
    config = write_config(tmp_path, {"time": {"command": str(time_server)}})
    store = capstore.Store.from_mcp_config(config)
    try:
        assert "time/get_current_time" in store.tools()
        (server,) = store.servers()
        assert server["name"] == "time" and server["ok"] and server["error"] is None
        assert "time/get_current_time" in server["tools"]
        assert server["held"] == []
        selection = store.select("what time is it in Tokyo?", provider="anthropic")
        assert "time/get_current_time" in selection.names
        definition = selection.definitions[selection.names.index("time/get_current_time")]
        assert definition["name"] == "get_current_time"
        assert "timezone" in json.dumps(definition["input_schema"])
    finally:
        store.close()
    # The tools stay in the store once the servers are stopped.
    assert "time/get_current_time" in store.tools()
    store.close()  # a second close does nothing


def test_a_server_that_cannot_start(tmp_path: Path, time_server: Path) -> None:
    config = write_config(
        tmp_path,
        {
            "time": {"command": str(time_server)},
            "broken": {"command": str(tmp_path / "no-such-server")},
        },
    )
    with pytest.warns(RuntimeWarning, match="MCP server `broken`"):
        store = capstore.Store.from_mcp_config(config, connect_timeout=20)
    try:
        by_name = {s["name"]: s for s in store.servers()}
        assert by_name["time"]["ok"] and not by_name["broken"]["ok"]
        assert "no-such-server" in by_name["broken"]["error"]
        assert "time/get_current_time" in store.tools()
    finally:
        store.close()
    with pytest.raises(capstore.McpError, match="MCP server `broken`"):
        capstore.Store.from_mcp_config(config, strict=True)


def test_configuration_errors(tmp_path: Path) -> None:
    with pytest.raises(capstore.McpError, match="cannot read"):
        capstore.Store.from_mcp_config(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text('{"mcpServers": {"time": {"command": 7}}}')
    with pytest.raises(capstore.McpError, match="field `command`"):
        capstore.Store.from_mcp_config(bad)
    with pytest.raises(capstore.McpError, match="names no server"):
        capstore.Store.from_mcp_config(write_config(tmp_path, {}))
    with pytest.raises(ValueError, match="connect_timeout"):
        capstore.Store.from_mcp_config(bad, connect_timeout=-1)
