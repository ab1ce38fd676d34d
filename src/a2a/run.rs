//! The A2A face's one dispatch: a method of A2A 1.0, its parameters read into the same request
//! types the REST and MCP faces use, and the same service functions called.
//!
//! - At an agent's endpoint, `SendMessage` delivers to that agent's inbox (`messages::send`).
//! - At the marketplace's, a message's data part says what to do: `{"listingId": …}` buys
//!   (`purchases::purchase`; the purchase is the task), `{"query": …}` browses
//!   (`browse::browse`), `{"listing": {…}}` sells (`listings::create`), `{"fees": {}}` reads
//!   the fee schedule (`meta::fees`), `{"spending": {}}` reads the agent's spending
//!   (`spending::spending`) and `{"spendingPolicy": {…}}` replaces its spending policy
//!   (`spending::set_policy`, with the agent's full API key only). A message with no data part
//!   is answered with how to ask.
//! - `GetTask`, `ListTasks` and `CancelTask` are the buyer's purchases (`purchases::get`,
//!   `purchases::list`, and the checkout's cancel).

use base64::Engine;
use serde_json::{Map, Value};

use super::fault::Fault;
use super::tasks;
use super::wire::{
    ListTasksRequest, Message, Part, Role, SendMessageRequest, SendMessageResponse, TaskRequest,
    with_whole_numbers,
};
use crate::args::Args;
use crate::error::Error;
use crate::request::catalog::{BROWSE, Browse, CREATE_LISTING, CreateListing};
use crate::request::commerce::{PURCHASE, PaymentHeader, Purchase};
use crate::request::messaging::SendMessage;
use crate::request::spending::{SET_SPENDING_POLICY, SetPolicy};
use crate::request::{Input, Scope};
use crate::service::App;
use crate::service::catalog::{browse, listings};
use crate::service::commerce::checkout;
use crate::service::commerce::orders::{self, NewOrder, OrderRail};
use crate::service::disclosure::meta;
use crate::service::identity::agents::Client;
use crate::service::identity::oauth::Bearer;
use crate::service::messaging::messages;
use crate::service::rail::Rail;
use crate::service::spending;

/// Whom a request is addressed to.
#[derive(Clone, Debug)]
pub enum Endpoint {
    /// The marketplace itself.
    Marketplace,
    /// A registered agent, by handle (as given: any case).
    Agent(String),
}

/// An A2A method.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    SendMessage,
    /// `SendMessage` answered as a stream (the face frames it).
    SendStreamingMessage,
    GetTask,
    ListTasks,
    CancelTask,
    /// The task as it stands, for the face to follow as a stream.
    SubscribeToTask,
}

impl Method {
    /// Whether the face answers it as a stream of events.
    pub fn streams(self) -> bool {
        matches!(self, Method::SendStreamingMessage | Method::SubscribeToTask)
    }
}

impl Method {
    /// The method of a JSON-RPC `method` name.
    ///
    /// # Errors
    /// The A2A error for a method that exists and is not offered, or `METHOD_NOT_FOUND`.
    pub fn named(name: &str) -> Result<Method, Fault> {
        match name {
            "SendMessage" => Ok(Method::SendMessage),
            "GetTask" => Ok(Method::GetTask),
            "ListTasks" => Ok(Method::ListTasks),
            "CancelTask" => Ok(Method::CancelTask),
            "SendStreamingMessage" => Ok(Method::SendStreamingMessage),
            "SubscribeToTask" => Ok(Method::SubscribeToTask),
            "CreateTaskPushNotificationConfig"
            | "GetTaskPushNotificationConfig"
            | "ListTaskPushNotificationConfigs"
            | "DeleteTaskPushNotificationConfig" => Err(Fault {
                code: -32003,
                reason: "PUSH_NOTIFICATION_NOT_SUPPORTED",
                ..Fault::unsupported(
                    "push notifications are not offered: poll GetTask (agents receive pushes through their inbox callbacks)",
                )
            }),
            "GetExtendedAgentCard" => Err(Fault {
                code: -32007,
                reason: "EXTENDED_AGENT_CARD_NOT_CONFIGURED",
                ..Fault::unsupported("there is no extended agent card: the public card is all")
            }),
            other => Err(Fault::method_not_found(other)),
        }
    }
}

