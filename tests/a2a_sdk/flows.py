"""The official A2A Python SDK (a2a-sdk 1.3.0) driving bourse, for tests/it/a2a_sdk.rs.

Input: one JSON object, as the first argument or on stdin:

    {"base": "http://127.0.0.1:PORT",
     "flow": "card" | "message" | "purchases" | "browse" | "x402" | "spending",
     "runs": [{"binding": "JSONRPC" | "HTTP+JSON", ...the flow's parties and ids...}, ...]}

Each run resolves the card it needs through `A2ACardResolver`, makes its client with
`ClientFactory` (or `create_client`) choosing the run's binding by
`ClientConfig.supported_protocol_bindings`, and records what a user would look at. Output: one
JSON object on stdout, `{"runs": [{"binding": ..., <observations>}, ...]}`, for the Rust test to
assert on; answers are ProtoJSON (`MessageToDict`), errors `{"error": <SDK class>, ...}`. A
failure of the script itself is a traceback on stderr and a non-zero exit.
"""

from __future__ import annotations

import asyncio
import json
import sys
import uuid
from typing import Any, Awaitable, Callable

import httpx
from google.protobuf.json_format import MessageToDict
from google.protobuf.struct_pb2 import Value
from jwt.api_jwk import PyJWK

from a2a.client import (
    A2ACardResolver,
    ClientCallContext,
    ClientConfig,
    ClientFactory,
    create_client,
)
from a2a.client.service_parameters import ServiceParametersFactory, with_a2a_extensions
from a2a.types import (
    AgentCard,
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    TaskState,
)
from a2a.utils.signing import create_signature_verifier

# Every network call of the SDK is bounded: the Rust side bounds the whole script too.
TIMEOUT = httpx.Timeout(20.0)
# The most pages a paging walk follows before it is called a loop.
MAX_PAGES = 20


def proto(message: Any) -> dict:
    return MessageToDict(message)


async def caught(call: Awaitable[Any]) -> dict:
    """An answer as ProtoJSON, or the SDK error it raised: its class, message and data."""
    try:
        return {"ok": proto(await call)}
    except Exception as error:  # the SDK's mapped errors are what is observed
        return {
            "error": type(error).__name__,
            "message": str(error),
            "data": getattr(error, "data", None),
        }


class JkuKeys:
    """A key provider for `create_signature_verifier`: the JWK named by the signature's `kid`,
    fetched from its `jku` (only a `jku` under the marketplace's base is followed)."""

    # The verifier calls its key provider synchronously: one blocking client, made once.
    http = httpx.Client(timeout=TIMEOUT)

    def __init__(self, base: str):
        self.base = base
        self.seen: list[dict] = []

    def __call__(self, kid: str | None, jku: str | None) -> PyJWK:
        self.seen.append({"kid": kid, "jku": jku})
        if not jku or not jku.startswith(self.base + "/"):
            raise ValueError(f"jku {jku!r} is not the marketplace's")
        keys = self.http.get(jku).raise_for_status().json()["keys"]
        for jwk in keys:
            if jwk.get("kid") == kid:
                return PyJWK(jwk, algorithm="EdDSA")
        raise ValueError(f"no key {kid!r} at {jku}")


async def resolve(http: httpx.AsyncClient, base: str, card_base: str) -> tuple[AgentCard, dict]:
    """The card at `card_base`/.well-known/agent-card.json, its signature verified by the SDK
    (a bad one raises); with what the verification saw."""
    keys = JkuKeys(base)
    verifier = create_signature_verifier(keys, ["EdDSA"])
    card = await A2ACardResolver(http, card_base).get_agent_card(signature_verifier=verifier)
    tampered = AgentCard()
    tampered.CopyFrom(card)
    tampered.name = card.name + " (edited)"
    try:
        verifier(tampered)
        tampered_verdict = "verified"
    except Exception as error:
        tampered_verdict = type(error).__name__
    seen = {
        "card": proto(card),
        "verified": True,
        "keys": keys.seen,
        "edited_card": tampered_verdict,
    }
    return card, seen


