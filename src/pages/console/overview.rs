//! `GET /console`: the overview. The counts of `/api/stats`, the charts of sales, messages and
//! escrow held per day, callback outcomes, replication, version, uptime, the data directory's
//! size and warnings about risky settings (`service::disclosure::overview`).

use super::{charts, html, layout};
use crate::error::Result;
use crate::http::response::Reply;
use crate::pages::{count, dollars, escape};
use crate::service::App;
use crate::service::disclosure::overview::{self, Overview};
use crate::service::identity::console::Session;

/// The overview page.
///
/// # Errors
/// Database failure.
pub async fn page(app: &App, session: &Session) -> Result<Reply> {
    let overview = overview::overview(app).await?;
    Ok(html(
        200,
        layout(
            app,
            "Overview",
            Some(session),
            "/console",
            &render(&overview),
        ),
    ))
}

fn tile(id: &str, label: &str, value: &str) -> String {
    format!(
        "<div class=\"tile\"><dt>{label}</dt><dd id=\"{id}\">{}</dd></div>",
        escape(value)
    )
}

fn render(o: &Overview) -> String {
    let tiles = [
        tile("count-agents", "Agents", &count(o.agents)),
        tile("count-listings", "Listings", &count(o.listings)),
        tile("count-sales", "Sales", &count(o.sales)),
        tile(
            "dead-letters",
            "Callback dead letters",
            &count(o.dead_letters),
        ),
    ]
    .concat();
    let series = |pick: fn(&overview::Day) -> i64| -> Vec<(String, i64)> {
        o.days.iter().map(|d| (d.day.clone(), pick(d))).collect()
    };
    let charts = [
        charts::bars("chart-sales", "Sales per day", &series(|d| d.sales), |v| {
            count(v)
        }),
        charts::bars(
            "chart-messages",
            "Messages per day",
            &series(|d| d.messages),
            count,
        ),
        charts::bars(
            "chart-escrow",
            "Escrow held (sellers' net, end of day)",
            &series(|d| d.escrow_held_cents),
            dollars,
        ),
    ]
    .concat();
    let warnings = if o.warnings.is_empty() {
        "<p id=\"warnings\">No risky setting found.</p>".to_owned()
    } else {
        let items: String = o
            .warnings
            .iter()
            .map(|w| format!("<li>{}</li>", escape(w)))
            .collect();
        format!("<div id=\"warnings\" class=\"warn\"><ul class=\"warnings\">{items}</ul></div>")
    };
    let lag = match (o.role, o.lag_seconds) {
        ("follower", Some(lag)) => format!("{lag:.1} s behind its primary"),
        ("follower", None) => "lag not known yet".to_owned(),
        _ => "—".to_owned(),
    };
    let uptime = o.uptime.as_secs();
    format!(
        "<h1>Overview</h1>\
         <p class=\"meta\">As of <time datetime=\"{now}\">{now}</time>. The counts are those of \
         <a href=\"/api/stats\">/api/stats</a>.</p>\
         <dl class=\"tiles\">{tiles}</dl>\
         <h2>Activity, last {days} days</h2><div class=\"charts\">{charts}</div>\
         <h2>Warnings</h2>{warnings}\
         <h2>This server</h2><div class=\"scroll\"><table id=\"server\"><tbody>\
         <tr><th scope=\"row\">Version</th><td id=\"version\">{version}</td></tr>\
         <tr><th scope=\"row\">Uptime</th><td id=\"uptime\">{h} h {m} min</td></tr>\
         <tr><th scope=\"row\">Replication role</th><td id=\"role\">{role}</td></tr>\
         <tr><th scope=\"row\">Replication lag</th><td id=\"lag\">{lag}</td></tr>\
         <tr><th scope=\"row\">Data directory</th><td id=\"data-size\">{size}</td></tr>\
         <tr><th scope=\"row\">Callback deliveries</th><td id=\"callbacks\">{pending} pending, {delivered} delivered, {dead} dead letters</td></tr>\
         </tbody></table></div>",
        now = escape(&o.now),
        days = o.days.len(),
        version = escape(o.version),
        h = uptime / 3600,
        m = (uptime % 3600) / 60,
        role = o.role,
        size = bytes(o.data_bytes),
        pending = count(o.callbacks_pending),
        delivered = count(o.callbacks_delivered),
        dead = count(o.dead_letters),
    )
}

/// Bytes for people: `12.3 MB`.
fn bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["bytes", "KB", "MB", "GB", "TB"];
    let mut value = n as f64;
    let mut unit = 0;
    while value >= 1000.0 && unit + 1 < UNITS.len() {
        value /= 1000.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} bytes")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_as_people_write_them() {
        assert_eq!(bytes(512), "512 bytes");
        assert_eq!(bytes(12_345_678), "12.3 MB");
    }
}
