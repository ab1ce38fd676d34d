//! Name resolution, once per request, and pinning: the `VettingResolver` that ureq asks for the
//! addresses it will dial (it resolves once, keeps only the addresses [`denied_reason`] allows,
//! and ureq dials exactly those), [`check_destination`], which vets a URL's name as it resolves
//! now, and the `ConfiguredResolver` for services the operator names. Both resolvers look names
//! up with [`super::dns`], never through the C library.

use std::error::Error as StdError;
use std::fmt;
use std::net::SocketAddr;
use std::time::Duration;

use ureq::config::Config;
use ureq::http::Uri;
use ureq::unversioned::resolver::{ResolvedSocketAddrs, Resolver};
use ureq::unversioned::transport::NextTimeout;

use super::OutboundError;
use super::dns::{LookupError, lookup};
use super::policy::{Policy, check_url, denied_reason};

/// [`check_url`], then where a host name resolves now: refused when every address it resolves
/// to is denied. A name that does not resolve (yet) passes; it is resolved and vetted again on
/// every call. Blocking (a lookup of at most 3 s): call it off the async executor.
///
/// # Errors
/// As [`check_url`], or `Denied` for a name that resolves only to refused addresses.
pub fn check_destination(url: &str, policy: Policy) -> Result<String, OutboundError> {
    let normalized = check_url(url, policy)?;
    let uri: Uri = normalized
        .parse()
        .map_err(|_| OutboundError::InvalidUrl("is not a valid URL".into()))?;
    let Some((host, port)) = target(&uri) else {
        return Ok(normalized);
    };
    if let Ok(addresses) = lookup(host, port, Some(Duration::from_secs(3)))
        && let Some(first) = addresses.first()
        && addresses
            .iter()
            .all(|a| denied_reason(a.ip(), policy).is_some())
    {
        let reason = denied_reason(first.ip(), policy).unwrap_or("refused address");
        return Err(OutboundError::Denied {
            host: host.to_owned(),
            reason,
        });
    }
    Ok(normalized)
}

/// Why resolution failed inside [`VettingResolver`]; travels through [`ureq::Error::Other`].
#[derive(Debug)]
pub(super) enum ResolveFailure {
    Denied { host: String, reason: &'static str },
    Dns(String),
}

impl fmt::Display for ResolveFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ResolveFailure::Denied { host, reason } => write!(f, "{host}: {reason}"),
            ResolveFailure::Dns(msg) => f.write_str(msg),
        }
    }
}

impl StdError for ResolveFailure {}

/// The resolver that makes ureq connect only to vetted addresses: it resolves once, drops every
/// denied address and returns the rest, which are exactly what ureq's connector dials.
#[derive(Debug)]
pub(super) struct VettingResolver {
    pub(super) policy: Policy,
}

impl Resolver for VettingResolver {
    fn resolve(
        &self,
        uri: &Uri,
        _config: &Config,
        timeout: NextTimeout,
    ) -> Result<ResolvedSocketAddrs, ureq::Error> {
        let (host, candidates) = lookup_for_ureq(uri, &timeout)?;

        let mut vetted = self.empty();
        let mut first_denial = None;
        for addr in candidates {
            match denied_reason(addr.ip(), self.policy) {
                Some(reason) => {
                    tracing::debug!(host, ip = %addr.ip(), reason, "outbound address denied");
                    first_denial.get_or_insert(reason);
                }
                // At most 16 addresses fit; extra ones are dropped like ureq's own resolver does.
                None if !vetted.contains(&addr) => {
                    let _ = vetted.try_push(addr);
                }
                None => {}
            }
        }
        if vetted.is_empty() {
            let failure = match first_denial {
                Some(reason) => ResolveFailure::Denied {
                    host: host.to_owned(),
                    reason,
                },
                None => ResolveFailure::Dns(format!("{host} has no addresses")),
            };
            return Err(ureq::Error::Other(Box::new(failure)));
        }
        if let Some(reason) = first_denial {
            tracing::warn!(
                host,
                reason,
                "outbound host resolved to some denied addresses; using the others"
            );
        }
        Ok(vetted)
    }
}

