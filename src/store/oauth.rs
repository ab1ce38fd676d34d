//! OAuth clients, grants, authorization codes and tokens (`oauth_*` tables). Secrets arrive
//! here already hashed; nothing in this module sees a code or token itself.

use rusqlite::{Connection, OptionalExtension, Row, params};

use crate::error::Result;

/// A client as stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientRow {
    pub client_id: String,
    /// `registered` (RFC 7591) or `metadata` (a Client ID Metadata Document).
    pub kind: String,
    pub name: String,
    pub client_uri: Option<String>,
    pub redirect_uris: Vec<String>,
    /// `none`, `client_secret_post` or `client_secret_basic`.
    pub auth_method: String,
    pub secret_hash: Option<String>,
    pub created_at: String,
    pub fetched_at: Option<String>,
    pub revoked_at: Option<String>,
}

const CLIENT_COLUMNS: &str = "client_id, kind, name, client_uri, redirect_uris, auth_method, secret_hash, created_at, fetched_at, revoked_at";

fn client_from_row(row: &Row<'_>) -> rusqlite::Result<ClientRow> {
    let uris: String = row.get(4)?;
    Ok(ClientRow {
        client_id: row.get(0)?,
        kind: row.get(1)?,
        name: row.get(2)?,
        client_uri: row.get(3)?,
        redirect_uris: serde_json::from_str(&uris).unwrap_or_default(),
        auth_method: row.get(5)?,
        secret_hash: row.get(6)?,
        created_at: row.get(7)?,
        fetched_at: row.get(8)?,
        revoked_at: row.get(9)?,
    })
}

/// Stores a client, or refreshes a metadata-document client's fetched fields (its creation
/// time and any revocation stay).
///
/// # Errors
/// Database failure.
pub fn save_client(conn: &Connection, client: &ClientRow) -> Result<()> {
    let uris = serde_json::to_string(&client.redirect_uris).expect("strings serialize");
    conn.prepare_cached(
        "INSERT INTO oauth_clients (client_id, kind, name, client_uri, redirect_uris, auth_method, secret_hash, created_at, fetched_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
         ON CONFLICT (client_id) DO UPDATE SET name = excluded.name, client_uri = excluded.client_uri,
             redirect_uris = excluded.redirect_uris, auth_method = excluded.auth_method,
             fetched_at = excluded.fetched_at",
    )?
    .execute(params![
        client.client_id,
        client.kind,
        client.name,
        client.client_uri,
        uris,
        client.auth_method,
        client.secret_hash,
        client.created_at,
        client.fetched_at
    ])?;
    Ok(())
}

/// The client with this id, revoked or not.
///
/// # Errors
/// Database failure.
pub fn client(conn: &Connection, client_id: &str) -> Result<Option<ClientRow>> {
    Ok(conn
        .prepare_cached(&format!(
            "SELECT {CLIENT_COLUMNS} FROM oauth_clients WHERE client_id = ?1"
        ))?
        .query_row([client_id], client_from_row)
        .optional()?)
}

/// A page of clients, newest first, and the total.
///
/// # Errors
/// Database failure.
pub fn clients(conn: &Connection, limit: i64, offset: i64) -> Result<(Vec<ClientRow>, i64)> {
    let rows = conn
        .prepare_cached(&format!(
            "SELECT {CLIENT_COLUMNS} FROM oauth_clients ORDER BY created_at DESC, client_id LIMIT ?1 OFFSET ?2"
        ))?
        .query_map(params![limit, offset], client_from_row)?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let total = conn.query_row("SELECT count(*) FROM oauth_clients", [], |r| r.get(0))?;
    Ok((rows, total))
}

