//! Listing operations: create (and its health-data twin), update, deactivate, the id-only reads,
//! browse, and the seller's delivery endpoint.

use serde_json::{Map, Value, json};

use super::{Access, Face, Field, ID_MAX, Input, Kind, Op, Scope, Tool};
use crate::crypto::jcs;
use crate::error::{Error, Result};

/// Largest preview: 4 KiB of canonical JSON. Listings keep metadata and a small sample only.
pub const PREVIEW_MAX_BYTES: usize = 4096;
/// $1,000,000,000.00: far above any real listing, far below 2^53.
pub const PRICE_MAX_CENTS: i64 = 100_000_000_000;
const TITLE_MAX: usize = 200;
const DESCRIPTION_MAX: usize = 5000;
const REASON_MAX: usize = 500;
const IMAGES_MAX: usize = 10;
const COPIES_MAX: i64 = 1_000_000;
/// Browse page bounds.
pub const PAGE_DEFAULT: i64 = 50;
pub const PAGE_MAX: i64 = 100;
pub const OFFSET_MAX: i64 = 100_000;
/// A closed choice: an enum whose variants' names are, in order, the values of its field's
/// [`Kind::Enum`] (`NAMES`, made from the same list as the variants).
macro_rules! closed_choice {
    ($(#[$doc:meta])* $name:ident { $($variant:ident = $text:literal,)+ }) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum $name {
            $($variant,)+
        }

        impl $name {
            /// Every choice, in the order of [`Self::NAMES`].
            pub const ALL: &'static [$name] = &[$($name::$variant,)+];
            /// The names on the wire (the field's `Kind::Enum` values).
            pub const NAMES: &'static [&'static str] = &[$($text,)+];

            /// This choice's name on the wire.
            pub const fn name(self) -> &'static str {
                match self {
                    $($name::$variant => $text,)+
                }
            }

            /// The choice of a wire name, if it is one.
            pub fn from_name(name: &str) -> Option<$name> {
                Self::ALL.iter().copied().find(|choice| choice.name() == name)
            }

            /// The field's choice, when given (the value checked by [`Input::choice`], its
            /// message naming the allowed values).
            pub(crate) fn read(
                input: &$crate::request::Input,
                field: &$crate::request::Field,
            ) -> $crate::error::Result<Option<$name>> {
                match input.choice(field)? {
                    None => Ok(None),
                    Some(name) => Self::from_name(name).map(Some).ok_or_else(|| {
                        $crate::error::Error::Internal(format!(
                            "`{name}` is declared for `{}` but is not a {}",
                            field.rest,
                            stringify!($name)
                        ))
                    }),
                }
            }
        }
    };
}

pub(crate) use closed_choice;

closed_choice! {
    /// A listing's type, in the browse index's order (its position is the index's `u8`).
    ListingType {
        Standard = "standard",
        Limited = "limited",
        Exclusive = "exclusive",
    }
}

closed_choice! {
    /// A browse's sort order; each has a stable tie-breaker on creation order (`seq`) in the
    /// same direction. The first is the default.
    Sort {
        Recent = "recent",
        Popular = "popular",
        PriceAsc = "price_asc",
        PriceDesc = "price_desc",
        Quality = "quality",
        Trust = "trust",
    }
}

closed_choice! {
    /// A browse's price filter. The first is the default.
    Price {
        All = "all",
        Paid = "paid",
        Free = "free",
    }
}

closed_choice! {
    /// Which listings a browse shows with respect to reference samples. The first is the
    /// default.
    Samples {
        Exclude = "exclude",
        Include = "include",
        Only = "only",
    }
}

/// The nullable metadata fields of the Listing resource (REST only).
pub const METADATA_FIELDS: &[&str] = &[
    "subcategory",
    "dataDate",
    "dataFormat",
    "sellerState",
    "demographics",
    "contextTags",
    "dataOrigin",
    "collectionMethod",
    "sourceAttribution",
];

/// The listing an operation names: REST's path segment, MCP's `listing_id`.
pub(super) const LISTING_ID: Field = Field::mcp("listing_id", Kind::Text(ID_MAX))
    .required()
    .doc("The listing id (a UUID).");
