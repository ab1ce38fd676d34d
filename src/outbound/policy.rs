//! Which destinations are allowed: the [`Policy`], the address denylist ([`denied_reason`]) and
//! the URL rules ([`check_url`]). Pure: no I/O. Host names are vetted address by address when
//! they are resolved, in `resolver`, with the same [`denied_reason`].

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use ureq::http::Uri;

use super::OutboundError;

/// Policy: what destinations are allowed.
#[derive(Clone, Copy, Debug)]
pub struct Policy {
    /// Development and test mode: allow loopback destinations (`127.0.0.0/8`, `::1`,
    /// `::ffff:127.x.y.z`) and plain `http://` URLs. Every other denied range stays denied.
    pub allow_loopback: bool,
}

/// The production policy, for tests.
#[cfg(test)]
pub(super) const STRICT: Policy = Policy {
    allow_loopback: false,
};

/// The development policy (`--allow-loopback-outbound`), for tests.
#[cfg(test)]
pub(super) const DEV: Policy = Policy {
    allow_loopback: true,
};

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

pub(super) const LOOPBACK: &str = "loopback";
const UNSPECIFIED: &str = "unspecified";
const PRIVATE: &str = "private network (RFC 1918)";
pub(super) const LINK_LOCAL: &str = "link-local / cloud metadata";
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
/// `https` only (`http` too when `policy.allow_loopback`), no user-info, a host required, a
/// port from 1 to 65535 if any. A literal-IP host (including numeric IPv4 spellings like `2130706433`) is also checked
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

    // A port is 1 to 65535 written without leading zeros (as the contract's patterns state);
    // anything else is refused rather than dropped or rewritten.
    // (`Authority::port` forgets a port that does not fit in 16 bits: read the text.)
    let after_host = authority
        .as_str()
        .strip_prefix(raw_host)
        .ok_or_else(|| invalid("not a valid absolute URL"))?;
    let port = match after_host.strip_prefix(':') {
        None => String::new(),
        Some("") => return Err(invalid("empty port")),
        Some(port) if crate::request::is_port(port) => format!(":{port}"),
        Some(_) => return Err(invalid("the port must be a number from 1 to 65535")),
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
    if parts.len() > 4 {
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

#[cfg(test)]
mod tests {
    use super::*;

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
            "https://example.com:65535/",
            STRICT,
            "https://example.com:65535/",
        );
        check_url_ok(
            "https://[2606:4700:4700::1111]:8443/x",
            STRICT,
            "https://[2606:4700:4700::1111]:8443/x",
        );
        // Never dropped or rewritten: a port out of range or with a leading zero is refused.
        for port in ["0", "65536", "99999", "0443", "+443"] {
            check_url_invalid(&format!("https://example.com:{port}/hook"), STRICT);
        }
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
}
