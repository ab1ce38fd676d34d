//! A listing row as read: borrowed from SQLite's buffers (`Listing<&str>`, what a browse page
//! renders from) or owned (`ListingRow`), and the one reader of its columns both use.

use rusqlite::Row;

use super::{Listing, ListingRow};

pub(super) fn listing_ref<'r>(row: &'r Row<'_>) -> rusqlite::Result<Listing<&'r str>> {
    let text = |i: usize| text_at(row, i);
    let optional = |i: usize| -> rusqlite::Result<Option<&'r str>> {
        match row.get_ref(i)? {
            rusqlite::types::ValueRef::Null => Ok(None),
            _ => text(i).map(Some),
        }
    };
    Ok(Listing {
        seq: row.get(0)?,
        id: text(1)?,
        seller_id: text(2)?,
        seller_code: text(3)?,
        seller_reputation: row.get(4)?,
        vertical_slug: text(5)?,
        category: text(6)?,
        title: text(7)?,
        description: text(8)?,
        price_cents: row.get(9)?,
        listing_type: text(10)?,
        max_copies: row.get(11)?,
        sold_count: row.get(12)?,
        purchase_count: row.get(13)?,
        view_count: row.get(14)?,
        active: row.get(15)?,
        exclusive_sold: row.get(16)?,
        fingerprint: text(17)?,
        preview: text(18)?,
        images: text(19)?,
        metadata: text(20)?,
        is_sample: row.get(21)?,
        physical: row.get(22)?,
        deliverable_ref: optional(23)?,
        health_consent: row.get(24)?,
        deidentification: optional(25)?,
        authorized_uses: optional(26)?,
        rating_sum: row.get(27)?,
        rating_count: row.get(28)?,
        quality: row.get(29)?,
        created_at: text(30)?,
        version: row.get(31)?,
        last_modified: optional(32)?,
        modification_count: row.get(33)?,
    })
}

pub(super) fn from_row(row: &Row<'_>) -> rusqlite::Result<ListingRow> {
    Ok(listing_ref(row)?.to_owned())
}

/// The text of column `i`, borrowed from the row being read.
pub(super) fn text_at<'r>(row: &'r Row<'_>, i: usize) -> rusqlite::Result<&'r str> {
    row.get_ref(i)?.as_str().map_err(|e| {
        rusqlite::Error::FromSqlConversionFailure(i, rusqlite::types::Type::Text, Box::new(e))
    })
}

impl Listing<&str> {
    /// The same listing with its texts copied.
    pub fn to_owned(&self) -> ListingRow {
        let text = |s: &str| s.to_owned();
        let optional = |s: Option<&str>| s.map(str::to_owned);
        Listing {
            seq: self.seq,
            id: text(self.id),
            seller_id: text(self.seller_id),
            seller_code: text(self.seller_code),
            seller_reputation: self.seller_reputation,
            vertical_slug: text(self.vertical_slug),
            category: text(self.category),
            title: text(self.title),
            description: text(self.description),
            price_cents: self.price_cents,
            listing_type: text(self.listing_type),
            max_copies: self.max_copies,
            sold_count: self.sold_count,
            purchase_count: self.purchase_count,
            view_count: self.view_count,
            active: self.active,
            exclusive_sold: self.exclusive_sold,
            fingerprint: text(self.fingerprint),
            preview: text(self.preview),
            images: text(self.images),
            metadata: text(self.metadata),
            is_sample: self.is_sample,
            physical: self.physical,
            deliverable_ref: optional(self.deliverable_ref),
            health_consent: self.health_consent,
            deidentification: optional(self.deidentification),
            authorized_uses: optional(self.authorized_uses),
            rating_sum: self.rating_sum,
            rating_count: self.rating_count,
            quality: self.quality,
            created_at: text(self.created_at),
            version: self.version,
            last_modified: optional(self.last_modified),
            modification_count: self.modification_count,
        }
    }
}
