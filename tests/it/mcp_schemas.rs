//! The MCP tools' `inputSchema`s against their handlers.

use serde_json::json;

use crate::mcp_market::err;
use crate::support::TestServer;

/// An `api_key` argument is a non-empty string, as a REST body's is: `""` is invalid input, not
/// a key naming another agent.
#[test]
fn an_empty_api_key_argument_is_invalid_input() {
    let server = TestServer::start();
    let key = server.party("keyed").key;
    for bad in [json!(""), json!(null), json!(5)] {
        let arguments = json!({ "api_key": bad });
        let error = err(
            &server,
            Some(&key),
            "seller_dashboard",
            arguments,
            "INVALID_ARGUMENT",
        );
        assert_eq!(error["status"], 400, "{bad}");
    }
}
