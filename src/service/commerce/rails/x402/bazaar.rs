//! x402 Bazaar (`extensions.bazaar`, x402-foundation/x402 `specs/extensions/bazaar.md`): how a
//! paid listing's purchase is called, in the words of the 402 and of `GET /discovery/*`, and the
//! provider metadata of its `resource` (`serviceName`, `tags`).
//!
//! A purchase is `POST` with a JSON body; the body example names the rail
//! (`{"rail": "x402_usdc_base"}`), which a buyer without a key may leave out. `schema` is JSON
//! Schema 2020-12 validating `info`, with no `$ref` at all (Bazaar refuses external ones).

use serde::Serialize;
use serde_json::{Value, json};

use crate::service::rail::Rail;
use crate::store::listings::ListingRow;

/// Most characters of `serviceName` and of each tag; most tags.
const MAX_NAME: usize = 32;
const MAX_TAGS: usize = 5;
/// `serviceName` of a listing whose title has no printable ASCII.
const FALLBACK_NAME: &str = "bourse listing";

/// `extensions.bazaar`: the call and the schema validating it.
#[derive(Clone, Debug, Serialize)]
pub struct Extension {
    pub info: Info,
    /// JSON Schema 2020-12 of `info`.
    pub schema: Value,
}

/// What Bazaar catalogues: the request and the response.
#[derive(Clone, Debug, Serialize)]
pub struct Info {
    pub input: Input,
    pub output: Output,
}

/// A body method's input (`BodyInput` of the Python SDK).
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Input {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub method: &'static str,
    pub body_type: &'static str,
    pub body: Value,
}

/// The answer: a JSON Purchase.
#[derive(Clone, Debug, Serialize)]
pub struct Output {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub example: Value,
}

/// The Bazaar description of a paid listing's purchase: the provider metadata of its 402's
/// `resource` and the extension.
#[derive(Clone, Debug)]
pub struct Described {
    /// `serviceName`: the title in printable ASCII, at most 32 characters.
    pub service_name: String,
    /// `tags`: the vertical and the category (printable ASCII, at most 5, deduplicated).
    pub tags: Vec<String>,
    pub extension: Extension,
}

/// Describes the purchase of `listing` for Bazaar.
pub fn describe(listing: &ListingRow) -> Described {
    Described {
        service_name: service_name(&listing.title),
        tags: tags(&[&listing.vertical_slug, &listing.category]),
        extension: Extension {
            info: Info {
                input: Input {
                    kind: "http",
                    method: "POST",
                    body_type: "json",
                    body: json!({ "rail": Rail::Wallet.name() }),
                },
                output: Output {
                    kind: "json",
                    example: json!({
                        "id": "0190f5a2-7c1e-7b3a-9d4e-2f6a8b1c3d5e",
                        "listingId": listing.id,
                        "status": "paid",
                        "rail": Rail::Wallet.name(),
                        "purchaseToken": "x402_…",
                        "delivery": {"contentType": "application/json", "encoding": "json", "content": {}},
                    }),
                },
            },
            schema: schema(),
        },
    }
}

/// The schema of `info` (the same for every listing).
fn schema() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {
            "input": {
                "type": "object",
                "properties": {
                    "type": {"type": "string", "const": "http"},
                    "method": {"type": "string", "const": "POST"},
                    "bodyType": {"type": "string", "const": "json"},
                    "body": {
                        "type": "object",
                        "properties": {
                            "rail": {"type": "string", "enum": [Rail::Wallet.name()]},
                            "email": {"type": "string"},
                            "buyer_intended_use": {"type": "string"},
                            "buyer_attestation": {"type": "object"}
                        }
                    }
                },
                "required": ["type", "method", "bodyType", "body"]
            },
            "output": {
                "type": "object",
                "properties": {
                    "type": {"type": "string"},
                    "example": {"type": "object"}
                },
                "required": ["type"]
            }
        },
        "required": ["input"]
    })
}

/// Printable ASCII (U+0020–U+007E) of `text`, other characters dropped and runs of spaces
/// folded, at most `MAX_NAME` characters.
fn printable(text: &str) -> String {
    let kept: String = text
        .chars()
        .map(|c| if c.is_whitespace() { ' ' } else { c })
        .filter(|c| (' '..='~').contains(c))
        .collect();
    let folded = kept
        .split(' ')
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>();
    let mut out = String::new();
    for word in folded {
        let extra = usize::from(!out.is_empty()) + word.len();
        if out.len() + extra > MAX_NAME {
            if out.is_empty() {
                out.push_str(&word[..MAX_NAME]);
            }
            break;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    out
}

/// `serviceName` from a listing title.
fn service_name(title: &str) -> String {
    let name = printable(title);
    if name.is_empty() {
        FALLBACK_NAME.to_owned()
    } else {
        name
    }
}

/// `tags`: each printable and bounded, empty ones dropped, deduplicated ignoring case.
fn tags(values: &[&str]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for value in values {
        let tag = printable(value);
        if !tag.is_empty() && !out.iter().any(|t| t.eq_ignore_ascii_case(&tag)) {
            out.push(tag);
        }
    }
    out.truncate(MAX_TAGS);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn service_names_are_printable_ascii_of_at_most_32_characters() {
        assert_eq!(service_name("Port congestion"), "Port congestion");
        assert_eq!(service_name("Café  crème\tdaily"), "Caf crme daily");
        assert_eq!(service_name("日本"), FALLBACK_NAME);
        let long = service_name("Daily berth waits at every container port in Europe");
        assert!(
            long.len() <= MAX_NAME && long.starts_with("Daily berth"),
            "{long}"
        );
        assert_eq!(service_name(&"x".repeat(40)).len(), MAX_NAME);
    }

    #[test]
    fn tags_are_deduplicated_ignoring_case() {
        assert_eq!(tags(&["trucking", "Trucking", ""]), ["trucking"]);
        assert_eq!(tags(&["a", "b", "c", "d", "e", "f"]).len(), MAX_TAGS);
    }
}
