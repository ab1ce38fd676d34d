//! Listings: create (with the deliverable fingerprinted live from the seller), detail, edits with
//! a signed version history, deactivation, browse and search.

use std::sync::OnceLock;

use serde_json::{Map, Value, json};

use crate::crypto::jcs;
use crate::crypto::keys::Keyring;
use crate::crypto::receipt::sign_object;
use crate::error::{Error, Result};
use crate::request::catalog::{
    Browse, CreateListing, DeactivateListing, LISTING_TYPES, UpdateListing,
};
use crate::service::catalog::browse::{Filters, Price, Query, Samples, Sort};
use crate::service::catalog::health;
use crate::service::catalog::screening::{self, Refusal};
use crate::service::catalog::sellers::{self, fetch_deliverable};
use crate::service::catalog::taxonomy::{HEALTH_VERTICAL, Vertical};
use crate::service::trust::provenance::CanonicalMembers;
use crate::service::{App, catalog::reputation};
use crate::store::agents::AgentRow;
use crate::store::listings::{self as store, ListingRow};

pub use crate::request::catalog::{METADATA_FIELDS, PAGE_MAX, PREVIEW_MAX_BYTES, PRICE_MAX_CENTS};

/// `POST /api/marketplace/listings`: 201 `{listing, receipt}`; the receipt is the signed
/// history entry of version 1.
///
/// # Errors
/// `INVALID_ARGUMENT`, `CONSENT_REQUIRED` (422), `PROHIBITED_CONTENT` (422),
/// `HEALTH_CONSENT_REQUIRED` (422), `DELIVERY_ENDPOINT_REQUIRED` (409),
/// `SELLER_ENDPOINT_FAILED` (422).
pub async fn create(app: &App, seller: &AgentRow, request: CreateListing) -> Result<Value> {
    let health = match request.for_health {
        true => Some(health::parse(
            request.health_consent.as_ref(),
            health::INTENDED_USES,
        )?),
        false => None,
    };
    let CreateListing {
        title,
        description,
        price_cents,
        listing_type,
        max_copies,
        preview,
        consent,
        images,
        physical,
        deliverable_ref,
        metadata,
        ..
    } = &request;
    let vertical = match &health {
        Some(_) => app
            .taxonomy
            .vertical(HEALTH_VERTICAL)
            .ok_or_else(|| Error::Internal("taxonomy without the health vertical".into()))?,
        None => choose_vertical(app, &request)?,
    };
    if !consent {
        return Err(Error::Unprocessable {
            code: "CONSENT_REQUIRED",
            message: "`consent` must be true: you affirm that you own this asset and have the right to sell it".into(),
        });
    }
    if vertical.slug == HEALTH_VERTICAL && health.is_none() {
        return Err(Error::Unprocessable {
            code: "HEALTH_CONSENT_REQUIRED",
            message: "personal health data is listed only through the signed consent flow for a person's own data: POST /api/marketplace/listings/health with `healthConsent`".into(),
        });
    }
    let mut texts = vec![
        ("title".to_owned(), title.as_str()),
        ("description".to_owned(), description.as_str()),
    ];
    screening::strings_of("preview", preview, &mut texts);
    screening::strings_of("metadata", metadata, &mut texts);
    if let Some(reference) = deliverable_ref {
        texts.push(("deliverableRef".into(), reference));
    }
    screening::screen(texts, health.is_some()).map_err(prohibited)?;

    let (seller_id, paid, card) = (seller.id.clone(), *price_cents > 0, app.card_rail());
    let endpoint = app
        .store
        .read(move |conn| {
            let endpoint = sellers::verified_endpoint(conn, &seller_id)?;
            if paid && endpoint.is_some() {
                crate::service::commerce::payouts::require_payouts(conn, &seller_id, card)?;
            }
            Ok(endpoint)
        })
        .await?;
    let Some((endpoint_url, _)) = endpoint else {
        return Err(Error::Conflict {
            code: "DELIVERY_ENDPOINT_REQUIRED",
            message: "verify a delivery endpoint first: PUT /api/sell/delivery-endpoint {\"url\": \"https://…\"}".into(),
        });
    };
    let id = uuid::Uuid::new_v4().to_string();
    let deliverable = fetch_deliverable(
        app,
        &endpoint_url,
        &seller.handle,
        &id,
        None,
        deliverable_ref.as_deref(),
    )
    .await?;
    let row = ListingRow {
        title: title.clone(),
        description: description.clone(),
        price_cents: *price_cents,
        listing_type: (*listing_type).to_owned(),
        max_copies: *max_copies,
        fingerprint: jcs::sha256_prefixed(&deliverable.bytes),
        preview: preview.to_string(),
        images: String::from_utf8(jcs::canonicalize(&Value::from(images.clone())))
            .expect("canonical JSON is UTF-8"),
        metadata: String::from_utf8(jcs::canonicalize(metadata)).expect("canonical JSON is UTF-8"),
        physical: *physical,
        deliverable_ref: deliverable_ref.clone(),
        health_consent: health.is_some(),
        deidentification: health.as_ref().map(|h| h.level.clone()),
        authorized_uses: health
            .as_ref()
            .map(|h| Value::from(h.uses.clone()).to_string()),
        ..new_row(id, &seller.id, vertical, app.now())
    };
    let consent = health.map(|consent| {
        health::record(
            &app.keyring,
            &consent,
            &row.id,
            (&seller.id, &seller.handle),
            &row.created_at,
        )
    });
    let (row, receipt) = insert_listing(app, row, "created".into(), consent.clone()).await?;
    let mut out = json!({ "listing": listing_json(app, &row), "receipt": receipt });
    if let Some(consent) = consent {
        out["consent"] = consent;
    }
    Ok(out)
}

