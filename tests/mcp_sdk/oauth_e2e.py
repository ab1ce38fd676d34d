"""OAuth end to end over the official MCP Python SDK (mcp 2.x, built on `httpx2`).

The SDK's `OAuthClientProvider` against the real binary, as a hosted MCP client would run it:
it meets the 401 of `/api/mcp`, discovers the protected-resource and authorization-server
metadata, registers (dynamic registration, and a Client ID Metadata Document), sends a person
through the authorization page (played here as a browser: GET the page, POST its form with the
agent's API key, read the redirect without following it), exchanges the code, and calls tools.
Then: step-up to the `spend` scope on a 403, refresh, and revocation (RFC 7009; the SDK has no
revocation helper, so the script posts to the endpoint itself).

The SDK accepts a metadata-document client id only over https; the test serves the document on
loopback over http (bourse runs with --allow-loopback-outbound), so that one client-side URL check
is relaxed here and said so in the output.

Usage (the key is read from the environment so it never shows in a process list):

    BOURSE_URL=http://127.0.0.1:8080 BOURSE_API_KEY=svc_live_... python tests/mcp_sdk/oauth_e2e.py

Exit status 0 when every scenario passed; the last line is `mcp oauth e2e: N passed, M failed`.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import threading
import time
import traceback
from html.parser import HTMLParser
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urljoin, urlsplit

try:
    import httpx2
    import mcp.client.auth.oauth2 as sdk_oauth2
    from mcp import Client
    from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider
    from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client
    from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken
except ImportError as error:  # pragma: no cover - environment problem, reported plainly
    print(f"mcp oauth e2e: cannot import the MCP SDK ({error})")
    print("mcp oauth e2e: 0 passed, 1 failed")
    sys.exit(2)

REDIRECT_URI = "http://127.0.0.1:53682/callback"  # nothing listens: the redirect is read, not followed


from common import Failure, check, find_failure  # noqa: E402


# --------------------------------------------------------------------------- token storage


class InMemoryTokenStorage:
    """`mcp.client.auth.TokenStorage` (oauth2.py:130-147) kept in memory."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client_info: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info


# --------------------------------------------------------------------------- consent form


