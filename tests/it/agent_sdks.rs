//! The served MCP tools load in the major agent SDKs: `tests/agent_sdks/convert.py` converts
//! `tools/list` with the OpenAI Agents SDK (strict and non-strict), google-genai's MCP adapter
//! and LangChain's MCP adapters, offline, and every tool must convert with every one. It runs
//! with the Python of `BOURSE_AGENT_SDKS_PYTHON` (a venv `.ci/run` makes with the pinned SDKs).

use std::process::Command;

use crate::support::{TestServer, skip_or_fail};

#[test]
fn every_tool_converts_with_every_major_agent_sdk() {
    let test = "agent_sdks::every_tool_converts_with_every_major_agent_sdk";
    let Some(python) = std::env::var_os("BOURSE_AGENT_SDKS_PYTHON").filter(|p| !p.is_empty())
    else {
        skip_or_fail(
            test,
            "BOURSE_AGENT_SDKS_PYTHON is not set (a Python with openai-agents, google-genai and langchain-mcp-adapters; .ci/run makes one)",
        );
        return;
    };
    let server = TestServer::start();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/agent_sdks/convert.py");
    let output = Command::new(python)
        .args([script, &server.base])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "a tool does not convert:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let tools = bourse::operations::Operation::tools().count();
    assert!(
        stdout.contains(&format!("{tools} tools"))
            && stdout.lines().any(|l| l.ends_with(" 0 failed")),
        "{stdout}"
    );
}
