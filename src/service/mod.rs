//! The service layer: every business rule, written once, called by every face (REST handlers,
//! MCP tools) with the same typed requests (`crate::request`). It never sees hyper types or raw
//! JSON requests; it reaches the database only through `crate::store`, and returns JSON values
//! or [`crate::error::Error`].
//!
//! One folder per domain: [`identity`] (agents, the admission door), [`messaging`], [`catalog`]
//! (listings, browse, sellers' endpoints and payouts readiness, ratings, samples, health
//! consent), [`commerce`] (checkout over the payment rails, purchases, settlement, escrow, fees),
//! [`disclosure`] (meta, the demand ledger, participation), [`contact`] (inquiries and their
//! threads) and [`trust`] (the provenance of public answers, receipt verification). This file
//! holds the shared state, [`App`]; [`ratelimit`] the per-client limits every domain uses;
//! [`taxonomy`] (categories, verticals, classes), [`rail`] (the payment rails' names) and
//! [`ledger`] (the sales ledger as read) sit below the domains that share them; [`replication`]
//! keeps a follower's replica; [`metrics`] samples what `GET /metrics` shows.
//!
//! Domains import one another without a loop: `commerce` sells `catalog`'s listings,
//! `disclosure` reports on the sales, and none of them is imported back. [`App`] is the root every
//! domain takes; a field of it whose type is another domain's, or a method whose signature names
//! one, counts as an import of that domain (`crate::invariants`).

pub mod catalog;
pub mod commerce;
pub mod contact;
pub mod disclosure;
pub mod identity;
pub mod ledger;
pub mod messaging;
pub mod metrics;
pub mod rail;
pub mod ratelimit;
pub mod replication;
pub mod spending;
pub mod taxonomy;
pub mod trust;

use catalog::{browse, counters, samples};
use commerce::rails::stripe::client as stripe_client;
use identity::agents;
use trust::provenance;

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::clock::{Clock, rfc3339};
use crate::config::Replication;
use crate::crypto::keys::{Keyring, write_private_file};
use crate::crypto::{b64url, random_bytes};
use crate::error::{Error, Result};
use crate::outbound;
use crate::store::{Checkpoints, Store, settings};

/// Files inside the data directory.
pub struct DataDir(pub PathBuf);

impl DataDir {
    /// The SQLite database.
    pub fn database(&self) -> PathBuf {
        self.0.join("bourse.db")
    }
    /// The Ed25519 signing keyfile.
    pub fn signing_key(&self) -> PathBuf {
        self.0.join("signing.key")
    }
    /// The browse index's snapshot (derived from the database; see `catalog::browse`).
    pub fn browse_snapshot(&self) -> PathBuf {
        self.0.join("browse-index.snapshot")
    }
    /// The operator's bearer token.
    pub fn operator_key(&self) -> PathBuf {
        self.0.join("operator.key")
    }

    /// Creates the directory with mode 0700 when absent.
    ///
    /// # Errors
    /// The directory cannot be created.
    pub fn ensure(&self) -> Result<()> {
        if self.0.is_dir() {
            return Ok(());
        }
        let mut builder = fs::DirBuilder::new();
        builder.recursive(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::DirBuilderExt;
            builder.mode(0o700);
        }
        builder
            .create(&self.0)
            .map_err(|e| Error::Internal(format!("cannot create {}: {e}", self.0.display())))
    }
}

/// Settings of the service layer that come from the command line.
#[derive(Clone, Debug)]
pub struct Options {
    /// Base of every URL the server hands out, without a trailing slash.
    pub public_url: String,
    /// Permit `http://` and loopback destinations for outbound calls (sandboxes and CI).
    pub allow_loopback_outbound: bool,
    /// No per-client limits (local sandboxes and CI).
    pub relaxed_limits: bool,
    /// Largest deliverable fetched from a seller.
    pub max_deliverable_bytes: usize,
    /// How long paid money stays in escrow after the first delivery.
    pub escrow_hold: Duration,
    /// How long a checkout session stays open.
    pub checkout_expiry: Duration,
    /// The card/checkout rail.
    pub payments: crate::config::Payments,
    /// The autonomous rail, when configured.
    pub x402: Option<crate::config::X402Settings>,
    /// This server's part in replication.
    pub replication: crate::config::Replication,
    /// Adopt a new signing key for a database recorded with others.
    pub accept_new_signing_key: bool,
    /// `GET /metrics` answers without the operator token (a scraper on a private network).
    pub metrics_public: bool,
    /// Start although the database's transparency log is behind a checkpoint already published.
    pub accept_log_behind: bool,
    /// Witnesses asked to cosign each new checkpoint: (verifier key, base URL).
    pub witnesses: Vec<(String, String)>,
}

