//! REST handlers: small functions that read a [`Ctx`], call the service layer and shape a
//! [`Reply`]. Business rules live in `service`, never here.

mod agents;
mod callbacks;
mod contact;
mod discovery;
mod ingress;
mod listings;
mod log;
mod messages;
mod meta;
mod oauth;
mod operator;
mod proof;
mod purchases;
mod sandbox;
mod sell;
mod spending;
mod stats;
mod stripe;
mod system;

use crate::a2a::{self, Rest};
use crate::error::Result;
use crate::http::request::{Caller, Ctx};
use crate::http::response::Reply;
use crate::operations::{Auth, Operation};
use crate::pages::market::Market;
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
async fn authenticate(app: &App, operation: Operation, ctx: &Ctx) -> Result<Caller> {
    match operation.auth() {
        Auth::Agent => {
            let key = match ctx.bearer() {
                Some(key) => Some(key.to_owned()),
                None if operation.spec().body_key => ctx.json_args()?.take_str("api_key"),
                None => None,
            };
            let agent = crate::service::identity::agents::authenticate(app, key.as_deref()).await?;
            // A restricted key acts within its scopes.
            crate::service::identity::keys::require_scope(
                &agent,
                operation.key_scope(),
                "this call",
            )?;
            Ok(Caller::Agent(Box::new(agent)))
        }
        Auth::Operator if operation.spec().scrape && app.metrics_public => Ok(Caller::Anonymous),
        Auth::Operator => {
            app.authenticate_operator(ctx.bearer())?;
            Ok(Caller::Operator)
        }
        // The console answers a missing or expired session itself (a redirect to sign in).
        Auth::Console => Ok(crate::service::identity::console::session(
            app,
            ctx.cookie(crate::service::identity::console::COOKIE),
        )
        .map_or(Caller::Anonymous, Caller::Console)),
        Auth::Public
        | Auth::Probe
        | Auth::AgentOrPayment
        | Auth::Capability
        | Auth::Action
        | Auth::Provider
        | Auth::Mcp
        | Auth::A2a
        | Auth::Standard
        | Auth::OAuthClient
        | Auth::Person => Ok(Caller::Anonymous),
    }
}

