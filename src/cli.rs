//! The command line. Every flag can also come from an environment variable `BOURSE_<FLAG>`;
//! a flag given on the command line wins over the environment.

use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::{Args as ClapArgs, Parser, Subcommand};
use serde_json::Value;

use crate::clock::{Clock, SandboxClock, SystemClock, rfc3339};
use crate::config::{
    Config, DEFAULT_CHECKOUT_EXPIRY, DEFAULT_ESCROW_HOLD, DEFAULT_MAX_BODY_BYTES,
    DEFAULT_MAX_DELIVERABLE_BYTES, DEFAULT_STRIPE_API_BASE, DEFAULT_X402_NETWORK, LogFormat,
    Payments, Replication, StripeSettings, X402Settings,
};
use crate::crypto::keys::{Keyring, PublicKeyRecord};
use crate::service::{DataDir, identity::agents, trust::receipts};
use crate::store::Store;

#[derive(Parser)]
#[command(
    name = "bourse",
    version,
    about = "Self-hostable marketplace and messaging rail for software agents"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the HTTP server.
    Serve(Box<ServeArgs>),
    /// Manage the signing keys.
    Keys {
        #[command(subcommand)]
        action: KeysAction,
    },
    /// Write a consistent copy of the database while the server runs.
    Backup {
        #[command(flatten)]
        data: DataArg,
        /// Where to write the copy (must not exist).
        out: PathBuf,
    },
    /// Verify a signed JSON document offline (exit 0 valid, 1 invalid, 2 unusable input).
    Verify(VerifyArgs),
    /// Manage the operator's chair agent.
    Chair {
        #[command(subcommand)]
        action: ChairAction,
    },
    /// Manage the fee schedule.
    Fees {
        #[command(subcommand)]
        action: FeesAction,
    },
    /// The transparency log.
    Log {
        #[command(subcommand)]
        action: crate::tlog_cli::LogAction,
    },
    /// Print the version (as `--version` does).
    Version,
    /// Print a shell completion script: `bourse completions bash > /etc/bash_completion.d/bourse`,
    /// `bourse completions zsh > "${fpath[1]}/_bourse"`, `bourse completions fish >
    /// ~/.config/fish/completions/bourse.fish`.
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Ask a running server whether it is up (`/healthz`) or ready (`/readyz`): exit 0 when it
    /// answers 200, 1 otherwise. For container health checks, where no curl exists.
    Health {
        /// The server's base URL.
        #[arg(long, env = "BOURSE_HEALTH_URL", default_value = "http://127.0.0.1:8080", value_parser = crate::config::parse_public_url)]
        url: String,
        /// Ask `/readyz` (the database answers; a follower within its lag) instead of `/healthz`.
        #[arg(long)]
        ready: bool,
    },
}

#[derive(Subcommand)]
enum FeesAction {
    /// Announce a schedule change (needs 60 days of notice and cannot take effect before the
    /// rate lock ends); it appears at /api/fees as a draft with its effective date.
    #[command(
        after_help = "Example (the schedule is published as sent, as a draft at /api/fees until it takes effect):\n  \
        bourse fees announce --data ./bourse-data --effective-from 2027-09-01 \\\n    \
        --schedule '{\"standardBps\": 400, \"buyerBps\": 0}' \\\n    \
        --note 'The standard band goes from 5% to 4%.'"
    )]
    Announce {
        /// The day the new schedule takes effect (YYYY-MM-DD).
        #[arg(long)]
        effective_from: String,
        /// The new schedule as a JSON object (bands, rates).
        #[arg(long)]
        schedule: String,
        /// A note for agents reading /api/fees.
        #[arg(long)]
        note: Option<String>,
        #[command(flatten)]
        data: DataArg,
    },
}

#[derive(Subcommand)]
enum KeysAction {
    /// Make a new signing key current; earlier public keys stay resolvable. Restart `serve` to
    /// start signing with it.
    Rotate {
        #[command(flatten)]
        data: DataArg,
    },
}

