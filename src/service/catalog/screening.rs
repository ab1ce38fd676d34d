//! Prohibited-content screening (interface, "What the service does", item 10).
//!
//! A pure function over the texts of a listing. It refuses, with the field and a reason:
//! - credentials and secrets: private key blocks, cloud and API tokens by their published
//!   prefixes (AWS `AKIA…`, GitHub `ghp_…`, Slack `xox…-`, Stripe `sk_live_…`, Google `AIza…`,
//!   OpenAI-style `sk-…`, bourse `svc_live_…`), `email:password` dumps, and offers of
//!   leaked or stolen credentials;
//! - digital keys, licenses, gift and game codes (offers of them, and key-shaped strings such as
//!   `XXXXX-XXXXX-XXXXX-XXXXX-XXXXX`);
//! - other people's health data (patient or medical records) outside the personal-health-data
//!   consent flow.
//!
//! Phrases are matched on word boundaries of lowercased text, and single words that merely touch
//! these subjects ("password managers", "healthcare market") are not enough: the rules look for
//! an offer of the thing itself.

use serde_json::Value;

/// Why a text was refused.
#[derive(Debug, PartialEq)]
pub struct Refusal {
    pub field: String,
    pub reason: &'static str,
}

const SECRET_OFFERS: &[&str] = &[
    "password dump",
    "password dumps",
    "password list",
    "leaked passwords",
    "leaked password",
    "leaked credentials",
    "stolen credentials",
    "stolen accounts",
    "hacked accounts",
    "credential dump",
    "credentials dump",
    "combo list",
    "combolist",
    "fullz",
    "cracked accounts",
    "account logins for sale",
    "private keys for",
    "seed phrases",
    "api keys for sale",
    "session cookies",
];

const KEY_OFFERS: &[&str] = &[
    "license key",
    "license keys",
    "licence key",
    "licence keys",
    "product key",
    "product keys",
    "serial key",
    "serial keys",
    "serial number for",
    "activation key",
    "activation keys",
    "activation code",
    "activation codes",
    "cd key",
    "cd keys",
    "steam key",
    "steam keys",
    "game key",
    "game keys",
    "game code",
    "game codes",
    "gift card code",
    "gift card codes",
    "gift code",
    "gift codes",
    "gift card",
    "gift cards",
    "redeem code",
    "redeem codes",
    "redemption code",
    "redemption codes",
    "psn code",
    "psn codes",
    "xbox live code",
    "xbox codes",
    "nintendo eshop code",
    "windows 10 key",
    "windows 11 key",
    "office 365 key",
    "office key",
    "software license for resale",
];

const HEALTH_OFFERS: &[&str] = &[
    "patient records",
    "patient data",
    "patient files",
    "medical records",
    "health records",
    "ehr export",
    "emr export",
    "prescription records",
    "diagnosis records",
    "clinical records of",
    "lab results of",
    "hospital records",
];

/// Screens every named text; the first refusal wins.
pub fn screen<'a>(
    texts: impl IntoIterator<Item = (String, &'a str)>,
    health_flow: bool,
) -> Result<(), Refusal> {
    for (field, text) in texts {
        if let Some(reason) = screen_text(text, health_flow) {
            return Err(Refusal { field, reason });
        }
    }
    Ok(())
}

/// Every string inside a JSON value, with a path naming it (`preview.sample[2]`).
pub fn strings_of<'a>(prefix: &str, value: &'a Value, out: &mut Vec<(String, &'a str)>) {
    match value {
        Value::String(text) => out.push((prefix.to_owned(), text)),
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                strings_of(&format!("{prefix}[{i}]"), item, out);
            }
        }
        Value::Object(map) => {
            for (key, item) in map {
                out.push((format!("{prefix}.{key}"), key.as_str()));
                strings_of(&format!("{prefix}.{key}"), item, out);
            }
        }
        _ => {}
    }
}

fn screen_text(text: &str, health_flow: bool) -> Option<&'static str> {
    if let Some(reason) = secret_token(text) {
        return Some(reason);
    }
    let words = words_of(text);
    if SECRET_OFFERS
        .iter()
        .any(|phrase| has_phrase(&words, phrase))
    {
        return Some("credentials or secrets that the seller has no right to sell");
    }
    if KEY_OFFERS.iter().any(|phrase| has_phrase(&words, phrase)) || has_key_shaped_token(text) {
        return Some("digital keys, licenses, gift or game codes");
    }
    if !health_flow
        && HEALTH_OFFERS
            .iter()
            .any(|phrase| has_phrase(&words, phrase))
    {
        return Some(
            "health data of other people (only a person's own data, through the signed consent flow)",
        );
    }
    None
}

/// Lowercase words padded with spaces: " word word ".
fn words_of(text: &str) -> String {
    let mut out = String::from(" ");
    for c in text.chars().flat_map(char::to_lowercase) {
        if c.is_alphanumeric() {
            out.push(c);
        } else if !out.ends_with(' ') {
            out.push(' ');
        }
    }
    if !out.ends_with(' ') {
        out.push(' ');
    }
    out
}

fn has_phrase(words: &str, phrase: &str) -> bool {
    words.contains(&format!(" {phrase} "))
}