/// Runs `method` at `endpoint` with its parameters; `who` is the Bearer credential's agent.
///
/// # Errors
/// The A2A form of every refusal.
pub async fn run(
    app: &App,
    endpoint: &Endpoint,
    method: Method,
    params: Value,
    who: Option<&Bearer>,
    client: &Client<'_>,
    x402: bool,
) -> Result<Value, Fault> {
    let params = with_whole_numbers(params);
    if let Endpoint::Agent(handle) = endpoint
        && !matches!(method, Method::SendMessage | Method::SendStreamingMessage)
    {
        return Err(Fault::unsupported(format!(
            "{handle}'s endpoint takes messages for its inbox; purchases are tasks of the marketplace's endpoint ({})",
            app.url(super::card::ENDPOINT)
        )));
    }
    match method {
        Method::SendMessage | Method::SendStreamingMessage => {
            let request: SendMessageRequest = read(params)?;
            check_message(&request.message)?;
            let answer = match endpoint {
                Endpoint::Agent(handle) => {
                    send_to_agent(app, handle, request.message, who, client).await?
                }
                Endpoint::Marketplace => {
                    ask_marketplace(app, request.message, who, client, x402).await?
                }
            };
            answer_json(&answer)
        }
        Method::GetTask => {
            let request: TaskRequest = read(params)?;
            let buyer = holder(who, Scope::Read)?;
            let order = tasks::find(app, buyer, &request.id).await?;
            answer_json(&tasks::task(order))
        }
        Method::SubscribeToTask => {
            let request: TaskRequest = read(params)?;
            let buyer = holder(who, Scope::Read)?;
            let task = tasks::task(tasks::find(app, buyer, &request.id).await?);
            if task.status.state.is_terminal() {
                return Err(Fault::unsupported(format!(
                    "task {:?} is over: there is nothing to follow (GetTask reads it)",
                    request.id
                )));
            }
            answer_json(&task)
        }
        Method::ListTasks => {
            let request: ListTasksRequest = read(params)?;
            let buyer = holder(who, Scope::Read)?;
            answer_json(&tasks::list(app, buyer, request).await?)
        }
        Method::CancelTask => {
            let request: TaskRequest = read(params)?;
            let buyer = holder(who, Scope::Spend)?;
            let task = tasks::task(tasks::find(app, buyer, &request.id).await?);
            if task.status.state != super::wire::TaskState::InputRequired {
                let state = serde_json::to_value(task.status.state).unwrap_or_default();
                return Err(Fault::not_cancelable(
                    &request.id,
                    state.as_str().unwrap_or(""),
                ));
            }
            answer_json(&tasks::task(orders::cancel(app, buyer, &request.id).await?))
        }
    }
}

fn read<T: serde::de::DeserializeOwned>(params: Value) -> Result<T, Fault> {
    serde_json::from_value(params).map_err(|e| Fault::invalid_params(format!("params: {e}")))
}

fn answer_json(answer: &impl serde::Serialize) -> Result<Value, Fault> {
    serde_json::to_value(answer)
        .map_err(|e| Fault::from(Error::Internal(format!("an A2A answer as JSON: {e}"))))
}

/// The credential's agent, holding `scope`.
fn holder(who: Option<&Bearer>, scope: Scope) -> Result<&crate::store::agents::AgentRow, Fault> {
    let who = who.ok_or_else(|| {
        Fault::from(Error::Unauthenticated(
            "this needs `Authorization: Bearer <API key or OAuth access token>`".into(),
        ))
    })?;
    if !who.scopes.contains(scope) {
        return Err(Fault::from(Error::Forbidden {
            code: "INSUFFICIENT_SCOPE",
            message: format!("the access token lacks the `{}` scope", scope.name()),
        }));
    }
    Ok(&who.agent)
}

/// The credential's agent when the credential is its full API key: the spending policy is
/// never changed through a restricted key or an OAuth access token (as on REST and MCP).
fn full_key_holder(who: Option<&Bearer>) -> Result<&crate::store::agents::AgentRow, Fault> {
    let agent = holder(who, Scope::Spend)?;
    if let Some(who) = who {
        who.require_full_key("setting the spending policy")?;
    }
    Ok(agent)
}

fn check_message(message: &Message) -> Result<(), Fault> {
    if message.message_id.is_empty() {
        return Err(Fault::invalid_params("message.messageId is required"));
    }
    if message.role != Role::User {
        return Err(Fault::invalid_params("message.role must be ROLE_USER"));
    }
    if message.parts.is_empty() {
        return Err(Fault::invalid_params(
            "message.parts must hold at least one part",
        ));
    }
    if let Some(i) = message.parts.iter().position(|part| part.contents() != 1) {
        return Err(Fault::invalid_params(format!(
            "message.parts[{i}] must hold exactly one of text, raw, url, data"
        )));
    }
    Ok(())
}