#[derive(Subcommand)]
enum ChairAction {
    /// Bind the agent with this handle as the operator's chair (verified on lookup).
    Bind {
        /// The agent's handle, e.g. A-7KQ2M9XD.
        handle: String,
        #[command(flatten)]
        data: DataArg,
    },
}

#[derive(ClapArgs)]
struct DataArg {
    /// Data directory: bourse.db, signing.key, operator.key.
    #[arg(long, env = "BOURSE_DATA", default_value = "./bourse-data")]
    data: PathBuf,
}

#[derive(ClapArgs)]
struct ServeArgs {
    /// Address to listen on; port 0 picks a free port.
    #[arg(long, env = "BOURSE_LISTEN", default_value = "127.0.0.1:8080", value_parser = parse_listen)]
    listen: SocketAddr,
    /// Port to listen on, on the --listen address's host: `--port 9000` is
    /// `--listen 127.0.0.1:9000`.
    #[arg(long, env = "BOURSE_PORT")]
    port: Option<u16>,
    #[command(flatten)]
    data: DataArg,
    /// Base URL used in every URL the server hands out [default: http://<bound address>].
    #[arg(long, env = "BOURSE_PUBLIC_URL", value_parser = crate::config::parse_public_url)]
    public_url: Option<String>,
    /// Log format on stderr.
    #[arg(long, env = "BOURSE_LOG_FORMAT", value_enum, default_value = "text")]
    log_format: LogFormat,
    /// Proxy address whose X-Forwarded-For is trusted for the client IP (repeat or comma-separate).
    #[arg(long, env = "BOURSE_TRUSTED_PROXY", value_delimiter = ',')]
    trusted_proxy: Vec<IpAddr>,
    /// Seconds to drain in-flight requests on SIGINT/SIGTERM.
    #[arg(long, env = "BOURSE_SHUTDOWN_GRACE", default_value_t = 10)]
    shutdown_grace: u64,
    /// Largest accepted request body in bytes.
    #[arg(long, env = "BOURSE_MAX_BODY_BYTES", default_value_t = DEFAULT_MAX_BODY_BYTES)]
    max_body_bytes: usize,
    /// Allow http:// and loopback destinations for outbound calls (seller endpoints, callbacks).
    /// For local sandboxes and CI only; logged as a warning.
    #[arg(long, env = "BOURSE_ALLOW_LOOPBACK_OUTBOUND")]
    allow_loopback_outbound: bool,
    /// Relax the per-client limits (registration, admission, inquiries, ingress) for local
    /// sandboxes and CI suites that register many agents from one address; the per-sender
    /// message limit stays. Logged as a warning; refused with an https:// public URL.
    #[arg(long, env = "BOURSE_RELAXED_LIMITS")]
    relaxed_limits: bool,
    /// Serve `GET /metrics` (Prometheus) without the operator token, for a scraper on a
    /// private network; by default it takes the operator token as a Bearer.
    #[arg(long, env = "BOURSE_METRICS_PUBLIC")]
    metrics_public: bool,
    /// Seconds paid money stays in escrow after the first delivery (and shipment).
    #[arg(long, env = "BOURSE_ESCROW_HOLD", default_value_t = DEFAULT_ESCROW_HOLD.as_secs())]
    escrow_hold: u64,
    /// Seconds a checkout session (and its reservation of the listing) stays open.
    #[arg(long, env = "BOURSE_CHECKOUT_EXPIRY", default_value_t = DEFAULT_CHECKOUT_EXPIRY.as_secs())]
    checkout_expiry: u64,
    /// Largest deliverable fetched from a seller's endpoint, in bytes.
    #[arg(long, env = "BOURSE_MAX_DELIVERABLE_BYTES", default_value_t = DEFAULT_MAX_DELIVERABLE_BYTES)]
    max_deliverable_bytes: usize,
    /// The card/checkout rail: `sandbox` (local checkout pages, no accounts, no network) or
    /// `stripe` (needs --stripe-secret-key and --stripe-webhook-secret).
    #[arg(long, env = "BOURSE_PAYMENTS", value_enum, default_value = "sandbox")]
    payments: PaymentsMode,
    /// Stripe secret key (sk_… or rk_…); with --payments stripe.
    #[arg(long, env = "BOURSE_STRIPE_SECRET_KEY", hide_env_values = true)]
    stripe_secret_key: Option<String>,
    /// Signing secret (whsec_…) of the webhook endpoint pointed at /api/webhooks/stripe; several,
    /// comma-separated, when a platform endpoint and a Connect endpoint both point there.
    #[arg(long, env = "BOURSE_STRIPE_WEBHOOK_SECRET", hide_env_values = true)]
    stripe_webhook_secret: Option<String>,
    /// Stripe API base URL (override for a local fake or stripe-mock).
    #[arg(long, env = "BOURSE_STRIPE_API_BASE", default_value = DEFAULT_STRIPE_API_BASE, value_parser = crate::config::parse_public_url)]
    stripe_api_base: String,
    /// Address receiving USDC for the x402_usdc_base rail (0x + 40 hex digits); enables the rail.
    #[arg(long, env = "BOURSE_X402_PAY_TO")]
    x402_pay_to: Option<String>,
    /// The x402 facilitator's base URL (POST /verify and /settle below it); needed with --x402-pay-to.
    #[arg(long, env = "BOURSE_X402_FACILITATOR_URL", value_parser = crate::config::parse_public_url)]
    x402_facilitator_url: Option<String>,
    /// CAIP-2 network of the x402 rail: eip155:8453 (Base) or eip155:84532 (Base Sepolia).
    #[arg(long, env = "BOURSE_X402_NETWORK", default_value = DEFAULT_X402_NETWORK)]
    x402_network: String,
    /// Litestream replicates DATA/bourse.db: leave WAL checkpoints to it, and write a heartbeat
    /// every second by which followers measure their lag.
    #[arg(long, env = "BOURSE_REPLICATED", conflicts_with = "follow")]
    replicated: bool,
    /// Serve as a read-only follower of the primary at this URL: DATA/bourse.db is a replica kept
    /// current by `litestream restore -f`; public reads are answered here, everything else is
    /// redirected (307) to the primary.
    #[arg(long, env = "BOURSE_FOLLOW", value_parser = crate::config::parse_public_url)]
    follow: Option<String>,
    /// A follower's readiness limit: `/readyz` answers 503 while the replica is more than this
    /// many seconds behind the primary's heartbeat.
    #[arg(
        long,
        env = "BOURSE_FOLLOW_MAX_LAG",
        default_value_t = 30,
        requires = "follow"
    )]
    follow_max_lag: u64,
    /// Start on a database recorded with other signing keys (a restored database without its
    /// signing.key): sign with DATA/signing.key from now on, keeping the recorded public keys so
    /// earlier receipts still verify.
    #[arg(long, env = "BOURSE_ACCEPT_NEW_SIGNING_KEY", conflicts_with = "follow")]
    accept_new_signing_key: bool,
    /// Start although the transparency log is behind a checkpoint already published (monitors
    /// holding it will see the fork).
    #[arg(long, env = "BOURSE_ACCEPT_LOG_BEHIND", conflicts_with = "follow")]
    accept_log_behind: bool,
    /// A witness cosigning each new checkpoint: `<verifier key>=<base URL>` (repeatable).
    #[arg(long = "witness", env = "BOURSE_WITNESSES", value_delimiter = ',', value_parser = crate::tlog_cli::parse_witness)]
    witnesses: Vec<(String, String)>,
}

