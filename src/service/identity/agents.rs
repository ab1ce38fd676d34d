//! Agent identity: registration, authentication, profile, lookup, key rotation, the chair.

use rusqlite::Connection;
use serde_json::{Value, json};

use crate::crypto::random_bytes;
use crate::error::{Error, Result};
use crate::outbound;
use crate::request::Patch;
use crate::request::agents::UpdateMe;
use crate::request::agents::{Lookup, Register};
use crate::service::identity::cards::{
    AgentPage, ChairBound, ChairUnbound, Connect, Found, KeyRotated, OwnRecord, PublicCard,
    Registered,
};
use crate::service::identity::names;
use crate::service::ratelimit::{ADMISSION, REGISTRATION};
use crate::service::{App, hash_secret, mint_secret};
use crate::store::agents::{self as agent_store, AgentRow};
use crate::store::{Store, settings};

/// Every API key starts with this.
pub const KEY_PREFIX: &str = "svc_live_";
/// Crockford base32: no I, L, O, U, so handles read back unambiguously.
const HANDLE_ALPHABET: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/// Who is asking, for per-client limits.
pub struct Client<'a> {
    pub ip: &'a str,
}

/// `POST /api/agents/register`: creates an agent and shows its key once.
///
/// # Errors
/// `INVALID_ARGUMENT` for bad fields, `RATE_LIMITED` past 10 per hour per IP.
pub async fn register(app: &App, request: Register, client: &Client<'_>) -> Result<Registered> {
    let Register {
        name,
        email,
        display_name,
        callback_url,
    } = request;
    let email = email.map(check_email).transpose()?;
    let display = display_name
        .as_deref()
        .map(names::display_name)
        .transpose()?;
    let callback_url = callback_url
        .map(|url| check_callback_url(app.outbound.policy(), url))
        .transpose()?;
    vet_callback(app, callback_url.as_ref()).await?;
    // A name that looks like another agent's is refused before the attempt counts (and again,
    // authoritatively, in the write).
    if let Some(display) = &display {
        let skeleton = display.skeleton.clone();
        let taken = app
            .store
            .read(move |conn| agent_store::skeleton_taken(conn, &skeleton, ""))
            .await?;
        if taken {
            return Err(names::taken());
        }
    }
    app.limiter.check(REGISTRATION, client.ip)?;

    let (api_key, key_hash) = mint_secret(KEY_PREFIX);
    let now = app.now();
    let mut agent = AgentRow {
        id: uuid::Uuid::new_v4().to_string(),
        handle: String::new(),
        name,
        display_name: display.as_ref().map(|d| d.text.clone()),
        email,
        callback_url,
        created_at: now.clone(),
        updated_at: now,
        rating_count: 0,
        sales_count: 0,
        restricted: None,
        via_grant: None,
    };
    let agent = app
        .store
        .write(move |tx| {
            agent.handle = unused_handle(tx)?;
            let skeleton = display.as_ref().map(|d| d.skeleton.as_str());
            if let Some(skeleton) = skeleton
                && agent_store::skeleton_taken(tx, skeleton, &agent.id)?
            {
                return Err(names::taken());
            }
            agent_store::insert(tx, &agent, &key_hash, skeleton)?;
            Ok(agent)
        })
        .await?;
    let connect = connect_block(app, &agent.handle).await?;
    Ok(Registered {
        id: agent.id,
        name: agent.name,
        display_name: agent.display_name,
        handle: agent.handle,
        api_key,
        created_at: agent.created_at,
        connect,
    })
}

fn unused_handle(conn: &Connection) -> Result<String> {
    for _ in 0..16 {
        let bytes = random_bytes::<8>();
        let suffix: String = bytes
            .iter()
            .map(|b| char::from(HANDLE_ALPHABET[usize::from(b & 31)]))
            .collect();
        let handle = format!("A-{suffix}");
        if agent_store::find_by_handle(conn, &handle)?.is_none() {
            return Ok(handle);
        }
    }
    Err(Error::Internal("could not find an unused handle".into()))
}

