//! The signing keyfile (`DATA/signing.key`) and the keyring built from it.
//!
//! The file is JSON, mode 0600: the current key's seed plus the public half and validity window
//! of every earlier key. Old seeds are not kept: once rotated out, a key can verify but never
//! sign again. The key id is derived from the public key (`ed25519-` + 16 hex digits of its
//! SHA-256), so it contains no dot and the signing input `keyId.signedAt.digest` splits
//! unambiguously.

use std::fs;
use std::io::Write;
use std::path::Path;

use ed25519_compact::{KeyPair, PublicKey, Seed, Signature};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::{b64url, b64url_decode, random_bytes};

/// A public key with its validity window, as served by `GET /api/signing-key`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PublicKeyRecord {
    /// Derived from the public key; no dots.
    pub key_id: String,
    /// Raw 32-byte Ed25519 key, unpadded base64url.
    pub public_key: String,
    /// RFC 3339 UTC: when this key became current.
    pub created_at: String,
    /// RFC 3339 UTC: when a newer key replaced it; absent for the current key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retired_at: Option<String>,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct KeyFile {
    format: String,
    current: CurrentKey,
    #[serde(default)]
    previous: Vec<PublicKeyRecord>,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct CurrentKey {
    key_id: String,
    /// The 32-byte Ed25519 seed, unpadded base64url.
    seed: String,
    created_at: String,
}

const FORMAT: &str = "bourse-signing-key/1";

/// The current signing key plus every earlier public key.
pub struct Keyring {
    current: KeyPair,
    current_record: PublicKeyRecord,
    previous: Vec<PublicKeyRecord>,
}

impl Keyring {
    /// Loads `path`, or creates it (mode 0600) with a fresh key stamped `now` when absent.
    ///
    /// # Errors
    /// Unreadable or malformed keyfile, or a seed that does not match its key id.
    pub fn load_or_create(path: &Path, now: &str) -> Result<Keyring, String> {
        if !path.exists() {
            let keyring = Keyring::generate(now);
            keyring.save(path)?;
            return Ok(keyring);
        }
        Keyring::load(path)
    }

    /// Loads an existing keyfile.
    ///
    /// # Errors
    /// Unreadable or malformed keyfile.
    pub fn load(path: &Path) -> Result<Keyring, String> {
        let text = fs::read_to_string(path)
            .map_err(|error| format!("cannot read {}: {error}", path.display()))?;
        let file: KeyFile = serde_json::from_str(&text)
            .map_err(|error| format!("{} is not a bourse keyfile: {error}", path.display()))?;
        if file.format != FORMAT {
            return Err(format!(
                "{}: unknown keyfile format {:?}",
                path.display(),
                file.format
            ));
        }
        let seed_bytes = b64url_decode(&file.current.seed)?;
        let seed = Seed::from_slice(&seed_bytes)
            .map_err(|_| format!("{}: the seed is not 32 bytes", path.display()))?;
        let pair = KeyPair::from_seed(seed);
        let key_id = key_id_for(&pair.pk);
        if key_id != file.current.key_id {
            return Err(format!(
                "{}: the seed does not match key id {}",
                path.display(),
                file.current.key_id
            ));
        }
        Ok(Keyring {
            current_record: PublicKeyRecord {
                key_id,
                public_key: b64url(pair.pk.as_ref()),
                created_at: file.current.created_at,
                retired_at: None,
            },
            current: pair,
            previous: file.previous,
        })
    }

    fn generate(now: &str) -> Keyring {
        let pair = KeyPair::from_seed(Seed::new(random_bytes::<32>()));
        Keyring {
            current_record: PublicKeyRecord {
                key_id: key_id_for(&pair.pk),
                public_key: b64url(pair.pk.as_ref()),
                created_at: now.to_owned(),
                retired_at: None,
            },
            current: pair,
            previous: Vec::new(),
        }
    }

    /// Makes a fresh key current; the old public key is kept with `retired_at = now`.
    pub fn rotate(&mut self, now: &str) {
        let next = Keyring::generate(now);
        let mut retired = self.current_record.clone();
        retired.retired_at = Some(now.to_owned());
        self.previous.insert(0, retired);
        self.current = next.current;
        self.current_record = next.current_record;
    }

