//! One row per operation. Every operation bourse offers, on any face, is one row of the
//! [`operations!`] table below, and everything the faces need to know about it comes from that
//! row: the [`Operation`] enum, its REST bindings (method and path template, matched by
//! `http::router`), who may call it ([`Auth`]), its path parameter's type ([`Param`]), its
//! flags ([`Spec`]), and the declaration of its fields ([`Op`]), which also carries its MCP tool
//! (name, title, description, who may call it and the OAuth scope it needs). `tools/list`
//! lists the rows whose declaration has a tool, in table order.
//!
//! Adding an operation is one row here, its request type and declaration (`request`), its
//! handler (`api::dispatch`, and `mcp::market::run` for a tool) and its service function. The
//! tests below hold every row, route, tool and declaration to the table.

use crate::error::Error;
use crate::request::{
    Op, Scope, Tool, agents, catalog, commerce, contact, disclosure, messaging, sellers, spending,
    trust,
};

/// Who may call an operation.
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
    /// A2A authenticates each request itself (browsing and the fee schedule are public; sending,
    /// buying, selling and tasks take an API key or an OAuth access token) and answers in A2A's
    /// own error forms, so nothing is checked before its handler.
    A2a,
    /// Anyone; the answer's shape is fixed by an outside standard (OAuth metadata, RFC 7591 open
    /// client registration, the RFC 9727 API catalog, the MCP Registry `server.json`), so no
    /// provenance block is added.
    Standard,
    /// An OAuth client authenticating itself (its secret, or PKCE for a public client) at the
    /// token and revocation endpoints; answers in OAuth's shape.
    OAuthClient,
    /// A person at the authorization page, who signs in with an agent's API key typed into the
    /// form (or registers a new agent there), or the operator at the console's sign-in, who
    /// types the operator key into its form; answers are HTML and redirects.
    Person,
    /// The operator at the console (`/console/…`): a session cookie made by signing in there.
    /// Dispatch reads the session; the console sends a request without one to sign in, and
    /// refuses a form without the session's anti-forgery token (403). Answers are HTML.
    Console,
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
    /// A transparency log index: decimal digits, no leading zero, at most 19.
    Index,
    /// A c2sp.org/tlog-tiles tile path, slashes included (`0/x001/234.p/7`, `entries/000`).
    TilePath,
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
            Param::Index => {
                (1..=19).contains(&value.len())
                    && value.bytes().all(|b| b.is_ascii_digit())
                    && (value == "0" || !value.starts_with('0'))
                    && value.parse::<u64>().is_ok()
            }
            Param::TilePath => crate::crypto::tlog::parse_tile_path(value).is_some(),
        };
        if fits {
            return Ok(());
        }
        let what = match self {
            Param::Id => "id (a UUID)",
            Param::Handle => "handle",
            Param::Token => "session, token or onboarding id",
            Param::Index => "log index (a decimal number)",
            Param::TilePath => "tile path (c2sp.org/tlog-tiles)",
        };
        Err(Error::NotFound(format!(
            "no resource {value:?}: not a well-formed {what}"
        )))
    }
}

/// The facts of one operation (one row of the table). Flags not named in a row are false.
#[derive(Debug)]
pub struct Spec {
    pub auth: Auth,
    /// The REST bindings: (method, path template). `{name}` matches one non-empty segment. Empty
    /// for an operation offered on MCP only.
    pub rest: &'static [(&'static str, &'static str)],
    /// The declaration of its fields (and its MCP tool), for operations read through `Input`.
    pub op: Option<&'static Op>,
    /// The type of the path parameter, for a template that has one.
    pub param: Option<Param>,
    /// Reads a JSON body, so a body sent as another media type is refused (415). The sandbox
    /// buttons post browser forms and their twins read no body; MCP checks its own.
    pub json: bool,
    /// The agent key may also come as the JSON body member `api_key` (the marketplace bodies,
    /// as the interface allows); elsewhere only `Authorization: Bearer` counts.
    pub body_key: bool,
    /// A signed answer of this public read may be reused while nothing was committed since it
    /// was made (`catalog::signed`): no counter, no rate limit, no lazy write. Listing detail and
    /// browse keep theirs in their services (they count views and queries).
    pub reuse: bool,
    /// Moves money through a payment provider, so it runs to its end even when the client
    /// disconnects (spawned rather than dropped with the request).
    pub to_completion: bool,
    /// Belongs to the sandbox rail (served only with `--payments sandbox`).
    pub sandbox: bool,
    /// Every refusal, not only the OAuth ones, is answered in OAuth's error shape (token,
    /// revocation, registration).
    pub oauth_shape: bool,
    /// The Prometheus scrape: its row says `Operator`, and `serve --metrics-public` opens it to
    /// anyone (a scraper on a private network); never signed either way.
    pub scrape: bool,
}