/// The resolver for services the operator names (Stripe, an x402 facilitator, the bourse a
/// command verifies against): the same lookup, without vetting, as those addresses are settings,
/// not user input (a sandbox may well point them at loopback).
#[derive(Debug)]
pub(super) struct ConfiguredResolver;

impl Resolver for ConfiguredResolver {
    fn resolve(
        &self,
        uri: &Uri,
        _config: &Config,
        timeout: NextTimeout,
    ) -> Result<ResolvedSocketAddrs, ureq::Error> {
        let (_, candidates) = lookup_for_ureq(uri, &timeout)?;
        let mut addresses = self.empty();
        // At most 16 addresses fit; extra ones are dropped like ureq's own resolver does.
        for addr in candidates {
            let _ = addresses.try_push(addr);
        }
        Ok(addresses)
    }
}

/// The host (without IPv6 brackets) and port a URI names; the scheme's port by default.
fn target(uri: &Uri) -> Option<(&str, u16)> {
    let host = uri.host()?;
    let host = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    let port = match uri.port_u16() {
        Some(p) => p,
        None if uri.scheme_str() == Some("http") => 80,
        None => 443,
    };
    Some((host, port))
}

/// Looks up the URI's host within ureq's deadline, failures as ureq errors (a lookup failure
/// travels as [`ResolveFailure::Dns`]).
fn lookup_for_ureq<'u>(
    uri: &'u Uri,
    timeout: &NextTimeout,
) -> Result<(&'u str, Vec<SocketAddr>), ureq::Error> {
    let (host, port) = target(uri).ok_or(ureq::Error::HostNotFound)?;
    let deadline = (!timeout.after.is_not_happening()).then_some(*timeout.after);
    match lookup(host, port, deadline) {
        Ok(addrs) => Ok((host, addrs)),
        Err(LookupError::Timeout) => Err(ureq::Error::Timeout(timeout.reason)),
        Err(LookupError::Failed(msg)) => {
            Err(ureq::Error::Other(Box::new(ResolveFailure::Dns(msg))))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outbound::client::map_ureq_error;
    use crate::outbound::policy::{DEV, LINK_LOCAL, LOOPBACK, STRICT};

    #[test]
    fn resolver_filters_and_keeps_vetted_addresses() {
        let uri: Uri = "https://localhost:4443/".parse().unwrap();
        let config = Config::default();
        let strict = VettingResolver { policy: STRICT };
        let err = strict
            .resolve(&uri, &config, NextTimeout::default())
            .unwrap_err();
        match map_ureq_error(err) {
            OutboundError::Denied { host, reason } => {
                assert_eq!(host, "localhost");
                assert_eq!(reason, LOOPBACK);
            }
            other => panic!("expected Denied, got {other:?}"),
        }

        let dev = VettingResolver { policy: DEV };
        let addrs = dev.resolve(&uri, &config, NextTimeout::default()).unwrap();
        assert!(!addrs.is_empty());
        assert!(
            addrs
                .iter()
                .all(|a| a.ip().is_loopback() && a.port() == 4443),
            "{addrs:?}"
        );

        let uri: Uri = "https://[::1]/".parse().unwrap();
        let addrs = dev.resolve(&uri, &config, NextTimeout::default()).unwrap();
        assert_eq!(
            addrs.iter().copied().collect::<Vec<_>>(),
            vec!["[::1]:443".parse().unwrap()]
        );

        let uri: Uri = "https://169.254.169.254/".parse().unwrap();
        let err = dev
            .resolve(&uri, &config, NextTimeout::default())
            .unwrap_err();
        assert!(matches!(
            map_ureq_error(err),
            OutboundError::Denied {
                reason: LINK_LOCAL,
                ..
            }
        ));
    }
}
