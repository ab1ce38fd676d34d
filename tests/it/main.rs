//! Black-box tests: the real server on port 0 with a temp data dir, spoken to over HTTP, and
//! the real binary for command-line behaviour.

mod a2a_sdk;
mod agent_sdks;
mod agents;
mod architecture;
mod catalog;
mod catalog_browse;
mod checkout;
mod cli;
mod console;
mod console_browser;
mod contact;
mod contract;
mod contract_bounds;
mod discovery;
mod docker_image;
mod docs;
mod edges;
mod health;
mod http_core;
mod ingress;
mod lingering_close;
mod mcp;
mod mcp_market;
mod mcp_protocol;
mod mcp_schemas;
mod messages;
mod meta;
mod oauth;
mod oauth_clients;
mod oauth_discovery;
mod oauth_refusals;
mod pages_browser;
mod participation;
mod proof;
mod purchases;
mod readme;
mod receipts;
mod replication;
#[allow(dead_code)]
mod secrets_in_logs;
mod seller_twin;
mod static_binary;
mod stripe;
mod support;
mod x402;
