"""Converts bourse's served MCP tool list with the agent SDKs' own MCP adapters, offline (no
model is called): the OpenAI Agents SDK (strict and non-strict function tools), google-genai's
MCP adapter (the path `generate_content(tools=[session])` takes) and LangChain's MCP adapters
(then LangChain's conversion to a model's tool format). Every tool must convert with every SDK.

usage: python convert.py BASE_URL    (the server's base, e.g. http://127.0.0.1:8080)
Prints one line per SDK and failure, and `N passed, N failed` at the end; exits 1 on a failure.
"""

import asyncio
import json
import sys
import urllib.request

import mcp.types


def served_tools(base):
    request = urllib.request.Request(
        base + "/api/mcp",
        data=json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}).encode(),
        headers={
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
            "mcp-protocol-version": "2025-11-25",
        },
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return [mcp.types.Tool.model_validate(t) for t in json.load(response)["result"]["tools"]]


def openai_agents(tool, strict):
    from agents.mcp import MCPServerStreamableHttp
    from agents.mcp.util import MCPUtil

    # Made, never connected: the conversion only reads its settings.
    server = MCPServerStreamableHttp(params={"url": "http://127.0.0.1:9/api/mcp"}, name="bourse")
    converted = MCPUtil.to_function_tool(tool, server, convert_schemas_to_strict=strict)
    json.dumps(converted.params_json_schema)
    if strict and not converted.strict_json_schema:
        # The SDK's own fallback for a schema strict mode cannot express (an object with no
        # declared properties: a tool without arguments, a free-form `preview`): the tool
        # converts and works, non-strict.
        return "non-strict fallback"
    return None


def google_genai(tool):
    from google.genai import _mcp_utils

    gemini = _mcp_utils.mcp_to_gemini_tool(tool)
    declaration = gemini.function_declarations[0]
    if declaration.name != tool.name:
        raise ValueError(f"converted as {declaration.name}")


def langchain(tool):
    from langchain_core.utils.function_calling import convert_to_openai_tool
    from langchain_mcp_adapters.tools import convert_mcp_tool_to_langchain_tool

    connection = {"transport": "streamable_http", "url": "http://127.0.0.1:9/api/mcp"}
    converted = convert_mcp_tool_to_langchain_tool(None, tool, connection=connection)
    convert_to_openai_tool(converted)


def main():
    tools = served_tools(sys.argv[1])
    checks = [
        ("openai-agents strict", lambda t: openai_agents(t, True)),
        ("openai-agents non-strict", lambda t: openai_agents(t, False)),
        ("google-genai", google_genai),
        ("langchain-mcp-adapters", langchain),
    ]
    passed = failed = 0
    for sdk, convert in checks:
        for tool in tools:
            try:
                note = convert(tool)
                passed += 1
                if note:
                    print(f"NOTE {sdk}: {tool.name}: {note}")
            except Exception as error:  # noqa: BLE001 - every failure is reported
                failed += 1
                print(f"FAIL {sdk}: {tool.name}: {type(error).__name__}: {error}")
    print(f"{len(tools)} tools, {len(checks)} SDK conversions each")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