/// A version-1, active, unrated listing of `seller_id` in `vertical`; callers fill in the rest
/// with struct update syntax.
pub(crate) fn new_row(
    id: String,
    seller_id: &str,
    vertical: &Vertical,
    created_at: String,
) -> ListingRow {
    ListingRow {
        seq: 0,
        id,
        seller_id: seller_id.to_owned(),
        seller_code: String::new(),
        seller_reputation: 0.0,
        vertical_slug: vertical.slug.clone(),
        category: vertical.category.clone(),
        title: String::new(),
        description: String::new(),
        price_cents: 0,
        listing_type: "standard".into(),
        max_copies: None,
        sold_count: 0,
        purchase_count: 0,
        view_count: 0,
        active: true,
        exclusive_sold: false,
        fingerprint: String::new(),
        preview: "{}".into(),
        images: "[]".into(),
        metadata: "{}".into(),
        is_sample: false,
        physical: false,
        deliverable_ref: None,
        health_consent: false,
        deidentification: None,
        authorized_uses: None,
        rating_sum: 0,
        rating_count: 0,
        quality: reputation::quality(0, 0),
        created_at,
        version: 1,
        last_modified: None,
        modification_count: 0,
    }
}

/// Inserts a new listing with its signed version-1 history entry.
/// A health listing's signed consent record is stored in the same transaction.
async fn insert_listing(
    app: &App,
    row: ListingRow,
    reason: String,
    consent: Option<Value>,
) -> Result<(ListingRow, Value)> {
    let entry = version_one(app, &row, reason);
    let entry_text = entry.to_string();
    let row = app
        .store
        .write(move |tx| {
            let row = insert_row(tx, row, &entry_text)?;
            if let Some(consent) = &consent {
                store::insert_health_consent(
                    tx,
                    &row.id,
                    &row.seller_id,
                    consent,
                    &row.created_at,
                )?;
            }
            Ok(row)
        })
        .await?;
    app.browse.upsert(&row);
    Ok((row, entry))
}

/// The signed history entry of version 1.
pub(crate) fn version_one(app: &App, row: &ListingRow, reason: String) -> Value {
    history_entry(
        &app.keyring,
        &row.id,
        1,
        &row.created_at,
        creation_changes(row),
        Some(reason),
    )
}

/// Inserts a listing row and its first history entry inside a transaction; fills in the
/// seller's public code and reputation.
///
/// # Errors
/// Database failure.
pub(crate) fn insert_row(
    tx: &rusqlite::Connection,
    mut row: ListingRow,
    entry_text: &str,
) -> Result<ListingRow> {
    row.seller_code = sellers::seller_code(tx, &row.seller_id)?;
    row.seller_reputation = reputation::of_agent(tx, &row.seller_id)?;
    row.seq = store::insert(tx, &row)?;
    store::insert_history(tx, &row.id, 1, entry_text)?;
    if !row.is_sample {
        store::mark_founding_eligible(tx, &row.id, &row.vertical_slug)?;
    }
    Ok(row)
}