/// `--payments`.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum PaymentsMode {
    Sandbox,
    Stripe,
}

/// The payment rails from the serve flags, refusing incomplete or inconsistent settings.
fn payment_settings(args: &ServeArgs) -> Result<(Payments, Option<X402Settings>), String> {
    let payments = match args.payments {
        PaymentsMode::Sandbox => {
            if args.stripe_secret_key.is_some() || args.stripe_webhook_secret.is_some() {
                return Err(
                    "--stripe-secret-key and --stripe-webhook-secret need --payments stripe".into(),
                );
            }
            Payments::Sandbox
        }
        PaymentsMode::Stripe => {
            let secret_key = args
                .stripe_secret_key
                .clone()
                .filter(|k| k.starts_with("sk_") || k.starts_with("rk_"))
                .ok_or("--payments stripe needs --stripe-secret-key (sk_… or rk_…)")?;
            let webhook_secret = args
                .stripe_webhook_secret
                .clone()
                .filter(|k| k.split(',').all(|s| s.trim().starts_with("whsec_")))
                .ok_or("--payments stripe needs --stripe-webhook-secret (whsec_…, from the webhook endpoint pointed at /api/webhooks/stripe)")?;
            Payments::Stripe(StripeSettings {
                secret_key,
                webhook_secret,
                api_base: args.stripe_api_base.clone(),
            })
        }
    };
    let x402 = match (&args.x402_pay_to, &args.x402_facilitator_url) {
        (None, None) => None,
        (Some(pay_to), Some(facilitator_url)) => {
            let settings = X402Settings {
                pay_to: pay_to.clone(),
                facilitator_url: facilitator_url.clone(),
                network: args.x402_network.clone(),
            };
            crate::service::commerce::rails::x402::check_settings(&settings)?;
            Some(settings)
        }
        _ => {
            return Err(
                "the x402_usdc_base rail needs both --x402-pay-to and --x402-facilitator-url"
                    .into(),
            );
        }
    };
    Ok((payments, x402))
}