class _FormParser(HTMLParser):
    """Collects every <form> with its action, method and <input>/<button> elements."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.forms: list[dict[str, Any]] = []
        self._current: dict[str, Any] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: (v if v is not None else "") for k, v in attrs}
        if tag == "form":
            self._current = {"action": a.get("action", ""), "method": a.get("method", "get").lower(), "inputs": []}
            self.forms.append(self._current)
        elif tag in ("input", "button") and self._current is not None:
            self._current["inputs"].append(
                {
                    "tag": tag,
                    "type": a.get("type", "text" if tag == "input" else "submit").lower(),
                    "name": a.get("name"),
                    "value": a.get("value", "on" if a.get("type", "").lower() == "checkbox" else ""),
                    "checked": "checked" in a,
                }
            )

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)

    def handle_endtag(self, tag: str) -> None:
        if tag == "form":
            self._current = None


def _pick_form(forms: list[dict[str, Any]]) -> dict[str, Any]:
    """The consent form: the one asking for `api_key`, else the first POST form, else the first."""
    check(bool(forms), "authorize page has no <form>")
    for form in forms:
        if any(i["name"] == "api_key" for i in form["inputs"]):
            return form
    for form in forms:
        if form["method"] == "post":
            return form
    return forms[0]


async def submit_consent_form(
    http: httpx2.AsyncClient, page: httpx2.Response, api_key: str, allow_spend: bool
) -> httpx2.Response:
    """Fill in and POST the authorize page's consent form as a browser would; return the raw
    (unfollowed) response. Everything server-specific about the form lives here.

    Sent: every hidden input as is, the checkboxes the page ticked (a person leaving the defaults),
    `spend` too when `allow_spend` (a person ticking it), plus `api_key` and `decision=allow`.
    """
    parser = _FormParser()
    parser.feed(page.text)
    form = _pick_form(parser.forms)
    fields: list[tuple[str, str]] = []
    for field in form["inputs"]:
        name, kind = field["name"], field["type"]
        if not name or field["tag"] == "button" or kind in ("submit", "button", "image", "reset"):
            continue  # the decision is sent explicitly below
        if name in ("api_key", "decision"):
            continue
        if kind == "hidden":
            fields.append((name, field["value"]))
        elif kind == "checkbox":
            if field["checked"] or (allow_spend and field["value"] == "spend"):
                fields.append((name, field["value"]))
        elif kind == "radio":
            if field["checked"]:
                fields.append((name, field["value"]))
        elif field["value"]:
            fields.append((name, field["value"]))  # prefilled text inputs
    fields += [("api_key", api_key), ("decision", "allow")]
    action = urljoin(str(page.url), form["action"] or str(page.url))
    check(form["method"] == "post", f"consent form method is {form['method']!r}, expected post")
    data: dict[str, list[str]] = {}
    for name, value in fields:
        data.setdefault(name, []).append(value)  # a list value is sent as repeated keys: scope=a&scope=b
    return await http.post(action, data=data, follow_redirects=False)


def code_from_redirect(response: httpx2.Response, redirect_uri: str) -> AuthorizationCodeResult:
    """Read `code`, `state` and the RFC 9207 `iss` from the (unfollowed) redirect to `redirect_uri`."""
    check(
        300 <= response.status_code < 400 and "location" in response.headers,
        f"consent POST answered {response.status_code}, expected a redirect: {response.text[:500]}",
    )
    location = urljoin(str(response.url), response.headers["location"])
    check(
        location.split("?", 1)[0] == redirect_uri.split("?", 1)[0],
        f"redirected to {location.split('?', 1)[0]}, expected {redirect_uri}",
    )
    query = parse_qs(urlsplit(location).query)
    first = {key: values[0] for key, values in query.items()}
    check("error" not in first, f"authorization refused: {first}")
    check("code" in first, f"redirect carries no code: {location}")
    return AuthorizationCodeResult(code=first["code"], state=first.get("state"), iss=first.get("iss"))


async def authorize_as_browser(
    authorize_url: str, api_key: str, redirect_uri: str, allow_spend: bool = False
) -> AuthorizationCodeResult:
    """GET the authorize URL (one client, so cookies such as a CSRF token carry over), then submit."""
    async with httpx2.AsyncClient(timeout=30.0, follow_redirects=False) as http:
        page = await http.get(authorize_url)
        # Follow redirects within the authorization server (e.g. to a login/consent page) until either
        # the page itself or an immediate redirect back to redirect_uri.
        for _ in range(5):
            if not (300 <= page.status_code < 400 and "location" in page.headers):
                break
            target = urljoin(str(page.url), page.headers["location"])
            if target.split("?", 1)[0] == redirect_uri.split("?", 1)[0]:
                return code_from_redirect(page, redirect_uri)  # consent already on file / error redirect
            page = await http.get(target)
        check(page.status_code == 200, f"authorize page answered {page.status_code}: {page.text[:500]}")
        check("x-frame-options" in page.headers, "the authorize page may be framed")
        response = await submit_consent_form(http, page, api_key, allow_spend)
        return code_from_redirect(response, redirect_uri)


# --------------------------------------------------------------------------- scenarios


class Session:
    """One hosted client: its provider, storage and the browser that answers its redirects."""

    def __init__(self, url: str, api_key: str, path: str, metadata_url: str | None = None) -> None:
        self.url = url
        self.endpoint = url + path
        self.api_key = api_key
        self.storage = InMemoryTokenStorage()
        self.allow_spend = False
        self.authorizations = 0
        pending: list[AuthorizationCodeResult] = []

        async def redirect_handler(authorization_url: str) -> None:
            self.authorizations += 1
            query = parse_qs(urlsplit(authorization_url).query)
            check(query.get("code_challenge_method") == ["S256"], f"no PKCE S256: {query}")
            check("resource" in query, f"no RFC 8707 resource: {query}")
            pending.append(
                await authorize_as_browser(authorization_url, self.api_key, REDIRECT_URI, self.allow_spend)
            )

        async def callback_handler() -> AuthorizationCodeResult:
            check(bool(pending), "redirect_handler produced no authorization code")
            return pending.pop()

        self.provider = OAuthClientProvider(
            server_url=self.endpoint,
            client_metadata=OAuthClientMetadata.model_validate(
                {
                    "client_name": "bourse SDK OAuth e2e",
                    "redirect_uris": [REDIRECT_URI],
                    "grant_types": ["authorization_code", "refresh_token"],
                    "response_types": ["code"],
                }
            ),
            storage=self.storage,
            redirect_handler=redirect_handler,
            callback_handler=callback_handler,
            client_metadata_url=metadata_url,
        )

    async def call(self, mode: str, tool: str, arguments: dict[str, Any]) -> Any:
        async with create_mcp_http_client(auth=self.provider) as http:
            async with Client(streamable_http_client(self.endpoint, http_client=http), mode=mode) as client:
                return await client.call_tool(tool, arguments)


def text_of(result: Any) -> str:
    return " ".join(getattr(block, "text", "") for block in result.content)


def structured(result: Any, tool: str) -> dict[str, Any]:
    check(not result.is_error, f"{tool} failed: {text_of(result)}")
    data = result.structured_content
    if data is None:
        data = json.loads(text_of(result))
    check(isinstance(data, dict), f"{tool} returned no object: {text_of(result)}")
    return data


async def whoami_with_bearer(url: str, token: str) -> int:
    """The HTTP status of a stateless tools/call made with this Bearer token directly."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "agent_whoami", "arguments": {}}}
    headers = {"authorization": f"Bearer {token}", "mcp-protocol-version": "2025-11-25"}
    async with httpx2.AsyncClient(timeout=30.0) as http:
        return (await http.post(url + "/api/mcp", json=body, headers=headers)).status_code