impl Options {
    /// The defaults for a server reachable at `public_url` (strict outbound rules).
    pub fn new(public_url: &str) -> Options {
        Options {
            public_url: public_url.to_owned(),
            allow_loopback_outbound: false,
            relaxed_limits: false,
            max_deliverable_bytes: crate::config::DEFAULT_MAX_DELIVERABLE_BYTES,
            escrow_hold: crate::config::DEFAULT_ESCROW_HOLD,
            checkout_expiry: crate::config::DEFAULT_CHECKOUT_EXPIRY,
            payments: crate::config::Payments::Sandbox,
            x402: None,
            replication: crate::config::Replication::Off,
            accept_new_signing_key: false,
            metrics_public: false,
            accept_log_behind: false,
            witnesses: Vec::new(),
        }
    }
}

/// Everything a request handler needs; one per running server.
/// See [`App::documents`].
#[derive(Default)]
pub struct Documents {
    pub llms_txt: std::sync::OnceLock<Arc<[u8]>>,
    pub openapi: std::sync::OnceLock<Arc<[u8]>>,
    pub server_json: std::sync::OnceLock<Arc<[u8]>>,
}

pub struct App {
    pub store: Store,
    pub keyring: Arc<Keyring>,
    pub clock: Arc<dyn Clock>,
    pub limiter: Arc<ratelimit::RateLimiter>,
    /// Agents by the hash of their key, so authenticated requests skip a database read.
    pub known_agents: agents::KnownAgents,
    /// Base of every URL the server hands out, without a trailing slash.
    pub public_url: String,
    pub taxonomy: Arc<taxonomy::Taxonomy>,
    pub counters: Arc<counters::Counters>,
    /// The SSRF-safe client for deliverable fetches.
    pub outbound: outbound::Client,
    /// The same client with the short deadline of endpoint verification.
    pub outbound_verify: outbound::Client,
    /// The same client with the deadline of a push callback (15 s, as webhook senders use).
    pub outbound_callbacks: outbound::Client,
    pub max_deliverable_bytes: usize,
    pub escrow_hold: Duration,
    pub checkout_expiry: Duration,
    /// The card/checkout rail (sandbox or Stripe).
    pub payments: crate::config::Payments,
    /// The autonomous `x402_usdc_base` rail, when configured.
    pub x402: Option<crate::config::X402Settings>,
    /// The Stripe client, when Stripe is the card/checkout rail.
    pub stripe: Option<Arc<stripe_client::Client>>,
    /// What the x402 facilitator's `GET /supported` said at start (`x402::check_facilitator`).
    pub x402_facilitator: std::sync::OnceLock<Value>,
    operator_key_hash: String,
    provenance: RwLock<Arc<provenance::Block>>,
    querier_salt: String,
    /// Every browse filter and sort runs over this in-memory index.
    pub browse: Arc<browse::BrowseIndex>,
    /// Wakes long-polls when an inbox grows.
    pub inboxes: messaging::messages::Inboxes,
    /// Wakes the callback worker when a delivery is queued.
    pub callbacks_due: tokio::sync::Notify,
    /// Becomes true when the server starts shutting down (ends long-polls early).
    pub shutdown: tokio::sync::watch::Sender<bool>,
    /// Passes of the background workers, counted for whoever embeds the server.
    pub worker_passes: Arc<WorkerPasses>,
    /// Purchases refused by spending controls since the process started, by limit.
    pub spend_refusals: spending::Refusals,
    /// The embedded `llms.txt` and `openapi.json` rewritten for `public_url`, made on first
    /// request and then shared (the contract is 700 KB: never copied per request).
    pub documents: Documents,
    /// Signed public answers kept for reuse (listing detail), see `catalog::signed`.
    pub signed: catalog::signed::SignedAnswers,
    /// Set on a read-only follower (`serve --follow`): its primary and what it has read.
    pub follower: Option<replication::Follower>,
    /// The operator console's sessions (in memory: a restart signs the operator out).
    pub console: identity::console::Sessions,
    /// When the process opened the app (the console's uptime).
    pub started: std::time::Instant,
    /// The data directory (the console shows its size).
    pub data_dir: PathBuf,
    /// This server is the primary of a replicated database (`--replicated`).
    pub replicated: bool,
    /// When the database was created (the provenance block's `established`).
    established: String,
    /// The Prometheus metrics (`GET /metrics`, see `service::metrics`).
    pub telemetry: crate::telemetry::Telemetry,
    /// `GET /metrics` is public (`serve --metrics-public`); else the operator's.
    pub metrics_public: bool,
    /// The transparency log's origin, recorded at first use (`trust::log`).
    pub log_origin: String,
    /// Where a primary keeps a copy of its newest published checkpoint (`trust::log::mark_file`).
    pub log_mark: Option<PathBuf>,
    /// Witnesses asked to cosign each new checkpoint: (verifier key, base URL).
    pub witnesses: Vec<(String, String)>,
}

