//! Commerce operations: buy, read a purchase, rate, and start payout onboarding.

use serde_json::Value;

use super::catalog::LISTING_ID;
use super::{Access, Face, Field, ID_MAX, Input, Kind, Op, Scope, Tool};
use crate::error::{Error, Result};
use crate::service::rail::Rail;

/// The buyer's intended uses accepted for personal health data (also the vocabulary of a
/// consent's `authorizedUses`).
pub const INTENDED_USES: &[&str] = &[
    "academic_research",
    "commercial_research",
    "ai_training",
    "personal_educational",
    "other",
];
/// The buyer attestations personal health data requires, all true.
pub const ATTESTATIONS: &[&str] = &[
    "notForInsurance",
    "notForEmployment",
    "notForDiscrimination",
    "noReidentification",
    "acceptUseTerms",
];

/// Longest rating comment.
pub const COMMENT_MAX: usize = 2000;

const EMAIL: Field = Field::both("email", "email", Kind::Text(254))
    .doc("Optional receipt email.")
    .documented("/components/schemas/PurchaseRequest/properties/email");
const INTENDED_USE: Field =
    Field::both("buyer_intended_use", "buyer_intended_use", Kind::Text(40)).doc(
        "Required for personal health data: one of academic_research, commercial_research, ai_training, personal_educational, other (and one the listing authorizes).",
    );
const ATTESTATION: Field = Field::both(
    "buyer_attestation",
    "buyer_attestation",
    Kind::Flags(ATTESTATIONS),
)
.doc("Required for personal health data: all five must be true.");
const RAIL: Field = Field::rest("rail", Kind::Json(r#"{"type":"string"}"#));

/// `POST /api/marketplace/listings/{id}/purchase` · `buy_data` (the `rail` field, which picks
/// the x402 rail, is REST's: MCP buys on the instance's card rail).
pub static PURCHASE: Op = Op {
    name: "buy_data",
    fields: &[LISTING_ID, EMAIL, INTENDED_USE, ATTESTATION, RAIL],
    scope: Some(Scope::Spend),
    tool: Some(Tool::write(
        Access::Keyed,
        "Buy data",
        "Buy a listing: free is delivered at once; paid returns a checkoutUrl (poll get_purchase). Personal health data needs buyer_intended_use and buyer_attestation.",
    )),
};

/// A purchase request. The listing, the rail asked for and the payment header are read at the
/// edge; the other members are judged where the purchase needs them, so the order of refusals
/// stays that of the sale: their shapes with the email (once the listing is known on the wallet
/// rail), whether the intended use and the attestations are met only for personal health data.
#[derive(Debug)]
pub struct Purchase {
    /// REST's path segment, MCP's `listing_id`.
    pub listing_id: String,
    /// REST's `rail` member (MCP buys on the instance's card rail).
    pub rail: Option<RailChoice>,
    /// REST's x402 payment header of a retry.
    pub payment: Option<PaymentHeader>,
    pub email: Result<Option<String>>,
    pub intended_use: Result<Option<String>>,
    pub attestation: Result<Option<Value>>,
    /// The id the purchase is to have: an order's (an A2A task names its purchase before it is
    /// made); `None` (REST, MCP) for a new one.
    pub purchase_id: Option<String>,
}

impl Purchase {
    /// Reads a purchase: `path` is REST's path segment (`None` on MCP, where `listing_id` is an
    /// argument), `payment` the REST request's payment header. Unknown members are judged by
    /// the caller ([`Input::check_members`]) once the buyer is known.
    ///
    /// # Errors
    /// `INVALID_ARGUMENT` for a missing `listing_id` or an unknown `rail`.
    pub fn read(
        input: &Input,
        path: Option<&str>,
        payment: Option<PaymentHeader>,
    ) -> Result<Purchase> {
        Ok(Purchase {
            listing_id: input.path_id(&LISTING_ID, path)?,
            rail: RailChoice::read(input.raw(&RAIL))?,
            payment,
            email: input.text(&EMAIL),
            intended_use: input.text(&INTENDED_USE),
            attestation: input.flags(&ATTESTATION),
            purchase_id: None,
        })
    }
}

/// The rail a purchase request names (REST's `rail`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RailChoice {
    /// `checkout` or `card`: the instance's card rail, whichever it is.
    Card,
    /// `x402_usdc_base`: the wallet rail.
    Wallet,
}

impl RailChoice {
    /// Reads the `rail` member: absent or null is `None`.
    ///
    /// # Errors
    /// `INVALID_ARGUMENT` for any other value than the rails' request names.
    pub fn read(value: Option<&Value>) -> Result<Option<RailChoice>> {
        Ok(Rail::parse_request(value)?.map(|rail| match rail {
            Rail::Wallet => RailChoice::Wallet,
            Rail::Free | Rail::Sandbox | Rail::Card => RailChoice::Card,
        }))
    }
}

/// The x402 payment header of a retry, as sent.
#[derive(Clone, Debug)]
pub enum PaymentHeader {
    /// `PAYMENT-SIGNATURE` (x402 v2).
    V2(String),
    /// `X-PAYMENT` (x402 v1).
    V1(String),
}

impl PaymentHeader {
    /// The payment header among the request's, if any.
    ///
    /// # Errors
    /// `INVALID_PAYMENT` (400) when both are sent.
    pub fn from_headers(v2: Option<&str>, v1: Option<&str>) -> Result<Option<PaymentHeader>> {
        match (v2, v1) {
            (Some(_), Some(_)) => Err(Error::BadRequest {
                code: "INVALID_PAYMENT",
                message: "send one payment header: PAYMENT-SIGNATURE (x402 v2) or X-PAYMENT (x402 v1), not both".into(),
            }),
            (Some(text), None) => Ok(Some(PaymentHeader::V2(text.to_owned()))),
            (None, Some(text)) => Ok(Some(PaymentHeader::V1(text.to_owned()))),
            (None, None) => Ok(None),
        }
    }

    /// The x402 version the header speaks.
    pub fn version(&self) -> u8 {
        match self {
            PaymentHeader::V2(_) => 2,
            PaymentHeader::V1(_) => 1,
        }
    }

    /// The header's name.
    pub fn name(&self) -> &'static str {
        match self {
            PaymentHeader::V2(_) => "PAYMENT-SIGNATURE",
            PaymentHeader::V1(_) => "X-PAYMENT",
        }
    }
}

