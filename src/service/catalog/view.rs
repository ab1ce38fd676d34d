//! The Listing resource as buyers and browsers see it: one field list, rendered either as a JSON
//! value (detail, writes) or straight into canonical JSON bytes (browse pages), and the license
//! every listing carries.

use std::borrow::Cow;
use std::sync::OnceLock;

use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};
use serde_json::{Map, Value};

use crate::crypto::jcs;
use crate::request::catalog::{ListingType, METADATA_FIELDS};
use crate::service::App;
use crate::service::catalog::counters::Counters;
use crate::service::catalog::reputation;
use crate::service::taxonomy::Taxonomy;
use crate::store::listings::{Listing, ListingRow};

/// One field of the Listing resource, borrowed from the row: rendered either as a
/// `serde_json::Value` or straight into canonical JSON bytes (browse pages), from the same list.
enum Field<'a> {
    Str(&'a str),
    OptStr(Option<&'a str>),
    Int(i64),
    OptInt(Option<i64>),
    Float(f64),
    OptFloat(Option<f64>),
    Bool(bool),
    /// A JSON value (metadata fields).
    Json(&'a Value),
    /// JSON text stored in canonical form (images, authorized uses).
    Canonical(&'a str),
}

impl Field<'_> {
    fn to_value(&self) -> Value {
        match self {
            Field::Str(s) => Value::from(*s),
            Field::OptStr(s) => s.map_or(Value::Null, Value::from),
            Field::Int(i) => Value::from(*i),
            Field::OptInt(i) => i.map_or(Value::Null, Value::from),
            Field::Float(f) => Value::from(*f),
            Field::OptFloat(f) => f.map_or(Value::Null, Value::from),
            Field::Bool(b) => Value::Bool(*b),
            Field::Json(v) => (*v).clone(),
            Field::Canonical(text) => serde_json::from_str(text).unwrap_or(Value::Null),
        }
    }

    /// The field as JSON text written by a serializer (the same JSON as [`Field::to_value`]).
    fn serialize_into<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Field::Str(s) | Field::OptStr(Some(s)) => serializer.serialize_str(s),
            Field::OptStr(None) | Field::OptInt(None) | Field::OptFloat(None) => {
                serializer.serialize_none()
            }
            Field::Int(i) | Field::OptInt(Some(i)) => serializer.serialize_i64(*i),
            Field::Float(_) | Field::OptFloat(Some(_)) | Field::Canonical(_) => {
                self.to_value().serialize(serializer)
            }
            Field::Bool(b) => serializer.serialize_bool(*b),
            Field::Json(v) => v.serialize(serializer),
        }
    }

    fn write_canonical(&self, out: &mut Vec<u8>) {
        match self {
            Field::Str(s) | Field::OptStr(Some(s)) => jcs::write_str(s, out),
            Field::Int(i) | Field::OptInt(Some(i)) => jcs::write_int(*i, out),
            Field::OptStr(None) | Field::OptInt(None) | Field::OptFloat(None) => {
                out.extend_from_slice(b"null")
            }
            Field::Bool(true) => out.extend_from_slice(b"true"),
            Field::Bool(false) => out.extend_from_slice(b"false"),
            Field::Canonical(text) => out.extend_from_slice(text.as_bytes()),
            Field::Json(v) => jcs::write_canonical(v, out),
            Field::Float(_) | Field::OptFloat(Some(_)) => {
                jcs::write_canonical(&self.to_value(), out)
            }
        }
    }
}

