//! Restricted keys: an agent mints `svc_live_` keys for its sub-agents, each with a set of scopes
//! (read, message, sell, spend), its own spending caps (no higher than the agent's policy), an
//! optional expiry and a label; lists and revokes them. A restricted key authenticates as the
//! same agent (`agents::authenticate`), within its scopes; it cannot change the spending policy,
//! mint keys or rotate the full key. Rotating the full key leaves restricted keys alone; revoking
//! one never touches the full key. Stored as SHA-256, like every key.

use jiff::SignedDuration;
use serde::Serialize;

use crate::clock::rfc3339_after;
use crate::error::{Error, Result};
use crate::request::Scope;
use crate::request::spending::CreateKey;
use crate::service::identity::agents::{self, KEY_PREFIX};
use crate::service::{App, mint_secret};
use crate::store::agents::{self as agent_store, AgentRow, RestrictedKey};
use crate::store::spending as spending_store;

/// A restricted key as its agent sees it (never the secret, except once at minting).
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct KeyView {
    pub id: String,
    pub label: Option<String>,
    pub scopes: Vec<&'static str>,
    pub per_purchase_cents: Option<i64>,
    pub daily_cents: Option<i64>,
    pub monthly_cents: Option<i64>,
    pub expires_at: Option<String>,
    pub created_at: String,
    pub revoked_at: Option<String>,
    /// The key itself: shown once, when it is minted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_key: Option<String>,
}

impl KeyView {
    fn of(key: RestrictedKey, api_key: Option<String>) -> KeyView {
        KeyView {
            scopes: key
                .scopes
                .split(' ')
                .filter_map(Scope::named)
                .map(Scope::name)
                .collect(),
            id: key.id,
            label: key.label,
            per_purchase_cents: key.per_purchase_cents,
            daily_cents: key.daily_cents,
            monthly_cents: key.monthly_cents,
            expires_at: key.expires_at,
            created_at: key.created_at,
            revoked_at: key.revoked_at,
            api_key,
        }
    }
}

/// An agent's restricted keys.
#[derive(Clone, Debug, Serialize)]
pub struct KeyList {
    pub keys: Vec<KeyView>,
}

/// `INSUFFICIENT_SCOPE` (403): what only the agent's full key may do.
pub fn full_key_required(what: &str) -> Error {
    Error::Forbidden {
        code: "INSUFFICIENT_SCOPE",
        message: format!(
            "{what} needs the agent's full API key, not a restricted key or an OAuth token"
        ),
    }
}

/// `INSUFFICIENT_SCOPE` (403): a restricted key used outside its scopes.
pub fn outside_scopes(needed: Scope) -> Error {
    Error::Forbidden {
        code: "INSUFFICIENT_SCOPE",
        message: format!(
            "this restricted key does not hold the `{}` scope this call needs",
            needed.name()
        ),
    }
}

/// Whether `agent` (as authenticated) may act within `needed`: its full key may do anything.
///
/// # Errors
/// `INSUFFICIENT_SCOPE` (403).
pub fn require_scope(agent: &AgentRow, needed: Option<Scope>, what: &str) -> Result<()> {
    let Some(key) = &agent.restricted else {
        return Ok(());
    };
    match needed {
        None => Err(full_key_required(what)),
        Some(scope) if key.scopes.split(' ').any(|name| name == scope.name()) => Ok(()),
        Some(scope) => Err(outside_scopes(scope)),
    }
}

/// `POST /api/agents/me/keys`: mints a restricted key (the secret is in the answer, once).
///
/// # Errors
/// `INSUFFICIENT_SCOPE` (403) from a restricted key; `KEY_CAP_ABOVE_POLICY` (422) for a cap above the
/// agent's policy; database failure.
pub async fn mint(app: &App, agent: &AgentRow, request: CreateKey) -> Result<KeyView> {
    require_scope(agent, None, "minting a key")?;
    let (api_key, key_hash) = mint_secret(KEY_PREFIX);
    let now = app.now();
    let mut scopes: Vec<&str> = Scope::ALL
        .into_iter()
        .filter(|scope| request.scopes.contains(scope))
        .map(Scope::name)
        .collect();
    scopes.dedup();
    let key = RestrictedKey {
        id: uuid::Uuid::new_v4().to_string(),
        agent_id: agent.id.clone(),
        label: request.label,
        scopes: scopes.join(" "),
        per_purchase_cents: request.per_purchase_cents,
        daily_cents: request.daily_cents,
        monthly_cents: request.monthly_cents,
        expires_at: request
            .expires_in_hours
            .map(|hours| rfc3339_after(app.clock.now(), SignedDuration::from_hours(hours))),
        created_at: now,
        revoked_at: None,
    };
    let stored = key.clone();
    app.store
        .write(move |tx| {
            if let Some(policy) = spending_store::find(tx, &stored.agent_id)? {
                for (name, asked, cap) in [
                    ("perPurchaseCents", stored.per_purchase_cents, policy.per_purchase_cents),
                    ("dailyCents", stored.daily_cents, policy.daily_cents),
                    ("monthlyCents", stored.monthly_cents, policy.monthly_cents),
                ] {
                    if let (Some(asked), Some(cap)) = (asked, cap)
                        && asked > cap
                    {
                        return Err(Error::Unprocessable {
                            code: "KEY_CAP_ABOVE_POLICY",
                            message: format!(
                                "`{name}` is {asked}, above your spending policy's {cap}: a key's caps are no higher than the agent's"
                            ),
                        });
                    }
                }
            }
            agent_store::insert_key(tx, &stored, &key_hash)
        })
        .await?;
    Ok(KeyView::of(key, Some(api_key)))
}

/// `GET /api/agents/me/keys`: the agent's restricted keys, newest first (revoked ones too).
///
/// # Errors
/// `INSUFFICIENT_SCOPE` (403) from a restricted key; database failure.
pub async fn list(app: &App, agent: &AgentRow) -> Result<KeyList> {
    require_scope(agent, None, "listing keys")?;
    let id = agent.id.clone();
    let keys = app
        .store
        .read(move |conn| agent_store::keys_of(conn, &id))
        .await?;
    Ok(KeyList {
        keys: keys.into_iter().map(|key| KeyView::of(key, None)).collect(),
    })
}

/// `POST /api/agents/me/keys/{id}/revoke`: the key stops working at once; the full key and the
/// other keys are untouched.
///
/// # Errors
/// `INSUFFICIENT_SCOPE` (403) from a restricted key; `NOT_FOUND` for a key that is not the
/// agent's; database failure.
pub async fn revoke(app: &App, agent: &AgentRow, key_id: &str) -> Result<KeyView> {
    require_scope(agent, None, "revoking a key")?;
    let (agent_id, id, now) = (agent.id.clone(), key_id.to_owned(), app.now());
    let key = app
        .store
        .write(move |tx| {
            agent_store::revoke_restricted_key(tx, &agent_id, &id, &now)?;
            Ok(agent_store::find_key(tx, &id)?.filter(|key| key.agent_id == agent_id))
        })
        .await?
        .ok_or_else(|| Error::NotFound(format!("no restricted key {key_id} of yours")))?;
    agents::forget_agent(app, &agent.id);
    Ok(KeyView::of(key, None))
}
