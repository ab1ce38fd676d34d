//! The public fee schedule (`/api/meta`, `/api/fees`), announced schedule changes, and the
//! disclosures page. Every figure comes from `service::commerce::fees`, the module commerce charges with.

use jiff::civil::Date;
use rusqlite::Connection;
use serde_json::{Value, json};

use crate::error::{Error, Result};
use crate::request::disclosure::Announce;
use crate::service::App;
use crate::service::commerce::fees::{
    BUYER_BPS, CHANGE_NOTICE_DAYS, HIGH_TICKET_AT_CENTS, HIGH_TICKET_BPS, HIGH_TICKET_CAP_CENTS,
    HIGH_TICKET_FLOOR_CENTS, LISTING_FEE_BPS, LOCKED_UNTIL, MICRO_UNDER_CENTS, SCHEDULE_VERSION,
    STANDARD_BPS,
};
use crate::store::fees::{self as fee_store, Announcement};

/// The bands of the live schedule.
pub fn bands() -> Value {
    json!([
        {"band": "micro", "fromCents": 0, "toCents": MICRO_UNDER_CENTS - 1, "bps": 0},
        {"band": "standard", "fromCents": MICRO_UNDER_CENTS, "toCents": HIGH_TICKET_AT_CENTS - 1, "bps": STANDARD_BPS},
        {"band": "high_ticket", "fromCents": HIGH_TICKET_AT_CENTS, "toCents": null, "bps": HIGH_TICKET_BPS,
         "floorCents": HIGH_TICKET_FLOOR_CENTS, "capCents": HIGH_TICKET_CAP_CENTS},
    ])
}

fn founding_fill() -> Value {
    json!({
        "bps": 0,
        "rule": "0% platform fee on the first settled sale in a subcategory (vertical) that had no commerce when the listing was made",
        "identifiedRailsOnly": true,
        "note": "anonymous x402 sales count as commerce but never claim it",
    })
}

fn change_notice() -> String {
    format!(
        "The rate is locked until {LOCKED_UNTIL}. After that any change needs at least {CHANGE_NOTICE_DAYS} days of notice, posted at /api/fees, /disclosures and /llms.txt. A settled sale keeps the rate at which it closed."
    )
}

/// `GET /api/meta`.
pub fn meta(app: &App) -> Value {
    let patent_status = app
        .provenance()
        .patent
        .get("status")
        .cloned()
        .unwrap_or(Value::Null);
    json!({
        "microUnderCents": MICRO_UNDER_CENTS,
        "standardBps": STANDARD_BPS,
        "highTicketAtCents": HIGH_TICKET_AT_CENTS,
        "highTicketBps": HIGH_TICKET_BPS,
        "highTicketFloorCents": HIGH_TICKET_FLOOR_CENTS,
        "highTicketCapCents": HIGH_TICKET_CAP_CENTS,
        "lockUntil": LOCKED_UNTIL,
        "buyerBps": BUYER_BPS,
        "foundingFill": founding_fill(),
        "fees": {
            "seller_fee_bps": STANDARD_BPS,
            "seller_keep_bps": 10_000 - STANDARD_BPS,
            "buyer_fee_bps": BUYER_BPS,
            "listing_fee_bps": LISTING_FEE_BPS,
            "rate_change_notice_days": CHANGE_NOTICE_DAYS,
            "settled_sales_keep_closing_rate": true,
            "banded": true,
            "schedule_version": SCHEDULE_VERSION,
            "schedule_history": [{"version": SCHEDULE_VERSION, "effectiveFrom": "launch", "status": "live"}],
            "change_notice": change_notice(),
            "bands": bands(),
        },
        "rails": {
            "default": app.card_rail().meta_default(),
            "autonomous": crate::service::commerce::rails::x402::meta_summary(app),
            "x402": crate::service::commerce::rails::x402::meta(app),
        },
        "patent_status": patent_status,
        "metric_definitions": {
            "totalSales": "settled sales: ledger rows outside reference listings (free sales included)",
            "platformFeeCents": "sum of the platform fees of those sales, each at its closing rate",
            "totalListings": "active listings that are not reference samples",
            "totalQueries": "browse and search requests of the catalogue",
            "totalQueriers": "distinct clients (agent, else IP) that made a query, stored as salted hashes",
            "sellerReputation": "0.8 × Bayesian mean rating (prior 3.0 worth 5 ratings) + 0.2 × 5 × min(1, log10(1 + completed sales) / 3)",
        },
        "demand_ledger": app.url("/api/proof/demand"),
        "receipt_verification": app.url("/api/verify-receipt"),
        "llms_txt": app.url("/llms.txt"),
    })
}

/// The live schedule (`live` of `GET /api/fees`, `fees` of the MCP `about_marketplace`).
pub fn live_schedule() -> Value {
    json!({
        "version": SCHEDULE_VERSION,
        "bands": bands(),
        "buyerBps": BUYER_BPS,
        "listingFeeBps": LISTING_FEE_BPS,
        "foundingFill": founding_fill(),
        "lockUntil": LOCKED_UNTIL,
    })
}

/// `GET /api/fees`: the live schedule and the announced ones.
///
/// # Errors
/// Database failure.
pub async fn fees(app: &App) -> Result<Value> {
    let announced = app.store.read(announcements).await?;
    Ok(json!({
        "live": live_schedule(),
        "announced": announced,
        "noticeDays": CHANGE_NOTICE_DAYS,
        "changeNotice": change_notice(),
    }))
}

fn announcements(conn: &Connection) -> Result<Vec<Value>> {
    Ok(fee_store::announcements(conn)?
        .into_iter()
        .map(|a| {
            json!({
                "version": a.version,
                "status": "draft",
                "announcedAt": a.announced_at,
                "effectiveFrom": a.effective_from,
                "schedule": serde_json::from_str::<Value>(&a.schedule).unwrap_or(Value::Null),
                "note": a.note,
            })
        })
        .collect())
}

/// `POST /api/operator/fees/announcements`: [`announce`] by the server clock, through the writer.
///
/// # Errors
/// As [`announce`].
pub async fn announce_now(app: &App, request: Announce) -> Result<Value> {
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
pub fn announce(conn: &Connection, request: &Announce, today: Date, now: &str) -> Result<Value> {
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
    Ok(
        json!({ "version": version, "status": "draft", "announcedAt": now, "effectiveFrom": effective.to_string(), "schedule": schedule, "note": note }),
    )
}
