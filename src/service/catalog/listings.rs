//! Listings: create (with the deliverable fingerprinted live from the seller), detail, edits with
//! a signed version history, deactivation. Browse and search are [`super::browse`]; the Listing
//! resource's rendering is [`super::view`].

use serde::Serialize;
use serde_json::{Value, json};

use crate::crypto::jcs;
use crate::error::{Error, Result};
use crate::request::catalog::{
    CreateListing, DeactivateListing, ListingId, ListingType, UpdateListing,
};
use crate::service::catalog::screening::{self, Refusal};
use crate::service::catalog::sellers::{self, fetch_deliverable};
use crate::service::catalog::versions::{changes_anything, version_one, write_version};
use crate::service::catalog::view::{License, ListingView, license};
use crate::service::catalog::{health, ratings};
use crate::service::taxonomy::{HEALTH_VERTICAL, Vertical};
use crate::service::trust::log::LogRef;
use crate::service::trust::receipts::Signed;
use crate::service::{App, catalog::reputation};
use crate::store::agents::AgentRow;
use crate::store::listings::{self as store, ListingRow};

/// A listing write's answer: the listing as written and the signed history entry of the version
/// it made (`null` when an edit changed nothing); a health create adds the signed consent
/// record.
#[derive(Serialize)]
pub struct Written<'a> {
    pub listing: ListingView<'a>,
    pub receipt: Option<Signed>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub consent: Option<Signed>,
    /// Where the receipt (the version's history entry) sits in the transparency log.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log: Option<LogRef>,
}

/// The log member of a listing version's history entry.
async fn logged(app: &App, listing_id: &str, version: i64, signed: bool) -> Result<Option<LogRef>> {
    if !signed {
        return Ok(None);
    }
    let reference = store::history_log_ref(listing_id, version);
    app.store
        .read(move |conn| crate::service::trust::log::log_ref(conn, &reference))
        .await
}

/// The seller as a listing's detail shows them.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SellerSummary {
    pub id: String,
    pub display_name: String,
    pub reputation: f64,
    pub rating_count: i64,
    pub total_sales_count: i64,
}

/// `GET /api/marketplace/listings/{id}`: the listing, its preview (the seller's JSON), the
/// seller, ratings, license, and for a health listing its signed consent record.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Detail<'a> {
    pub listing: ListingView<'a>,
    pub preview: Value,
    pub seller: SellerSummary,
    pub ratings: Vec<Signed>,
    pub license: License,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub health_consent: Option<Signed>,
}

/// `GET /api/marketplace/listings/{id}/history`: every signed entry, oldest first.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct History {
    pub listing_id: String,
    pub version: i64,
    pub entries: Vec<Signed>,
    /// Each entry's place in the transparency log, in the same order (`null` for a version
    /// signed before the log began).
    pub log: Vec<Option<LogRef>>,
    pub verify: String,
}

/// `POST /api/marketplace/listings`: 201 `{listing, receipt}`; the receipt is the signed
/// history entry of version 1.
///
/// # Errors
/// `INVALID_ARGUMENT`, `CONSENT_REQUIRED` (422), `PROHIBITED_CONTENT` (422),
/// `HEALTH_CONSENT_REQUIRED` (422), `DELIVERY_ENDPOINT_REQUIRED` (409),
/// `SELLER_ENDPOINT_FAILED` (422).
pub async fn create<'a>(
    app: &'a App,
    seller: &AgentRow,
    request: CreateListing,
) -> Result<Written<'a>> {
    create_listing(app, seller, request, None).await
}

/// `POST /api/marketplace/listings/health` (and `list_health_data`): a person's own health
/// data. The consent is judged first (422 `HEALTH_CONSENT_REQUIRED` for a missing or incomplete
/// one), then the rest of the request; the vertical is `personal-health-data`. Answers 201
/// `{listing, receipt, consent}`, `consent` being the signed consent record.
///
/// # Errors
/// As [`create`].
pub async fn create_health<'a>(
    app: &'a App,
    seller: &AgentRow,
    consent: Option<Value>,
    rest: Result<CreateListing>,
) -> Result<Written<'a>> {
    let consent = health::parse(consent.as_ref(), health::INTENDED_USES)?;
    create_listing(app, seller, rest?, Some(consent)).await
}

