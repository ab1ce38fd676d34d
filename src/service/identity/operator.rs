//! What the operator sees of agents and does to them (the console's agents section): search
//! by handle, name or display name, an agent's profile, and a forced key rotation.

use super::agents::{KEY_PREFIX, forget};
use super::cards::KeyRotated;
use crate::error::{Error, Result};
use crate::service::{App, mint_secret};
use crate::store::agents::{self as agent_store, AgentRow};
use crate::store::console::{self as console_store, ListingLine, PurchaseLine};
use crate::store::oauth::{self as oauth_store, GrantRow};

/// The most agents a search shows.
pub const SEARCH_LIMIT: i64 = 50;
/// The most listings, purchases or grants an agent's page lists.
const PAGE_LIMIT: i64 = 50;

/// An agent as the operator sees it.
#[derive(Debug)]
pub struct Profile {
    pub agent: AgentRow,
    pub listings: Vec<ListingLine>,
    pub listing_count: i64,
    pub purchases: Vec<PurchaseLine>,
    pub purchase_count: i64,
    pub grants: Vec<GrantRow>,
}

/// Agents whose handle, name or display name contains `text`; the newest when `text` is empty.
///
/// # Errors
/// Database failure.
pub async fn search(app: &App, text: &str) -> Result<Vec<AgentRow>> {
    let text = text.trim().chars().take(100).collect::<String>();
    app.store
        .read(move |conn| agent_store::search(conn, &text, SEARCH_LIMIT))
        .await
}

async fn find(app: &App, handle: &str) -> Result<AgentRow> {
    let wanted = handle.to_owned();
    app.store
        .read(move |conn| agent_store::find_by_handle(conn, &wanted))
        .await?
        .ok_or_else(|| Error::NotFound(format!("no agent with handle {handle:?}")))
}

/// The agent with `handle`: its listings, purchases and OAuth grants.
///
/// # Errors
/// `NOT_FOUND`; database failure.
pub async fn profile(app: &App, handle: &str) -> Result<Profile> {
    let agent = find(app, handle).await?;
    let id = agent.id.clone();
    let ((listings, listing_count), (purchases, purchase_count), (grants, _)) = app
        .store
        .read(move |conn| {
            Ok((
                console_store::listings_of_seller(conn, &id, PAGE_LIMIT)?,
                console_store::purchases(conn, None, None, Some(&id), PAGE_LIMIT)?,
                oauth_store::grants(conn, Some(&id), false, PAGE_LIMIT, 0)?,
            ))
        })
        .await?;
    Ok(Profile {
        agent,
        listings,
        listing_count,
        purchases,
        purchase_count,
        grants,
    })
}

/// Forces a new key on the agent with `handle`: the old key fails at once, and so do the OAuth
/// grants it gave (as when the agent rotates its own). The new key is for the operator to hand
/// to the agent's owner; it is shown once.
///
/// # Errors
/// `NOT_FOUND`; database failure.
pub async fn force_rotate(app: &App, handle: &str) -> Result<KeyRotated> {
    let agent = find(app, handle).await?;
    let (api_key, new_hash) = mint_secret(KEY_PREFIX);
    let (id, now) = (agent.id.clone(), app.now());
    let rotated_at = now.clone();
    let replaced = app
        .store
        .write(move |tx| {
            let replaced = agent_store::force_key(tx, &id, &new_hash, &now)?;
            if replaced {
                oauth_store::revoke_agent_grants(tx, &id, "API key rotated by the operator", &now)?;
            }
            Ok(replaced)
        })
        .await?;
    forget(app, &agent.id);
    if !replaced {
        return Err(Error::NotFound(format!("no agent with handle {handle:?}")));
    }
    tracing::info!(target: "console", handle = %agent.handle, "operator forced a key rotation");
    Ok(KeyRotated {
        new_api_key: api_key,
        handle: agent.handle,
        rotated_at,
        note: "the previous key no longer authenticates; hand this one to the agent's owner privately, it is shown once",
    })
}
