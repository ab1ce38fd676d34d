//! The marketplace tools of `/api/mcp`: thin adapters that rename MCP's snake_case arguments
//! to the service layer's fields and call the same service function as the REST twin.
//!
//! Public tools work without credentials; every other tool is reached only with a valid
//! `Authorization: Bearer` key (the dispatcher answers HTTP 401 otherwise). An `api_key`
//! argument is accepted only when it names the same agent as the Bearer header (checked in
//! the dispatcher), and is then dropped: it never stands in for the header.

use serde_json::{Map, Value, json};

use crate::args::Args;
use crate::error::{Error, Result};
use crate::request::agents::{self as agent_requests, Register};
use crate::request::catalog::{
    self, Browse, CreateListing, DeactivateListing, SetDeliveryEndpoint, UpdateListing,
};
use crate::request::commerce::{self, BecomeSeller, Purchase, Rate};
use crate::request::contact::{self as contact_requests, InquiryKind, NewInquiry};
use crate::request::{Face, Input, Op};
use crate::service::contact::inquiries;
use crate::service::identity::agents::{self, Client};
use crate::service::{
    App, catalog::browse, catalog::listings, catalog::sellers, catalog::stats, commerce::checkout,
    commerce::payments, commerce::purchases, disclosure::meta,
};
use crate::store::agents::AgentRow;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Market {
    AboutMarketplace,
    ListVerticals,
    RegisterAgent,
    GetPlatformStats,
    SubmitIdea,
    ContactMarketplace,
    BecomeSeller,
    SetDeliveryEndpoint,
    SellData,
    ListHealthData,
    BrowseMarketplace,
    PreviewListing,
    BuyData,
    GetPurchase,
    RateListing,
    UpdateListing,
    DeactivateListing,
    ListingHistory,
    SellerDashboard,
    MarketplaceStats,
}

/// In the order `tools/list` reports them (after the Agent Connect tools).
pub const MARKET_TOOLS: [Market; 20] = [
    Market::AboutMarketplace,
    Market::ListVerticals,
    Market::RegisterAgent,
    Market::GetPlatformStats,
    Market::SubmitIdea,
    Market::ContactMarketplace,
    Market::BecomeSeller,
    Market::SetDeliveryEndpoint,
    Market::SellData,
    Market::ListHealthData,
    Market::BrowseMarketplace,
    Market::PreviewListing,
    Market::BuyData,
    Market::GetPurchase,
    Market::RateListing,
    Market::UpdateListing,
    Market::DeactivateListing,
    Market::ListingHistory,
    Market::SellerDashboard,
    Market::MarketplaceStats,
];

const KEY_NOTE: &str = "Authenticate with the `Authorization: Bearer <API key>` header; an \
     optional `api_key` argument is accepted only when it names the same agent as that header \
     and never replaces it.";

/// The `api_key` argument the spec lists on the keyed marketplace tools.
fn api_key() -> Value {
    json!({
        "type": "string",
        "minLength": 1,
        "description": "Optional. Must be the same key as the Bearer header (it never replaces the header).",
    })
}

impl Market {
    pub fn named(name: &str) -> Option<Market> {
        MARKET_TOOLS.into_iter().find(|tool| tool.name() == name)
    }

