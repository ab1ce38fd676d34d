//! The one error type. Every failure a request can meet is a variant here; `http::response`
//! maps it to a status and the JSON body `{"error":{"code","message","status"}}` in one place.

use std::fmt;

/// Result with the crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong, grouped by what the client should do about it.
#[derive(Debug)]
pub enum Error {
    /// The body is not JSON (400 `INVALID_JSON`).
    InvalidJson(String),
    /// A field is missing, of the wrong type or out of range (400 `INVALID_ARGUMENT`).
    InvalidArgument(String),
    /// A malformed request part with its own code (400), such as an undecodable payment header.
    BadRequest { code: &'static str, message: String },
    /// Missing, unknown or revoked credential (401 `UNAUTHENTICATED`).
    Unauthenticated(String),
    /// Authenticated but not allowed (403 with its own code).
    Forbidden { code: &'static str, message: String },
    /// A purchase refused by the buyer's spending controls (403 `SPEND_LIMIT_EXCEEDED`,
    /// `RAIL_NOT_ALLOWED`, `CATEGORY_NOT_ALLOWED`); a cap's refusal names the cap.
    SpendRefused {
        code: &'static str,
        message: String,
        limit: Option<Box<SpendLimit>>,
    },
    /// No such resource or path (404 `NOT_FOUND`).
    NotFound(String),
    /// Not there yet, but will be: retry after the delay (404 with its own code and
    /// `Retry-After`), such as an inclusion proof before a checkpoint covers the entry.
    NotYet {
        code: &'static str,
        message: String,
        retry_after_secs: u64,
    },
    /// Known path, wrong method (405 `METHOD_NOT_ALLOWED`, with `Allow`).
    MethodNotAllowed { allow: Vec<&'static str> },
    /// The request conflicts with current state (409 with its own code).
    Conflict { code: &'static str, message: String },
    /// A JSON body sent with another media type (415 `UNSUPPORTED_MEDIA_TYPE`).
    UnsupportedMediaType(String),
    /// The body exceeds the cap (413 `PAYLOAD_TOO_LARGE`).
    PayloadTooLarge { limit: usize },
    /// The request head or body did not arrive in time (408 `REQUEST_TIMEOUT`).
    RequestTimeout,
    /// A request head the HTTP parser refused, answered by `server` once hyper gives up on it:
    /// 400 `MALFORMED_REQUEST`, 414 `URI_TOO_LONG` or 431 `HEADERS_TOO_LARGE`.
    UnreadableHead { status: u16 },
    /// Well-formed but refused by a business rule (422 with its own code).
    Unprocessable { code: &'static str, message: String },
    /// Too many requests (429 `RATE_LIMITED`, with `Retry-After`).
    RateLimited {
        retry_after_secs: u64,
        message: String,
    },
    /// An upstream service the operator configured failed to answer (502 with its own code).
    BadGateway { code: &'static str, message: String },
    /// Temporarily unable to answer (503 with its own code).
    Unavailable { code: &'static str, message: String },
    /// Not acknowledged in bounded time; safe to retry after the delay (503, with `Retry-After`).
    Busy {
        code: &'static str,
        message: String,
        retry_after_secs: u64,
    },
    /// A write reached a read-only follower (503 `READ_ONLY_FOLLOWER`); the HTTP layer answers
    /// the request with a redirect to the primary instead.
    ReadOnlyFollower,
    /// A bug or an I/O failure (500 `INTERNAL`); the detail is logged, never sent.
    Internal(String),
    /// A refusal of an OAuth endpoint (token, registration, revocation), answered in OAuth's own
    /// shape `{"error": "invalid_grant", "error_description": "…"}` (RFC 6749 §5.2, RFC 7591
    /// §3.2.2), which OAuth clients parse, rather than bourse's.
    OAuth { error: OAuthCode, message: String },
}

/// The cap a purchase would have passed: shown as the error's `limit` member.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SpendLimit {
    /// `per_purchase`, `daily`, `monthly`, `key` or `grant`.
    pub name: &'static str,
    /// The cap, in US cents.
    pub amount_cents: i64,
    /// What is left of it before this purchase (the cap itself for a per-purchase cap).
    pub left_cents: i64,
    /// What the refused purchase costs.
    pub requested_cents: i64,
    /// When the window starts over (RFC 3339 UTC); `None` for a per-purchase cap.
    pub resets_at: Option<String>,
}

/// The error codes of the OAuth endpoints (RFC 6749 §5.2, RFC 7591 §3.2.2, RFC 8707, RFC 7009).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OAuthCode {
    InvalidRequest,
    InvalidClient,
    InvalidGrant,
    UnauthorizedClient,
    UnsupportedGrantType,
    InvalidScope,
    InvalidTarget,
    InvalidRedirectUri,
    InvalidClientMetadata,
}

impl OAuthCode {
    /// The code as OAuth spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            OAuthCode::InvalidRequest => "invalid_request",
            OAuthCode::InvalidClient => "invalid_client",
            OAuthCode::InvalidGrant => "invalid_grant",
            OAuthCode::UnauthorizedClient => "unauthorized_client",
            OAuthCode::UnsupportedGrantType => "unsupported_grant_type",
            OAuthCode::InvalidScope => "invalid_scope",
            OAuthCode::InvalidTarget => "invalid_target",
            OAuthCode::InvalidRedirectUri => "invalid_redirect_uri",
            OAuthCode::InvalidClientMetadata => "invalid_client_metadata",
        }
    }

    /// The same code in bourse's spelling (logs, and the tool errors of other faces).
    fn upper(self) -> &'static str {
        match self {
            OAuthCode::InvalidRequest => "OAUTH_INVALID_REQUEST",
            OAuthCode::InvalidClient => "OAUTH_INVALID_CLIENT",
            OAuthCode::InvalidGrant => "OAUTH_INVALID_GRANT",
            OAuthCode::UnauthorizedClient => "OAUTH_UNAUTHORIZED_CLIENT",
            OAuthCode::UnsupportedGrantType => "OAUTH_UNSUPPORTED_GRANT_TYPE",
            OAuthCode::InvalidScope => "OAUTH_INVALID_SCOPE",
            OAuthCode::InvalidTarget => "OAUTH_INVALID_TARGET",
            OAuthCode::InvalidRedirectUri => "OAUTH_INVALID_REDIRECT_URI",
            OAuthCode::InvalidClientMetadata => "OAUTH_INVALID_CLIENT_METADATA",
        }
    }
}

impl Error {
    /// HTTP status code.
    pub fn status(&self) -> u16 {
        match self {
            Error::InvalidJson(_) | Error::InvalidArgument(_) | Error::BadRequest { .. } => 400,
            Error::Unauthenticated(_) => 401,
            Error::Forbidden { .. } | Error::SpendRefused { .. } => 403,
            Error::NotFound(_) => 404,
            Error::MethodNotAllowed { .. } => 405,
            Error::Conflict { .. } => 409,
            Error::NotYet { .. } => 404,
            Error::PayloadTooLarge { .. } => 413,
            Error::UnsupportedMediaType(_) => 415,
            Error::RequestTimeout => 408,
            Error::UnreadableHead { status } => *status,
            Error::Unprocessable { .. } => 422,
            Error::RateLimited { .. } => 429,
            Error::BadGateway { .. } => 502,
            Error::Unavailable { .. } | Error::Busy { .. } | Error::ReadOnlyFollower => 503,
            Error::Internal(_) => 500,
            // A client that failed to authenticate is 401 (RFC 6749 §5.2); the rest are 400.
            Error::OAuth { error, .. } => match error {
                OAuthCode::InvalidClient => 401,
                _ => 400,
            },
        }
    }

    /// Stable UPPER_SNAKE code.
    pub fn code(&self) -> &'static str {
        match self {
            Error::InvalidJson(_) => "INVALID_JSON",
            Error::InvalidArgument(_) => "INVALID_ARGUMENT",
            Error::Unauthenticated(_) => "UNAUTHENTICATED",
            Error::NotFound(_) => "NOT_FOUND",
            Error::MethodNotAllowed { .. } => "METHOD_NOT_ALLOWED",
            Error::PayloadTooLarge { .. } => "PAYLOAD_TOO_LARGE",
            Error::UnsupportedMediaType(_) => "UNSUPPORTED_MEDIA_TYPE",
            Error::RequestTimeout => "REQUEST_TIMEOUT",
            Error::UnreadableHead { status: 414 } => "URI_TOO_LONG",
            Error::UnreadableHead { status: 431 } => "HEADERS_TOO_LARGE",
            Error::UnreadableHead { .. } => "MALFORMED_REQUEST",
            Error::RateLimited { .. } => "RATE_LIMITED",
            Error::Internal(_) => "INTERNAL",
            Error::ReadOnlyFollower => "READ_ONLY_FOLLOWER",
            Error::OAuth { error, .. } => error.upper(),
            Error::Forbidden { code, .. }
            | Error::SpendRefused { code, .. }
            | Error::BadRequest { code, .. }
            | Error::BadGateway { code, .. }
            | Error::Conflict { code, .. }
            | Error::Unprocessable { code, .. }
            | Error::Unavailable { code, .. }
            | Error::Busy { code, .. }
            | Error::NotYet { code, .. } => code,
        }
    }

    /// The message a client may see (internal detail is withheld).
    pub fn public_message(&self) -> String {
        match self {
            Error::Internal(_) => "internal error; quote the request id when reporting it".into(),
            other => other.to_string(),
        }
    }

    /// The same error with its client-facing message rewritten (internal detail and messages
    /// the type builds itself are left as they are).
    pub fn map_message(mut self, rewrite: impl Fn(&str) -> String) -> Error {
        match &mut self {
            Error::InvalidJson(m)
            | Error::InvalidArgument(m)
            | Error::Unauthenticated(m)
            | Error::UnsupportedMediaType(m)
            | Error::NotFound(m) => *m = rewrite(m),
            Error::Forbidden { message, .. }
            | Error::SpendRefused { message, .. }
            | Error::BadRequest { message, .. }
            | Error::BadGateway { message, .. }
            | Error::Conflict { message, .. }
            | Error::Unprocessable { message, .. }
            | Error::RateLimited { message, .. }
            | Error::Unavailable { message, .. }
            | Error::Busy { message, .. }
            | Error::NotYet { message, .. }
            | Error::OAuth { message, .. } => *message = rewrite(message),
            Error::Internal(_)
            | Error::MethodNotAllowed { .. }
            | Error::RequestTimeout
            | Error::UnreadableHead { .. }
            | Error::ReadOnlyFollower
            | Error::PayloadTooLarge { .. } => {}
        }
        self
    }

    /// How long a client should wait before trying again (the `Retry-After` of a 429 or 503).
    pub fn retry_after_secs(&self) -> Option<u64> {
        match self {
            Error::RateLimited {
                retry_after_secs, ..
            }
            | Error::Busy {
                retry_after_secs, ..
            }
            | Error::NotYet {
                retry_after_secs, ..
            } => Some(*retry_after_secs),
            _ => None,
        }
    }

    /// The cap a spending refusal names, if any.
    pub fn spend_limit(&self) -> Option<&SpendLimit> {
        match self {
            Error::SpendRefused {
                limit: Some(limit), ..
            } => Some(limit),
            _ => None,
        }
    }

    /// Shorthand for [`Error::OAuth`].
    pub fn oauth(error: OAuthCode, message: impl Into<String>) -> Error {
        Error::OAuth {
            error,
            message: message.into(),
        }
    }

    /// Shorthand for [`Error::InvalidArgument`].
    pub fn invalid(message: impl Into<String>) -> Error {
        Error::InvalidArgument(message.into())
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::InvalidJson(m)
            | Error::InvalidArgument(m)
            | Error::Unauthenticated(m)
            | Error::UnsupportedMediaType(m)
            | Error::NotFound(m)
            | Error::Internal(m) => f.write_str(m),
            Error::Forbidden { message, .. }
            | Error::SpendRefused { message, .. }
            | Error::BadRequest { message, .. }
            | Error::BadGateway { message, .. }
            | Error::Conflict { message, .. }
            | Error::Unprocessable { message, .. }
            | Error::RateLimited { message, .. }
            | Error::Unavailable { message, .. }
            | Error::Busy { message, .. }
            | Error::NotYet { message, .. }
            | Error::OAuth { message, .. } => f.write_str(message),
            Error::MethodNotAllowed { allow } => {
                write!(
                    f,
                    "method not allowed; this path accepts {}",
                    allow.join(", ")
                )
            }
            Error::RequestTimeout => f.write_str("the request did not arrive in time"),
            Error::UnreadableHead { status: 414 } => f.write_str("the request target is too long"),
            Error::UnreadableHead { status: 431 } => {
                f.write_str("the request's header section is too large")
            }
            Error::UnreadableHead { .. } => f.write_str("the request is not valid HTTP/1.1"),
            Error::ReadOnlyFollower => {
                f.write_str("this server is a read-only follower; send writes to its primary")
            }
            Error::PayloadTooLarge { limit } => {
                write!(f, "request body exceeds the limit of {limit} bytes")
            }
        }
    }
}

impl std::error::Error for Error {}

impl From<rusqlite::Error> for Error {
    fn from(error: rusqlite::Error) -> Error {
        Error::Internal(format!("database: {error}"))
    }
}

impl From<r2d2::Error> for Error {
    fn from(error: r2d2::Error) -> Error {
        Error::Internal(format!("database pool: {error}"))
    }
}
