//! HTTP-level checks of an MCP request: the `Origin` rule against DNS rebinding, and the
//! stateless revision's `_meta` envelope with the headers that must mirror the body.

use base64::Engine;
use hyper::header;
use serde_json::Value;

use super::{
    Answer, HEADER_MISMATCH, INVALID_PARAMS, META_CLIENT_CAPABILITIES, META_PROTOCOL_VERSION,
    METHOD_HEADER, NAME_HEADER, PROTOCOL_VERSION_HEADER, RpcError, STATELESS_VERSION, refusal,
    unsupported_stateless_version, version_header,
};
use crate::http::request::Ctx;
use crate::service::App;
use std::net::IpAddr;

/// The per-request `_meta` envelope and the headers that mirror the body.
pub(super) fn check_envelope(
    ctx: &Ctx,
    method: &str,
    params: Option<&Value>,
) -> Result<(), RpcError> {
    let meta = params
        .and_then(|params| params.get("_meta"))
        .and_then(Value::as_object)
        .ok_or_else(|| {
            RpcError::new(
                INVALID_PARAMS,
                format!(
                    "params._meta must be an object carrying `{META_PROTOCOL_VERSION}` and `{META_CLIENT_CAPABILITIES}`"
                ),
            )
        })?;
    let missing: Vec<&str> = [META_PROTOCOL_VERSION, META_CLIENT_CAPABILITIES]
        .into_iter()
        .filter(|key| !meta.contains_key(*key))
        .collect();
    if !missing.is_empty() {
        return Err(RpcError::new(
            INVALID_PARAMS,
            format!(
                "params._meta is missing the required key(s): {}",
                missing.join(", ")
            ),
        ));
    }
    for name in [PROTOCOL_VERSION_HEADER, METHOD_HEADER, NAME_HEADER] {
        if ctx.headers.get_all(name).iter().count() > 1 {
            return Err(RpcError::new(
                HEADER_MISMATCH,
                format!("Header mismatch: {name} appears more than once"),
            ));
        }
    }
    let body_version = &meta[META_PROTOCOL_VERSION];
    let header_matches = match (version_header(ctx), body_version.as_str()) {
        (Some(header), Some(body)) => header == body,
        _ => false,
    };
    if !header_matches {
        return Err(RpcError::new(
            HEADER_MISMATCH,
            "Header mismatch: MCP-Protocol-Version does not match params._meta protocol version",
        ));
    }
    if header_text(ctx, METHOD_HEADER).as_deref() != Some(method) {
        return Err(RpcError::new(
            HEADER_MISMATCH,
            "Header mismatch: Mcp-Method does not match the body's method",
        ));
    }
    if method == "tools/call"
        && let Some(name) = params.and_then(|params| params.get("name"))
        && !name.is_null()
    {
        let header = header_text(ctx, NAME_HEADER).and_then(|value| decode_header_value(&value));
        if header.as_deref() != name.as_str() {
            return Err(RpcError::new(
                HEADER_MISMATCH,
                "Header mismatch: Mcp-Name does not match params.name",
            ));
        }
    }
    match body_version.as_str() {
        Some(STATELESS_VERSION) => Ok(()),
        Some(other) => Err(unsupported_stateless_version(other)),
        None => Err(RpcError::new(
            INVALID_PARAMS,
            "the protocol version in params._meta must be a string",
        )),
    }
}

fn header_text(ctx: &Ctx, name: &str) -> Option<String> {
    ctx.headers
        .get(name)
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned)
}

/// Decodes the `=?base64?…?=` form of a mirrored header value; `None` for a malformed one.
fn decode_header_value(value: &str) -> Option<String> {
    let Some(payload) = value
        .strip_prefix("=?base64?")
        .and_then(|rest| rest.strip_suffix("?="))
    else {
        return Some(value.to_owned());
    };
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(payload)
        .ok()?;
    String::from_utf8(bytes).ok()
}

/// Absent Origin passes; a present one must be trusted, and then so must `Host`.
pub(super) fn check_origin(app: &App, ctx: &Ctx) -> Result<(), Answer> {
    let Some(origin) = ctx.headers.get(header::ORIGIN) else {
        return Ok(());
    };
    let public = authority_host(url_authority(&app.public_url));
    let trusted = |host: &str| {
        is_loopback_host(host)
            || public
                .as_deref()
                .is_some_and(|public| public.eq_ignore_ascii_case(host))
    };
    let origin_ok = origin
        .to_str()
        .ok()
        .and_then(|origin| authority_host(url_authority(origin.trim())))
        .is_some_and(|host| trusted(&host));
    let host_ok = match ctx.headers.get(header::HOST) {
        None => true,
        Some(host) => host
            .to_str()
            .ok()
            .and_then(|host| authority_host(host.trim()))
            .is_some_and(|host| trusted(&host)),
    };
    if origin_ok && host_ok {
        Ok(())
    } else {
        Err(refusal(
            403,
            "FORBIDDEN_ORIGIN",
            "Forbidden: the Origin (or Host) of this request is not this server; browsers may call /api/mcp only from a loopback or the server's own origin",
        ))
    }
}

/// The authority of `scheme://authority/path`, or "" without a scheme.
fn url_authority(url: &str) -> &str {
    url.split_once("://")
        .map(|(_, rest)| rest.split(['/', '?', '#']).next().unwrap_or_default())
        .unwrap_or_default()
}

/// The lower-cased host of an authority (`user@host:port`, `[v6]:port`), without brackets.
fn authority_host(authority: &str) -> Option<String> {
    let authority = authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host);
    let host = if let Some(rest) = authority.strip_prefix('[') {
        rest.split_once(']')?.0
    } else {
        authority.split(':').next().unwrap_or_default()
    };
    (!host.is_empty()).then(|| host.to_ascii_lowercase())
}

fn is_loopback_host(host: &str) -> bool {
    host == "localhost"
        || host
            .parse::<IpAddr>()
            .is_ok_and(|ip| ip.to_canonical().is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_are_read_from_origins_and_authorities() {
        assert_eq!(
            authority_host(url_authority("http://LocalHost:3000")).as_deref(),
            Some("localhost")
        );
        assert_eq!(
            authority_host(url_authority("https://[::1]:8443/x")).as_deref(),
            Some("::1")
        );
        assert_eq!(
            authority_host("u:p@bourse.example:80").as_deref(),
            Some("bourse.example")
        );
        assert_eq!(authority_host(url_authority("null")), None);
        assert!(is_loopback_host("127.0.0.9") && is_loopback_host("::ffff:127.0.0.1"));
        assert!(!is_loopback_host("evil.example.com") && !is_loopback_host("10.0.0.1"));
    }

    #[test]
    fn mirrored_header_values_decode_the_base64_form() {
        assert_eq!(
            decode_header_value("agent_whoami").as_deref(),
            Some("agent_whoami")
        );
        assert_eq!(
            decode_header_value("=?base64?YWdlbnRfaW5ib3g=?=").as_deref(),
            Some("agent_inbox")
        );
        assert_eq!(decode_header_value("=?base64?***?="), None);
    }
}
