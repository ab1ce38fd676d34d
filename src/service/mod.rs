//! The service layer: business rules, written once, called by REST handlers and (later) MCP
//! tools alike. It never sees hyper types; it takes validated arguments and returns JSON values
//! or [`crate::error::Error`].

pub mod agents;
pub mod provenance;
pub mod ratelimit;
pub mod receipts;

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::clock::{Clock, rfc3339};
use crate::crypto::keys::{Keyring, write_private_file};
use crate::crypto::{b64url, random_bytes};
use crate::error::{Error, Result};
use crate::store::{Store, settings};

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

/// Everything a request handler needs; one per running server.
pub struct App {
    pub store: Store,
    pub keyring: Keyring,
    pub clock: Arc<dyn Clock>,
    pub limiter: ratelimit::RateLimiter,
    /// Base of every URL the server hands out, without a trailing slash.
    pub public_url: String,
    operator_key_hash: String,
    provenance: RwLock<Map<String, Value>>,
}

impl App {
    /// Opens the data directory: database (migrated), signing key and operator key, creating
    /// what is missing.
    ///
    /// # Errors
    /// Any file that cannot be created or read, or a database that is not ours.
    pub fn open(data: &DataDir, public_url: String, clock: Arc<dyn Clock>) -> Result<App> {
        data.ensure()?;
        let now = rfc3339(clock.now());
        let store = Store::open(&data.database())?;
        let keyring =
            Keyring::load_or_create(&data.signing_key(), &now).map_err(Error::Internal)?;
        let operator_key = load_or_create_operator_key(&data.operator_key())?;
        let established = store.write_blocking(|tx| {
            if let Some(Value::String(at)) = settings::get(tx, settings::ESTABLISHED)? {
                return Ok(at);
            }
            settings::put(tx, settings::ESTABLISHED, &Value::String(now.clone()), &now)?;
            Ok(now.clone())
        })?;
        let overrides = store.write_blocking(|tx| settings::get(tx, settings::PROVENANCE))?;
        let provenance = provenance::effective(&public_url, &established, overrides.as_ref());
        Ok(App {
            store,
            keyring,
            limiter: ratelimit::RateLimiter::new(clock.clone()),
            clock,
            public_url,
            operator_key_hash: hash_secret(&operator_key),
            provenance: RwLock::new(provenance),
        })
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
    pub fn provenance(&self) -> Map<String, Value> {
        self.provenance
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    fn set_provenance(&self, value: Map<String, Value>) {
        *self.provenance.write().unwrap_or_else(|p| p.into_inner()) = value;
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

fn constant_time_eq(a: &str, b: &str) -> bool {
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
