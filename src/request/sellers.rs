//! A seller's public page: `GET /api/marketplace/sellers/{code}` (and `/market/sellers/{code}`
//! for people), named by the seller's public code, never by handle.

use super::catalog::{OFFSET_MAX, PAGE_DEFAULT, PAGE_MAX};
use super::{Field, Input, Kind, Op};
use crate::error::Result;

const LIMIT: Field = Field::rest("limit", Kind::Int(1, PAGE_MAX)).doc("Page size.");
const OFFSET: Field = Field::rest("offset", Kind::Int(0, OFFSET_MAX));

/// `GET /api/marketplace/sellers/{code}` (query: the page of listings).
pub static SELLER: Op = Op {
    name: "seller_page",
    fields: &[LIMIT, OFFSET],
    scope: None,
    tool: None,
};

/// A seller named by code, and the page of their active listings asked for.
#[derive(Debug)]
pub struct Seller {
    /// The public seller code (`S-` and six digits), from the path.
    pub code: String,
    pub limit: i64,
    pub offset: i64,
}

impl Seller {
    /// # Errors
    /// `INVALID_ARGUMENT` naming the parameter.
    pub fn read(code: &str, input: &Input) -> Result<Seller> {
        Ok(Seller {
            code: code.to_owned(),
            limit: input.int(&LIMIT)?.unwrap_or(PAGE_DEFAULT),
            offset: input.int(&OFFSET)?.unwrap_or(0),
        })
    }
}
