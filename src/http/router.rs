//! The route table and path matching. Every route is one row of [`ROUTES`]; the OpenAPI parity
//! test reads the same table, so a route cannot exist without being documented.

use crate::error::Error;

/// What a request asks for, decided before any handler runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Route {
    FrontPage,
    Healthz,
    Readyz,
    LlmsTxt,
    ApiLlmsTxt,
    OpenApi,
    SigningKey,
    VerifyReceipt,
    RegisterAgent,
    ListAgents,
    GetMe,
    UpdateMe,
    LookupAgents,
    RevokeKey,
    OperatorGetProvenance,
    OperatorUpdateProvenance,
    OperatorBindChair,
    OperatorUnbindChair,
    OperatorPayments,
    ListCategories,
    ListVerticals,
    BrowseListings,
    CreateListing,
    CreateHealthListing,
    GetListing,
    UpdateListing,
    ListingHistory,
    DeactivateListing,
    SetDeliveryEndpoint,
    GetDeliveryEndpoint,
    PlatformStats,
    MarketplaceStats,
    SendMessage,
    ReadInbox,
    ListCallbacks,
    ReplayCallback,
    McpPost,
    McpGet,
    McpDelete,
    McpPreflight,
    PurchaseListing,
    GetPurchase,
    RateListing,
    ShipPurchase,
    SellRegister,
    SellDashboard,
    SandboxCheckoutPage,
    SandboxPay,
    SandboxCancel,
    SandboxConnectPage,
    SandboxConnectComplete,
    SandboxPayForm,
    SandboxCancelForm,
    SandboxConnectForm,
    SandboxClock,
    Meta,
    Fees,
    AnnounceFees,
    Disclosures,
    DemandLedger,
    Participation,
    IngressDecide,
    IngressDescribe,
    IngressKeys,
    VerifySessionReceipt,
    ClassifyParty,
    CreateInquiry,
    InquiryThread,
    InquiryMessage,
    ListInquiries,
    ReplyInquiry,
    UpdateInquiry,
    CreateRail,
    ServiceRequest,
    StripeWebhook,
    StripeConnectReturn,
    ApiCatalog,
    ServerJson,
    OAuthProtectedResource,
    OAuthProtectedResourceMcp,
    OAuthAuthorizationServer,
    OAuthAuthorizePage,
    OAuthAuthorizeForm,
    OAuthToken,
    OAuthRegister,
    OAuthRevoke,
    OperatorOAuthClients,
    OperatorRevokeOAuthClient,
    OperatorOAuthGrants,
    OperatorRevokeOAuthGrant,
    AgentOAuthGrants,
    AgentRevokeOAuthGrant,
}