const TITLE: Field = Field::both("title", "title", Kind::Text(TITLE_MAX));
const DESCRIPTION: Field = Field::both(
    "description",
    "description",
    Kind::Paragraph(DESCRIPTION_MAX),
);
const PREVIEW: Field = Field::both("preview", "preview", Kind::Object);
const PRICE: Field = Field::both("priceCents", "price_cents", Kind::Int(0, PRICE_MAX_CENTS));
const CONSENT: Field = Field::both("consent", "consent", Kind::Consent)
    .affirmation()
    .doc("You affirm you own this asset and may sell it; must be true.");
/// Where the contract states the taxonomy's slugs.
const VERTICAL_SLUGS: &str = "/components/schemas/CreateListingRequest/properties/verticalSlug";
const CATEGORY_SLUGS: &str = "/components/schemas/CreateListingRequest/properties/category";
const VERTICAL: Field = Field::both("verticalSlug", "vertical", Kind::Token(60))
    .doc("Optional vertical slug (see list_verticals); omitted means auto-filed.")
    .documented(VERTICAL_SLUGS);
const CATEGORY: Field = Field::both("category", "category", Kind::Token(40))
    .doc("Optional macro-category hint for auto-filing.")
    .documented(CATEGORY_SLUGS);
const LISTING_TYPE: Field = Field::both(
    "listingType",
    "listing_type",
    Kind::Enum(ListingType::NAMES),
)
.doc("Optional; default standard.");
const MAX_COPIES: Field = Field::both("maxCopies", "max_copies", Kind::Int(1, COPIES_MAX))
    .doc("Copies of a limited listing (required for limited, refused otherwise).")
    .required_with(&LISTING_TYPE, ListingType::Limited.name());
