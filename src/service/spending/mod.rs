//! Spending controls: an agent's spending policy (caps per purchase, per UTC calendar day and
//! month in US cents across every rail, the rails and categories paid purchases may use, an
//! approval threshold), set with the agent's full key, and its enforcement.
//!
//! The policy is enforced by [`check`] inside the writer's transaction that opens a purchase
//! (`commerce::settlement`), on every rail, so purchases are judged one after the other and
//! concurrent ones can never pass a cap together. Money counts from the moment a purchase is
//! opened (an open checkout, and a purchase waiting for approval, hold their amount) and is
//! given back when the purchase is cancelled, denied, expires unpaid or is refunded
//! (`store::spending::spent_in_windows`). Above the approval threshold a purchase waits for the
//! owner's decision ([`approvals`]).

use jiff::{Timestamp, ToSpan, tz::TimeZone};
use serde::Serialize;

use crate::clock::rfc3339;
use crate::error::{Error, Result, SpendLimit};
use crate::request::spending::SetPolicy;
use crate::service::App;
use crate::service::rail::Rail;
use crate::store::agents::AgentRow;
use crate::store::listings::ListingRow;
use crate::store::spending::{self as store, PolicyRow};

pub mod approvals;

/// How long an approval link stays usable unless the policy says otherwise.
pub const DEFAULT_APPROVAL_TTL_HOURS: i64 = 24;

/// The rails a policy may name: those that take money, as purchases name them.
pub const RAILS: [Rail; 3] = [Rail::Sandbox, Rail::Card, Rail::Wallet];

/// A spending policy as shown.
#[derive(Clone, Debug, Default, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Policy {
    pub per_purchase_cents: Option<i64>,
    pub daily_cents: Option<i64>,
    pub monthly_cents: Option<i64>,
    pub rails: Option<Vec<String>>,
    pub categories: Option<Vec<String>>,
    pub verticals: Option<Vec<String>>,
    pub approval_threshold_cents: Option<i64>,
    pub approval_ttl_hours: i64,
    /// When it was last set; `None` for an agent that never set one (no limits).
    pub updated_at: Option<String>,
}

impl Policy {
    fn from_row(row: Option<PolicyRow>) -> Policy {
        let Some(row) = row else {
            return Policy {
                approval_ttl_hours: DEFAULT_APPROVAL_TTL_HOURS,
                ..Policy::default()
            };
        };
        let list = |text: Option<String>| -> Option<Vec<String>> {
            text.and_then(|text| serde_json::from_str(&text).ok())
        };
        Policy {
            per_purchase_cents: row.per_purchase_cents,
            daily_cents: row.daily_cents,
            monthly_cents: row.monthly_cents,
            rails: list(row.rails),
            categories: list(row.categories),
            verticals: list(row.verticals),
            approval_threshold_cents: row.approval_threshold_cents,
            approval_ttl_hours: row
                .approval_ttl_secs
                .map_or(DEFAULT_APPROVAL_TTL_HOURS, |secs| secs / 3600),
            updated_at: Some(row.updated_at),
        }
    }
}

/// One window of a cap as shown: the cap, what was spent in it and what is left, and when it
/// starts over.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Window {
    pub cap_cents: Option<i64>,
    pub spent_cents: i64,
    /// `None` without a cap.
    pub left_cents: Option<i64>,
    pub starts_at: String,
    pub resets_at: String,
}

/// `GET /api/agents/me/spending` (and the answer of a policy change).
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Spending {
    pub policy: Policy,
    pub daily: Window,
    pub monthly: Window,
    /// Purchases waiting for the owner's approval.
    pub pending_approvals: Vec<approvals::OpenApproval>,
}

/// The start of the UTC day and month holding `now`, and of the next ones.
struct Windows {
    day: (String, String),
    month: (String, String),
}