/// (method, path template, route). `{name}` matches one non-empty segment; a static segment
/// beats a parameter when both match.
pub const ROUTES: &[(&str, &str, Route)] = &[
    ("GET", "/", Route::FrontPage),
    ("GET", "/healthz", Route::Healthz),
    ("GET", "/readyz", Route::Readyz),
    ("GET", "/llms.txt", Route::LlmsTxt),
    ("GET", "/api/llms.txt", Route::ApiLlmsTxt),
    ("GET", "/openapi.json", Route::OpenApi),
    ("GET", "/api/signing-key", Route::SigningKey),
    ("POST", "/api/verify-receipt", Route::VerifyReceipt),
    ("POST", "/api/agents/register", Route::RegisterAgent),
    ("GET", "/api/agents", Route::ListAgents),
    ("GET", "/api/agents/me", Route::GetMe),
    ("PATCH", "/api/agents/me", Route::UpdateMe),
    ("GET", "/api/agents/lookup", Route::LookupAgents),
    ("POST", "/api/agents/keys/revoke", Route::RevokeKey),
    (
        "GET",
        "/api/operator/provenance",
        Route::OperatorGetProvenance,
    ),
    (
        "PATCH",
        "/api/operator/provenance",
        Route::OperatorUpdateProvenance,
    ),
    ("PUT", "/api/operator/chair", Route::OperatorBindChair),
    ("DELETE", "/api/operator/chair", Route::OperatorUnbindChair),
    ("GET", "/api/operator/payments", Route::OperatorPayments),
    ("GET", "/api/marketplace/categories", Route::ListCategories),
    ("GET", "/api/verticals", Route::ListVerticals),
    ("GET", "/api/marketplace/listings", Route::BrowseListings),
    ("POST", "/api/marketplace/listings", Route::CreateListing),
    (
        "POST",
        "/api/marketplace/listings/health",
        Route::CreateHealthListing,
    ),
    ("GET", "/api/marketplace/listings/{id}", Route::GetListing),
    (
        "PATCH",
        "/api/marketplace/listings/{id}",
        Route::UpdateListing,
    ),
    (
        "GET",
        "/api/marketplace/listings/{id}/history",
        Route::ListingHistory,
    ),
    (
        "POST",
        "/api/marketplace/listings/{id}/deactivate",
        Route::DeactivateListing,
    ),
    (
        "PUT",
        "/api/sell/delivery-endpoint",
        Route::SetDeliveryEndpoint,
    ),
    (
        "GET",
        "/api/sell/delivery-endpoint",
        Route::GetDeliveryEndpoint,
    ),
    ("GET", "/api/stats", Route::PlatformStats),
    ("GET", "/api/marketplace/stats", Route::MarketplaceStats),
    ("POST", "/api/agents/{handle}/messages", Route::SendMessage),
    ("GET", "/api/agents/me/inbox", Route::ReadInbox),
    ("GET", "/api/agents/me/callbacks", Route::ListCallbacks),
    (
        "POST",
        "/api/agents/me/callbacks/{id}/replay",
        Route::ReplayCallback,
    ),
    ("POST", "/api/mcp", Route::McpPost),
    ("GET", "/api/mcp", Route::McpGet),
    ("DELETE", "/api/mcp", Route::McpDelete),
    ("POST", "/mcp", Route::McpPost),
    ("GET", "/mcp", Route::McpGet),
    ("DELETE", "/mcp", Route::McpDelete),
    ("OPTIONS", "/api/mcp", Route::McpPreflight),
    ("OPTIONS", "/mcp", Route::McpPreflight),
    (
        "POST",
        "/api/marketplace/listings/{id}/purchase",
        Route::PurchaseListing,
    ),
    ("GET", "/api/marketplace/purchases/{id}", Route::GetPurchase),
    (
        "POST",
        "/api/marketplace/listings/{id}/rate",
        Route::RateListing,
    ),
    (
        "POST",
        "/api/marketplace/purchases/{id}/ship",
        Route::ShipPurchase,
    ),
    ("POST", "/api/sell/register", Route::SellRegister),
    ("GET", "/api/sell/dashboard", Route::SellDashboard),
    ("GET", "/sandbox/checkout/{id}", Route::SandboxCheckoutPage),
    ("POST", "/sandbox/checkout/{id}/pay", Route::SandboxPayForm),
    (
        "POST",
        "/sandbox/checkout/{id}/cancel",
        Route::SandboxCancelForm,
    ),
    (
        "POST",
        "/sandbox/connect/{id}/complete",
        Route::SandboxConnectForm,
    ),
    ("POST", "/api/sandbox/checkout/{id}/pay", Route::SandboxPay),
    (
        "POST",
        "/api/sandbox/checkout/{id}/cancel",
        Route::SandboxCancel,
    ),
    ("GET", "/sandbox/connect/{id}", Route::SandboxConnectPage),
    (
        "POST",
        "/api/sandbox/connect/{id}/complete",
        Route::SandboxConnectComplete,
    ),
    ("POST", "/api/sandbox/clock", Route::SandboxClock),
    ("GET", "/api/meta", Route::Meta),
    ("GET", "/api/fees", Route::Fees),
    (
        "POST",
        "/api/operator/fees/announcements",
        Route::AnnounceFees,
    ),
    ("GET", "/disclosures", Route::Disclosures),
    ("GET", "/api/proof/demand", Route::DemandLedger),
    ("GET", "/api/proof/participation", Route::Participation),
    ("POST", "/api/ingress", Route::IngressDecide),
    ("GET", "/api/ingress", Route::IngressDescribe),
    ("GET", "/api/ingress/keys", Route::IngressKeys),
    (
        "GET",
        "/api/svcpay/receipts/{id}/verify",
        Route::VerifySessionReceipt,
    ),
    (
        "PUT",
        "/api/operator/parties/{handle}",
        Route::ClassifyParty,
    ),
    ("POST", "/api/inquiries", Route::CreateInquiry),
    ("GET", "/api/inquiries/{id}/thread", Route::InquiryThread),
    (
        "POST",
        "/api/inquiries/{id}/messages",
        Route::InquiryMessage,
    ),
    ("GET", "/api/operator/inquiries", Route::ListInquiries),
    (
        "POST",
        "/api/operator/inquiries/{id}/reply",
        Route::ReplyInquiry,
    ),
    (
        "PATCH",
        "/api/operator/inquiries/{id}",
        Route::UpdateInquiry,
    ),
    ("POST", "/api/rails", Route::CreateRail),
    ("POST", "/api/services/request", Route::ServiceRequest),
    ("POST", "/api/webhooks/stripe", Route::StripeWebhook),
    ("GET", "/sell/connect/{id}", Route::StripeConnectReturn),
    ("GET", "/.well-known/api-catalog", Route::ApiCatalog),
    ("GET", "/server.json", Route::ServerJson),
    (
        "GET",
        "/.well-known/oauth-protected-resource",
        Route::OAuthProtectedResource,
    ),
    (
        "GET",
        "/.well-known/oauth-protected-resource/api/mcp",
        Route::OAuthProtectedResourceMcp,
    ),
    (
        "GET",
        "/.well-known/oauth-protected-resource/mcp",
        Route::OAuthProtectedResourceMcp,
    ),
    (
        "GET",
        "/.well-known/oauth-authorization-server",
        Route::OAuthAuthorizationServer,
    ),
    ("GET", "/oauth/authorize", Route::OAuthAuthorizePage),
    ("POST", "/oauth/authorize", Route::OAuthAuthorizeForm),
    ("POST", "/oauth/token", Route::OAuthToken),
    ("POST", "/oauth/register", Route::OAuthRegister),
    ("POST", "/oauth/revoke", Route::OAuthRevoke),
    (
        "GET",
        "/api/operator/oauth/clients",
        Route::OperatorOAuthClients,
    ),
    (
        "POST",
        "/api/operator/oauth/clients/revoke",
        Route::OperatorRevokeOAuthClient,
    ),
    (
        "GET",
        "/api/operator/oauth/grants",
        Route::OperatorOAuthGrants,
    ),
    (
        "POST",
        "/api/operator/oauth/grants/{id}/revoke",
        Route::OperatorRevokeOAuthGrant,
    ),
    (
        "GET",
        "/api/agents/me/oauth/grants",
        Route::AgentOAuthGrants,
    ),
    (
        "POST",
        "/api/agents/me/oauth/grants/{id}/revoke",
        Route::AgentRevokeOAuthGrant,
    ),
];

