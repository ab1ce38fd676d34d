//! `/api/marketplace/categories`, `/api/verticals`, `/api/stats`, `/api/marketplace/stats`.

use crate::error::Result;
use crate::http::response::Reply;
use crate::service::{App, catalog::stats};

pub async fn categories(app: &App) -> Result<Reply> {
    Reply::answer(200, &stats::categories(app).await?)
}

pub async fn verticals(app: &App) -> Result<Reply> {
    Reply::answer(200, &stats::verticals(app).await?)
}

pub async fn platform_stats(app: &App) -> Result<Reply> {
    Reply::answer(200, &stats::platform(app).await?)
}

pub async fn marketplace_stats(app: &App) -> Result<Reply> {
    Reply::answer(200, &stats::marketplace(app).await?)
}