fn windows(now: &str) -> Result<Windows> {
    let at: Timestamp = now
        .parse()
        .map_err(|e| Error::Internal(format!("clock reading {now:?}: {e}")))?;
    let zoned = at.to_zoned(TimeZone::UTC);
    let bad = |e: jiff::Error| Error::Internal(format!("calendar: {e}"));
    let day = zoned.start_of_day().map_err(bad)?;
    let next_day = day.checked_add(1.day()).map_err(bad)?;
    let month = zoned
        .first_of_month()
        .map_err(bad)?
        .start_of_day()
        .map_err(bad)?;
    let next_month = month.checked_add(1.month()).map_err(bad)?;
    Ok(Windows {
        day: (rfc3339(day.timestamp()), rfc3339(next_day.timestamp())),
        month: (rfc3339(month.timestamp()), rfc3339(next_month.timestamp())),
    })
}

/// `PUT /api/agents/me/spending-policy`: replaces the agent's policy whole.
///
/// # Errors
/// `INVALID_ARGUMENT` for a rail that does not exist; `UNKNOWN_CATEGORY`, `UNKNOWN_VERTICAL`
/// (422) for a slug the taxonomy does not know; database failure.
pub async fn set_policy(app: &App, agent: &AgentRow, request: SetPolicy) -> Result<Spending> {
    if agent.restricted.is_some() {
        return Err(Error::Forbidden {
            code: "INSUFFICIENT_SCOPE",
            message: "the spending policy is changed with the agent's full API key only".into(),
        });
    }
    if let Some(rails) = &request.rails
        && let Some(unknown) = rails
            .iter()
            .find(|name| !RAILS.iter().any(|rail| rail.name() == name.as_str()))
    {
        return Err(Error::invalid(format!(
            "`rails` names {unknown:?}, which is not a rail; rails are {}",
            RAILS.map(Rail::name).join(", ")
        )));
    }
    if let Some(unknown) = request
        .categories
        .iter()
        .flatten()
        .find(|slug| app.taxonomy.category(slug).is_none())
    {
        return Err(Error::Unprocessable {
            code: "UNKNOWN_CATEGORY",
            message: format!(
                "`categories` names {unknown:?}, which is not a macro-category (GET /api/marketplace/categories)"
            ),
        });
    }
    if let Some(unknown) = request
        .verticals
        .iter()
        .flatten()
        .find(|slug| app.taxonomy.vertical(slug).is_none())
    {
        return Err(Error::Unprocessable {
            code: "UNKNOWN_VERTICAL",
            message: format!(
                "`verticals` names {unknown:?}, which is not a vertical (GET /api/verticals)"
            ),
        });
    }
    let list = |names: &Option<Vec<String>>| {
        names
            .as_ref()
            .map(|names| serde_json::Value::from(names.clone()).to_string())
    };
    let row = PolicyRow {
        agent_id: agent.id.clone(),
        per_purchase_cents: request.per_purchase_cents,
        daily_cents: request.daily_cents,
        monthly_cents: request.monthly_cents,
        rails: list(&request.rails),
        categories: list(&request.categories),
        verticals: list(&request.verticals),
        approval_threshold_cents: request.approval_threshold_cents,
        approval_ttl_secs: request.approval_ttl_hours.map(|hours| hours * 3600),
        updated_at: app.now(),
    };
    app.store.write(move |tx| store::upsert(tx, &row)).await?;
    spending(app, agent).await
}