impl Route {
    /// Whether the handler moves money through a payment provider, so it must run to its end
    /// even when the client disconnects (it is spawned rather than dropped with the request).
    pub fn runs_to_completion(self) -> bool {
        matches!(self, Route::PurchaseListing | Route::StripeWebhook)
    }

    /// Whether the route belongs to the sandbox rail (served only with `--payments sandbox`).
    pub fn is_sandbox(self) -> bool {
        matches!(
            self,
            Route::SandboxCheckoutPage
                | Route::SandboxPay
                | Route::SandboxCancel
                | Route::SandboxConnectPage
                | Route::SandboxConnectComplete
                | Route::SandboxPayForm
                | Route::SandboxCancelForm
                | Route::SandboxConnectForm
                | Route::SandboxClock
        )
    }

    /// Who may call the route. `api::dispatch` authenticates once from it, and whether a JSON
    /// answer is signed for the public follows from it ([`Route::is_signed`]). The match has no
    /// wildcard: a new route cannot be added without declaring its kind.
    pub fn auth(self) -> Auth {
        use Route::*;
        match self {
            Healthz | Readyz => Auth::Probe,
            FrontPage | LlmsTxt | ApiLlmsTxt | OpenApi | SigningKey | VerifyReceipt
            | RegisterAgent | ListAgents | LookupAgents | ListCategories | ListVerticals
            | BrowseListings | GetListing | ListingHistory | PlatformStats | MarketplaceStats
            | Meta | Fees | Disclosures | DemandLedger | Participation | IngressDecide
            | IngressDescribe | IngressKeys | CreateInquiry | ServiceRequest => Auth::Public,
            GetMe
            | UpdateMe
            | RevokeKey
            | CreateListing
            | CreateHealthListing
            | UpdateListing
            | DeactivateListing
            | SetDeliveryEndpoint
            | GetDeliveryEndpoint
            | SendMessage
            | ReadInbox
            | ListCallbacks
            | ReplayCallback
            | RateListing
            | ShipPurchase
            | SellRegister
            | SellDashboard
            | AgentOAuthGrants
            | AgentRevokeOAuthGrant => Auth::Agent,
            PurchaseListing | GetPurchase => Auth::AgentOrPayment,
            OperatorGetProvenance
            | OperatorUpdateProvenance
            | OperatorBindChair
            | OperatorUnbindChair
            | OperatorPayments
            | SandboxClock
            | AnnounceFees
            | ClassifyParty
            | ListInquiries
            | ReplyInquiry
            | UpdateInquiry
            | CreateRail
            | OperatorOAuthClients
            | OperatorRevokeOAuthClient
            | OperatorOAuthGrants
            | OperatorRevokeOAuthGrant => Auth::Operator,
            InquiryThread | InquiryMessage | VerifySessionReceipt | SandboxCheckoutPage
            | SandboxConnectPage | StripeConnectReturn => Auth::Capability,
            SandboxPay
            | SandboxCancel
            | SandboxConnectComplete
            | SandboxPayForm
            | SandboxCancelForm
            | SandboxConnectForm => Auth::Action,
            StripeWebhook => Auth::Provider,
            McpPost | McpGet | McpDelete | McpPreflight => Auth::Mcp,
            ApiCatalog
            | ServerJson
            | OAuthProtectedResource
            | OAuthProtectedResourceMcp
            | OAuthAuthorizationServer
            | OAuthRegister => Auth::Standard,
            OAuthToken | OAuthRevoke => Auth::OAuthClient,
            OAuthAuthorizePage | OAuthAuthorizeForm => Auth::Person,
        }
    }