/// Passes of the background workers. Nothing in the server reads them: they let an embedding
/// process (the in-process tests) wait until a worker has looked again after an event instead
/// of sleeping.
#[derive(Debug, Default)]
pub struct WorkerPasses {
    /// The callback worker; a pass ends when the attempts it started have ended.
    pub callbacks: Arc<Passes>,
    /// The commerce worker's local part: checkout expiry and in-place release.
    pub commerce: Arc<Passes>,
    /// The commerce worker's Stripe part: refunds and transfers (Stripe rail only).
    pub stripe: Arc<Passes>,
}

/// How many passes of one worker have begun and how many have ended.
#[derive(Debug, Default)]
pub struct Passes {
    begun: std::sync::atomic::AtomicU64,
    ended: std::sync::atomic::AtomicU64,
}

/// A pass under way; it ends when its last clone is dropped.
#[derive(Clone)]
pub struct Pass {
    _end: Arc<PassEnd>,
}

struct PassEnd(Arc<Passes>);

impl Drop for PassEnd {
    fn drop(&mut self) {
        self.0
            .ended
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
}

impl Passes {
    /// Begins a pass.
    pub fn begin(self: &Arc<Self>) -> Pass {
        self.begun.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Pass {
            _end: Arc::new(PassEnd(self.clone())),
        }
    }

    /// A count of ended passes that is reached only once a pass that begins after this call
    /// has ended (more passes have ended than had begun by now).
    pub fn after_next_pass(&self) -> u64 {
        self.begun.load(std::sync::atomic::Ordering::SeqCst) + 1
    }

