//! The taxonomy (macro-categories, verticals, browse classes), its idempotent seeding, and the
//! classifier that files a listing when the seller names no vertical.
//!
//! The data lives in `assets/taxonomy.json` (embedded). The classifier is deliberately simple
//! and explainable: every vertical has distinctive keywords; a keyword found in the title scores
//! 2, in the description 1; the highest score wins (ties go to the vertical listed first); with a
//! category hint only that category's verticals compete; no match files into `general`. The
//! personal-health-data vertical is never chosen automatically (it needs a consent flow).
//!
//! It sits below the domains that read it: the catalogue files and browses listings by it,
//! identity's ingress names its classes, and the App loads it once.

use std::collections::HashMap;

use rusqlite::Connection;
use serde::Deserialize;

use crate::error::Result;
use crate::store::catalog::{self as catalog_store, CategoryRow, VerticalRow};

/// A browse class: a named group of macro-categories (`class=RESEARCH`).
#[derive(Clone, Debug, Deserialize)]
pub struct Class {
    pub slug: String,
    pub name: String,
    pub description: String,
}

/// A macro-category.
#[derive(Clone, Debug, Deserialize)]
pub struct Category {
    pub slug: String,
    pub name: String,
    pub icon: String,
    pub class: String,
    pub description: String,
}

/// A vertical (subcategory) of a macro-category.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Vertical {
    pub slug: String,
    pub name: String,
    pub icon: String,
    pub category: String,
    pub is_external: bool,
    pub keywords: Vec<String>,
}

#[derive(Deserialize)]
struct TaxonomyFile {
    classes: Vec<Class>,
    categories: Vec<Category>,
    verticals: Vec<Vertical>,
}

/// The vertical every unclassifiable listing falls back to.
pub const FALLBACK_VERTICAL: &str = "general";
/// The vertical whose listings need the signed health-data consent flow.
pub const HEALTH_VERTICAL: &str = "personal-health-data";

/// The taxonomy in memory (it never changes while the server runs).
#[derive(Clone)]
pub struct Taxonomy {
    pub classes: Vec<Class>,
    pub categories: Vec<Category>,
    pub verticals: Vec<Vertical>,
    vertical_index: HashMap<String, usize>,
    category_index: HashMap<String, usize>,
}

impl Taxonomy {
    /// Loads the embedded taxonomy.
    ///
    /// # Panics
    /// When the embedded file is malformed; a unit test guards against shipping one.
    pub fn load() -> Taxonomy {
        let file: TaxonomyFile = serde_json::from_slice(&crate::assets::bytes("taxonomy.json"))
            .expect("assets/taxonomy.json is valid");
        let vertical_index = file
            .verticals
            .iter()
            .enumerate()
            .map(|(i, v)| (v.slug.clone(), i))
            .collect();
        let category_index = file
            .categories
            .iter()
            .enumerate()
            .map(|(i, c)| (c.slug.clone(), i))
            .collect();
        Taxonomy {
            classes: file.classes,
            categories: file.categories,
            verticals: file.verticals,
            vertical_index,
            category_index,
        }
    }

    /// A vertical by slug.
    pub fn vertical(&self, slug: &str) -> Option<&Vertical> {
        self.vertical_index.get(slug).map(|&i| &self.verticals[i])
    }

    /// A category by slug.
    pub fn category(&self, slug: &str) -> Option<&Category> {
        self.category_index.get(slug).map(|&i| &self.categories[i])
    }

    /// The category slugs of a browse class.
    pub fn class_categories(&self, class: &str) -> Vec<&str> {
        self.categories
            .iter()
            .filter(|c| c.class == class)
            .map(|c| c.slug.as_str())
            .collect()
    }

    /// Files a listing into a vertical by its title and description (see the module docs).
    pub fn classify(
        &self,
        title: &str,
        description: &str,
        category_hint: Option<&str>,
    ) -> &Vertical {
        let title = normalize(title);
        let description = normalize(description);
        let mut best: Option<(usize, &Vertical)> = None;
        for vertical in &self.verticals {
            // Health data needs the seller's explicit choice and consent flow: never auto-filed.
            if vertical.slug == HEALTH_VERTICAL
                || category_hint.is_some_and(|hint| hint != vertical.category)
            {
                continue;
            }
            let score: usize = vertical
                .keywords
                .iter()
                .map(|keyword| {
                    let needle = format!(" {} ", normalize(keyword).trim());
                    2 * usize::from(title.contains(&needle))
                        + usize::from(description.contains(&needle))
                })
                .sum();
            if score > 0 && best.is_none_or(|(top, _)| score > top) {
                best = Some((score, vertical));
            }
        }
        match best {
            Some((_, vertical)) => vertical,
            None => self
                .vertical(FALLBACK_VERTICAL)
                .expect("the fallback vertical exists"),
        }
    }
}

/// Lowercase words separated by single spaces, padded with a space at both ends, so keyword
/// phrases match on word boundaries.
fn normalize(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push(' ');
    let mut last_space = true;
    for c in text.chars().flat_map(char::to_lowercase) {
        if c.is_alphanumeric() {
            out.push(c);
            last_space = false;
        } else if !last_space {
            out.push(' ');
            last_space = true;
        }
    }
    if !last_space {
        out.push(' ');
    }
    out
}