    /// The type of the route's path parameter, if it has one. The match has no wildcard, and a
    /// unit test checks it against the templates of [`ROUTES`].
    pub fn param(self) -> Option<Param> {
        use Route::*;
        match self {
            GetListing
            | UpdateListing
            | ListingHistory
            | DeactivateListing
            | PurchaseListing
            | RateListing
            | GetPurchase
            | ShipPurchase
            | ReplayCallback
            | InquiryThread
            | InquiryMessage
            | ReplyInquiry
            | UpdateInquiry
            | OperatorRevokeOAuthGrant
            | AgentRevokeOAuthGrant => Some(Param::Id),
            SendMessage | ClassifyParty => Some(Param::Handle),
            SandboxCheckoutPage
            | SandboxPay
            | SandboxCancel
            | SandboxConnectPage
            | SandboxConnectComplete
            | SandboxPayForm
            | SandboxCancelForm
            | SandboxConnectForm
            | VerifySessionReceipt
            | StripeConnectReturn => Some(Param::Token),
            FrontPage
            | Healthz
            | Readyz
            | LlmsTxt
            | ApiLlmsTxt
            | OpenApi
            | SigningKey
            | VerifyReceipt
            | RegisterAgent
            | ListAgents
            | GetMe
            | UpdateMe
            | LookupAgents
            | RevokeKey
            | OperatorGetProvenance
            | OperatorUpdateProvenance
            | OperatorBindChair
            | OperatorUnbindChair
            | OperatorPayments
            | ListCategories
            | ListVerticals
            | BrowseListings
            | CreateListing
            | CreateHealthListing
            | SetDeliveryEndpoint
            | GetDeliveryEndpoint
            | PlatformStats
            | MarketplaceStats
            | ReadInbox
            | ListCallbacks
            | McpPost
            | McpGet
            | McpDelete
            | McpPreflight
            | SellRegister
            | SellDashboard
            | SandboxClock
            | Meta
            | Fees
            | AnnounceFees
            | Disclosures
            | DemandLedger
            | Participation
            | IngressDecide
            | IngressDescribe
            | IngressKeys
            | CreateInquiry
            | ListInquiries
            | CreateRail
            | ServiceRequest
            | StripeWebhook
            | ApiCatalog
            | ServerJson
            | OAuthProtectedResource
            | OAuthProtectedResourceMcp
            | OAuthAuthorizationServer
            | OAuthAuthorizePage
            | OAuthAuthorizeForm
            | OAuthToken
            | OAuthRegister
            | OAuthRevoke
            | OperatorOAuthClients
            | OperatorRevokeOAuthClient
            | OperatorOAuthGrants
            | AgentOAuthGrants => None,
        }
    }