/// A message for an agent's inbox: its text parts joined by blank lines, or, with any other
/// part, the JSON of all its parts; the A2A `messageId` is the send's idempotency key.
async fn send_to_agent(
    app: &App,
    handle: &str,
    message: Message,
    who: Option<&Bearer>,
    client: &Client<'_>,
) -> Result<SendMessageResponse, Fault> {
    let sender = holder(who, Scope::Message)?;
    let texts: Option<Vec<&str>> = message
        .parts
        .iter()
        .map(|part| part.text.as_deref())
        .collect();
    let body = match texts {
        Some(texts) => texts.join("\n\n"),
        None => serde_json::to_string(&message.parts).unwrap_or_default(),
    };
    let request = SendMessage {
        recipient: handle.to_owned(),
        client_message_id: message.message_id.clone(),
        body,
    };
    let sent = messages::send(app, sender, request, client).await?;
    let mut metadata = Map::new();
    metadata.insert(
        "bourse.message".into(),
        serde_json::to_value(&sent.message).unwrap_or_default(),
    );
    metadata.insert("bourse.created".into(), sent.created.into());
    Ok(SendMessageResponse::Message(Message {
        message_id: sent.message.id.clone(),
        context_id: message.context_id,
        task_id: None,
        role: Role::Agent,
        parts: vec![Part::text(format!(
            "Delivered to {}'s inbox; the signed receipt is in this message's metadata (bourse.message.receipt).",
            sent.message.recipient_handle
        ))],
        metadata,
        extensions: Vec::new(),
    }))
}

/// What a message to the marketplace asks, by its one data part.
async fn ask_marketplace(
    app: &App,
    message: Message,
    who: Option<&Bearer>,
    client: &Client<'_>,
    x402: bool,
) -> Result<SendMessageResponse, Fault> {
    if let Some(task_id) = &message.task_id {
        return continue_task(app, &message, task_id, who).await;
    }
    let mut data = message.parts.iter().filter_map(|part| part.data.as_ref());
    let (Some(data), None) = (data.next(), data.next()) else {
        if message.parts.iter().any(|part| part.data.is_some()) {
            return Err(Fault::invalid_params(
                "send one data part: one request per message",
            ));
        }
        return Ok(reply(&message, vec![Part::text(HOW_TO_ASK)]));
    };
    let Some(members) = data.as_object() else {
        return Err(Fault::invalid_params("the data part must be a JSON object"));
    };
    let intent = [
        "listingId",
        "query",
        "listing",
        "fees",
        "spending",
        "spendingPolicy",
    ]
    .into_iter()
    .find(|key| members.contains_key(*key));
    match intent {
        Some("listingId") => buy(app, &message, members.clone(), who, x402).await,
        Some("query") => {
            let mut members = members.clone();
            if let Some(query) = members.remove("query") {
                members.insert("q".into(), query);
            }
            let input = Input::body(&BROWSE, args(members)?)?;
            let request = Browse::read(&input)?;
            let agent = who.map(|who| &who.agent);
            let querier = browse::querier(app, agent, client.ip);
            // The signed page REST answers (with its provenance block), so it verifies offline.
            let page = browse::signed_browse(app, &request, querier).await?;
            let page: Value = serde_json::from_slice(&page)
                .map_err(|e| Error::Internal(format!("a signed page as JSON: {e}")))?;
            Ok(reply(&message, vec![Part::data(page)]))
        }
        Some("listing") => {
            let seller = holder(who, Scope::Sell)?;
            let Some(Value::Object(listing)) = members.get("listing") else {
                return Err(Fault::invalid_params("`listing` must be an object"));
            };
            let input = Input::body(&CREATE_LISTING, args(listing.clone())?)?;
            let request = CreateListing::read(&input)?;
            let written = listings::create(app, seller, request).await?;
            Ok(reply(&message, vec![Part::data(answer_json(&written)?)]))
        }
        Some("spending") => {
            let agent = holder(who, Scope::Read)?;
            let spent = spending::spending(app, agent).await?;
            Ok(reply(&message, vec![Part::data(answer_json(&spent)?)]))
        }
        Some("spendingPolicy") => {
            let agent = full_key_holder(who)?;
            let Some(Value::Object(policy)) = members.get("spendingPolicy") else {
                return Err(Fault::invalid_params("`spendingPolicy` must be an object"));
            };
            let input = Input::body(&SET_SPENDING_POLICY, args(policy.clone())?)?;
            let request = SetPolicy::read(&input)?;
            let spent = spending::set_policy(app, agent, request).await?;
            Ok(reply(&message, vec![Part::data(answer_json(&spent)?)]))
        }
        Some(_) => {
            let fees = meta::fees(app).await?;
            Ok(reply(&message, vec![Part::data(answer_json(&fees)?)]))
        }
        None => Err(Fault::invalid_params(format!(
            "the data part names no request: {HOW_TO_ASK}"
        ))),
    }
}