/// `GET /api/agents/me/spending`: the policy, and what was spent and is left per window.
///
/// # Errors
/// Database failure.
pub async fn spending(app: &App, agent: &AgentRow) -> Result<Spending> {
    let (id, now) = (agent.id.clone(), app.now());
    app.store
        .read(move |conn| {
            let policy = Policy::from_row(store::find(conn, &id)?);
            let windows = windows(&now)?;
            let (today, this_month) =
                store::spent_in_windows(conn, &id, &windows.day.0, &windows.month.0, &now)?;
            let window =
                |cap: Option<i64>, spent: i64, (starts_at, resets_at): (String, String)| Window {
                    cap_cents: cap,
                    spent_cents: spent,
                    left_cents: cap.map(|cap| (cap - spent).max(0)),
                    starts_at,
                    resets_at,
                };
            Ok(Spending {
                daily: window(policy.daily_cents, today, windows.day),
                monthly: window(policy.monthly_cents, this_month, windows.month),
                policy,
                pending_approvals: approvals::open_for(conn, &id, &now)?,
            })
        })
        .await
}

/// Judges a purchase of `amount_cents` of `listing` on `rail` by `buyer_id` against the buyer's
/// policy, inside the writer's transaction that opens it (after expired checkouts were marked).
/// Free purchases spend nothing and pass.
///
/// # Errors
/// `SPEND_LIMIT_EXCEEDED`, `RAIL_NOT_ALLOWED`, `CATEGORY_NOT_ALLOWED`, `APPROVAL_REQUIRED`
/// (403, x402 only: elsewhere a purchase above the threshold waits for approval); database
/// failure.
pub fn check(
    tx: &rusqlite::Connection,
    buyer: &Buyer<'_>,
    rail: &str,
    listing: &ListingRow,
    amount_cents: i64,
    now: &str,
) -> Result<Verdict> {
    if amount_cents <= 0 {
        return Ok(Verdict::Pass);
    }
    if let Some(key_id) = buyer.key_id {
        check_key(tx, key_id, amount_cents, now)?;
    }
    if let Some(grant_id) = buyer.grant_id {
        check_grant(tx, grant_id, amount_cents, now)?;
    }
    let buyer_id = buyer.agent_id;
    let Some(row) = store::find(tx, buyer_id)? else {
        return Ok(Verdict::Pass);
    };
    let policy = Policy::from_row(Some(row));
    if let Some(rails) = &policy.rails
        && !rails.iter().any(|name| name == rail)
    {
        return Err(Error::SpendRefused {
            code: "RAIL_NOT_ALLOWED",
            message: format!(
                "your spending policy allows paid purchases on {} only, not on `{rail}`",
                names(rails)
            ),
            limit: None,
        });
    }
    let by_category = policy
        .categories
        .as_ref()
        .map(|slugs| slugs.contains(&listing.category));
    let by_vertical = policy
        .verticals
        .as_ref()
        .map(|slugs| slugs.contains(&listing.vertical_slug));
    if let (Some(false), None) | (None, Some(false)) | (Some(false), Some(false)) =
        (by_category, by_vertical)
    {
        return Err(Error::SpendRefused {
            code: "CATEGORY_NOT_ALLOWED",
            message: format!(
                "your spending policy does not allow purchases in category `{}`, vertical `{}`",
                listing.category, listing.vertical_slug
            ),
            limit: None,
        });
    }
    if let Some(cap) = policy.per_purchase_cents
        && amount_cents > cap
    {
        return Err(over(
            "per_purchase",
            cap,
            cap,
            amount_cents,
            None,
            "a purchase",
        ));
    }
    let windows = windows(now)?;
    let (spent_today, spent_this_month) =
        if policy.daily_cents.is_some() || policy.monthly_cents.is_some() {
            store::spent_in_windows(tx, buyer_id, &windows.day.0, &windows.month.0, now)?
        } else {
            (0, 0)
        };
    for (name, cap, spent, resets_at, what) in [
        (
            "daily",
            policy.daily_cents,
            spent_today,
            windows.day.1,
            "today (UTC)",
        ),
        (
            "monthly",
            policy.monthly_cents,
            spent_this_month,
            windows.month.1,
            "this month (UTC)",
        ),
    ] {
        let Some(cap) = cap else { continue };
        if spent + amount_cents > cap {
            let left = (cap - spent).max(0);
            return Err(over(name, cap, left, amount_cents, Some(resets_at), what));
        }
    }
    // Above the threshold the owner decides; the caps were judged first, so an approval is
    // asked only for a purchase they allow. x402 brings its payment with the request, so there
    // is nothing to hold while the owner decides: it is refused there.
    if let Some(threshold) = policy.approval_threshold_cents
        && amount_cents > threshold
    {
        if rail == Rail::Wallet.name() {
            return Err(Error::SpendRefused {
                code: "APPROVAL_REQUIRED",
                message: format!(
                    "this purchase costs {amount_cents} cents, above your approval threshold of {threshold} cents; an x402 payment comes with the request, so it cannot wait for the owner's approval: buy on the card rail (with your API key), or raise the threshold"
                ),
                limit: None,
            });
        }
        return Ok(Verdict::Approval {
            ttl_secs: policy.approval_ttl_hours * 3600,
        });
    }
    Ok(Verdict::Pass)
}

