//! SSRF-safe outbound HTTP: the ONLY place the server dials URLs that users control (agent
//! push callbacks, live relay from a seller's delivery endpoint). Nothing else in the crate may
//! open a connection to a user-supplied address; go through [`Client`].
//!
//! The technique, in order:
//!
//! 1. **Syntax first.** [`check_url`] accepts `https://` only (`http://` only in the loopback
//!    development mode), refuses user-info (`user:pw@`), and applies the address denylist at once
//!    when the host is a literal IP (including the odd numeric IPv4 spellings such as
//!    `2130706433` or `0x7f.1`, which resolvers happily accept).
//! 2. **Resolve once, vet, pin.** The [`ureq::Agent`] is built with [`Agent::with_parts`] and a
//!    `VettingResolver`. ureq calls that resolver once per request, before it takes a pooled
//!    connection or dials a new one; the resolver looks the name up (under the resolve deadline),
//!    drops every address for which [`denied_reason`] says no, and returns only the vetted
//!    addresses. ureq's TCP connector then dials exactly those addresses, in order, so there is
//!    no second lookup an attacker could rebind (DNS rebinding / TOCTOU). When every address is denied the resolver fails with a typed
//!    error carried in [`ureq::Error::Other`], which [`Client::post_json`] downcasts back into
//!    [`OutboundError::Denied`] with the host and the reason.
//! 3. **No redirects.** `max_redirects(0)`: a 3xx comes back as a response and is reported as
//!    [`OutboundError::Redirect`], never followed.
//! 4. **No proxies.** `proxy(None)`: ureq would otherwise read `HTTPS_PROXY` and friends from the
//!    environment and hand name resolution to the proxy, bypassing the resolver.
//! 5. **Bounded.** Resolve, connect and whole-request deadlines, and a cap on response bytes
//!    (counted after any transparent decompression).
//!
//! Why a filtering resolver on one shared agent rather than a per-request agent with pre-resolved
//! addresses: the resolver sits exactly where ureq obtains the addresses it will dial, it runs for
//! literal-IP URLs too, and it needs no shared mutable state keyed by host. Connections are never
//! pooled: every call resolves, vets and dials afresh.

use std::error::Error as StdError;
use std::fmt;
use std::io::{self, Read};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, ToSocketAddrs};
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use ureq::Agent;
use ureq::config::Config;
use ureq::http::Uri;
use ureq::http::header::{CONTENT_TYPE, HeaderName, HeaderValue};
use ureq::unversioned::resolver::{ResolvedSocketAddrs, Resolver};
use ureq::unversioned::transport::{DefaultConnector, NextTimeout};

/// Policy: what destinations are allowed.
#[derive(Clone, Copy, Debug)]
pub struct Policy {
    /// Development and test mode: allow loopback destinations (`127.0.0.0/8`, `::1`,
    /// `::ffff:127.x.y.z`) and plain `http://` URLs. Every other denied range stays denied.
    pub allow_loopback: bool,
}

/// Deadlines for one outbound request.
#[derive(Clone, Copy, Debug)]
pub struct Timeouts {
    /// Name resolution.
    pub resolve: Duration,
    /// TCP connect plus TLS handshake.
    pub connect: Duration,
    /// The whole request, from resolution to the end of the response body.
    pub total: Duration,
}

impl Default for Timeouts {
    fn default() -> Timeouts {
        Timeouts {
            resolve: Duration::from_secs(5),
            connect: Duration::from_secs(5),
            total: Duration::from_secs(15),
        }
    }
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

/// A response with any status except 3xx.
#[derive(Debug)]
pub struct Response {
    /// HTTP status code.
    pub status: u16,
    /// The `Content-Type` header, when present and valid text.
    pub content_type: Option<String>,
    /// The body, at most `max_body` bytes.
    pub body: Vec<u8>,
}

/// The one outbound client. Blocking: callers run it on a blocking thread.
#[derive(Clone, Debug)]
pub struct Client {
    agent: Agent,
    policy: Policy,
}

impl Client {
    /// Builds the client: vetting resolver, no proxy, no redirects, deadlines set.
    pub fn new(policy: Policy, timeouts: Timeouts) -> Client {
        let config = Agent::config_builder()
            // Mandatory: an env proxy would resolve the target itself, skipping the resolver.
            .proxy(None)
            .max_redirects(0)
            .https_only(!policy.allow_loopback)
            .http_status_as_error(false)
            .timeout_resolve(Some(timeouts.resolve))
            .timeout_connect(Some(timeouts.connect))
            .timeout_global(Some(timeouts.total))
            .user_agent("bourse/1.0")
            // No connection reuse: each call resolves, vets and dials afresh. Calls go to many
            // hosts at a low rate, and a pooled connection the peer already closed would turn a
            // healthy attempt into a failed one.
            .max_idle_connections(0)
            .max_idle_connections_per_host(0)
            .build();
        let agent = Agent::with_parts(config, DefaultConnector::new(), VettingResolver { policy });
        Client { agent, policy }
    }

    /// The policy this client enforces.
    pub fn policy(&self) -> Policy {
        self.policy
    }

    /// POSTs a JSON body and returns the response (any status except 3xx, which is
    /// `Err(Redirect)`), reading at most `max_body` bytes of body (more is `Err(TooLarge)`).
    ///
    /// # Errors
    ///
    /// See [`OutboundError`]; [`OutboundError::is_transient`] tells whether to retry.
    pub fn post_json(
        &self,
        url: &str,
        body: &[u8],
        extra_headers: &[(&str, &str)],
        max_body: usize,
    ) -> Result<Response, OutboundError> {
        let url = check_url(url, self.policy)?;
        let mut request = self
            .agent
            .post(&url)
            .header(CONTENT_TYPE, "application/json");
        for (name, value) in extra_headers {
            // Validated here so that a bad header is a permanent error, not a transport one.
            let name = HeaderName::from_bytes(name.as_bytes()).map_err(|_| {
                OutboundError::InvalidUrl(format!("invalid request header {name:?}"))
            })?;
            let value = HeaderValue::from_str(value).map_err(|_| {
                OutboundError::InvalidUrl(format!("invalid value for header {name}"))
            })?;
            request = request.header(name, value);
        }
        let mut response = request.send(body).map_err(map_ureq_error)?;

        let status = response.status().as_u16();
        if (300..400).contains(&status) {
            return Err(OutboundError::Redirect(status));
        }
        let content_type = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);

