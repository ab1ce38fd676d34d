//! What the operator sees of messaging (the console's messages section): volume and delivery
//! only, never a body: callback deliveries with their attempts and outcomes, and the replay of
//! a dead letter through the same service as the agent's own replay route.

use super::callbacks::{self, Replayed};
use crate::error::{Error, Result};
use crate::service::App;
use crate::store::agents as agent_store;
use crate::store::messages::{self as store, DeliveryRow};

/// The most deliveries the page lists.
pub const LIMIT: i64 = 100;

/// A delivery with its agent's handle.
#[derive(Debug)]
pub struct Delivery {
    pub row: DeliveryRow,
    pub handle: String,
}

/// Deliveries, newest first, of one status (`pending`, `delivered`, `dead`) or all.
///
/// # Errors
/// `INVALID_ARGUMENT` for another status; database failure.
pub async fn deliveries(app: &App, status: Option<&str>) -> Result<Vec<Delivery>> {
    let status = match status.filter(|s| !s.is_empty()) {
        None => None,
        Some(s @ ("pending" | "delivered" | "dead")) => Some(s.to_owned()),
        Some(_) => {
            return Err(Error::InvalidArgument(
                "status: pending, delivered or dead".into(),
            ));
        }
    };
    app.store
        .read(move |conn| {
            store::all_deliveries(conn, status.as_deref(), LIMIT)?
                .into_iter()
                .map(|row| {
                    let handle = agent_store::find_by_id(conn, &row.agent_id)?
                        .map(|agent| agent.handle)
                        .unwrap_or_default();
                    Ok(Delivery { row, handle })
                })
                .collect()
        })
        .await
}

/// Replays the dead delivery `id` for its agent (`callbacks::replay`, as
/// `POST /api/agents/me/callbacks/{id}/replay` does for the agent itself).
///
/// # Errors
/// `NOT_FOUND`, `NOT_DEAD` (409), `CALLBACK_URL_MISSING` (409); database failure.
pub async fn replay(app: &App, id: &str) -> Result<Replayed> {
    let key = id.to_owned();
    let agent = app
        .store
        .read(move |conn| {
            let Some(delivery) = store::find_delivery(conn, &key)? else {
                return Ok(None);
            };
            agent_store::find_by_id(conn, &delivery.agent_id)
        })
        .await?
        .ok_or_else(|| Error::NotFound(format!("no callback delivery {id:?}")))?;
    let replayed = callbacks::replay(app, &agent, id).await?;
    tracing::info!(target: "console", delivery = %id, "operator replayed a dead callback delivery");
    Ok(replayed)
}
