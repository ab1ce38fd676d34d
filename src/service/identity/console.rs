//! The operator console's sessions: the operator signs in once with the operator key typed into
//! a form, and gets a session (an unguessable cookie value) with its own anti-forgery token,
//! which every state-changing form carries. Sessions live in memory only: a restart signs the
//! operator out, and no session is ever written to the database or a log. A session ends after
//! [`IDLE`] without a request, [`ABSOLUTE`] after signing in, or at sign-out; failed sign-ins
//! are limited per client ([`SIGN_IN_FAILURES`]), and while a client is over its limit even the
//! right key is refused, so guessing gains nothing. Expiry goes by the wall clock
//! (`Clock::wall`), so moving the sandbox's test clock does not sign the operator out.

use std::collections::HashMap;
use std::sync::Mutex;

use jiff::{SignedDuration, Timestamp};

use crate::crypto::{b64url, random_bytes};
use crate::error::{Error, Result};
use crate::service::ratelimit::Rule;
use crate::service::{App, constant_time_eq, hash_secret};

/// A session ends after this long without a request.
pub const IDLE: SignedDuration = SignedDuration::from_mins(30);
/// A session ends this long after signing in, however busy.
pub const ABSOLUTE: SignedDuration = SignedDuration::from_hours(12);
/// At most this many sessions at once; signing in past it ends the oldest.
const MAX_SESSIONS: usize = 32;

/// 5 failed sign-ins per 15 minutes per client address. Not lifted by `--relaxed-limits`
/// (`per_client: false`): it guards the operator key.
pub const SIGN_IN_FAILURES: Rule = Rule {
    name: "console-sign-in",
    max: 5,
    window: SignedDuration::from_mins(15),
    what: "failed console sign-ins",
    per_client: false,
};

/// The name of the session cookie.
pub const COOKIE: &str = "bourse_console";
/// The name of the cookie that carries the sign-in form's own anti-forgery token.
pub const SIGN_IN_COOKIE: &str = "bourse_console_sign_in";

/// One signed-in session, kept under the SHA-256 of its cookie value.
#[derive(Clone, Debug)]
pub struct Session {
    /// The anti-forgery token every form of this session carries.
    pub csrf: String,
    pub signed_in_at: Timestamp,
    pub last_seen: Timestamp,
}

/// The sessions in force, in memory.
#[derive(Default)]
pub struct Sessions {
    by_hash: Mutex<HashMap<String, Session>>,
}

/// What signing in makes: the cookie value (given to the browser once) and the session.
pub struct SignedIn {
    pub cookie: String,
    pub session: Session,
}

/// Why a request has no session.
#[derive(Debug, PartialEq, Eq)]
pub enum NoSession {
    /// No cookie, or one that names no session (never made, signed out, or the server restarted).
    Unknown,
    /// The session ran out (idle or absolute expiry); it is gone now.
    Expired,
}

impl Sessions {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Session>> {
        self.by_hash.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The number of sessions in force (expired ones are dropped when next seen).
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether no session is in force.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Signs the operator in with `key`, typed into the sign-in form by a client at `client`.
///
/// # Errors
/// `RATE_LIMITED` (with the wait) while the client is over [`SIGN_IN_FAILURES`], whatever the
/// key; `UNAUTHENTICATED` for a wrong key (counted against the client).
pub fn sign_in(app: &App, key: &str, client: &str) -> Result<SignedIn> {
    app.limiter.over(SIGN_IN_FAILURES, client)?;
    if app.authenticate_operator(Some(key)).is_err() {
        app.limiter.check(SIGN_IN_FAILURES, client)?;
        tracing::warn!(target: "console", client, "console sign-in refused: wrong operator key");
        return Err(Error::Unauthenticated(
            "that is not the operator key (the contents of DATA/operator.key)".into(),
        ));
    }
    let now = app.clock.wall();
    let cookie = b64url(&random_bytes::<32>());
    let session = Session {
        csrf: b64url(&random_bytes::<32>()),
        signed_in_at: now,
        last_seen: now,
    };
    let mut sessions = app.console.lock();
    sessions.retain(|_, kept| live(kept, now));
    while sessions.len() >= MAX_SESSIONS {
        let oldest = sessions
            .iter()
            .min_by_key(|(_, kept)| kept.signed_in_at)
            .map(|(hash, _)| hash.clone());
        match oldest {
            Some(hash) => sessions.remove(&hash),
            None => break,
        };
    }
    sessions.insert(hash_secret(&cookie), session.clone());
    drop(sessions);
    tracing::info!(target: "console", client, "operator signed in at the console");
    Ok(SignedIn { cookie, session })
}

fn live(session: &Session, now: Timestamp) -> bool {
    now.duration_since(session.last_seen) < IDLE
        && now.duration_since(session.signed_in_at) < ABSOLUTE
}

/// The session `cookie` names, seen now (its idle clock restarts).
///
/// # Errors
/// [`NoSession`]: none, or expired (and then forgotten).
pub fn session(app: &App, cookie: Option<&str>) -> std::result::Result<Session, NoSession> {
    let cookie = cookie.filter(|c| !c.is_empty()).ok_or(NoSession::Unknown)?;
    let hash = hash_secret(cookie);
    let now = app.clock.wall();
    let mut sessions = app.console.lock();
    let Some(session) = sessions.get_mut(&hash) else {
        return Err(NoSession::Unknown);
    };
    if !live(session, now) {
        sessions.remove(&hash);
        return Err(NoSession::Expired);
    }
    session.last_seen = now;
    Ok(session.clone())
}

/// Whether `presented` is `session`'s anti-forgery token.
pub fn token_matches(session: &Session, presented: Option<&str>) -> bool {
    presented.is_some_and(|token| constant_time_eq(token, &session.csrf))
}

/// Ends the session `cookie` names (nothing when it names none).
pub fn sign_out(app: &App, cookie: &str) {
    if app.console.lock().remove(&hash_secret(cookie)).is_some() {
        tracing::info!(target: "console", "operator signed out of the console");
    }
}

/// A fresh anti-forgery token for the sign-in form (double-submitted: in its cookie and in the
/// form, so a page elsewhere cannot sign a browser in with a key of its choosing).
pub fn sign_in_token() -> String {
    b64url(&random_bytes::<24>())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_lives_until_idle_or_absolute_expiry() {
        let at = |s: &str| -> Timestamp { s.parse().unwrap() };
        let session = Session {
            csrf: "t".into(),
            signed_in_at: at("2026-01-01T00:00:00Z"),
            last_seen: at("2026-01-01T11:50:00Z"),
        };
        assert!(live(&session, at("2026-01-01T11:59:59Z")));
        assert!(!live(&session, at("2026-01-01T12:00:00Z")), "absolute");
        let idle = Session {
            last_seen: at("2026-01-01T01:00:00Z"),
            ..session.clone()
        };
        assert!(live(&idle, at("2026-01-01T01:29:59Z")));
        assert!(!live(&idle, at("2026-01-01T01:30:00Z")), "idle");
        assert!(token_matches(&session, Some("t")));
        assert!(!token_matches(&session, Some("u")));
        assert!(!token_matches(&session, None));
    }
}
