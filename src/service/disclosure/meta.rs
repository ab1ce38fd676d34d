//! The public fee schedule (`/api/meta`, `/api/fees`), announced schedule changes, and the
//! disclosures page. Every figure comes from `service::commerce::fees`, the module commerce charges with.

use jiff::civil::Date;
use rusqlite::Connection;
use serde::Serialize;
use serde_json::Value;

use crate::error::{Error, Result};
use crate::request::disclosure::Announce;
use crate::service::App;
use crate::service::commerce::fees::{
    BUYER_BPS, CHANGE_NOTICE_DAYS, HIGH_TICKET_AT_CENTS, HIGH_TICKET_BPS, HIGH_TICKET_CAP_CENTS,
    HIGH_TICKET_FLOOR_CENTS, LISTING_FEE_BPS, LOCKED_UNTIL, MICRO_UNDER_CENTS, SCHEDULE_VERSION,
    STANDARD_BPS,
};
use crate::store::fees::{self as fee_store, Announcement};

/// One band of the live schedule.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Band {
    pub band: &'static str,
    pub from_cents: i64,
    /// `null` for the open-ended top band.
    pub to_cents: Option<i64>,
    pub bps: i64,
    /// The high-ticket band's floor and cap (absent on the others).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub floor_cents: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cap_cents: Option<i64>,
}

/// The bands of the live schedule.
pub fn bands() -> Vec<Band> {
    let band = |band, from_cents, to_cents, bps| Band {
        band,
        from_cents,
        to_cents,
        bps,
        floor_cents: None,
        cap_cents: None,
    };
    vec![
        band("micro", 0, Some(MICRO_UNDER_CENTS - 1), 0),
        band(
            "standard",
            MICRO_UNDER_CENTS,
            Some(HIGH_TICKET_AT_CENTS - 1),
            STANDARD_BPS,
        ),
        Band {
            floor_cents: Some(HIGH_TICKET_FLOOR_CENTS),
            cap_cents: Some(HIGH_TICKET_CAP_CENTS),
            ..band("high_ticket", HIGH_TICKET_AT_CENTS, None, HIGH_TICKET_BPS)
        },
    ]
}

/// The founding-fill rule: 0% on the first sale of a vertical without commerce.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FoundingFill {
    pub bps: i64,
    pub rule: &'static str,
    pub identified_rails_only: bool,
    pub note: &'static str,
}

fn founding_fill() -> FoundingFill {
    FoundingFill {
        bps: 0,
        rule: "0% platform fee on the first settled sale in a subcategory (vertical) that had no commerce when the listing was made",
        identified_rails_only: true,
        note: "anonymous x402 sales count as commerce but never claim it",
    }
}

fn change_notice() -> String {
    format!(
        "The rate is locked until {LOCKED_UNTIL}. After that any change needs at least {CHANGE_NOTICE_DAYS} days of notice, posted at /api/fees, /disclosures and /llms.txt. A settled sale keeps the rate at which it closed."
    )
}

/// `GET /api/meta`: the fee schedule, the rails, the metric definitions and where to verify.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Meta {
    pub micro_under_cents: i64,
    pub standard_bps: i64,
    pub high_ticket_at_cents: i64,
    pub high_ticket_bps: i64,
    pub high_ticket_floor_cents: i64,
    pub high_ticket_cap_cents: i64,
    pub lock_until: &'static str,
    pub buyer_bps: i64,
    pub founding_fill: FoundingFill,
    pub fees: MetaFees,
    pub rails: MetaRails,
    /// The operator's provenance setting, as the operator set it (`null` when unset).
    #[serde(rename = "patent_status")]
    pub patent_status: Value,
    #[serde(rename = "metric_definitions")]
    pub metric_definitions: MetricDefinitions,
    #[serde(rename = "demand_ledger")]
    pub demand_ledger: String,
    #[serde(rename = "receipt_verification")]
    pub receipt_verification: String,
    #[serde(rename = "llms_txt")]
    pub llms_txt: String,
}