/// The fields of the Listing resource, in no particular order (renderers sort as they need).
fn listing_fields<'a, S: AsRef<str>>(
    (taxonomy, counters): Shown<'a>,
    row: &'a Listing<S>,
    metadata: &'a Map<String, Value>,
    history_url: &'a str,
) -> Vec<(&'static str, Field<'a>)> {
    let text = |s: &'a S| s.as_ref();
    let optional = |s: &'a Option<S>| s.as_ref().map(AsRef::as_ref);
    let vertical = taxonomy.vertical(text(&row.vertical_slug));
    let rating_avg = reputation::average(row.rating_sum, row.rating_count);
    let mut fields = vec![
        ("id", Field::Str(text(&row.id))),
        ("sellerId", Field::Str(text(&row.seller_id))),
        ("sellerName", Field::Str(text(&row.seller_code))),
        ("sellerReputation", Field::Float(row.seller_reputation)),
        ("ratingAvg", Field::OptFloat(rating_avg)),
        ("ratingCount", Field::Int(row.rating_count)),
        ("verticalSlug", Field::Str(text(&row.vertical_slug))),
        (
            "verticalName",
            Field::OptStr(vertical.map(|v| v.name.as_str())),
        ),
        (
            "verticalIcon",
            Field::OptStr(vertical.map(|v| v.icon.as_str())),
        ),
        ("verticalCategory", Field::Str(text(&row.category))),
        ("pricingType", Field::Str("fixed")),
        ("title", Field::Str(text(&row.title))),
        ("description", Field::Str(text(&row.description))),
        ("priceCents", Field::Int(row.price_cents)),
        ("betaFree", Field::Bool(false)),
        ("betaNote", Field::OptStr(None)),
        ("listingType", Field::Str(text(&row.listing_type))),
        ("maxCopies", Field::OptInt(row.max_copies)),
        ("soldCount", Field::Int(row.sold_count)),
        ("purchaseCount", Field::Int(row.purchase_count)),
        (
            "viewCount",
            Field::Int(row.view_count + counters.pending_views(row.seq)),
        ),
        ("active", Field::Bool(row.active)),
        ("exclusiveSold", Field::Bool(row.exclusive_sold)),
        ("fingerprint", Field::Str(text(&row.fingerprint))),
        ("images", Field::Canonical(text(&row.images))),
        ("isSample", Field::Bool(row.is_sample)),
        ("physical", Field::Bool(row.physical)),
        ("createdAt", Field::Str(text(&row.created_at))),
        ("version", Field::Int(row.version)),
        ("lastModified", Field::OptStr(optional(&row.last_modified))),
        ("modificationCount", Field::Int(row.modification_count)),
        ("modificationHistoryUrl", Field::Str(history_url)),
        ("healthConsentVerified", Field::Bool(row.health_consent)),
        (
            "deidentificationLevel",
            Field::OptStr(optional(&row.deidentification)),
        ),
        (
            "authorizedUses",
            optional(&row.authorized_uses).map_or(Field::OptStr(None), Field::Canonical),
        ),
        ("sellerBadges", Field::Canonical("[\"verified\"]")),
        (
            "sellerKind",
            Field::Str(if row.is_sample {
                "house"
            } else {
                "third_party"
            }),
        ),
    ];
    for field in METADATA_FIELDS {
        fields.push((
            field,
            metadata
                .get(*field)
                .map_or(Field::OptStr(None), Field::Json),
        ));
    }
    fields
}

fn history_url<S: AsRef<str>>(row: &Listing<S>) -> String {
    format!("/api/marketplace/listings/{}/history", row.id.as_ref())
}

fn parse_metadata<S: AsRef<str>>(row: &Listing<S>) -> Map<String, Value> {
    serde_json::from_str(row.metadata.as_ref()).unwrap_or_default()
}

/// What a listing's view shows beyond its row: the vertical's name and icon, and the views not
/// flushed yet.
pub type Shown<'a> = (&'a Taxonomy, &'a Counters);

/// What the views of `app`'s listings show beyond their rows.
pub fn shown(app: &App) -> Shown<'_> {
    (&app.taxonomy, &app.counters)
}

/// The Listing resource of one row as the interface describes it: serialized from the same
/// field list as the canonical writer (members in the list's order). The row is readable.
pub struct ListingView<'a> {
    app: &'a App,
    pub row: Cow<'a, ListingRow>,
    /// Members in canonical (sorted) order, as a browse page's bytes have them.
    sorted: bool,
}

