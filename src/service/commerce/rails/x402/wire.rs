//! The x402 protocol as the `x402_usdc_base` rail speaks it: USDC networks, the payment
//! requirements this instance offers (v2 `PAYMENT-REQUIRED` header, v1 body), the payment
//! headers of a retry (`PAYMENT-SIGNATURE`, `X-PAYMENT`) and their responses, and the calls to
//! the facilitator (`/verify`, `/settle`, `/supported`).

use std::time::Duration;

use base64::Engine;
use serde_json::{Value, json};

use crate::error::{Error, Result};
use crate::request::commerce::PaymentHeader;
use crate::service::App;
use crate::service::commerce::rails::x402::bazaar::Described;
use crate::service::rail::Rail;

/// USDC on one network: what the `exact` EVM scheme needs to name the token.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Usdc {
    /// CAIP-2 id (x402 v2).
    pub network: &'static str,
    /// The network's name in x402 v1.
    pub v1_network: &'static str,
    /// The token contract.
    pub asset: &'static str,
    /// The token's EIP-712 domain name and version (`extra` of a requirement).
    pub eip712_name: &'static str,
    pub eip712_version: &'static str,
}

/// USDC has 6 decimals: one cent is 10,000 atomic units.
pub const ATOMIC_PER_CENT: i64 = 10_000;

/// The networks this rail can use (the EIP-712 names differ between mainnet and Sepolia).
pub const NETWORKS: &[Usdc] = &[
    Usdc {
        network: "eip155:8453",
        v1_network: "base",
        asset: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
        eip712_name: "USD Coin",
        eip712_version: "2",
    },
    Usdc {
        network: "eip155:84532",
        v1_network: "base-sepolia",
        asset: "0x036CbD53842c5426634e7929541eC2318f3dCF7e",
        eip712_name: "USDC",
        eip712_version: "2",
    },
];

/// USDC on `network`, if this rail knows it.
pub fn usdc(network: &str) -> Option<&'static Usdc> {
    NETWORKS.iter().find(|u| u.network == network)
}

/// `maxTimeoutSeconds` of our requirements: how long a signed authorization may take to settle.
pub const MAX_TIMEOUT_SECONDS: u64 = 300;
/// The body of a challenge names the response's media type as the resource's.
const MIME_TYPE: &str = "application/json";
/// Facilitator call limits: connect, whole exchange, largest answer read.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
const TOTAL_TIMEOUT: Duration = Duration::from_secs(15);
const MAX_ANSWER_BYTES: u64 = 1 << 20;

/// A 402 in x402's words: the challenge (a v1 `PaymentRequired` body and the v2
/// `PAYMENT-REQUIRED` header), or a payment refused, with its headers (lower case).
#[derive(Debug)]
pub struct Challenge {
    pub body: Value,
    pub headers: Vec<(&'static str, String)>,
}

pub(crate) fn rail_unavailable() -> Error {
    Error::Conflict {
        code: "RAIL_UNAVAILABLE",
        message: format!(
            "the {} rail is not configured on this instance (see `rails` in GET /api/meta); buy with a key on the default rail",
            Rail::Wallet.name()
        ),
    }
}

fn invalid_payment(message: impl Into<String>) -> Error {
    Error::BadRequest {
        code: "INVALID_PAYMENT",
        message: message.into(),
    }
}

/// What this instance asks for one listing.
pub(crate) struct Offer {
    usdc: &'static Usdc,
    pay_to: String,
    amount: String,
    resource: String,
    description: String,
    /// The listing's Bazaar description: `serviceName`, `tags` and `extensions.bazaar`.
    bazaar: Option<Described>,
}

impl Offer {
    pub(crate) fn new(
        app: &App,
        price_cents: i64,
        resource: String,
        description: String,
    ) -> Result<Offer> {
        let settings = app.x402.as_ref().ok_or_else(rail_unavailable)?;
        let usdc = usdc(&settings.network)
            .ok_or_else(|| Error::Internal(format!("x402 network {}", settings.network)))?;
        let atomic = price_cents
            .checked_mul(ATOMIC_PER_CENT)
            .ok_or_else(|| Error::Internal("price overflows USDC units".into()))?;
        Ok(Offer {
            usdc,
            pay_to: settings.pay_to.clone(),
            amount: atomic.to_string(),
            resource,
            description,
            bazaar: None,
        })
    }

    /// The offer with its Bazaar description, which every challenge then carries.
    pub(crate) fn with_bazaar(mut self, described: Described) -> Offer {
        self.bazaar = Some(described);
        self
    }

    pub(crate) fn resource(&self) -> &str {
        &self.resource
    }

    pub(crate) fn description(&self) -> &str {
        &self.description
    }

    pub(crate) fn mime_type(&self) -> &'static str {
        MIME_TYPE
    }