impl Spec {
    const NONE: Spec = Spec {
        auth: Auth::Public,
        rest: &[],
        op: None,
        param: None,
        json: false,
        body_key: false,
        reuse: false,
        to_completion: false,
        sandbox: false,
        oauth_shape: false,
        scrape: false,
    };
}

/// `Name: Auth [METHOD "path", …] => declaration { flag, field: value, … };`
macro_rules! operations {
    ($(
        $name:ident: $auth:ident [$($method:ident $path:literal),* $(,)?]
        $(=> $op:path)? { $($flag:ident $(: $value:expr)?),* $(,)? };
    )*) => {
        /// Every operation, one per row of the table.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum Operation { $($name,)* }

        impl Operation {
            /// Every operation, in table order.
            pub const ALL: &[Operation] = &[$(Operation::$name,)*];
        }

        static SPECS: &[Spec] = &[$(Spec {
            auth: Auth::$auth,
            rest: &[$((stringify!($method), $path)),*],
            op: operations!(@op $($op)?),
            $($flag: operations!(@value $($value)?),)*
            ..Spec::NONE
        },)*];
    };
    (@op) => { None };
    (@op $op:path) => { Some(&$op) };
    (@value) => { true };
    (@value $value:expr) => { $value };
}

use Param::{Handle, Id, Index, TilePath, Token};