/// Revokes a client and every grant it holds; whether the client existed unrevoked.
///
/// # Errors
/// Database failure.
pub fn revoke_client(conn: &Connection, client_id: &str, now: &str) -> Result<bool> {
    let changed = conn
        .prepare_cached(
            "UPDATE oauth_clients SET revoked_at = ?2 WHERE client_id = ?1 AND revoked_at IS NULL",
        )?
        .execute(params![client_id, now])?;
    conn.prepare_cached(
        "UPDATE oauth_grants SET revoked_at = ?2, revoked_by = 'client revoked'
         WHERE client_id = ?1 AND revoked_at IS NULL",
    )?
    .execute(params![client_id, now])?;
    Ok(changed == 1)
}

/// A grant, with its client's name and its agent's handle for display.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GrantRow {
    pub id: String,
    pub client_id: String,
    pub client_name: String,
    pub agent_id: String,
    pub agent_handle: String,
    /// Space-separated scopes.
    pub scopes: String,
    pub resource: String,
    pub created_at: String,
    pub used_at: Option<String>,
    pub revoked_at: Option<String>,
    pub revoked_by: Option<String>,
}

const GRANT_SELECT: &str = "SELECT g.id, g.client_id, c.name, g.agent_id, a.handle, g.scopes, g.resource, g.created_at, g.used_at, g.revoked_at, g.revoked_by
     FROM oauth_grants g JOIN oauth_clients c ON c.client_id = g.client_id JOIN agents a ON a.id = g.agent_id";

fn grant_from_row(row: &Row<'_>) -> rusqlite::Result<GrantRow> {
    Ok(GrantRow {
        id: row.get(0)?,
        client_id: row.get(1)?,
        client_name: row.get(2)?,
        agent_id: row.get(3)?,
        agent_handle: row.get(4)?,
        scopes: row.get(5)?,
        resource: row.get(6)?,
        created_at: row.get(7)?,
        used_at: row.get(8)?,
        revoked_at: row.get(9)?,
        revoked_by: row.get(10)?,
    })
}

/// What a new grant records.
pub struct NewGrant<'a> {
    pub id: &'a str,
    pub client_id: &'a str,
    pub agent_id: &'a str,
    pub scopes: &'a str,
    pub resource: &'a str,
    pub now: &'a str,
    /// The daily spending cap the person chose (US cents), if any.
    pub spend_daily_cents: Option<i64>,
}

/// What a new authorization code records.
pub struct NewCode<'a> {
    pub hash: &'a str,
    pub redirect_uri: &'a str,
    /// Whether the authorization request named the redirect URI.
    pub redirect_given: bool,
    pub challenge: &'a str,
    pub expires_at: &'a str,
}

