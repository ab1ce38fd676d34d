//! Agent cards (A2A 1.0 §4.4, §8): the marketplace's at `/.well-known/agent-card.json`, and one
//! per registered agent at `/a2a/agents/{handle}/.well-known/agent-card.json` (its handle and
//! opt-in display name only). Each is signed as §8.4 says: a JWS with a detached payload, the
//! RFC 8785 form of the card without `signatures`, signed with the instance's Ed25519 key
//! (`alg` EdDSA, `kid` its key id, `jku` the key set at `/a2a/jwks.json`).
//!
//! Cards hold no empty string, list or object and no member outside the A2A schema: SDK
//! verifiers parse the card and drop empty values before canonicalising, so a card with one
//! would verify in some implementations and not in others.

use serde_json::{Map, Value, json};

use crate::crypto::{b64url, jcs};
use crate::request::Scope;
use crate::service::App;
use crate::service::identity::cards::PublicCard;

/// The A2A protocol version served.
pub const PROTOCOL_VERSION: &str = "1.0";

/// The a2a-x402 extension (v0.2) this server declares when its x402 rail is configured.
pub const X402_EXTENSION: &str =
    "https://github.com/google-agentic-commerce/a2a-x402/blob/main/spec/v0.2";

/// The URIs that activate it: v0.2's, and the one the x402 Foundation's A2A transport names.
pub const X402_EXTENSIONS: [&str; 2] = [
    X402_EXTENSION,
    "https://github.com/google-a2a/a2a-x402/v0.1",
];

/// The path of the marketplace's JSON-RPC endpoint, and the base of its HTTP+JSON binding.
pub const ENDPOINT: &str = "/a2a";

/// An agent's A2A endpoint (the path of its card without the card's suffix).
pub fn agent_base(handle: &str) -> String {
    let card = crate::service::identity::cards::a2a_card_path(handle);
    card.trim_end_matches("/.well-known/agent-card.json")
        .to_owned()
}

fn interfaces(app: &App, base: &str) -> Value {
    json!([
        {"url": app.url(base), "protocolBinding": "JSONRPC", "protocolVersion": PROTOCOL_VERSION},
        {"url": app.url(base), "protocolBinding": "HTTP+JSON", "protocolVersion": PROTOCOL_VERSION},
    ])
}

/// The marketplace's capabilities: no streaming or push configs; a2a-x402 when x402 is
/// configured (not required: the card rail needs no extension). `required: false` is left
/// out, as A2A's JSON leaves out defaults.
fn capabilities(app: &App) -> Value {
    let mut capabilities = json!({"streaming": true, "pushNotifications": false});
    if app.x402.is_some() {
        capabilities["extensions"] = json!([{
            "uri": X402_EXTENSION,
            "description": "Buy a listing on the x402 rail: activate this extension (A2A-Extensions) when asking for a listing; the task waits in TASK_STATE_INPUT_REQUIRED with x402.payment.required (x402Version 2) until a message with its taskId carries x402.payment.payload; the completed task carries x402.payment.receipts. The x402 Foundation's URI https://github.com/google-a2a/a2a-x402/v0.1 is accepted too.",
        }]);
    }
    capabilities
}

fn security_schemes(app: &App) -> Value {
    let scopes: Map<String, Value> = Scope::ALL
        .into_iter()
        .map(|scope| (scope.name().to_owned(), scope.sentence().into()))
        .collect();
    json!({
        "apiKey": {"httpAuthSecurityScheme": {
            "scheme": "Bearer",
            "description": "An agent's API key (POST /api/agents/register answers it once); it holds every scope.",
        }},
        "oauth": {"oauth2SecurityScheme": {
            "description": "OAuth 2.1 with PKCE, for agents acting for a registered agent.",
            "flows": {"authorizationCode": {
                "authorizationUrl": app.url("/oauth/authorize"),
                "tokenUrl": app.url("/oauth/token"),
                "scopes": scopes,
                "pkceRequired": true,
            }},
            "oauth2MetadataUrl": app.url("/.well-known/oauth-authorization-server"),
        }},
    })
}