        // ureq's limit counts the bytes on the wire (before gzip decoding) and fails even at EOF
        // once exactly `limit` bytes were read, hence `+ 1`; the `take` bounds the decoded bytes.
        let cap = (max_body as u64).saturating_add(1);
        let mut reader = response
            .body_mut()
            .with_config()
            .limit(cap)
            .reader()
            .take(cap);
        let mut buf = Vec::new();
        match reader.read_to_end(&mut buf) {
            Ok(_) => {}
            Err(e) => {
                return Err(match ureq::Error::from(e) {
                    ureq::Error::BodyExceedsLimit(_) => OutboundError::TooLarge { limit: max_body },
                    other => map_ureq_error(other),
                });
            }
        }
        if buf.len() > max_body {
            return Err(OutboundError::TooLarge { limit: max_body });
        }
        Ok(Response {
            status,
            content_type,
            body: buf,
        })
    }
}

/// Why an address is refused, or `None` when it may be dialled. Pure: no I/O.
///
/// IPv4-mapped IPv6 (`::ffff:a.b.c.d`) is unwrapped and judged as IPv4. Other IPv4-embedding
/// forms (IPv4-compatible `::a.b.c.d`, NAT64, 6to4, Teredo) are denied outright. With
/// `policy.allow_loopback` only the loopback ranges become allowed.
pub fn denied_reason(ip: IpAddr, policy: Policy) -> Option<&'static str> {
    let reason = match ip {
        IpAddr::V4(v4) => v4_denied_reason(v4),
        IpAddr::V6(v6) => v6_denied_reason(v6),
    }?;
    if reason == LOOPBACK && policy.allow_loopback {
        None
    } else {
        Some(reason)
    }
}

const LOOPBACK: &str = "loopback";
const UNSPECIFIED: &str = "unspecified";
const PRIVATE: &str = "private network (RFC 1918)";
const LINK_LOCAL: &str = "link-local / cloud metadata";
const CGNAT: &str = "carrier-grade NAT";
const ULA: &str = "unique local IPv6";
const SITE_LOCAL: &str = "site-local IPv6";
const MULTICAST: &str = "multicast";
const BROADCAST: &str = "broadcast";
const RESERVED: &str = "reserved";
const DOCUMENTATION: &str = "documentation";
const BENCHMARKING: &str = "benchmarking";
const DISCARD: &str = "discard-only";
const EMBEDDING: &str = "IPv4-embedding IPv6 form (NAT64/6to4/Teredo)";

fn in_v4(ip: Ipv4Addr, net: [u8; 4], prefix: u32) -> bool {
    let mask = if prefix == 0 {
        0
    } else {
        u32::MAX << (32 - prefix)
    };
    u32::from(ip) & mask == u32::from(Ipv4Addr::from(net)) & mask
}

fn in_v6(ip: Ipv6Addr, net: [u16; 8], prefix: u32) -> bool {
    let mask = if prefix == 0 {
        0
    } else {
        u128::MAX << (128 - prefix)
    };
    u128::from(ip) & mask == u128::from(Ipv6Addr::from(net)) & mask
}

fn v4_denied_reason(ip: Ipv4Addr) -> Option<&'static str> {
    // Order matters only where ranges nest (255.255.255.255 inside 240.0.0.0/4).
    let table: &[([u8; 4], u32, &'static str)] = &[
        ([0, 0, 0, 0], 8, UNSPECIFIED),
        ([127, 0, 0, 0], 8, LOOPBACK),
        ([10, 0, 0, 0], 8, PRIVATE),
        ([172, 16, 0, 0], 12, PRIVATE),
        ([192, 168, 0, 0], 16, PRIVATE),
        ([169, 254, 0, 0], 16, LINK_LOCAL),
        ([100, 64, 0, 0], 10, CGNAT),
        ([224, 0, 0, 0], 4, MULTICAST),
        ([255, 255, 255, 255], 32, BROADCAST),
        ([240, 0, 0, 0], 4, RESERVED),
        ([192, 0, 0, 0], 24, RESERVED),
        ([192, 0, 2, 0], 24, DOCUMENTATION),
        ([198, 51, 100, 0], 24, DOCUMENTATION),
        ([203, 0, 113, 0], 24, DOCUMENTATION),
        ([198, 18, 0, 0], 15, BENCHMARKING),
        ([192, 88, 99, 0], 24, EMBEDDING),
    ];
    table
        .iter()
        .find(|(net, prefix, _)| in_v4(ip, *net, *prefix))
        .map(|(_, _, reason)| *reason)
}