/// `GET /api/marketplace/purchases/{id}` (query) · `get_purchase`. The purchase token is REST's
/// way for an x402 buyer without a key.
pub static GET_PURCHASE: Op = Op {
    name: "get_purchase",
    fields: &[
        Field::mcp("purchase_id", Kind::Text(ID_MAX))
            .required()
            .doc("The purchase id."),
        Field::rest("purchase_token", Kind::Verbatim),
    ],
    scope: Some(Scope::Read),
    tool: Some(Tool::read(
        Access::Keyed,
        "Get a purchase",
        "One of your purchases and its status (poll until delivered).",
    )),
};

/// A read of one purchase.
#[derive(Debug)]
pub struct GetPurchase {
    /// REST's path segment, MCP's `purchase_id`.
    pub purchase_id: String,
}

impl GetPurchase {
    /// Reads the purchase id: `path` is REST's path segment (`None` on MCP, where it is an
    /// argument).
    ///
    /// # Errors
    /// `INVALID_ARGUMENT`: missing or not a short string.
    pub fn read(input: &Input, path: Option<&str>) -> Result<GetPurchase> {
        Ok(GetPurchase {
            purchase_id: input.path_id(&GET_PURCHASE.fields[0], path)?,
        })
    }
}

/// The x402 purchase token of a REST read, if given.
///
/// # Errors
/// Not a short string.
pub fn purchase_token(input: &Input) -> Result<Option<String>> {
    input.verbatim(&GET_PURCHASE.fields[1])
}

const PURCHASE_ID: Field = Field::both("purchase_id", "purchase_id", Kind::Text(ID_MAX))
    .required()
    .doc("Your delivered purchase of this listing.");