/// What [`check`] decided about a purchase the policy allows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// It opens as usual.
    Pass,
    /// It is above the approval threshold: it opens in `pending_approval` and waits up to
    /// `ttl_secs` for the owner's decision.
    Approval { ttl_secs: i64 },
}

/// Who is buying: the agent, and the restricted key it used (`None` for its full key).
pub struct Buyer<'a> {
    pub agent_id: &'a str,
    pub key_id: Option<&'a str>,
    /// The OAuth grant whose access token is buying.
    pub grant_id: Option<&'a str>,
}

/// A restricted key's own caps (limit `key`), counting the purchases it opened.
fn check_key(tx: &rusqlite::Connection, key_id: &str, amount_cents: i64, now: &str) -> Result<()> {
    let Some(key) = crate::store::agents::find_key(tx, key_id)? else {
        return Ok(());
    };
    if key.revoked_at.is_some() || key.expires_at.as_deref().is_some_and(|at| at <= now) {
        return Err(Error::Unauthenticated(
            "the restricted key was revoked or has expired".into(),
        ));
    }
    if let Some(cap) = key.per_purchase_cents
        && amount_cents > cap
    {
        return Err(over(
            "key",
            cap,
            cap,
            amount_cents,
            None,
            "a purchase with this key",
        ));
    }
    let windows = windows(now)?;
    for (cap, (since, resets_at), what) in [
        (key.daily_cents, windows.day, "this key today (UTC)"),
        (
            key.monthly_cents,
            windows.month,
            "this key this month (UTC)",
        ),
    ] {
        let Some(cap) = cap else { continue };
        let spent = store::key_spent_since(tx, key_id, &since, now)?;
        if spent + amount_cents > cap {
            let left = (cap - spent).max(0);
            return Err(over("key", cap, left, amount_cents, Some(resets_at), what));
        }
    }
    Ok(())
}

/// An OAuth grant's daily cap (limit `grant`), counting the purchases its tokens made.
fn check_grant(
    tx: &rusqlite::Connection,
    grant_id: &str,
    amount_cents: i64,
    now: &str,
) -> Result<()> {
    let Some((cap, revoked)) = store::grant_cap(tx, grant_id)? else {
        return Ok(());
    };
    if revoked {
        return Err(Error::Unauthenticated(
            "the access token's grant was revoked".into(),
        ));
    }
    let Some(cap) = cap else { return Ok(()) };
    let (since, resets_at) = windows(now)?.day;
    let spent = store::grant_spent_since(tx, grant_id, &since, now)?;
    if spent + amount_cents > cap {
        let left = (cap - spent).max(0);
        return Err(over(
            "grant",
            cap,
            left,
            amount_cents,
            Some(resets_at),
            "this app today (UTC)",
        ));
    }
    Ok(())
}

