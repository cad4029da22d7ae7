"""The official MCP Python SDK (`mcp`, pinned in scripts/test-deps.sh) against `capstore serve
--http`, over Streamable HTTP.

    python http_client.py URL

Prints one line per check and a last line `gateway-http: N passed, M failed`; exits 1 if any
check failed.
"""

import asyncio
import json
import sys

from checks import check, finish, text
from mcp import ClientSession, MCPError
from mcp.client.streamable_http import streamable_http_client

URL = sys.argv[1]


async def main():
    async with streamable_http_client(URL) as streams:
        read, write = streams[0], streams[1]
        async with ClientSession(read, write) as session:
            info = await session.initialize()
            check("initialize names capstore", info.server_info.name == "capstore", info.server_info)
            tools = await session.list_tools()
            names = sorted(t.name for t in tools.tools)
            check("tools/list shows search_tools and call_tool", names == ["call_tool", "search_tools"], names)
            found = await session.call_tool("search_tools", {"query": "echo a message back"})
            found = found.structured_content or json.loads(text(found))
            picks = [t["name"] for t in found["tools"]]
            check("search_tools finds the echo tool first", picks[:1] == ["f/echo"], picks)
            echoed = await session.call_tool("call_tool", {"name": "f/echo", "arguments": {"message": "over http"}})
            check("call_tool runs it", not echoed.is_error and text(echoed) == "over http", text(echoed))
            try:
                await session.call_tool("call_tool", {"name": "nope/nothing", "arguments": {}})
                check("an unknown tool is an MCP error", False, "no error")
            except MCPError as e:
                check("an unknown tool is an MCP error", "unknown tool" in str(e), str(e))
            still = await session.list_tools()
            check("the gateway still serves", len(still.tools) == 2, still)


asyncio.run(main())
finish("gateway-http")
