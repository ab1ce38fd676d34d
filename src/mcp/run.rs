//! The MCP face's one dispatch: a tool call, its arguments read against its operation's
//! declaration into the same request type as the REST twin, and the same service function
//! called. The tools themselves (names, titles, descriptions, who may call them) are declared
//! with their operations (`crate::operations`, `crate::request`).

use serde_json::{Map, Value, json};

use crate::args::Args;
use crate::error::{Error, Result};
use crate::http::response::to_json;
use crate::operations::Operation;
use crate::request::agents::{Lookup, Register};
use crate::request::catalog::{
    self, Browse, CreateListing, DeactivateListing, ListingId, SetDeliveryEndpoint, UpdateListing,
};
use crate::request::commerce::{BecomeSeller, GetPurchase, Purchase, Rate};
use crate::request::contact::{InquiryKind, NewInquiry};
use crate::request::messaging::{InboxCall, SendMessage};
use crate::request::spending::{CreateKey, SetPolicy};
use crate::request::{self, Face, Input, Op};
use crate::service::contact::inquiries;
use crate::service::identity::agents::{self, Client};
use crate::service::identity::keys;
use crate::service::messaging::{message::SentMessage, messages};
use crate::service::{
    App, catalog::browse, catalog::listings, catalog::sellers, catalog::stats, commerce::checkout,
    commerce::payments, commerce::purchases, disclosure::meta, spending,
};
use crate::store::agents::AgentRow;