const RATING: Field = Field::both("rating", "rating", Kind::Int(1, 5))
    .required()
    .doc("1 to 5.");
const COMMENT: Field = Field::both("comment", "comment", Kind::Paragraph(COMMENT_MAX))
    .doc("Optional comment, shown with the rating.");

/// `POST /api/marketplace/listings/{id}/rate` · `rate_listing`.
pub static RATE: Op = Op {
    name: "rate_listing",
    fields: &[LISTING_ID, PURCHASE_ID, RATING, COMMENT],
    scope: Some(Scope::Message),
    tool: Some(Tool::write(
        Access::Keyed,
        "Rate a listing",
        "Rate a listing you bought, once per delivered purchase: rating 1 to 5, optional comment.",
    )),
};

/// A rating of a delivered purchase.
#[derive(Debug)]
pub struct Rate {
    /// REST's path segment, MCP's `listing_id`.
    pub listing_id: String,
    pub purchase_id: String,
    pub rating: i64,
    pub comment: Option<String>,
}

impl Rate {
    /// Reads a rating: `path` is REST's path segment (`None` on MCP, where `listing_id` is an
    /// argument, judged after the others).
    ///
    /// # Errors
    /// `INVALID_ARGUMENT` naming the field.
    pub fn read(input: &Input, path: Option<&str>) -> Result<Rate> {
        Ok(Rate {
            purchase_id: input.req_text(&PURCHASE_ID)?,
            rating: input.int(&RATING)?.ok_or_else(|| {
                Error::invalid(format!(
                    "`{}` is required (an integer from 1 to 5)",
                    input.spelling(&RATING)
                ))
            })?,
            comment: input.paragraph(&COMMENT)?,
            // Last, as the refusals have always come.
            listing_id: input.path_id(&LISTING_ID, path)?,
        })
    }
}

const SELLER_NAME: Field = Field::both("name", "name", Kind::Text(200))
    .required_on(Face::Mcp)
    .doc("The seller name the payment provider's onboarding starts with (Stripe: the business name).");
const SELLER_EMAIL: Field = Field::both("email", "email", Kind::Text(254))
    .doc("Optional payout contact email the onboarding starts with (Stripe: the account email).")
    .documented("/components/schemas/BecomeSellerRequest/properties/email");

/// `POST /api/sell/register` · `become_seller`.
pub static BECOME_SELLER: Op = Op {
    name: "become_seller",
    fields: &[SELLER_NAME, SELLER_EMAIL],
    scope: Some(Scope::Sell),
    tool: Some(Tool::idempotent_write(
        Access::Keyed,
        "Become a seller",
        "Start payout onboarding: returns the payment-connect onboarding link and status (open onboardingUrl, sandbox: one click).",
    )),
};

/// Payout onboarding, with what the provider's form may start with.
#[derive(Debug, Default)]
pub struct BecomeSeller {
    pub name: Option<String>,
    pub email: Option<String>,
}

impl BecomeSeller {
    /// # Errors
    /// `INVALID_ARGUMENT` naming the field.
    pub fn read(input: &Input) -> Result<BecomeSeller> {
        Ok(BecomeSeller {
            name: input.text(&SELLER_NAME)?,
            email: input.text(&SELLER_EMAIL)?,
        })
    }
}

/// `GET /api/sell/dashboard` · `seller_dashboard`: no arguments.
pub static SELLER_DASHBOARD: Op = Op {
    name: "seller_dashboard",
    fields: &[],
    scope: Some(Scope::Sell),
    tool: Some(Tool::read(
        Access::Keyed,
        "Seller dashboard",
        "Your listings (inactive too), sales, escrow and ratings.",
    )),
};

/// `POST /api/marketplace/purchases/{id}/ship` `{carrier, tracking}` (the seller, REST only).
pub static SHIP: Op = Op {
    name: "ship",
    fields: &[
        Field::rest("carrier", Kind::Text(100)).required(),
        Field::rest("tracking", Kind::Text(200)).required(),
    ],
    scope: Some(Scope::Sell),
    tool: None,
};