    /// Passes ended so far.
    pub fn ended(&self) -> u64 {
        self.ended.load(std::sync::atomic::Ordering::SeqCst)
    }
}

impl App {
    /// Opens the data directory: database (migrated), signing key and operator key, creating
    /// what is missing.
    ///
    /// # Errors
    /// Any file that cannot be created or read, or a database that is not ours.
    pub fn open(data: &DataDir, options: Options, clock: Arc<dyn Clock>) -> Result<App> {
        let public_url = options.public_url;
        data.ensure()?;
        let now = rfc3339(clock.now());
        let primary = match &options.replication {
            Replication::Follower {
                primary,
                max_lag_secs,
            } => Some((primary.clone(), *max_lag_secs)),
            Replication::Primary | Replication::Off => None,
        };
        let store = match &options.replication {
            Replication::Off => Store::open(&data.database())?,
            Replication::Primary => Store::open_with(&data.database(), Checkpoints::External)?,
            Replication::Follower { .. } => replication::open_replica(&data.database())?,
        };
        let mark = trust::log::mark_file(&data.0);
        let (log_origin, log_size) = if primary.is_some() {
            store.read_blocking(|conn| {
                let origin = match settings::get(conn, crate::store::tlog::ORIGIN_SETTING)? {
                    Some(Value::String(origin)) => origin,
                    _ => trust::log::origin_for(&public_url),
                };
                Ok((origin, crate::store::tlog::size(conn)?))
            })?
        } else {
            let (url, stamp) = (public_url.clone(), now.clone());
            store.write_blocking(move |tx| {
                Ok((
                    trust::log::record_origin(tx, &url, &stamp)?,
                    crate::store::tlog::size(tx)?,
                ))
            })?
        };
        if primary.is_none() {
            trust::log::check_not_behind(&mark, log_size, options.accept_log_behind)?;
        }
        // A follower signs with its primary's key: it never makes one of its own.
        let mut keyring = if primary.is_some() {
            Keyring::load(&data.signing_key()).map_err(|e| {
                Error::Internal(format!(
                    "{e}: a follower needs its primary's signing.key in its data directory"
                ))
            })?
        } else {
            Keyring::load_or_create(&data.signing_key(), &now).map_err(Error::Internal)?
        };
        replication::check_signing_key(
            &store,
            &mut keyring,
            &data.signing_key(),
            options.accept_new_signing_key,
            &now,
        )?;
        let operator_key = load_or_create_operator_key(&data.operator_key())?;
        let taxonomy = taxonomy::Taxonomy::load();
        let (established, querier_salt, seen_change, (browse_index, snapshot_due)) = if primary
            .is_some()
        {
            // A follower writes nothing: what a primary creates at start is read from the replica.
            store.read_blocking(|conn| {
                let text = |value: Option<Value>| match value {
                    Some(Value::String(text)) => Ok(text),
                    _ => Err(Error::Internal(
                        "the replica was never started as a primary".into(),
                    )),
                };
                let established = text(settings::get(conn, settings::ESTABLISHED)?)?;
                let salt = text(settings::get(conn, settings::QUERIER_SALT)?)?;
                // Read before the index: a change made in between is read again, not missed.
                let seen = crate::store::listings::last_change(conn)?;
                Ok((
                    established,
                    salt,
                    seen,
                    (browse::BrowseIndex::load(conn, &taxonomy)?, None),
                ))
            })?
        } else {
            let (seed_taxonomy, stamp) = (taxonomy.clone(), now.clone());
            let (established, salt) = store.write_blocking(move |tx| {
                let (taxonomy, now) = (seed_taxonomy, stamp);
                let established = match settings::get(tx, settings::ESTABLISHED)? {
                    Some(Value::String(at)) => at,
                    _ => {
                        settings::put(
                            tx,
                            settings::ESTABLISHED,
                            &Value::String(now.clone()),
                            &now,
                        )?;
                        now.clone()
                    }
                };
                taxonomy::seed(tx, &taxonomy)?;
                let salt = match settings::get(tx, settings::QUERIER_SALT)? {
                    Some(Value::String(salt)) => salt,
                    _ => {
                        let salt = b64url(&random_bytes::<16>());
                        settings::put(
                            tx,
                            settings::QUERIER_SALT,
                            &Value::String(salt.clone()),
                            &now,
                        )?;
                        salt
                    }
                };
                Ok((established, salt))
            })?;
            // Read after the writer's start-up transaction, on two readers at once (they agree
            // on what they read, or it is read again): nothing serves before this returns, so
            // every later write reaches the index through `upsert`.
            (
                established,
                salt,
                0,
                browse::BrowseIndex::load_from(&store, &taxonomy, Some(&data.browse_snapshot()))?,
            )
        };
        let overrides = store.read_blocking(|conn| settings::get(conn, settings::PROVENANCE))?;
        let provenance = provenance::effective(&public_url, &established, overrides.as_ref());
        if options.relaxed_limits {
            tracing::warn!(
                "--relaxed-limits: no per-client limits on registration, admission, inquiries or ingress"
            );
        }
        if options.allow_loopback_outbound {
            tracing::warn!(
                "--allow-loopback-outbound: outbound calls may use http:// and loopback addresses"
            );
        }
        let policy = outbound::Policy {
            allow_loopback: options.allow_loopback_outbound,
        };
        let fetch_timeouts = outbound::Timeouts {
            total: Duration::from_secs(60),
            ..outbound::Timeouts::default()
        };
        let verify_timeouts = outbound::Timeouts {
            total: Duration::from_secs(5),
            ..outbound::Timeouts::default()
        };
        let telemetry = crate::telemetry::Telemetry::new();
        telemetry.build_info(crate::store::SCHEMA_VERSION);
        store.instrument(telemetry.store_meters());
        let log_mark = primary.is_none().then_some(mark);
        let follows = primary;
        let app = App {
            telemetry,
            metrics_public: options.metrics_public,
            store,
            keyring: Arc::new(keyring),
            limiter: Arc::new(ratelimit::RateLimiter::new(
                clock.clone(),
                options.relaxed_limits,
            )),
            known_agents: agents::KnownAgents::default(),
            clock,
            public_url,
            taxonomy: Arc::new(taxonomy),
            counters: Arc::default(),
            outbound: outbound::Client::new(policy, fetch_timeouts),
            outbound_verify: outbound::Client::new(policy, verify_timeouts),
            outbound_callbacks: outbound::Client::new(policy, outbound::Timeouts::default()),
            max_deliverable_bytes: options.max_deliverable_bytes,
            escrow_hold: options.escrow_hold,
            checkout_expiry: options.checkout_expiry,
            stripe: match &options.payments {
                crate::config::Payments::Stripe(settings) => {
                    Some(Arc::new(stripe_client::Client::new(settings.clone())))
                }
                crate::config::Payments::Sandbox => None,
            },
            payments: options.payments,
            x402: options.x402,
            x402_facilitator: std::sync::OnceLock::new(),
            operator_key_hash: hash_secret(&operator_key),
            provenance: RwLock::new(Arc::new(provenance::Block::new(provenance))),
            querier_salt,
            browse: Arc::new(browse_index),
            inboxes: messaging::messages::Inboxes::default(),
            callbacks_due: tokio::sync::Notify::new(),
            shutdown: tokio::sync::watch::channel(false).0,
            worker_passes: Arc::default(),
            spend_refusals: spending::Refusals::default(),
            documents: Documents::default(),
            signed: catalog::signed::SignedAnswers::default(),
            follower: follows.map(|(primary, max_lag_secs)| {
                replication::Follower::new(primary, seen_change, max_lag_secs)
            }),
            console: identity::console::Sessions::default(),
            started: std::time::Instant::now(),
            data_dir: data.0.clone(),
            replicated: matches!(options.replication, Replication::Primary),
            established,
            log_origin,
            log_mark,
            witnesses: options.witnesses.clone(),
        };
        // A moved sandbox clock resumes where it was moved to: a restart never goes back in time.
        let offset = app
            .store
            .read_blocking(|conn| settings::get(conn, settings::SANDBOX_CLOCK_OFFSET))?;
        if let Some(seconds) = offset.and_then(|v| v.as_i64()).filter(|s| *s > 0) {
            app.clock.advance(jiff::SignedDuration::from_secs(seconds));
        }
        if app.follower.is_some() {
            return Ok(app);
        }
        samples::seed(&app)?;
        if let Some(seen) = snapshot_due {
            let (index, store, taxonomy) =
                (app.browse.clone(), app.store.clone(), app.taxonomy.clone());
            let (path, now) = (data.browse_snapshot(), app.now());
            let spawned = std::thread::Builder::new()
                .name("bourse-snapshot".into())
                .spawn(move || index.save_snapshot(&store, &taxonomy, &path, seen, now));
            if let Err(e) = spawned {
                tracing::warn!(error = %e, "browse snapshot not written");
            }
        }
        // Display names written before schema v4 have no skeleton yet (it is computed in Rust, so
        // the SQL migration step cannot): they get theirs, so no agent can take a name that
        // looks like theirs. Once done, this finds nothing.
        app.store.write_blocking(|tx| {
            for (id, name) in crate::store::agents::without_skeleton(tx)? {
                crate::store::agents::set_skeleton(tx, &id, &identity::names::skeleton(&name))?;
            }
            Ok(())
        })?;
        Ok(app)
    }