/// Authenticated agents by key hash. Agent rows change only through `store::agents`; every
/// write that changes a field of [`AgentRow`] is followed, after its COMMIT, by a forget of the
/// agent (key rotation and profile edit here; sale counts and ratings through [`forget`]), so an
/// entry is never stale; misses read the database. Columns outside [`AgentRow`] (seller code,
/// reputation, rating sum, house mark) cannot make an entry stale.
#[derive(Default)]
pub struct KnownAgents {
    by_key_hash: std::sync::Mutex<std::collections::HashMap<String, AgentRow>>,
    /// Bumped by every `forget`: a row read before a change is never cached after it.
    generation: std::sync::atomic::AtomicU64,
}

/// Most agents remembered at once (then the cache starts over).
const KNOWN_AGENTS_MAX: usize = 100_000;

impl KnownAgents {
    fn get(&self, key_hash: &str) -> Option<AgentRow> {
        self.by_key_hash
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(key_hash)
            .cloned()
    }

    pub fn generation(&self) -> u64 {
        self.generation.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Caches a row read while the generation was `read_at`, unless an agent was forgotten
    /// since (the row might be the one a key rotation or profile edit just replaced).
    fn put(&self, read_at: u64, key_hash: String, agent: AgentRow) {
        let mut known = self.by_key_hash.lock().unwrap_or_else(|p| p.into_inner());
        if self.generation() != read_at {
            return;
        }
        if known.len() >= KNOWN_AGENTS_MAX {
            known.clear();
        }
        known.insert(key_hash, agent);
    }

    /// Forgets every agent (a follower's replica changed: any row may have).
    pub fn forget_all(&self) {
        let mut known = self.by_key_hash.lock().unwrap_or_else(|p| p.into_inner());
        self.generation
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        known.clear();
    }

    fn forget(&self, agent_id: &str) {
        let mut known = self.by_key_hash.lock().unwrap_or_else(|p| p.into_inner());
        self.generation
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        known.retain(|_, agent| agent.id != agent_id);
    }
}

/// Forgets `agent_id` from the known-agents cache. Call it after the COMMIT of a write that
/// changed a field of the agent's [`AgentRow`] outside this module (a settled sale moves
/// `sales_count`, a rating `rating_count`).
pub fn forget(app: &App, agent_id: &str) {
    app.known_agents.forget(agent_id);
}

/// Resolves a bearer key to its agent.
///
/// # Errors
/// `UNAUTHENTICATED` when the key is missing, unknown or revoked.
pub async fn authenticate(app: &App, key: Option<&str>) -> Result<AgentRow> {
    let key_hash = key_hash(key)?;
    if let Some(agent) = app.known_agents.get(&key_hash) {
        return live(app, agent);
    }
    let read_at = app.known_agents.generation();
    let lookup = key_hash.clone();
    let agent = app
        .store
        .read(move |conn| {
            if let Some(agent) = agent_store::find_by_key_hash(conn, &lookup)? {
                return Ok(Some(agent));
            }
            // A restricted key: the same agent, within the key's scopes and caps.
            Ok(
                agent_store::find_by_restricted_key_hash(conn, &lookup)?.map(|(mut agent, key)| {
                    agent.restricted = Some(Box::new(key));
                    agent
                }),
            )
        })
        .await?
        .ok_or_else(unknown_key)?;
    app.known_agents.put(read_at, key_hash, agent.clone());
    live(app, agent)
}

/// The agent, unless it came through a restricted key that was revoked or has expired.
fn live(app: &App, agent: AgentRow) -> Result<AgentRow> {
    if let Some(key) = &agent.restricted {
        if key.revoked_at.is_some() {
            return Err(unknown_key());
        }
        if key
            .expires_at
            .as_deref()
            .is_some_and(|at| at <= app.now().as_str())
        {
            return Err(Error::Unauthenticated(
                "this restricted key has expired".into(),
            ));
        }
    }
    Ok(agent)
}

/// Forgets every cached row of `agent_id` (a restricted key of it was revoked).
pub(crate) fn forget_agent(app: &App, agent_id: &str) {
    app.known_agents.forget(agent_id);
}

/// The stored hash of a presented key.
///
/// # Errors
/// `UNAUTHENTICATED` when no key was presented.
pub fn key_hash(key: Option<&str>) -> Result<String> {
    match key {
        Some(key) => Ok(hash_secret(key)),
        None => Err(Error::Unauthenticated(
            "this endpoint needs `Authorization: Bearer <API key>`; register at POST /api/agents/register".into(),
        )),
    }
}

/// The error for a key that matches no agent.
pub fn unknown_key() -> Error {
    Error::Unauthenticated("the API key is unknown or has been revoked".into())
}

/// `GET /api/agents/me`.
///
/// # Errors
/// Database failure.
pub async fn me(app: &App, agent: &AgentRow) -> Result<OwnRecord> {
    let connect = connect_block(app, &agent.handle).await?;
    Ok(OwnRecord::new(agent, connect))
}

/// `PATCH /api/agents/me`: displayName, email, callbackUrl (null clears).
///
/// # Errors
/// `INVALID_ARGUMENT` for unknown or bad fields.
pub async fn update_me(app: &App, agent: AgentRow, request: UpdateMe) -> Result<OwnRecord> {
    let display_name = map_patch(request.display_name, |text| names::display_name(&text))?;
    let email = map_patch(request.email, check_email)?;
    let callback_url = map_patch(request.callback_url, |url| {
        check_callback_url(app.outbound.policy(), url)
    })?;
    if let Patch::Set(url) = &callback_url {
        vet_callback(app, Some(url)).await?;
    }
    if display_name == Patch::Keep && email == Patch::Keep && callback_url == Patch::Keep {
        return me(app, &agent).await;
    }
    let (id, now) = (agent.id.clone(), app.now());
    // The patch applies to the row as stored when the writer runs it, so two concurrent edits
    // of different fields both land.
    let agent = app
        .store
        .write(move |tx| {
            let mut agent = agent_store::find_by_id(tx, &id)?.ok_or_else(unknown_key)?;
            let before = (
                agent.display_name.clone(),
                agent.email.clone(),
                agent.callback_url.clone(),
            );
            let skeleton = match display_name {
                Patch::Keep => agent.display_name.as_deref().map(names::skeleton),
                Patch::Clear => None,
                Patch::Set(ref name) => Some(name.skeleton.clone()),
            };
            // Only a new name is held to the rule: an agent keeps the name it has.
            if let (Patch::Set(_), Some(skeleton)) = (&display_name, &skeleton)
                && agent_store::skeleton_taken(tx, skeleton, &agent.id)?
            {
                return Err(names::taken());
            }
            apply(
                &mut agent.display_name,
                match display_name {
                    Patch::Keep => Patch::Keep,
                    Patch::Clear => Patch::Clear,
                    Patch::Set(name) => Patch::Set(name.text),
                },
            );
            apply(&mut agent.email, email);
            apply(&mut agent.callback_url, callback_url);
            if before
                != (
                    agent.display_name.clone(),
                    agent.email.clone(),
                    agent.callback_url.clone(),
                )
            {
                agent.updated_at = now;
                agent_store::update_profile(tx, &agent, skeleton.as_deref())?;
            }
            Ok(agent)
        })
        .await?;
    app.known_agents.forget(&agent.id);
    me(app, &agent).await
}

fn apply(field: &mut Option<String>, patch: Patch<String>) {
    match patch {
        Patch::Keep => {}
        Patch::Clear => *field = None,
        Patch::Set(value) => *field = Some(value),
    }
}

fn map_patch<T>(patch: Patch<String>, check: impl Fn(String) -> Result<T>) -> Result<Patch<T>> {
    Ok(match patch {
        Patch::Set(value) => Patch::Set(check(value)?),
        Patch::Keep => Patch::Keep,
        Patch::Clear => Patch::Clear,
    })
}

/// `GET /api/agents`: public cards in registration order.
///
/// # Errors
/// Database failure.
pub async fn list(app: &App, limit: i64, offset: i64) -> Result<AgentPage> {
    let (rows, total, chair) = app
        .store
        .read(move |conn| {
            let (rows, total) = agent_store::list(conn, limit, offset)?;
            Ok((rows, total, chair_id(conn)?))
        })
        .await?;
    let agents = rows
        .iter()
        .map(|row| public_card(app, row, chair.as_deref()))
        .collect();
    Ok(AgentPage {
        agents,
        total,
        limit,
        offset,
    })
}

/// `GET /api/agents/lookup?handle=…` or `?name=…` (exact opt-in display name).
/// `handle=chair` resolves the operator-bound chair.
///
/// # Errors
/// `INVALID_ARGUMENT` without exactly one of handle/name; `CHAIR_UNBOUND` (503) for
/// `handle=chair` while no chair is bound; `RATE_LIMITED` past the admission limit.
pub async fn lookup(app: &App, request: Lookup, client: &Client<'_>) -> Result<Found> {
    let query = match (request.handle, request.name) {
        (Some(handle), None) => Ok(handle.trim().to_ascii_uppercase()),
        // Display names are stored in NFC; a query in another normal form finds them.
        (None, Some(name)) => Err(names::normalized(name.trim())),
        _ => {
            return Err(Error::invalid(
                "give exactly one of the query parameters `handle` or `name`",
            ));
        }
    };
    app.limiter.check(ADMISSION, client.ip)?;
    let (rows, chair) = match query {
        Ok(handle) => {
            app.store
                .read(move |conn| {
                    let chair = chair_id(conn)?;
                    if handle == "CHAIR" {
                        let Some(chair_id) = &chair else {
                            return Err(chair_unbound());
                        };
                        let row = agent_store::find_by_id(conn, chair_id)?;
                        return Ok((row.into_iter().collect(), chair));
                    }
                    Ok((
                        agent_store::find_by_handle(conn, &handle)?
                            .into_iter()
                            .collect(),
                        chair,
                    ))
                })
                .await?
        }
        Err(name) => {
            app.store
                .read(move |conn| {
                    Ok((
                        agent_store::find_by_display_name(conn, &name, 50)?,
                        chair_id(conn)?,
                    ))
                })
                .await?
        }
    };
    let agents = rows
        .iter()
        .map(|row| public_card(app, row, chair.as_deref()))
        .collect();
    Ok(Found { agents })
}

/// `POST /api/agents/keys/revoke`: a new key; the old one fails at once, and so do the OAuth
/// grants the agent gave hosted clients (they authorize again). Two concurrent
/// rotations with the same key: one gets the new key, the other 401.
///
/// # Errors
/// Database failure.
pub async fn revoke_key(app: &App, presented_key: Option<&str>) -> Result<KeyRotated> {
    let agent = authenticate(app, presented_key).await?;
    let old_hash = key_hash(presented_key)?;
    let (api_key, new_hash) = mint_secret(KEY_PREFIX);
    let now = app.now();
    let id = agent.id.clone();
    let rotated_at = now.clone();
    let replaced = app
        .store
        .write(move |tx| {
            let replaced = agent_store::replace_key(tx, &id, &old_hash, &new_hash, &now)?;
            if replaced {
                // The key is the agent's root credential: what it authorized goes with it.
                crate::store::oauth::revoke_agent_grants(tx, &id, "API key rotated", &now)?;
            }
            Ok(replaced)
        })
        .await?;
    app.known_agents.forget(&agent.id);
    if !replaced {
        return Err(unknown_key());
    }
    Ok(KeyRotated {
        new_api_key: api_key,
        handle: agent.handle,
        rotated_at,
        note: "the previous key no longer authenticates; store this one privately, it is shown once",
    })
}

/// Binds the operator's chair agent by handle (CLI and operator API).
///
/// # Errors
/// `NOT_FOUND` when no agent has that handle.
pub fn bind_chair(store: &Store, handle: &str, now: &str) -> Result<ChairBound> {
    let (handle, now) = (handle.to_owned(), now.to_owned());
    store.write_blocking(move |tx| {
        let agent = agent_store::find_by_handle(tx, &handle.trim().to_ascii_uppercase())?
            .ok_or_else(|| Error::NotFound(format!("no agent has the handle {handle:?}")))?;
        settings::put(tx, settings::CHAIR, &json!({ "agentId": agent.id }), &now)?;
        Ok(ChairBound {
            chair_handle: agent.handle,
            bound_at: now,
        })
    })
}

/// `PUT /api/operator/chair`.
///
/// # Errors
/// `INVALID_ARGUMENT` without a handle, `NOT_FOUND` for an unknown one.
pub async fn bind_chair_request(app: &App, handle: String) -> Result<ChairBound> {
    let store = app.store.clone();
    let now = app.now();
    tokio::task::spawn_blocking(move || bind_chair(&store, &handle, &now))
        .await
        .map_err(|e| Error::Internal(format!("chair binding task: {e}")))?
}

/// `DELETE /api/operator/chair`.
///
/// # Errors
/// Database failure.
pub async fn unbind_chair(app: &App) -> Result<ChairUnbound> {
    app.store
        .write(|tx| {
            settings::delete(tx, settings::CHAIR)?;
            Ok(ChairUnbound::default())
        })
        .await
}

/// The bound chair's agent id, if any.
fn chair_id(conn: &Connection) -> Result<Option<String>> {
    Ok(settings::get(conn, settings::CHAIR)?.and_then(|value| {
        value
            .get("agentId")
            .and_then(Value::as_str)
            .map(str::to_owned)
    }))
}

fn chair_unbound() -> Error {
    Error::Unavailable {
        code: "CHAIR_UNBOUND",
        message: "no chair agent is bound on this instance yet; the operator binds one with `bourse chair bind HANDLE`".into(),
    }
}

/// The connect block: how to reach and be reached.
async fn connect_block(app: &App, handle: &str) -> Result<Connect> {
    let chair_handle = app
        .store
        .read(|conn| match chair_id(conn)? {
            Some(id) => Ok(agent_store::find_by_id(conn, &id)?.map(|row| row.handle)),
            None => Ok(None),
        })
        .await?;
    Ok(Connect {
        handle: handle.to_owned(),
        a2a_card_url: app.url(&super::cards::a2a_card_path(handle)),
        inbox_url: app.url("/api/agents/me/inbox"),
        lookup_url: app.url(&format!("/api/agents/lookup?handle={handle}")),
        send_url: app.url(&format!("/api/agents/{handle}/messages")),
        team_door: app.url("/api/inquiries"),
        chair_handle,
    })
}

/// The public card: handle, opt-in display name, chair mark. Never name, email, callback or keys.
pub fn public_card(app: &App, agent: &AgentRow, chair_id: Option<&str>) -> PublicCard {
    PublicCard {
        handle: agent.handle.clone(),
        display_name: agent.display_name.clone(),
        verified: chair_id == Some(agent.id.as_str()),
        created_at: agent.created_at.clone(),
        a2a_card_url: app.url(&super::cards::a2a_card_path(&agent.handle)),
    }
}

/// An `email` argument that looks like an address, else 400.
///
/// # Errors
/// `INVALID_ARGUMENT`.
pub fn check_email(email: String) -> Result<String> {
    if plausible_email(&email) {
        Ok(email)
    } else {
        Err(Error::invalid("`email` is not an email address"))
    }
}

/// Whether `email` looks like an address (one `@`, a dotted domain, no whitespace).
pub fn plausible_email(email: &str) -> bool {
    match email.split_once('@') {
        Some((local, domain)) => {
            !local.is_empty()
                && domain.contains('.')
                && !domain.starts_with('.')
                && !domain.ends_with('.')
                && !domain.contains('@')
                && !email.contains(char::is_whitespace)
        }
        None => false,
    }
}

/// A callback URL must pass the outbound client's rules at registration and PATCH: `https://`
/// (or `http://` under `--allow-loopback-outbound`), no credentials, and no literal address in a
/// refused range. [`vet_callback`] then resolves a host name; names are checked again at every
/// delivery.
fn check_callback_url(policy: outbound::Policy, url: String) -> Result<String> {
    outbound::check_url(&url, policy).map_err(callback_error)
}

/// Resolves a callback URL's host (off the executor) and refuses a name that points only to
/// refused addresses, such as `localhost` or a name for a private network.
async fn vet_callback(app: &App, url: Option<&String>) -> Result<()> {
    let Some(url) = url.cloned() else {
        return Ok(());
    };
    let policy = app.outbound.policy();
    tokio::task::spawn_blocking(move || outbound::check_destination(&url, policy))
        .await
        .map_err(|e| Error::Internal(format!("callback check: {e}")))?
        .map(|_| ())
        .map_err(destination_error)
}

/// A well-formed callback URL whose host does not resolve, or resolves only to refused
/// addresses, is refused by the state of the network, not by the contract: 422, as for a
/// seller's delivery endpoint.
fn destination_error(error: outbound::OutboundError) -> Error {
    let message = match error {
        outbound::OutboundError::Denied { host, reason } => {
            format!("`callbackUrl` points to a refused destination ({host}: {reason})")
        }
        other => format!("`callbackUrl` {other}"),
    };
    Error::Unprocessable {
        code: "DESTINATION_REFUSED",
        message,
    }
}

fn callback_error(error: outbound::OutboundError) -> Error {
    match error {
        outbound::OutboundError::Denied { host, reason } => Error::invalid(format!(
            "`callbackUrl` points to a refused destination ({host}: {reason})"
        )),
        other => Error::invalid(format!("`callbackUrl` {other}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn callback_urls_follow_the_outbound_rules() {
        let strict = outbound::Policy {
            allow_loopback: false,
        };
        assert!(check_callback_url(strict, "https://agent.example/hook".into()).is_ok());
        for bad in [
            "http://agent.example/hook",
            "https://user:pw@agent.example/",
            "https://127.0.0.1/",
            "https://[::ffff:10.0.0.1]/",
        ] {
            assert!(check_callback_url(strict, bad.into()).is_err(), "{bad}");
        }
        let sandbox = outbound::Policy {
            allow_loopback: true,
        };
        assert!(check_callback_url(sandbox, "http://127.0.0.1:9/hook".into()).is_ok());
    }

    #[test]
    fn a_row_read_before_a_key_rotation_is_never_cached_after_it() {
        let known = KnownAgents::default();
        let row = AgentRow {
            id: "agent".into(),
            handle: "A-00000000".into(),
            name: "n".into(),
            display_name: None,
            email: None,
            callback_url: None,
            created_at: String::new(),
            updated_at: String::new(),
            rating_count: 0,
            sales_count: 0,
            restricted: None,
            via_grant: None,
        };
        let read_at = known.generation();
        known.forget("agent"); // the rotation commits while the read is in flight
        known.put(read_at, "old-key-hash".into(), row.clone());
        assert!(known.get("old-key-hash").is_none());
        known.put(known.generation(), "new-key-hash".into(), row);
        assert!(known.get("new-key-hash").is_some());
    }

    #[test]
    fn emails_need_a_local_part_and_a_dotted_domain() {
        assert!(check_email("a@b.co".into()).is_ok());
        assert!(check_email("a@b".into()).is_err());
        assert!(check_email("@b.co".into()).is_err());
        assert!(check_email("a b@c.co".into()).is_err());
    }
}