    /// Whether the route reads a JSON body, so a body sent as another media type is refused
    /// (415). The sandbox buttons post browser forms and their twins read no body; MCP checks its
    /// own (its refusal is a JSON-RPC error).
    pub fn reads_json_body(self) -> bool {
        use Route::*;
        matches!(
            self,
            VerifyReceipt
                | RegisterAgent
                | UpdateMe
                | OperatorUpdateProvenance
                | OperatorBindChair
                | CreateListing
                | CreateHealthListing
                | UpdateListing
                | DeactivateListing
                | SetDeliveryEndpoint
                | SendMessage
                | PurchaseListing
                | RateListing
                | ShipPurchase
                | SellRegister
                | SandboxClock
                | AnnounceFees
                | IngressDecide
                | ClassifyParty
                | CreateInquiry
                | InquiryMessage
                | ReplyInquiry
                | UpdateInquiry
                | CreateRail
                | ServiceRequest
                | StripeWebhook
                | OAuthRegister
                | OperatorRevokeOAuthClient
        )
    }

    /// Whether a 2xx JSON object answer carries the signed public `provenance` block: answers
    /// anyone may read are signed; answers to a credential's holder are theirs alone (what a
    /// party must trust in them, receipts and history entries, is signed on its own).
    pub fn is_signed(self) -> bool {
        matches!(self.auth(), Auth::Public | Auth::Capability)
    }

    /// Whether a signed answer of this public read may be reused while nothing was committed
    /// since it was made (`catalog::signed`): reads without side effects (no counter, no rate
    /// limit, no lazy write) whose content is the database's and the query's. Listing detail
    /// and browse keep theirs in their services (they count views and queries).
    pub fn reuses_signed_answer(self) -> bool {
        matches!(
            self,
            Route::PlatformStats
                | Route::MarketplaceStats
                | Route::ListVerticals
                | Route::Meta
                | Route::Fees
                | Route::DemandLedger
                | Route::IngressDescribe
                | Route::ListAgents
        )
    }