    /// Active, non-sample listings per vertical slug.
    pub fn vertical_counts(&self) -> HashMap<String, i64> {
        let by_position = self.browse.counts_by_vertical();
        self.taxonomy
            .verticals
            .iter()
            .enumerate()
            .map(|(i, v)| {
                (
                    v.slug.clone(),
                    by_position.get(&(i as u16)).copied().unwrap_or(0),
                )
            })
            .collect()
    }

    /// The anti-forgery token of a capability page's form (`purpose`, e.g. `approval`): SHA-256
    /// of the instance's secret salt, the purpose and the capability, so only a page the server
    /// rendered for that capability carries it.
    pub fn form_token(&self, purpose: &str, capability: &str) -> String {
        hash_secret(&format!(
            "bourse-form\n{purpose}\n{}\n{capability}",
            self.querier_salt
        ))
    }

    /// The salted hash that identifies a querier (never the raw address or id).
    pub fn querier_key(&self, identity: &str) -> String {
        hash_secret(&format!("{}:{identity}", self.querier_salt))[..32].to_owned()
    }

    /// Writes pending counters (views, queries, queriers; a follower, which cannot write,
    /// drops them) and folds the metrics' latency samples into their buckets.
    pub fn flush_counters(&self) {
        self.signed.forget_expired(self.clock.now());
        // The latency samples recorded since the last pass go into their buckets.
        self.telemetry.upkeep();
        if self.follower.is_some() {
            self.counters.discard();
            return;
        }
        match self.counters.flush(&self.store, &self.now()) {
            Ok(views) => self.browse.add_views(&views),
            Err(error) => tracing::warn!(%error, "flushing counters failed; will retry"),
        }
    }

