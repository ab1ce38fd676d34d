//! REST handlers: small functions that read a [`Ctx`], call the service layer and shape a
//! [`Reply`]. Business rules live in `service`, never here.

mod agents;
mod callbacks;
mod contact;
mod ingress;
mod listings;
mod messages;
mod meta;
mod oauth;
mod operator;
mod proof;
mod purchases;
mod sandbox;
mod sell;
mod stats;
mod stripe;
mod system;

use crate::error::Result;
use crate::http::request::{Caller, Ctx};
use crate::http::response::Reply;
use crate::http::router::{Auth, Route};
use crate::request::{Input, Op};
use crate::service::App;

/// Reads a JSON body against an operation's declaration into its request type: the one way
/// REST handlers turn a body into a typed request.
///
/// # Errors
/// `INVALID_JSON`, `INVALID_ARGUMENT` naming the field.
pub(super) fn read_body<T>(
    ctx: &Ctx,
    op: &'static Op,
    read: impl FnOnce(&Input) -> Result<T>,
) -> Result<T> {
    read(&Input::body(op, ctx.json_args()?)?)
}

/// As [`read_body`], for a marketplace body whose `api_key` dispatch has already read.
///
/// # Errors
/// As [`read_body`].
pub(super) fn read_keyed_body<T>(
    ctx: &Ctx,
    op: &'static Op,
    read: impl FnOnce(&Input) -> Result<T>,
) -> Result<T> {
    read(&Input::body(op, ctx.body_args()?)?)
}

/// Establishes the caller once, from the route's declared kind: an agent key (Bearer, or the
/// body's `api_key` where the route takes one; the header wins) or the operator token. Other
/// kinds are checked by their handler (a payment, a capability in the path, a provider
/// signature) or, for MCP, per message.
///
/// # Errors
/// `UNAUTHENTICATED`; `INVALID_JSON` when a body that may carry the key is malformed.
async fn authenticate(app: &App, route: Route, ctx: &Ctx) -> Result<Caller> {
    match route.auth() {
        Auth::Agent => {
            let key = match ctx.bearer() {
                Some(key) => Some(key.to_owned()),
                None if route.takes_body_key() => ctx.json_args()?.take_str("api_key"),
                None => None,
            };
            Ok(Caller::Agent(Box::new(
                crate::service::identity::agents::authenticate(app, key.as_deref()).await?,
            )))
        }
        Auth::Operator => {
            app.authenticate_operator(ctx.bearer())?;
            Ok(Caller::Operator)
        }
        Auth::Public
        | Auth::Probe
        | Auth::AgentOrPayment
        | Auth::Capability
        | Auth::Action
        | Auth::Provider
        | Auth::Mcp
        | Auth::Standard
        | Auth::OAuthClient
        | Auth::Person => Ok(Caller::Anonymous),
    }
}

