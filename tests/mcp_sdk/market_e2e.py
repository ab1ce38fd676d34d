"""Marketplace end to end over the official MCP Python SDK (`pip install mcp`, 2.x).

Two agents register over MCP (`register_agent`, no key). The seller becomes a seller
(`become_seller`, then the sandbox onboarding is completed over HTTP as a script would click it),
sets its delivery endpoint (`set_delivery_endpoint`, a seller endpoint the caller started) and
sells a paid listing (`sell_data`). The buyer finds it (`browse_marketplace`, `preview_listing`),
buys it (`buy_data`, sandbox rail), pays (the scripted checkout `POST
/api/sandbox/checkout/{session}/pay`), polls `get_purchase` until delivered and rates it
(`rate_listing`). The seller's `seller_dashboard` then shows the sale. The seller's client uses
the SDK's `auto` mode (stateless 2026-07-28), the buyer's the `legacy` handshake.

Usage:

    BOURSE_MCP_URL=http://127.0.0.1:8080/api/mcp \
    BOURSE_SELLER_ENDPOINT=http://127.0.0.1:9000 BOURSE_DELIVERABLE='...' \
    python tests/mcp_sdk/market_e2e.py

Exit status 0 when every step passed; the last line is `mcp market e2e: N passed, M failed`.
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
    print(f"mcp market e2e: cannot import the MCP SDK ({error}); install it with `pip install mcp`")
    print("mcp market e2e: 0 passed, 1 failed")
    sys.exit(2)


from common import Failure, check  # noqa: E402


def connect(url: str, key: str | None, mode: str) -> Client:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    http = create_mcp_http_client(headers=headers)
    return Client(streamable_http_client(url, http_client=http), mode=mode)


def structured(result: Any, tool: str) -> dict[str, Any]:
    text = " ".join(getattr(block, "text", "") for block in result.content)
    check(not result.is_error, f"{tool} failed: {text}")
    data = result.structured_content
    if data is None:
        data = json.loads(text)
    check(isinstance(data, dict), f"{tool} returned no object: {text}")
    return data


def step(name: str) -> None:
    print(f"ok   {name}", flush=True)


async def run(url: str, endpoint: str, deliverable: str) -> int:
    base = url.rsplit("/api/mcp", 1)[0]
    passed = 0
    async with connect(url, None, "auto") as anonymous:
        tools = {tool.name for tool in (await anonymous.list_tools()).tools}
        for name in ("register_agent", "sell_data", "buy_data", "get_purchase", "rate_listing"):
            check(name in tools, f"tools/list lacks {name}: {sorted(tools)}")
        suffix = uuid.uuid4().hex[:6]
        seller = structured(await anonymous.call_tool("register_agent", {"name": f"sdk-seller-{suffix}"}), "register_agent")
        buyer = structured(await anonymous.call_tool("register_agent", {"name": f"sdk-buyer-{suffix}"}), "register_agent")
        check(seller["apiKey"].startswith("svc_live_"), f"no key: {seller}")
        refused = await anonymous.call_tool("about_marketplace", {})
        check(not refused.is_error, "about_marketplace is public")
    step("two agents registered over MCP")
    passed += 1

    async with connect(url, seller["apiKey"], "auto") as client, create_mcp_http_client() as http:
        link = structured(await client.call_tool("become_seller", {"name": "SDK Seller"}), "become_seller")
        done = await http.post(link["completeUrl"])
        check(done.status_code == 200, f"onboarding: {done.status_code} {done.text}")
        structured(await client.call_tool("set_delivery_endpoint", {"url": endpoint}), "set_delivery_endpoint")
        created = structured(
            await client.call_tool(
                "sell_data",
                {
                    "title": f"SDK freight rates {suffix}",
                    "description": "Weekly trucking freight rates by lane.",
                    "preview": {"lanes": 12},
                    "price_cents": 2500,
                    "consent": True,
                    "vertical": "trucking",
                },
            ),
            "sell_data",
        )
        listing_id = created["listing"]["id"]
    step("the seller onboarded, verified its endpoint and listed over MCP")
    passed += 1

    async with connect(url, buyer["apiKey"], "legacy") as client, create_mcp_http_client() as http:
        page = structured(await client.call_tool("browse_marketplace", {"q": f"freight {suffix}"}), "browse_marketplace")
        check([item["id"] for item in page["listings"]] == [listing_id], f"browse: {page}")
        detail = structured(await client.call_tool("preview_listing", {"listing_id": listing_id}), "preview_listing")
        check(detail["preview"] == {"lanes": 12}, f"preview: {detail}")
        pending = structured(await client.call_tool("buy_data", {"listing_id": listing_id}), "buy_data")
        check(pending["status"] == "pending_payment", f"buy_data: {pending}")
        session = pending["checkoutUrl"].rstrip("/").rsplit("/", 1)[1]
        paid = await http.post(f"{base}/api/sandbox/checkout/{session}/pay")
        check(paid.status_code == 200, f"pay: {paid.status_code} {paid.text}")
        purchase: dict[str, Any] = {}
        for _ in range(50):
            purchase = structured(await client.call_tool("get_purchase", {"purchase_id": pending["id"]}), "get_purchase")
            if purchase.get("status") == "delivered":
                break
            await asyncio.sleep(0.2)
        check(purchase.get("status") == "delivered", f"never delivered: {purchase}")
        check(purchase["delivery"]["content"] == deliverable, f"delivery: {purchase['delivery']}")
        step("the buyer bought, paid and polled until delivered over MCP")
        passed += 1
        rated = structured(
            await client.call_tool(
                "rate_listing",
                {"listing_id": listing_id, "purchase_id": pending["id"], "rating": 5, "comment": "as described"},
            ),
            "rate_listing",
        )
        check("attestation" in json.dumps(rated), f"rate: {rated}")
        again = await client.call_tool("rate_listing", {"listing_id": listing_id, "purchase_id": pending["id"], "rating": 5})
        check(again.is_error, "a second rating must be refused")
    step("the buyer rated the purchase once")
    passed += 1

    async with connect(url, seller["apiKey"], "legacy") as client:
        dashboard = structured(await client.call_tool("seller_dashboard", {}), "seller_dashboard")
        check(dashboard["sales"]["count"] == 1, f"dashboard: {dashboard}")
    step("the seller's dashboard shows the sale")
    passed += 1
    return passed


def find_failure(error: BaseException) -> BaseException:
    if isinstance(error, Failure):
        return error
    for inner in getattr(error, "exceptions", ()):
        return find_failure(inner)
    return error


async def main() -> int:
    url = os.environ.get("BOURSE_MCP_URL", "")
    endpoint = os.environ.get("BOURSE_SELLER_ENDPOINT", "")
    deliverable = os.environ.get("BOURSE_DELIVERABLE", "")
    if not (url and endpoint and deliverable):
        print("mcp market e2e: set BOURSE_MCP_URL, BOURSE_SELLER_ENDPOINT and BOURSE_DELIVERABLE")
        print("mcp market e2e: 0 passed, 1 failed")
        return 2
    try:
        passed = await run(url, endpoint, deliverable)
        print(f"mcp market e2e: {passed} passed, 0 failed")
        return 0
    except BaseException as error:  # noqa: BLE001 - report every failure plainly
        failure = find_failure(error)
        print(f"FAIL {failure}")
        traceback.print_exception(error)
        print("mcp market e2e: 0 passed, 1 failed")
        return 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