/// A physical order's shipment.
#[derive(Debug)]
pub struct Ship {
    /// The path segment.
    pub purchase_id: String,
    pub carrier: String,
    pub tracking: String,
}

impl Ship {
    /// Reads a shipment of the purchase `path` names.
    ///
    /// # Errors
    /// `INVALID_ARGUMENT` naming the field.
    pub fn read(input: &Input, path: &str) -> Result<Ship> {
        Ok(Ship {
            purchase_id: path.to_owned(),
            carrier: input.req_text(&SHIP.fields[0])?,
            tracking: input.req_text(&SHIP.fields[1])?,
        })
    }
}

/// `POST /api/sandbox/clock` `{advanceSeconds}` or `{reset: true}` (operator, sandbox rail).
pub static ADVANCE_CLOCK: Op = Op {
    name: "advance_clock",
    fields: &[
        Field::rest("advanceSeconds", Kind::Int(1, 10 * 365 * 24 * 3600)),
        Field::rest("reset", Kind::Bool),
    ],
    scope: None,
    tool: None,
};

/// What to do with the sandbox clock.
#[derive(Debug, PartialEq, Eq)]
pub enum ClockChange {
    /// Move it forward by this many seconds.
    Advance(i64),
    /// Return it to real time.
    Reset,
}

/// Reads a clock change: exactly one of `advanceSeconds` or `reset: true`.
///
/// # Errors
/// `INVALID_ARGUMENT`.
pub fn clock_change(input: &Input) -> Result<ClockChange> {
    let advance = input.int(&ADVANCE_CLOCK.fields[0])?;
    let reset = input.bool(&ADVANCE_CLOCK.fields[1])?;
    match (advance, reset) {
        (Some(seconds), None | Some(false)) => Ok(ClockChange::Advance(seconds)),
        (None, Some(true)) => Ok(ClockChange::Reset),
        (Some(_), Some(true)) => Err(Error::invalid(
            "give either `advanceSeconds` or `reset`, not both",
        )),
        (None, _) => Err(Error::invalid(
            "`advanceSeconds` is required (a positive integer), or `reset: true` to return to real time",
        )),
    }
}

/// The filters of x402 Bazaar discovery (`GET /discovery/resources`, `GET /discovery/search`),
/// read from the query in x402's camelCase names.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DiscoveryFilters {
    /// `type`: `http` or `mcp`.
    pub kind: Option<String>,
    /// `payTo`: an address, compared ignoring case.
    pub pay_to: Option<String>,
    /// `scheme`: an x402 scheme name (`exact`).
    pub scheme: Option<String>,
    /// `network`: a CAIP-2 id (`eip155:8453`).
    pub network: Option<String>,
    /// `extensions`: extension names, comma-separated; each must be a key of an item's
    /// `extensions`.
    pub extensions: Vec<String>,
    /// Query parameters discovery does not know: named in `unappliedFilters`.
    pub unknown: Vec<String>,
}

/// `GET /discovery/resources`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListResources {
    pub filters: DiscoveryFilters,
    pub limit: usize,
    pub offset: usize,
}

/// `GET /discovery/search`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SearchResources {
    /// The words to find, as sent.
    pub query: String,
    pub filters: DiscoveryFilters,
    pub limit: usize,
    /// Where the page starts, decoded from the opaque `cursor`.
    pub offset: usize,
}

/// Discovery's page size: default and largest.
pub const DISCOVERY_LIMIT: i64 = 20;
pub const DISCOVERY_LIMIT_MAX: i64 = 100;
/// Largest `offset` (and cursor position).
const DISCOVERY_OFFSET_MAX: i64 = 2_147_483_647;
/// Longest search `query`, in characters.
pub const DISCOVERY_QUERY_MAX: usize = 200;
/// What an opaque search cursor encodes before base64url.
const CURSOR_PREFIX: &str = "bourse-search:";