fn v6_denied_reason(ip: Ipv6Addr) -> Option<&'static str> {
    if ip.is_unspecified() {
        return Some(UNSPECIFIED);
    }
    if ip.is_loopback() {
        return Some(LOOPBACK);
    }
    // ::ffff:0:0/96: the socket would really talk IPv4, so judge the IPv4 address.
    if let Some(v4) = ip.to_ipv4_mapped() {
        return v4_denied_reason(v4);
    }
    // Order matters where ranges nest (Teredo and the others inside 2001::/23; ::/96 and
    // NAT64 inside ::/8).
    let table: &[([u16; 8], u32, &'static str)] = &[
        ([0, 0, 0, 0, 0, 0, 0, 0], 96, EMBEDDING), // IPv4-compatible ::a.b.c.d
        ([0, 0, 0, 0, 0xffff, 0, 0, 0], 96, EMBEDDING), // IPv4-translated (SIIT)
        ([0x64, 0xff9b, 0, 0, 0, 0, 0, 0], 96, EMBEDDING), // NAT64 well-known prefix
        ([0x64, 0xff9b, 1, 0, 0, 0, 0, 0], 48, EMBEDDING), // NAT64 local-use prefix
        ([0, 0, 0, 0, 0, 0, 0, 0], 8, RESERVED),   // the rest of ::/8
        ([0x2002, 0, 0, 0, 0, 0, 0, 0], 16, EMBEDDING), // 6to4
        ([0x2001, 0, 0, 0, 0, 0, 0, 0], 32, EMBEDDING), // Teredo
        ([0x2001, 0x2, 0, 0, 0, 0, 0, 0], 48, BENCHMARKING),
        ([0x2001, 0x10, 0, 0, 0, 0, 0, 0], 28, RESERVED), // ORCHID
        ([0x2001, 0x20, 0, 0, 0, 0, 0, 0], 28, RESERVED), // ORCHIDv2
        ([0x2001, 0, 0, 0, 0, 0, 0, 0], 23, RESERVED),    // IETF protocol assignments
        ([0x2001, 0xdb8, 0, 0, 0, 0, 0, 0], 32, DOCUMENTATION),
        ([0x3fff, 0, 0, 0, 0, 0, 0, 0], 20, DOCUMENTATION),
        ([0x100, 0, 0, 0, 0, 0, 0, 0], 64, DISCARD),
        ([0xfe80, 0, 0, 0, 0, 0, 0, 0], 10, LINK_LOCAL),
        ([0xfec0, 0, 0, 0, 0, 0, 0, 0], 10, SITE_LOCAL),
        ([0xfc00, 0, 0, 0, 0, 0, 0, 0], 7, ULA),
        ([0xff00, 0, 0, 0, 0, 0, 0, 0], 8, MULTICAST),
    ];
    table
        .iter()
        .find(|(net, prefix, _)| in_v6(ip, *net, *prefix))
        .map(|(_, _, reason)| *reason)
}

/// Longest URL accepted; callback URLs are short.
const MAX_URL_LEN: usize = 2048;

/// Checks a URL syntactically and returns it normalized (lower-case scheme and host, canonical IP
/// literals, no fragment, path defaulting to `/`).
///
/// `https` only (`http` too when `policy.allow_loopback`), no user-info, a host required, any
/// port. A literal-IP host (including numeric IPv4 spellings like `2130706433`) is also checked
/// against [`denied_reason`]; host names are checked when they are resolved, at send time.
///
/// # Errors
///
/// [`OutboundError::InvalidUrl`] for syntax, scheme or credentials;
/// [`OutboundError::Denied`] for a denied literal IP.
pub fn check_url(url: &str, policy: Policy) -> Result<String, OutboundError> {
    let invalid = |msg: &str| OutboundError::InvalidUrl(msg.to_owned());
    if url.len() > MAX_URL_LEN {
        return Err(invalid("the URL is too long"));
    }
    let uri: Uri = url
        .parse()
        .map_err(|_| invalid("not a valid absolute URL"))?;
    let scheme = match uri.scheme_str() {
        Some(s) if s.eq_ignore_ascii_case("https") => "https",
        Some(s) if s.eq_ignore_ascii_case("http") => {
            if !policy.allow_loopback {
                return Err(invalid("the URL must use https"));
            }
            "http"
        }
        Some(_) => return Err(invalid("the URL must use https")),
        None => return Err(invalid("not a valid absolute URL")),
    };
    let authority = uri
        .authority()
        .ok_or_else(|| invalid("the URL has no host"))?;
    if authority.as_str().contains('@') {
        return Err(invalid("credentials in the URL are not allowed"));
    }
    let raw_host = authority.host();
    if raw_host.is_empty() {
        return Err(invalid("the URL has no host"));
    }

    let (host, literal) = normalize_host(raw_host)?;
    if let Some(ip) = literal
        && let Some(reason) = denied_reason(ip, policy)
    {
        return Err(OutboundError::Denied {
            host: raw_host.to_owned(),
            reason,
        });
    }

    let port = match authority.port_u16() {
        Some(p) => format!(":{p}"),
        None if authority.as_str().ends_with(':') => return Err(invalid("empty port")),
        None => String::new(),
    };
    let path = uri.path_and_query().map(|p| p.as_str()).unwrap_or("/");
    let path = if path.is_empty() { "/" } else { path };
    let path = if path.starts_with('?') {
        format!("/{path}")
    } else {
        path.to_owned()
    };
    Ok(format!("{scheme}://{host}{port}{path}"))
}

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
    let Some(host) = uri.host() else {
        return Ok(normalized);
    };
    let host = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    let port = uri
        .port_u16()
        .unwrap_or(if uri.scheme_str() == Some("http") {
            80
        } else {
            443
        });
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

/// Normalizes the host of a URL; returns the host text for the URL and the IP when literal.
fn normalize_host(raw: &str) -> Result<(String, Option<IpAddr>), OutboundError> {
    let invalid = |msg: &str| OutboundError::InvalidUrl(msg.to_owned());
    if let Some(inner) = raw.strip_prefix('[') {
        let inner = inner
            .strip_suffix(']')
            .ok_or_else(|| invalid("malformed IPv6 address"))?;
        let v6: Ipv6Addr = inner
            .parse()
            .map_err(|_| invalid("malformed IPv6 address"))?;
        return Ok((format!("[{v6}]"), Some(IpAddr::V6(v6))));
    }
    let host = raw.to_ascii_lowercase();
    if host.len() > 253 {
        return Err(invalid("the host name is too long"));
    }
    if !host
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_'))
    {
        return Err(invalid("the host name has invalid characters"));
    }
    let trimmed = host.strip_suffix('.').unwrap_or(&host);
    if trimmed.is_empty() || trimmed.split('.').any(str::is_empty) {
        return Err(invalid("the host name has an empty label"));
    }
    // WHATWG URL rule: a host whose last label is a number is an IPv4 address, in any of the
    // inet_aton spellings (`127.1`, `0x7f.0.0.1`, `017700000001`, `2130706433`).
    let last = trimmed.rsplit('.').next().unwrap_or(trimmed);
    let is_number = last.bytes().all(|b| b.is_ascii_digit())
        || last
            .strip_prefix("0x")
            .is_some_and(|hex| hex.bytes().all(|b| b.is_ascii_hexdigit()));
    if is_number {
        let v4 = parse_numeric_ipv4(trimmed).ok_or_else(|| invalid("malformed IPv4 address"))?;
        return Ok((v4.to_string(), Some(IpAddr::V4(v4))));
    }
    Ok((host, None))
}