const IMAGES: Field = Field::rest(
    "images",
    Kind::Json(r#"{"type":"array","maxItems":10,"items":{"type":"string","format":"uri"}}"#),
);
const PHYSICAL: Field = Field::rest("physical", Kind::Bool);
const DELIVERABLE_REF: Field = Field::rest("deliverableRef", Kind::Text(200));
const HEALTH_CONSENT: Field = Field::both("healthConsent", "health_consent", Kind::Object)
    .affirmation()
    .doc("The consent: ownership, saleTerms, authorizedUses, deidentificationLevel, stateAuthorizations (see the tool description).")
    .documented("/components/schemas/HealthConsent");
const REASON: Field =
    Field::both("reason", "reason", Kind::Text(REASON_MAX)).doc("Why (recorded in the history).");
const ACTIVE: Field = Field::both("active", "active", Kind::Bool);
const REFRESH: Field = Field::rest("refreshFingerprint", Kind::Bool);
/// The metadata fields, read by [`metadata`] (strings of at most 500 characters, `contextTags`
/// an array, `demographics` an object).
const METADATA: [Field; 9] = [
    Field::rest("subcategory", Kind::Json("{}")),
    Field::rest("dataDate", Kind::Json("{}")),
    Field::rest("dataFormat", Kind::Json("{}")),
    Field::rest("sellerState", Kind::Json("{}")),
    Field::rest("demographics", Kind::Json("{}")),
    Field::rest("contextTags", Kind::Json("{}")),
    Field::rest("dataOrigin", Kind::Json("{}")),
    Field::rest("collectionMethod", Kind::Json("{}")),
    Field::rest("sourceAttribution", Kind::Json("{}")),
];

/// The fields of a listing create: title, description, the preview (`$preview`: its doc differs),
/// the price and the consent, then the create's own fields (`$own`), then the shared rest. The
/// order is the MCP schema's `required` order.
macro_rules! create_fields {
    ($preview:expr, [$($own:expr),*]) => {
        &[
            TITLE.required().doc("The listing title."),
            DESCRIPTION.required().doc("What the buyer gets."),
            PREVIEW.required_on(Face::Mcp).doc($preview),
            PRICE.required().doc("Price in integer cents (0 for free)."),
            CONSENT,
            $($own,)*
            LISTING_TYPE,
            MAX_COPIES,
            IMAGES,
            PHYSICAL,
            DELIVERABLE_REF,
            METADATA[0],
            METADATA[1],
            METADATA[2],
            METADATA[3],
            METADATA[4],
            METADATA[5],
            METADATA[6],
            METADATA[7],
            METADATA[8],
        ]
    };
}

/// `POST /api/marketplace/listings` · `sell_data`.
pub static CREATE_LISTING: Op = Op {
    name: "sell_data",
    fields: create_fields!(
        "A public preview (JSON object, at most 4 KiB).",
        [VERTICAL, CATEGORY]
    ),
    scope: Some(Scope::Sell),
    tool: Some(Tool::write(
        Access::Keyed,
        "Sell data",
        "Create a listing: title, description, preview (object), price_cents (integer cents, 0 for free), consent (must be true); `vertical` omitted means auto-filed. Needs a verified delivery endpoint.",
    )),
};

/// `POST /api/marketplace/listings/health` · `list_health_data`: a create without the vertical
/// and category (the vertical is `personal-health-data`), plus the consent.
pub static CREATE_HEALTH_LISTING: Op = Op {
    name: "list_health_data",
    fields: create_fields!(
        "A public preview (JSON object, at most 4 KiB); never put identifying data in it.",
        [HEALTH_CONSENT]
    ),
    scope: Some(Scope::Sell),
    tool: Some(Tool::write(
        Access::Keyed,
        "List your own health data",
        "List your OWN personal health data through the signed consent flow (the same as POST /api/marketplace/listings/health): title, description, preview, price_cents, consent (true) and health_consent {ownership: {ownData, adult, noThirdPartyData, voluntary}, saleTerms: {acceptSaleTerms, buyersKeepCopies, noRecall}, authorizedUses: [at least one of academic_research, commercial_research, ai_training, personal_educational, other], deidentificationLevel: full_identified | name_removed, stateAuthorizations: {state: two-letter US code or NON_US, generalAuthorization, plus cmiaAuthorization (CA), ctConsumerHealthDataConsent (CT), nvConsumerHealthDataAuthorization (NV) or mhmdaAuthorization (WA)}}, every affirmation true. Returns the listing, its signed history entry and the signed consent record. Buyers must then state an authorized use and attest. Needs a verified delivery endpoint.",
    )),
};

/// A [`CREATE_HEALTH_LISTING`] on either face, read from an [`Input::unchecked`] in the order
/// the service judges it: the consent as sent (judged before anything else, unknown members
/// included), then the rest of the request (unknown members, then the listing itself).
///
/// # Errors
/// `INVALID_ARGUMENT` when the caller picks the vertical or the category (in its own spelling):
/// health listings are filed under personal-health-data.
pub fn read_health_listing(input: &Input) -> Result<(Option<Value>, Result<CreateListing>)> {
    let vertical = input.spelling(&VERTICAL);
    let category = input.spelling(&CATEGORY);
    if input.member(vertical).is_some() || input.member(category).is_some() {
        return Err(Error::invalid(format!(
            "`{vertical}` and `{category}` are not accepted here: health listings are filed under personal-health-data"
        )));
    }
    let consent = input.json(&HEALTH_CONSENT)?;
    let rest = input
        .check_members()
        .and_then(|()| CreateListing::read(input));
    Ok((consent, rest))
}

/// A new listing, checked for shape; the service checks what needs the database or the
/// taxonomy (vertical, consent, screening, the seller's endpoint).
#[derive(Debug)]
pub struct CreateListing {
    pub title: String,
    pub description: String,
    pub price_cents: i64,
    pub vertical: Option<String>,
    pub category: Option<String>,
    pub listing_type: ListingType,
    pub max_copies: Option<i64>,
    pub preview: Value,
    pub consent: bool,
    pub images: Vec<String>,
    pub physical: bool,
    pub deliverable_ref: Option<String>,
    /// The nine metadata fields, null when not given.
    pub metadata: Value,
}

impl CreateListing {
    /// Reads a create (or, with [`CREATE_HEALTH_LISTING`], a health create).
    ///
    /// # Errors
    /// `INVALID_ARGUMENT` naming the field in the caller's spelling.
    pub fn read(input: &Input) -> Result<CreateListing> {
        let listing_type =
            ListingType::read(input, &LISTING_TYPE)?.unwrap_or(ListingType::Standard);
        // `maxCopies` goes with `limited` only: `Input` holds it to that (`required_with`).
        let max_copies = input.int(&MAX_COPIES)?;
        Ok(CreateListing {
            title: input.req_text(&TITLE)?,
            description: input.req_paragraph(&DESCRIPTION)?,
            price_cents: input.int(&PRICE)?.ok_or_else(|| {
                Error::invalid(format!(
                    "`{}` is required (an integer number of cents, 0 for free)",
                    input.spelling(&PRICE)
                ))
            })?,
            vertical: input.text(&VERTICAL)?,
            category: input.text(&CATEGORY)?,
            listing_type,
            max_copies,
            preview: preview(input)?.unwrap_or_else(|| Value::Object(Map::new())),
            consent: input.consent(&CONSENT)?,
            images: images(input)?,
            physical: input.bool(&PHYSICAL)?.unwrap_or(false),
            deliverable_ref: input.text(&DELIVERABLE_REF)?,
            metadata: metadata(input)?,
        })
    }
}

/// `PATCH /api/marketplace/listings/{id}` · `update_listing`.
pub static UPDATE_LISTING: Op = Op {
    name: "update_listing",
    fields: &[
        LISTING_ID,
        TITLE.doc("New title."),
        DESCRIPTION.doc("New description."),
        PRICE.doc("New price in integer cents."),
        ACTIVE,
        PREVIEW,
        REASON,
        REFRESH,
    ],
    scope: Some(Scope::Sell),
    tool: Some(Tool::idempotent_write(
        Access::Keyed,
        "Update a listing",
        "Edit your listing (title, description, price_cents, active, preview, reason); each change is a new signed version.",
    )),
};

/// An edit of one listing. The edit's values are judged only once the listing is known to be
/// the caller's (a stranger learns nothing from a 400), so its refusal travels inside.
#[derive(Debug)]
pub struct UpdateListing {
    /// REST's path segment, MCP's `listing_id`.
    pub listing_id: String,
    pub edit: Result<ListingEdit>,
}

/// An edit: every field optional; unchanged fields make no version.
#[derive(Debug)]
pub struct ListingEdit {
    pub title: Option<String>,
    pub description: Option<String>,
    pub price_cents: Option<i64>,
    pub active: Option<bool>,
    pub preview: Option<Value>,
    pub reason: Option<String>,
    pub refresh_fingerprint: bool,
}

impl UpdateListing {
    /// Reads an edit: `path` is REST's path segment (`None` on MCP, where `listing_id` is an
    /// argument, judged before the edit's values).
    ///
    /// # Errors
    /// `INVALID_ARGUMENT` when the MCP `listing_id` is missing or malformed; the edit's own
    /// refusal is kept in `edit`.
    pub fn read(input: &Input, path: Option<&str>) -> Result<UpdateListing> {
        let listing_id = input.path_id(&LISTING_ID, path)?;
        let edit = ListingEdit::read(input);
        Ok(UpdateListing { listing_id, edit })
    }
}

impl ListingEdit {
    fn read(input: &Input) -> Result<ListingEdit> {
        Ok(ListingEdit {
            title: input.text(&TITLE)?,
            description: input.paragraph(&DESCRIPTION)?,
            price_cents: input.int(&PRICE)?,
            active: input.bool(&ACTIVE)?,
            preview: preview(input)?,
            reason: input.text(&REASON)?,
            refresh_fingerprint: input.bool(&REFRESH)? == Some(true),
        })
    }
}

/// `POST /api/marketplace/listings/{id}/deactivate` · `deactivate_listing`.
pub static DEACTIVATE_LISTING: Op = Op {
    name: "deactivate_listing",
    fields: &[LISTING_ID, REASON],
    scope: Some(Scope::Sell),
    tool: Some(Tool::idempotent_write(
        Access::Keyed,
        "Deactivate a listing",
        "Withdraw your listing from sale (the same as active: false).",
    )),
};

/// A withdrawal, with its reason for the history.
#[derive(Debug)]
pub struct DeactivateListing {
    /// REST's path segment, MCP's `listing_id`.
    pub listing_id: String,
    pub reason: Option<String>,
}

impl DeactivateListing {
    /// Reads a withdrawal: `path` is REST's path segment (`None` on MCP, where `listing_id` is
    /// an argument, judged after `reason`).
    ///
    /// # Errors
    /// `INVALID_ARGUMENT` naming the field.
    pub fn read(input: &Input, path: Option<&str>) -> Result<DeactivateListing> {
        Ok(DeactivateListing {
            reason: input.text(&REASON)?,
            listing_id: input.path_id(&LISTING_ID, path)?,
        })
    }
}

/// `GET /api/marketplace/listings/{id}` · `preview_listing`.
pub static LISTING_DETAIL: Op = Op {
    name: "preview_listing",
    fields: &[LISTING_ID],
    scope: None,
    tool: Some(Tool::read(
        Access::Public,
        "Preview a listing",
        "A listing's full public detail (the same as GET /api/marketplace/listings/{id}). Public.",
    )),
};

/// `GET /api/marketplace/listings/{id}/history` · `listing_history`.
pub static LISTING_HISTORY: Op = Op {
    name: "listing_history",
    fields: &[LISTING_ID],
    scope: None,
    tool: Some(Tool::read(
        Access::Public,
        "Listing history",
        "A listing's signed modification history; data changes appear as fingerprints only. Public.",
    )),
};

/// A listing named by its id alone: its detail and its history.
#[derive(Debug)]
pub struct ListingId {
    /// REST's path segment, MCP's `listing_id`.
    pub listing_id: String,
}

impl ListingId {
    /// The listing a REST path names.
    pub fn at(path: &str) -> ListingId {
        ListingId {
            listing_id: path.to_owned(),
        }
    }

    /// The listing an MCP call names.
    ///
    /// # Errors
    /// `listing_id` missing or not a short string.
    pub fn read(input: &Input) -> Result<ListingId> {
        Ok(ListingId {
            listing_id: input.req_text(&LISTING_ID)?,
        })
    }
}

/// `PUT /api/sell/delivery-endpoint` · `set_delivery_endpoint`.
pub static SET_DELIVERY_ENDPOINT: Op = Op {
    name: "set_delivery_endpoint",
    fields: &[Field::both("url", "url", Kind::Token(2048))
        .required()
        .doc("Your delivery endpoint URL.")
        .documented("/components/schemas/DeliveryEndpointRequest/properties/url")],
    scope: Some(Scope::Sell),
    tool: Some(Tool::idempotent_write(
        Access::Keyed,
        "Set the delivery endpoint",
        "Register and verify your HTTPS delivery endpoint (a signed challenge it must echo); required before listing.",
    )),
};

/// The seller's delivery endpoint to verify.
#[derive(Debug)]
pub struct SetDeliveryEndpoint {
    pub url: String,
}

impl SetDeliveryEndpoint {
    /// # Errors
    /// `INVALID_ARGUMENT` naming the field.
    pub fn read(input: &Input) -> Result<SetDeliveryEndpoint> {
        Ok(SetDeliveryEndpoint {
            url: input.req_text(&SET_DELIVERY_ENDPOINT.fields[0])?,
        })
    }
}

const Q: Field = Field::both("q", "q", Kind::VerbatimUpTo(Q_MAX)).doc("Full-text search.");
const Q_MAX: usize = 200;
const B_CATEGORY: Field = Field::both("category", "category", Kind::Verbatim)
    .doc("A macro-category slug.")
    .documented(CATEGORY_SLUGS);
const B_VERTICAL: Field = Field::both("vertical", "vertical", Kind::Verbatim)
    .doc("A vertical slug.")
    .documented(VERTICAL_SLUGS);
const B_CLASS: Field = Field::both("class", "class", Kind::Verbatim)
    .doc("A class of categories.")
    .documented("/paths/~1api~1marketplace~1listings/get/parameters/class/schema");
const B_TYPE: Field = Field::both("type", "type", Kind::Enum(ListingType::NAMES));
const B_SORT: Field = Field::both("sort", "sort", Kind::Enum(Sort::NAMES));
const B_PRICE: Field = Field::both("price", "price", Kind::Enum(Price::NAMES));
const B_MIN_RATING: Field = Field::both("min_rating", "min_rating", Kind::Number(1.0, 5.0));
const B_SAMPLES: Field = Field::both("samples", "samples", Kind::Enum(Samples::NAMES));
const B_LIMIT: Field = Field::both("limit", "limit", Kind::Int(1, PAGE_MAX)).doc("Page size.");
const B_OFFSET: Field = Field::both("offset", "offset", Kind::Int(0, OFFSET_MAX));

/// `GET /api/marketplace/listings` (query) · `browse_marketplace`.
pub static BROWSE: Op = Op {
    name: "browse_marketplace",
    fields: &[
        Q,
        B_CATEGORY,
        B_VERTICAL,
        B_CLASS,
        B_TYPE,
        B_SORT,
        B_PRICE,
        B_MIN_RATING,
        B_SAMPLES,
        B_LIMIT,
        B_OFFSET,
    ],
    scope: None,
    tool: Some(Tool::read(
        Access::Public,
        "Browse the marketplace",
        "Search and filter listings (the same as GET /api/marketplace/listings): returns {listings, total, offset, limit}. Public.",
    )),
};

/// A browse: filters, sort and page. Slugs are checked against the taxonomy by the service.
#[derive(Debug)]
pub struct Browse {
    pub q: Option<String>,
    pub category: Option<String>,
    pub vertical: Option<String>,
    pub class: Option<String>,
    pub listing_type: Option<ListingType>,
    pub sort: Sort,
    pub price: Price,
    pub min_rating: Option<f64>,
    pub samples: Samples,
    pub limit: i64,
    pub offset: i64,
}

impl Browse {
    /// # Errors
    /// `INVALID_ARGUMENT` naming the parameter and, for a choice, its allowed values.
    pub fn read(input: &Input) -> Result<Browse> {
        let q = input.verbatim(&Q)?;
        if q.as_ref().is_some_and(|q| q.chars().count() > Q_MAX) {
            return Err(Error::invalid(format!(
                "`q` must be at most {Q_MAX} characters"
            )));
        }
        Ok(Browse {
            q,
            category: input.verbatim(&B_CATEGORY)?,
            vertical: input.verbatim(&B_VERTICAL)?,
            class: input.verbatim(&B_CLASS)?,
            listing_type: ListingType::read(input, &B_TYPE)?,
            sort: Sort::read(input, &B_SORT)?.unwrap_or(Sort::Recent),
            price: Price::read(input, &B_PRICE)?.unwrap_or(Price::All),
            min_rating: input.number(&B_MIN_RATING)?,
            samples: Samples::read(input, &B_SAMPLES)?.unwrap_or(Samples::Exclude),
            limit: input.int(&B_LIMIT)?.unwrap_or(PAGE_DEFAULT),
            offset: input.int(&B_OFFSET)?.unwrap_or(0),
        })
    }
}

fn preview(input: &Input) -> Result<Option<Value>> {
    match input.json(&PREVIEW)? {
        None => Ok(None),
        Some(value @ Value::Object(_)) => {
            jcs::check_strict(&value).map_err(|e| Error::invalid(format!("`preview`: {e}")))?;
            let size = jcs::canonicalize(&value).len();
            if size > PREVIEW_MAX_BYTES {
                return Err(Error::invalid(format!(
                    "`preview` is {size} bytes; at most {PREVIEW_MAX_BYTES} bytes of JSON (a small sample, not the deliverable)"
                )));
            }
            Ok(Some(value))
        }
        Some(_) => Err(Error::invalid("`preview` must be a JSON object")),
    }
}

fn images(input: &Input) -> Result<Vec<String>> {
    let Some(value) = input.json(&IMAGES)? else {
        return Ok(Vec::new());
    };
    let items = value
        .as_array()
        .ok_or_else(|| Error::invalid("`images` must be an array of https:// URLs"))?;
    if items.len() > IMAGES_MAX {
        return Err(Error::invalid(format!(
            "`images` holds at most {IMAGES_MAX} URLs"
        )));
    }
    items
        .iter()
        .map(|item| match item.as_str() {
            Some(url)
                if url.starts_with("https://")
                    && url.chars().count() <= 2048
                    && url.len() > "https://".len()
                    && !url.contains(char::is_whitespace)
                    && !url["https://".len()..].split('/').next().unwrap_or_default().contains('@') =>
            {
                Ok(url.to_owned())
            }
            _ => Err(Error::invalid("`images` must contain https:// URLs without credentials (at most 2048 characters each)")),
        })
        .collect()
}

fn metadata(input: &Input) -> Result<Value> {
    let mut metadata = Map::new();
    for field in &METADATA {
        let value = match (field.rest, input.json(field)?) {
            (_, None) => Value::Null,
            ("contextTags", Some(Value::Array(tags))) => {
                let bad = || {
                    Error::invalid("`contextTags` must be at most 20 strings of 1–50 characters")
                };
                if tags.len() > 20 {
                    return Err(bad());
                }
                let tags: Vec<Value> = tags
                    .iter()
                    .map(|tag| {
                        let text = tag.as_str().ok_or_else(bad)?;
                        let one = crate::args::Args::from_value(json!({ "tag": text }))?;
                        one.req_str("tag", 50).map(Value::from).map_err(|_| bad())
                    })
                    .collect::<Result<_>>()?;
                Value::Array(tags)
            }
            ("contextTags", Some(_)) => {
                return Err(Error::invalid("`contextTags` must be an array of strings"));
            }
            ("demographics", Some(value @ Value::Object(_))) => {
                jcs::check_strict(&value)
                    .map_err(|e| Error::invalid(format!("`demographics`: {e}")))?;
                if jcs::canonicalize(&value).len() > 2048 {
                    return Err(Error::invalid(
                        "`demographics` must be at most 2048 bytes of JSON",
                    ));
                }
                value
            }
            (name, Some(value)) => {
                let one = crate::args::Args::from_value(json!({ name: value }))?;
                Value::String(one.req_str(name, 500)?)
            }
        };
        metadata.insert(field.rest.to_owned(), value);
    }
    Ok(Value::Object(metadata))
}

/// `about_marketplace` (MCP's summary of `/api/meta`, `/api/fees` and the counts): no
/// arguments.
pub static ABOUT: Op = Op {
    name: "about_marketplace",
    fields: &[],
    scope: None,
    tool: Some(Tool::read(
        Access::Public,
        "About the marketplace",
        "What this marketplace is, its fee schedule, links (llms.txt, OpenAPI, MCP) and current counts. Public.",
    )),
};

/// `GET /api/verticals` · `list_verticals`: no arguments.
pub static LIST_VERTICALS: Op = Op {
    name: "list_verticals",
    fields: &[],
    scope: None,
    tool: Some(Tool::read(
        Access::Public,
        "List verticals",
        "Every vertical (subcategory) with its slug, category and listing count; use a slug as `vertical` in sell_data or browse_marketplace. Public.",
    )),
};

/// `GET /api/stats` · `get_platform_stats`: no arguments.
pub static PLATFORM_STATS: Op = Op {
    name: "get_platform_stats",
    fields: &[],
    scope: None,
    tool: Some(Tool::read(
        Access::Public,
        "Platform stats",
        "Platform totals: agents, listings, queries and per-vertical counts. Public.",
    )),
};

/// `GET /api/marketplace/stats` · `marketplace_stats`: no arguments.
pub static MARKETPLACE_STATS: Op = Op {
    name: "marketplace_stats",
    fields: &[],
    scope: None,
    tool: Some(Tool::read(
        Access::Public,
        "Marketplace stats",
        "Platform figures plus fee and arm's-length totals. Public.",
    )),
};

#[cfg(test)]
mod tests {
    use super::*;

    /// Each closed choice's variants and wire names are one list, in the same order, and the
    /// fields offer exactly those names.
    #[test]
    fn closed_choices_name_their_variants_in_order() {
        fn check<T: Copy + PartialEq + std::fmt::Debug>(
            all: &[T],
            names: &[&str],
            name: fn(T) -> &'static str,
            from_name: fn(&str) -> Option<T>,
        ) {
            assert_eq!(all.len(), names.len());
            for (choice, text) in all.iter().zip(names) {
                assert_eq!(name(*choice), *text);
                assert_eq!(from_name(text), Some(*choice));
            }
            assert_eq!(from_name("nope"), None);
        }
        check(
            ListingType::ALL,
            ListingType::NAMES,
            ListingType::name,
            ListingType::from_name,
        );
        check(Sort::ALL, Sort::NAMES, Sort::name, Sort::from_name);
        check(Price::ALL, Price::NAMES, Price::name, Price::from_name);
        check(
            Samples::ALL,
            Samples::NAMES,
            Samples::name,
            Samples::from_name,
        );
        for (i, listing_type) in ListingType::ALL.iter().enumerate() {
            assert_eq!(*listing_type as usize, i, "the browse index's position");
        }
        let enum_of = |field: &Field| match field.kind {
            Kind::Enum(values) => values,
            _ => panic!("{} is not an enum", field.rest),
        };
        assert_eq!(enum_of(&LISTING_TYPE), ["standard", "limited", "exclusive"]);
        assert_eq!(enum_of(&B_TYPE), ListingType::NAMES);
        assert_eq!(
            enum_of(&B_SORT),
            [
                "recent",
                "popular",
                "price_asc",
                "price_desc",
                "quality",
                "trust"
            ]
        );
        assert_eq!(enum_of(&B_PRICE), ["all", "paid", "free"]);
        assert_eq!(enum_of(&B_SAMPLES), ["exclude", "include", "only"]);
    }
}