/// `GET /api/marketplace/listings/{id}`: the listing, its preview, the seller, ratings, license,
/// and for a health listing its signed consent record (`healthConsent`).
///
/// # Errors
/// `NOT_FOUND`.
pub async fn detail(app: &App, id: &str) -> Result<Value> {
    let row = find(app, id).await?;
    app.counters.view(row.seq);
    let (seller_id, listing_id, health) =
        (row.seller_id.clone(), row.id.clone(), row.health_consent);
    let (seller, consent) = app
        .store
        .read(move |conn| {
            let consent = if health {
                store::health_consent(conn, &listing_id)?
            } else {
                None
            };
            Ok((crate::store::agents::find_by_id(conn, &seller_id)?, consent))
        })
        .await?;
    let seller = seller.ok_or_else(|| Error::Internal("listing without seller".into()))?;
    let preview: Value = serde_json::from_str(&row.preview).unwrap_or_else(|_| json!({}));
    let mut detail = json!({
        "listing": listing_json(app, &row),
        "preview": preview,
        "seller": {
            "id": seller.id,
            "displayName": seller.display_name.clone().unwrap_or_else(|| row.seller_code.clone()),
            "reputation": row.seller_reputation,
            "ratingCount": seller.rating_count,
            "totalSalesCount": seller.sales_count,
        },
        "ratings": crate::service::catalog::ratings::ratings_of(app, &row.id).await?,
        "license": license(&row),
    });
    // A health listing shows the seller's signed consent record (terms, not data).
    if let Some(consent) = consent {
        detail["healthConsent"] = consent;
    }
    Ok(detail)
}

/// `PATCH /api/marketplace/listings/{id}` (owner only). A change makes a new version with a
/// signed history entry; a patch that changes nothing makes none.
///
/// # Errors
/// `NOT_FOUND`, `NOT_OWNER` (403), `INVALID_ARGUMENT`, `PROHIBITED_CONTENT`, `LISTING_SOLD_OUT`
/// (409) when reactivating a sold exclusive or sold-out limited listing, `SELLER_ENDPOINT_FAILED`.
pub async fn update(
    app: &App,
    seller: &AgentRow,
    id: &str,
    request: UpdateListing,
) -> Result<Value> {
    let current = find(app, id).await?;
    if current.seller_id != seller.id {
        return Err(not_owner());
    }
    let mut next = current.clone();
    if let Some(title) = request.title {
        next.title = title;
    }
    if let Some(description) = request.description {
        next.description = description;
    }
    if let Some(price) = request.price_cents {
        next.price_cents = price;
    }
    if let Some(active) = request.active {
        next.active = active;
    }
    if let Some(preview) = &request.preview {
        next.preview = preview.to_string();
    }
    if next.price_cents > 0 && current.price_cents == 0 {
        let (seller_id, card) = (seller.id.clone(), app.card_rail());
        app.store
            .read(move |conn| {
                crate::service::commerce::payouts::require_payouts(conn, &seller_id, card)
            })
            .await?;
    }
    let reason = request.reason;
    let mut texts = Vec::new();
    if next.title != current.title {
        texts.push(("title".to_owned(), next.title.as_str()));
    }
    if next.description != current.description {
        texts.push(("description".to_owned(), next.description.as_str()));
    }
    let preview_value: Value = serde_json::from_str(&next.preview).unwrap_or_default();
    if next.preview != current.preview {
        screening::strings_of("preview", &preview_value, &mut texts);
    }
    screening::screen(texts, current.health_consent).map_err(prohibited)?;
    if next.active && !current.active && sold_out(&current) {
        return Err(Error::Conflict {
            code: "LISTING_SOLD_OUT",
            message: "this listing is sold out (exclusive sold, or every limited copy sold) and cannot be reactivated".into(),
        });
    }
    if request.refresh_fingerprint && !current.is_sample {
        let seller_id = seller.id.clone();
        let endpoint = app
            .store
            .read(move |conn| sellers::verified_endpoint(conn, &seller_id))
            .await?;
        let (url, _) = endpoint.ok_or_else(|| Error::Conflict {
            code: "DELIVERY_ENDPOINT_REQUIRED",
            message: "verify a delivery endpoint first: PUT /api/sell/delivery-endpoint".into(),
        })?;
        let deliverable = fetch_deliverable(
            app,
            &url,
            &seller.handle,
            &current.id,
            None,
            current.deliverable_ref.as_deref(),
        )
        .await?;
        next.fingerprint = jcs::sha256_prefixed(&deliverable.bytes);
    }
    let (row, receipt) = apply_edit(app, current, next, reason).await?;
    Ok(json!({ "listing": listing_json(app, &row), "receipt": receipt }))
}