/// The `fees` member of [`Meta`] (snake_case, as published).
#[derive(Clone, Debug, Serialize)]
pub struct MetaFees {
    pub seller_fee_bps: i64,
    pub seller_keep_bps: i64,
    pub buyer_fee_bps: i64,
    pub listing_fee_bps: i64,
    pub rate_change_notice_days: i64,
    pub settled_sales_keep_closing_rate: bool,
    pub banded: bool,
    pub schedule_version: i64,
    pub schedule_history: Vec<ScheduleVersion>,
    pub change_notice: String,
    pub bands: Vec<Band>,
}

/// A schedule in the history.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ScheduleVersion {
    pub version: i64,
    pub effective_from: &'static str,
    pub status: &'static str,
}

/// The `rails` member of [`Meta`].
#[derive(Clone, Debug, Serialize)]
pub struct MetaRails {
    pub default: String,
    pub autonomous: String,
    /// The x402 rail's own description (`service::commerce::rails::x402::meta`).
    pub x402: Value,
}

/// What the published figures mean.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MetricDefinitions {
    pub total_sales: &'static str,
    pub platform_fee_cents: &'static str,
    pub total_listings: &'static str,
    pub total_queries: &'static str,
    pub total_queriers: &'static str,
    pub seller_reputation: &'static str,
}

/// `GET /api/meta`.
pub fn meta(app: &App) -> Meta {
    let patent_status = app
        .provenance()
        .patent
        .get("status")
        .cloned()
        .unwrap_or(Value::Null);
    Meta {
        micro_under_cents: MICRO_UNDER_CENTS,
        standard_bps: STANDARD_BPS,
        high_ticket_at_cents: HIGH_TICKET_AT_CENTS,
        high_ticket_bps: HIGH_TICKET_BPS,
        high_ticket_floor_cents: HIGH_TICKET_FLOOR_CENTS,
        high_ticket_cap_cents: HIGH_TICKET_CAP_CENTS,
        lock_until: LOCKED_UNTIL,
        buyer_bps: BUYER_BPS,
        founding_fill: founding_fill(),
        fees: MetaFees {
            seller_fee_bps: STANDARD_BPS,
            seller_keep_bps: 10_000 - STANDARD_BPS,
            buyer_fee_bps: BUYER_BPS,
            listing_fee_bps: LISTING_FEE_BPS,
            rate_change_notice_days: CHANGE_NOTICE_DAYS,
            settled_sales_keep_closing_rate: true,
            banded: true,
            schedule_version: SCHEDULE_VERSION,
            schedule_history: vec![ScheduleVersion {
                version: SCHEDULE_VERSION,
                effective_from: "launch",
                status: "live",
            }],
            change_notice: change_notice(),
            bands: bands(),
        },
        rails: MetaRails {
            default: app.card_rail().meta_default(),
            autonomous: crate::service::commerce::rails::x402::meta_summary(app),
            x402: serde_json::to_value(crate::service::commerce::rails::x402::meta(app))
                .unwrap_or_default(),
        },
        patent_status,
        metric_definitions: MetricDefinitions {
            total_sales: "settled sales: ledger rows outside reference listings (free sales included)",
            platform_fee_cents: "sum of the platform fees of those sales, each at its closing rate",
            total_listings: "active listings that are not reference samples",
            total_queries: "browse and search requests of the catalogue",
            total_queriers: "distinct clients (agent, else IP) that made a query, stored as salted hashes",
            seller_reputation: "0.8 × Bayesian mean rating (prior 3.0 worth 5 ratings) + 0.2 × 5 × min(1, log10(1 + completed sales) / 3)",
        },
        demand_ledger: app.url("/api/proof/demand"),
        receipt_verification: app.url("/api/verify-receipt"),
        llms_txt: app.url("/llms.txt"),
    }
}

/// The live schedule (`live` of `GET /api/fees`, `fees` of the MCP `about_marketplace`).
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LiveSchedule {
    pub version: i64,
    pub bands: Vec<Band>,
    pub buyer_bps: i64,
    pub listing_fee_bps: i64,
    pub founding_fill: FoundingFill,
    pub lock_until: &'static str,
}

/// The live schedule (`live` of `GET /api/fees`, `fees` of the MCP `about_marketplace`).
pub fn live_schedule() -> LiveSchedule {
    LiveSchedule {
        version: SCHEDULE_VERSION,
        bands: bands(),
        buyer_bps: BUYER_BPS,
        listing_fee_bps: LISTING_FEE_BPS,
        founding_fill: founding_fill(),
        lock_until: LOCKED_UNTIL,
    }
}

