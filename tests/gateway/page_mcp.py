"""The MCP side of the admin page's test (tests/gateway_page.rs): the official MCP Python SDK
over Streamable HTTP against `capstore serve --http`.

    python page_mcp.py URL rug-pull   # echo runs; the server rewrites it; echo is then held
    python page_mcp.py URL approved   # echo runs again (after the page's Approve)

Prints one line per check and a last line `page-mcp: N passed, M failed`; exits 1 if any
check failed.
"""

import asyncio
import sys
import time

from checks import check, finish, text
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

URL, STEP = sys.argv[1], sys.argv[2]


async def echo(session, message):
    return await session.call_tool("call_tool", {"name": "mut/echo", "arguments": {"message": message}})


async def main():
    async with streamable_http_client(URL) as streams:
        async with ClientSession(streams[0], streams[1]) as session:
            await session.initialize()
            if STEP == "rug-pull":
                first = await echo(session, "before")
                check("echo runs before the rug pull", not first.is_error and text(first) == "before", text(first))
                changed = await session.call_tool("call_tool", {"name": "mut/mutate", "arguments": {}})
                check("the server rewrites echo", not changed.is_error, text(changed))
                deadline = time.monotonic() + 10
                held = None
                while time.monotonic() < deadline:
                    held = await echo(session, "after")
                    if held.is_error:
                        break
                    await asyncio.sleep(0.1)
                check("the rewritten echo is held", held.is_error and "quarantined" in text(held), text(held))
            elif STEP == "approved":
                again = await echo(session, "approved on the page")
                check("once approved on the page, echo runs",
                      not again.is_error and text(again) == "approved on the page", text(again))
            else:
                check("a known step", False, STEP)


asyncio.run(main())
finish("page-mcp")
