//! The signed provenance block that opens every successful public JSON object response.
//!
//! `provenance.receipt.digest` is SHA-256 over the canonical JSON of the whole response body
//! with `provenance.receipt` removed; the receipt is signed like any other signature object and
//! verifies through `POST /api/verify-receipt` (`{signed: <body>}` or
//! `{receipt: <provenance.receipt>, payload: <body without provenance.receipt>}`).

use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::service::App;
use sha2::{Digest, Sha256};

use crate::crypto::jcs;
use crate::crypto::receipt::sign_digest;
use crate::error::Result;
use crate::request::trust::UpdateProvenance;
use crate::store::settings;

/// The provenance block that opens every signed public answer: the instance's defaults with
/// the operator's overrides laid over them. `patent` and `marketing` are the operator's objects
/// when overridden (their members are not ours to fix).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Provenance {
    pub source: String,
    pub creator: String,
    pub brand: String,
    pub established: String,
    pub classification: String,
    pub attribution: String,
    pub patent: Map<String, Value>,
    pub network: Vec<String>,
    pub marketing: Map<String, Value>,
}

impl Provenance {
    /// Lays one saved override over the block; `false` (nothing changed) when `name` is not a
    /// member or `value` has not its type, which `UpdateProvenance` refuses before saving.
    fn set(&mut self, name: &str, value: &Value) -> bool {
        let text = |target: &mut String| match value.as_str() {
            Some(text) => {
                text.clone_into(target);
                true
            }
            None => false,
        };
        match (name, value) {
            ("source", _) => text(&mut self.source),
            ("creator", _) => text(&mut self.creator),
            ("brand", _) => text(&mut self.brand),
            ("established", _) => text(&mut self.established),
            ("classification", _) => text(&mut self.classification),
            ("attribution", _) => text(&mut self.attribution),
            ("patent", Value::Object(object)) => {
                self.patent = object.clone();
                true
            }
            ("marketing", Value::Object(object)) => {
                self.marketing = object.clone();
                true
            }
            ("network", Value::Array(items)) if items.iter().all(Value::is_string) => {
                self.network = items
                    .iter()
                    .filter_map(|item| item.as_str().map(str::to_owned))
                    .collect();
                true
            }
            _ => false,
        }
    }

    /// The block as the members the signer lays into every answer, in the struct's order.
    fn members(&self) -> Map<String, Value> {
        let mut members = Map::new();
        for (name, text) in [
            ("source", &self.source),
            ("creator", &self.creator),
            ("brand", &self.brand),
            ("established", &self.established),
            ("classification", &self.classification),
            ("attribution", &self.attribution),
        ] {
            members.insert(name.to_owned(), Value::from(text.as_str()));
        }
        members.insert("patent".to_owned(), Value::Object(self.patent.clone()));
        members.insert("network".to_owned(), Value::from(self.network.clone()));
        members.insert(
            "marketing".to_owned(),
            Value::Object(self.marketing.clone()),
        );
        members
    }
}

/// The block in force: typed, and as the signer's members (made once, when it is set).
#[derive(Debug)]
pub struct Block {
    provenance: Provenance,
    members: Map<String, Value>,
}

impl Block {
    pub fn new(provenance: Provenance) -> Block {
        Block {
            members: provenance.members(),
            provenance,
        }
    }

    pub fn provenance(&self) -> &Provenance {
        &self.provenance
    }
}