fn secret_token(text: &str) -> Option<&'static str> {
    let secret = Some("credentials or secrets (a private key, token or API key)");
    let upper = text.to_ascii_uppercase();
    if upper.contains("PRIVATE KEY-----") || upper.contains("BEGIN OPENSSH PRIVATE KEY") {
        return secret;
    }
    let mut email_password_pairs = 0;
    for token in text.split(|c: char| c.is_whitespace() || "\"'`,;()[]{}<>|".contains(c)) {
        let token_like = |s: &str, min: usize| {
            s.len() >= min
                && s.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        };
        let prefixed = |prefix: &str, min_rest: usize| {
            token
                .strip_prefix(prefix)
                .is_some_and(|rest| token_like(rest, min_rest))
        };
        let aws = (token.starts_with("AKIA") || token.starts_with("ASIA"))
            && token.len() == 20
            && token[4..]
                .bytes()
                .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit());
        let google = token.starts_with("AIza") && token.len() == 39 && token_like(&token[4..], 35);
        if aws
            || google
            || prefixed("ghp_", 30)
            || prefixed("gho_", 30)
            || prefixed("ghs_", 30)
            || prefixed("github_pat_", 30)
            || prefixed("glpat-", 20)
            || prefixed("xoxb-", 20)
            || prefixed("xoxp-", 20)
            || prefixed("xoxa-", 20)
            || prefixed("sk_live_", 20)
            || prefixed("rk_live_", 20)
            || prefixed("whsec_", 20)
            || prefixed("sk-ant-", 20)
            || (prefixed("sk-", 32) && token[3..].bytes().any(|b| b.is_ascii_digit()))
            || prefixed("svc_live_", 20)
            || prefixed("op_", 40)
        {
            return secret;
        }
        if let Some((user, rest)) = token.split_once('@')
            && let Some((domain, password)) = rest.split_once(':')
            && !user.is_empty()
            && domain.contains('.')
            && password.len() >= 3
        {
            email_password_pairs += 1;
        }
    }
    if email_password_pairs >= 2 {
        return Some("credentials or secrets (email:password pairs)");
    }
    None
}

/// `XXXXX-XXXXX-XXXXX-XXXXX-XXXXX` and similar product-key shapes: at least four groups of
/// 4–6 uppercase letters and digits, mixing both.
fn has_key_shaped_token(text: &str) -> bool {
    text.split(|c: char| c.is_whitespace() || ",;()[]{}\"'".contains(c))
        .any(|token| {
            let groups: Vec<&str> = token.split('-').collect();
            groups.len() >= 4
                && groups.iter().all(|g| {
                    (4..=6).contains(&g.len())
                        && g.bytes()
                            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit())
                })
                && token.bytes().any(|b| b.is_ascii_digit())
                && token.bytes().any(|b| b.is_ascii_uppercase())
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(text: &str) -> Option<&'static str> {
        screen_text(text, false)
    }

    #[test]
    fn refuses_secrets_keys_codes_and_health_records() {
        let refused = [
            "-----BEGIN RSA PRIVATE KEY-----\nMIIE...",
            "AWS creds AKIAIOSFODNN7EXAMPLE inside",
            "token ghp_abcdefghijklmnopqrstuvwxyz0123456789",
            "stripe sk_live_51HxxxxxxxxxxxxxxxxxxxxxX",
            "my bourse key svc_live_GUcFPxBvgjXD3dVdlvfzoW9WC5hLBEWNsmK6IsStRZM",
            "Huge password dump from 2024",
            "alice@example.com:hunter22 bob@example.org:letmein1",
            "Fresh combo list, 1M lines",
            "Windows 11 key, lifetime activation",
            "Steam keys bundle",
            "Unused gift card codes for Amazon",
            "ABCDE-12345-FGHIJ-67890-KLMNO",
            "Patient records from a clinic, 5k rows",
            "Export of hospital records",
        ];
        for text in refused {
            assert!(check(text).is_some(), "should refuse: {text}");
        }
    }

    #[test]
    fn lets_ordinary_text_through() {
        let allowed = [
            "Market research on password managers",
            "Survey of enterprise license management practices",
            "Healthcare market analysis 2026",
            "Hospital price transparency dataset",
            "How gift economies work: an anthropology reading list",
            "API design guide: how to rotate your keys safely",
            "UUID list 123e4567-e89b-12d3-a456-426614174000",
            "Contact sales@example.com for the full report",
            "Weekly keyword research for SEO",
            "Keynote slides on product strategy",
        ];
        for text in allowed {
            assert_eq!(check(text), None, "should allow: {text}");
        }
    }

    #[test]
    fn health_records_pass_inside_the_consent_flow_and_json_strings_are_screened() {
        assert_eq!(screen_text("My own medical records", true), None);
        let preview =
            serde_json::json!({"rows": [{"note": "ok"}, {"secret": "AKIAIOSFODNN7EXAMPLE"}]});
        let mut texts = Vec::new();
        strings_of("preview", &preview, &mut texts);
        let refusal = screen(texts, false).unwrap_err();
        assert_eq!(refusal.field, "preview.rows[1].secret");
    }
}
