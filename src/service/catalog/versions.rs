//! A listing's signed versions: the history entry of each version (what changed, from → to,
//! when, why, and `by: "operator"` for the operator's moderation), signed, and the write of a new
//! version beside its entry. Listings ([`super::listings`]), settlement and moderation write
//! versions only through here.

use serde_json::{Map, Value, json};

use crate::crypto::jcs;
use crate::crypto::keys::Keyring;
use crate::crypto::receipt::sign_object;
use crate::error::Result;
use crate::service::App;
use crate::service::trust::receipts::Signed;
use crate::store::listings::{self as store, ListingRow};

/// The signed history entry of version 1.
pub(crate) fn version_one(app: &App, row: &ListingRow, reason: String) -> Signed {
    history_entry(
        &app.keyring,
        &row.id,
        1,
        &row.created_at,
        creation_changes(row),
        Some(reason),
        false,
    )
}

fn preview_fingerprint(preview: &str) -> Value {
    let value: Value = serde_json::from_str(preview).unwrap_or_else(|_| json!({}));
    Value::String(jcs::digest(&value))
}

fn creation_changes(row: &ListingRow) -> Map<String, Value> {
    let mut changes = Map::new();
    let mut set = |field: &str, to: Value| {
        changes.insert(field.to_owned(), json!({ "from": null, "to": to }));
    };
    set("title", row.title.clone().into());
    set("description", row.description.clone().into());
    set("priceCents", row.price_cents.into());
    set("listingType", row.listing_type.clone().into());
    set("maxCopies", row.max_copies.map_or(Value::Null, Value::from));
    set("verticalSlug", row.vertical_slug.clone().into());
    set("active", row.active.into());
    set("preview", preview_fingerprint(&row.preview));
    set("fingerprint", row.fingerprint.clone().into());
    changes
}

/// Whether `to` differs from `from` in anything a version records.
pub(crate) fn changes_anything(from: &ListingRow, to: &ListingRow) -> bool {
    !edit_changes(from, to).is_empty()
}

fn edit_changes(from: &ListingRow, to: &ListingRow) -> Map<String, Value> {
    let mut changes = Map::new();
    let mut diff = |field: &str, a: Value, b: Value| {
        if a != b {
            changes.insert(field.to_owned(), json!({ "from": a, "to": b }));
        }
    };
    diff("title", from.title.clone().into(), to.title.clone().into());
    diff(
        "description",
        from.description.clone().into(),
        to.description.clone().into(),
    );
    diff("priceCents", from.price_cents.into(), to.price_cents.into());
    diff("active", from.active.into(), to.active.into());
    diff(
        "preview",
        preview_fingerprint(&from.preview),
        preview_fingerprint(&to.preview),
    );
    diff(
        "fingerprint",
        from.fingerprint.clone().into(),
        to.fingerprint.clone().into(),
    );
    changes
}

/// A signed history entry: `{type, listingId, version, changedAt, changes, reason, signature}`,
/// and `by: "operator"` for the operator's moderation.
fn history_entry(
    keyring: &Keyring,
    listing_id: &str,
    version: i64,
    changed_at: &str,
    changes: Map<String, Value>,
    reason: Option<String>,
    by_operator: bool,
) -> Signed {
    let mut entry = Map::new();
    entry.insert("type".into(), "bourse.listing.version".into());
    entry.insert("listingId".into(), listing_id.into());
    entry.insert("version".into(), version.into());
    entry.insert("changedAt".into(), changed_at.into());
    entry.insert("changes".into(), Value::Object(changes));
    entry.insert("reason".into(), reason.map_or(Value::Null, Value::from));
    if by_operator {
        entry.insert("by".into(), "operator".into());
    }
    sign_object(keyring, &mut entry, changed_at);
    Signed(entry)
}

/// Writes `next` as the new version of `current` (the row as stored in this transaction) with
/// its signed history entry. Returns `None`, writing nothing, when nothing changed.
///
/// # Errors
/// Database failure.
pub(crate) fn write_version(
    tx: &rusqlite::Connection,
    keyring: &Keyring,
    now: &str,
    current: &ListingRow,
    next: ListingRow,
    reason: Option<String>,
) -> Result<Option<(ListingRow, Signed)>> {
    write_version_by(tx, keyring, now, current, next, reason, false)
}

/// As [`write_version`]; `by_operator` marks the entry as the operator's moderation (its signed
/// `by` member is `"operator"`), which no seller's edit can write.
///
/// # Errors
/// Database failure.
pub(crate) fn write_version_by(
    tx: &rusqlite::Connection,
    keyring: &Keyring,
    now: &str,
    current: &ListingRow,
    mut next: ListingRow,
    reason: Option<String>,
    by_operator: bool,
) -> Result<Option<(ListingRow, Signed)>> {
    let changes = edit_changes(current, &next);
    if changes.is_empty() {
        return Ok(None);
    }
    next.version = current.version + 1;
    next.last_modified = Some(now.to_owned());
    next.modification_count = current.modification_count + 1;
    let entry = history_entry(
        keyring,
        &next.id,
        next.version,
        now,
        changes,
        reason,
        by_operator,
    );
    store::update(tx, &next)?;
    store::insert_history(tx, &next.id, next.version, &entry.to_string())?;
    Ok(Some((next, entry)))
}