    /// Whether browsers may read the answers from any origin (CORS `*`): the OAuth documents and
    /// endpoints, which browser-based MCP clients call, and which involve no cookies.
    pub fn open_to_any_origin(self) -> bool {
        matches!(self.auth(), Auth::Standard | Auth::OAuthClient)
    }

    /// Whether every refusal, not only the OAuth ones, is answered in OAuth's error shape (the
    /// endpoints OAuth clients call and parse: token, revocation, registration).
    pub fn answers_in_oauth_shape(self) -> bool {
        matches!(
            self,
            Route::OAuthToken | Route::OAuthRevoke | Route::OAuthRegister
        )
    }

    /// Whether the agent key may also come as the JSON body member `api_key` (the marketplace
    /// bodies, as the interface allows); elsewhere only `Authorization: Bearer` counts.
    pub fn takes_body_key(self) -> bool {
        matches!(
            self,
            Route::CreateListing
                | Route::CreateHealthListing
                | Route::UpdateListing
                | Route::DeactivateListing
                | Route::SetDeliveryEndpoint
                | Route::PurchaseListing
                | Route::RateListing
                | Route::ShipPurchase
                | Route::SellRegister
        )
    }
}

/// The type of a path parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Param {
    /// A resource id: a UUID (listings, purchases, callback deliveries, inquiries).
    Id,
    /// An agent handle (any case; `chair` where the route allows it), at most 64 characters.
    Handle,
    /// An unguessable capability (checkout sessions `cs_…`, x402 purchase tokens, onboarding
    /// ids): unpadded base64url with an optional prefix, at most 100 characters.
    Token,
}

impl Param {
    /// Whether `value` can be such a parameter at all. One that cannot names nothing, so the
    /// route answers 404 for it before any lookup (and it never reaches a `Location` header or
    /// a form action).
    ///
    /// # Errors
    /// `NOT_FOUND`.
    pub fn check(self, value: &str) -> Result<(), Error> {
        let fits = match self {
            Param::Id => uuid::Uuid::parse_str(value).is_ok(),
            Param::Handle => {
                (1..=64).contains(&value.chars().count()) && !value.chars().any(char::is_control)
            }
            Param::Token => {
                (1..=100).contains(&value.len())
                    && value
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
            }
        };
        if fits {
            Ok(())
        } else {
            Err(Error::NotFound(format!(
                "no resource {value:?}: not a well-formed {}",
                match self {
                    Param::Id => "id (a UUID)",
                    Param::Handle => "handle",
                    Param::Token => "session, token or onboarding id",
                }
            )))
        }
    }
}

/// Who may call a route.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Auth {
    /// Anyone, without a credential.
    Public,
    /// Liveness and readiness probes: anyone, answered without a signature (a load balancer
    /// asks many times a second and checks only the status; they are not part of the signed
    /// surface of the contract).
    Probe,
    /// An agent's API key; dispatch authenticates it and hands the handler the agent.
    Agent,
    /// An agent's key when given; without one the payment is the credential (an x402 purchase)
    /// or a purchase token reads it back. The handler authenticates.
    AgentOrPayment,
    /// The operator's token (`DATA/operator.key`); dispatch checks it.
    Operator,
    /// The unguessable id in the path grants reading (an inquiry thread, a checkout page, a
    /// session receipt); what it shows may be shown on, so JSON answers are signed.
    Capability,
    /// The unguessable id in the path grants acting on it (the sandbox buttons and their
    /// scripted twins); answers go to the holder alone.
    Action,
    /// Signed by a payment provider (the Stripe webhook checks `Stripe-Signature`).
    Provider,
    /// MCP authenticates each JSON-RPC message itself (some methods are public): an API key
    /// or an OAuth access token.
    Mcp,
    /// Anyone; the answer's shape is fixed by an outside standard (OAuth metadata, RFC 7591 open
    /// client registration, the RFC 9727 API catalog, the MCP Registry `server.json`), so no
    /// provenance block is added.
    Standard,
    /// An OAuth client authenticating itself (its secret, or PKCE for a public client) at the
    /// token and revocation endpoints; answers in OAuth's shape.
    OAuthClient,
    /// A person at the authorization page, who signs in with an agent's API key typed into the
    /// form (or registers a new agent there); answers are HTML and redirects.
    Person,
}