/// Calls the handler of `route`.
///
/// # Errors
/// Whatever the handler returns; mapped to HTTP by `http::response::error`.
pub async fn dispatch(app: &App, route: Route, mut ctx: Ctx) -> Result<Reply> {
    if route.is_sandbox() && !app.sandbox() {
        return Err(crate::error::Error::NotFound(format!(
            "no route for {}: the sandbox rail is off (this server runs --payments stripe)",
            ctx.path
        )));
    }
    ctx.caller = authenticate(app, route, &ctx).await?;
    // Agent-or-payment routes authenticate in their handler (the key is optional there), and
    // their services refuse an id that names nothing after that, so 401 still comes first.
    if let Some(param) = route.param()
        && route.auth() != Auth::AgentOrPayment
    {
        param.check(ctx.param())?;
    }
    let ctx = &ctx;
    match route {
        Route::FrontPage => crate::pages::front::front(app, ctx).await,
        Route::Healthz => Ok(system::healthz()),
        Route::Readyz => system::readyz(app).await,
        Route::LlmsTxt | Route::ApiLlmsTxt => Ok(system::llms_txt(app)),
        Route::OpenApi => Ok(system::openapi(app)),
        Route::SigningKey => Ok(system::signing_key(app)),
        Route::VerifyReceipt => system::verify_receipt(app, ctx),
        Route::RegisterAgent => agents::register(app, ctx).await,
        Route::ListAgents => agents::list(app, ctx).await,
        Route::GetMe => agents::me(app, ctx).await,
        Route::UpdateMe => agents::update_me(app, ctx).await,
        Route::LookupAgents => agents::lookup(app, ctx).await,
        Route::RevokeKey => agents::revoke_key(app, ctx).await,
        Route::OperatorGetProvenance => operator::get_provenance(app),
        Route::OperatorUpdateProvenance => operator::update_provenance(app, ctx).await,
        Route::OperatorBindChair => operator::bind_chair(app, ctx).await,
        Route::OperatorUnbindChair => operator::unbind_chair(app).await,
        Route::OperatorPayments => operator::payments(app).await,
        Route::ListCategories => stats::categories(app).await,
        Route::ListVerticals => stats::verticals(app).await,
        Route::BrowseListings => listings::browse(app, ctx).await,
        Route::CreateListing => listings::create(app, ctx).await,
        Route::CreateHealthListing => listings::create_health(app, ctx).await,
        Route::GetListing => listings::detail(app, ctx).await,
        Route::UpdateListing => listings::update(app, ctx).await,
        Route::ListingHistory => listings::history(app, ctx).await,
        Route::DeactivateListing => listings::deactivate(app, ctx).await,
        Route::SetDeliveryEndpoint => sell::set_delivery_endpoint(app, ctx).await,
        Route::GetDeliveryEndpoint => sell::get_delivery_endpoint(app, ctx).await,
        Route::PlatformStats => stats::platform_stats(app).await,
        Route::MarketplaceStats => stats::marketplace_stats(app).await,
        Route::SendMessage => messages::send(app, ctx).await,
        Route::ReadInbox => messages::inbox(app, ctx).await,
        Route::ListCallbacks => callbacks::list_callbacks(app, ctx).await,
        Route::ReplayCallback => callbacks::replay_callback(app, ctx).await,
        Route::McpPost => crate::mcp::post(app, ctx).await,
        Route::McpGet => crate::mcp::get(app, ctx).await,
        Route::McpDelete => crate::mcp::delete(),
        Route::McpPreflight => crate::mcp::preflight(app, ctx),
        Route::PurchaseListing => purchases::purchase(app, ctx).await,
        Route::GetPurchase => purchases::get_purchase(app, ctx).await,
        Route::RateListing => purchases::rate(app, ctx).await,
        Route::ShipPurchase => purchases::ship(app, ctx).await,
        Route::SellRegister => sell::sell_register(app, ctx).await,
        Route::SellDashboard => sell::sell_dashboard(app, ctx).await,
        Route::SandboxCheckoutPage => crate::pages::checkout::checkout_page(app, ctx).await,
        Route::SandboxPay => sandbox::pay(app, ctx).await,
        Route::SandboxCancel => sandbox::cancel(app, ctx).await,
        Route::SandboxConnectPage => crate::pages::onboarding::connect_page(app, ctx).await,
        Route::SandboxConnectComplete => sandbox::complete(app, ctx).await,
        Route::SandboxPayForm => crate::pages::checkout::pay_form(app, ctx).await,
        Route::SandboxCancelForm => crate::pages::checkout::cancel_form(app, ctx).await,
        Route::SandboxConnectForm => crate::pages::onboarding::complete_form(app, ctx).await,
        Route::SandboxClock => sandbox::clock(app, ctx).await,
        Route::Meta => meta::meta(app),
        Route::Fees => meta::fees(app).await,
        Route::AnnounceFees => meta::announce(app, ctx).await,
        Route::Disclosures => crate::pages::disclosures::disclosures(app).await,
        Route::DemandLedger => proof::demand(app, ctx).await,
        Route::Participation => proof::participation(app).await,
        Route::IngressDecide => ingress::decide(app, ctx).await,
        Route::IngressDescribe => ingress::describe(app).await,
        Route::IngressKeys => ingress::keys(app),
        Route::VerifySessionReceipt => sandbox::verify_session_receipt(app, ctx).await,
        Route::ClassifyParty => proof::classify(app, ctx).await,
        Route::CreateInquiry => contact::create_inquiry(app, ctx).await,
        Route::InquiryThread => contact::thread(app, ctx).await,
        Route::InquiryMessage => contact::follow_up(app, ctx).await,
        Route::ListInquiries => contact::list(app, ctx).await,
        Route::ReplyInquiry => contact::reply(app, ctx).await,
        Route::UpdateInquiry => contact::update(app, ctx).await,
        Route::CreateRail => contact::create_rail(app, ctx).await,
        Route::ServiceRequest => contact::service_request(app, ctx).await,
        Route::StripeWebhook => stripe::webhook(app, ctx).await,
        Route::StripeConnectReturn => crate::pages::onboarding::connect_return(app, ctx).await,
        Route::ApiCatalog => Ok(system::api_catalog(app)),
        Route::ServerJson => Ok(system::server_json(app)),
        Route::OAuthProtectedResource | Route::OAuthProtectedResourceMcp => {
            Ok(oauth::protected_resource(app, ctx))
        }
        Route::OAuthAuthorizationServer => Ok(oauth::authorization_server(app)),
        Route::OAuthAuthorizePage => crate::pages::authorize::page(app, ctx).await,
        Route::OAuthAuthorizeForm => crate::pages::authorize::decide(app, ctx).await,
        Route::OAuthToken => oauth::token(app, ctx).await,
        Route::OAuthRegister => oauth::register(app, ctx).await,
        Route::OAuthRevoke => oauth::revoke(app, ctx).await,
        Route::OperatorOAuthClients => oauth::list_clients(app, ctx).await,
        Route::OperatorRevokeOAuthClient => oauth::revoke_client(app, ctx).await,
        Route::OperatorOAuthGrants | Route::AgentOAuthGrants => oauth::list_grants(app, ctx).await,
        Route::OperatorRevokeOAuthGrant | Route::AgentRevokeOAuthGrant => {
            oauth::revoke_grant(app, ctx).await
        }
    }
}