/// `POST /api/marketplace/listings/{id}/deactivate` {reason}: the same as `active: false`.
///
/// # Errors
/// As [`update`].
pub async fn deactivate(
    app: &App,
    seller: &AgentRow,
    id: &str,
    request: DeactivateListing,
) -> Result<Value> {
    let reason = request.reason;
    let current = find(app, id).await?;
    if current.seller_id != seller.id {
        return Err(not_owner());
    }
    let mut next = current.clone();
    next.active = false;
    let (row, receipt) = apply_edit(app, current, next, reason).await?;
    Ok(json!({ "listing": listing_json(app, &row), "receipt": receipt }))
}

/// Writes an edit as a new version with its signed history entry; nothing when nothing changed
/// (the receipt is then `null`). The edit applies to the row as read at the start: if the
/// listing changed since (another edit, a sale), it is refused rather than lost.
async fn apply_edit(
    app: &App,
    current: ListingRow,
    next: ListingRow,
    reason: Option<String>,
) -> Result<(ListingRow, Value)> {
    if edit_changes(&current, &next).is_empty() {
        return Ok((current, Value::Null));
    }
    let (keyring, now) = (app.keyring.clone(), app.now());
    let written = app
        .store
        .write(move |tx| {
            let stored = store::find(tx, &current.id)?
                .ok_or_else(|| Error::NotFound("listing vanished".into()))?;
            if stored.version != current.version || stored.sold_count != current.sold_count {
                return Err(Error::Conflict {
                    code: "VERSION_CONFLICT",
                    message: "the listing changed while this edit was prepared; retry".into(),
                });
            }
            write_version(tx, &keyring, &now, &stored, next, reason)
        })
        .await?;
    let (row, entry) =
        written.ok_or_else(|| Error::Internal("an edit with changes wrote nothing".into()))?;
    app.browse.upsert(&row);
    Ok((row, entry))
}

/// `GET /api/marketplace/listings/{id}/history`: every signed entry, oldest first.
///
/// # Errors
/// `NOT_FOUND`.
pub async fn history(app: &App, id: &str) -> Result<Value> {
    let row = find(app, id).await?;
    let listing_id = row.id.clone();
    let entries = app
        .store
        .read(move |conn| store::history(conn, &listing_id))
        .await?;
    let entries: Vec<Value> = entries
        .iter()
        .map(|text| {
            serde_json::from_str(text).map_err(|e| Error::Internal(format!("history entry: {e}")))
        })
        .collect::<Result<_>>()?;
    Ok(json!({
        "listingId": row.id,
        "version": row.version,
        "entries": entries,
        "verify": app.url("/api/verify-receipt"),
    }))
}

/// Who is querying, for the query and querier counters: the agent when known, else the client
/// address (salted and hashed by `App::querier_key`).
pub fn querier(app: &App, agent: Option<&AgentRow>, ip: &str) -> String {
    let identity = match agent {
        Some(agent) => format!("agent:{}", agent.id),
        None => format!("ip:{ip}"),
    };
    app.querier_key(&identity)
}

