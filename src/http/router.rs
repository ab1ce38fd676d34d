//! The route table and path matching. Every route is one row of [`ROUTES`]; the OpenAPI parity
//! test reads the same table, so a route cannot exist without being documented.

use crate::error::Error;

/// What a request asks for, decided before any handler runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Route {
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
}

/// (method, path template, route). `{name}` matches one non-empty segment; a static segment
/// beats a parameter when both match.
pub const ROUTES: &[(&str, &str, Route)] = &[
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

    /// Whether the route answers the caller alone (an agent or operator key, or MCP's own
    /// protocol). Its JSON is private, so it carries no public provenance block; what a party
    /// must trust in it is signed on its own (message receipts, listing history entries).
    pub fn is_private(self) -> bool {
        matches!(
            self,
            Route::GetMe
                | Route::UpdateMe
                | Route::RevokeKey
                | Route::OperatorGetProvenance
                | Route::OperatorUpdateProvenance
                | Route::OperatorBindChair
                | Route::OperatorUnbindChair
                | Route::OperatorPayments
                | Route::CreateListing
                | Route::CreateHealthListing
                | Route::UpdateListing
                | Route::DeactivateListing
                | Route::SetDeliveryEndpoint
                | Route::GetDeliveryEndpoint
                | Route::SendMessage
                | Route::ReadInbox
                | Route::ListCallbacks
                | Route::ReplayCallback
                | Route::McpPost
                | Route::McpGet
                | Route::McpDelete
                | Route::PurchaseListing
                | Route::GetPurchase
                | Route::RateListing
                | Route::ShipPurchase
                | Route::SellRegister
                | Route::SellDashboard
                | Route::SandboxPay
                | Route::SandboxCancel
                | Route::SandboxConnectComplete
                | Route::SandboxClock
                | Route::AnnounceFees
                | Route::ClassifyParty
                | Route::ListInquiries
                | Route::ReplyInquiry
                | Route::UpdateInquiry
                | Route::CreateRail
                | Route::StripeWebhook
        )
    }
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
    for (route_method, template, route) in ROUTES {
        let Some((score, params)) = match_template(template, &segments) else {
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

/// Some(static segment count, params) when `template` matches.
fn match_template(template: &str, segments: &[&str]) -> Option<(usize, Vec<String>)> {
    let parts: Vec<&str> = template.split('/').skip(1).collect();
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
mod tests {
    use super::*;

    #[test]
    fn static_segments_win_and_wrong_methods_list_the_allowed_ones() {
        assert_eq!(
            resolve("GET", "/api/agents/me").unwrap().route,
            Route::GetMe
        );
        assert_eq!(resolve("HEAD", "/healthz").unwrap().route, Route::Healthz);
        let Err(Error::MethodNotAllowed { allow }) = resolve("DELETE", "/api/agents/me") else {
            panic!("expected 405");
        };
        assert_eq!(allow, vec!["GET", "PATCH", "HEAD"]);
        assert!(matches!(resolve("GET", "/nope"), Err(Error::NotFound(_))));
        assert!(matches!(
            resolve("GET", "/api/agents/"),
            Err(Error::NotFound(_))
        ));
    }

    #[test]
    fn percent_decoding() {
        assert_eq!(percent_decode_with("a%20b+c%zz%4", true), "a b c%zz%4");
        assert_eq!(percent_decode_with("A-1%2B", false), "A-1+");
    }
}