def config(http: httpx.AsyncClient, binding: str) -> ClientConfig:
    # The card says streaming true: the SDK sends SendStreamingMessage without being told.
    return ClientConfig(httpx_client=http, supported_protocol_bindings=[binding])


def authed(key: str | None) -> httpx.AsyncClient:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return httpx.AsyncClient(headers=headers, timeout=TIMEOUT)


def text_message(text: str, message_id: str | None = None) -> SendMessageRequest:
    return SendMessageRequest(
        message=Message(
            role=Role.ROLE_USER,
            message_id=message_id or str(uuid.uuid4()),
            parts=[Part(text=text)],
        )
    )


def data_message(payload: dict) -> SendMessageRequest:
    value = Value()
    value.struct_value.update(payload)  # a protobuf Struct: its numbers are doubles
    return SendMessageRequest(
        message=Message(
            role=Role.ROLE_USER,
            message_id=str(uuid.uuid4()),
            parts=[Part(data=value, media_type="application/json")],
        )
    )


async def send(
    client: Any, request: SendMessageRequest, context: ClientCallContext | None = None
) -> dict:
    """What `send_message` yields: the events of the SendStreamingMessage stream it opens."""
    try:
        events = [proto(event) async for event in client.send_message(request, context=context)]
    except Exception as error:
        return {"error": type(error).__name__, "message": str(error), "data": getattr(error, "data", None)}
    return {"events": events}


def transport_of(client: Any) -> str:
    return type(getattr(client, "_transport", None)).__name__


async def flow_card(base: str, run: dict) -> dict:
    """a. The marketplace's card, its signature verified; a client for the run's binding, which
    lists tasks without a credential."""
    async with authed(None) as http:
        card, seen = await resolve(http, base, base)
        client = ClientFactory(config(http, run["binding"])).create(card)
        seen["transport"] = transport_of(client)
        # No credential: bourse answers HTTP 401 on both bindings, which the SDK raises as is.
        seen["anonymous_list"] = await caught(client.list_tasks(ListTasksRequest()))
        await client.close()
    return seen


async def flow_message(base: str, run: dict) -> dict:
    """b. An agent's card at <base>/a2a/agents/<handle>, a text message sent to it twice with
    one messageId."""
    recipient = run["recipient"]["handle"]
    async with authed(run["sender"]["key"]) as http:
        card, seen = await resolve(http, base, f"{base}/a2a/agents/{recipient}")
        client = await create_client(card, client_config=config(http, run["binding"]))
        seen["transport"] = transport_of(client)
        message_id = str(uuid.uuid4())
        seen["message_id"] = message_id
        seen["first"] = await send(client, text_message(run["text"], message_id))
        seen["again"] = await send(client, text_message(run["text"], message_id))
        await client.close()
    return seen