/// Resolves a browse request against the taxonomy and the index; unknown slugs are 400 naming
/// the parameter and its allowed values.
///
/// # Errors
/// `INVALID_ARGUMENT`.
pub fn browse_query(app: &App, request: &Browse) -> Result<Query> {
    let sort = match request.sort {
        "popular" => Sort::Popular,
        "price_asc" => Sort::PriceAsc,
        "price_desc" => Sort::PriceDesc,
        "quality" => Sort::Quality,
        "trust" => Sort::Trust,
        _ => Sort::Recent,
    };
    let samples = match request.samples {
        "include" => Samples::Include,
        "only" => Samples::Only,
        _ => Samples::Exclude,
    };
    let price = match request.price {
        "paid" => Price::Paid,
        "free" => Price::Free,
        _ => Price::All,
    };
    let category = request.category.as_deref();
    if let Some(slug) = category
        && app.taxonomy.category(slug).is_none()
    {
        let allowed: Vec<&str> = app
            .taxonomy
            .categories
            .iter()
            .map(|c| c.slug.as_str())
            .collect();
        return Err(Error::invalid(format!(
            "`category` must be one of {}; got {slug:?}",
            allowed.join(", ")
        )));
    }
    let vertical = request.vertical.as_deref();
    if let Some(slug) = vertical
        && app.taxonomy.vertical(slug).is_none()
    {
        return Err(Error::invalid(format!(
            "`vertical` {slug:?} is not a vertical slug; see GET /api/verticals"
        )));
    }
    let categories = match &request.class {
        None => None,
        Some(class) => {
            let upper = class.to_ascii_uppercase();
            let members = app.taxonomy.class_categories(&upper);
            if members.is_empty() {
                let allowed: Vec<&str> = app
                    .taxonomy
                    .classes
                    .iter()
                    .map(|c| c.slug.as_str())
                    .collect();
                return Err(Error::invalid(format!(
                    "`class` must be one of {}; got {class:?}",
                    allowed.join(", ")
                )));
            }
            Some(members)
        }
    };
    let index = &app.browse;
    Ok(Query {
        filters: Filters {
            fts: request.q.as_deref().and_then(fts_query),
            category: category.and_then(|slug| index.category(slug)),
            categories: categories
                .map(|slugs| slugs.iter().filter_map(|s| index.category(s)).collect()),
            vertical: vertical.and_then(|slug| index.vertical(slug)),
            listing_type: request
                .listing_type
                .and_then(|t| LISTING_TYPES.iter().position(|known| *known == t))
                .map(|i| i as u8),
            samples,
            price,
            min_rating_tenths: request.min_rating.map(|value| (value * 10.0).ceil() as i64),
        },
        sort,
        limit: request.limit as usize,
        offset: request.offset as usize,
    })
}

/// Turns user text into a safe FTS5 query: every word becomes a quoted string (so FTS syntax
/// cannot be injected) and all words must match. `None` when the text has no words.
pub fn fts_query(text: &str) -> Option<String> {
    let words: Vec<String> = text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .take(16)
        .map(|w| format!("\"{}\"", w.to_lowercase()))
        .collect();
    (!words.is_empty()).then(|| words.join(" "))
}

/// `GET /api/marketplace/listings`: `{listings, total, offset, limit}`, as canonical members
/// (browse is the hottest read; it never builds a `Value` per listing). Filters and sorts run
/// over the in-memory index; SQLite serves full-text matches and the page's rows.
///
/// # Errors
/// Database failure.
pub async fn browse(app: &App, request: &Browse, querier: String) -> Result<CanonicalMembers> {
    let query = browse_query(app, request)?;
    app.counters.query(querier);
    let index = app.browse.clone();
    let (limit, offset) = (query.limit, query.offset);
    let (rows, total) = app
        .store
        .read(move |conn| {
            let (seqs, total) = index.query(conn, &query)?;
            let rows = store::fetch_page(conn, &seqs)?;
            // A listing deactivated after the index pass never appears.
            Ok((
                rows.into_iter()
                    .filter(|row| row.active)
                    .collect::<Vec<_>>(),
                total,
            ))
        })
        .await?;
    let mut listings = Vec::with_capacity(rows.len() * 1400 + 2);
    listings.push(b'[');
    for (i, row) in rows.iter().enumerate() {
        if i > 0 {
            listings.push(b',');
        }
        write_listing_canonical(app, row, &mut listings);
    }
    listings.push(b']');
    Ok(vec![
        ("limit".to_owned(), limit.to_string().into_bytes()),
        ("listings".to_owned(), listings),
        ("offset".to_owned(), offset.to_string().into_bytes()),
        ("total".to_owned(), total.to_string().into_bytes()),
    ])
}

