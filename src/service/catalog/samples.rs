//! Reference samples: one free listing per vertical, owned by the platform's house seller, with
//! a deliverable built into the binary. Seeded on first start (and for any vertical added later);
//! excluded from browse unless `samples=include|only`.

use rusqlite::Connection;
use serde_json::{Value, json};

use crate::crypto::{b64url, jcs, random_bytes};
use crate::error::Result;
use crate::service::App;
use crate::service::catalog::listings::{insert_row, new_row};
use crate::service::catalog::versions::version_one;
use crate::service::hash_secret;
use crate::service::identity::names;
use crate::service::taxonomy::Vertical;
use crate::store::agents::{self as agent_store, AgentRow};
use crate::store::listings::{self as listing_store, ListingRow};
use crate::store::settings;

/// The `deliverableRef` of a built-in sample deliverable.
pub fn sample_ref(vertical: &str) -> String {
    format!("builtin:sample/{vertical}")
}

/// The built-in deliverable of a vertical's sample (deterministic JSON).
pub fn deliverable(vertical: &Vertical) -> Vec<u8> {
    let body = json!({
        "sample": true,
        "vertical": vertical.slug,
        "verticalName": vertical.name,
        "category": vertical.category,
        "about": format!(
            "Reference deliverable for the {} vertical. Real listings relay their deliverable live from the seller's verified endpoint; this one is built into the marketplace so the purchase flow can be tried end to end for free.",
            vertical.name
        ),
        "keywords": vertical.keywords,
    });
    serde_json::to_vec_pretty(&body).expect("a Value serializes")
}

/// Creates the house seller and every missing sample listing, in one transaction.
///
/// # Errors
/// Database failure.
pub fn seed(app: &App) -> Result<()> {
    let now = app.now();
    let slugs: Vec<String> = app
        .taxonomy
        .verticals
        .iter()
        .map(|v| v.slug.clone())
        .collect();
    let missing: Vec<String> = app.store.write_blocking(move |tx| {
        let mut missing = Vec::new();
        for slug in slugs {
            if listing_store::sample_of(tx, &slug)?.is_none() {
                missing.push(slug);
            }
        }
        Ok(missing)
    })?;
    if missing.is_empty() {
        return Ok(());
    }
    let stamp = now.clone();
    let house = app
        .store
        .write_blocking(move |tx| house_agent(tx, &stamp))?;
    let mut rows = Vec::new();
    for vertical in missing
        .iter()
        .filter_map(|slug| app.taxonomy.vertical(slug))
    {
        let bytes = deliverable(vertical);
        let row = ListingRow {
            title: format!("Reference sample: {}", vertical.name),
            description: format!(
                "A free reference listing from the marketplace showing what a {} listing looks like: metadata, a preview and a deliverable. Buy it to try the purchase flow end to end.",
                vertical.name
            ),
            fingerprint: jcs::sha256_prefixed(&bytes),
            preview:
                json!({"sample": true, "vertical": vertical.slug, "format": "application/json"})
                    .to_string(),
            metadata: sample_metadata(),
            is_sample: true,
            deliverable_ref: Some(sample_ref(&vertical.slug)),
            ..new_row(
                uuid::Uuid::new_v4().to_string(),
                &house,
                vertical,
                now.clone(),
            )
        };
        let entry = version_one(app, &row, "reference sample".into()).to_string();
        rows.push((row, entry));
    }
    let inserted = app.store.write_blocking(move |tx| {
        rows.into_iter()
            .map(|(row, entry)| insert_row(tx, row, &entry))
            .collect::<Result<Vec<_>>>()
    })?;
    for row in &inserted {
        app.browse.upsert(row);
    }
    Ok(())
}

fn sample_metadata() -> String {
    let mut metadata = serde_json::Map::new();
    for field in crate::request::catalog::METADATA_FIELDS {
        metadata.insert((*field).to_owned(), Value::Null);
    }
    metadata.insert("dataFormat".into(), "application/json".into());
    Value::Object(metadata).to_string()
}

/// The house seller's agent id, created on first use with a key nobody holds.
fn house_agent(conn: &Connection, now: &str) -> Result<String> {
    if let Some(Value::String(id)) = settings::get(conn, settings::HOUSE)? {
        return Ok(id);
    }
    let id = match agent_store::house_id(conn)? {
        Some(id) => id,
        None => {
            let agent = AgentRow {
                id: uuid::Uuid::new_v4().to_string(),
                handle: format!(
                    "A-{}",
                    &hash_secret(&b64url(&random_bytes::<16>()))[..8].to_ascii_uppercase()
                ),
                name: "marketplace house seller".into(),
                display_name: Some("Marketplace reference samples".into()),
                email: None,
                callback_url: None,
                created_at: now.to_owned(),
                updated_at: now.to_owned(),
                rating_count: 0,
                sales_count: 0,
                restricted: None,
                via_grant: None,
            };
            let skeleton = agent.display_name.as_deref().map(names::skeleton);
            let key_hash = hash_secret(&b64url(&random_bytes::<32>()));
            agent_store::insert_house(conn, &agent, &key_hash, skeleton.as_deref())?;
            agent.id
        }
    };
    settings::put(conn, settings::HOUSE, &Value::String(id.clone()), now)?;
    Ok(id)
}
