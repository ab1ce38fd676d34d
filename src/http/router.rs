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
    // Scored without decoding anything: only the binding that answers has its parameters
    // decoded (every request scores the whole table).
    // The highest score wins; of equal scores, the binding first in the table.
    let mut best: Option<(usize, usize, &str)> = None;
    for route in candidates(segments.len()) {
        let (_, template, parts, _) = &PARSED[route];
        if let Some(score) = match_parts(parts, &segments)
            && best.is_none_or(|(top, first, _)| score > top || (score == top && route < first))
        {
            best = Some((score, route, template));
        }
    }
    let Some((_, _, best_template)) = best else {
        return Err(Error::NotFound(format!(
            "no route for {path}; see /openapi.json"
        )));
    };
    let mut allow = Vec::new();
    for route in candidates(segments.len()) {
        let (route_method, template, parts, operation) = &PARSED[route];
        if *template != best_template {
            continue;
        }
        if *route_method == method {
            return Ok(Matched {
                operation: *operation,
                params: params(parts, &segments),
                route,
            });
        }
        allow.push(*route_method);
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

/// The bindings a path of `segments` segments may match: those of that many segments (indexed
/// by count, so a request scores a fifth of the table), then those ending in [`REST_OF_PATH`].
fn candidates(segments: usize) -> impl Iterator<Item = usize> {
    let (by_count, rest) = &*BY_COUNT;
    by_count
        .get(segments)
        .map_or(&[][..], Vec::as_slice)
        .iter()
        .chain(rest)
        .copied()
}

/// The bindings by segment count (those that end in [`REST_OF_PATH`] aside).
static BY_COUNT: std::sync::LazyLock<(Vec<Vec<usize>>, Vec<usize>)> =
    std::sync::LazyLock::new(|| {
        let mut by_count: Vec<Vec<usize>> = Vec::new();
        let mut rest = Vec::new();
        for (route, (_, _, parts, _)) in PARSED.iter().enumerate() {
            if parts.last() == Some(&REST_OF_PATH) {
                rest.push(route);
            } else {
                if by_count.len() <= parts.len() {
                    by_count.resize_with(parts.len() + 1, Vec::new);
                }
                by_count[parts.len()].push(route);
            }
        }
        (by_count, rest)
    });

/// The one parameter that matches the rest of a path, slashes included, when it ends a
/// template (the transparency log's tile paths, `/log/tile/{path}`, as c2sp.org/tlog-tiles
/// spells them: `0/x001/234.p/7`).
const REST_OF_PATH: &str = "{path}";

/// Some(static segment count) when the template `parts` match `segments`.
fn match_parts(parts: &[&str], segments: &[&str]) -> Option<usize> {
    if parts.last() == Some(&REST_OF_PATH) && segments.len() >= parts.len() {
        let fixed = parts.len() - 1;
        let score = match_parts(&parts[..fixed], &segments[..fixed])?;
        return (!segments[fixed..].iter().any(|s| s.is_empty())).then_some(score);
    }
    if parts.len() != segments.len() {
        return None;
    }
    let mut score = 0;
    for (part, segment) in parts.iter().zip(segments) {
        if part.starts_with('{') {
            // A parameter may end in a literal (`{id}:cancel`, as A2A's custom methods do).
            let suffix = parameter_suffix(part);
            let value = segment.strip_suffix(suffix)?;
            if value.is_empty() {
                return None;
            }
            if !suffix.is_empty() {
                score += 1;
            }
        } else if part == segment {
            score += 1;
        } else {
            return None;
        }
    }
    Some(score)
}

/// The literal after a parameter's closing brace (`:cancel` of `{id}:cancel`), or "".
fn parameter_suffix(part: &str) -> &str {
    part.split_once('}').map_or("", |(_, suffix)| suffix)
}

/// The decoded path parameters of `segments`, which the template `parts` match.
fn params(parts: &[&str], segments: &[&str]) -> Vec<String> {
    let mut params: Vec<String> = parts
        .iter()
        .zip(segments)
        .filter(|(part, _)| part.starts_with('{') && **part != REST_OF_PATH)
        .map(|(part, segment)| {
            percent_decode(
                segment
                    .strip_suffix(parameter_suffix(part))
                    .unwrap_or(segment),
            )
        })
        .collect();
    if parts.last() == Some(&REST_OF_PATH) {
        params.push(percent_decode(&segments[parts.len() - 1..].join("/")));
    }
    params
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