/// One field of the Listing resource, borrowed from the row: rendered either as a
/// `serde_json::Value` or straight into canonical JSON bytes (browse pages), from the same list.
enum Field<'a> {
    Str(&'a str),
    OptStr(Option<&'a str>),
    Int(i64),
    OptInt(Option<i64>),
    Float(f64),
    OptFloat(Option<f64>),
    Bool(bool),
    /// A JSON value (metadata fields).
    Json(&'a Value),
    /// JSON text stored in canonical form (images, authorized uses).
    Canonical(&'a str),
}

impl Field<'_> {
    fn to_value(&self) -> Value {
        match self {
            Field::Str(s) => Value::from(*s),
            Field::OptStr(s) => s.map_or(Value::Null, Value::from),
            Field::Int(i) => Value::from(*i),
            Field::OptInt(i) => i.map_or(Value::Null, Value::from),
            Field::Float(f) => Value::from(*f),
            Field::OptFloat(f) => f.map_or(Value::Null, Value::from),
            Field::Bool(b) => Value::Bool(*b),
            Field::Json(v) => (*v).clone(),
            Field::Canonical(text) => serde_json::from_str(text).unwrap_or(Value::Null),
        }
    }

    fn write_canonical(&self, out: &mut Vec<u8>) {
        match self {
            Field::Str(s) | Field::OptStr(Some(s)) => jcs::write_str(s, out),
            Field::Int(i) | Field::OptInt(Some(i)) => {
                out.extend_from_slice(i.to_string().as_bytes())
            }
            Field::OptStr(None) | Field::OptInt(None) | Field::OptFloat(None) => {
                out.extend_from_slice(b"null")
            }
            Field::Bool(true) => out.extend_from_slice(b"true"),
            Field::Bool(false) => out.extend_from_slice(b"false"),
            Field::Canonical(text) => out.extend_from_slice(text.as_bytes()),
            Field::Json(v) => jcs::write_canonical(v, out),
            Field::Float(_) | Field::OptFloat(Some(_)) => {
                jcs::write_canonical(&self.to_value(), out)
            }
        }
    }
}

/// The fields of the Listing resource, in no particular order (renderers sort as they need).
fn listing_fields<'a>(
    app: &'a App,
    row: &'a ListingRow,
    metadata: &'a Map<String, Value>,
    history_url: &'a str,
) -> Vec<(&'static str, Field<'a>)> {
    let vertical = app.taxonomy.vertical(&row.vertical_slug);
    let rating_avg =
        (row.rating_count > 0).then(|| round2(row.rating_sum as f64 / row.rating_count as f64));
    let mut fields = vec![
        ("id", Field::Str(&row.id)),
        ("sellerId", Field::Str(&row.seller_id)),
        ("sellerName", Field::Str(&row.seller_code)),
        ("sellerReputation", Field::Float(row.seller_reputation)),
        ("ratingAvg", Field::OptFloat(rating_avg)),
        ("ratingCount", Field::Int(row.rating_count)),
        ("verticalSlug", Field::Str(&row.vertical_slug)),
        (
            "verticalName",
            Field::OptStr(vertical.map(|v| v.name.as_str())),
        ),
        (
            "verticalIcon",
            Field::OptStr(vertical.map(|v| v.icon.as_str())),
        ),
        ("verticalCategory", Field::Str(&row.category)),
        ("pricingType", Field::Str("fixed")),
        ("title", Field::Str(&row.title)),
        ("description", Field::Str(&row.description)),
        ("priceCents", Field::Int(row.price_cents)),
        ("betaFree", Field::Bool(false)),
        ("betaNote", Field::OptStr(None)),
        ("listingType", Field::Str(&row.listing_type)),
        ("maxCopies", Field::OptInt(row.max_copies)),
        ("soldCount", Field::Int(row.sold_count)),
        ("purchaseCount", Field::Int(row.purchase_count)),
        (
            "viewCount",
            Field::Int(row.view_count + app.counters.pending_views(row.seq)),
        ),
        ("active", Field::Bool(row.active)),
        ("exclusiveSold", Field::Bool(row.exclusive_sold)),
        ("fingerprint", Field::Str(&row.fingerprint)),
        ("images", Field::Canonical(&row.images)),
        ("isSample", Field::Bool(row.is_sample)),
        ("physical", Field::Bool(row.physical)),
        ("createdAt", Field::Str(&row.created_at)),
        ("version", Field::Int(row.version)),
        ("lastModified", Field::OptStr(row.last_modified.as_deref())),
        ("modificationCount", Field::Int(row.modification_count)),
        ("modificationHistoryUrl", Field::Str(history_url)),
        ("healthConsentVerified", Field::Bool(row.health_consent)),
        (
            "deidentificationLevel",
            Field::OptStr(row.deidentification.as_deref()),
        ),
        (
            "authorizedUses",
            row.authorized_uses
                .as_deref()
                .map_or(Field::OptStr(None), Field::Canonical),
        ),
        ("sellerBadges", Field::Canonical("[\"verified\"]")),
        (
            "sellerKind",
            Field::Str(if row.is_sample {
                "house"
            } else {
                "third_party"
            }),
        ),
    ];
    for field in METADATA_FIELDS {
        fields.push((
            field,
            metadata
                .get(*field)
                .map_or(Field::OptStr(None), Field::Json),
        ));
    }
    fields
}

fn history_url(row: &ListingRow) -> String {
    format!("/api/marketplace/listings/{}/history", row.id)
}

fn parse_metadata(row: &ListingRow) -> Map<String, Value> {
    serde_json::from_str(&row.metadata).unwrap_or_default()
}

/// The Listing resource as the interface describes it.
pub fn listing_json(app: &App, row: &ListingRow) -> Value {
    let metadata = parse_metadata(row);
    let url = history_url(row);
    let fields = listing_fields(app, row, &metadata, &url);
    Value::Object(
        fields
            .iter()
            .map(|(key, field)| ((*key).to_owned(), field.to_value()))
            .collect(),
    )
}

/// Appends the canonical JSON of the Listing resource (the same bytes as canonicalizing
/// [`listing_json`], without building it): browse pages render fifty of these per request.
pub fn write_listing_canonical(app: &App, row: &ListingRow, out: &mut Vec<u8>) {
    let metadata = parse_metadata(row);
    let url = history_url(row);
    let fields = listing_fields(app, row, &metadata, &url);
    // The field list is the same every time, so its canonical order is computed once.
    static ORDER: OnceLock<Vec<usize>> = OnceLock::new();
    let order = ORDER.get_or_init(|| {
        let mut order: Vec<usize> = (0..fields.len()).collect();
        order.sort_unstable_by(|a, b| jcs::utf16_cmp(fields[*a].0, fields[*b].0));
        order
    });
    debug_assert_eq!(order.len(), fields.len());
    out.push(b'{');
    for (i, &index) in order.iter().enumerate() {
        let (key, field) = &fields[index];
        if i > 0 {
            out.push(b',');
        }
        out.push(b'"');
        out.extend_from_slice(key.as_bytes());
        out.extend_from_slice(b"\":");
        field.write_canonical(out);
    }
    out.push(b'}');
}

pub(crate) fn license(row: &ListingRow) -> Value {
    license_for(&row.listing_type, row.max_copies)
}

/// The data license of a listing type (the same terms the disclosures page states).
pub(crate) fn license_for(listing_type: &str, max_copies: Option<i64>) -> Value {
    let mut restrictions = vec![
        "no-resale: the buyer may not resell the data".to_owned(),
        "no-relisting: the buyer may not re-list the data on any marketplace".to_owned(),
        "no-raw-redistribution: the buyer may not redistribute the raw payload as-is".to_owned(),
    ];
    match listing_type {
        "exclusive" => restrictions
            .push("exclusive: sold to one buyer; the listing is delisted on purchase".into()),
        "limited" => restrictions.push(format!(
            "limited: at most {} copies; the listing is delisted once sold out",
            max_copies.unwrap_or(0)
        )),
        _ => {}
    }
    json!({
        "type": "data-license",
        "permissions": [
            "commercial-use: the buyer may use the data commercially",
            "non-commercial-use: the buyer may use the data non-commercially",
            "derivatives: the buyer may create derivative works"
        ],
        "restrictions": restrictions,
        "notice": "Data license: use commercially and non-commercially and create derivatives; do not resell, re-list or redistribute the raw payload as-is.",
    })
}

pub(crate) fn sold_out(row: &ListingRow) -> bool {
    row.exclusive_sold || row.max_copies.is_some_and(|max| row.sold_count >= max)
}

pub(crate) async fn find(app: &App, id: &str) -> Result<ListingRow> {
    let not_found = || Error::NotFound(format!("no listing with id {id:?}"));
    if uuid::Uuid::parse_str(id).is_err() {
        return Err(not_found());
    }
    let key = id.to_owned();
    app.store
        .read(move |conn| store::find(conn, &key))
        .await?
        .ok_or_else(not_found)
}

fn not_owner() -> Error {
    Error::Forbidden {
        code: "NOT_OWNER",
        message: "only the seller who owns this listing can change it".into(),
    }
}

fn prohibited(refusal: Refusal) -> Error {
    Error::Unprocessable {
        code: "PROHIBITED_CONTENT",
        message: format!("`{}` is refused: {}", refusal.field, refusal.reason),
    }
}

fn choose_vertical<'a>(app: &'a App, request: &CreateListing) -> Result<&'a Vertical> {
    let hint = &request.category;
    if let Some(slug) = hint
        && app.taxonomy.category(slug).is_none()
    {
        return Err(Error::invalid(format!(
            "`category` {slug:?} is not a macro-category; see GET /api/marketplace/categories"
        )));
    }
    match &request.vertical {
        Some(slug) => {
            let vertical = app.taxonomy.vertical(slug).ok_or_else(|| {
                Error::invalid(format!(
                    "`verticalSlug` {slug:?} is not a vertical; see GET /api/verticals"
                ))
            })?;
            if let Some(hint) = hint
                && *hint != vertical.category
            {
                return Err(Error::invalid(format!(
                    "`verticalSlug` {slug:?} belongs to category {:?}, not {hint:?}",
                    vertical.category
                )));
            }
            Ok(vertical)
        }
        None => Ok(app
            .taxonomy
            .classify(&request.title, &request.description, hint.as_deref())),
    }
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