    /// Writes the keyfile atomically with mode 0600.
    ///
    /// # Errors
    /// The file cannot be written.
    pub fn save(&self, path: &Path) -> Result<(), String> {
        let file = KeyFile {
            format: FORMAT.to_owned(),
            current: CurrentKey {
                key_id: self.current_record.key_id.clone(),
                seed: b64url(self.current.sk.seed().as_ref()),
                created_at: self.current_record.created_at.clone(),
            },
            previous: self.previous.clone(),
        };
        let text = serde_json::to_string_pretty(&file).expect("keyfile serializes");
        write_private_file(path, text.as_bytes())
    }

    /// Keeps `records` (keys this keyring does not hold) as retired keys, so what they signed
    /// still verifies; a record without a retirement date is retired `now`.
    pub fn adopt_retired(&mut self, records: &[PublicKeyRecord], now: &str) {
        for record in records {
            if self.find(&record.key_id).is_none() {
                let mut retired = record.clone();
                retired.retired_at.get_or_insert_with(|| now.to_owned());
                self.previous.push(retired);
            }
        }
    }

    /// The current key's public record.
    pub fn current(&self) -> &PublicKeyRecord {
        &self.current_record
    }

    /// Earlier keys, newest first.
    pub fn previous(&self) -> &[PublicKeyRecord] {
        &self.previous
    }

    /// Signs `message` with the current key (deterministic, no noise).
    pub fn sign(&self, message: &[u8]) -> [u8; 64] {
        *self.current.sk.sign(message, None)
    }

    /// Finds a public key (current or earlier) by id.
    pub fn find(&self, key_id: &str) -> Option<&PublicKeyRecord> {
        std::iter::once(&self.current_record)
            .chain(self.previous.iter())
            .find(|record| record.key_id == key_id)
    }
}

/// `ed25519-` + the first 16 hex digits of SHA-256 over the raw public key.
pub fn key_id_for(public_key: &PublicKey) -> String {
    let hash = Sha256::digest(public_key.as_ref());
    let hex: String = hash[..8].iter().map(|b| format!("{b:02x}")).collect();
    format!("ed25519-{hex}")
}

/// Verifies a 64-byte signature over `message` with a base64url public key.
///
/// # Errors
/// The key or signature is malformed, or the signature does not verify.
pub fn verify_with(public_key_b64: &str, message: &[u8], signature: &[u8]) -> Result<(), String> {
    let key_bytes = b64url_decode(public_key_b64)?;
    let public_key = PublicKey::from_slice(&key_bytes)
        .map_err(|_| "the public key is not 32 bytes".to_owned())?;
    let signature =
        Signature::from_slice(signature).map_err(|_| "the signature is not 64 bytes".to_owned())?;
    public_key
        .verify(message, &signature)
        .map_err(|_| "the Ed25519 signature does not verify".to_owned())
}

/// Writes a secret file atomically (temp file + rename) with mode 0600 on Unix.
///
/// # Errors
/// The file cannot be written.
pub fn write_private_file(path: &Path, bytes: &[u8]) -> Result<(), String> {
    let tmp = path.with_extension("tmp");
    let mut options = fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let write = || -> std::io::Result<()> {
        let mut file = options.open(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        fs::rename(&tmp, path)
    };
    write().map_err(|error| format!("cannot write {}: {error}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rotation_keeps_old_public_keys_and_survives_a_reload() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("signing.key");
        let mut keyring = Keyring::load_or_create(&path, "2026-01-01T00:00:00.000Z").unwrap();
        let first = keyring.current().clone();
        assert!(!first.key_id.contains('.'));
        keyring.rotate("2026-02-01T00:00:00.000Z");
        keyring.save(&path).unwrap();
        let reloaded = Keyring::load(&path).unwrap();
        assert_ne!(reloaded.current().key_id, first.key_id);
        let old = reloaded.find(&first.key_id).unwrap();
        assert_eq!(old.public_key, first.public_key);
        assert_eq!(old.retired_at.as_deref(), Some("2026-02-01T00:00:00.000Z"));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }
}