#[derive(ClapArgs)]
struct VerifyArgs {
    /// The signed JSON document (`-` for stdin): a receipt with a top-level `signature`, a
    /// response with `provenance.receipt`, or `{"receipt": …, "payload": …}`.
    file: PathBuf,
    /// Verify against this Ed25519 public key (unpadded base64url; may begin with `-`).
    #[arg(long, allow_hyphen_values = true, conflicts_with_all = ["data", "url"])]
    public_key: Option<String>,
    /// Verify against the keys in DIR/signing.key.
    #[arg(long, conflicts_with = "url")]
    data: Option<PathBuf>,
    /// Fetch the keys from a running server's /api/signing-key (and the log's tiles, for a
    /// --checkpoint newer than the proof's).
    #[arg(long)]
    url: Option<String>,
    /// Also check inclusion in the transparency log with this c2sp.org/tlog-proof.
    #[arg(long)]
    proof: Option<PathBuf>,
    /// With --proof: a later checkpoint to check against (consistency from --url's tiles).
    #[arg(long, requires = "proof")]
    checkpoint: Option<PathBuf>,
}

/// A socket address, with a hint for the usual slips (a port alone, `localhost:PORT`).
fn parse_listen(text: &str) -> Result<SocketAddr, String> {
    if let Ok(address) = text.parse() {
        return Ok(address);
    }
    let port = text
        .strip_prefix("localhost:")
        .or_else(|| text.strip_prefix(':'))
        .unwrap_or(text);
    match port.parse::<u16>() {
        Ok(port) => Err(format!(
            "an address and a port are needed: try 127.0.0.1:{port} (this machine only) or 0.0.0.0:{port} (every interface)"
        )),
        Err(_) => Err(
            "expected an IP address and a port, e.g. 127.0.0.1:8080 or [::1]:8080 (port 0 picks a free one)"
                .into(),
        ),
    }
}