/// A signed history entry: `{type, listingId, version, changedAt, changes, reason, signature}`.
fn history_entry(
    keyring: &Keyring,
    listing_id: &str,
    version: i64,
    changed_at: &str,
    changes: Map<String, Value>,
    reason: Option<String>,
) -> Value {
    let mut entry = Map::new();
    entry.insert("type".into(), "bourse.listing.version".into());
    entry.insert("listingId".into(), listing_id.into());
    entry.insert("version".into(), version.into());
    entry.insert("changedAt".into(), changed_at.into());
    entry.insert("changes".into(), Value::Object(changes));
    entry.insert("reason".into(), reason.map_or(Value::Null, Value::from));
    sign_object(keyring, &mut entry, changed_at);
    Value::Object(entry)
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
    mut next: ListingRow,
    reason: Option<String>,
) -> Result<Option<(ListingRow, Value)>> {
    let changes = edit_changes(current, &next);
    if changes.is_empty() {
        return Ok(None);
    }
    next.version = current.version + 1;
    next.last_modified = Some(now.to_owned());
    next.modification_count = current.modification_count + 1;
    let entry = history_entry(keyring, &next.id, next.version, now, changes, reason);
    store::update(tx, &next)?;
    store::insert_history(tx, &next.id, next.version, &entry.to_string())?;
    Ok(Some((next, entry)))
}