impl<'a> ListingView<'a> {
    /// The view of a row the caller gives away (a write's answer).
    pub fn owned(app: &'a App, row: ListingRow) -> ListingView<'a> {
        ListingView {
            app,
            row: Cow::Owned(row),
            sorted: false,
        }
    }

    /// The same view with its members in canonical order (the order of a browse page's bytes;
    /// nested values are stored canonical already).
    pub fn in_canonical_order(self) -> ListingView<'a> {
        ListingView {
            sorted: true,
            ..self
        }
    }
}

impl Serialize for ListingView<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        /// A field; in canonical order, a JSON value's own members sorted too.
        struct One<'f, 'a>(&'f Field<'a>, bool);
        impl Serialize for One<'_, '_> {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                match self.0 {
                    Field::Json(value @ (Value::Object(_) | Value::Array(_))) if self.1 => {
                        serde_json::from_slice::<Value>(&jcs::canonicalize(value))
                            .unwrap_or(Value::Null)
                            .serialize(serializer)
                    }
                    field => field.serialize_into(serializer),
                }
            }
        }
        let row = self.row.as_ref();
        let metadata = parse_metadata(row);
        let url = history_url(row);
        let fields = listing_fields(shown(self.app), row, &metadata, &url);
        let mut map = serializer.serialize_map(Some(fields.len()))?;
        if self.sorted {
            for &index in canonical_order(&fields) {
                let (key, field) = &fields[index];
                map.serialize_entry(key, &One(field, true))?;
            }
        } else {
            for (key, field) in &fields {
                map.serialize_entry(key, &One(field, false))?;
            }
        }
        map.end()
    }
}

/// The Listing resource of a row (borrowed).
pub fn listing_json<'a>(app: &'a App, row: &'a ListingRow) -> ListingView<'a> {
    ListingView {
        app,
        row: Cow::Borrowed(row),
        sorted: false,
    }
}

/// The positions of the field list in canonical (UTF-16 sorted) key order. The list is the same
/// every time, so the order is computed once.
fn canonical_order(fields: &[(&'static str, Field<'_>)]) -> &'static [usize] {
    static ORDER: OnceLock<Vec<usize>> = OnceLock::new();
    let order = ORDER.get_or_init(|| {
        let mut order: Vec<usize> = (0..fields.len()).collect();
        order.sort_unstable_by(|a, b| jcs::utf16_cmp(fields[*a].0, fields[*b].0));
        order
    });
    debug_assert_eq!(order.len(), fields.len());
    order
}

/// Appends the canonical JSON of the Listing resource (the same bytes as canonicalizing
/// [`listing_json`], without building it): browse pages render fifty of these per request, from
/// rows borrowed from SQLite's buffers.
pub fn write_listing_canonical<S: AsRef<str>>(
    shown: Shown<'_>,
    row: &Listing<S>,
    out: &mut Vec<u8>,
) {
    let metadata = parse_metadata(row);
    let url = history_url(row);
    let fields = listing_fields(shown, row, &metadata, &url);
    let order = canonical_order(&fields);
    out.push(b'{');
    for (i, &index) in order.iter().enumerate() {
        let (key, field) = &fields[index];
        if i > 0 {
            out.push(b',');
        }
        out.push(b'"');
        out.extend_from_slice(key.as_bytes());
        out.extend_from_slice(b"\":");
        field.write_canonical(out);
    }
    out.push(b'}');
}

