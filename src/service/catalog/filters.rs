//! The filters of a browse, and the two ways of testing them: [`keep`] on an entry, and
//! [`Admit`] on the entry's 32 flag bits, which a walk reads in sequence (`entries::flag`).

use crate::request::catalog::{Price, Samples};
use crate::service::catalog::entries::{Entry, flag};

/// The filters of a browse, with taxonomy slugs resolved to index positions.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Filters {
    /// An FTS5 MATCH expression, already made safe by the caller.
    pub fts: Option<String>,
    pub category: Option<u16>,
    /// Categories of a browse class.
    pub categories: Option<Vec<u16>>,
    pub vertical: Option<u16>,
    pub listing_type: Option<u8>,
    pub samples: Samples,
    pub price: Price,
    /// Minimum average rating in tenths (35 = 3.5); unrated listings are excluded.
    pub min_rating_tenths: Option<i64>,
}

#[cfg(test)]
impl Filters {
    /// No filter: every listing, samples included.
    pub(crate) fn none() -> Filters {
        Filters {
            fts: None,
            category: None,
            categories: None,
            vertical: None,
            listing_type: None,
            samples: Samples::Include,
            price: Price::All,
            min_rating_tenths: None,
        }
    }
}

/// The filters of a browse as a test of an entry's [`flags`] (`entries::flag`), which a walk
/// reads in sequence. Where a flag cannot tell (a vertical or category past what its bits
/// hold), `recheck` says the entry itself must be asked ([`keep`]); the test is never looser
/// than [`keep`] and, with `recheck`, exactly it (`browse_tests` compares them).
pub(crate) struct Admit {
    mask: u32,
    want: u32,
    rating: Option<u32>,
    categories: Option<u32>,
    pub recheck: bool,
}

impl Admit {
    pub fn new(filters: &Filters) -> Admit {
        let mut admit = Admit {
            mask: flag::ACTIVE,
            want: flag::ACTIVE,
            rating: None,
            categories: None,
            recheck: false,
        };
        let mut require = |bits: u32, set: bool| {
            admit.mask |= bits;
            if set {
                admit.want |= bits;
            }
        };
        match filters.samples {
            Samples::Exclude => require(flag::SAMPLE, false),
            Samples::Only => require(flag::SAMPLE, true),
            Samples::Include => {}
        }
        match filters.price {
            Price::All => {}
            Price::Paid => require(flag::PAID, true),
            Price::Free => require(flag::FREE, true),
        }
        if let Some(t) = filters.listing_type {
            admit.mask |= 3 << flag::TYPE_SHIFT;
            admit.want |= u32::from(t & 3) << flag::TYPE_SHIFT;
            admit.recheck |= t > 3;
        }
        if let Some(v) = filters.vertical {
            admit.mask |= 255 << flag::VERTICAL_SHIFT;
            admit.want |= u32::from(v.min(flag::MANY_VERTICALS)) << flag::VERTICAL_SHIFT;
            admit.recheck |= v >= flag::MANY_VERTICALS;
        }
        if let Some(c) = filters.category {
            admit.mask |= 31 << flag::CATEGORY_SHIFT;
            admit.want |= u32::from(c.min(flag::MANY_CATEGORIES)) << flag::CATEGORY_SHIFT;
            admit.recheck |= c >= flag::MANY_CATEGORIES;
        }
        if let Some(categories) = &filters.categories {
            admit.categories = Some(
                categories
                    .iter()
                    .fold(0, |set, &c| set | 1 << c.min(flag::MANY_CATEGORIES)),
            );
            admit.recheck |= categories.iter().any(|&c| c >= flag::MANY_CATEGORIES);
        }
        if let Some(tenths) = filters.min_rating_tenths {
            admit.rating = Some(u32::try_from(tenths.clamp(0, 62)).unwrap_or(62));
            admit.recheck |= tenths > 62;
        }
        admit
    }

    /// The bits every admitted entry's flags have under a mask: `(mask, want)`, what a walk
    /// tests in its own loop before asking [`Admit::admits`].
    pub fn prefilter(&self) -> (u32, u32) {
        (self.mask, self.want)
    }

    pub fn admits(&self, flags: u32) -> bool {
        let code = |shift: u32, bits: u32| (flags >> shift) & bits;
        flags & self.mask == self.want
            && self.rating.is_none_or(|least| {
                let rating = code(flag::RATING_SHIFT, 63);
                rating != flag::UNRATED && rating >= least
            })
            && self
                .categories
                .is_none_or(|set| set & (1 << code(flag::CATEGORY_SHIFT, 31)) != 0)
    }
}

/// Whether an entry passes a browse's filters (its search apart).
pub(crate) fn keep(entry: &Entry, query: &Filters) -> bool {
    if !entry.active {
        return false;
    }
    let samples_ok = match query.samples {
        Samples::Exclude => !entry.sample,
        Samples::Only => entry.sample,
        Samples::Include => true,
    };
    let price_ok = match query.price {
        Price::All => true,
        Price::Paid => entry.price_cents > 0,
        Price::Free => entry.price_cents == 0,
    };
    samples_ok
        && price_ok
        && query.category.is_none_or(|c| c == entry.category)
        && query
            .categories
            .as_ref()
            .is_none_or(|cs| cs.contains(&entry.category))
        && query.vertical.is_none_or(|v| v == entry.vertical)
        && query.listing_type.is_none_or(|t| t == entry.listing_type)
        && query.min_rating_tenths.is_none_or(|tenths| {
            entry.rating_count > 0
                && i64::from(entry.rating_sum) * 10 >= tenths * i64::from(entry.rating_count)
        })
}
