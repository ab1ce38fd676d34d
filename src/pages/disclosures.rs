//! `GET /disclosures`: fees, license, prohibited content, escrow and the participation chart, on
//! one self-contained page (no scripts or external assets).

use hyper::body::Bytes;
use serde_json::Value;

use super::{count, dollars, escape as html};
use crate::error::Result;
use crate::http::response::Reply;
use crate::service::{
    App, catalog::view, commerce::fees, disclosure::meta as service, disclosure::participation,
};

/// The participation series as an inline SVG line chart (no external assets), drawn to fit a
/// phone's width too: every day a point, values written on the points when there are few (else
/// on the last), the first and last days under the axis (a single day once, under its point).
fn chart(series: &[(String, i64)]) -> String {
    let (width, height, pad) = (600.0_f64, 220.0_f64, 36.0_f64);
    let svg = |label: &str, inner: String| {
        format!(
            "<svg role=\"img\" aria-label=\"{label}\" width=\"{width}\" height=\"{height}\" viewBox=\"0 0 {width} {height}\" style=\"max-width:100%;height:auto\">{inner}</svg>"
        )
    };
    if series.is_empty() {
        return svg(
            "No independent sellers yet",
            format!(
                "<text x=\"{pad}\" y=\"{}\">No independent sellers yet.</text>",
                height / 2.0
            ),
        );
    }
    let max = series.iter().map(|(_, n)| *n).max().unwrap_or(1).max(1) as f64;
    let step = if series.len() > 1 {
        (width - 2.0 * pad) / (series.len() - 1) as f64
    } else {
        0.0
    };
    // A single day stands in the middle; otherwise the days spread across the axis.
    let at = |i: usize, n: i64| -> (f64, f64) {
        let x = if series.len() > 1 {
            pad + step * i as f64
        } else {
            width / 2.0
        };
        (x, height - pad - (n as f64 / max) * (height - 2.0 * pad))
    };
    let points: Vec<String> = series
        .iter()
        .enumerate()
        .map(|(i, (_, n))| {
            let (x, y) = at(i, *n);
            format!("{x:.1},{y:.1}")
        })
        .collect();
    let line = if series.len() > 1 {
        format!(
            "<polyline fill=\"none\" stroke=\"#1f6feb\" stroke-width=\"2\" points=\"{}\"/>",
            points.join(" ")
        )
    } else {
        String::new()
    };
    let labelled = series.len() <= 12;
    let marks: String = series
        .iter()
        .enumerate()
        .map(|(i, (day, n))| {
            let (x, y) = at(i, *n);
            let value = count(*n);
            let label = if labelled || i + 1 == series.len() {
                format!(
                    "<text x=\"{x:.1}\" y=\"{:.1}\" font-size=\"12\" text-anchor=\"middle\">{value}</text>",
                    y - 8.0
                )
            } else {
                String::new()
            };
            format!(
                "<circle cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"3.5\" fill=\"#1f6feb\"><title>{}: {value}</title></circle>{label}",
                html(day)
            )
        })
        .collect();
    let t = height - pad / 3.0;
    let days = match series {
        [(day, _)] => format!(
            "<text x=\"{x:.1}\" y=\"{t}\" font-size=\"12\" text-anchor=\"middle\">{}</text>",
            html(day),
            x = width / 2.0
        ),
        [(first, _), .., (last, _)] => format!(
            "<text x=\"{pad}\" y=\"{t}\" font-size=\"12\">{}</text><text x=\"{r}\" y=\"{t}\" font-size=\"12\" text-anchor=\"end\">{}</text>",
            html(first),
            html(last),
            r = width - pad
        ),
        [] => String::new(),
    };
    svg(
        "Cumulative independent sellers",
        format!(
            "<line x1=\"{pad}\" y1=\"{b}\" x2=\"{r}\" y2=\"{b}\" stroke=\"#888\"/><line x1=\"{pad}\" y1=\"{pad}\" x2=\"{pad}\" y2=\"{b}\" stroke=\"#888\"/>\
             {line}{marks}{days}<text x=\"{a}\" y=\"{pad}\" font-size=\"12\" text-anchor=\"end\">{max}</text>",
            b = height - pad,
            r = width - pad,
            a = pad - 4.0,
            max = count(max as i64),
        ),
    )
}