fn round2(value: f64) -> f64 {
    (value * 100.0).round() / 100.0
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::clock::SystemClock;
    use crate::service::{DataDir, Options};

    #[test]
    fn the_canonical_writer_matches_canonicalizing_the_value() {
        let dir = tempfile::tempdir().unwrap();
        let options = Options::new("http://127.0.0.1:1");
        let app = App::open(
            &DataDir(dir.path().join("d")),
            options,
            Arc::new(SystemClock),
        )
        .unwrap();
        let id = app
            .store
            .write_blocking(|tx| Ok(store::sample_of(tx, "music")?.unwrap()))
            .unwrap();
        let mut row = app
            .store
            .write_blocking(move |tx| Ok(store::find(tx, &id)?.unwrap()))
            .unwrap();
        let variants = [
            (
                json!({"demographics": {"é": 1.5, "a": [1, "x"]}, "contextTags": ["ü", "\u{1F600}"]}),
                Some("[\"ai_training\"]"),
            ),
            (
                json!({"dataDate": "2026-01-01", "sellerState": "CA \"quoted\"\n"}),
                None,
            ),
        ];
        for (metadata, uses) in variants {
            row.metadata = String::from_utf8(jcs::canonicalize(&metadata)).unwrap();
            row.authorized_uses = uses.map(str::to_owned);
            row.title = "Café \u{1F600} \\ \"data\"\t".into();
            row.rating_sum = 7;
            row.rating_count = 3;
            row.images =
                String::from_utf8(jcs::canonicalize(&json!(["https://x.example/a b.png"])))
                    .unwrap();
            let mut written = Vec::new();
            write_listing_canonical(&app, &row, &mut written);
            assert_eq!(
                String::from_utf8(written).unwrap(),
                String::from_utf8(jcs::canonicalize(&listing_json(&app, &row))).unwrap()
            );
        }
    }
}
