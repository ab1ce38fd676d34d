//! Spending controls: an agent's spending policy (set with its full key) and what it has spent.

use serde_json::Value;

use super::{Access, Field, Input, Kind, Op, Scope, Tool};
use crate::error::{Error, Result};

/// The largest cap, in US cents (ten million dollars).
pub const CAP_MAX: i64 = 1_000_000_000;
/// Most names in one of the policy's lists.
pub const LIST_MAX: usize = 100;

const PER_PURCHASE: Field = Field::both("perPurchaseCents", "per_purchase_cents", Kind::Int(0, CAP_MAX))
    .doc("The most one purchase may cost, in US cents, on any rail (an x402 price counts at its cents value). Absent or null: no cap.");
const DAILY: Field = Field::both("dailyCents", "daily_cents", Kind::Int(0, CAP_MAX)).doc(
    "The most the agent may spend per calendar day (UTC), in US cents. Absent or null: no cap.",
);
const MONTHLY: Field = Field::both("monthlyCents", "monthly_cents", Kind::Int(0, CAP_MAX)).doc(
    "The most the agent may spend per calendar month (UTC), in US cents. Absent or null: no cap.",
);
const RAILS: Field = Field::both(
    "rails",
    "rails",
    Kind::Json(r#"{"type":"array","maxItems":3,"uniqueItems":true,"items":{"type":"string","enum":["checkout","card","x402_usdc_base"]}}"#),
)
.doc("The rails paid purchases may use, as purchases name them (`checkout`, `card`, `x402_usdc_base`). Absent or null: any.");
const CATEGORIES: Field = Field::both(
    "categories",
    "categories",
    Kind::Json(r#"{"type":"array","maxItems":100,"uniqueItems":true,"items":{"type":"string","minLength":1,"maxLength":100}}"#),
)
.doc("Macro-category slugs paid purchases may be in (GET /api/marketplace/categories). A listing passes when its category or its vertical is listed. Absent or null: any.");
const VERTICALS: Field = Field::both(
    "verticals",
    "verticals",
    Kind::Json(r#"{"type":"array","maxItems":100,"uniqueItems":true,"items":{"type":"string","minLength":1,"maxLength":100}}"#),
)
.doc("Vertical slugs paid purchases may be in (GET /api/verticals). Absent or null: any.");
const APPROVAL_THRESHOLD: Field = Field::both(
    "approvalThresholdCents",
    "approval_threshold_cents",
    Kind::Int(0, CAP_MAX),
)
.doc("A purchase costing more than this, in US cents, waits for the owner's approval (202 pending_approval with approvalUrl; on x402, 403 APPROVAL_REQUIRED). Absent or null: none does.");
const APPROVAL_TTL: Field =
    Field::both("approvalTtlHours", "approval_ttl_hours", Kind::Int(1, 720))
        .doc("How long an approval link stays usable, in hours (default 24).");

/// `PUT /api/agents/me/spending-policy` · `set_spending_policy`.
pub static SET_SPENDING_POLICY: Op = Op {
    name: "set_spending_policy",
    fields: &[
        PER_PURCHASE,
        DAILY,
        MONTHLY,
        RAILS,
        CATEGORIES,
        VERTICALS,
        APPROVAL_THRESHOLD,
        APPROVAL_TTL,
    ],
    scope: Some(Scope::Spend),
    tool: Some(Tool::idempotent_write(
        Access::Keyed,
        "Set your spending policy",
        "Replace your spending policy: caps per purchase, per UTC day and per UTC month in US \
         cents across every rail, the rails and categories paid purchases may use, and the \
         approval threshold. A field left out is no cap (or any). Needs the agent's full API key \
         (not an OAuth token). Returns the same as get_spending.",
    )),
};

/// `GET /api/agents/me/spending` · `get_spending`: no arguments.
pub static SPENDING: Op = Op {
    name: "get_spending",
    fields: &[],
    scope: Some(Scope::Read),
    tool: Some(Tool::read(
        Access::Keyed,
        "Your spending",
        "Your spending policy, and what you spent and have left per UTC day and month, with when \
         each window starts over.",
    )),
};

/// A whole spending policy (a PUT replaces the stored one).
#[derive(Debug, Default, Clone)]
pub struct SetPolicy {
    pub per_purchase_cents: Option<i64>,
    pub daily_cents: Option<i64>,
    pub monthly_cents: Option<i64>,
    pub rails: Option<Vec<String>>,
    pub categories: Option<Vec<String>>,
    pub verticals: Option<Vec<String>>,
    pub approval_threshold_cents: Option<i64>,
    pub approval_ttl_hours: Option<i64>,
}

impl SetPolicy {
    /// # Errors
    /// `INVALID_ARGUMENT` naming the field.
    pub fn read(input: &Input) -> Result<SetPolicy> {
        Ok(SetPolicy {
            per_purchase_cents: input.int(&PER_PURCHASE)?,
            daily_cents: input.int(&DAILY)?,
            monthly_cents: input.int(&MONTHLY)?,
            rails: names(input, &RAILS)?,
            categories: names(input, &CATEGORIES)?,
            verticals: names(input, &VERTICALS)?,
            approval_threshold_cents: input.int(&APPROVAL_THRESHOLD)?,
            approval_ttl_hours: input.int(&APPROVAL_TTL)?,
        })
    }
}

/// A list of distinct non-empty names, at most [`LIST_MAX`].
fn names(input: &Input, field: &Field) -> Result<Option<Vec<String>>> {
    let Some(value) = input.json(field)? else {
        return Ok(None);
    };
    let name = input.spelling(field);
    let refuse = || Error::invalid(format!("`{name}` must be an array of distinct names"));
    let Value::Array(items) = value else {
        return Err(refuse());
    };
    if items.len() > LIST_MAX {
        return Err(Error::invalid(format!(
            "`{name}` holds at most {LIST_MAX} names"
        )));
    }
    let mut out: Vec<String> = Vec::with_capacity(items.len());
    for item in items {
        match item {
            Value::String(text)
                if !text.is_empty() && text.len() <= 100 && !out.contains(&text) =>
            {
                out.push(text);
            }
            _ => return Err(refuse()),
        }
    }
    Ok(Some(out))
}

const KEY_LABEL: Field = Field::both("label", "label", Kind::Text(100))
    .doc("A name for the key (which sub-agent holds it).");
const KEY_SCOPES: Field = Field::both(
    "scopes",
    "scopes",
    Kind::Json(r#"{"type":"array","minItems":1,"maxItems":4,"uniqueItems":true,"items":{"type":"string","enum":["read","message","sell","spend"]}}"#),
)
.required()
.doc("What the key may do: `read`, `message`, `sell`, `spend`.");
const KEY_EXPIRES: Field = Field::both("expiresInHours", "expires_in_hours", Kind::Int(1, 8760))
    .doc("The key stops working this many hours after it is minted. Absent: never.");

/// `POST /api/agents/me/keys` · `mint_restricted_key` (the agent's full key only): mints a
/// restricted key.
pub static CREATE_KEY: Op = Op {
    name: "mint_restricted_key",
    fields: &[
        KEY_LABEL,
        KEY_SCOPES,
        Field::both("perPurchaseCents", "per_purchase_cents", Kind::Int(0, CAP_MAX))
            .doc("The most one purchase with this key may cost, in US cents (no higher than the agent's policy). Absent: the agent's cap alone."),
        Field::both("dailyCents", "daily_cents", Kind::Int(0, CAP_MAX))
            .doc("The most this key may spend per UTC day, in US cents (no higher than the agent's policy). Absent: the agent's cap alone."),
        Field::both("monthlyCents", "monthly_cents", Kind::Int(0, CAP_MAX))
            .doc("The most this key may spend per UTC month, in US cents (no higher than the agent's policy). Absent: the agent's cap alone."),
        KEY_EXPIRES,
    ],
    scope: Some(Scope::Spend),
    tool: Some(Tool::write(
        Access::Keyed,
        "Mint a restricted key",
        "Mint a restricted API key for a sub-agent: the same agent, limited to the scopes named \
         (read, message, sell, spend), with its own spending caps (no higher than your policy's) \
         and an optional expiry. The key is in the answer once; store it. Needs the agent's full \
         API key (not a restricted key or an OAuth token).",
    )),
};

/// `GET /api/agents/me/keys` · `list_restricted_keys`: no arguments.
pub static LIST_KEYS: Op = Op {
    name: "list_restricted_keys",
    fields: &[],
    scope: Some(Scope::Read),
    tool: Some(Tool::read(
        Access::Keyed,
        "Your restricted keys",
        "Your restricted keys, newest first, revoked ones too (never the secrets). Needs the \
         agent's full API key.",
    )),
};

const KEY_ID: Field = Field::mcp("key_id", Kind::Text(100))
    .required()
    .doc("The restricted key's id (from list_restricted_keys).");

/// `POST /api/agents/me/keys/{id}/revoke` · `revoke_restricted_key`.
pub static REVOKE_KEY: Op = Op {
    name: "revoke_restricted_key",
    fields: &[KEY_ID],
    scope: Some(Scope::Spend),
    tool: Some(Tool::idempotent_write(
        Access::Keyed,
        "Revoke a restricted key",
        "Revoke one of your restricted keys: it stops working at once; your full key and other \
         keys are untouched. Needs the agent's full API key.",
    )),
};

/// Which restricted key to revoke: REST's path segment, MCP's `key_id`.
///
/// # Errors
/// `INVALID_ARGUMENT`: missing or not a short string.
pub fn key_id(input: &Input, path: Option<&str>) -> Result<String> {
    input.path_id(&KEY_ID, path)
}

/// A restricted key to mint.
#[derive(Debug, Clone)]
pub struct CreateKey {
    pub label: Option<String>,
    /// Scope names, checked by the reader against the four scopes.
    pub scopes: Vec<Scope>,
    pub per_purchase_cents: Option<i64>,
    pub daily_cents: Option<i64>,
    pub monthly_cents: Option<i64>,
    pub expires_in_hours: Option<i64>,
}

impl CreateKey {
    /// # Errors
    /// `INVALID_ARGUMENT` naming the field.
    pub fn read(input: &Input) -> Result<CreateKey> {
        let field = |i: usize| &CREATE_KEY.fields[i];
        let names = names(input, field(1))?.unwrap_or_default();
        let mut scopes = Vec::new();
        for name in &names {
            scopes.push(Scope::named(name).ok_or_else(|| {
                Error::invalid(format!(
                    "`scopes` names {name:?}; scopes are read, message, sell, spend"
                ))
            })?);
        }
        if scopes.is_empty() {
            return Err(Error::invalid("`scopes` must name at least one scope"));
        }
        Ok(CreateKey {
            label: input.text(field(0))?,
            scopes,
            per_purchase_cents: input.int(field(2))?,
            daily_cents: input.int(field(3))?,
            monthly_cents: input.int(field(4))?,
            expires_in_hours: input.int(field(5))?,
        })
    }
}