/// Records an Allow and its authorization code in one step.
///
/// # Errors
/// Database failure.
pub fn insert_grant_with_code(
    conn: &Connection,
    grant: &NewGrant<'_>,
    code: &NewCode<'_>,
) -> Result<()> {
    conn.prepare_cached(
        "INSERT INTO oauth_grants (id, client_id, agent_id, scopes, resource, created_at, spend_daily_cents)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?
    .execute(params![
        grant.id,
        grant.client_id,
        grant.agent_id,
        grant.scopes,
        grant.resource,
        grant.now,
        grant.spend_daily_cents
    ])?;
    conn.prepare_cached(
        "INSERT INTO oauth_codes (code_hash, grant_id, redirect_uri, redirect_given, challenge, expires_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?
    .execute(params![
        code.hash,
        grant.id,
        code.redirect_uri,
        code.redirect_given,
        code.challenge,
        code.expires_at
    ])?;
    Ok(())
}

/// A grant by id.
///
/// # Errors
/// Database failure.
pub fn grant(conn: &Connection, id: &str) -> Result<Option<GrantRow>> {
    Ok(conn
        .prepare_cached(&format!("{GRANT_SELECT} WHERE g.id = ?1"))?
        .query_row([id], grant_from_row)
        .optional()?)
}

/// A page of grants, newest first, and the total; `active` keeps only unrevoked ones.
///
/// # Errors
/// Database failure.
pub fn grants(
    conn: &Connection,
    agent_id: Option<&str>,
    active: bool,
    limit: i64,
    offset: i64,
) -> Result<(Vec<GrantRow>, i64)> {
    // Active: not revoked, and exchanged for tokens at least once (an Allow whose code was never
    // redeemed grants nothing). `?3` is the agent, or NULL for every agent.
    let filter = if active {
        " WHERE (?3 IS NULL OR g.agent_id = ?3) AND g.revoked_at IS NULL AND g.used_at IS NOT NULL"
    } else {
        " WHERE (?3 IS NULL OR g.agent_id = ?3)"
    };
    let rows = conn
        .prepare_cached(&format!(
            "{GRANT_SELECT}{filter} ORDER BY g.created_at DESC, g.id LIMIT ?1 OFFSET ?2"
        ))?
        .query_map(params![limit, offset, agent_id], grant_from_row)?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let total = conn.query_row(
        &format!(
            "SELECT count(*) FROM oauth_grants g{}",
            filter.replace("?3", "?1")
        ),
        [agent_id],
        |r| r.get(0),
    )?;
    Ok((rows, total))
}

/// Revokes one grant; whether it was active.
///
/// # Errors
/// Database failure.
pub fn revoke_grant(conn: &Connection, id: &str, by: &str, now: &str) -> Result<bool> {
    let changed = conn
        .prepare_cached(
            "UPDATE oauth_grants SET revoked_at = ?2, revoked_by = ?3 WHERE id = ?1 AND revoked_at IS NULL",
        )?
        .execute(params![id, now, by])?;
    Ok(changed == 1)
}

/// Revokes every grant of an agent (its API key was rotated); how many.
///
/// # Errors
/// Database failure.
pub fn revoke_agent_grants(
    conn: &Connection,
    agent_id: &str,
    by: &str,
    now: &str,
) -> Result<usize> {
    Ok(conn
        .prepare_cached(
            "UPDATE oauth_grants SET revoked_at = ?2, revoked_by = ?3 WHERE agent_id = ?1 AND revoked_at IS NULL",
        )?
        .execute(params![agent_id, now, by])?)
}

/// An authorization code as stored.
#[derive(Clone, Debug)]
pub struct CodeRow {
    pub grant_id: String,
    pub redirect_uri: String,
    pub redirect_given: bool,
    pub challenge: String,
    pub expires_at: String,
    pub used_at: Option<String>,
}

/// Marks a code used and returns it as it was before (so the caller sees an earlier use).
///
/// # Errors
/// Database failure.
pub fn take_code(conn: &Connection, code_hash: &str, now: &str) -> Result<Option<CodeRow>> {
    let code = conn
        .prepare_cached(
            "SELECT grant_id, redirect_uri, redirect_given, challenge, expires_at, used_at FROM oauth_codes WHERE code_hash = ?1",
        )?
        .query_row([code_hash], |r| {
            Ok(CodeRow {
                grant_id: r.get(0)?,
                redirect_uri: r.get(1)?,
                redirect_given: r.get(2)?,
                challenge: r.get(3)?,
                expires_at: r.get(4)?,
                used_at: r.get(5)?,
            })
        })
        .optional()?;
    if code.as_ref().is_some_and(|code| code.used_at.is_none()) {
        conn.prepare_cached("UPDATE oauth_codes SET used_at = ?2 WHERE code_hash = ?1")?
            .execute(params![code_hash, now])?;
    }
    Ok(code)
}

/// `access` or `refresh`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TokenKind {
    Access,
    Refresh,
}

impl TokenKind {
    fn as_str(self) -> &'static str {
        match self {
            TokenKind::Access => "access",
            TokenKind::Refresh => "refresh",
        }
    }
}

/// Stores a token's hash.
///
/// # Errors
/// Database failure.
pub fn insert_token(
    conn: &Connection,
    token_hash: &str,
    grant_id: &str,
    kind: TokenKind,
    scopes: &str,
    expires_at: &str,
) -> Result<()> {
    conn.prepare_cached(
        "INSERT INTO oauth_tokens (token_hash, grant_id, kind, scopes, expires_at) VALUES (?1, ?2, ?3, ?4, ?5)",
    )?
    .execute(params![token_hash, grant_id, kind.as_str(), scopes, expires_at])?;
    Ok(())
}