async fn create_listing<'a>(
    app: &'a App,
    seller: &AgentRow,
    request: CreateListing,
    health: Option<health::Consent>,
) -> Result<Written<'a>> {
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
                sellers::require_payouts(conn, &seller_id, card)?;
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
    // Time-ordered (UUIDv7, like message ids): a new listing's id lands at the right edge of
    // the id index instead of on a random leaf (a million listings' ids fill 60 MB of it).
    let id = uuid::Uuid::now_v7().to_string();
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
        listing_type: listing_type.name().to_owned(),
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
    let log = logged(app, &row.id, row.version, true).await?;
    Ok(Written {
        listing: ListingView::owned(app, row),
        receipt: Some(receipt),
        consent,
        log,
    })
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
        listing_type: ListingType::Standard.name().into(),
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
    consent: Option<Signed>,
) -> Result<(ListingRow, Signed)> {
    let entry = version_one(app, &row, reason);
    let consent = consent.map(|record| Value::Object(record.0));
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
/// `GET /api/marketplace/listings/{id}` as signed bytes: an answer signed earlier is reused while
/// nothing that shapes it has changed (`catalog::signed`); the view is counted either way.
///
/// # Errors
/// As [`detail`].
pub async fn signed_detail(app: &App, request: &ListingId) -> Result<super::signed::Body> {
    let id = request.listing_id.as_str();
    let stamp = super::signed::catalogue_stamp(app);
    let now = app.clock.now();
    if let Some((body, seq)) = app.signed.get(id, stamp, now) {
        app.counters.view(seq);
        return Ok(body);
    }
    let (detail, seq) = detail_with_seq(app, id).await?;
    let members = serde_json::to_value(&detail)
        .map_err(|e| Error::Internal(format!("a listing detail as JSON: {e}")))?;
    let Value::Object(members) = members else {
        return Err(Error::Internal("a listing detail is an object".into()));
    };
    let body: super::signed::Body =
        crate::service::trust::provenance::sign_response(app, members).into();
    app.signed.put(id, stamp, seq, body.clone(), now);
    Ok(body)
}

/// The listing detail (unsigned): what `signed_detail` signs, and the MCP tool's answer.
///
/// # Errors
/// `NOT_FOUND`; database failure.
pub async fn detail<'a>(app: &'a App, request: &ListingId) -> Result<Detail<'a>> {
    Ok(detail_with_seq(app, &request.listing_id).await?.0)
}

async fn detail_with_seq<'a>(app: &'a App, id: &str) -> Result<(Detail<'a>, i64)> {
    let not_found = || Error::NotFound(format!("no listing with id {id:?}"));
    if uuid::Uuid::parse_str(id).is_err() {
        return Err(not_found());
    }
    let key = id.to_owned();
    // Every read of the answer in one trip off the executor: the listing, its seller, its
    // consent record and its ratings.
    let found = app
        .store
        .read(move |conn| {
            let Some(row) = store::find(conn, &key)? else {
                return Ok(None);
            };
            let consent = if row.health_consent {
                store::health_consent(conn, &row.id)?
            } else {
                None
            };
            let seller = crate::store::agents::find_by_id(conn, &row.seller_id)?;
            let ratings = crate::store::purchases::ratings_of(conn, &row.id, ratings::SHOWN)?;
            Ok(Some((row, seller, consent, ratings)))
        })
        .await?;
    let (row, seller, consent, ratings) = found.ok_or_else(not_found)?;
    app.counters.view(row.seq);
    let seller = seller.ok_or_else(|| Error::Internal("listing without seller".into()))?;
    let preview: Value = serde_json::from_str(&row.preview).unwrap_or_else(|_| json!({}));
    // A health listing shows the seller's signed consent record (terms, not data).
    let health_consent = match consent {
        None => None,
        Some(Value::Object(record)) => Some(Signed(record)),
        Some(_) => return Err(Error::Internal("a consent record is not an object".into())),
    };
    let seq = row.seq;
    let detail = Detail {
        preview,
        seller: SellerSummary {
            id: seller.id,
            display_name: seller
                .display_name
                .unwrap_or_else(|| row.seller_code.clone()),
            reputation: row.seller_reputation,
            rating_count: seller.rating_count,
            total_sales_count: seller.sales_count,
        },
        ratings: ratings::from_stored(&ratings),
        license: license(&row),
        health_consent,
        listing: ListingView::owned(app, row),
    };
    Ok((detail, seq))
}

