//! Server configuration: a plain struct built by the CLI (flags > `BOURSE_*` env > defaults)
//! or directly by tests. No global state, so several servers can run in one process.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

/// How access and server logs are written to stderr.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

/// Everything `serve` needs.
#[derive(Clone, Debug)]
pub struct Config {
    /// Address to bind; port 0 picks a free port.
    pub listen: SocketAddr,
    /// Data directory (database, signing key, operator key).
    pub data_dir: PathBuf,
    /// Base of every URL handed out; derived from the bound address when `None`.
    pub public_url: Option<String>,
    /// Peers whose `X-Forwarded-For` header is believed.
    pub trusted_proxies: Vec<IpAddr>,
    /// Longest drain of in-flight requests on shutdown.
    pub shutdown_grace: Duration,
    /// Largest accepted request body in bytes.
    pub max_body_bytes: usize,
    /// Longest wait for a request head, and again for its body: 408 `REQUEST_TIMEOUT` beyond.
    pub read_timeout: Duration,
    /// Permit `http://` and loopback destinations for outbound calls (local sandboxes, CI).
    pub allow_loopback_outbound: bool,
    /// No per-client limits (registration, admission, inquiries, ingress): local sandboxes, CI.
    pub relaxed_limits: bool,
    /// Largest deliverable fetched from a seller's endpoint.
    pub max_deliverable_bytes: usize,
    /// How long paid money stays in escrow after the first delivery.
    pub escrow_hold: Duration,
    /// How long a checkout session (and its reservation) stays open.
    pub checkout_expiry: Duration,
    /// The card/checkout rail: the local sandbox, or Stripe.
    pub payments: Payments,
    /// The autonomous per-query rail (`x402_usdc_base`), when configured.
    pub x402: Option<X402Settings>,
    /// This server's part in Litestream replication.
    pub replication: Replication,
    /// Start on a database recorded with other signing keys, keeping their public halves so
    /// earlier receipts still verify (`serve --accept-new-signing-key`).
    pub accept_new_signing_key: bool,
    /// `GET /metrics` answers without the operator token (`serve --metrics-public`).
    pub metrics_public: bool,
    /// Start on a database whose transparency log is behind a checkpoint this instance already
    /// published (`serve --accept-log-behind`).
    pub accept_log_behind: bool,
    /// Witnesses asked to cosign each new checkpoint (c2sp.org/tlog-witness): (verifier key,
    /// base URL) (`serve --witness VKEY=URL`).
    pub witnesses: Vec<(String, String)>,
}

/// A server's part in replication (`serve --replicated`, `serve --follow`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Replication {
    /// One node, nothing replicated: bourse checkpoints its WAL itself (the default).
    #[default]
    Off,
    /// The primary of a database Litestream replicates: checkpoints are left to Litestream,
    /// and a heartbeat is written every second for followers to measure their lag by.
    Primary,
    /// A read-only follower serving public reads from a replica that `litestream restore -f`
    /// keeps current; everything else is redirected to the primary at this URL. Not ready
    /// (`/readyz` 503) while its lag exceeds `max_lag_secs`.
    Follower { primary: String, max_lag_secs: u64 },
}

/// The card/checkout payment rail (`serve --payments`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Payments {
    /// Local checkout and onboarding pages, no accounts, no network (the default).
    Sandbox,
    /// Stripe Checkout and Connect Express, money held on the platform until escrow release.
    Stripe(StripeSettings),
}

/// What the Stripe rail needs.
#[derive(Clone, PartialEq, Eq)]
pub struct StripeSettings {
    /// `sk_live_…` / `sk_test_…` (or a restricted `rk_…` key).
    pub secret_key: String,
    /// The webhook endpoint's signing secret, `whsec_…`.
    pub webhook_secret: String,
    /// Where the Stripe API is, without a trailing slash (tests point it at a local fake).
    pub api_base: String,
}

impl StripeSettings {
    /// Whether the key is a live-mode key (real money; events of test mode are ignored).
    pub fn is_live(&self) -> bool {
        self.secret_key.contains("_live_")
    }
}

impl std::fmt::Debug for StripeSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StripeSettings")
            .field("secret_key", &"<redacted>")
            .field("webhook_secret", &"<redacted>")
            .field("api_base", &self.api_base)
            .finish()
    }
}

/// Stripe's API.
pub const DEFAULT_STRIPE_API_BASE: &str = "https://api.stripe.com";

/// What the `x402_usdc_base` rail needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct X402Settings {
    /// The address USDC is paid to (`0x` + 40 hex digits).
    pub pay_to: String,
    /// The facilitator's base URL (`/verify` and `/settle` below it), without a trailing slash.
    pub facilitator_url: String,
    /// CAIP-2 network id: `eip155:8453` (Base) or `eip155:84532` (Base Sepolia).
    pub network: String,
}

/// Base mainnet.
pub const DEFAULT_X402_NETWORK: &str = "eip155:8453";

/// Seven days: long enough for a buyer to check a deliverable, short enough for sellers.
pub const DEFAULT_ESCROW_HOLD: Duration = Duration::from_secs(7 * 24 * 3600);
/// Thirty minutes to pay, as hosted checkouts commonly allow.
pub const DEFAULT_CHECKOUT_EXPIRY: Duration = Duration::from_secs(30 * 60);

impl Config {
    /// Defaults for a data directory, listening on an ephemeral loopback port, with loopback
    /// outbound calls allowed so tests can run a seller endpoint on 127.0.0.1 (tests).
    pub fn for_tests(data_dir: PathBuf) -> Config {
        Config {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            data_dir,
            public_url: None,
            trusted_proxies: Vec::new(),
            shutdown_grace: Duration::from_secs(10),
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            read_timeout: DEFAULT_READ_TIMEOUT,
            allow_loopback_outbound: true,
            relaxed_limits: false,
            max_deliverable_bytes: DEFAULT_MAX_DELIVERABLE_BYTES,
            escrow_hold: DEFAULT_ESCROW_HOLD,
            checkout_expiry: DEFAULT_CHECKOUT_EXPIRY,
            payments: Payments::Sandbox,
            x402: None,
            replication: Replication::Off,
            accept_new_signing_key: false,
            metrics_public: false,
            accept_log_behind: false,
            witnesses: Vec::new(),
        }
    }
}

/// 30 s for a request head, and 30 s for its body: a client that trickles one holds no task long.
pub const DEFAULT_READ_TIMEOUT: Duration = Duration::from_secs(30);

/// 1 MiB: generous for JSON metadata, small enough to refuse abuse cheaply.
pub const DEFAULT_MAX_BODY_BYTES: usize = 1 << 20;

/// 16 MiB: the largest deliverable relayed or fingerprinted by default.
pub const DEFAULT_MAX_DELIVERABLE_BYTES: usize = 16 << 20;

/// An `http://` or `https://` URL as a flag gives it (no whitespace, controls or quotes), without
/// its trailing slashes; the one reading of a URL flag (`cli`, `tlog_cli`).
pub fn parse_public_url(text: &str) -> Result<String, String> {
    let ok = (text.starts_with("http://") || text.starts_with("https://"))
        && text
            .split("://")
            .nth(1)
            .is_some_and(|rest| !rest.is_empty())
        && !text.contains(|c: char| c.is_whitespace() || c.is_control() || "\"<>\\`".contains(c));
    if ok {
        Ok(text.trim_end_matches('/').to_owned())
    } else {
        Err("must be an http:// or https:// URL".into())
    }
}