/// Either credential, holding `scope` (an API key holds every scope; the scope names its role).
fn needs(scope: Scope) -> Value {
    json!([
        {"schemes": {"apiKey": {"list": [scope.name()]}}},
        {"schemes": {"oauth": {"list": [scope.name()]}}},
    ])
}

fn skill(id: &str, name: &str, description: &str, tags: &[&str], example: Value) -> Value {
    json!({
        "id": id,
        "name": name,
        "description": description,
        "tags": tags,
        "examples": [example.to_string()],
        "inputModes": ["application/json"],
        "outputModes": ["application/json"],
    })
}

/// The marketplace's card, signed.
pub fn marketplace(app: &App) -> Value {
    let mut buy = skill(
        "buy",
        "Buy a listing",
        "Send a data part naming a listing ({\"listingId\": …}, with the purchase's optional email, intendedUse, attestation). The answer is a task: a free listing completes with its deliverable as an artifact; a paid one waits in TASK_STATE_INPUT_REQUIRED with its checkout URL and completes once paid. GetTask reads it with the deliverable relayed live.",
        &["purchase", "checkout"],
        json!({"listingId": "00000000-0000-4000-8000-000000000000"}),
    );
    buy["securityRequirements"] = needs(Scope::Spend);
    let mut sell = skill(
        "sell",
        "Sell: list an asset",
        "Send a data part {\"listing\": {…}} with the fields of POST /api/marketplace/listings (title, description, priceCents, verticalSlug, category, preview, …). The answer is a message whose data part is the new listing with its signed history receipt. Selling a paid listing needs payouts connected (POST /api/sell/register).",
        &["sell", "listing"],
        json!({"listing": {"title": "Soil moisture, 2026", "description": "Hourly readings from 40 farms.", "priceCents": 0, "verticalSlug": "agriculture", "category": "data", "preview": {"rows": 3}}}),
    );
    sell["securityRequirements"] = needs(Scope::Sell);
    let mut spending = skill(
        "spending",
        "Read your spending, set your spending policy",
        "Send a data part {\"spending\": {}}: the answer's data part is your spending policy and what you spent and have left per UTC day and month (GET /api/agents/me/spending). Send {\"spendingPolicy\": {…}} with the fields of PUT /api/agents/me/spending-policy (perPurchaseCents, dailyCents, monthlyCents, rails, categories, verticals, approvalThresholdCents, approvalTtlHours; a field left out is no cap) to replace the policy; the answer is the same. Setting the policy needs the agent's full API key: a restricted key or an OAuth access token is refused (INSUFFICIENT_SCOPE). Purchases over a cap are refused with SPEND_LIMIT_EXCEEDED on every rail.",
        &["spending", "budget", "policy"],
        json!({"spendingPolicy": {"perPurchaseCents": 2500, "dailyCents": 10000, "rails": ["card", "x402_usdc_base"]}}),
    );
    spending["securityRequirements"] = needs(Scope::Spend);
    let card = json!({
        "name": format!("bourse at {}", host(app)),
        "description": "A marketplace where agents register, list assets, browse, buy, rate and sell, and message each other with signed receipts. Every registered agent is reachable over A2A at /a2a/agents/{handle}.",
        "supportedInterfaces": interfaces(app, ENDPOINT),
        "provider": {"organization": host(app), "url": app.url("/")},
        "version": env!("CARGO_PKG_VERSION"),
        "documentationUrl": app.url("/llms.txt"),
        "capabilities": capabilities(app),
        "securitySchemes": security_schemes(app),
        "defaultInputModes": ["application/json", "text/plain"],
        "defaultOutputModes": ["application/json", "text/plain"],
        "skills": [
            skill(
                "browse",
                "Browse and search the catalogue",
                "Send a data part {\"query\": …} with any filter of GET /api/marketplace/listings (category, vertical, type, price, min_rating, sort, limit, offset); the answer is a message whose data part is the signed page of listings. No credential needed.",
                &["catalogue", "search"],
                json!({"query": "soil moisture", "sort": "quality", "limit": 10}),
            ),
            buy,
            sell,
            spending,
            skill(
                "message",
                "Message an agent",
                "Each agent has its own A2A endpoint at /a2a/agents/{handle} (its card at /a2a/agents/{handle}/.well-known/agent-card.json): a message sent there lands in its inbox, with a signed receipt.",
                &["messaging", "inbox"],
                json!({"handle": "acme-data"}),
            ),
            skill(
                "fees",
                "Read the fee schedule",
                "Send a data part {\"fees\": {}}: the answer's data part is the live fee schedule and any announced change (GET /api/fees). No credential needed.",
                &["fees", "disclosure"],
                json!({"fees": {}}),
            ),
        ],
    });
    signed(app, card)
}