/// A token as stored, with the state of its grant and client.
#[derive(Clone, Debug)]
pub struct TokenRow {
    pub grant_id: String,
    pub kind: TokenKind,
    /// Space-separated scopes (within the grant's).
    pub scopes: String,
    pub expires_at: String,
    pub used_at: Option<String>,
    /// The token, its grant or its client has been revoked.
    pub revoked: bool,
}

/// The token with this hash.
///
/// # Errors
/// Database failure.
pub fn token(conn: &Connection, token_hash: &str) -> Result<Option<TokenRow>> {
    Ok(conn
        .prepare_cached(
            "SELECT t.grant_id, t.kind, t.scopes, t.expires_at, t.used_at,
                    t.revoked_at IS NOT NULL OR g.revoked_at IS NOT NULL OR c.revoked_at IS NOT NULL
             FROM oauth_tokens t JOIN oauth_grants g ON g.id = t.grant_id
             JOIN oauth_clients c ON c.client_id = g.client_id
             WHERE t.token_hash = ?1",
        )?
        .query_row([token_hash], |r| {
            let kind: String = r.get(1)?;
            Ok(TokenRow {
                grant_id: r.get(0)?,
                kind: if kind == "refresh" {
                    TokenKind::Refresh
                } else {
                    TokenKind::Access
                },
                scopes: r.get(2)?,
                expires_at: r.get(3)?,
                used_at: r.get(4)?,
                revoked: r.get(5)?,
            })
        })
        .optional()?)
}

/// Marks a refresh token exchanged; whether this call was the first use (the new tokens'
/// issuance records the grant's use).
///
/// # Errors
/// Database failure.
pub fn use_refresh(conn: &Connection, token_hash: &str, now: &str) -> Result<bool> {
    let changed = conn
        .prepare_cached(
            "UPDATE oauth_tokens SET used_at = ?2 WHERE token_hash = ?1 AND kind = 'refresh' AND used_at IS NULL",
        )?
        .execute(params![token_hash, now])?;
    Ok(changed == 1)
}

/// Records that a grant was just exchanged for tokens.
///
/// # Errors
/// Database failure.
pub fn touch_grant(conn: &Connection, grant_id: &str, now: &str) -> Result<()> {
    conn.prepare_cached("UPDATE oauth_grants SET used_at = ?2 WHERE id = ?1")?
        .execute(params![grant_id, now])?;
    Ok(())
}

/// Revokes one token.
///
/// # Errors
/// Database failure.
pub fn revoke_token(conn: &Connection, token_hash: &str, now: &str) -> Result<()> {
    conn.prepare_cached(
        "UPDATE oauth_tokens SET revoked_at = ?2 WHERE token_hash = ?1 AND revoked_at IS NULL",
    )?
    .execute(params![token_hash, now])?;
    Ok(())
}