    pub fn name(self) -> &'static str {
        match self {
            Market::AboutMarketplace => "about_marketplace",
            Market::ListVerticals => "list_verticals",
            Market::RegisterAgent => "register_agent",
            Market::GetPlatformStats => "get_platform_stats",
            Market::SubmitIdea => "submit_idea",
            Market::ContactMarketplace => "contact_marketplace",
            Market::BecomeSeller => "become_seller",
            Market::SetDeliveryEndpoint => "set_delivery_endpoint",
            Market::SellData => "sell_data",
            Market::ListHealthData => "list_health_data",
            Market::BrowseMarketplace => "browse_marketplace",
            Market::PreviewListing => "preview_listing",
            Market::BuyData => "buy_data",
            Market::GetPurchase => "get_purchase",
            Market::RateListing => "rate_listing",
            Market::UpdateListing => "update_listing",
            Market::DeactivateListing => "deactivate_listing",
            Market::ListingHistory => "listing_history",
            Market::SellerDashboard => "seller_dashboard",
            Market::MarketplaceStats => "marketplace_stats",
        }
    }

    /// Works without a Bearer key.
    pub fn is_public(self) -> bool {
        matches!(
            self,
            Market::AboutMarketplace
                | Market::ListVerticals
                | Market::RegisterAgent
                | Market::GetPlatformStats
                | Market::SubmitIdea
                | Market::ContactMarketplace
                | Market::BrowseMarketplace
                | Market::PreviewListing
                | Market::ListingHistory
                | Market::MarketplaceStats
        )
    }

    /// The declaration of the operation the tool offers (its `inputSchema` is generated from
    /// it).
    pub fn op(self) -> &'static Op {
        match self {
            Market::AboutMarketplace => &catalog::ABOUT,
            Market::ListVerticals => &catalog::LIST_VERTICALS,
            Market::RegisterAgent => &agent_requests::REGISTER,
            Market::GetPlatformStats => &catalog::PLATFORM_STATS,
            Market::SubmitIdea => &contact_requests::SUBMIT_IDEA,
            Market::ContactMarketplace => &contact_requests::CONTACT,
            Market::BecomeSeller => &commerce::BECOME_SELLER,
            Market::SetDeliveryEndpoint => &catalog::SET_DELIVERY_ENDPOINT,
            Market::SellData => &catalog::CREATE_LISTING,
            Market::ListHealthData => &catalog::CREATE_HEALTH_LISTING,
            Market::BrowseMarketplace => &catalog::BROWSE,
            Market::PreviewListing => &catalog::LISTING_DETAIL,
            Market::BuyData => &commerce::PURCHASE,
            Market::GetPurchase => &commerce::GET_PURCHASE,
            Market::RateListing => &commerce::RATE,
            Market::UpdateListing => &catalog::UPDATE_LISTING,
            Market::DeactivateListing => &catalog::DEACTIVATE_LISTING,
            Market::ListingHistory => &catalog::LISTING_HISTORY,
            Market::SellerDashboard => &commerce::SELLER_DASHBOARD,
            Market::MarketplaceStats => &catalog::MARKETPLACE_STATS,
        }
    }

    /// A public tool that, given a caller, speaks in its agent's name (an idea or a contact
    /// message is attributed to the agent): through an OAuth token only with `message`.
    pub fn speaks_for_agent(self) -> bool {
        matches!(self, Market::SubmitIdea | Market::ContactMarketplace)
    }

    /// Accepts an `api_key` argument (checked against the Bearer header by the dispatcher).
    pub fn takes_api_key(self) -> bool {
        !self.is_public()
    }

    pub fn descriptor(self) -> Value {
        let (title, description, read_only, idempotent) = match self {
            Market::AboutMarketplace => (
                "About the marketplace",
                "What this marketplace is, its fee schedule, links (llms.txt, OpenAPI, MCP) and current counts. Public.".to_owned(),
                true,
                true,
            ),
            Market::ListVerticals => (
                "List verticals",
                "Every vertical (subcategory) with its slug, category and listing count; use a slug as `vertical` in sell_data or browse_marketplace. Public.".to_owned(),
                true,
                true,
            ),
            Market::RegisterAgent => (
                "Register an agent",
                "Create an agent and get its API key (shown once); send that key as `Authorization: Bearer <key>` afterwards. Rate limited per IP. Public.".to_owned(),
                false,
                false,
            ),
            Market::GetPlatformStats => (
                "Platform stats",
                "Platform totals: agents, listings, queries and per-vertical counts. Public.".to_owned(),
                true,
                true,
            ),
            Market::SubmitIdea => (
                "Submit an idea",
                "Send the operator an idea (a feature, a dataset wanted); returns the inquiry id, which is the capability to read its thread later. Public.".to_owned(),
                false,
                false,
            ),
            Market::ContactMarketplace => (
                "Contact the marketplace",
                "Send the operator a message; returns the inquiry id, which is the capability to read its thread later. Public.".to_owned(),
                false,
                false,
            ),
            Market::BecomeSeller => (
                "Become a seller",
                format!(
                    "Start payout onboarding: returns the payment-connect onboarding link and status (open onboardingUrl, sandbox: one click). {KEY_NOTE}"
                ),
                false,
                true,
            ),
            Market::SetDeliveryEndpoint => (
                "Set the delivery endpoint",
                format!(
                    "Register and verify your HTTPS delivery endpoint (a signed challenge it must echo); required before listing. {KEY_NOTE}"
                ),
                false,
                true,
            ),
            Market::SellData => (
                "Sell data",
                format!(
                    "Create a listing: title, description, preview (object), price_cents (integer cents, 0 for free), consent (must be true); `vertical` omitted means auto-filed. Needs a verified delivery endpoint. {KEY_NOTE}"
                ),
                false,
                false,
            ),
            Market::ListHealthData => (
                "List your own health data",
                format!(
                    "List your OWN personal health data through the signed consent flow (the same as POST /api/marketplace/listings/health): title, description, preview, price_cents, consent (true) and health_consent {{ownership: {{ownData, adult, noThirdPartyData, voluntary}}, saleTerms: {{acceptSaleTerms, buyersKeepCopies, noRecall}}, authorizedUses: [at least one of academic_research, commercial_research, ai_training, personal_educational, other], deidentificationLevel: full_identified | name_removed, stateAuthorizations: {{state: two-letter US code or NON_US, generalAuthorization, plus cmiaAuthorization (CA), ctConsumerHealthDataConsent (CT), nvConsumerHealthDataAuthorization (NV) or mhmdaAuthorization (WA)}}}}, every affirmation true. Returns the listing, its signed history entry and the signed consent record. Buyers must then state an authorized use and attest. Needs a verified delivery endpoint. {KEY_NOTE}"
                ),
                false,
                false,
            ),
            Market::BrowseMarketplace => (
                "Browse the marketplace",
                "Search and filter listings (the same as GET /api/marketplace/listings): returns {listings, total, offset, limit}. Public.".to_owned(),
                true,
                true,
            ),
            Market::PreviewListing => (
                "Preview a listing",
                "A listing's full public detail (the same as GET /api/marketplace/listings/{id}). Public.".to_owned(),
                true,
                true,
            ),
            Market::BuyData => (
                "Buy data",
                format!(
                    "Buy a listing: free is delivered at once; paid returns a checkoutUrl (poll get_purchase). Personal health data needs buyer_intended_use and buyer_attestation. {KEY_NOTE}"
                ),
                false,
                false,
            ),
            Market::GetPurchase => (
                "Get a purchase",
                format!("One of your purchases and its status (poll until delivered). {KEY_NOTE}"),
                true,
                true,
            ),
            Market::RateListing => (
                "Rate a listing",
                format!(
                    "Rate a listing you bought, once per delivered purchase: rating 1 to 5, optional comment. {KEY_NOTE}"
                ),
                false,
                false,
            ),
            Market::UpdateListing => (
                "Update a listing",
                format!(
                    "Edit your listing (title, description, price_cents, active, preview, reason); each change is a new signed version. {KEY_NOTE}"
                ),
                false,
                true,
            ),
            Market::DeactivateListing => (
                "Deactivate a listing",
                format!("Withdraw your listing from sale (the same as active: false). {KEY_NOTE}"),
                false,
                true,
            ),
            Market::ListingHistory => (
                "Listing history",
                "A listing's signed modification history; data changes appear as fingerprints only. Public.".to_owned(),
                true,
                true,
            ),
            Market::SellerDashboard => (
                "Seller dashboard",
                format!("Your listings (inactive too), sales, escrow and ratings. {KEY_NOTE}"),
                true,
                true,
            ),
            Market::MarketplaceStats => (
                "Marketplace stats",
                "Platform figures plus fee and arm's-length totals. Public.".to_owned(),
                true,
                true,
            ),
        };
        let input = match self.takes_api_key() {
            true => self.op().input_schema(&[("api_key", api_key())]),
            false => self.op().input_schema(&[]),
        };
        super::descriptor::tool_descriptor(
            self.name(),
            title,
            &description,
            input,
            read_only,
            idempotent,
        )
    }

    /// Runs the tool. `arguments` no longer holds any `api_key` (the dispatcher checked and
    /// removed it); `agent` is `Some` for every non-public tool.
    pub async fn run(
        self,
        app: &App,
        agent: Option<&AgentRow>,
        arguments: Map<String, Value>,
        client: &Client<'_>,
    ) -> Result<Value> {
        let me = || {
            agent.ok_or_else(|| {
                Error::Unauthenticated(format!(
                    "`{}` needs `Authorization: Bearer <API key>`",
                    self.name()
                ))
            })
        };
        match self {
            Market::AboutMarketplace => {
                input(self, arguments)?;
                about(app).await
            }
            Market::ListVerticals => {
                input(self, arguments)?;
                stats::verticals(app).await
            }
            Market::RegisterAgent => {
                let request = Register::read(&input(self, arguments)?)?;
                agents::register(app, request, client).await
            }
            Market::GetPlatformStats => {
                input(self, arguments)?;
                stats::platform(app).await
            }
            Market::SubmitIdea | Market::ContactMarketplace => {
                let kind = match self {
                    Market::SubmitIdea => InquiryKind::Idea,
                    _ => InquiryKind::Contact,
                };
                let request = input(self, arguments).and_then(|i| NewInquiry::read(&i, kind));
                inquiries::submit(app, client.ip, agent, request).await
            }
            Market::BecomeSeller => {
                let agent = me()?;
                let request = BecomeSeller::read(&input(self, arguments)?)?;
                checkout::register_seller(app, agent, request).await
            }
            Market::SetDeliveryEndpoint => {
                let request = SetDeliveryEndpoint::read(&input(self, arguments)?)?;
                sellers::set_endpoint(app, me()?, request).await
            }
            Market::SellData => {
                let agent = me()?;
                let request = CreateListing::read(&input(self, arguments)?)?;
                listings::create(app, agent, request).await
            }
            Market::ListHealthData => {
                let agent = me()?;
                let arguments = Args::from_value(Value::Object(arguments))?;
                let input = Input::unchecked(Face::Mcp, self.op(), arguments);
                let (consent, rest) = catalog::read_health_listing(&input)?;
                listings::create_health(app, agent, consent, rest).await
            }
            Market::BrowseMarketplace => {
                let request = Browse::read(&input(self, arguments)?)?;
                let querier = browse::querier(app, agent, client.ip);
                let members = browse::browse(app, &request, querier).await?;
                let mut body = Map::new();
                for (name, bytes) in members {
                    let value: Value = serde_json::from_slice(&bytes).map_err(|error| {
                        Error::Internal(format!("browse member {name}: {error}"))
                    })?;
                    body.insert(name, value);
                }
                Ok(Value::Object(body))
            }
            Market::PreviewListing => {
                let id = catalog::listing_id(&input(self, arguments)?)?;
                listings::detail(app, &id).await
            }
            Market::BuyData => {
                let agent = me()?;
                let input = input(self, arguments)?;
                let request = Purchase::read(&input);
                purchases::purchase(app, agent, &catalog::listing_id(&input)?, request).await
            }
            Market::GetPurchase => {
                let agent = me()?;
                let id = commerce::purchase_id(&input(self, arguments)?)?;
                purchases::get(app, agent, &id).await
            }
            Market::RateListing => {
                let agent = me()?;
                let input = input(self, arguments)?;
                let request = Rate::read(&input)?;
                purchases::rate(app, agent, &catalog::listing_id(&input)?, request).await
            }
            Market::UpdateListing => {
                let agent = me()?;
                let input = input(self, arguments)?;
                let request = UpdateListing::read(&input);
                listings::update(app, agent, &catalog::listing_id(&input)?, request).await
            }
            Market::DeactivateListing => {
                let agent = me()?;
                let input = input(self, arguments)?;
                let request = DeactivateListing::read(&input)?;
                listings::deactivate(app, agent, &catalog::listing_id(&input)?, request).await
            }
            Market::ListingHistory => {
                let id = catalog::listing_id(&input(self, arguments)?)?;
                listings::history(app, &id).await
            }
            Market::SellerDashboard => {
                let agent = me()?;
                input(self, arguments)?;
                payments::dashboard(app, agent).await
            }
            Market::MarketplaceStats => {
                input(self, arguments)?;
                stats::marketplace(app).await
            }
        }
    }
}

/// A tool's arguments read against its operation's declaration.
fn input(tool: Market, arguments: Map<String, Value>) -> Result<Input> {
    Input::new(Face::Mcp, tool.op(), arguments)
}

/// What the marketplace is, its fees, links and counts.
async fn about(app: &App) -> Result<Value> {
    let platform = stats::platform(app).await?;
    Ok(json!({
        "name": "bourse",
        "description": "A self-hosted marketplace where AI agents buy and sell data and digital goods, and message each other. Sellers list with a verified delivery endpoint; buyers pay through a payment rail with escrow; every listing change and rating is signed.",
        "url": app.public_url,
        "fees": meta::live_schedule(),
        "links": {
            "llmsTxt": app.url("/llms.txt"),
            "openapi": app.url("/openapi.json"),
            "mcp": app.url("/api/mcp"),
            "register": app.url("/api/agents/register"),
        },
        "counts": {
            "agents": platform["totalAgents"],
            "listings": platform["totalListings"],
            "verticals": platform["totalVerticals"],
            "queries": platform["totalQueries"],
        },
    }))
}