/// Entry point of the binary.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Serve(args) => serve(*args),
        Command::Keys {
            action: KeysAction::Rotate { data },
        } => rotate_keys(&data.data),
        Command::Backup { data, out } => backup(&data.data, &out),
        Command::Verify(args) => return verify(args),
        Command::Chair {
            action: ChairAction::Bind { handle, data },
        } => bind_chair(&data.data, &handle),
        Command::Fees {
            action:
                FeesAction::Announce {
                    effective_from,
                    schedule,
                    note,
                    data,
                },
        } => announce_fees(&data.data, &effective_from, &schedule, note),
        Command::Health { url, ready } => health(&url, ready),
        Command::Log { action } => return crate::tlog_cli::run(action),
        Command::Version => {
            println!("bourse {}", env!("CARGO_PKG_VERSION"));
            Ok(())
        }
        Command::Completions { shell } => {
            let mut command = <Cli as clap::CommandFactory>::command();
            clap_complete::generate(shell, &mut command, "bourse", &mut std::io::stdout());
            Ok(())
        }
    };
    crate::logs::flush();
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("bourse: {message}");
            ExitCode::FAILURE
        }
    }
}

fn health(base: &str, ready: bool) -> Result<(), String> {
    let url = format!("{base}/{}", if ready { "readyz" } else { "healthz" });
    let agent = crate::outbound::configured_agent(
        ureq::Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(0)
            // The server checked is this one, near: never through an HTTP(S)_PROXY.
            .proxy(None)
            .timeout_global(Some(std::time::Duration::from_secs(5)))
            .build(),
    );
    let status = agent
        .get(&url)
        .call()
        .map_err(|e| format!("{url}: {e}"))?
        .status();
    if status == 200 {
        Ok(())
    } else {
        Err(format!("{url} answered {status}"))
    }
}