async def flow_purchases(base: str, run: dict) -> dict:
    """c, d, e. A free listing bought as a task; a paid one waiting for its checkout, paid at
    the sandbox, then read; a second paid one canceled (twice); an unknown task; the buyer's
    list, filtered and paged; another agent's list."""
    seen: dict = {}
    async with authed(run["buyer"]["key"]) as http, authed(run["other"]["key"]) as other_http:
        card, _ = await resolve(http, base, base)
        client = ClientFactory(config(http, run["binding"])).create(card)
        other = ClientFactory(config(other_http, run["binding"])).create(card)
        seen["transport"] = transport_of(client)

        # c. Free: completed at once, the deliverable an artifact; read again with GetTask.
        seen["free"] = await send(client, data_message({"listingId": run["free_listing"]}))
        free_id = task_id(seen["free"])
        seen["free_get"] = await caught(client.get_task(GetTaskRequest(id=free_id)))

        # d. Paid: waits for its checkout; the checkout is paid as its page's Pay button does
        # (the sandbox's scripted pay); GetTask then relays the deliverable.
        seen["paid"] = await send(client, data_message({"listingId": run["paid_listing"]}))
        paid_id = task_id(seen["paid"])
        seen["paid_before"] = await caught(client.get_task(GetTaskRequest(id=paid_id)))
        checkout = checkout_url(seen["paid"])
        session = checkout.rsplit("/", 1)[-1]
        paid = await http.post(f"{base}/api/sandbox/checkout/{session}/pay", json={})
        seen["pay_status"] = paid.status_code
        seen["paid_after"] = await caught(client.get_task(GetTaskRequest(id=paid_id)))

        # e. A second paid purchase canceled, then canceled again; an unknown task.
        seen["second"] = await send(client, data_message({"listingId": run["paid_listing"]}))
        second_id = task_id(seen["second"])
        seen["cancel"] = await caught(client.cancel_task(CancelTaskRequest(id=second_id)))
        seen["cancel_again"] = await caught(client.cancel_task(CancelTaskRequest(id=second_id)))
        seen["unknown"] = await caught(client.get_task(GetTaskRequest(id=str(uuid.uuid4()))))
        # A third, left waiting, so that every listed state has a task.
        seen["third"] = await send(client, data_message({"listingId": run["paid_listing"]}))

        seen["list"] = await caught(client.list_tasks(ListTasksRequest()))
        seen["list_by_status"] = {
            TaskState.Name(state): await caught(client.list_tasks(ListTasksRequest(status=state)))
            for state in (
                TaskState.TASK_STATE_COMPLETED,
                TaskState.TASK_STATE_INPUT_REQUIRED,
                TaskState.TASK_STATE_CANCELED,
            )
        }
        seen["list_with_artifacts"] = await caught(
            client.list_tasks(ListTasksRequest(include_artifacts=True))
        )
        seen["pages"] = await pages(lambda token: client.list_tasks(
            ListTasksRequest(page_size=1, page_token=token)
        ))
        seen["other_list"] = await caught(other.list_tasks(ListTasksRequest()))
        seen["other_get"] = await caught(other.get_task(GetTaskRequest(id=free_id)))
        await client.close()
        await other.close()
    return seen


async def pages(list_page: Callable[[str], Awaitable[Any]]) -> list[dict]:
    """Every page, following nextPageToken until it is empty (at most MAX_PAGES)."""
    found = []
    token = ""
    for _ in range(MAX_PAGES):
        page = await caught(list_page(token))
        found.append(page)
        token = page.get("ok", {}).get("nextPageToken", "")
        if not token:
            break
    return found


def task_id(sent: dict) -> str:
    events = sent.get("events")
    if not events or "task" not in events[0]:
        raise RuntimeError(f"the send did not answer a task: {sent}")
    return events[0]["task"]["id"]


def checkout_url(sent: dict) -> str:
    for part in sent["events"][0]["task"]["status"]["message"]["parts"]:
        if isinstance(part.get("data"), dict) and "checkoutUrl" in part["data"]:
            return part["data"]["checkoutUrl"]
    raise RuntimeError(f"no checkoutUrl in the task's status message: {sent}")


async def flow_browse(base: str, run: dict) -> dict:
    """f. Browse as a message with a data part {"query": ...} (numbers as the SDK sends them:
    doubles)."""
    seen: dict = {}
    async with authed(run.get("key")) as http:
        card, _ = await resolve(http, base, base)
        client = ClientFactory(config(http, run["binding"])).create(card)
        seen["transport"] = transport_of(client)
        request = data_message({"query": run["query"], "limit": 2})
        seen["request"] = proto(request)
        seen["browse"] = await send(client, request)
        seen["no_match"] = await send(client, data_message({"query": run["no_match"]}))
        await client.close()
    return seen