/// Parses the inet_aton / WHATWG IPv4 forms: 1 to 4 parts, each decimal, octal (leading `0`) or
/// hex (`0x`); the last part fills the remaining bytes.
fn parse_numeric_ipv4(host: &str) -> Option<Ipv4Addr> {
    let parts: Vec<&str> = host.split('.').collect();
    if parts.is_empty() || parts.len() > 4 {
        return None;
    }
    let mut numbers = Vec::with_capacity(parts.len());
    for part in &parts {
        let n = if let Some(hex) = part.strip_prefix("0x") {
            if hex.is_empty() {
                0
            } else {
                u64::from_str_radix(hex, 16).ok()?
            }
        } else if part.len() > 1 && part.starts_with('0') {
            u64::from_str_radix(&part[1..], 8).ok()?
        } else {
            part.parse::<u64>().ok()?
        };
        numbers.push(n);
    }
    let (last, head) = numbers.split_last()?;
    if head.iter().any(|&n| n > 255) {
        return None;
    }
    let remaining_bits = 8 * (5 - numbers.len() as u32);
    if *last >= 1u64 << remaining_bits {
        return None;
    }
    let mut value: u64 = *last;
    for (i, n) in head.iter().enumerate() {
        value |= n << (24 - 8 * i as u32);
    }
    Some(Ipv4Addr::from(u32::try_from(value).ok()?))
}