async def scenario_registered_client(url: str, key: str, mode: str, path: str) -> None:
    session = Session(url, key, path)
    me = structured(await session.call(mode, "agent_whoami", {}), "agent_whoami")
    check(me.get("handle", "").startswith("A-"), f"whoami: {me}")
    info = session.storage.client_info
    tokens = session.storage.tokens
    check(info is not None and info.client_id.startswith("bmc_"), f"dynamic registration: {info}")
    # The SDK left the method to the server, which chose client_secret_basic and said so.
    check(info.token_endpoint_auth_method == "client_secret_basic", f"auth method: {info}")
    check(tokens is not None and tokens.access_token.startswith("bmat_"), f"tokens: {tokens}")
    check(tokens.expires_in == 3600 and tokens.refresh_token, f"tokens: {tokens}")
    check(tokens.scope == "read message sell", f"granted scope: {tokens.scope!r}")
    check(session.authorizations == 1, f"{session.authorizations} authorizations")

    # Step-up: buying needs `spend`, which the page never pre-ticks. The 403 names it; the SDK
    # authorizes again asking for it, the person ticks it, and the call is retried.
    session.allow_spend = True
    bought = await session.call(mode, "buy_data", {"listing_id": "00000000-0000-4000-8000-000000000000"})
    check(bought.is_error and "NOT_FOUND" in text_of(bought), f"buy after step-up: {text_of(bought)}")
    check(session.authorizations == 2, f"step-up did not authorize again ({session.authorizations})")
    check("spend" in (session.storage.tokens.scope or ""), f"scope after step-up: {session.storage.tokens.scope}")

    # Refresh: the access token is made to look expired locally; the SDK refreshes before calling.
    before = session.storage.tokens
    session.provider.context.token_expiry_time = time.time() - 1
    structured(await session.call(mode, "agent_whoami", {}), "agent_whoami after refresh")
    after = session.storage.tokens
    check(after.access_token != before.access_token, "the access token was not refreshed")
    check(after.refresh_token != before.refresh_token, "the refresh token did not rotate")
    check(session.authorizations == 2, "a refresh must not send the person to the page again")
    check(await whoami_with_bearer(url, after.access_token) == 200, "the refreshed token does not work")

    # Revocation (RFC 7009) of the refresh token ends the grant: the access token stops working.
    async with httpx2.AsyncClient(timeout=30.0) as http:
        revoked = await http.post(
            url + "/oauth/revoke",
            data={"token": after.refresh_token, "token_type_hint": "refresh_token"},
            auth=(info.client_id, info.client_secret),
        )
    check(revoked.status_code == 200, f"revocation answered {revoked.status_code}: {revoked.text}")
    check(await whoami_with_bearer(url, after.access_token) == 401, "the access token survived revocation")


