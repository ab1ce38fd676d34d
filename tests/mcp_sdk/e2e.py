"""End to end over the official MCP Python SDK (`pip install mcp`, 2.x).

Agent A connects to bourse's `/api/mcp` with `Authorization: Bearer`, lists the tools and sends
agent B a message; agent B connects and finds it in its inbox with a signed receipt. Each
scenario runs in both eras the SDK speaks: `auto` (probes `server/discover`, so the stateless
2026-07-28 revision) and `legacy` (the `initialize` handshake, 2025-11-25). A client without a
key must be refused on `tools/call`.

Usage (keys are read from the environment so they never show in a process list):

    BOURSE_MCP_URL=http://127.0.0.1:8080/api/mcp \
    BOURSE_MCP_KEY_A=svc_live_... BOURSE_MCP_HANDLE_A=A-... \
    BOURSE_MCP_KEY_B=svc_live_... BOURSE_MCP_HANDLE_B=A-... \
    python tests/mcp_sdk/e2e.py

The URL and handles may also be given as arguments: `e2e.py URL HANDLE_A HANDLE_B`.
Exit status 0 when every scenario passed; the last line is `mcp sdk e2e: N passed, M failed`.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import traceback
import uuid
from typing import Any

try:
    from mcp import Client
    from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client
except ImportError as error:  # pragma: no cover - environment problem, reported plainly
    print(f"mcp sdk e2e: cannot import the MCP SDK ({error}); install it with `pip install mcp`")
    print("mcp sdk e2e: 0 passed, 1 failed")
    sys.exit(2)

EXPECTED_TOOLS = {"agent_whoami", "agent_lookup", "agent_inbox", "agent_send_message"}
EXPECTED_VERSION = {"auto": "2026-07-28", "legacy": "2025-11-25"}


from common import Failure, check, find_failure  # noqa: E402


def settings() -> dict[str, str]:
    names = ["URL", "HANDLE_A", "HANDLE_B"]
    values = {name: os.environ.get(f"BOURSE_MCP_{name}", "") for name in names}
    for name, value in zip(names, sys.argv[1:]):
        values[name] = value
    values["KEY_A"] = os.environ.get("BOURSE_MCP_KEY_A", "")
    values["KEY_B"] = os.environ.get("BOURSE_MCP_KEY_B", "")
    missing = [name for name, value in values.items() if not value]
    if missing:
        print(f"mcp sdk e2e: missing settings {', '.join('BOURSE_MCP_' + m for m in missing)}")
        print("mcp sdk e2e: 0 passed, 1 failed")
        sys.exit(2)
    return values


def connect(url: str, key: str | None, mode: str) -> Client:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    http = create_mcp_http_client(headers=headers)
    return Client(streamable_http_client(url, http_client=http), mode=mode)


def structured(result: Any, tool: str) -> dict[str, Any]:
    """The structured content of a successful call (falling back to the JSON text block)."""
    text = " ".join(getattr(block, "text", "") for block in result.content)
    check(not result.is_error, f"{tool} failed: {text}")
    data = result.structured_content
    if data is None:
        data = json.loads(text)
    check(isinstance(data, dict), f"{tool} returned no object: {text}")
    return data


def check_receipt(message: dict[str, Any], where: str) -> None:
    receipt = message.get("receipt")
    check(isinstance(receipt, dict), f"{where}: message without a receipt: {message}")
    signature = receipt.get("signature")
    check(
        isinstance(signature, dict) and signature.get("signature") and signature.get("keyId"),
        f"{where}: receipt without a signature: {receipt}",
    )
    check(receipt.get("messageId") == message.get("id"), f"{where}: receipt names another message")


async def send_as_a(cfg: dict[str, str], mode: str, body: str) -> dict[str, Any]:
    async with connect(cfg["URL"], cfg["KEY_A"], mode) as client:
        check(
            client.protocol_version == EXPECTED_VERSION[mode],
            f"{mode}: negotiated {client.protocol_version}, expected {EXPECTED_VERSION[mode]}",
        )
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        check(EXPECTED_TOOLS <= set(tools), f"{mode}: tools/list gave {sorted(tools)}")
        for name in EXPECTED_TOOLS:
            check(tools[name].input_schema.get("type") == "object", f"{mode}: {name} has no object inputSchema")
        me = structured(await client.call_tool("agent_whoami", {}), "agent_whoami")
        check(me.get("handle") == cfg["HANDLE_A"], f"{mode}: whoami is {me.get('handle')}, expected A")
        found = structured(await client.call_tool("agent_lookup", {"handle": cfg["HANDLE_B"]}), "agent_lookup")
        check(
            [card.get("handle") for card in found.get("agents", [])] == [cfg["HANDLE_B"]],
            f"{mode}: lookup of B gave {found}",
        )
        arguments = {"handle": cfg["HANDLE_B"], "clientMessageId": f"sdk-{mode}-{uuid.uuid4()}", "body": body}
        sent = structured(await client.call_tool("agent_send_message", arguments), "agent_send_message")
        check(sent.get("created") is True, f"{mode}: first send not created: {sent}")
        check(sent.get("body") == body and sent.get("recipientHandle") == cfg["HANDLE_B"], f"{mode}: sent {sent}")
        check_receipt(sent, f"{mode} send")
        again = structured(await client.call_tool("agent_send_message", arguments), "agent_send_message (repeat)")
        check(
            again.get("created") is False and again.get("id") == sent.get("id"),
            f"{mode}: idempotent repeat gave {again}",
        )
        return sent


async def read_as_b(cfg: dict[str, str], mode: str, expected: list[dict[str, Any]]) -> None:
    async with connect(cfg["URL"], cfg["KEY_B"], mode) as client:
        check(client.protocol_version == EXPECTED_VERSION[mode], f"{mode}: negotiated {client.protocol_version}")
        inbox = structured(await client.call_tool("agent_inbox", {"after": 0, "limit": 50}), "agent_inbox")
        by_id = {message.get("id"): message for message in inbox.get("messages", [])}
        for want in expected:
            got = by_id.get(want["id"])
            check(got is not None, f"{mode}: message {want['id']} not in B's inbox: {inbox}")
            check(got.get("body") == want["body"], f"{mode}: body differs: {got.get('body')!r}")
            check(got.get("senderHandle") == cfg["HANDLE_A"], f"{mode}: sender is {got.get('senderHandle')}")
            check_receipt(got, f"{mode} inbox")
        through = inbox.get("nextAfter")
        marked = structured(
            await client.call_tool("agent_inbox", {"action": "mark_read", "through": through}), "mark_read"
        )
        check(
            marked == {"readCursor": through, "readStateStored": False},
            f"{mode}: mark_read gave {marked}",
        )


async def refused_without_key(cfg: dict[str, str]) -> None:
    async with connect(cfg["URL"], None, "legacy") as client:
        tools = (await client.list_tools()).tools
        check(EXPECTED_TOOLS <= {tool.name for tool in tools}, "tools/list without a key failed")
        try:
            result = await client.call_tool("agent_whoami", {})
        except Exception:  # the 401 surfaces as an MCPError (possibly inside an exception group)
            return
        raise Failure(f"tools/call without a key was answered: {result}")


async def main() -> int:
    cfg = settings()
    passed = failed = 0
    sent: list[dict[str, Any]] = []

    async def scenario(name: str, coro: Any) -> Any:
        nonlocal passed, failed
        try:
            value = await coro
        except BaseException as error:  # noqa: BLE001 - any exception fails the scenario
            failed += 1
            failure = find_failure(error)
            if failure is not None:
                print(f"FAIL {name}: {failure}")
            else:
                print(f"FAIL {name}: unexpected exception")
                traceback.print_exception(error)
            return None
        passed += 1
        print(f"ok   {name}")
        return value

    for mode in ("auto", "legacy"):
        body = f"hello B from A over the MCP SDK ({mode}) \u2713 {uuid.uuid4()}"
        message = await scenario(f"A sends to B ({mode})", send_as_a(cfg, mode, body))
        if message is not None:
            sent.append(message)
    for mode in ("auto", "legacy"):
        if sent:
            await scenario(f"B reads its inbox ({mode})", read_as_b(cfg, mode, sent))
        else:
            failed += 1
            print(f"FAIL B reads its inbox ({mode}): nothing was sent")
    await scenario("tools/call without a key is refused", refused_without_key(cfg))

    print(f"mcp sdk e2e: {passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