/// Why resolution failed inside [`VettingResolver`]; travels through [`ureq::Error::Other`].
#[derive(Debug)]
enum ResolveFailure {
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
struct VettingResolver {
    policy: Policy,
}

impl Resolver for VettingResolver {
    fn resolve(
        &self,
        uri: &Uri,
        _config: &Config,
        timeout: NextTimeout,
    ) -> Result<ResolvedSocketAddrs, ureq::Error> {
        let host = uri.host().ok_or(ureq::Error::HostNotFound)?;
        let host = host
            .strip_prefix('[')
            .and_then(|h| h.strip_suffix(']'))
            .unwrap_or(host);
        let port = match uri.port_u16() {
            Some(p) => p,
            None if uri.scheme_str() == Some("http") => 80,
            None => 443,
        };
        let deadline = if timeout.after.is_not_happening() {
            None
        } else {
            Some(*timeout.after)
        };
        let candidates = match lookup(host, port, deadline) {
            Ok(addrs) => addrs,
            Err(LookupError::Timeout) => return Err(ureq::Error::Timeout(timeout.reason)),
            Err(LookupError::Failed(msg)) => {
                return Err(ureq::Error::Other(Box::new(ResolveFailure::Dns(msg))));
            }
        };

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

enum LookupError {
    Timeout,
    Failed(String),
}

/// Resolves `host:port`, giving up after `deadline`. `ToSocketAddrs` has no deadline of its own,
/// so the lookup runs on a helper thread; on timeout the thread is abandoned and ends when the
/// system resolver gives up.
fn lookup(
    host: &str,
    port: u16,
    deadline: Option<Duration>,
) -> Result<Vec<SocketAddr>, LookupError> {
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Ok(vec![SocketAddr::new(ip, port)]);
    }
    let failed = |e: io::Error| {
        tracing::debug!(host, error = %e, "outbound name lookup failed");
        LookupError::Failed(format!("{host} did not resolve"))
    };
    let Some(deadline) = deadline else {
        return (host, port)
            .to_socket_addrs()
            .map(Iterator::collect)
            .map_err(failed);
    };
    let (tx, rx) = mpsc::sync_channel(1);
    let owned = host.to_owned();
    thread::Builder::new()
        .name("outbound-dns".to_owned())
        .spawn(move || {
            let result = (owned.as_str(), port)
                .to_socket_addrs()
                .map(Iterator::collect::<Vec<_>>);
            let _ = tx.send(result);
        })
        .map_err(failed)?;
    match rx.recv_timeout(deadline) {
        Ok(result) => result.map_err(failed),
        Err(mpsc::RecvTimeoutError::Timeout) => Err(LookupError::Timeout),
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            Err(LookupError::Failed(format!("{host} did not resolve")))
        }
    }
}

/// Maps ureq's errors to the public ones, with short messages and no internals.
fn map_ureq_error(err: ureq::Error) -> OutboundError {
    match err {
        ureq::Error::Other(inner) => match inner.downcast::<ResolveFailure>() {
            Ok(failure) => match *failure {
                ResolveFailure::Denied { host, reason } => OutboundError::Denied { host, reason },
                ResolveFailure::Dns(msg) => OutboundError::Dns(msg),
            },
            Err(other) => OutboundError::Io(other.to_string()),
        },
        ureq::Error::HostNotFound => OutboundError::Dns("the host name did not resolve".to_owned()),
        ureq::Error::Timeout(_) => OutboundError::Timeout,
        ureq::Error::Io(e) => map_io_error(&e),
        ureq::Error::ConnectionFailed => OutboundError::Connect("connection failed".to_owned()),
        ureq::Error::Tls(msg) => OutboundError::Connect(format!("TLS failure: {msg}")),
        ureq::Error::Rustls(e) => OutboundError::Connect(format!("TLS failure: {e}")),
        ureq::Error::TlsRequired => OutboundError::Connect("TLS required".to_owned()),
        ureq::Error::BadUri(msg) => OutboundError::InvalidUrl(msg),
        ureq::Error::RequireHttpsOnly(_) => {
            OutboundError::InvalidUrl("the URL must use https".to_owned())
        }
        ureq::Error::Http(_) => {
            OutboundError::InvalidUrl("the request could not be built".to_owned())
        }
        ureq::Error::BodyExceedsLimit(n) => OutboundError::TooLarge {
            limit: usize::try_from(n.saturating_sub(1)).unwrap_or(usize::MAX),
        },
        ureq::Error::Protocol(e) => OutboundError::Io(format!("invalid HTTP response: {e}")),
        ureq::Error::LargeResponseHeader(..) => {
            OutboundError::Io("the response headers are too large".to_owned())
        }
        other => OutboundError::Io(other.to_string()),
    }
}

fn map_io_error(e: &io::Error) -> OutboundError {
    use io::ErrorKind as K;
    match e.kind() {
        K::TimedOut | K::WouldBlock => OutboundError::Timeout,
        K::ConnectionRefused => OutboundError::Connect("connection refused".to_owned()),
        K::ConnectionReset | K::ConnectionAborted | K::BrokenPipe => {
            OutboundError::Connect("connection reset".to_owned())
        }
        K::HostUnreachable | K::NetworkUnreachable | K::AddrNotAvailable | K::NotConnected => {
            OutboundError::Connect("host unreachable".to_owned())
        }
        K::UnexpectedEof => OutboundError::Io("the connection closed early".to_owned()),
        _ => OutboundError::Io(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::net::TcpListener;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::Instant;

    use super::*;

    const STRICT: Policy = Policy {
        allow_loopback: false,
    };
    const DEV: Policy = Policy {
        allow_loopback: true,
    };

    #[track_caller]
    fn check_ip(addr: &str, strict: Option<&str>, dev: Option<&str>) {
        let ip: IpAddr = addr.parse().unwrap();
        assert_eq!(denied_reason(ip, STRICT), strict, "{addr} (strict)");
        assert_eq!(denied_reason(ip, DEV), dev, "{addr} (allow_loopback)");
    }

    #[test]
    fn denylist_table() {
        let denied: &[(&str, &str)] = &[
            ("0.0.0.0", UNSPECIFIED),
            ("0.1.2.3", UNSPECIFIED),
            ("10.0.0.1", PRIVATE),
            ("10.255.255.255", PRIVATE),
            ("172.16.0.1", PRIVATE),
            ("172.31.255.254", PRIVATE),
            ("192.168.1.1", PRIVATE),
            ("169.254.0.1", LINK_LOCAL),
            ("169.254.169.254", LINK_LOCAL),
            ("100.64.0.1", CGNAT),
            ("100.127.255.254", CGNAT),
            ("224.0.0.1", MULTICAST),
            ("239.255.255.250", MULTICAST),
            ("240.0.0.1", RESERVED),
            ("255.255.255.254", RESERVED),
            ("255.255.255.255", BROADCAST),
            ("192.0.0.1", RESERVED),
            ("192.0.0.170", RESERVED),
            ("192.0.2.1", DOCUMENTATION),
            ("198.51.100.7", DOCUMENTATION),
            ("203.0.113.9", DOCUMENTATION),
            ("198.18.0.1", BENCHMARKING),
            ("198.19.255.255", BENCHMARKING),
            ("192.88.99.1", EMBEDDING),
            ("::", UNSPECIFIED),
            ("fe80::1", LINK_LOCAL),
            ("febf::1", LINK_LOCAL),
            ("fec0::1", SITE_LOCAL),
            ("fc00::1", ULA),
            ("fd00:ec2::254", ULA),
            ("ff02::1", MULTICAST),
            ("ff0e::1", MULTICAST),
            ("2001:db8::1", DOCUMENTATION),
            ("3fff::1", DOCUMENTATION),
            ("2001:2::1", BENCHMARKING),
            ("2001:10::1", RESERVED),
            ("2001:20::1", RESERVED),
            ("2001:1ff::1", RESERVED),
            ("2001:4::112", RESERVED),
            ("2001:0:4136:e378:8000:63bf:3fff:fdd2", EMBEDDING),
            ("2001::1", EMBEDDING),
            ("100::1", DISCARD),
            ("::ffff:169.254.169.254", LINK_LOCAL),
            ("::ffff:10.0.0.1", PRIVATE),
            ("::ffff:0.0.0.0", UNSPECIFIED),
            ("::127.0.0.1", EMBEDDING),
            ("::8.8.8.8", EMBEDDING),
            ("::ffff:0:7f00:1", EMBEDDING),
            ("64:ff9b::7f00:1", EMBEDDING),
            ("64:ff9b::808:808", EMBEDDING),
            ("64:ff9b:1::1", EMBEDDING),
            ("2002:7f00:1::", EMBEDDING),
            ("2002:808:808::1", EMBEDDING),
            ("1::1", RESERVED),
        ];
        for (addr, reason) in denied {
            // Not loopback, so the flag changes nothing.
            check_ip(addr, Some(reason), Some(reason));
        }

        let loopback = ["127.0.0.1", "127.255.255.254", "::1", "::ffff:127.0.0.1"];
        for addr in loopback {
            check_ip(addr, Some(LOOPBACK), None);
        }

        let public = [
            "8.8.8.8",
            "1.1.1.1",
            "93.184.216.34",
            "100.63.255.255",
            "100.128.0.1",
            "172.15.255.255",
            "172.32.0.1",
            "192.0.1.1",
            "198.17.255.255",
            "198.20.0.1",
            "223.255.255.255",
            "2606:4700:4700::1111",
            "2a00:1450:4001:80b::200e",
            "2001:200::1",
            "::ffff:8.8.8.8",
        ];
        for addr in public {
            check_ip(addr, None, None);
        }
    }

    #[track_caller]
    fn check_url_ok(url: &str, policy: Policy, expected: &str) {
        match check_url(url, policy) {
            Ok(normalized) => assert_eq!(normalized, expected, "{url}"),
            Err(e) => panic!("{url}: unexpected error {e}"),
        }
    }

    #[track_caller]
    fn check_url_invalid(url: &str, policy: Policy) {
        let result = check_url(url, policy);
        assert!(
            matches!(result, Err(OutboundError::InvalidUrl(_))),
            "{url}: {result:?}"
        );
    }

    #[track_caller]
    fn check_url_denied(url: &str, policy: Policy, expected_reason: &str) {
        match check_url(url, policy) {
            Err(OutboundError::Denied { reason, .. }) => {
                assert_eq!(reason, expected_reason, "{url}")
            }
            other => panic!("{url}: expected Denied, got {other:?}"),
        }
    }

    #[test]
    fn check_url_cases() {
        check_url_ok(
            "https://example.com/hook",
            STRICT,
            "https://example.com/hook",
        );
        check_url_ok(
            "HTTPS://Example.COM:8443/a?b=1#frag",
            STRICT,
            "https://example.com:8443/a?b=1",
        );
        check_url_ok("https://example.com", STRICT, "https://example.com/");
        check_url_ok(
            "https://example.com?x=1",
            STRICT,
            "https://example.com/?x=1",
        );
        check_url_ok("https://8.8.8.8/x", STRICT, "https://8.8.8.8/x");
        check_url_ok(
            "https://[2606:4700:4700:0::1111]/",
            STRICT,
            "https://[2606:4700:4700::1111]/",
        );
        check_url_ok(
            "https://[::ffff:8.8.8.8]/",
            STRICT,
            "https://[::ffff:8.8.8.8]/",
        );
        check_url_ok(
            "https://hooks.example.com./x",
            STRICT,
            "https://hooks.example.com./x",
        );

        check_url_invalid("http://example.com/hook", STRICT);
        check_url_invalid("https://user:pw@example.com/", STRICT);
        check_url_invalid("https://user@example.com/", STRICT);
        check_url_invalid("ftp://x", STRICT);
        check_url_invalid("ftp://x", DEV);
        check_url_invalid("not a url", STRICT);
        check_url_invalid("", STRICT);
        check_url_invalid("/relative/path", STRICT);
        check_url_invalid("https://", STRICT);
        check_url_invalid("https:///path", STRICT);
        check_url_invalid("https://exa mple.com/", STRICT);
        check_url_invalid("https://exa%6dple.com/", STRICT);
        check_url_invalid("https://a..b/", STRICT);
        check_url_invalid("https://[fe80::1%25eth0]/", STRICT);
        check_url_invalid("https://1.2.3.4.5/", STRICT);
        check_url_invalid("https://256.1.1.1/", STRICT);
        check_url_invalid(&format!("https://example.com/{}", "a".repeat(3000)), STRICT);

        check_url_denied("https://127.0.0.1/", STRICT, LOOPBACK);
        check_url_denied("https://[::ffff:127.0.0.1]/", STRICT, LOOPBACK);
        check_url_denied("https://[::1]:8443/x", STRICT, LOOPBACK);
        check_url_denied("https://[::127.0.0.1]/", DEV, EMBEDDING);
        check_url_denied("https://169.254.169.254/latest/meta-data/", DEV, LINK_LOCAL);
        check_url_denied("https://[fd00:ec2::254]/", STRICT, ULA);
        check_url_denied("https://10.0.0.1/", DEV, PRIVATE);
        // Numeric spellings that system resolvers turn into IPv4 addresses.
        check_url_denied("https://2130706433/", STRICT, LOOPBACK);
        check_url_denied("https://127.1/", STRICT, LOOPBACK);
        check_url_denied("https://0x7f.0.0.1/", STRICT, LOOPBACK);
        check_url_denied("https://017700000001/", STRICT, LOOPBACK);
        check_url_denied("https://0/", STRICT, UNSPECIFIED);
        check_url_denied("https://0xa9fea9fe/", STRICT, LINK_LOCAL);

        // The loopback flag: http and loopback accepted, nothing else.
        check_url_ok("http://127.0.0.1:8080/cb", DEV, "http://127.0.0.1:8080/cb");
        check_url_ok("https://[::1]:8443/x", DEV, "https://[::1]:8443/x");
        check_url_ok("http://localhost/x", DEV, "http://localhost/x");
        check_url_ok("https://127.1/", DEV, "https://127.0.0.1/");
    }

    #[test]
    fn numeric_ipv4_forms() {
        let cases = [
            ("1.2.3.4", Some([1, 2, 3, 4])),
            ("1.2.772", Some([1, 2, 3, 4])),
            ("1.131844", Some([1, 2, 3, 4])),
            ("16909060", Some([1, 2, 3, 4])),
            ("0x1.0x2.0x3.0x4", Some([1, 2, 3, 4])),
            ("01.02.03.04", Some([1, 2, 3, 4])),
            ("0x", Some([0, 0, 0, 0])),
            ("4294967295", Some([255, 255, 255, 255])),
            ("4294967296", None),
            ("1.2.65536", None),
            ("08.1.1.1", None),
            ("1.2.3.4.5", None),
        ];
        for (input, expected) in cases {
            assert_eq!(
                parse_numeric_ipv4(input),
                expected.map(Ipv4Addr::from),
                "{input}"
            );
        }
    }

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

    /// A one-shot HTTP server on 127.0.0.1: answers the first connection with `response` and
    /// hands back the raw request. Never binds anything but loopback.
    struct OneShot {
        port: u16,
        handle: thread::JoinHandle<Option<Vec<u8>>>,
    }

    impl OneShot {
        fn start(response: Vec<u8>) -> OneShot {
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            let port = listener.local_addr().unwrap().port();
            listener.set_nonblocking(true).unwrap();
            let handle = thread::spawn(move || {
                let give_up = Instant::now() + Duration::from_secs(10);
                let (mut stream, _) = loop {
                    match listener.accept() {
                        Ok(conn) => break conn,
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                            if Instant::now() > give_up {
                                return None;
                            }
                            thread::sleep(Duration::from_millis(5));
                        }
                        Err(e) => panic!("accept: {e}"),
                    }
                };
                stream.set_nonblocking(false).unwrap();
                stream
                    .set_read_timeout(Some(Duration::from_secs(5)))
                    .unwrap();
                let request = read_request(&mut stream);
                let _ = stream.write_all(&response);
                let _ = stream.flush();
                Some(request)
            });
            OneShot { port, handle }
        }

        fn join(self) -> Option<Vec<u8>> {
            self.handle.join().unwrap()
        }
    }

    /// Reads the request head and a `content-length` body.
    fn read_request(stream: &mut std::net::TcpStream) -> Vec<u8> {
        let mut data = Vec::new();
        let mut chunk = [0u8; 4096];
        loop {
            if let Some(end) = data.windows(4).position(|w| w == b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&data[..end]).to_ascii_lowercase();
                let length = head
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length:"))
                    .map(|v| v.trim().parse::<usize>().unwrap())
                    .unwrap_or(0);
                if data.len() >= end + 4 + length {
                    return data;
                }
            }
            match stream.read(&mut chunk) {
                Ok(0) | Err(_) => return data,
                Ok(n) => data.extend_from_slice(&chunk[..n]),
            }
        }
    }

    fn http_response(status: &str, extra: &str, body: &str) -> Vec<u8> {
        format!(
            "HTTP/1.1 {status}\r\ncontent-length: {}\r\nconnection: close\r\n{extra}\r\n{body}",
            body.len()
        )
        .into_bytes()
    }

    fn quick() -> Timeouts {
        Timeouts {
            resolve: Duration::from_secs(2),
            connect: Duration::from_secs(2),
            total: Duration::from_secs(5),
        }
    }

    #[test]
    fn post_to_loopback_in_dev_mode() {
        let server = OneShot::start(http_response(
            "202 Accepted",
            "content-type: application/json\r\n",
            r#"{"ok":true}"#,
        ));
        let client = Client::new(DEV, quick());
        assert!(client.policy().allow_loopback);
        let url = format!("http://127.0.0.1:{}/hook?x=1", server.port);
        let response = client
            .post_json(
                &url,
                br#"{"event":"ping"}"#,
                &[("webhook-id", "msg_1")],
                1024,
            )
            .unwrap();
        assert_eq!(response.status, 202);
        assert_eq!(response.content_type.as_deref(), Some("application/json"));
        assert_eq!(response.body, br#"{"ok":true}"#);

        let request = String::from_utf8(server.join().unwrap()).unwrap();
        let lower = request.to_ascii_lowercase();
        assert!(
            request.starts_with("POST /hook?x=1 HTTP/1.1\r\n"),
            "{request}"
        );
        assert!(
            lower.contains("content-type: application/json\r\n"),
            "{request}"
        );
        assert!(lower.contains("webhook-id: msg_1\r\n"), "{request}");
        assert!(lower.contains("user-agent: bourse/1.0\r\n"), "{request}");
        assert!(request.ends_with(r#"{"event":"ping"}"#), "{request}");
    }

    #[test]
    fn error_statuses_are_responses() {
        let server = OneShot::start(http_response("500 Internal Server Error", "", "boom"));
        let client = Client::new(DEV, quick());
        let url = format!("http://127.0.0.1:{}/", server.port);
        let response = client.post_json(&url, b"{}", &[], 1024).unwrap();
        assert_eq!(response.status, 500);
        assert_eq!(response.content_type, None);
        assert_eq!(response.body, b"boom");
        server.join().unwrap();
    }

    #[test]
    fn redirects_are_failures() {
        for status in [
            "302 Found",
            "307 Temporary Redirect",
            "308 Permanent Redirect",
        ] {
            let server = OneShot::start(http_response(
                status,
                "location: http://127.0.0.1:1/\r\n",
                "",
            ));
            let client = Client::new(DEV, quick());
            let url = format!("http://127.0.0.1:{}/", server.port);
            let code: u16 = status[..3].parse().unwrap();
            match client.post_json(&url, b"{}", &[], 1024) {
                Err(OutboundError::Redirect(c)) => assert_eq!(c, code),
                other => panic!("{status}: expected Redirect, got {other:?}"),
            }
            server.join().unwrap();
        }
    }

    #[test]
    fn body_cap() {
        let body = "x".repeat(100);
        let server = OneShot::start(http_response("200 OK", "", &body));
        let client = Client::new(DEV, quick());
        let url = format!("http://127.0.0.1:{}/", server.port);
        match client.post_json(&url, b"{}", &[], 99) {
            Err(OutboundError::TooLarge { limit }) => assert_eq!(limit, 99),
            other => panic!("expected TooLarge, got {other:?}"),
        }
        server.join().unwrap();

        // Exactly at the cap is fine.
        let server = OneShot::start(http_response("200 OK", "", &body));
        let url = format!("http://127.0.0.1:{}/", server.port);
        let response = client.post_json(&url, b"{}", &[], 100).unwrap();
        assert_eq!(response.body.len(), 100);
        server.join().unwrap();
    }

    #[test]
    fn strict_policy_never_dials_loopback() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let client = Client::new(STRICT, quick());
        assert!(!client.policy().allow_loopback);

        let result = client.post_json(&format!("http://127.0.0.1:{port}/"), b"{}", &[], 1024);
        assert!(
            matches!(result, Err(OutboundError::InvalidUrl(_))),
            "{result:?}"
        );

        let result = client.post_json(&format!("https://127.0.0.1:{port}/"), b"{}", &[], 1024);
        assert!(
            matches!(
                result,
                Err(OutboundError::Denied {
                    reason: LOOPBACK,
                    ..
                })
            ),
            "{result:?}"
        );

        let result = client.post_json(
            &format!("https://[::ffff:127.0.0.1]:{port}/"),
            b"{}",
            &[],
            1024,
        );
        assert!(
            matches!(result, Err(OutboundError::Denied { .. })),
            "{result:?}"
        );

        // A name goes through the vetting resolver, which refuses every loopback address.
        let result = client.post_json(&format!("https://localhost:{port}/"), b"{}", &[], 1024);
        match result {
            Err(OutboundError::Denied { host, reason }) => {
                assert_eq!(host, "localhost");
                assert_eq!(reason, LOOPBACK);
            }
            other => panic!("expected Denied, got {other:?}"),
        }

        // Nothing reached the listener: a completed TCP handshake would be waiting in the backlog.
        match listener.accept() {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            other => panic!("the listener was contacted: {other:?}"),
        }
    }

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

    #[test]
    fn refused_connection_is_transient() {
        let port = {
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            listener.local_addr().unwrap().port()
        };
        let client = Client::new(DEV, quick());
        let result = client.post_json(&format!("http://127.0.0.1:{port}/"), b"{}", &[], 1024);
        match result {
            Err(e @ OutboundError::Connect(_)) => assert!(e.is_transient()),
            other => panic!("expected Connect, got {other:?}"),
        }
    }

    #[test]
    fn silent_server_times_out() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let stop = Arc::new(AtomicBool::new(false));
        let stop_server = Arc::clone(&stop);
        let server = thread::spawn(move || {
            // Accept and hold the connection without answering.
            let (stream, _) = listener.accept().unwrap();
            while !stop_server.load(Ordering::SeqCst) {
                thread::sleep(Duration::from_millis(10));
            }
            drop(stream);
        });
        let timeouts = Timeouts {
            resolve: Duration::from_secs(1),
            connect: Duration::from_secs(1),
            total: Duration::from_millis(500),
        };
        let client = Client::new(DEV, timeouts);
        let started = Instant::now();
        let result = client.post_json(&format!("http://127.0.0.1:{port}/"), b"{}", &[], 1024);
        assert!(matches!(result, Err(OutboundError::Timeout)), "{result:?}");
        assert!(started.elapsed() < Duration::from_secs(3));
        stop.store(true, Ordering::SeqCst);
        server.join().unwrap();
    }

    /// A gzip member whose deflate stream (fixed Huffman) is one `x` followed by `copies`
    /// back-references of 258 bytes: tiny on the wire, `1 + 258 * copies` bytes decoded.
    fn gzip_bomb(copies: usize) -> (Vec<u8>, usize) {
        struct Bits {
            out: Vec<u8>,
            acc: u32,
            n: u32,
        }
        impl Bits {
            // Deflate packs bits LSB first; Huffman codes go in MSB first.
            fn put(&mut self, value: u32, count: u32) {
                for i in 0..count {
                    self.acc |= ((value >> i) & 1) << self.n;
                    self.n += 1;
                    if self.n == 8 {
                        self.out.push(self.acc as u8);
                        self.acc = 0;
                        self.n = 0;
                    }
                }
            }
            fn code(&mut self, code: u32, count: u32) {
                for i in (0..count).rev() {
                    self.put((code >> i) & 1, 1);
                }
            }
        }
        let mut bits = Bits {
            out: Vec::new(),
            acc: 0,
            n: 0,
        };
        bits.put(1, 1); // BFINAL
        bits.put(1, 2); // BTYPE = fixed Huffman
        bits.code(0x30 + u32::from(b'x'), 8); // literal 'x'
        for _ in 0..copies {
            bits.code(0xc0 + (285 - 280), 8); // length 258
            bits.code(0, 5); // distance 1
        }
        bits.code(0, 7); // end of block
        if bits.n > 0 {
            bits.out.push(bits.acc as u8);
        }
        let decoded_len = 1 + 258 * copies;
        let crc = {
            let mut crc = 0xffff_ffffu32;
            for _ in 0..decoded_len {
                crc ^= u32::from(b'x');
                for _ in 0..8 {
                    crc = if crc & 1 == 1 {
                        (crc >> 1) ^ 0xedb8_8320
                    } else {
                        crc >> 1
                    };
                }
            }
            !crc
        };
        let mut gz = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff];
        gz.extend_from_slice(&bits.out);
        gz.extend_from_slice(&crc.to_le_bytes());
        gz.extend_from_slice(&(decoded_len as u32).to_le_bytes());
        (gz, decoded_len)
    }

    #[test]
    fn body_cap_counts_decoded_bytes() {
        let (gz, decoded_len) = gzip_bomb(40);
        assert!(gz.len() < 200 && decoded_len > 10_000);
        let respond = |gz: &[u8]| {
            let mut response = format!(
                "HTTP/1.1 200 OK\r\ncontent-encoding: gzip\r\ncontent-length: {}\r\n\
                 connection: close\r\n\r\n",
                gz.len()
            )
            .into_bytes();
            response.extend_from_slice(gz);
            response
        };
        let client = Client::new(DEV, quick());

        // Sanity: with room to spare the stream decodes to the expected bytes.
        let server = OneShot::start(respond(&gz));
        let url = format!("http://127.0.0.1:{}/", server.port);
        let response = client.post_json(&url, b"{}", &[], 20_000).unwrap();
        assert_eq!(response.body, vec![b'x'; decoded_len]);
        server.join().unwrap();

        // Few bytes on the wire, many decoded: still refused.
        let server = OneShot::start(respond(&gz));
        let url = format!("http://127.0.0.1:{}/", server.port);
        match client.post_json(&url, b"{}", &[], 1_000) {
            Err(OutboundError::TooLarge { limit }) => assert_eq!(limit, 1_000),
            other => panic!("expected TooLarge, got {other:?}"),
        }
        server.join().unwrap();
    }

    #[test]
    fn bad_header_is_permanent() {
        let client = Client::new(DEV, quick());
        let result = client.post_json("http://127.0.0.1:9/", b"{}", &[("bad header", "x")], 1024);
        assert!(
            matches!(result, Err(OutboundError::InvalidUrl(_))),
            "{result:?}"
        );
    }
}