operations! {
    // The operations of both faces, in `tools/list` order (the Agent Connect tools first).
    GetMe: Agent [GET "/api/agents/me"] => agents::WHOAMI {};
    LookupAgents: Public [GET "/api/agents/lookup"] => agents::LOOKUP {};
    ReadInbox: Agent [GET "/api/agents/me/inbox"] => messaging::READ_INBOX {};
    SendMessage: Agent [POST "/api/agents/{handle}/messages"] => messaging::SEND_MESSAGE
        { param: Some(Handle), json };
    AboutMarketplace: Public [] => catalog::ABOUT {};
    ListVerticals: Public [GET "/api/verticals"] => catalog::LIST_VERTICALS { reuse };
    RegisterAgent: Public [POST "/api/agents/register"] => agents::REGISTER { json };
    PlatformStats: Public [GET "/api/stats"] => catalog::PLATFORM_STATS { reuse };
    SubmitIdea: Public [] => contact::SUBMIT_IDEA {};
    CreateInquiry: Public [POST "/api/inquiries"] => contact::CONTACT { json };
    SellRegister: Agent [POST "/api/sell/register"] => commerce::BECOME_SELLER
        { json, body_key };
    SetDeliveryEndpoint: Agent [PUT "/api/sell/delivery-endpoint"]
        => catalog::SET_DELIVERY_ENDPOINT { json, body_key };
    CreateListing: Agent [POST "/api/marketplace/listings"] => catalog::CREATE_LISTING
        { json, body_key };
    CreateHealthListing: Agent [POST "/api/marketplace/listings/health"]
        => catalog::CREATE_HEALTH_LISTING { json, body_key };
    BrowseListings: Public [GET "/api/marketplace/listings"] => catalog::BROWSE {};
    GetListing: Public [GET "/api/marketplace/listings/{id}"] => catalog::LISTING_DETAIL
        { param: Some(Id) };
    PurchaseListing: AgentOrPayment [POST "/api/marketplace/listings/{id}/purchase"]
        => commerce::PURCHASE { param: Some(Id), json, body_key, to_completion };
    GetPurchase: AgentOrPayment [GET "/api/marketplace/purchases/{id}"]
        => commerce::GET_PURCHASE { param: Some(Id) };
    RateListing: Agent [POST "/api/marketplace/listings/{id}/rate"] => commerce::RATE
        { param: Some(Id), json, body_key };
    UpdateListing: Agent [PATCH "/api/marketplace/listings/{id}"] => catalog::UPDATE_LISTING
        { param: Some(Id), json, body_key };
    DeactivateListing: Agent [POST "/api/marketplace/listings/{id}/deactivate"]
        => catalog::DEACTIVATE_LISTING { param: Some(Id), json, body_key };
    ListingHistory: Public [GET "/api/marketplace/listings/{id}/history"]
        => catalog::LISTING_HISTORY { param: Some(Id) };
    SellerPage: Public [GET "/api/marketplace/sellers/{code}"] => sellers::SELLER
        { param: Some(Handle), reuse };
    SellDashboard: Agent [GET "/api/sell/dashboard"] => commerce::SELLER_DASHBOARD {};
    MarketplaceStats: Public [GET "/api/marketplace/stats"] => catalog::MARKETPLACE_STATS
        { reuse };
    SetSpendingPolicy: Agent [PUT "/api/agents/me/spending-policy"]
        => spending::SET_SPENDING_POLICY { json };
    GetSpending: Agent [GET "/api/agents/me/spending"] => spending::SPENDING {};
    CreateKey: Agent [POST "/api/agents/me/keys"] => spending::CREATE_KEY { json };
    ListKeys: Agent [GET "/api/agents/me/keys"] => spending::LIST_KEYS {};
    RevokeRestrictedKey: Agent [POST "/api/agents/me/keys/{id}/revoke"] => spending::REVOKE_KEY
        { param: Some(Id) };

    // Agents, keys and messaging on REST.
    UpdateMe: Agent [PATCH "/api/agents/me"] => agents::UPDATE_ME { json };
    ListAgents: Public [GET "/api/agents"] => agents::LIST_AGENTS { reuse };
    RevokeKey: Agent [POST "/api/agents/keys/revoke"] {};
    ListCallbacks: Agent [GET "/api/agents/me/callbacks"] => messaging::LIST_CALLBACKS {};
    ReplayCallback: Agent [POST "/api/agents/me/callbacks/{id}/replay"] { param: Some(Id) };
    AgentOAuthGrants: Agent [GET "/api/agents/me/oauth/grants"] => agents::LIST_OAUTH_GRANTS
        {};
    AgentRevokeOAuthGrant: Agent [POST "/api/agents/me/oauth/grants/{id}/revoke"]
        { param: Some(Id) };

    // The catalogue, sellers and purchases on REST.
    ListCategories: Public [GET "/api/marketplace/categories"] {};
    GetDeliveryEndpoint: Agent [GET "/api/sell/delivery-endpoint"] {};
    ShipPurchase: Agent [POST "/api/marketplace/purchases/{id}/ship"] => commerce::SHIP
        { param: Some(Id), json, body_key };
    StripeWebhook: Provider [POST "/api/webhooks/stripe"] { json, to_completion };
    StripeConnectReturn: Capability [GET "/sell/connect/{id}"] { param: Some(Token) };

    // The owner's approval of a purchase above the approval threshold: its page and buttons.
    ApprovalPage: Capability [GET "/approve/{id}"] { param: Some(Token) };
    ApproveForm: Action [POST "/approve/{id}/approve"] { param: Some(Token) };
    DenyForm: Action [POST "/approve/{id}/deny"] { param: Some(Token) };

    // The sandbox rail: its pages, their buttons and the scripted twins, its clock.
    SandboxCheckoutPage: Capability [GET "/sandbox/checkout/{id}"]
        { param: Some(Token), sandbox };
    SandboxPayForm: Action [POST "/sandbox/checkout/{id}/pay"] { param: Some(Token), sandbox };
    SandboxCancelForm: Action [POST "/sandbox/checkout/{id}/cancel"]
        { param: Some(Token), sandbox };
    SandboxPay: Action [POST "/api/sandbox/checkout/{id}/pay"] { param: Some(Token), sandbox };
    SandboxCancel: Action [POST "/api/sandbox/checkout/{id}/cancel"]
        { param: Some(Token), sandbox };
    SandboxConnectPage: Capability [GET "/sandbox/connect/{id}"]
        { param: Some(Token), sandbox };
    SandboxConnectForm: Action [POST "/sandbox/connect/{id}/complete"]
        { param: Some(Token), sandbox };
    SandboxConnectComplete: Action [POST "/api/sandbox/connect/{id}/complete"]
        { param: Some(Token), sandbox };
    SandboxClock: Operator [POST "/api/sandbox/clock"] => commerce::ADVANCE_CLOCK
        { json, sandbox };
    SandboxClockNow: Public [GET "/api/sandbox/clock"] { sandbox };
    VerifySessionReceipt: Capability [GET "/api/svcpay/receipts/{id}/verify"]
        { param: Some(Token) };

    // Disclosures, proofs, ingress and fees.
    Meta: Public [GET "/api/meta"] { reuse };
    Fees: Public [GET "/api/fees"] { reuse };
    AnnounceFees: Operator [POST "/api/operator/fees/announcements"] => disclosure::ANNOUNCE
        { json };
    Disclosures: Public [GET "/disclosures"] {};
    DemandLedger: Public [GET "/api/proof/demand"] => disclosure::DEMAND { reuse };
    Participation: Public [GET "/api/proof/participation"] {};
    ClassifyParty: Operator [PUT "/api/operator/parties/{handle}"] => disclosure::CLASSIFY
        { param: Some(Handle), json };
    IngressDecide: Public [POST "/api/ingress"] => agents::INGRESS { json };
    IngressDescribe: Public [GET "/api/ingress"] { reuse };
    IngressKeys: Public [GET "/api/ingress/keys"] {};

    // Inquiries to the operator, rails and service requests.
    InquiryThread: Capability [GET "/api/inquiries/{id}/thread"] { param: Some(Id) };
    InquiryMessage: Capability [POST "/api/inquiries/{id}/messages"] => contact::POST_MESSAGE
        { param: Some(Id), json };
    ListInquiries: Operator [GET "/api/operator/inquiries"] => contact::LIST_INQUIRIES {};
    ReplyInquiry: Operator [POST "/api/operator/inquiries/{id}/reply"] => contact::POST_MESSAGE
        { param: Some(Id), json };
    UpdateInquiry: Operator [PATCH "/api/operator/inquiries/{id}"] => contact::SET_STATUS
        { param: Some(Id), json };
    CreateRail: Operator [POST "/api/rails"] => contact::CREATE_RAIL { json };
    ServiceRequest: Public [POST "/api/services/request"] => contact::SERVICE_REQUEST { json };

    // The operator's own.
    OperatorGetProvenance: Operator [GET "/api/operator/provenance"] {};
    OperatorUpdateProvenance: Operator [PATCH "/api/operator/provenance"]
        => trust::UPDATE_PROVENANCE { json };
    OperatorBindChair: Operator [PUT "/api/operator/chair"] => agents::BIND_CHAIR { json };
    OperatorUnbindChair: Operator [DELETE "/api/operator/chair"] {};
    OperatorPayments: Operator [GET "/api/operator/payments"] {};
    OperatorSpending: Operator [GET "/api/operator/spending"] {};
    OperatorOAuthClients: Operator [GET "/api/operator/oauth/clients"]
        => agents::LIST_OAUTH_CLIENTS {};
    OperatorRevokeOAuthClient: Operator [POST "/api/operator/oauth/clients/revoke"]
        => agents::REVOKE_OAUTH_CLIENT { json };
    OperatorOAuthGrants: Operator [GET "/api/operator/oauth/grants"]
        => agents::LIST_OAUTH_GRANTS {};
    OperatorRevokeOAuthGrant: Operator [POST "/api/operator/oauth/grants/{id}/revoke"]
        { param: Some(Id) };

    // MCP's transport.
    McpPost: Mcp [POST "/api/mcp", POST "/mcp"] {};
    McpGet: Mcp [GET "/api/mcp", GET "/mcp"] {};
    McpDelete: Mcp [DELETE "/api/mcp", DELETE "/mcp"] {};
    McpPreflight: Mcp [OPTIONS "/api/mcp", OPTIONS "/mcp"] {};

    // A2A 1.0: the marketplace's card and endpoint, and every agent's (by sub-path), in the
    // JSON-RPC and HTTP+JSON bindings.
    A2aCard: Standard [GET "/.well-known/agent-card.json"] {};
    A2aAgentCard: Standard [GET "/a2a/agents/{handle}/.well-known/agent-card.json"]
        { param: Some(Handle) };
    A2aKeys: Standard [GET "/a2a/jwks.json"] {};
    A2aRpc: A2a [POST "/a2a"] {};
    A2aAgentRpc: A2a [POST "/a2a/agents/{handle}"] { param: Some(Handle) };
    A2aSend: A2a [POST "/a2a/message:send"] {};
    A2aAgentSend: A2a [POST "/a2a/agents/{handle}/message:send"] { param: Some(Handle) };
    A2aStream: A2a [POST "/a2a/message:stream"] {};
    A2aAgentStream: A2a [POST "/a2a/agents/{handle}/message:stream"] { param: Some(Handle) };
    A2aListTasks: A2a [GET "/a2a/tasks"] {};
    A2aGetTask: A2a [GET "/a2a/tasks/{id}"] { param: Some(Id) };
    A2aCancelTask: A2a [POST "/a2a/tasks/{id}:cancel"] { param: Some(Id) };
    A2aSubscribe: A2a [POST "/a2a/tasks/{id}:subscribe", GET "/a2a/tasks/{id}:subscribe"]
        { param: Some(Id) };
    A2aPushConfigs: A2a [
        GET "/a2a/tasks/{id}/pushNotificationConfigs",
        POST "/a2a/tasks/{id}/pushNotificationConfigs",
        GET "/a2a/tasks/{id}/pushNotificationConfigs/{config}",
        DELETE "/a2a/tasks/{id}/pushNotificationConfigs/{config}",
    ] { param: Some(Id) };
    A2aExtendedCard: A2a [GET "/a2a/extendedAgentCard"] {};

    // OAuth 2.1 for hosted MCP clients, and discovery documents of outside standards.
    OAuthProtectedResource: Standard [GET "/.well-known/oauth-protected-resource"] {};
    OAuthProtectedResourceMcp: Standard [
        GET "/.well-known/oauth-protected-resource/api/mcp",
        GET "/.well-known/oauth-protected-resource/mcp",
    ] {};
    OAuthAuthorizationServer: Standard [GET "/.well-known/oauth-authorization-server"] {};
    OAuthAuthorizePage: Person [GET "/oauth/authorize"] {};
    OAuthAuthorizeForm: Person [POST "/oauth/authorize"] {};
    OAuthToken: OAuthClient [POST "/oauth/token"] { oauth_shape };
    OAuthRegister: Standard [POST "/oauth/register"] { json, oauth_shape };
    OAuthRevoke: OAuthClient [POST "/oauth/revoke"] { oauth_shape };
    ApiCatalog: Standard [GET "/.well-known/api-catalog"] {};
    ServerJson: Standard [GET "/server.json"] {};
    DiscoveryResources: Standard [GET "/discovery/resources"] {};
    DiscoverySearch: Standard [GET "/discovery/search"] {};
    AiCatalog: Standard [GET "/.well-known/ai-catalog.json", GET "/.well-known/ard.json"] {};

    // The operator console (HTML): signing in and out, and its pages and forms.
    ConsoleSignInPage: Person [GET "/console/sign-in"] {};
    ConsoleSignIn: Person [POST "/console/sign-in"] {};
    ConsoleSignOut: Console [POST "/console/sign-out"] {};
    ConsoleOverview: Console [GET "/console"] {};
    ConsoleAgents: Console [GET "/console/agents"] {};
    ConsoleAgent: Console [GET "/console/agents/{handle}"] { param: Some(Handle) };
    ConsoleRotateKey: Console [POST "/console/agents/{handle}/rotate-key"]
        { param: Some(Handle) };
    ConsoleListings: Console [GET "/console/listings"] {};
    ConsoleListing: Console [GET "/console/listings/{id}"] { param: Some(Id) };
    ConsoleDeactivateListing: Console [POST "/console/listings/{id}/deactivate"]
        { param: Some(Id) };
    ConsolePurchases: Console [GET "/console/purchases"] {};
    ConsoleOAuth: Console [GET "/console/oauth"] {};
    ConsoleRevokeOAuthClient: Console [POST "/console/oauth/clients/revoke"] {};
    ConsoleRevokeOAuthGrant: Console [POST "/console/oauth/grants/{id}/revoke"]
        { param: Some(Id) };
    ConsoleMessages: Console [GET "/console/messages"] {};
    ConsoleReplayCallback: Console [POST "/console/messages/callbacks/{id}/replay"]
        { param: Some(Id) };
    ConsoleInquiries: Console [GET "/console/inquiries"] {};
    ConsoleInquiry: Console [GET "/console/inquiries/{id}"] { param: Some(Id) };
    ConsoleReplyInquiry: Console [POST "/console/inquiries/{id}/reply"] { param: Some(Id) };
    ConsoleInquiryStatus: Console [POST "/console/inquiries/{id}/status"] { param: Some(Id) };
    ConsoleApproveRail: Console [POST "/console/inquiries/{id}/rails"] { param: Some(Id) };
    ConsoleFees: Console [GET "/console/fees"] {};
    ConsoleAnnounceFees: Console [POST "/console/fees"] {};
    ConsoleSandbox: Console [GET "/console/sandbox"] { sandbox };
    ConsoleSandboxClock: Console [POST "/console/sandbox/clock"] { sandbox };
    ConsoleSandboxPay: Console [POST "/console/sandbox/checkouts/{id}/pay"]
        { param: Some(Token), sandbox };
    ConsoleSandboxCancel: Console [POST "/console/sandbox/checkouts/{id}/cancel"]
        { param: Some(Token), sandbox };

    // The catalogue for people (HTML).
    MarketPage: Public [GET "/market"] {};
    MarketListingPage: Public [GET "/market/listings/{id}"] { param: Some(Id) };
    MarketSellerPage: Public [GET "/market/sellers/{code}"] { param: Some(Handle) };

    // The front door, documents and probes.
    FrontPage: Public [GET "/"] {};
    LlmsTxt: Public [GET "/llms.txt", GET "/api/llms.txt"] {};
    OpenApi: Public [GET "/openapi.json"] {};
    SigningKey: Public [GET "/api/signing-key"] {};
    VerifyReceipt: Public [POST "/api/verify-receipt"] { json };

    // The transparency log (c2sp.org/tlog-tiles), served as static resources.
    LogCheckpoint: Public [GET "/log/checkpoint"] {};
    LogTile: Public [GET "/log/tile/{path}"] { param: Some(TilePath) };
    LogProof: Public [GET "/log/proof/{index}"] { param: Some(Index) };
    Healthz: Probe [GET "/healthz"] {};
    Metrics: Operator [GET "/metrics"] { scrape };
    Readyz: Probe [GET "/readyz"] {};
}

