//! `/api/marketplace/categories`, `/api/verticals`, `/api/stats`, `/api/marketplace/stats`.

use crate::error::Result;
use crate::http::response::Reply;
use crate::service::{App, catalog::stats};

pub async fn categories(app: &App) -> Result<Reply> {
    Ok(Reply::ok(stats::categories(app).await?))
}

pub async fn verticals(app: &App) -> Result<Reply> {
    Ok(Reply::ok(stats::verticals(app).await?))
}

pub async fn platform_stats(app: &App) -> Result<Reply> {
    Ok(Reply::ok(stats::platform(app).await?))
}

pub async fn marketplace_stats(app: &App) -> Result<Reply> {
    Ok(Reply::ok(stats::marketplace(app).await?))
}