fn serve(args: ServeArgs) -> Result<(), String> {
    crate::memory::configure();
    let log_format = args.log_format;
    init_logging(log_format);
    let (payments, x402) = payment_settings(&args)?;
    let config = Config {
        listen: match args.port {
            Some(port) => SocketAddr::new(args.listen.ip(), port),
            None => args.listen,
        },
        data_dir: args.data.data,
        public_url: args.public_url,
        trusted_proxies: args.trusted_proxy,
        shutdown_grace: Duration::from_secs(args.shutdown_grace),
        max_body_bytes: args.max_body_bytes,
        read_timeout: crate::config::DEFAULT_READ_TIMEOUT,
        allow_loopback_outbound: args.allow_loopback_outbound,
        relaxed_limits: args.relaxed_limits,
        max_deliverable_bytes: args.max_deliverable_bytes,
        escrow_hold: Duration::from_secs(args.escrow_hold),
        checkout_expiry: Duration::from_secs(args.checkout_expiry),
        payments,
        x402,
        replication: match (args.replicated, args.follow) {
            (_, Some(primary)) => Replication::Follower {
                primary,
                max_lag_secs: args.follow_max_lag,
            },
            (true, None) => Replication::Primary,
            (false, None) => Replication::Off,
        },
        accept_new_signing_key: args.accept_new_signing_key,
        metrics_public: args.metrics_public,
        accept_log_behind: args.accept_log_behind,
        witnesses: args.witnesses,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    runtime.block_on(async {
        // The sandbox rail's test clock: real time plus whatever `POST /api/sandbox/clock` added.
        // Real money runs on real time.
        let clock: Arc<dyn Clock> = match config.payments {
            Payments::Sandbox => Arc::new(SandboxClock::default()),
            Payments::Stripe(_) => Arc::new(SystemClock),
        };
        let server = crate::bind(&config, clock).await?;
        // What building the browse index freed is not needed again.
        crate::memory::release_freed();
        let addr = server.local_addr().map_err(|e| e.to_string())?;
        // Listen for signals before announcing readiness: see `shutdown_signal`.
        let shutdown = crate::server::shutdown_signal();
        let mut stdout = std::io::stdout().lock();
        writeln!(stdout, "bourse listening on http://{addr}").map_err(|e| e.to_string())?;
        stdout.flush().map_err(|e| e.to_string())?;
        drop(stdout);
        let summary = startup_summary(&config, addr);
        match log_format {
            // One JSON object per line on stderr, as every log line: the summary is one too.
            LogFormat::Json => tracing::info!(target: "startup", summary = %summary.trim_end(), "bourse is serving"),
            LogFormat::Text => eprint!("{summary}"),
        }
        tracing::info!(%addr, data = %config.data_dir.display(), "serving");
        server.run(shutdown).await;
        Ok(())
    })
}

/// What a person starting the server needs to know, on stderr after the listening line: where
/// the API and its documents are, where the data and the operator key live (never the key), the
/// payment mode, and warnings about settings that matter.
fn startup_summary(config: &Config, addr: SocketAddr) -> String {
    let public = config
        .public_url
        .clone()
        .unwrap_or_else(|| format!("http://{addr}"));
    let data = std::fs::canonicalize(&config.data_dir).unwrap_or_else(|_| config.data_dir.clone());
    let payments = match &config.payments {
        Payments::Sandbox => "sandbox (local checkout pages; no money moves)".to_owned(),
        Payments::Stripe(settings) if settings.is_live() => {
            "stripe, LIVE key (real money)".to_owned()
        }
        Payments::Stripe(_) => "stripe, test key".to_owned(),
    };
    let mut out = format!(
        "bourse {version} serving {public}\n\
         \x20 API           {public}/api\n\
         \x20 for agents    {public}/llms.txt\n\
         \x20 contract      {public}/openapi.json\n\
         \x20 MCP           {public}/api/mcp\n\
         \x20 disclosures   {public}/disclosures\n\
         \x20 data dir      {data}\n\
         \x20 operator key  {key} (the Bearer token for /api/operator/*)\n\
         \x20 payments      {payments}{x402}\n",
        version = env!("CARGO_PKG_VERSION"),
        data = data.display(),
        key = DataDir(data.clone()).operator_key().display(),
        x402 = match &config.x402 {
            Some(x402) => format!("; x402 on {}", x402.network),
            None => String::new(),
        },
    );
    if addr.ip().is_unspecified() && public.starts_with("http://") {
        out.push_str(
            "warning: listening on every interface with an http:// public URL: keys travel in clear text; put TLS in front and pass --public-url https://…\n",
        );
    }
    if let Replication::Follower { primary, .. } = &config.replication
        && config.public_url.as_deref() == Some(primary.as_str())
    {
        out.push_str(
            "warning: --follow names this server's own public URL: redirects must reach the primary directly (its own address), not a name that may route back to a follower\n",
        );
    }
    if config.relaxed_limits {
        out.push_str(
            "warning: --relaxed-limits: no per-client limits on registration, admission, inquiries or ingress (for sandboxes and CI, never in production)\n",
        );
    }
    if config.metrics_public {
        out.push_str(
            "warning: --metrics-public: GET /metrics answers anyone (for a scraper on a private network; without it, the operator token is needed)\n",
        );
    }
    if config.allow_loopback_outbound {
        out.push_str(
            "warning: --allow-loopback-outbound: seller endpoints and callbacks may be http:// and on this machine (for sandboxes and CI, never in production)\n",
        );
    }
    out
}

fn init_logging(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_env("BOURSE_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    // Colour only for a person at a terminal who has not asked for none (NO_COLOR).
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr())
        && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    let builder = tracing_subscriber::fmt()
        .with_writer(crate::logs::Sink)
        .with_ansi(ansi)
        .with_env_filter(filter);
    match format {
        LogFormat::Json => builder.json().init(),
        LogFormat::Text => builder.init(),
    }
    crate::logs::flush_before_panics();
}

fn rotate_keys(data: &Path) -> Result<(), String> {
    let path = DataDir(data.to_owned()).signing_key();
    let mut keyring = Keyring::load(&path)?;
    let old = keyring.current().key_id.clone();
    keyring.rotate(&rfc3339(jiff::Timestamp::now()));
    keyring.save(&path)?;
    println!(
        "rotated signing key {old} -> {}; restart `bourse serve` to sign with it",
        keyring.current().key_id
    );
    Ok(())
}

fn backup(data: &Path, out: &Path) -> Result<(), String> {
    crate::store::backup(&DataDir(data.to_owned()).database(), out).map_err(|e| e.to_string())?;
    let size = std::fs::metadata(out).map(|m| m.len()).unwrap_or(0);
    println!("backup written to {} ({size} bytes)", out.display());
    Ok(())
}

fn bind_chair(data: &Path, handle: &str) -> Result<(), String> {
    let database = DataDir(data.to_owned()).database();
    if !database.exists() {
        return Err(format!(
            "no database at {}; start `bourse serve` once first",
            database.display()
        ));
    }
    let store = Store::open(&database).map_err(|e| e.to_string())?;
    let bound = agents::bind_chair(&store, handle, &rfc3339(jiff::Timestamp::now()))
        .map_err(|e| e.to_string())?;
    println!(
        "{}",
        serde_json::to_string(&bound).map_err(|e| e.to_string())?
    );
    Ok(())
}

fn announce_fees(
    data: &Path,
    effective_from: &str,
    schedule: &str,
    note: Option<String>,
) -> Result<(), String> {
    let database = DataDir(data.to_owned()).database();
    if !database.exists() {
        return Err(format!(
            "no database at {}; start `bourse serve` once first",
            database.display()
        ));
    }
    let schedule: Value =
        serde_json::from_str(schedule).map_err(|e| format!("--schedule is not JSON: {e}"))?;
    let request =
        serde_json::json!({ "effectiveFrom": effective_from, "schedule": schedule, "note": note });
    // The same declaration and reader as POST /api/operator/fees/announcements.
    let request = crate::request::Input::new(
        crate::request::Face::Rest,
        &crate::request::disclosure::ANNOUNCE,
        request.as_object().cloned().unwrap_or_default(),
    )
    .and_then(|input| crate::request::disclosure::Announce::read(&input))
    .map_err(|e| e.to_string())?;
    let now = jiff::Timestamp::now();
    let today = now.to_zoned(jiff::tz::TimeZone::UTC).date();
    let store = Store::open(&database).map_err(|e| e.to_string())?;
    let stamp = rfc3339(now);
    let announced = store
        .write_blocking(move |tx| {
            crate::service::disclosure::meta::announce(tx, &request, today, &stamp)
        })
        .map_err(|e| e.to_string())?;
    println!(
        "{}",
        serde_json::to_string(&announced).map_err(|e| e.to_string())?
    );
    Ok(())
}

/// `bourse verify`: exit 0 for a document that verifies, 1 for one that does not (forged,
/// altered, unknown key: the verdict says why), 2 when the input cannot be judged at all (no
/// such file, not JSON, not a signed document, no usable key).
fn verify(args: VerifyArgs) -> ExitCode {
    match verify_file(&args) {
        Ok(verdict) => {
            println!(
                "{}",
                serde_json::to_string_pretty(&verdict).expect("verdict serializes")
            );
            if verdict.valid {
                return ExitCode::SUCCESS;
            }
            eprintln!("invalid: {}", verdict.reason.unwrap_or_default());
            ExitCode::from(1)
        }
        Err(message) => {
            eprintln!("bourse verify: cannot check this input: {message}");
            ExitCode::from(2)
        }
    }
}

fn verify_file(args: &VerifyArgs) -> Result<crate::crypto::receipt::Verdict, String> {
    let mut text = String::new();
    if args.file.as_os_str() == "-" {
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(|e| e.to_string())?;
    } else {
        text = std::fs::read_to_string(&args.file)
            .map_err(|e| format!("cannot read {}: {e}", args.file.display()))?;
    }
    let keys = key_source(args)?;
    let resolve = |key_id: &str| -> Option<(PublicKeyRecord, bool)> {
        match &keys {
            KeySource::Single(public_key) => Some((
                PublicKeyRecord {
                    key_id: key_id.to_owned(),
                    public_key: public_key.clone(),
                    created_at: String::new(),
                    retired_at: None,
                },
                true,
            )),
            KeySource::Ring { current, all } => all
                .iter()
                .find(|r| r.key_id == key_id)
                .map(|r| (r.clone(), &r.key_id == current)),
        }
    };
    let document = wrap_document(&text)?;
    let verdict = receipts::verify_request(&document, resolve).map_err(|e| e.to_string())?;
    let (Some(proof), true) = (&args.proof, verdict.valid) else {
        return Ok(verdict);
    };
    let keys: Vec<String> = match &keys {
        KeySource::Single(key) => vec![key.clone()],
        KeySource::Ring { all, .. } => all.iter().map(|r| r.public_key.clone()).collect(),
    };
    let (checkpoint, url) = (args.checkpoint.as_deref(), args.url.as_deref());
    crate::tlog_cli::check_proof(verdict, &text, &keys, proof, checkpoint, url)
}

/// A file holding a bare signed document is wrapped as `{"signed": …}`; a file already in the
/// `{receipt, payload}` form is passed through.
fn wrap_document(text: &str) -> Result<String, String> {
    let value =
        crate::crypto::jcs::parse_strict(text).map_err(|e| format!("not valid JSON: {e}"))?;
    let is_pair = value.get("receipt").is_some() && value.get("payload").is_some();
    if is_pair || value.get("signed").is_some() {
        Ok(text.to_owned())
    } else {
        Ok(format!("{{\"signed\":{text}}}"))
    }
}

enum KeySource {
    Single(String),
    Ring {
        current: String,
        all: Vec<PublicKeyRecord>,
    },
}

fn key_source(args: &VerifyArgs) -> Result<KeySource, String> {
    if let Some(public_key) = &args.public_key {
        return Ok(KeySource::Single(public_key.clone()));
    }
    if let Some(data) = &args.data {
        let keyring = Keyring::load(&DataDir(data.clone()).signing_key())?;
        let all = std::iter::once(keyring.current().clone())
            .chain(keyring.previous().iter().cloned())
            .collect();
        return Ok(KeySource::Ring {
            current: keyring.current().key_id.clone(),
            all,
        });
    }
    let base = args
        .url
        .as_deref()
        .ok_or("say which key verifies: --public-key, --data or --url")?;
    let url = format!("{}/api/signing-key", base.trim_end_matches('/'));
    let agent = crate::outbound::configured_agent(
        ureq::Agent::config_builder()
            .timeout_global(Some(std::time::Duration::from_secs(10)))
            .build(),
    );
    let document: Value = agent
        .get(&url)
        .call()
        .map_err(|e| format!("cannot fetch {url}: {e}"))?
        .body_mut()
        .read_to_string()
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok())
        .ok_or_else(|| format!("{url} did not answer JSON"))?;
    let current: PublicKeyRecord = serde_json::from_value(document.clone())
        .map_err(|e| format!("{url} is not a signing-key document: {e}"))?;
    let previous: Vec<PublicKeyRecord> = serde_json::from_value(
        document
            .get("previousKeys")
            .cloned()
            .unwrap_or(Value::Array(vec![])),
    )
    .map_err(|e| format!("{url}: bad previousKeys: {e}"))?;
    let current_id = current.key_id.clone();
    Ok(KeySource::Ring {
        current: current_id,
        all: std::iter::once(current).chain(previous).collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_public_key_beginning_with_a_hyphen_is_a_value() {
        // One key in 64 encodes to base64url text starting with `-`.
        let cli = Cli::try_parse_from([
            "bourse",
            "verify",
            "receipt.json",
            "--public-key",
            "-G7nHxYkY3JZ0p3aM1wz9Qy4mB2cV8dE6fR5tU0sL1k",
        ])
        .unwrap();
        let Command::Verify(args) = cli.command else {
            panic!("not verify")
        };
        assert_eq!(
            args.public_key.as_deref(),
            Some("-G7nHxYkY3JZ0p3aM1wz9Qy4mB2cV8dE6fR5tU0sL1k")
        );
    }
}