class _Document(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - http.server's spelling
        own = f"http://127.0.0.1:{self.server.server_address[1]}/client.json"
        body = json.dumps(
            {
                "client_id": own,
                "client_name": "bourse SDK OAuth e2e (metadata document)",
                "redirect_uris": [REDIRECT_URI],
                "grant_types": ["authorization_code", "refresh_token"],
                "response_types": ["code"],
                "token_endpoint_auth_method": "none",
            }
        ).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


async def scenario_metadata_document(url: str, key: str, mode: str, path: str) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Document)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    document = f"http://127.0.0.1:{server.server_address[1]}/client.json"
    # The SDK insists on https for a metadata-document URL; the document is served on loopback
    # over http, so that client-side check is relaxed (bourse fetches it under
    # --allow-loopback-outbound; every other step is the SDK's own).
    relaxed = lambda candidate: candidate is not None and candidate.startswith(("https://", "http://127.0.0.1:"))  # noqa: E731
    sdk_oauth2.is_valid_client_metadata_url = relaxed
    try:
        session = Session(url, key, path, metadata_url=document)
        me = structured(await session.call(mode, "agent_whoami", {}), "agent_whoami")
        check(me.get("handle", "").startswith("A-"), f"whoami: {me}")
        info = session.storage.client_info
        check(info is not None and info.client_id == document, f"client id: {info}")
        check(info.token_endpoint_auth_method == "none", f"auth method: {info}")
    finally:
        server.shutdown()


async def main() -> int:
    url = os.environ.get("BOURSE_URL", "").rstrip("/")
    key = os.environ.get("BOURSE_API_KEY", "")
    if not url or not key:
        print("mcp oauth e2e: missing BOURSE_URL or BOURSE_API_KEY")
        print("mcp oauth e2e: 0 passed, 1 failed")
        return 2
    # /mcp is the hosted clients' endpoint (a credential on every request, so OAuth starts at
    # `initialize`); /api/mcp answers `initialize` without one and starts it at the first tool.
    scenarios = [
        ("registered client at /api/mcp, auto (2026-07-28)", scenario_registered_client, "auto", "/api/mcp"),
        ("registered client at /mcp, legacy (2025-11-25)", scenario_registered_client, "legacy", "/mcp"),
        ("metadata document client at /mcp (https check relaxed for loopback)", scenario_metadata_document, "legacy", "/mcp"),
    ]
    passed = failed = 0
    for name, scenario, mode, path in scenarios:
        try:
            await scenario(url, key, mode, path)
        except BaseException as error:  # noqa: BLE001 - any exception fails the scenario
            failure = find_failure(error)
            if failure is not None:
                print(f"FAIL {name}: {failure}")
            else:
                print(f"FAIL {name}: unexpected exception")
                traceback.print_exception(error)
            failed += 1
            continue
        print(f"ok   {name}")
        passed += 1
    print(f"mcp oauth e2e: {passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
