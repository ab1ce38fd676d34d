//! Path matching over the REST bindings of the operations table (`crate::operations`): a
//! request's method and path name one [`Operation`] and its path parameters.

use crate::error::Error;
use crate::operations::Operation;

/// A matched route and its path parameters, in template order.
#[derive(Debug)]
pub struct Matched {
    pub operation: Operation,
    pub params: Vec<String>,
    /// The binding's index in `Operation::routes` (what `telemetry` counts requests by).
    pub route: usize,
}

/// Matches `method` and `path`; HEAD is served as GET.
///
/// # Errors
/// `NOT_FOUND` for an unknown path; `METHOD_NOT_ALLOWED` (with the allowed methods) for a
/// known path with another method.
pub fn resolve(method: &str, path: &str) -> Result<Matched, Error> {
    let method = if method == "HEAD" { "GET" } else { method };
    let segments: Vec<&str> = path.split('/').skip(1).collect();
    let mut best: Option<(usize, &str)> = None;
    let mut candidates = Vec::new();
    for (route, (route_method, template, parts, operation)) in PARSED.iter().enumerate() {
        let Some((score, params)) = match_parts(parts, &segments) else {
            continue;
        };
        candidates.push((score, *route_method, *template, *operation, params, route));
        if best.is_none_or(|(top, _)| score > top) {
            best = Some((score, template));
        }
    }
    let Some((_, best_template)) = best else {
        return Err(Error::NotFound(format!(
            "no route for {path}; see /openapi.json"
        )));
    };
    let mut allow = Vec::new();
    for (_, route_method, template, operation, params, route) in candidates {
        if template != best_template {
            continue;
        }
        if route_method == method {
            return Ok(Matched {
                operation,
                params,
                route,
            });
        }
        allow.push(route_method);
    }
    // In one order whatever the table's: the methods as RFC 9110 lists them, HEAD after them.
    let rank = |method: &&str| {
        ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]
            .iter()
            .position(|m| m == method)
    };
    allow.sort_by_key(rank);
    if allow.contains(&"GET") {
        allow.push("HEAD");
    }
    Err(Error::MethodNotAllowed { allow })
}

/// Whether every operation at `path` is open to any origin (a CORS preflight for it is
/// answered).
pub fn open_to_any_origin(path: &str) -> bool {
    let segments: Vec<&str> = path.split('/').skip(1).collect();
    let mut routes = PARSED
        .iter()
        .filter(|(_, _, parts, _)| match_parts(parts, &segments).is_some())
        .peekable();
    routes.peek().is_some() && routes.all(|(_, _, _, operation)| operation.open_to_any_origin())
}

/// Every REST binding with its template split into segments once, not on every request.
type Parsed = (&'static str, &'static str, Vec<&'static str>, Operation);
static PARSED: std::sync::LazyLock<Vec<Parsed>> = std::sync::LazyLock::new(|| {
    Operation::routes()
        .map(|(method, template, operation)| {
            (
                method,
                template,
                template.split('/').skip(1).collect(),
                operation,
            )
        })
        .collect()
});

/// The one parameter that matches the rest of a path, slashes included, when it ends a
/// template (the transparency log's tile paths, `/log/tile/{path}`, as c2sp.org/tlog-tiles
/// spells them: `0/x001/234.p/7`).
const REST_OF_PATH: &str = "{path}";

/// Some(static segment count, params) when the template `parts` match.
fn match_parts(parts: &[&str], segments: &[&str]) -> Option<(usize, Vec<String>)> {
    if parts.last() == Some(&REST_OF_PATH) && segments.len() >= parts.len() {
        let fixed = parts.len() - 1;
        let (score, mut params) = match_parts(&parts[..fixed], &segments[..fixed])?;
        let rest = &segments[fixed..];
        if rest.iter().any(|s| s.is_empty()) {
            return None;
        }
        params.push(percent_decode(&rest.join("/")));
        return Some((score, params));
    }
    if parts.len() != segments.len() {
        return None;
    }
    let mut score = 0;
    let mut params = Vec::new();
    for (part, segment) in parts.iter().zip(segments) {
        if part.starts_with('{') {
            // A parameter may end in a literal (`{id}:cancel`, as A2A's custom methods do).
            let suffix = part.split_once('}').map_or("", |(_, suffix)| suffix);
            let value = segment.strip_suffix(suffix)?;
            if value.is_empty() {
                return None;
            }
            if !suffix.is_empty() {
                score += 1;
            }
            params.push(percent_decode(value));
        } else if part == segment {
            score += 1;
        } else {
            return None;
        }
    }
    Some((score, params))
}

/// Decodes `%XX` escapes (and `+` as space when `plus_is_space`); invalid escapes stay literal.
pub fn percent_decode_with(text: &str, plus_is_space: bool) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok();
                match hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                    Some(byte) => {
                        out.push(byte);
                        i += 3;
                    }
                    None => {
                        out.push(b'%');
                        i += 1;
                    }
                }
            }
            b'+' if plus_is_space => {
                out.push(b' ');
                i += 1;
            }
            byte => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn percent_decode(text: &str) -> String {
    percent_decode_with(text, false)
}

#[cfg(test)]
#[path = "router_tests.rs"]
mod tests;
