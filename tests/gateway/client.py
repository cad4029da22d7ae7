"""A client nobody on this project wrote (the official MCP Python SDK, `mcp` from PyPI, pinned in
scripts/test-deps.sh) against `capstore serve` over stdio, with real upstream servers.

    python client.py CAPSTORE_BINARY WORK_DIR

Writes its configuration into WORK_DIR, runs the gateway, and checks what a person using Claude
Desktop or Claude Code through the gateway would see. Prints one line per check and a last line
`gateway: N passed, M failed`; exits 1 if any check failed.
"""

import asyncio
import json
import os
import subprocess
import sys
import time

from checks import check, finish, text
from mcp import ClientSession, MCPError, StdioServerParameters, stdio_client

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEPS = os.path.join(ROOT, ".test-deps")
CAPSTORE, WORK = sys.argv[1], os.path.abspath(sys.argv[2])
CONFIG = os.path.join(WORK, "mcp.json")


def write_config():
    os.makedirs(os.path.join(WORK, "notes"), exist_ok=True)
    config = {"mcpServers": {
        "files": {"command": os.path.join(DEPS, "node/node_modules/.bin/mcp-server-filesystem"),
                  "args": [os.path.join(WORK, "notes")]},
        "time": {"command": os.path.join(DEPS, "venv/bin/mcp-server-time")},
        "mut": {"command": sys.executable,
                "args": [os.path.join(ROOT, "tests/fixtures/mcp/servers/fault_server.py"), "ok"]},
    }}
    with open(CONFIG, "w") as f:
        json.dump(config, f)
    quarantine = CONFIG + ".quarantine.json"
    if os.path.exists(quarantine):
        os.remove(quarantine)


async def search(session, query, limit=None):
    args = {"query": query}
    if limit:
        args["limit"] = limit
    result = await session.call_tool("search_tools", args)
    return result.structured_content or json.loads(text(result))