/// Defaults for a self-hosted instance, overlaid with the operator's saved overrides.
pub fn effective(public_url: &str, established: &str, overrides: Option<&Value>) -> Provenance {
    let host = public_url
        .split("://")
        .nth(1)
        .unwrap_or(public_url)
        .split(['/', ':'])
        .next()
        .unwrap_or_default();
    let object = |members: Value| match members {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    let mut block = Provenance {
        source: public_url.to_owned(),
        creator: "bourse".to_owned(),
        brand: "bourse".to_owned(),
        established: established.to_owned(),
        classification: "self-hosted agent marketplace".to_owned(),
        attribution: format!("Served by the bourse instance at {public_url}"),
        patent: object(json!({
            "status": "none",
            "notice": "No patent is claimed on this service or its protocols.",
            "licensing": "bourse is open source under the Apache License 2.0."
        })),
        network: vec![host.to_owned()],
        marketing: object(json!({
            "sell": format!("{public_url}/llms.txt"),
            "buy": format!("{public_url}/api/marketplace/listings")
        })),
    };
    if let Some(Value::Object(saved)) = overrides {
        for (key, value) in saved {
            if !block.set(key, value) {
                tracing::warn!(field = %key, "a saved provenance override that is not a block member of its type is ignored");
            }
        }
    }
    block
}

/// A response body as top-level members already in canonical JSON form.
pub type CanonicalMembers = Vec<(String, Vec<u8>)>;

/// Serializes `body` with the signed provenance block first.
pub fn sign_response(app: &App, body: Map<String, Value>) -> Vec<u8> {
    Signer::of(app).sign_response(body)
}

/// Signs and serializes a body given as canonical members, in one pass.
///
/// The digest is SHA-256 over the members (plus the provenance block minus its receipt)
/// assembled in canonical order; the response is the same bytes with `provenance`, now carrying
/// its receipt, moved first. The response is therefore canonical JSON apart from that member.
///
/// A body may bring its own `provenance` object (the participation snapshot names its source
/// and rule there): its members are laid over the instance's block for that response.
pub fn sign_members(app: &App, members: CanonicalMembers) -> Vec<u8> {
    Signer::of(app).sign(members)
}

/// What signing a provenance block needs, detached from [`App`] so that it can move into a
/// database job (the admission door stores the signed answer it sends).
pub struct Signer {
    provenance: Map<String, Value>,
    keyring: std::sync::Arc<crate::crypto::keys::Keyring>,
    signed_at: String,
    verify: String,
}

impl Signer {
    /// The instance's current block, key and clock.
    pub fn of(app: &App) -> Signer {
        Signer {
            provenance: app.provenance_block().members.clone(),
            keyring: app.keyring.clone(),
            signed_at: app.now(),
            verify: app.url("/api/verify-receipt"),
        }
    }

    /// Serializes `body` with the signed provenance block first.
    pub fn sign_response(self, body: Map<String, Value>) -> Vec<u8> {
        self.sign(
            body.into_iter()
                .map(|(key, value)| {
                    let bytes = jcs::canonicalize(&value);
                    (key, bytes)
                })
                .collect(),
        )
    }

    fn sign(self, mut members: CanonicalMembers) -> Vec<u8> {
        let mut provenance = self.provenance;
        if let Some((_, own)) = members.iter().find(|(key, _)| key == "provenance")
            && let Ok(Value::Object(own)) = serde_json::from_slice::<Value>(own)
        {
            provenance.extend(own.into_iter().filter(|(key, _)| key != "receipt"));
        }
        members.retain(|(key, _)| key != "provenance");
        members.push((
            "provenance".to_owned(),
            jcs::canonicalize(&Value::Object(provenance.clone())),
        ));
        members.sort_unstable_by(|a, b| jcs::utf16_cmp(&a.0, &b.0));
        let mut hasher = Sha256::new();
        hasher.update(b"{");
        for (i, (key, bytes)) in members.iter().enumerate() {
            if i > 0 {
                hasher.update(b",");
            }
            hasher.update(jcs::canonicalize(&Value::String(key.clone())));
            hasher.update(b":");
            hasher.update(bytes);
        }
        hasher.update(b"}");
        let digest = jcs::hex_digest(&hasher.finalize());
        let mut receipt = sign_digest(&self.keyring, digest, &self.signed_at);
        receipt.insert("verify".into(), self.verify.into());
        provenance.insert("receipt".into(), Value::Object(receipt));

        let size: usize = members
            .iter()
            .map(|(key, bytes)| key.len() + bytes.len() + 4)
            .sum();
        let mut out = Vec::with_capacity(size + 512);
        out.extend_from_slice(b"{\"provenance\":");
        jcs::write_canonical(&Value::Object(provenance), &mut out);
        for (key, bytes) in members.iter().filter(|(key, _)| key != "provenance") {
            out.push(b',');
            jcs::write_canonical(&Value::String(key.clone()), &mut out);
            out.push(b':');
            out.extend_from_slice(bytes);
        }
        out.push(b'}');
        out
    }
}

/// The provenance block as configured (operator view).
#[derive(Debug, Serialize)]
pub struct Current {
    pub provenance: Provenance,
}

/// The provenance block as configured (operator view).
pub fn current(app: &App) -> Current {
    Current {
        provenance: app.provenance(),
    }
}

/// Merges operator overrides (`null` removes one, restoring the default), validates their
/// shape, persists them and makes them current.
///
/// # Errors
/// `INVALID_ARGUMENT` for an unknown field or a wrong type.
pub async fn update(app: &App, request: UpdateProvenance) -> Result<Current> {
    let changes = request.changes;
    let now = app.now();
    let merged = app
        .store
        .write(move |tx| {
            let mut saved = match settings::get(tx, settings::PROVENANCE)? {
                Some(Value::Object(map)) => map,
                _ => Map::new(),
            };
            for (field, value) in changes {
                if value.is_null() {
                    saved.shift_remove(&field);
                } else {
                    saved.insert(field, value);
                }
            }
            let value = Value::Object(saved);
            settings::put(tx, settings::PROVENANCE, &value, &now)?;
            Ok(value)
        })
        .await?;
    let established = app.provenance().established;
    app.set_provenance(effective(&app.public_url, &established, Some(&merged)));
    Ok(current(app))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The signer's members are the block serialized, in the same order, overrides included.
    #[test]
    fn the_signing_members_are_the_serialized_block() {
        let overrides = json!({
            "brand": "Example Exchange",
            "network": ["x.example"],
            "patent": {"status": "pending"},
            "nope": 1,
            "creator": 5,
        });
        for overrides in [None, Some(&overrides)] {
            let block = effective("https://b.example:8443/x", "2026-01-01", overrides);
            assert_eq!(
                serde_json::to_string(&block).unwrap(),
                serde_json::to_string(&block.members()).unwrap()
            );
        }
        let block = effective("https://b.example:8443/x", "2026-01-01", Some(&overrides));
        assert_eq!(block.brand, "Example Exchange");
        assert_eq!(
            block.creator, "bourse",
            "an override of the wrong type is ignored"
        );
        assert_eq!(block.network, ["x.example"]);
        assert_eq!(
            block.patent,
            *json!({"status": "pending"}).as_object().unwrap()
        );
        let plain = effective("https://b.example:8443/x", "2026-01-01", None);
        assert_eq!(plain.network, ["b.example"]);
    }
}