/// Runs the tool of `operation`. `arguments` no longer holds any `api_key` (the dispatcher
/// checked and removed it); `agent` is `Some` for every tool that is not public (the
/// dispatcher answered 401 otherwise).
pub(super) async fn run(
    operation: Operation,
    app: &App,
    agent: Option<&AgentRow>,
    arguments: Map<String, Value>,
    client: &Client<'_>,
) -> Result<Value> {
    let Some(op) = operation.op().filter(|_| operation.tool().is_some()) else {
        return Err(Error::Internal(format!("{operation:?} is not an MCP tool")));
    };
    let me = || {
        agent.ok_or_else(|| {
            Error::Unauthenticated(format!(
                "`{}` needs `Authorization: Bearer <API key>`",
                op.name
            ))
        })
    };
    match operation {
        Operation::GetMe => {
            input(op, arguments)?;
            typed(agents::me(app, me()?).await)
        }
        Operation::LookupAgents => {
            let request = Lookup::read(&input(op, arguments)?)?;
            typed(agents::lookup(app, request, client).await)
        }
        Operation::ReadInbox => match InboxCall::read(&input(op, arguments)?)? {
            InboxCall::Read(request) => {
                to_json(&messages::inbox(app, me()?, request, client).await?)
            }
            InboxCall::MarkRead { through } => to_json(&messages::mark_read(through)),
        },
        Operation::SendMessage => {
            let request = SendMessage::read(&input(op, arguments)?, None)?;
            let sent = messages::send(app, me()?, request, client).await?;
            to_json(&SentMessage {
                message: &sent.message,
                created: sent.created,
            })
        }
        Operation::AboutMarketplace => {
            input(op, arguments)?;
            about(app).await
        }
        Operation::ListVerticals => {
            input(op, arguments)?;
            to_json(&stats::verticals(app).await?)
        }
        Operation::RegisterAgent => {
            let request = Register::read(&input(op, arguments)?)?;
            typed(agents::register(app, request, client).await)
        }
        Operation::PlatformStats => {
            input(op, arguments)?;
            to_json(&stats::platform(app).await?)
        }
        Operation::SubmitIdea | Operation::CreateInquiry => {
            let kind = match operation {
                Operation::SubmitIdea => InquiryKind::Idea,
                _ => InquiryKind::Contact,
            };
            // The service judges its rate limit before the request's shape.
            let request = input(op, arguments).and_then(|i| NewInquiry::read(&i, kind));
            typed(inquiries::submit(app, client.ip, agent, request).await)
        }
        Operation::SellRegister => {
            let agent = me()?;
            let request = BecomeSeller::read(&input(op, arguments)?)?;
            typed(checkout::register_seller(app, agent, request).await)
        }
        Operation::SetDeliveryEndpoint => {
            let request = SetDeliveryEndpoint::read(&input(op, arguments)?)?;
            to_json(&sellers::set_endpoint(app, me()?, request).await?)
        }
        Operation::CreateListing => {
            let agent = me()?;
            let request = CreateListing::read(&input(op, arguments)?)?;
            to_json(&listings::create(app, agent, request).await?)
        }
        Operation::CreateHealthListing => {
            let agent = me()?;
            // The consent is judged before the shape of the rest, unknown members included.
            let arguments = Args::from_value(Value::Object(arguments))?;
            let input = Input::unchecked(Face::Mcp, op, arguments);
            let (consent, rest) = catalog::read_health_listing(&input)?;
            to_json(&listings::create_health(app, agent, consent, rest).await?)
        }
        Operation::BrowseListings => {
            let request = Browse::read(&input(op, arguments)?)?;
            let querier = browse::querier(app, agent, client.ip);
            to_json(&browse::browse(app, &request, querier).await?)
        }
        Operation::GetListing => {
            let request = ListingId::read(&input(op, arguments)?)?;
            to_json(&listings::detail(app, &request).await?)
        }
        Operation::PurchaseListing => {
            let agent = me()?;
            let request = Purchase::read(&input(op, arguments)?, None, None)?;
            typed(purchases::purchase(app, agent, request).await)
        }
        Operation::GetPurchase => {
            let agent = me()?;
            let request = GetPurchase::read(&input(op, arguments)?, None)?;
            typed(purchases::get(app, agent, request).await)
        }
        Operation::RateListing => {
            let agent = me()?;
            let request = Rate::read(&input(op, arguments)?, None)?;
            typed(purchases::rate(app, agent, request).await)
        }
        Operation::UpdateListing => {
            let agent = me()?;
            let request = UpdateListing::read(&input(op, arguments)?, None)?;
            to_json(&listings::update(app, agent, request).await?)
        }
        Operation::DeactivateListing => {
            let agent = me()?;
            let request = DeactivateListing::read(&input(op, arguments)?, None)?;
            to_json(&listings::deactivate(app, agent, request).await?)
        }
        Operation::ListingHistory => {
            let request = ListingId::read(&input(op, arguments)?)?;
            to_json(&listings::history(app, &request).await?)
        }
        Operation::SellDashboard => {
            let agent = me()?;
            input(op, arguments)?;
            typed(payments::dashboard(app, agent).await)
        }
        Operation::SetSpendingPolicy => {
            let agent = me()?;
            let request = SetPolicy::read(&input(op, arguments)?)?;
            typed(spending::set_policy(app, agent, request).await)
        }
        Operation::GetSpending => {
            let agent = me()?;
            input(op, arguments)?;
            typed(spending::spending(app, agent).await)
        }
        Operation::CreateKey => {
            let agent = me()?;
            let request = CreateKey::read(&input(op, arguments)?)?;
            typed(keys::mint(app, agent, request).await)
        }
        Operation::ListKeys => {
            let agent = me()?;
            input(op, arguments)?;
            typed(keys::list(app, agent).await)
        }
        Operation::RevokeRestrictedKey => {
            let agent = me()?;
            let key_id = request::spending::key_id(&input(op, arguments)?, None)?;
            typed(keys::revoke(app, agent, &key_id).await)
        }
        Operation::MarketplaceStats => {
            input(op, arguments)?;
            to_json(&stats::marketplace(app).await?)
        }
        other => Err(Error::Internal(format!(
            "{other:?} declares a tool that the MCP dispatch does not run"
        ))),
    }
}

/// A typed answer as a tool's JSON result.
fn typed(answer: Result<impl serde::Serialize>) -> Result<Value> {
    crate::http::response::to_json(&answer?)
}

/// A tool's arguments read against its operation's declaration.
fn input(op: &'static Op, arguments: Map<String, Value>) -> Result<Input> {
    Input::new(Face::Mcp, op, arguments)
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
            "agents": platform.total_agents,
            "listings": platform.total_listings,
            "verticals": platform.total_verticals,
            "queries": platform.total_queries,
        },
    }))
}
