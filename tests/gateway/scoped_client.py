"""Clients with scopes (`capstore clients`), driven by the official MCP Python SDK over
Streamable HTTP against `capstore serve --http` with two clients: `timekeeper` (the `time`
server only) and `echoer` (the tool pattern `f/echo` only).

    python scoped_client.py URL scopes TIMEKEEPER_TOKEN ECHOER_TOKEN
    python scoped_client.py URL revoked ECHOER_TOKEN   # after `capstore clients revoke echoer`
    python scoped_client.py URL echoer TOKEN           # `f/echo` only, over the f server alone

Prints one line per check and a last line `gateway-scopes: N passed, M failed`; exits 1 if
any check failed.
"""

import asyncio
import json
import sys

import httpx2
from checks import check, finish, text
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

URL, STEP = sys.argv[1], sys.argv[2]


def client(token):
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx2.AsyncClient(headers=headers, timeout=30)


async def refused(token, name):
    """`initialize` with `token` (or none) is answered 401 with a Bearer challenge, and the SDK's
    session cannot start."""
    initialize = {
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "scoped-test", "version": "0"}},
    }
    async with client(token) as http:
        answer = await http.post(
            URL, json=initialize, headers={"Accept": "application/json, text/event-stream"}
        )
    check(
        name,
        answer.status_code == 401 and answer.headers.get("www-authenticate") == "Bearer",
        f"{answer.status_code} {answer.headers} {answer.text[:200]}",
    )
    try:
        async with client(token) as http:
            async with streamable_http_client(URL, http_client=http) as streams:
                async with ClientSession(streams[0], streams[1]) as session:
                    await asyncio.wait_for(session.initialize(), 20)
        check(name + ", and no session starts", False, "initialized")
    except BaseException as e:  # the SDK's task group wraps what the server answered
        check(name + ", and no session starts", True, repr(e)[:300])


async def session_with(token, body):
    async with client(token) as http:
        async with streamable_http_client(URL, http_client=http) as streams:
            async with ClientSession(streams[0], streams[1]) as session:
                await session.initialize()
                await body(session)


def found(result):
    answer = result.structured_content or json.loads(text(result))
    return [t["name"] for t in answer["tools"]]


async def timekeeper(session):
    tools = await session.list_tools()
    check("the timekeeper lists search and call", sorted(t.name for t in tools.tools) == ["call_tool", "search_tools"], tools)
    echo = found(await session.call_tool("search_tools", {"query": "echo a message back"}))
    check("its search finds nothing of the f server", not any(n.startswith("f/") for n in echo), echo)
    now = found(await session.call_tool("search_tools", {"query": "current time in a timezone"}))
    check("its search finds the time server's tools", any(n.startswith("time/") for n in now), now)
    outside = await session.call_tool("call_tool", {"name": "f/echo", "arguments": {"message": "hi"}})
    check(
        "a call outside its scope is refused with why",
        outside.is_error and "may not call `f/echo`" in text(outside) and "time" in text(outside),
        text(outside),
    )
    inside = await session.call_tool(
        "call_tool", {"name": "time/get_current_time", "arguments": {"timezone": "Asia/Tokyo"}}
    )
    check("a call inside its scope runs", not inside.is_error and "Asia/Tokyo" in text(inside), text(inside))


async def echoer(session):
    await echoer_on_its_server(session)
    time = await session.call_tool("call_tool", {"name": "time/get_current_time", "arguments": {"timezone": "UTC"}})
    check("another server's tool is refused", time.is_error and "may not call" in text(time), text(time))


async def echoer_on_its_server(session):
    echoed = await session.call_tool("call_tool", {"name": "f/echo", "arguments": {"message": "scoped"}})
    check("the echoer's echo runs", not echoed.is_error and text(echoed) == "scoped", text(echoed))
    mutate = await session.call_tool("call_tool", {"name": "f/mutate", "arguments": {}})
    check(
        "a tool of its server outside its pattern is refused, not run",
        mutate.is_error and "matches none of the client's tool patterns" in text(mutate),
        text(mutate),
    )
    again = await session.call_tool("call_tool", {"name": "f/echo", "arguments": {"message": "still"}})
    # Had the refused `mutate` reached the server, echo would be rewritten and held back now.
    check("the refused call never reached the server", not again.is_error and text(again) == "still", text(again))


async def main():
    if STEP == "scopes":
        await refused(None, "a request without a token is refused (401)")
        await refused("cst_" + "0" * 64, "an unknown token is refused (401)")
        await session_with(sys.argv[3], timekeeper)
        await session_with(sys.argv[4], echoer)
    elif STEP == "revoked":
        await refused(sys.argv[3], "a revoked token is refused (401)")
    elif STEP == "echoer":
        await session_with(sys.argv[3], echoer_on_its_server)


asyncio.run(main())
finish("gateway-scopes")