impl ListResources {
    /// Reads the query of `GET /discovery/resources`.
    ///
    /// # Errors
    /// `INVALID_ARGUMENT` for a malformed value (a bad `limit` or `offset`, an unknown `type`, a
    /// `network` that is not CAIP-2, a malformed `payTo`, `scheme` or extension name).
    pub fn read(query: &[(String, String)]) -> Result<ListResources> {
        Ok(ListResources {
            filters: DiscoveryFilters::read(query, &["limit", "offset"])?,
            limit: integer(query, "limit", DISCOVERY_LIMIT, 1, DISCOVERY_LIMIT_MAX)?,
            offset: integer(query, "offset", 0, 0, DISCOVERY_OFFSET_MAX)?,
        })
    }
}

impl SearchResources {
    /// Reads the query of `GET /discovery/search`.
    ///
    /// # Errors
    /// `INVALID_ARGUMENT` for a missing, empty or too long `query`, a bad `limit` or `cursor`,
    /// or a malformed filter.
    pub fn read(query: &[(String, String)]) -> Result<SearchResources> {
        let text = value(query, "query")
            .filter(|text| !text.is_empty())
            .ok_or_else(|| Error::invalid("`query` is required: the words to search for"))?;
        if text.chars().count() > DISCOVERY_QUERY_MAX {
            return Err(Error::invalid(format!(
                "`query` must be at most {DISCOVERY_QUERY_MAX} characters"
            )));
        }
        let offset = match value(query, "cursor") {
            None => 0,
            Some(cursor) => decode_cursor(cursor)?,
        };
        Ok(SearchResources {
            query: text.to_owned(),
            filters: DiscoveryFilters::read(query, &["query", "limit", "cursor"])?,
            limit: integer(query, "limit", DISCOVERY_LIMIT, 1, DISCOVERY_LIMIT_MAX)?,
            offset,
        })
    }
}

/// The opaque `cursor` of the search page that starts at `offset`.
pub fn search_cursor(offset: usize) -> String {
    crate::crypto::b64url(format!("{CURSOR_PREFIX}{offset}").as_bytes())
}

fn decode_cursor(cursor: &str) -> Result<usize> {
    let refused = || Error::invalid("`cursor` is not one this server gave: start again without it");
    let bytes = crate::crypto::b64url_decode(cursor).map_err(|_| refused())?;
    let text = String::from_utf8(bytes).map_err(|_| refused())?;
    text.strip_prefix(CURSOR_PREFIX)
        .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|n| n.parse::<i64>().ok())
        .filter(|n| *n <= DISCOVERY_OFFSET_MAX)
        .and_then(|n| usize::try_from(n).ok())
        .ok_or_else(refused)
}

impl DiscoveryFilters {
    /// Reads the filters; `known` are the operation's other parameters.
    fn read(query: &[(String, String)], known: &[&str]) -> Result<DiscoveryFilters> {
        let kind = checked(
            query,
            "type",
            |t| t == "http" || t == "mcp",
            "`http` or `mcp`",
        )?;
        let network = checked(
            query,
            "network",
            is_caip2,
            "a CAIP-2 identifier like eip155:8453",
        )?;
        let scheme = checked(
            query,
            "scheme",
            is_name,
            "an x402 scheme name like exact (1 to 64 letters, digits, `-` or `_`)",
        )?;
        let pay_to = checked(
            query,
            "payTo",
            |p| (1..=128).contains(&p.len()) && p.bytes().all(|b| b.is_ascii_graphic()),
            "an address: 1 to 128 printable ASCII characters without spaces",
        )?;
        let extensions = checked(
            query,
            "extensions",
            |names| names.split(',').all(is_name),
            "extension names (letters, digits, `-` or `_`) separated by commas",
        )?
        .map(|names| names.split(',').map(str::to_owned).collect())
        .unwrap_or_default();
        const FILTERS: [&str; 5] = ["type", "payTo", "scheme", "network", "extensions"];
        let mut unknown: Vec<String> = Vec::new();
        for (name, _) in query {
            if !known.contains(&name.as_str())
                && !FILTERS.contains(&name.as_str())
                && !unknown.contains(name)
            {
                unknown.push(name.clone());
            }
        }
        Ok(DiscoveryFilters {
            kind,
            pay_to,
            scheme,
            network,
            extensions,
            unknown,
        })
    }
}

