//! bourse: a self-hostable, single-binary marketplace and messaging rail for software agents,
//! over one SQLite file, with Ed25519-signed receipts verifiable offline.
//!
//! # Layout
//! - [`cli`]: the command line (`serve`, `keys rotate`, `backup`, `verify`, `chair bind`,
//!   `fees announce`).
//! - [`config`]: the server configuration struct.
//! - [`server`]: accept loop and graceful shutdown.
//! - [`http`]: routing, request reading, response and error mapping, access logs.
//! - [`assets`]: the embedded `assets/` files (documents and the taxonomy).
//! - `api`: REST handlers, thin adapters over [`service`], one file per resource.
//! - `pages`: the server-rendered HTML pages (sandbox checkout and onboarding, `/disclosures`).
//! - [`request`]: one declaration per operation, read from REST and MCP into typed requests.
//! - [`service`]: every business rule, by domain; takes typed requests, never raw JSON.
//! - [`store`]: SQLite schema, migrations and synchronous queries.
//! - [`crypto`]: canonical JSON, keys and signatures (no I/O beyond the keyfile).
//! - [`mcp`]: the MCP endpoint (JSON-RPC over Streamable HTTP), a thin face over [`service`].
//! - [`outbound`]: the one SSRF-safe client for every URL users control.
//! - [`seller_kit`]: what a seller's delivery endpoint needs to check bourse's signed requests.
//! - [`args`]: typed reading of JSON objects with field-naming errors.
//! - [`clock`]: injectable time.
//! - [`telemetry`]: the Prometheus metrics (`GET /metrics`).
//! - [`error`]: the one error enum.

pub mod a2a;
mod api;
pub mod args;
pub mod assets;
pub mod cli;
pub mod clock;
pub mod config;
pub mod crypto;
pub mod error;
pub mod http;
#[cfg(test)]
mod invariants;
pub mod logs;
pub mod mcp;
pub mod memory;
pub mod operations;
pub mod outbound;
mod pages;
pub mod request;
pub mod seller_kit;
pub mod server;
pub mod service;
pub mod store;
pub mod telemetry;
pub mod tlog_cli;

use std::sync::Arc;

use tokio::net::TcpListener;

use crate::clock::Clock;
use crate::config::Config;
use crate::http::HttpSettings;
use crate::server::Server;
use crate::service::{App, DataDir, Options};

/// Binds the listener and opens the data directory; the server is ready to `run`.
///
/// # Errors
/// The address cannot be bound, or the data directory cannot be opened.
pub async fn bind(config: &Config, clock: Arc<dyn Clock>) -> Result<Server, String> {
    let listener = TcpListener::bind(config.listen)
        .await
        .map_err(|e| format!("cannot listen on {}: {e}", config.listen))?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    if config.relaxed_limits
        && config
            .public_url
            .as_deref()
            .is_some_and(|url| url.starts_with("https://"))
    {
        return Err(
            "--relaxed-limits is for local sandboxes and CI: it is refused with an https:// public URL (a public instance needs its per-client limits)"
                .into(),
        );
    }
    let public_url = match &config.public_url {
        Some(url) => url.trim_end_matches('/').to_owned(),
        None => format!("http://{addr}"),
    };
    let data = DataDir(config.data_dir.clone());
    let options = Options {
        public_url,
        allow_loopback_outbound: config.allow_loopback_outbound,
        relaxed_limits: config.relaxed_limits,
        max_deliverable_bytes: config.max_deliverable_bytes,
        escrow_hold: config.escrow_hold,
        checkout_expiry: config.checkout_expiry,
        payments: config.payments.clone(),
        x402: config.x402.clone(),
        replication: config.replication.clone(),
        accept_new_signing_key: config.accept_new_signing_key,
        metrics_public: config.metrics_public,
        accept_log_behind: config.accept_log_behind,
        witnesses: config.witnesses.clone(),
    };
    let app = tokio::task::spawn_blocking(move || App::open(&data, options, clock))
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| e.to_string())?;
    let settings = HttpSettings {
        max_body_bytes: config.max_body_bytes,
        trusted_proxies: config.trusted_proxies.clone(),
        read_timeout: config.read_timeout,
    };
    Ok(Server::new(
        listener,
        Arc::new(app),
        settings,
        config.shutdown_grace,
    ))
}
