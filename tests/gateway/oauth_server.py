"""An OAuth-protected MCP server and its authorization server, on loopback, for the gateway's
upstream OAuth test (cli/tests/gateway_oauth.rs drives it through `capstore auth` and `capstore
serve`). Both halves are the official MCP Python SDK's (`mcp`, pinned in scripts/test-deps.sh):
its authorization-server routes (discovery metadata, dynamic client registration, /authorize,
/token with PKCE, /revoke), its protected-resource metadata and its bearer-token middleware in
front of the Streamable HTTP endpoint. Only the provider (where codes and tokens are kept) is
written here, in memory.

    python oauth_server.py

Listens on a free port of 127.0.0.1 and prints `listening PORT` once it serves. The MCP
endpoint is /mcp; its one tool is `whoami`, which answers with the number of the access token
it was called with (`token #N`), so a test can see a refreshed token in use without the token.

Short-lived access tokens (ACCESS_TTL seconds) make a refresh happen inside a test. /authorize
approves at once (no login page) and redirects to the client's redirect_uri with the code. Test
controls, on the same port, without authorization (loopback only):
- POST /test/fail-refresh?count=N: the next N requests to /token answer 503 (a provider outage);
- POST /test/revoke-refresh: every refresh token is forgotten (the next refresh is refused with
  `invalid_grant`);
- GET /test/state: counts of registrations, codes exchanged, refreshes, refresh faults, as JSON;
- GET /test/tokens: every access and refresh token issued so far (so the test can check none of
  them appears where it must not).
"""

import json
import secrets
import socket
import sys
import time

import uvicorn
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

ACCESS_TTL = 6


class Provider:
    """An in-memory authorization server: clients, codes and tokens in dicts."""

    def __init__(self):
        self.clients = {}
        self.codes = {}
        self.access = {}
        self.refresh = {}
        self.issued = []
        self.counts = {"registered": 0, "codes_exchanged": 0, "refreshes": 0, "refresh_faults": 0}
        self.serial = 0

    async def get_client(self, client_id):
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull):
        self.counts["registered"] += 1
        self.clients[client_info.client_id] = client_info

    async def authorize(self, client, params: AuthorizationParams):
        code = "code_" + secrets.token_urlsafe(16)
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or [],
            expires_at=time.time() + 300,
            client_id=client.client_id,
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
        )
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(self, client, authorization_code):
        return self.codes.get(authorization_code)

    def _issue(self, client_id, scopes, resource):
        self.serial += 1
        access = f"at{self.serial}_" + secrets.token_urlsafe(24)
        refresh = f"rt{self.serial}_" + secrets.token_urlsafe(24)
        self.access[access] = AccessToken(
            token=access,
            client_id=client_id,
            scopes=scopes,
            expires_at=int(time.time()) + ACCESS_TTL,
            resource=resource,
            claims={"serial": self.serial},
        )
        self.refresh[refresh] = RefreshToken(token=refresh, client_id=client_id, scopes=scopes, resource=resource)
        self.issued += [access, refresh]
        return OAuthToken(
            access_token=access,
            expires_in=ACCESS_TTL,
            scope=" ".join(scopes) or None,
            refresh_token=refresh,
        )

    async def exchange_authorization_code(self, client, authorization_code):
        self.codes.pop(authorization_code.code, None)
        self.counts["codes_exchanged"] += 1
        return self._issue(client.client_id, authorization_code.scopes, authorization_code.resource)

    async def load_refresh_token(self, client, refresh_token):
        return self.refresh.get(refresh_token)

    async def exchange_refresh_token(self, client, refresh_token, scopes):
        # Rotation: the old refresh token is spent.
        self.refresh.pop(refresh_token.token, None)
        self.counts["refreshes"] += 1
        return self._issue(client.client_id, scopes, refresh_token.resource)

    async def load_access_token(self, token):
        access = self.access.get(token)
        if access is None or (access.expires_at is not None and access.expires_at < time.time()):
            return None
        return access

    async def revoke_token(self, token):
        self.access.pop(token.token, None)
        self.refresh.pop(token.token, None)


class Faults:
    """ASGI wrapper: answers 503 to the next `fail_refresh` requests to /token."""

    def __init__(self, app, provider):
        self.app = app
        self.provider = provider
        self.fail_refresh = 0

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and scope["path"] == "/token" and self.fail_refresh > 0:
            self.fail_refresh -= 1
            self.provider.counts["refresh_faults"] += 1
            await Response("the provider is down (test fault)", status_code=503)(scope, receive, send)
            return
        await self.app(scope, receive, send)


def main():
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    # Listening before `listening PORT` is printed: a connection made at once waits in the
    # backlog until the server accepts it.
    sock.listen(128)
    port = sock.getsockname()[1]
    base = f"http://127.0.0.1:{port}"
    provider = Provider()
    server = MCPServer(
        "oauth-test",
        auth_server_provider=provider,
        auth=AuthSettings(
            issuer_url=base,
            resource_server_url=f"{base}/mcp",
            validate_token_resource=False,
            client_registration_options=ClientRegistrationOptions(enabled=True),
            revocation_options=RevocationOptions(enabled=True),
        ),
    )

    @server.tool()
    def whoami() -> str:
        """Says which access token (by number) the call came with."""
        from mcp.server.auth.middleware.auth_context import get_access_token

        token = get_access_token()
        serial = (token.claims or {}).get("serial") if token else None
        return f"token #{serial}"

    faults = None

    @server.custom_route("/test/fail-refresh", methods=["POST"])
    async def fail_refresh(request: Request):
        faults.fail_refresh = int(request.query_params.get("count", "1"))
        return JSONResponse({"fail_refresh": faults.fail_refresh})

    @server.custom_route("/test/revoke-refresh", methods=["POST"])
    async def revoke_refresh(request: Request):
        revoked = len(provider.refresh)
        provider.refresh.clear()
        return JSONResponse({"revoked": revoked})

    @server.custom_route("/test/state", methods=["GET"])
    async def state(request: Request):
        return JSONResponse(provider.counts)

    @server.custom_route("/test/tokens", methods=["GET"])
    async def tokens(request: Request):
        return JSONResponse(provider.issued)

    faults = Faults(server.streamable_http_app(), provider)
    config = uvicorn.Config(faults, log_level="warning", lifespan="on")
    print(f"listening {port}", flush=True)
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    sys.exit(main())
