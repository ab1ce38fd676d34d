//! A listing's public ratings: the signed attestations buyers' ratings carry (made by
//! `purchases::rate`), shown on the listing without the buyer.

use serde_json::Value;

use crate::error::Result;
use crate::service::App;
use crate::store::purchases as store;

/// The latest ratings of a listing, as their public attestations.
///
/// # Errors
/// Database failure.
pub async fn ratings_of(app: &App, listing_id: &str) -> Result<Vec<Value>> {
    let id = listing_id.to_owned();
    let texts = app
        .store
        .read(move |conn| store::ratings_of(conn, &id, 20))
        .await?;
    Ok(texts
        .iter()
        .filter_map(|t| serde_json::from_str(t).ok())
        .collect())
}