/// A matched route and its path parameters, in template order.
#[derive(Debug)]
pub struct Matched {
    pub route: Route,
    pub params: Vec<String>,
}

/// Matches `method` and `path`; HEAD is served as GET.
///
/// # Errors
/// `NOT_FOUND` for an unknown path; `METHOD_NOT_ALLOWED` (with the allowed methods) for a
/// known path with another method.
pub fn resolve(method: &str, path: &str) -> Result<Matched, Error> {
    let method = if method == "HEAD" { "GET" } else { method };
    let segments: Vec<&str> = path.split('/').skip(1).collect();
    let mut best: Option<(usize, &str)> = None;
    let mut candidates = Vec::new();
    for (route_method, template, parts, route) in PARSED.iter() {
        let Some((score, params)) = match_parts(parts, &segments) else {
            continue;
        };
        candidates.push((score, *route_method, *template, *route, params));
        if best.is_none_or(|(top, _)| score > top) {
            best = Some((score, template));
        }
    }
    let Some((_, best_template)) = best else {
        return Err(Error::NotFound(format!(
            "no route for {path}; see /openapi.json"
        )));
    };
    let mut allow = Vec::new();
    for (_, route_method, template, route, params) in candidates {
        if template != best_template {
            continue;
        }
        if route_method == method {
            return Ok(Matched { route, params });
        }
        allow.push(route_method);
    }
    if allow.contains(&"GET") {
        allow.push("HEAD");
    }
    Err(Error::MethodNotAllowed { allow })
}

/// Whether every route at `path` is open to any origin (a CORS preflight for it is answered).
pub fn open_to_any_origin(path: &str) -> bool {
    let segments: Vec<&str> = path.split('/').skip(1).collect();
    let mut routes = PARSED
        .iter()
        .filter(|(_, _, parts, _)| match_parts(parts, &segments).is_some())
        .peekable();
    routes.peek().is_some() && routes.all(|(_, _, _, route)| route.open_to_any_origin())
}

/// [`ROUTES`] with each template split into its segments once, not on every request.
type Parsed = (&'static str, &'static str, Vec<&'static str>, Route);
static PARSED: std::sync::LazyLock<Vec<Parsed>> = std::sync::LazyLock::new(|| {
    ROUTES
        .iter()
        .map(|(method, template, route)| {
            (
                *method,
                *template,
                template.split('/').skip(1).collect(),
                *route,
            )
        })
        .collect()
});

/// Some(static segment count, params) when the template `parts` match.
fn match_parts(parts: &[&str], segments: &[&str]) -> Option<(usize, Vec<String>)> {
    if parts.len() != segments.len() {
        return None;
    }
    let mut score = 0;
    let mut params = Vec::new();
    for (part, segment) in parts.iter().zip(segments) {
        if part.starts_with('{') {
            if segment.is_empty() {
                return None;
            }
            params.push(percent_decode(segment));
        } else if part == segment {
            score += 1;
        } else {
            return None;
        }
    }
    Some((score, params))
}

/// Decodes `%XX` escapes (and `+` as space when `plus_is_space`); invalid escapes stay literal.
pub fn percent_decode_with(text: &str, plus_is_space: bool) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok();
                match hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                    Some(byte) => {
                        out.push(byte);
                        i += 3;
                    }
                    None => {
                        out.push(b'%');
                        i += 1;
                    }
                }
            }
            b'+' if plus_is_space => {
                out.push(b' ');
                i += 1;
            }
            byte => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn percent_decode(text: &str) -> String {
    percent_decode_with(text, false)
}

#[cfg(test)]
#[path = "router_tests.rs"]
mod tests;