/// Writes the taxonomy into the database (insert or update; never deletes).
///
/// # Errors
/// Database failure.
pub fn seed(conn: &Connection, taxonomy: &Taxonomy) -> Result<()> {
    let categories: Vec<CategoryRow<'_>> = taxonomy
        .categories
        .iter()
        .zip(0..)
        .map(|(c, position)| CategoryRow {
            slug: &c.slug,
            name: &c.name,
            icon: &c.icon,
            class: &c.class,
            description: &c.description,
            position,
        })
        .collect();
    catalog_store::upsert_categories(conn, &categories)?;
    let verticals: Vec<VerticalRow<'_>> = taxonomy
        .verticals
        .iter()
        .zip(0..)
        .map(|(v, position)| VerticalRow {
            slug: &v.slug,
            name: &v.name,
            icon: &v.icon,
            category: &v.category,
            is_external: v.is_external,
            position,
        })
        .collect();
    catalog_store::upsert_verticals(conn, &verticals)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_taxonomy_is_complete_and_consistent() {
        let taxonomy = Taxonomy::load();
        let slugs: Vec<&str> = taxonomy
            .categories
            .iter()
            .map(|c| c.slug.as_str())
            .collect();
        assert_eq!(
            slugs,
            [
                "data",
                "services",
                "investments",
                "digital-assets",
                "real-estate",
                "products",
                "documents",
                "jobs",
                "compute",
                "access",
                "capital",
                "ip",
                "other"
            ]
        );
        for vertical in &taxonomy.verticals {
            assert!(
                taxonomy.category(&vertical.category).is_some(),
                "{}",
                vertical.slug
            );
        }
        for category in &taxonomy.categories {
            assert!(
                taxonomy.classes.iter().any(|c| c.slug == category.class),
                "{}",
                category.slug
            );
        }
        assert!(taxonomy.vertical(FALLBACK_VERTICAL).is_some());
        assert!(taxonomy.vertical(HEALTH_VERTICAL).is_some());
        // The vertical slugs listed in the interface specification (Vertical section).
        let mut expected = vec![
            "ai-ml",
            "ai-consulting",
            "ai-models",
            "ai-prompts",
            "api-access",
            "agents-for-hire",
            "agriculture",
            "analysis-insights",
            "auto-transport-services",
            "automation-workflows",
            "automotive",
            "aviation",
            "banking",
            "bounties",
            "cleaning-services",
            "cloud-datacenters",
            "code-templates",
            "commercial-property",
            "compute-gpu",
            "construction-trades",
            "construction-bid",
            "construction-blueprints",
            "construction-datacenters",
            "construction-energy",
            "construction-policies",
            "contracts-templates",
            "creative-assets",
            "crowdfunding-grants",
            "cybersecurity",
            "demographics",
            "domains",
            "ev-charging",
            "education",
            "elections",
            "energy",
            "environment",
            "events-hospitality-services",
            "events-tickets",
            "finance-macro",
            "food-beverage",
            "forms-filings",
            "fractional-real-estate",
            "general",
            "gov-spending",
            "hardware-devices",
            "health-wellness-services",
            "healthcare",
            "home-garden-services",
            "it-software-services",
            "insurance",
            "jobs-gigs",
            "labor-market",
            "legal",
            "lending-credit",
            "manufacturing",
            "marketing-creative-services",
            "media-licenses",
            "medical-devices",
            "memberships",
            "mining-metals",
            "music",
            "patents-trademarks",
            "personal-health-data",
            "pharma",
            "physical-goods",
            "powersports",
            "professional-services",
            "revenue-shares",
            "property-listings",
            "public-safety",
            "real-estate",
            "rentals-leases",
            "repairs-restoration",
            "research-data",
            "retail-ecommerce",
            "storage-bandwidth",
            "training-data",
            "travel-hospitality",
            "trucking",
            "web-development",
        ];
        let mut actual: Vec<&str> = taxonomy.verticals.iter().map(|v| v.slug.as_str()).collect();
        expected.sort_unstable();
        actual.sort_unstable();
        assert_eq!(actual, expected, "every vertical slug of the spec, no more");
    }

    #[test]
    fn classifier_files_by_keywords_and_falls_back_to_general() {
        let taxonomy = Taxonomy::load();
        let filed = taxonomy.classify(
            "GPU hours on H100 cluster",
            "Rent compute by the hour",
            None,
        );
        assert_eq!(filed.category, "compute", "{}", filed.slug);
        let filed = taxonomy.classify(
            "Wearable heart rate and sleep data",
            "step count export",
            None,
        );
        assert_ne!(
            filed.slug, HEALTH_VERTICAL,
            "health data is never auto-filed"
        );
        let filed = taxonomy.classify("zzz qqq", "nothing to see", None);
        assert_eq!(filed.slug, FALLBACK_VERTICAL);
        assert_eq!(normalize("Hello, World!"), " hello world ");
    }
}