    /// The card rail a keyed purchase uses: the sandbox or Stripe (`--payments`).
    pub fn card_rail(&self) -> rail::Rail {
        rail::Rail::card(&self.payments)
    }

    /// Whether the sandbox is the card rail (its pages and test clock exist only then).
    pub fn sandbox(&self) -> bool {
        self.card_rail() == rail::Rail::Sandbox
    }

    /// Now, formatted as we emit timestamps.
    pub fn now(&self) -> String {
        rfc3339(self.clock.now())
    }

    /// An absolute URL for `path` (which starts with `/`).
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.public_url)
    }

    /// Checks the operator's bearer token.
    ///
    /// # Errors
    /// `UNAUTHENTICATED` when absent or wrong.
    pub fn authenticate_operator(&self, token: Option<&str>) -> Result<()> {
        match token {
            Some(token) if constant_time_eq(&hash_secret(token), &self.operator_key_hash) => Ok(()),
            _ => Err(Error::Unauthenticated(
                "operator endpoints need `Authorization: Bearer <contents of DATA/operator.key>`"
                    .into(),
            )),
        }
    }

    /// The provenance block currently in force (without its receipt).
    pub fn provenance(&self) -> provenance::Provenance {
        self.provenance_block().provenance().clone()
    }

    /// The block in force with its signing form (`trust::provenance::Signer`).
    fn provenance_block(&self) -> Arc<provenance::Block> {
        self.provenance
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// A follower's replica changed: the provenance block from its overrides, and no kept
    /// answer from before.
    pub fn reload_provenance(&self, overrides: Option<&Value>) {
        self.set_provenance(provenance::effective(
            &self.public_url,
            &self.established,
            overrides,
        ));
    }

    fn set_provenance(&self, value: provenance::Provenance) {
        *self.provenance.write().unwrap_or_else(|p| p.into_inner()) =
            Arc::new(provenance::Block::new(value));
        // Kept answers carry the old block.
        self.signed.clear();
    }
}

/// SHA-256 hex of a secret (API keys, operator key). Keys are 256-bit random, so a fast hash is
/// enough: there is nothing to brute-force.
pub fn hash_secret(secret: &str) -> String {
    Sha256::digest(secret.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A fresh secret (`prefix` + 256 random bits, base64url) and the hash it is stored under: API
/// keys, OAuth codes and tokens, client secrets, relay tokens.
pub fn mint_secret(prefix: &str) -> (String, String) {
    let secret = format!("{prefix}{}", b64url(&random_bytes::<32>()));
    let hash = hash_secret(&secret);
    (secret, hash)
}

/// Compares two secrets in time independent of where they differ.
pub(crate) fn constant_time_eq(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

fn load_or_create_operator_key(path: &Path) -> Result<String> {
    if path.exists() {
        let text = fs::read_to_string(path)
            .map_err(|e| Error::Internal(format!("cannot read {}: {e}", path.display())))?;
        let key = text.trim().to_owned();
        if key.len() < 32 {
            return Err(Error::Internal(format!(
                "{} holds no usable operator key",
                path.display()
            )));
        }
        return Ok(key);
    }
    let key = format!("op_{}", b64url(&random_bytes::<32>()));
    write_private_file(path, format!("{key}\n").as_bytes()).map_err(Error::Internal)?;
    Ok(key)
}

/// The authority (`host[:port]`) of a URL such as the public URL: what follows the scheme, up
/// to the path; the whole text when it has no scheme.
pub fn authority(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    rest.split(['/', '?', '#']).next().unwrap_or_default()
}