/// An agent's public card, signed: its handle, its display name if it chose one, and its
/// endpoint, where messages land in its inbox.
pub fn agent(app: &App, public: &PublicCard) -> Value {
    let handle = public.handle.as_str();
    let name = public
        .display_name
        .clone()
        .unwrap_or_else(|| public.handle.clone());
    let mut message = skill(
        "message",
        "Send a message",
        "A message sent here lands in this agent's inbox on the marketplace, exactly like POST /api/agents/{handle}/messages: its text parts (or, with other parts, the JSON of all of them) are the body, at most 16,384 bytes; the messageId is the idempotency key; the answer's metadata holds the message with its signed acceptance receipt.",
        &["messaging", "inbox"],
        json!({"text": "Do you have 2025 readings too?"}),
    );
    message["inputModes"] = json!(["text/plain", "application/json"]);
    message["securityRequirements"] = needs(Scope::Message);
    let card = json!({
        "name": name,
        "description": format!("The agent {} on bourse at {}: messages sent here reach its inbox.", public.handle, host(app)),
        "supportedInterfaces": interfaces(app, &agent_base(handle)),
        "provider": {"organization": host(app), "url": app.url("/")},
        "version": env!("CARGO_PKG_VERSION"),
        "documentationUrl": app.url("/llms.txt"),
        "capabilities": {"streaming": true, "pushNotifications": false},
        "securitySchemes": security_schemes(app),
        "defaultInputModes": ["text/plain", "application/json"],
        "defaultOutputModes": ["application/json"],
        "skills": [message],
    });
    signed(app, card)
}

/// The key set a card's `jku` names: the current signing key and the previous ones, as JWKs.
pub fn jwks(app: &App) -> Value {
    let keyring = &app.keyring;
    let keys: Vec<Value> = std::iter::once(keyring.current())
        .chain(keyring.previous())
        .map(|record| {
            json!({
                "kty": "OKP",
                "crv": "Ed25519",
                "x": record.public_key,
                "kid": record.key_id,
                "alg": "EdDSA",
                "use": "sig",
            })
        })
        .collect();
    json!({ "keys": keys })
}

fn host(app: &App) -> String {
    crate::service::authority(&app.public_url).to_owned()
}

/// `card` with its §8.4 signature.
fn signed(app: &App, mut card: Value) -> Value {
    let key_id = app.keyring.current().key_id.clone();
    let header = json!({
        "alg": "EdDSA",
        "typ": "JOSE",
        "kid": key_id,
        "jku": app.url("/a2a/jwks.json"),
    });
    let protected = b64url(&jcs::canonicalize(&header));
    let payload = b64url(&jcs::canonicalize(&card));
    let signature = app
        .keyring
        .sign(format!("{protected}.{payload}").as_bytes());
    card["signatures"] = json!([{ "protected": protected, "signature": b64url(&signature) }]);
    card
}

/// An `ETag` for a card: its content's digest (a new key or version makes a new one).
pub fn etag(card: &Value) -> String {
    let digest = jcs::digest(card);
    let hex = digest.rsplit(':').next().unwrap_or(&digest);
    format!("\"{}\"", &hex[..hex.len().min(32)])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_protected_header_is_the_base64url_of_its_canonical_json() {
        let header = json!({"kid": "k", "alg": "EdDSA"});
        assert_eq!(
            b64url(&jcs::canonicalize(&header)),
            "eyJhbGciOiJFZERTQSIsImtpZCI6ImsifQ"
        );
        assert_eq!(agent_base("A-1"), "/a2a/agents/A-1");
    }
}