    fn extra(&self) -> Value {
        json!({ "name": self.usdc.eip712_name, "version": self.usdc.eip712_version })
    }

    /// v2 `PaymentRequirements`.
    fn v2(&self) -> Value {
        json!({
            "scheme": "exact",
            "network": self.usdc.network,
            "amount": self.amount,
            "asset": self.usdc.asset,
            "payTo": self.pay_to,
            "maxTimeoutSeconds": MAX_TIMEOUT_SECONDS,
            "extra": self.extra(),
        })
    }

    /// v1 `PaymentRequirements`.
    fn v1(&self) -> Value {
        json!({
            "scheme": "exact",
            "network": self.usdc.v1_network,
            "maxAmountRequired": self.amount,
            "asset": self.usdc.asset,
            "payTo": self.pay_to,
            "resource": self.resource,
            "description": self.description,
            "mimeType": MIME_TYPE,
            "maxTimeoutSeconds": MAX_TIMEOUT_SECONDS,
            "extra": self.extra(),
        })
    }

    pub(crate) fn requirements(&self, version: u8) -> Value {
        if version == 2 { self.v2() } else { self.v1() }
    }

    pub(crate) fn network(&self, version: u8) -> &'static str {
        if version == 2 {
            self.usdc.network
        } else {
            self.usdc.v1_network
        }
    }

    /// 402: the v2 `PAYMENT-REQUIRED` header and the v1 `PaymentRequirementsResponse` body,
    /// both with `extensions.bazaar` (and the v2 `resource` with `serviceName` and `tags`) when
    /// the offer has its Bazaar description.
    pub(crate) fn challenge(&self, error: &str) -> Challenge {
        let mut required = json!({
            "x402Version": 2,
            "error": error,
            "resource": {
                "url": self.resource,
                "description": self.description,
                "mimeType": MIME_TYPE,
            },
            "accepts": [self.v2()],
        });
        let mut body = json!({ "x402Version": 1, "error": error, "accepts": [self.v1()] });
        if let Some(described) = &self.bazaar {
            required["resource"]["serviceName"] = json!(described.service_name);
            required["resource"]["tags"] = json!(described.tags);
            let extensions = json!({ "bazaar": described.extension });
            required["extensions"] = extensions.clone();
            body["extensions"] = extensions;
        }
        Challenge {
            body,
            headers: vec![("payment-required", encode(&required))],
        }
    }

    /// Why a decoded payment is not for this offer, if it is not.
    pub(crate) fn mismatch(&self, version: u8, payment: &Value) -> Option<String> {
        let (accepted, fields): (&Value, Vec<(&str, &str)>) = if version == 2 {
            (
                &payment["accepted"],
                vec![
                    ("scheme", "exact"),
                    ("network", self.usdc.network),
                    ("amount", &self.amount),
                    ("asset", self.usdc.asset),
                    ("payTo", &self.pay_to),
                ],
            )
        } else {
            (
                payment,
                vec![("scheme", "exact"), ("network", self.usdc.v1_network)],
            )
        };
        for (field, ours) in fields {
            let theirs = accepted.get(field).and_then(Value::as_str).unwrap_or("");
            // Addresses are hex: EIP-55 checksums only change the case.
            let same = if field == "asset" || field == "payTo" {
                theirs.eq_ignore_ascii_case(ours)
            } else {
                theirs == ours
            };
            if !same {
                let place = if version == 2 { "accepted." } else { "" };
                return Some(format!(
                    "the payment's {place}{field} is {theirs:?}; this listing asks for {ours:?}"
                ));
            }
        }
        None
    }
}

/// Standard base64 of a JSON value's UTF-8 text (x402 header values).
fn encode(value: &Value) -> String {
    base64::engine::general_purpose::STANDARD.encode(value.to_string())
}

/// Decodes a payment header: base64 of a JSON object whose `x402Version` matches the header.
pub(crate) fn decode(header: &PaymentHeader) -> Result<Value> {
    let (PaymentHeader::V2(text) | PaymentHeader::V1(text)) = header;
    let name = header.name();
    let compact: String = text.chars().filter(|c| !c.is_ascii_whitespace()).collect();
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(&compact)
        .or_else(|_| base64::engine::general_purpose::STANDARD_NO_PAD.decode(&compact))
        .map_err(|_| invalid_payment(format!("{name} is not standard base64")))?;
    let value: Value = serde_json::from_slice(&bytes)
        .map_err(|_| invalid_payment(format!("{name} does not decode to JSON")))?;
    let version = header.version();
    if value.get("x402Version").and_then(Value::as_u64) != Some(u64::from(version)) {
        return Err(invalid_payment(format!(
            "{name} carries an x402 v{version} payload: `x402Version` must be {version}"
        )));
    }
    if !value.get("payload").is_some_and(Value::is_object) {
        return Err(invalid_payment(format!("{name} has no `payload` object")));
    }
    let shape_ok = if version == 2 {
        value.get("accepted").is_some_and(Value::is_object)
    } else {
        value.get("scheme").is_some_and(Value::is_string)
            && value.get("network").is_some_and(Value::is_string)
    };
    if !shape_ok {
        let needs = if version == 2 {
            "an `accepted` requirement"
        } else {
            "`scheme` and `network`"
        };
        return Err(invalid_payment(format!("{name} needs {needs}")));
    }
    Ok(value)
}