/// Records, in the transaction that opened it, the restricted key or OAuth grant a purchase was
/// made with.
///
/// # Errors
/// Database failure.
pub fn record_credential(
    tx: &rusqlite::Connection,
    purchase_id: &str,
    key_id: Option<&str>,
    grant_id: Option<&str>,
) -> Result<()> {
    if let Some(key_id) = key_id {
        store::set_purchase_key(tx, purchase_id, key_id)?;
    }
    if let Some(grant_id) = grant_id {
        store::set_purchase_grant(tx, purchase_id, grant_id)?;
    }
    Ok(())
}

/// What spending controls refused since the process started, by limit (the operator's counts).
#[derive(Debug, Default)]
pub struct Refusals {
    counts: [std::sync::atomic::AtomicU64; REFUSAL_KINDS.len()],
}

/// The kinds of refusal the operator sees counted, in the order they are shown.
const REFUSAL_KINDS: [&str; 8] = [
    "per_purchase",
    "daily",
    "monthly",
    "key",
    "grant",
    "rail",
    "category",
    "approval",
];

impl Refusals {
    /// Counts `error` if it is a spending refusal.
    pub fn count(&self, error: &Error) {
        let kind = match error {
            Error::SpendRefused {
                limit: Some(limit), ..
            } => limit.name,
            Error::SpendRefused {
                code: "RAIL_NOT_ALLOWED",
                ..
            } => "rail",
            Error::SpendRefused {
                code: "APPROVAL_REQUIRED",
                ..
            } => "approval",
            Error::SpendRefused { .. } => "category",
            _ => return,
        };
        if let Some(i) = REFUSAL_KINDS.iter().position(|k| *k == kind) {
            self.counts[i].fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    }

    fn snapshot(&self) -> std::collections::BTreeMap<&'static str, u64> {
        REFUSAL_KINDS
            .iter()
            .zip(&self.counts)
            .map(|(kind, count)| (*kind, count.load(std::sync::atomic::Ordering::Relaxed)))
            .collect()
    }
}

/// `GET /api/operator/spending`: how many agents set a policy and how many purchases spending
/// controls refused since the process started, by limit. The operator sees, never sets: no route
/// lets it change an agent's caps.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OperatorView {
    pub agents_with_policy: i64,
    /// Refused purchases by limit, since the process started.
    pub refusals: std::collections::BTreeMap<&'static str, u64>,
}

/// The operator's view of spending controls.
///
/// # Errors
/// Database failure.
pub async fn operator_view(app: &App) -> Result<OperatorView> {
    let agents_with_policy = app.store.read(store::count).await?;
    Ok(OperatorView {
        agents_with_policy,
        refusals: app.spend_refusals.snapshot(),
    })
}

fn names(list: &[String]) -> String {
    list.iter()
        .map(|name| format!("`{name}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `SPEND_LIMIT_EXCEEDED` naming the cap.
fn over(
    name: &'static str,
    cap: i64,
    left: i64,
    requested: i64,
    resets_at: Option<String>,
    what: &str,
) -> Error {
    Error::SpendRefused {
        code: "SPEND_LIMIT_EXCEEDED",
        message: format!(
            "this purchase costs {requested} cents and your {name} cap allows {cap} cents for {what}; {left} cents are left{}",
            resets_at
                .as_deref()
                .map(|at| format!(" until {at}"))
                .unwrap_or_default()
        ),
        limit: Some(Box::new(SpendLimit {
            name,
            amount_cents: cap,
            left_cents: left,
            requested_cents: requested,
            resets_at,
        })),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_are_utc_calendar_days_and_months() {
        let w = windows("2026-12-31T23:59:59.999Z").unwrap();
        assert_eq!(
            w.day,
            (
                "2026-12-31T00:00:00.000Z".to_owned(),
                "2027-01-01T00:00:00.000Z".to_owned()
            )
        );
        assert_eq!(
            w.month,
            (
                "2026-12-01T00:00:00.000Z".to_owned(),
                "2027-01-01T00:00:00.000Z".to_owned()
            )
        );
    }
}