impl Operation {
    /// The operation's row.
    pub fn spec(self) -> &'static Spec {
        &SPECS[self as usize]
    }

    /// Who may call it. `api::dispatch` authenticates once from it, and whether a JSON answer
    /// is signed for the public follows from it ([`Operation::is_signed`]).
    pub fn auth(self) -> Auth {
        self.spec().auth
    }

    /// The type of its path parameter, if it has one.
    pub fn param(self) -> Option<Param> {
        self.spec().param
    }

    /// The declaration of its fields, for operations read through `Input`.
    pub fn op(self) -> Option<&'static Op> {
        self.spec().op
    }

    /// What a restricted key needs to call it: the scope of its declaration (reading by
    /// default), or `None` when only the agent's full key may (keys, the spending policy, the
    /// profile, OAuth grants).
    pub fn key_scope(self) -> Option<Scope> {
        match self {
            Operation::RevokeKey
            | Operation::UpdateMe
            | Operation::SetSpendingPolicy
            | Operation::CreateKey
            | Operation::ListKeys
            | Operation::RevokeRestrictedKey
            | Operation::AgentOAuthGrants
            | Operation::AgentRevokeOAuthGrant => None,
            Operation::ReplayCallback => Some(Scope::Message),
            Operation::GetDeliveryEndpoint => Some(Scope::Sell),
            _ => Some(self.op().and_then(|op| op.scope).unwrap_or(Scope::Read)),
        }
    }

    /// Its MCP tool, if it is one.
    pub fn tool(self) -> Option<&'static Tool> {
        self.op().and_then(|op| op.tool.as_ref())
    }

    /// The operations offered as MCP tools, in `tools/list` order.
    pub fn tools() -> impl Iterator<Item = Operation> {
        Operation::ALL
            .iter()
            .copied()
            .filter(|operation| operation.tool().is_some())
    }

    /// The operation whose MCP tool is named `name`.
    pub fn tool_named(name: &str) -> Option<Operation> {
        Operation::tools().find(|operation| operation.op().is_some_and(|op| op.name == name))
    }

    /// Every REST binding of every operation: (method, path template, operation).
    pub fn routes() -> impl Iterator<Item = (&'static str, &'static str, Operation)> {
        Operation::ALL.iter().flat_map(|operation| {
            operation
                .spec()
                .rest
                .iter()
                .map(move |(method, path)| (*method, *path, *operation))
        })
    }

    /// Whether a 2xx JSON object answer carries the signed public `provenance` block: answers
    /// anyone may read are signed; answers to a credential's holder are theirs alone (what a
    /// party must trust in them, receipts and history entries, is signed on its own).
    pub fn is_signed(self) -> bool {
        matches!(self.auth(), Auth::Public | Auth::Capability)
    }

    /// Whether browsers may read the answers from any origin (CORS `*`): the OAuth documents and
    /// endpoints, which browser-based MCP clients call, and which involve no cookies.
    pub fn open_to_any_origin(self) -> bool {
        matches!(self.auth(), Auth::Standard | Auth::OAuthClient)
    }
}

#[cfg(test)]
#[path = "operations_tests.rs"]
mod tests;