/// The data license every listing carries.
#[derive(Debug, Serialize)]
pub struct License {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub permissions: [&'static str; 3],
    pub restrictions: Vec<String>,
    pub notice: &'static str,
}

pub(crate) fn license(row: &ListingRow) -> License {
    // A stored type is always one of the choices (the create writes its name).
    let listing_type = ListingType::from_name(&row.listing_type).unwrap_or(ListingType::Standard);
    license_for(listing_type, row.max_copies)
}

/// The data license of a listing type (the same terms the disclosures page states).
pub(crate) fn license_for(listing_type: ListingType, max_copies: Option<i64>) -> License {
    let mut restrictions = vec![
        "no-resale: the buyer may not resell the data".to_owned(),
        "no-relisting: the buyer may not re-list the data on any marketplace".to_owned(),
        "no-raw-redistribution: the buyer may not redistribute the raw payload as-is".to_owned(),
    ];
    match listing_type {
        ListingType::Exclusive => restrictions
            .push("exclusive: sold to one buyer; the listing is delisted on purchase".into()),
        ListingType::Limited => restrictions.push(format!(
            "limited: at most {} copies; the listing is delisted once sold out",
            max_copies.unwrap_or(0)
        )),
        ListingType::Standard => {}
    }
    License {
        kind: "data-license",
        permissions: [
            "commercial-use: the buyer may use the data commercially",
            "non-commercial-use: the buyer may use the data non-commercially",
            "derivatives: the buyer may create derivative works",
        ],
        restrictions,
        notice: "Data license: use commercially and non-commercially and create derivatives; do not resell, re-list or redistribute the raw payload as-is.",
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::clock::SystemClock;
    use crate::service::{DataDir, Options};
    use crate::store::listings as store;
    use serde_json::json;

    #[test]
    fn the_canonical_writer_matches_canonicalizing_the_value() {
        let dir = tempfile::tempdir().unwrap();
        let options = Options::new("http://127.0.0.1:1");
        let app = App::open(
            &DataDir(dir.path().join("d")),
            options,
            Arc::new(SystemClock),
        )
        .unwrap();
        let id = app
            .store
            .write_blocking(|tx| Ok(store::sample_of(tx, "music")?.unwrap()))
            .unwrap();
        let mut row = app
            .store
            .write_blocking(move |tx| Ok(store::find(tx, &id)?.unwrap()))
            .unwrap();
        let variants = [
            (
                json!({"demographics": {"é": 1.5, "a": [1, "x"]}, "contextTags": ["ü", "\u{1F600}"]}),
                Some("[\"ai_training\"]"),
            ),
            (
                json!({"dataDate": "2026-01-01", "sellerState": "CA \"quoted\"\n"}),
                None,
            ),
        ];
        for (metadata, uses) in variants {
            // Stored as given, not canonical: the views sort what they must.
            row.metadata = metadata.to_string();
            row.authorized_uses = uses.map(str::to_owned);
            row.title = "Café \u{1F600} \\ \"data\"\t".into();
            row.rating_sum = 7;
            row.rating_count = 3;
            row.images =
                String::from_utf8(jcs::canonicalize(&json!(["https://x.example/a b.png"])))
                    .unwrap();
            let mut written = Vec::new();
            write_listing_canonical(shown(&app), &row, &mut written);
            let value = serde_json::to_value(listing_json(&app, &row)).unwrap();
            assert_eq!(
                String::from_utf8(written).unwrap(),
                String::from_utf8(jcs::canonicalize(&value)).unwrap()
            );
            // The view's members in the field list's order, as the value built field by field.
            let metadata = parse_metadata(&row);
            let url = history_url(&row);
            let by_field: Map<String, Value> = listing_fields(shown(&app), &row, &metadata, &url)
                .iter()
                .map(|(key, field)| ((*key).to_owned(), field.to_value()))
                .collect();
            assert_eq!(
                serde_json::to_string(&value).unwrap(),
                serde_json::to_string(&Value::Object(by_field)).unwrap()
            );
            // In canonical order it is what parsing the canonical bytes gives, member order too.
            let sorted = listing_json(&app, &row).in_canonical_order();
            let parsed: Value = serde_json::from_slice(&jcs::canonicalize(&value)).unwrap();
            assert_eq!(
                serde_json::to_string(&sorted).unwrap(),
                serde_json::to_string(&parsed).unwrap()
            );
        }
    }
}