/// The first value of `name`, as sent.
fn value<'q>(query: &'q [(String, String)], name: &str) -> Option<&'q str> {
    query
        .iter()
        .find(|(key, _)| key == name)
        .map(|(_, value)| value.as_str())
}

/// A string parameter that must pass `ok`; the error says it must be `what`.
fn checked(
    query: &[(String, String)],
    name: &str,
    ok: impl Fn(&str) -> bool,
    what: &str,
) -> Result<Option<String>> {
    match value(query, name) {
        None => Ok(None),
        Some(text) if ok(text) => Ok(Some(text.to_owned())),
        Some(text) => Err(Error::invalid(format!(
            "`{name}` must be {what}; got {text:?}"
        ))),
    }
}

/// An integer parameter in `min..=max` (integral decimals, as every integer query parameter
/// of bourse), `default` when absent or empty.
fn integer(
    query: &[(String, String)],
    name: &str,
    default: i64,
    min: i64,
    max: i64,
) -> Result<usize> {
    let number = match value(query, name) {
        None | Some("") => default,
        Some(text) => crate::args::parse_integral(text)
            .filter(|n| (min..=max).contains(n))
            .ok_or_else(|| {
                Error::invalid(format!("`{name}` must be an integer from {min} to {max}"))
            })?,
    };
    usize::try_from(number).map_err(|_| Error::invalid(format!("`{name}` is out of range")))
}