/// Deletes up to `batch` codes that expired before `codes_before`, `batch` tokens that expired
/// before `tokens_before`, and `batch` never-redeemed grants left without a code: called with each token issuance, so cleanup keeps pace with use
/// without a worker of its own. (Until then a used code or refresh token stays, so a second use
/// is recognised as reuse.)
///
/// # Errors
/// Database failure.
pub fn sweep(
    conn: &Connection,
    codes_before: &str,
    tokens_before: &str,
    batch: i64,
) -> Result<usize> {
    let codes = conn
        .prepare_cached(
            "DELETE FROM oauth_codes WHERE rowid IN
                 (SELECT rowid FROM oauth_codes WHERE expires_at <= ?1 LIMIT ?2)",
        )?
        .execute(params![codes_before, batch])?;
    let tokens = conn
        .prepare_cached(
            "DELETE FROM oauth_tokens WHERE rowid IN
                 (SELECT rowid FROM oauth_tokens WHERE expires_at <= ?1 LIMIT ?2)",
        )?
        .execute(params![tokens_before, batch])?;
    // Allows whose code was never redeemed and is gone: nothing hangs off them.
    let grants = conn
        .prepare_cached(
            "DELETE FROM oauth_grants WHERE rowid IN
                 (SELECT g.rowid FROM oauth_grants g
                  WHERE g.used_at IS NULL AND g.created_at <= ?1
                    AND NOT EXISTS (SELECT 1 FROM oauth_codes c WHERE c.grant_id = g.id)
                    AND NOT EXISTS (SELECT 1 FROM oauth_tokens t WHERE t.grant_id = g.id)
                  LIMIT ?2)",
        )?
        .execute(params![codes_before, batch])?;
    Ok(codes + tokens + grants)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{agents, test_agent, test_db};

    fn client_row(id: &str) -> ClientRow {
        ClientRow {
            client_id: id.into(),
            kind: "registered".into(),
            name: "Test client".into(),
            client_uri: None,
            redirect_uris: vec!["http://127.0.0.1/cb".into()],
            auth_method: "none".into(),
            secret_hash: None,
            created_at: "2026-11-24T00:00:00.000Z".into(),
            fetched_at: None,
            revoked_at: None,
        }
    }

    #[test]
    fn a_code_is_taken_once_and_revoking_the_agent_revokes_its_tokens() {
        let conn = test_db();
        agents::insert(&conn, &test_agent("a1", "A-1"), "hash-a1", None).unwrap();
        save_client(&conn, &client_row("bmc_1")).unwrap();
        assert_eq!(client(&conn, "bmc_1").unwrap(), Some(client_row("bmc_1")));
        let now = "2026-11-24T00:00:01.000Z";
        let grant = NewGrant {
            id: "g1",
            client_id: "bmc_1",
            agent_id: "a1",
            scopes: "read",
            resource: "http://x/api/mcp",
            now,
            spend_daily_cents: None,
        };
        let code = NewCode {
            hash: "code-h",
            redirect_uri: "http://127.0.0.1/cb",
            redirect_given: true,
            challenge: "ch",
            expires_at: "z",
        };
        insert_grant_with_code(&conn, &grant, &code).unwrap();
        assert!(
            take_code(&conn, "code-h", now)
                .unwrap()
                .unwrap()
                .used_at
                .is_none()
        );
        assert_eq!(
            take_code(&conn, "code-h", now)
                .unwrap()
                .unwrap()
                .used_at
                .as_deref(),
            Some(now)
        );
        insert_token(&conn, "tok-h", "g1", TokenKind::Access, "read", "z").unwrap();
        assert!(!token(&conn, "tok-h").unwrap().unwrap().revoked);
        assert_eq!(
            revoke_agent_grants(&conn, "a1", "key rotated", now).unwrap(),
            1
        );
        assert!(token(&conn, "tok-h").unwrap().unwrap().revoked);
        insert_token(
            &conn,
            "old-h",
            "g1",
            TokenKind::Refresh,
            "read",
            "2026-01-01T00:00:00.000Z",
        )
        .unwrap();
        assert_eq!(sweep(&conn, now, now, 100).unwrap(), 1);
        assert!(
            token(&conn, "old-h").unwrap().is_none() && token(&conn, "tok-h").unwrap().is_some()
        );
        let (rows, total) = grants(&conn, None, false, 10, 0).unwrap();
        assert_eq!((rows[0].agent_handle.as_str(), total), ("A-1", 1));
        assert_eq!(grants(&conn, None, true, 10, 0).unwrap().1, 0);
        assert_eq!(grants(&conn, Some("a1"), false, 10, 0).unwrap().1, 1);
        assert_eq!(grants(&conn, Some("a2"), false, 10, 0).unwrap().1, 0);
    }
}