async def main():
    write_config()
    params = StdioServerParameters(
        command=CAPSTORE, args=["serve", "--mcp-config", CONFIG, "--call-timeout", "3"],
        cwd=ROOT)
    with open(os.path.join(WORK, "gateway.stderr"), "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write) as session:
                info = await session.initialize()
                check("initialize names capstore", info.server_info.name == "capstore", info.server_info)

                tools = await session.list_tools()
                names = sorted(t.name for t in tools.tools)
                check("tools/list shows search_tools and call_tool only", names == ["call_tool", "search_tools"], names)
                described = next(t.description for t in tools.tools if t.name == "search_tools")
                check("search_tools names the servers it can find, with their tools",
                      "files (" in described and "time (" in described and " tools: " in described,
                      described)

                found = await search(session, "write a note to a file")
                picks = [t["name"] for t in found["tools"]]
                write = next((t for t in found["tools"] if t["name"].endswith("/write_file")), None)
                check("search_tools finds the filesystem write tool", write is not None, picks)
                check("search results carry input schemas",
                      write is not None and "properties" in write["inputSchema"], write)

                note = os.path.join(WORK, "notes", "note.txt")
                wrote = await session.call_tool("call_tool", {
                    "name": write["name"], "arguments": {"path": note, "content": "buy milk"}})
                check("call_tool writes the file", not wrote.is_error, text(wrote))
                check("the file is on disk", open(note).read() == "buy milk")

                found = await search(session, "read the contents of a text file")
                read_tool = next((t["name"] for t in found["tools"] if t["name"].endswith("/read_text_file")), None)
                check("search_tools finds the read tool", read_tool is not None, found["tools"])
                back = await session.call_tool("call_tool", {"name": read_tool, "arguments": {"path": note}})
                check("the file reads back through the gateway", text(back) == "buy milk", text(back))

                found = await search(session, "what time is it in a timezone")
                check("search_tools finds a time tool",
                      any(t["name"].startswith("time/") for t in found["tools"]), found["tools"])
                now = await session.call_tool("call_tool", {
                    "name": "time/get_current_time", "arguments": {"timezone": "Europe/Lisbon"}})
                check("a time tool runs", not now.is_error and "Europe/Lisbon" in text(now), text(now))

                # Faults: each answered clearly, and the gateway keeps serving.
                try:
                    await session.call_tool("call_tool", {"name": "nope/nothing", "arguments": {}})
                    check("an unknown tool is an MCP error", False, "no error")
                except MCPError as e:
                    check("an unknown tool is an MCP error", "unknown tool" in str(e), str(e))
                bad = await session.call_tool("call_tool", {"name": write["name"], "arguments": {"path": 5}})
                check("arguments that fail the schema are an isError result",
                      bad.is_error and "invalid arguments" in text(bad), text(bad))
                try:
                    await session.call_tool("search_tools", {})
                    check("search_tools without a query is an MCP error", False, "no error")
                except MCPError as e:
                    check("search_tools without a query is an MCP error", "query" in str(e), str(e))
                start = time.monotonic()
                slow = await session.call_tool("call_tool", {"name": "mut/slow", "arguments": {}})
                took = time.monotonic() - start
                check("a hung upstream call times out with a result naming the server",
                      slow.is_error and "`mut`" in text(slow) and took < 10, (text(slow), took))
                crashed = await session.call_tool("call_tool", {"name": "mut/crash", "arguments": {}})
                check("an upstream that dies mid-call is an isError result naming it",
                      crashed.is_error and "`mut`" in text(crashed), text(crashed))
                down = await session.call_tool("call_tool", {"name": "mut/echo", "arguments": {"message": "x"}})
                check("its tools fail fast while it is down",
                      down.is_error and "unavailable" in text(down), text(down))
                still = await session.call_tool("call_tool", {
                    "name": "time/get_current_time", "arguments": {"timezone": "UTC"}})
                check("other servers keep working", not still.is_error, text(still))

                # Wait for the dead server to come back (reconnect with back-off).
                deadline = time.monotonic() + 20
                echo = None
                while time.monotonic() < deadline:
                    echo = await session.call_tool("call_tool", {"name": "mut/echo", "arguments": {"message": "hi"}})
                    if not echo.is_error:
                        break
                    await asyncio.sleep(0.2)
                check("the server is reconnected", echo is not None and text(echo) == "hi", echo and text(echo))

                # A rug pull: the server rewrites echo's description. It is quarantined.
                await session.call_tool("call_tool", {"name": "mut/mutate", "arguments": {}})
                deadline = time.monotonic() + 10
                held = None
                while time.monotonic() < deadline:
                    held = await session.call_tool("call_tool", {"name": "mut/echo", "arguments": {"message": "hi"}})
                    if held.is_error:
                        break
                    await asyncio.sleep(0.1)
                check("a changed tool is quarantined (not callable)",
                      held.is_error and "quarantined" in text(held), text(held))
                found = await search(session, "echo a message back")
                check("a quarantined tool is not offered",
                      all(t["name"] != "mut/echo" for t in found["tools"]) and "quarantined" in found,
                      found)
                listing = subprocess.run([CAPSTORE, "approve", "--mcp-config", CONFIG],
                                         capture_output=True, text=True, cwd=ROOT)
                check("capstore approve lists it", "mut/echo" in listing.stdout, listing)
                approved = subprocess.run([CAPSTORE, "approve", "mut/echo", "--mcp-config", CONFIG],
                                          capture_output=True, text=True, cwd=ROOT)
                check("capstore approve trusts it", approved.returncode == 0, approved)
                again = await session.call_tool("call_tool", {"name": "mut/echo", "arguments": {"message": "hi"}})
                check("once approved it runs again", not again.is_error and text(again) == "hi", text(again))

                tools = await session.list_tools()
                check("the gateway still serves", len(tools.tools) == 2, tools)
    with open(os.path.join(WORK, "gateway.stderr")) as f:
        stderr = f.read()
    check("upstream stderr stays out of the protocol", "connecting to 3 MCP server(s)" in stderr, stderr[:500])


asyncio.run(main())
finish("gateway")