async def flow_spending(base: str, run: dict) -> dict:
    """g. The spending skill: set the policy with the full key (the cap as the SDK sends numbers:
    a double), read the spending back, and a restricted key refused when it sets the policy."""
    seen: dict = {}
    for who in ("key", "restricted"):
        async with authed(run[who]) as http:
            card, _ = await resolve(http, base, base)
            client = ClientFactory(config(http, run["binding"])).create(card)
            if who == "key":
                seen["transport"] = transport_of(client)
                policy = {"spendingPolicy": {"dailyCents": run["daily"]}}
                seen["set"] = await send(client, data_message(policy))
                seen["read"] = await send(client, data_message({"spending": {}}))
            else:
                seen["restricted_read"] = await send(client, data_message({"spending": {}}))
                seen["refused"] = await send(client, data_message({"spendingPolicy": {}}))
            await client.close()
    return seen


# The a2a-x402 extension (v0.2), activated per call through the SDK's service parameters.
X402_EXTENSION = "https://github.com/google-agentic-commerce/a2a-x402/blob/main/spec/v0.2"


def last_task(sent: dict) -> dict:
    """The task as a send's stream left it: its last `task` event, with any later status
    update's status."""
    task = None
    for event in sent.get("events") or []:
        if "task" in event:
            task = dict(event["task"])
        elif "statusUpdate" in event and task is not None:
            task["status"] = event["statusUpdate"]["status"]
    if task is None:
        raise RuntimeError(f"the send did not answer a task: {sent}")
    return task


async def flow_x402(base: str, run: dict) -> dict:
    """An order paid with x402 over A2A (a2a-x402 v0.2), the extension activated through the
    SDK's service parameters (the A2A-Extensions header): a data part {"listingId"} opens a
    task waiting for its payment with `x402.payment.required`; a message naming that task with
    `x402.payment.payload` (built here from `accepts[0]` and the run's authorization) pays it;
    GetTask reads it back. Every request's and answer's A2A-Extensions header is recorded."""
    seen: dict = {"exchanges": []}

    async def record(response: httpx.Response) -> None:
        seen["exchanges"].append({
            "method": response.request.method,
            "path": response.request.url.path,
            "requested": response.request.headers.get("A2A-Extensions"),
            "activated": response.headers.get("A2A-Extensions"),
        })

    context = ClientCallContext(
        service_parameters=ServiceParametersFactory.create([with_a2a_extensions([X402_EXTENSION])])
    )
    async with authed(run["buyer"]["key"]) as http:
        http.event_hooks["response"].append(record)
        card, _ = await resolve(http, base, base)
        seen["extensions"] = proto(card.capabilities).get("extensions", [])
        client = ClientFactory(config(http, run["binding"])).create(card)
        seen["transport"] = transport_of(client)

        seen["order"] = await send(client, data_message({"listingId": run["listing"]}), context)
        order = seen["order_task"] = last_task(seen["order"])
        metadata = order["status"]["message"]["metadata"]
        accepted = metadata["x402.payment.required"]["accepts"][0]

        payment = Message(
            role=Role.ROLE_USER,
            message_id=str(uuid.uuid4()),
            task_id=order["id"],
            context_id=order["contextId"],
            parts=[Part(text="Paying with x402.")],
        )
        payment.metadata.update({
            "x402.payment.status": "payment-submitted",
            "x402.payment.payload": {
                "x402Version": 2,
                "accepted": accepted,
                "payload": run["authorization"],
            },
        })
        request = SendMessageRequest(message=payment)
        seen["payment_request"] = proto(request)
        seen["paid"] = await send(client, request, context)
        seen["paid_task"] = last_task(seen["paid"])
        seen["get"] = await caught(client.get_task(GetTaskRequest(id=order["id"]), context=context))
        await client.close()
    return seen


FLOWS = {
    "card": flow_card,
    "message": flow_message,
    "purchases": flow_purchases,
    "browse": flow_browse,
    "x402": flow_x402,
    "spending": flow_spending,
}


async def main() -> None:
    raw = sys.argv[1] if len(sys.argv) > 1 else sys.stdin.read()
    inputs = json.loads(raw)
    base = inputs["base"].rstrip("/")
    flow = FLOWS[inputs["flow"]]
    runs = []
    for run in inputs["runs"]:
        observed = await flow(base, run)
        observed["binding"] = run["binding"]
        runs.append(observed)
    json.dump({"runs": runs}, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    asyncio.run(main())
