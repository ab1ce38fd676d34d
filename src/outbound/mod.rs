//! SSRF-safe outbound HTTP: the ONLY place the server dials URLs that users control (agent
//! push callbacks, live relay from a seller's delivery endpoint). Nothing else in the crate may
//! open a connection to a user-supplied address; go through [`Client`].
//!
//! # Layout
//!
//! - `mod.rs` (here): the public surface, re-exported so that `crate::outbound::X` names every
//!   public item, and [`OutboundError`].
//! - `policy`: which addresses and URLs are allowed: [`Policy`], the address denylist
//!   ([`denied_reason`]) and the URL rules ([`check_url`]). Pure: no I/O.
//! - `dns`: name lookup without the C library (`/etc/hosts`, then the name servers of
//!   `/etc/resolv.conf`), deadline-bounded; the static binary has no NSS modules to call.
//! - `resolver`: name resolution, once, and pinning: the `VettingResolver` ureq dials through,
//!   [`check_destination`] (the URL rules plus a lookup now), and the unvetted resolver behind
//!   [`configured_agent`] for services the operator configures.
//! - `client`: the request/response client: [`Client`], [`Timeouts`], [`Response`], the body
//!   cap, and the mapping of ureq's errors to [`OutboundError`].
//!
//! The technique, in order:
//!
//! 1. **Syntax first** (`policy`). [`check_url`] accepts `https://` only (`http://` only in the
//!    loopback development mode), refuses user-info (`user:pw@`), and applies the address
//!    denylist at once when the host is a literal IP (including the odd numeric IPv4 spellings
//!    such as `2130706433` or `0x7f.1`, which resolvers happily accept).
//! 2. **Resolve once, vet, pin** (`resolver`). The [`ureq::Agent`] is built with
//!    [`Agent::with_parts`](ureq::Agent::with_parts) and a `VettingResolver`. ureq calls that
//!    resolver once per request, before it takes a pooled connection or dials a new one; the
//!    resolver looks the name up (under the resolve deadline), drops every address for which
//!    [`denied_reason`] says no, and returns only the vetted addresses. ureq's TCP connector then
//!    dials exactly those addresses, in order, so there is no second lookup an attacker could
//!    rebind (DNS rebinding / TOCTOU). When every address is denied the resolver fails with a
//!    typed error carried in [`ureq::Error::Other`], which [`Client::post_json`] downcasts back
//!    into [`OutboundError::Denied`] with the host and the reason.
//! 3. **No redirects** (`client`). `max_redirects(0)`: a 3xx comes back as a response and is
//!    reported as [`OutboundError::Redirect`], never followed.
//! 4. **No proxies** (`client`). `proxy(None)`: ureq would otherwise read `HTTPS_PROXY` and
//!    friends from the environment and hand name resolution to the proxy, bypassing the resolver.
//! 5. **Bounded** (`client`). Resolve, connect and whole-request deadlines, and a cap on response
//!    bytes (counted after any transparent decompression).
//!
//! Why a filtering resolver on one shared agent rather than a per-request agent with pre-resolved
//! addresses: the resolver sits exactly where ureq obtains the addresses it will dial, it runs for
//! literal-IP URLs too, and it needs no shared mutable state keyed by host. Connections are never
//! pooled: every call resolves, vets and dials afresh.

mod client;
mod dns;
mod policy;
mod resolver;

use std::error::Error as StdError;
use std::fmt;

pub use client::{Client, Response, Timeouts};
pub use policy::{Policy, check_url, denied_reason};
pub use resolver::check_destination;

/// A ureq agent for services the operator configures (Stripe, an x402 facilitator, the bourse
/// `verify --url` asks): `config` as given, names resolved without the C library (the binary is
/// static), and no address vetting. User-supplied URLs go through [`Client`] instead.
pub fn configured_agent(config: ureq::config::Config) -> ureq::Agent {
    ureq::Agent::with_parts(
        config,
        ureq::unversioned::transport::DefaultConnector::new(),
        resolver::ConfiguredResolver,
    )
}

/// Why an outbound request failed.
#[derive(Debug)]
pub enum OutboundError {
    /// The URL is unusable: syntax, scheme, credentials, or an invalid request header.
    InvalidUrl(String),
    /// Every address the host resolved to is in the denylist.
    Denied {
        /// The host as written in the URL.
        host: String,
        /// Why the (first) address was refused, e.g. `"loopback"`.
        reason: &'static str,
    },
    /// The name did not resolve.
    Dns(String),
    /// The connection was refused or reset, or TLS failed.
    Connect(String),
    /// A deadline (resolve, connect or total) passed.
    Timeout,
    /// The server answered with a redirect (3xx), which is never followed.
    Redirect(u16),
    /// The response body is larger than the allowed number of bytes.
    TooLarge {
        /// The cap in bytes.
        limit: usize,
    },
    /// Any other transport error.
    Io(String),
}

impl OutboundError {
    /// Whether retrying later can help: DNS, connect, timeout and I/O failures are transient;
    /// an invalid or denied URL, a redirect or an oversized body are permanent.
    pub fn is_transient(&self) -> bool {
        match self {
            OutboundError::Dns(_)
            | OutboundError::Connect(_)
            | OutboundError::Timeout
            | OutboundError::Io(_) => true,
            OutboundError::InvalidUrl(_)
            | OutboundError::Denied { .. }
            | OutboundError::Redirect(_)
            | OutboundError::TooLarge { .. } => false,
        }
    }
}

impl fmt::Display for OutboundError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OutboundError::InvalidUrl(msg) => write!(f, "invalid URL: {msg}"),
            OutboundError::Denied { host, reason } => {
                write!(f, "destination {host} is not allowed: {reason} address")
            }
            OutboundError::Dns(msg) => write!(f, "DNS lookup failed: {msg}"),
            OutboundError::Connect(msg) => write!(f, "could not connect: {msg}"),
            OutboundError::Timeout => write!(f, "the request timed out"),
            OutboundError::Redirect(status) => {
                write!(
                    f,
                    "the server answered with redirect {status}; redirects are not followed"
                )
            }
            OutboundError::TooLarge { limit } => {
                write!(f, "the response body is larger than {limit} bytes")
            }
            OutboundError::Io(msg) => write!(f, "transport error: {msg}"),
        }
    }
}

impl StdError for OutboundError {}

#[cfg(test)]
mod tests {
    use super::*;
    use policy::LOOPBACK;

    #[test]
    fn error_classes() {
        assert!(OutboundError::Dns("x".into()).is_transient());
        assert!(OutboundError::Connect("x".into()).is_transient());
        assert!(OutboundError::Timeout.is_transient());
        assert!(OutboundError::Io("x".into()).is_transient());
        assert!(!OutboundError::InvalidUrl("x".into()).is_transient());
        assert!(
            !OutboundError::Denied {
                host: "h".into(),
                reason: LOOPBACK
            }
            .is_transient()
        );
        assert!(!OutboundError::Redirect(302).is_transient());
        assert!(!OutboundError::TooLarge { limit: 1 }.is_transient());
        let denied = OutboundError::Denied {
            host: "127.0.0.1".into(),
            reason: LOOPBACK,
        };
        assert_eq!(
            denied.to_string(),
            "destination 127.0.0.1 is not allowed: loopback address"
        );
        assert_eq!(
            OutboundError::Redirect(302).to_string(),
            "the server answered with redirect 302; redirects are not followed"
        );
    }
}