/// `PATCH /api/marketplace/listings/{id}` (owner only). A change makes a new version with a
/// signed history entry; a patch that changes nothing makes none.
///
/// # Errors
/// `NOT_FOUND`, `NOT_OWNER` (403), `INVALID_ARGUMENT`, `PROHIBITED_CONTENT`, `LISTING_SOLD_OUT`
/// (409) when reactivating a sold exclusive or sold-out limited listing, `SELLER_ENDPOINT_FAILED`.
pub async fn update<'a>(
    app: &'a App,
    seller: &AgentRow,
    request: UpdateListing,
) -> Result<Written<'a>> {
    let current = find(app, &request.listing_id).await?;
    if current.seller_id != seller.id {
        return Err(not_owner());
    }
    // Unknown fields were refused at the edge; the values are judged once the listing is known
    // to be the caller's (a stranger learns nothing from a 400).
    let request = request.edit?;
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
            .read(move |conn| sellers::require_payouts(conn, &seller_id, card))
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
    let log = logged(app, &row.id, row.version, receipt.is_some()).await?;
    Ok(Written {
        listing: ListingView::owned(app, row),
        receipt,
        consent: None,
        log,
    })
}

/// `POST /api/marketplace/listings/{id}/deactivate` {reason}: the same as `active: false`.
///
/// # Errors
/// As [`update`].
pub async fn deactivate<'a>(
    app: &'a App,
    seller: &AgentRow,
    request: DeactivateListing,
) -> Result<Written<'a>> {
    let reason = request.reason;
    let current = find(app, &request.listing_id).await?;
    if current.seller_id != seller.id {
        return Err(not_owner());
    }
    let mut next = current.clone();
    next.active = false;
    let (row, receipt) = apply_edit(app, current, next, reason).await?;
    let log = logged(app, &row.id, row.version, receipt.is_some()).await?;
    Ok(Written {
        listing: ListingView::owned(app, row),
        receipt,
        consent: None,
        log,
    })
}

/// Writes an edit as a new version with its signed history entry; nothing when nothing changed
/// (the receipt is then `null`). The edit applies to the row as read at the start: if the
/// listing changed since (another edit, a sale), it is refused rather than lost.
async fn apply_edit(
    app: &App,
    current: ListingRow,
    next: ListingRow,
    reason: Option<String>,
) -> Result<(ListingRow, Option<Signed>)> {
    if !changes_anything(&current, &next) {
        return Ok((current, None));
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
    Ok((row, Some(entry)))
}

/// `GET /api/marketplace/listings/{id}/history`: every signed entry, oldest first.
///
/// # Errors
/// `NOT_FOUND`.
pub async fn history(app: &App, request: &ListingId) -> Result<History> {
    let row = find(app, &request.listing_id).await?;
    let listing_id = row.id.clone();
    let (entries, log) = app
        .store
        .read(move |conn| {
            let entries = store::history(conn, &listing_id)?;
            let log = (1..=entries.len() as i64)
                .map(|version| {
                    let reference = store::history_log_ref(&listing_id, version);
                    crate::service::trust::log::log_ref(conn, &reference)
                })
                .collect::<Result<Vec<_>>>()?;
            Ok((entries, log))
        })
        .await?;
    let entries: Vec<Signed> = entries
        .iter()
        .map(|text| {
            serde_json::from_str(text)
                .map(Signed)
                .map_err(|e| Error::Internal(format!("history entry: {e}")))
        })
        .collect::<Result<_>>()?;
    Ok(History {
        listing_id: row.id,
        version: row.version,
        entries,
        log,
        verify: app.url("/api/verify-receipt"),
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
                // Both are well-formed; they disagree about the taxonomy (server data).
                return Err(Error::Unprocessable {
                    code: "CATEGORY_MISMATCH",
                    message: format!(
                        "`verticalSlug` {slug:?} belongs to category {:?}, not {hint:?}",
                        vertical.category
                    ),
                });
            }
            Ok(vertical)
        }
        None => Ok(app
            .taxonomy
            .classify(&request.title, &request.description, hint.as_deref())),
    }
}