/// CAIP-2: `namespace:reference`, namespace `[-a-z0-9]{3,8}`, reference `[-_a-zA-Z0-9]{1,32}`.
fn is_caip2(text: &str) -> bool {
    let Some((namespace, reference)) = text.split_once(':') else {
        return false;
    };
    (3..=8).contains(&namespace.len())
        && namespace
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && (1..=32).contains(&reference.len())
        && reference
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// A scheme or extension name: 1–64 letters, digits, `-` or `_`.
fn is_name(text: &str) -> bool {
    (1..=64).contains(&text.len())
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

#[cfg(test)]
mod tests {
    use serde_json::{Map, json};

    use super::*;

    fn input(face: Face, op: &'static Op, value: Value) -> Input {
        let Value::Object(map) = value else {
            unreachable!("an object")
        };
        Input::new(face, op, map).unwrap()
    }

    #[test]
    fn the_rail_is_a_closed_choice_read_at_the_edge() {
        let read = |v: Value| RailChoice::read(Some(&v)).map_err(|e| e.to_string());
        assert_eq!(RailChoice::read(None).unwrap(), None);
        assert_eq!(read(Value::Null), Ok(None));
        assert_eq!(read(json!("x402_usdc_base")), Ok(Some(RailChoice::Wallet)));
        // Both names of the card rail ask for the instance's, whichever it is.
        assert_eq!(read(json!("checkout")), Ok(Some(RailChoice::Card)));
        assert_eq!(read(json!("card")), Ok(Some(RailChoice::Card)));
        for refused in [json!("free"), json!("wallet"), json!(7), json!({})] {
            assert!(read(refused).unwrap_err().contains("`rail` must be one of"));
        }
    }

    #[test]
    fn one_payment_header_at_most() {
        assert!(PaymentHeader::from_headers(None, None).unwrap().is_none());
        let v2 = PaymentHeader::from_headers(Some("a"), None)
            .unwrap()
            .unwrap();
        assert_eq!((v2.version(), v2.name()), (2, "PAYMENT-SIGNATURE"));
        let v1 = PaymentHeader::from_headers(None, Some("b"))
            .unwrap()
            .unwrap();
        assert_eq!((v1.version(), v1.name()), (1, "X-PAYMENT"));
        let both = PaymentHeader::from_headers(Some("a"), Some("b")).unwrap_err();
        assert_eq!(both.code(), "INVALID_PAYMENT");
    }

    #[test]
    fn both_faces_fill_the_same_listing_id() {
        let rest = Input::unchecked(
            Face::Rest,
            &PURCHASE,
            crate::args::Args::from_value(json!({"rail": "card", "email": "a@b.example"})).unwrap(),
        );
        let bought = Purchase::read(&rest, Some("L-1"), None).unwrap();
        assert_eq!(bought.listing_id, "L-1");
        assert_eq!(bought.rail, Some(RailChoice::Card));
        assert_eq!(bought.email.unwrap().as_deref(), Some("a@b.example"));

        let mcp = input(Face::Mcp, &PURCHASE, json!({"listing_id": "L-2"}));
        let bought = Purchase::read(&mcp, None, None).unwrap();
        assert_eq!((bought.listing_id.as_str(), bought.rail), ("L-2", None));
        let missing = input(Face::Mcp, &PURCHASE, json!({}));
        assert!(Purchase::read(&missing, None, None).is_err());

        let rated = input(
            Face::Mcp,
            &RATE,
            json!({"listing_id": "L-3", "purchase_id": "P-1", "rating": 4}),
        );
        let rated = Rate::read(&rated, None).unwrap();
        assert_eq!(
            (rated.listing_id.as_str(), rated.purchase_id.as_str()),
            ("L-3", "P-1")
        );
        let rest = Input::new(
            Face::Rest,
            &RATE,
            Map::from_iter([
                ("purchase_id".into(), json!("P-2")),
                ("rating".into(), json!(5)),
            ]),
        )
        .unwrap();
        assert_eq!(Rate::read(&rest, Some("L-4")).unwrap().listing_id, "L-4");
        // On MCP the listing id is judged after the other members, as it always was.
        let neither = input(Face::Mcp, &RATE, json!({"rating": 5}));
        assert!(
            Rate::read(&neither, None)
                .unwrap_err()
                .to_string()
                .contains("purchase_id")
        );

        let read = input(Face::Mcp, &GET_PURCHASE, json!({"purchase_id": "P-3"}));
        assert_eq!(GetPurchase::read(&read, None).unwrap().purchase_id, "P-3");
    }

    fn query(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn discovery_reads_its_filters_and_refuses_malformed_values() {
        let read = ListResources::read(&query(&[
            ("type", "http"),
            ("network", "eip155:8453"),
            ("payTo", "0xAB"),
            ("extensions", "bazaar,bourse"),
            ("limit", "5.0"),
            ("offset", ""),
            ("colour", "red"),
        ]))
        .unwrap();
        assert_eq!((read.limit, read.offset), (5, 0));
        assert_eq!(read.filters.extensions, ["bazaar", "bourse"]);
        assert_eq!(read.filters.unknown, ["colour"]);
        for bad in [
            ("limit", "0"),
            ("limit", "101"),
            ("offset", "-1"),
            ("type", "ftp"),
            ("network", "!!!"),
            ("network", "base"),
            ("scheme", ""),
            ("payTo", "a b"),
            ("extensions", "bazaar,"),
        ] {
            assert!(ListResources::read(&query(&[bad])).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn search_needs_a_query_and_takes_only_its_own_cursors() {
        assert!(SearchResources::read(&query(&[])).is_err());
        assert!(SearchResources::read(&query(&[("query", "")])).is_err());
        let first = SearchResources::read(&query(&[("query", " port ")])).unwrap();
        assert_eq!((first.query.as_str(), first.offset), (" port ", 0));
        let cursor = search_cursor(40);
        let next = SearchResources::read(&query(&[("query", "port"), ("cursor", &cursor)]));
        assert_eq!(next.unwrap().offset, 40);
        for bad in ["", "abc", &crate::crypto::b64url(b"bourse-search:x")] {
            assert!(
                SearchResources::read(&query(&[("query", "port"), ("cursor", bad)])).is_err(),
                "{bad}"
            );
        }
        // `offset` is not search's: it is named, not applied.
        let named = SearchResources::read(&query(&[("query", "port"), ("offset", "3")]));
        assert_eq!(named.unwrap().filters.unknown, ["offset"]);
    }
}
