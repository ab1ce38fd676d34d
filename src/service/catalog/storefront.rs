//! A seller's public page (`GET /api/marketplace/sellers/{code}`, and `/market/sellers/{code}`
//! for people): the seller as a listing's detail shows them, named by their public code, and a
//! page of their active listings, newest first, as browse shows listings.
//!
//! Why not a `seller` filter on browse: the browse index keeps ~72 bytes per listing and no
//! seller (a filter there would grow every entry for one page's sake), while SQLite already
//! serves a seller's own rows in order from `listings_seller`, so a page costs its rows.

use serde::Serialize;

use crate::error::{Error, Result};
use crate::request::sellers::Seller;
use crate::service::App;
use crate::service::catalog::reputation;
use crate::service::catalog::view::ListingView;
use crate::store::agents as agent_store;
use crate::store::listings as listing_store;

/// The seller as the public reads show them (a listing's detail shows the same, less the code).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PublicSeller {
    pub code: String,
    pub id: String,
    pub display_name: String,
    pub reputation: f64,
    pub rating_count: i64,
    pub total_sales_count: i64,
}

/// `GET /api/marketplace/sellers/{code}`: the seller and a page of their active listings.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SellerPage<'a> {
    pub seller: PublicSeller,
    pub listings: Vec<ListingView<'a>>,
    pub total: i64,
    pub limit: i64,
    pub offset: i64,
}

/// Reads a seller's public page.
///
/// # Errors
/// `NOT_FOUND` for a code no seller holds; database failure.
pub async fn page<'a>(app: &'a App, request: &Seller) -> Result<SellerPage<'a>> {
    let not_found = || Error::NotFound(format!("no seller with code {:?}", request.code));
    if !is_code(&request.code) {
        return Err(not_found());
    }
    let (code, limit, offset) = (request.code.clone(), request.limit, request.offset);
    let found = app
        .store
        .read(move |conn| {
            let Some(agent) = agent_store::find_by_seller_code(conn, &code)? else {
                return Ok(None);
            };
            let reputation = reputation::of_agent(conn, &agent.id)?;
            let (rows, total) = listing_store::active_of_seller(conn, &agent.id, limit, offset)?;
            Ok(Some((agent, reputation, rows, total)))
        })
        .await?;
    let (agent, reputation, rows, total) = found.ok_or_else(not_found)?;
    Ok(SellerPage {
        seller: PublicSeller {
            display_name: agent.display_name.unwrap_or_else(|| request.code.clone()),
            code: request.code.clone(),
            id: agent.id,
            reputation,
            rating_count: agent.rating_count,
            total_sales_count: agent.sales_count,
        },
        listings: rows
            .into_iter()
            .map(|row| ListingView::owned(app, row).in_canonical_order())
            .collect(),
        total,
        limit,
        offset,
    })
}

/// Whether `code` has the form of a seller code (`S-` and six digits).
fn is_code(code: &str) -> bool {
    code.strip_prefix("S-")
        .is_some_and(|digits| digits.len() == 6 && digits.bytes().all(|b| b.is_ascii_digit()))
}

#[cfg(test)]
mod tests {
    #[test]
    fn only_the_form_of_a_code_is_looked_up() {
        assert!(super::is_code("S-012345"));
        for other in [
            "S-12345",
            "S-1234567",
            "s-012345",
            "S-01234a",
            "",
            "A-7K2M9QXP",
        ] {
            assert!(!super::is_code(other), "{other}");
        }
    }
}