/// `PAYMENT-RESPONSE` (v2) or `X-PAYMENT-RESPONSE` (v1).
pub(crate) fn response_header(version: u8, settlement: &Value) -> (&'static str, String) {
    let name = if version == 2 {
        "payment-response"
    } else {
        "x-payment-response"
    };
    (name, encode(settlement))
}

/// One JSON POST to the facilitator. Not `outbound::Client`: the facilitator URL is the
/// operator's own configuration (`--x402-facilitator-url`), never a user's input, so there is
/// nothing to vet; the call is still bounded (5 s connect, 15 s in all, 1 MiB answer) and
/// follows no redirects. Blocking: run it on the blocking pool.
///
/// Returns the HTTP status and the answer parsed as JSON (`None` when it is not JSON).
fn post_json(url: &str, body: &Value) -> std::result::Result<(u16, Option<Value>), String> {
    let response = facilitator_agent()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json")
        .send(body.to_string().as_bytes());
    read_json(response)
}

/// One JSON GET to the facilitator, bounded like [`post_json`] (blocking).
pub(crate) fn get_json(url: &str) -> std::result::Result<(u16, Option<Value>), String> {
    read_json(
        facilitator_agent()
            .get(url)
            .header("accept", "application/json")
            .call(),
    )
}

fn facilitator_agent() -> ureq::Agent {
    crate::outbound::configured_agent(
        ureq::Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(0)
            .timeout_connect(Some(CONNECT_TIMEOUT))
            .timeout_global(Some(TOTAL_TIMEOUT))
            .build(),
    )
}

fn read_json(
    response: std::result::Result<ureq::http::Response<ureq::Body>, ureq::Error>,
) -> std::result::Result<(u16, Option<Value>), String> {
    let mut response = response.map_err(|e| e.to_string())?;
    let status = response.status().as_u16();
    let bytes = response
        .body_mut()
        .with_config()
        .limit(MAX_ANSWER_BYTES)
        .read_to_vec()
        .map_err(|e| e.to_string())?;
    Ok((status, serde_json::from_slice(&bytes).ok()))
}

/// Calls `/verify` or `/settle` and returns the structured answer: an object carrying the
/// `flag` member (`isValid`, `success`), whatever the HTTP status.
///
/// # Errors
/// `FACILITATOR_UNAVAILABLE` (502) for a transport failure or a 5xx without an answer,
/// `FACILITATOR_ERROR` (502) for any other unusable answer.
pub(crate) async fn facilitate(
    app: &App,
    endpoint: &str,
    body: Value,
    flag: &str,
) -> Result<Value> {
    let settings = app.x402.as_ref().ok_or_else(rail_unavailable)?;
    let url = format!(
        "{}/{endpoint}",
        settings.facilitator_url.trim_end_matches('/')
    );
    let target = url.clone();
    let outcome = tokio::task::spawn_blocking(move || post_json(&target, &body))
        .await
        .map_err(|e| Error::Internal(format!("facilitator call: {e}")))?;
    match outcome {
        Ok((_, Some(answer))) if answer.get(flag).is_some_and(Value::is_boolean) => Ok(answer),
        Ok((status, _)) if status >= 500 => {
            tracing::warn!(url, status, "x402 facilitator failed");
            Err(Error::BadGateway {
                code: "FACILITATOR_UNAVAILABLE",
                message: format!(
                    "the payment facilitator answered {status} to /{endpoint}; retry later"
                ),
            })
        }
        Ok((status, _)) => {
            tracing::warn!(url, status, "x402 facilitator answer without {flag}");
            Err(Error::BadGateway {
                code: "FACILITATOR_ERROR",
                message: format!(
                    "the payment facilitator gave no usable answer to /{endpoint} (HTTP {status})"
                ),
            })
        }
        Err(error) => {
            tracing::warn!(url, %error, "x402 facilitator unreachable");
            Err(Error::BadGateway {
                code: "FACILITATOR_UNAVAILABLE",
                message: format!(
                    "the payment facilitator could not be reached for /{endpoint}; retry later"
                ),
            })
        }
    }
}

pub(crate) fn text_of(value: &Value, field: &str) -> Option<String> {
    value
        .get(field)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}
