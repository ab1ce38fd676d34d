//! The operator's moderation of the catalogue: deactivating a listing with a reason. It is a new
//! signed version like any edit, its reason in the history entry, and the entry is marked as
//! the operator's (`by: "operator"`), which a seller's own edit cannot write.

use super::listings::find;
use super::versions::write_version_by;
use crate::error::{Error, Result};
use crate::service::App;
use crate::service::trust::receipts::Signed;
use crate::store::listings as store;

/// The longest moderation reason.
pub const REASON_MAX: usize = 500;

/// Deactivates the listing `listing_id` for `reason` (required: a moderation says why).
/// Returns the signed history entry, or `None` when the listing was inactive already.
///
/// # Errors
/// `INVALID_ARGUMENT` without a reason or with one too long; `NOT_FOUND`; `VERSION_CONFLICT`
/// when the listing changed meanwhile; database failure.
pub async fn deactivate(app: &App, listing_id: &str, reason: &str) -> Result<Option<Signed>> {
    let reason = reason.trim();
    if reason.is_empty() || reason.chars().count() > REASON_MAX {
        return Err(Error::InvalidArgument(format!(
            "reason: say why the listing is deactivated, in 1 to {REASON_MAX} characters"
        )));
    }
    let current = find(app, listing_id).await?;
    if !current.active {
        return Ok(None);
    }
    let mut next = current.clone();
    next.active = false;
    let (keyring, now, reason) = (app.keyring.clone(), app.now(), reason.to_owned());
    let logged = reason.clone();
    let written = app
        .store
        .write(move |tx| {
            let stored = store::find(tx, &current.id)?
                .ok_or_else(|| Error::NotFound("listing vanished".into()))?;
            if stored.version != current.version || stored.sold_count != current.sold_count {
                return Err(Error::Conflict {
                    code: "VERSION_CONFLICT",
                    message: "the listing changed while this moderation was prepared; retry".into(),
                });
            }
            write_version_by(tx, &keyring, &now, &stored, next, Some(reason), true)
        })
        .await?;
    let Some((row, entry)) = written else {
        return Ok(None);
    };
    app.browse.upsert(&row);
    tracing::info!(target: "console", listing = %row.id, reason = %logged, "operator deactivated a listing");
    Ok(Some(entry))
}