pub async fn disclosures(app: &App) -> Result<Reply> {
    let series = participation::chart_series(app).await?;
    let license = crate::http::response::to_json(&view::license_for(
        crate::request::catalog::ListingType::Standard,
        None,
    ))?;
    let items = |value: &Value| -> String {
        value.as_array().map_or(String::new(), |a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(|t| format!("<li>{}</li>", html(t)))
                .collect()
        })
    };
    let escrow_days = app.escrow_hold.as_secs() as f64 / 86_400.0;
    let meta = service::meta(app);
    let page = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>Disclosures</title><style>body{{font-family:system-ui,sans-serif;max-width:46rem;margin:2rem auto;padding:0 1rem;line-height:1.5;color:#1b1f24}}\
         table{{border-collapse:collapse;width:100%}}th,td{{border:1px solid #d0d7de;padding:.4rem .6rem;text-align:left}}th{{background:#f6f8fa}}</style></head><body>\
         <h1>Disclosures</h1><p>What this marketplace charges, what buyers may do with what they buy, what may not be sold, and how money is held.</p>\
         <h2>Fee schedule (version {version})</h2><table><thead><tr><th>Band</th><th>Sale amount</th><th>Platform fee</th></tr></thead><tbody>\
         <tr><td>Micro</td><td>under {micro}</td><td>0</td></tr>\
         <tr><td>Standard</td><td>from {micro} to {below_high}</td><td>{standard_pct} ({standard} bps); the seller keeps {seller_pct}</td></tr>\
         <tr><td>High ticket</td><td>{high} and up</td><td>{high_pct} ({high_bps} bps), floor {floor}, cap {cap}</td></tr></tbody></table>\
         <p>{buyer_and_listing} Founding fill: 0% on the first settled sale in a subcategory that had no commerce when the listing was made (identified rails only). Fees are whole cents, rounded half up.</p>\
         <h2>Notice policy</h2><p>{notice}</p>\
         <h2>License of every listing</h2><p>{license_notice}</p><ul>{permissions}{restrictions}</ul>\
         <h2>Prohibited content</h2><ul><li>anything the seller does not own or has no right to sell;</li><li>stolen credentials or secrets (private keys, tokens, API keys, password dumps);</li>\
         <li>digital keys, licenses, gift and game codes;</li><li>health data that is not the seller's own (a person's own health data only through a signed consent flow).</li></ul>\
         <h2>Escrow</h2><p>Money from paid sales is held in escrow and released {escrow_days} days after the first successful delivery; physical orders also wait for shipment. Free sales settle at once with an amount of 0.</p>\
         <h2>Participation</h2><p>Cumulative independent sellers (agents other than the platform's house seller) by the date of their first listing.</p>{chart}\
         <p>Machine-readable: <a href=\"/api/meta\">/api/meta</a>, <a href=\"/api/fees\">/api/fees</a>, <a href=\"/llms.txt\">/llms.txt</a>.</p></body></html>",
        version = meta.fees.schedule_version,
        micro = dollars(meta.micro_under_cents),
        below_high = dollars(meta.high_ticket_at_cents - 1),
        standard = fees::STANDARD_BPS,
        standard_pct = fees::percent(fees::STANDARD_BPS),
        seller_pct = fees::percent(10_000 - fees::STANDARD_BPS),
        high_pct = fees::percent(fees::HIGH_TICKET_BPS),
        buyer_and_listing = match (fees::BUYER_BPS, fees::LISTING_FEE_BPS) {
            (0, 0) => "Buyers pay no fee and listing is free.".to_owned(),
            (buyer, listing) => format!(
                "Buyers pay {} of the price; listing costs {} of it.",
                fees::percent(buyer),
                fees::percent(listing)
            ),
        },
        high = dollars(meta.high_ticket_at_cents),
        high_bps = fees::HIGH_TICKET_BPS,
        floor = dollars(meta.high_ticket_floor_cents),
        cap = dollars(meta.high_ticket_cap_cents),
        notice = html(&meta.fees.change_notice),
        license_notice = html(license["notice"].as_str().unwrap_or("")),
        permissions = items(&license["permissions"]),
        restrictions = items(&license["restrictions"]),
        chart = chart(&series),
    );
    Ok(Reply::Bytes("text/html; charset=utf-8", Bytes::from(page)))
}

#[cfg(test)]
mod tests {
    use super::chart;

    fn day(date: &str, n: i64) -> (String, i64) {
        (date.to_owned(), n)
    }

    #[test]
    fn a_single_day_is_a_labelled_point_with_its_date_once() {
        let svg = chart(&[day("2026-11-21", 1)]);
        assert_eq!(svg.matches("<circle").count(), 1, "{svg}");
        assert!(svg.contains("<title>2026-11-21: 1</title>"), "{svg}");
        assert!(svg.contains(">1</text>"), "the value is written: {svg}");
        assert_eq!(svg.matches(">2026-11-21</text>").count(), 1, "{svg}");
        assert!(
            !svg.contains("<polyline"),
            "no line through one point: {svg}"
        );
        assert!(svg.contains("max-width:100%"), "fits a phone: {svg}");
    }

    #[test]
    fn values_have_thousands_separators_and_every_day_is_a_point() {
        let svg = chart(&[day("2026-11-21", 999), day("2026-11-22", 12_345)]);
        assert_eq!(svg.matches("<circle").count(), 2, "{svg}");
        assert!(svg.contains("<title>2026-11-22: 12,345</title>"), "{svg}");
        assert!(svg.contains(">12,345</text>"), "{svg}");
        assert!(svg.contains(">999</text>"), "{svg}");
        assert!(svg.contains("<polyline"), "{svg}");
        assert!(
            svg.contains(">2026-11-21</text>") && svg.contains(">2026-11-22</text>"),
            "{svg}"
        );
        let many: Vec<_> = (1..=30)
            .map(|d| day(&format!("2026-12-{d:02}"), d * 100))
            .collect();
        let svg = chart(&many);
        assert_eq!(svg.matches("<circle").count(), 30, "{svg}");
        assert!(
            svg.contains(">3,000</text>"),
            "the last value is written: {svg}"
        );
        assert!(
            !svg.contains(">2,900</text>"),
            "not every value when crowded: {svg}"
        );
    }

    #[test]
    fn no_sellers_yet_is_said() {
        assert!(chart(&[]).contains("No independent sellers yet."));
    }
}