const HOW_TO_ASK: &str = "Send one data part: {\"query\": \"…\"} (with any browse filter) to browse, {\"listingId\": \"…\"} to buy (a task), {\"listing\": {…}} to list an asset, {\"fees\": {}} for the fee schedule, {\"spending\": {}} for your spending and {\"spendingPolicy\": {…}} to set your spending policy. To message an agent, use its endpoint /a2a/agents/{handle}.";

fn args(members: Map<String, Value>) -> Result<Args, Fault> {
    Ok(Args::from_value(Value::Object(members))?)
}

/// The marketplace's answer to `message`: a message of its own in the same context.
fn reply(message: &Message, parts: Vec<Part>) -> SendMessageResponse {
    SendMessageResponse::Message(Message {
        message_id: uuid::Uuid::new_v4().to_string(),
        context_id: message.context_id.clone(),
        task_id: None,
        role: Role::Agent,
        parts,
        metadata: Map::new(),
        extensions: Vec::new(),
    })
}

/// An order, answered as its task: on the x402 rail when the a2a-x402 extension is active or
/// the data part names that rail, else on the card rail.
async fn buy(
    app: &App,
    message: &Message,
    mut members: Map<String, Value>,
    who: Option<&Bearer>,
    x402: bool,
) -> Result<SendMessageResponse, Fault> {
    let buyer = holder(who, Scope::Spend)?;
    let Some(Value::String(listing_id)) = members.remove("listingId") else {
        return Err(Fault::invalid_params(
            "`listingId` must be a listing id (a string)",
        ));
    };
    let input = Input::body(&PURCHASE, args(members)?)?;
    let purchase = Purchase::read(&input, Some(&listing_id), None)?;
    let rail = if x402 || checkout::choose_rail(app, true, &purchase)? == Rail::Wallet {
        if app.x402.is_none() {
            return Err(crate::service::commerce::rails::x402::wire::rail_unavailable().into());
        }
        OrderRail::X402
    } else {
        OrderRail::Card
    };
    let order = NewOrder {
        context_id: message.context_id.clone(),
        rail,
        purchase,
    };
    let order = orders::open(app, buyer, order).await?;
    Ok(SendMessageResponse::Task(tasks::task(order)))
}

/// A message naming a task: with a2a-x402's `x402.payment.payload`, the payment of an order
/// waiting for one; else the task as it stands. A task that is over takes no message.
async fn continue_task(
    app: &App,
    message: &Message,
    task_id: &str,
    who: Option<&Bearer>,
) -> Result<SendMessageResponse, Fault> {
    let buyer = holder(who, Scope::Spend)?;
    let order = tasks::find(app, buyer, task_id).await?;
    if let Some(context) = &message.context_id
        && *context != order.context_id
    {
        return Err(Fault::invalid_params(format!(
            "task {task_id:?} is in context {:?}, not {context:?}",
            order.context_id
        )));
    }
    let task = tasks::task(order);
    if task.status.state.is_terminal() {
        return Err(Fault::unsupported(format!(
            "task {task_id:?} is over: a message cannot continue it"
        )));
    }
    let status = message
        .metadata
        .get("x402.payment.status")
        .and_then(Value::as_str);
    let payload = message.metadata.get("x402.payment.payload");
    match (status, payload) {
        (Some("payment-rejected"), _) => {
            // The buyer declines to pay: the order is withdrawn.
            let order = orders::cancel(app, buyer, task_id).await?;
            Ok(SendMessageResponse::Task(tasks::task(order)))
        }
        (_, Some(payload)) => {
            let Some(version) = payload
                .get("x402Version")
                .and_then(super::wire::whole_number)
            else {
                return Err(Fault::invalid_params(
                    "x402.payment.payload must be an x402 PaymentPayload with its x402Version",
                ));
            };
            // The payload as the payment header of a REST retry carries it.
            let encoded = base64::engine::general_purpose::STANDARD.encode(payload.to_string());
            let header = if version == 1 {
                PaymentHeader::V1(encoded)
            } else {
                PaymentHeader::V2(encoded)
            };
            let order = orders::pay(app, buyer, task_id, header).await?;
            Ok(SendMessageResponse::Task(tasks::task(order)))
        }
        _ => Ok(SendMessageResponse::Task(task)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn methods_a2a_names_and_what_is_not_offered() {
        assert_eq!(Method::named("GetTask").unwrap(), Method::GetTask);
        assert_eq!(
            Method::named("SubscribeToTask").unwrap(),
            Method::SubscribeToTask
        );
        assert_eq!(
            Method::named("GetTaskPushNotificationConfig")
                .unwrap_err()
                .code,
            -32003
        );
        assert_eq!(
            Method::named("GetExtendedAgentCard").unwrap_err().code,
            -32007
        );
        assert_eq!(Method::named("message/send").unwrap_err().code, -32601);
    }
}