/// Calls the handler of `operation`: the REST face's one dispatch.
///
/// # Errors
/// Whatever the handler returns; mapped to HTTP by `http::response::error`.
pub async fn dispatch(app: &App, operation: Operation, mut ctx: Ctx) -> Result<Reply> {
    if operation.spec().sandbox && !app.sandbox() {
        return Err(crate::error::Error::NotFound(format!(
            "no route for {}: the sandbox rail is off (this server runs --payments stripe)",
            ctx.path
        )));
    }
    ctx.caller = authenticate(app, operation, &ctx).await?;
    // Agent-or-payment routes authenticate in their handler (the key is optional there), and
    // their services refuse an id that names nothing after that, so 401 still comes first.
    // A2A answers a task id that names nothing in its own words (TASK_NOT_FOUND); a handle that
    // cannot be one names no endpoint at all.
    if let Some(param) = operation.param()
        && operation.auth() != Auth::AgentOrPayment
        && !(operation.auth() == Auth::A2a && param == crate::operations::Param::Id)
    {
        param.check(ctx.param())?;
    }
    let ctx = &ctx;
    match operation {
        Operation::FrontPage => crate::pages::front::front(app, ctx).await,
        Operation::MarketPage => crate::pages::market::serve(app, ctx, Market::Catalogue).await,
        Operation::MarketListingPage => {
            crate::pages::market::serve(app, ctx, Market::Listing).await
        }
        Operation::MarketSellerPage => crate::pages::market::serve(app, ctx, Market::Seller).await,
        Operation::ConsoleSignInPage
        | Operation::ConsoleSignIn
        | Operation::ConsoleSignOut
        | Operation::ConsoleOverview
        | Operation::ConsoleAgents
        | Operation::ConsoleAgent
        | Operation::ConsoleRotateKey
        | Operation::ConsoleListings
        | Operation::ConsoleListing
        | Operation::ConsoleDeactivateListing
        | Operation::ConsolePurchases
        | Operation::ConsoleOAuth
        | Operation::ConsoleRevokeOAuthClient
        | Operation::ConsoleRevokeOAuthGrant
        | Operation::ConsoleMessages
        | Operation::ConsoleReplayCallback
        | Operation::ConsoleInquiries
        | Operation::ConsoleInquiry
        | Operation::ConsoleReplyInquiry
        | Operation::ConsoleInquiryStatus
        | Operation::ConsoleApproveRail
        | Operation::ConsoleFees
        | Operation::ConsoleAnnounceFees
        | Operation::ConsoleSandbox
        | Operation::ConsoleSandboxClock
        | Operation::ConsoleSandboxPay
        | Operation::ConsoleSandboxCancel => {
            crate::pages::console::dispatch(app, operation, ctx).await
        }
        Operation::Healthz => Ok(system::healthz()),
        Operation::Readyz => system::readyz(app).await,
        Operation::Metrics => system::metrics(app).await,
        Operation::LlmsTxt => Ok(system::llms_txt(app)),
        Operation::OpenApi => Ok(system::openapi(app)),
        Operation::SigningKey => system::signing_key(app),
        Operation::VerifyReceipt => system::verify_receipt(app, ctx),
        Operation::LogCheckpoint => log::checkpoint(app).await,
        Operation::LogTile => log::tile(app, ctx).await,
        Operation::LogProof => log::proof(app, ctx).await,
        Operation::RegisterAgent => agents::register(app, ctx).await,
        Operation::ListAgents => agents::list(app, ctx).await,
        Operation::GetMe => agents::me(app, ctx).await,
        Operation::UpdateMe => agents::update_me(app, ctx).await,
        Operation::LookupAgents => agents::lookup(app, ctx).await,
        Operation::RevokeKey => agents::revoke_key(app, ctx).await,
        Operation::OperatorGetProvenance => operator::get_provenance(app),
        Operation::OperatorUpdateProvenance => operator::update_provenance(app, ctx).await,
        Operation::OperatorBindChair => operator::bind_chair(app, ctx).await,
        Operation::OperatorUnbindChair => operator::unbind_chair(app).await,
        Operation::OperatorPayments => operator::payments(app).await,
        Operation::OperatorSpending => operator::spending(app).await,
        Operation::ListCategories => stats::categories(app).await,
        Operation::ListVerticals => stats::verticals(app).await,
        Operation::BrowseListings => listings::browse(app, ctx).await,
        Operation::CreateListing => listings::create(app, ctx).await,
        Operation::CreateHealthListing => listings::create_health(app, ctx).await,
        Operation::GetListing => listings::detail(app, ctx).await,
        Operation::UpdateListing => listings::update(app, ctx).await,
        Operation::ListingHistory => listings::history(app, ctx).await,
        Operation::SellerPage => listings::seller(app, ctx).await,
        Operation::DeactivateListing => listings::deactivate(app, ctx).await,
        Operation::SetDeliveryEndpoint => sell::set_delivery_endpoint(app, ctx).await,
        Operation::GetDeliveryEndpoint => sell::get_delivery_endpoint(app, ctx).await,
        Operation::PlatformStats => stats::platform_stats(app).await,
        Operation::MarketplaceStats => stats::marketplace_stats(app).await,
        Operation::SendMessage => messages::send(app, ctx).await,
        Operation::ReadInbox => messages::inbox(app, ctx).await,
        Operation::ListCallbacks => callbacks::list_callbacks(app, ctx).await,
        Operation::ReplayCallback => callbacks::replay_callback(app, ctx).await,
        Operation::A2aCard => Ok(a2a::marketplace_card(app)),
        Operation::A2aAgentCard => a2a::agent_card(app, ctx).await,
        Operation::A2aKeys => Ok(a2a::jwks(app)),
        Operation::A2aRpc => Ok(a2a::rpc(app, ctx, false).await),
        Operation::A2aAgentRpc => Ok(a2a::rpc(app, ctx, true).await),
        Operation::A2aSend => Ok(a2a::rest(app, ctx, Rest::Send, false).await),
        Operation::A2aAgentSend => Ok(a2a::rest(app, ctx, Rest::Send, true).await),
        Operation::A2aStream => Ok(a2a::rest(app, ctx, Rest::Stream, false).await),
        Operation::A2aAgentStream => Ok(a2a::rest(app, ctx, Rest::Stream, true).await),
        Operation::A2aSubscribe => Ok(a2a::rest(app, ctx, Rest::Subscribe, false).await),
        Operation::A2aPushConfigs => {
            let method = "CreateTaskPushNotificationConfig";
            Ok(a2a::rest(app, ctx, Rest::Unoffered(method), false).await)
        }
        Operation::A2aExtendedCard => {
            let method = "GetExtendedAgentCard";
            Ok(a2a::rest(app, ctx, Rest::Unoffered(method), false).await)
        }
        Operation::A2aListTasks => Ok(a2a::rest(app, ctx, Rest::ListTasks, false).await),
        Operation::A2aGetTask => Ok(a2a::rest(app, ctx, Rest::GetTask, false).await),
        Operation::A2aCancelTask => Ok(a2a::rest(app, ctx, Rest::CancelTask, false).await),
        Operation::McpPost => crate::mcp::post(app, ctx).await,
        Operation::McpGet => crate::mcp::get(app, ctx).await,
        Operation::McpDelete => crate::mcp::delete(),
        Operation::McpPreflight => crate::mcp::preflight(app, ctx),
        Operation::PurchaseListing => purchases::purchase(app, ctx).await,
        Operation::GetPurchase => purchases::get_purchase(app, ctx).await,
        Operation::RateListing => purchases::rate(app, ctx).await,
        Operation::ShipPurchase => purchases::ship(app, ctx).await,
        Operation::SellRegister => sell::sell_register(app, ctx).await,
        Operation::SellDashboard => sell::sell_dashboard(app, ctx).await,
        Operation::SetSpendingPolicy => spending::set_policy(app, ctx).await,
        Operation::GetSpending => spending::spending(app, ctx).await,
        Operation::CreateKey => spending::create_key(app, ctx).await,
        Operation::ListKeys => spending::list_keys(app, ctx).await,
        Operation::RevokeRestrictedKey => spending::revoke_key(app, ctx).await,
        Operation::ApprovalPage => crate::pages::approve::approval_page(app, ctx).await,
        Operation::ApproveForm => crate::pages::approve::approve_form(app, ctx).await,
        Operation::DenyForm => crate::pages::approve::deny_form(app, ctx).await,
        Operation::SandboxCheckoutPage => crate::pages::checkout::checkout_page(app, ctx).await,
        Operation::SandboxPay => sandbox::pay(app, ctx).await,
        Operation::SandboxCancel => sandbox::cancel(app, ctx).await,
        Operation::SandboxConnectPage => crate::pages::onboarding::connect_page(app, ctx).await,
        Operation::SandboxConnectComplete => sandbox::complete(app, ctx).await,
        Operation::SandboxPayForm => crate::pages::checkout::pay_form(app, ctx).await,
        Operation::SandboxCancelForm => crate::pages::checkout::cancel_form(app, ctx).await,
        Operation::SandboxConnectForm => crate::pages::onboarding::complete_form(app, ctx).await,
        Operation::SandboxClock => sandbox::clock(app, ctx).await,
        Operation::SandboxClockNow => sandbox::clock_now(app),
        Operation::Meta => meta::meta(app),
        Operation::Fees => meta::fees(app).await,
        Operation::AnnounceFees => meta::announce(app, ctx).await,
        Operation::Disclosures => crate::pages::disclosures::disclosures(app).await,
        Operation::DemandLedger => proof::demand(app, ctx).await,
        Operation::Participation => proof::participation(app).await,
        Operation::IngressDecide => ingress::decide(app, ctx).await,
        Operation::IngressDescribe => ingress::describe(app).await,
        Operation::IngressKeys => ingress::keys(app),
        Operation::VerifySessionReceipt => sandbox::verify_session_receipt(app, ctx).await,
        Operation::ClassifyParty => proof::classify(app, ctx).await,
        Operation::CreateInquiry => contact::create_inquiry(app, ctx).await,
        Operation::InquiryThread => contact::thread(app, ctx).await,
        Operation::InquiryMessage => contact::follow_up(app, ctx).await,
        Operation::ListInquiries => contact::list(app, ctx).await,
        Operation::ReplyInquiry => contact::reply(app, ctx).await,
        Operation::UpdateInquiry => contact::update(app, ctx).await,
        Operation::CreateRail => contact::create_rail(app, ctx).await,
        Operation::ServiceRequest => contact::service_request(app, ctx).await,
        Operation::StripeWebhook => stripe::webhook(app, ctx).await,
        Operation::StripeConnectReturn => crate::pages::onboarding::connect_return(app, ctx).await,
        Operation::ApiCatalog => Ok(system::api_catalog(app)),
        Operation::ServerJson => Ok(system::server_json(app)),
        Operation::DiscoveryResources => discovery::resources(app, ctx).await,
        Operation::DiscoverySearch => discovery::search(app, ctx).await,
        Operation::AiCatalog => discovery::ai_catalog(app).await,
        Operation::OAuthProtectedResource | Operation::OAuthProtectedResourceMcp => {
            Ok(oauth::protected_resource(app, ctx))
        }
        Operation::OAuthAuthorizationServer => Ok(oauth::authorization_server(app)),
        Operation::OAuthAuthorizePage => crate::pages::authorize::page(app, ctx).await,
        Operation::OAuthAuthorizeForm => crate::pages::authorize::decide(app, ctx).await,
        Operation::OAuthToken => oauth::token(app, ctx).await,
        Operation::OAuthRegister => oauth::register(app, ctx).await,
        Operation::OAuthRevoke => oauth::revoke(app, ctx).await,
        // Offered on MCP only: no REST binding names them.
        Operation::AboutMarketplace | Operation::SubmitIdea => Err(crate::error::Error::Internal(
            format!("{operation:?} has no REST binding"),
        )),
        Operation::OperatorOAuthClients => oauth::list_clients(app, ctx).await,
        Operation::OperatorRevokeOAuthClient => oauth::revoke_client(app, ctx).await,
        Operation::OperatorOAuthGrants | Operation::AgentOAuthGrants => {
            oauth::list_grants(app, ctx).await
        }
        Operation::OperatorRevokeOAuthGrant | Operation::AgentRevokeOAuthGrant => {
            oauth::revoke_grant(app, ctx).await
        }
    }
}