/// `GET /api/fees`: the live schedule and the announced ones.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Fees {
    pub live: LiveSchedule,
    pub announced: Vec<Announced>,
    pub notice_days: i64,
    pub change_notice: String,
}

/// An announced schedule change (a draft until it takes effect).
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Announced {
    pub version: i64,
    pub status: &'static str,
    pub announced_at: String,
    pub effective_from: String,
    /// The schedule as the operator announced it (free-form JSON, stored as sent).
    pub schedule: Value,
    pub note: Option<String>,
}

/// `GET /api/fees`: the live schedule and the announced ones.
///
/// # Errors
/// Database failure.
pub async fn fees(app: &App) -> Result<Fees> {
    let announced = app.store.read(announcements).await?;
    Ok(Fees {
        live: live_schedule(),
        announced,
        notice_days: CHANGE_NOTICE_DAYS,
        change_notice: change_notice(),
    })
}

fn announcements(conn: &Connection) -> Result<Vec<Announced>> {
    Ok(fee_store::announcements(conn)?
        .into_iter()
        .map(|a| Announced {
            version: a.version,
            status: "draft",
            announced_at: a.announced_at,
            effective_from: a.effective_from,
            schedule: serde_json::from_str::<Value>(&a.schedule).unwrap_or(Value::Null),
            note: a.note,
        })
        .collect())
}

/// `POST /api/operator/fees/announcements`: [`announce`] by the server clock, through the writer.
///
/// # Errors
/// As [`announce`].
pub async fn announce_now(app: &App, request: Announce) -> Result<Announced> {
    let (today, now) = (
        app.clock.now().to_zoned(jiff::tz::TimeZone::UTC).date(),
        app.now(),
    );
    app.store
        .write(move |tx| announce(tx, &request, today, &now))
        .await
}

/// Announces a schedule change (operator API and CLI): refused when it would take effect
/// before the lock ends or with less than 60 days of notice.
///
/// # Errors
/// `INVALID_ARGUMENT`, `RATE_LOCKED` (422), `NOTICE_TOO_SHORT` (422).
pub fn announce(
    conn: &Connection,
    request: &Announce,
    today: Date,
    now: &str,
) -> Result<Announced> {
    let (effective, schedule, note) = (
        request.effective_from,
        request.schedule.clone(),
        request.note.clone(),
    );
    let lock: Date = LOCKED_UNTIL.parse().expect("the lock date is a date");
    if effective <= lock {
        return Err(Error::Unprocessable {
            code: "RATE_LOCKED",
            message: format!(
                "the rate is locked until {LOCKED_UNTIL}; a change can take effect from the day after"
            ),
        });
    }
    let earliest = today
        .checked_add(jiff::Span::new().days(CHANGE_NOTICE_DAYS))
        .unwrap_or(Date::MAX);
    if effective < earliest {
        return Err(Error::Unprocessable {
            code: "NOTICE_TOO_SHORT",
            message: format!(
                "a change needs {CHANGE_NOTICE_DAYS} days of notice: the earliest effective date is {earliest}"
            ),
        });
    }
    let version = fee_store::next_version(conn, SCHEDULE_VERSION)?;
    fee_store::insert(
        conn,
        &Announcement {
            version,
            announced_at: now.to_owned(),
            effective_from: effective.to_string(),
            schedule: schedule.to_string(),
            note: note.clone(),
        },
    )?;
    Ok(Announced {
        version,
        status: "draft",
        announced_at: now.to_owned(),
        effective_from: effective.to_string(),
        schedule,
        note,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_top_band_has_a_floor_and_a_cap_and_no_end() {
        let bands = serde_json::to_value(bands()).unwrap();
        assert_eq!(bands[0]["band"], "micro");
        assert!(bands[0].get("floorCents").is_none() && bands[1].get("capCents").is_none());
        assert!(bands[2]["toCents"].is_null());
        assert_eq!(bands[2]["floorCents"], HIGH_TICKET_FLOOR_CENTS);
        let keys: Vec<&String> = bands[2].as_object().unwrap().keys().collect();
        assert_eq!(
            keys,
            [
                "band",
                "fromCents",
                "toCents",
                "bps",
                "floorCents",
                "capCents"
            ]
        );
    }
}
