//! Unit tests of `router.rs`.
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
fn every_agent_or_operator_route_is_unsigned_and_every_public_one_signed() {
    for (_, template, route) in ROUTES {
        let signed = route.is_signed();
        match route.auth() {
            Auth::Public | Auth::Capability => assert!(signed, "{template}"),
            Auth::Probe => assert!(!signed, "{template}: probes are not signed"),
            _ => assert!(!signed, "{template}"),
        }
        if route.takes_body_key() {
            assert!(
                matches!(route.auth(), Auth::Agent | Auth::AgentOrPayment),
                "{template}"
            );
        }
    }
    assert!(!Route::ReadInbox.is_signed());
    assert!(Route::InquiryThread.is_signed());
    assert!(!Route::SandboxPay.is_signed());
}

#[test]
fn a_route_declares_a_path_parameter_exactly_when_its_template_has_one() {
    for (_, template, route) in ROUTES {
        assert_eq!(
            route.param().is_some(),
            template.contains('{'),
            "{template}"
        );
    }
    assert!(
        Param::Id
            .check("00000000-0000-4000-8000-000000000000")
            .is_ok()
    );
    assert!(Param::Id.check("not-a-uuid").is_err());
    assert!(Param::Token.check("cs_AbC-_1").is_ok());
    assert!(Param::Token.check("cs_x/../y").is_err() && Param::Token.check("a b").is_err());
    assert!(Param::Handle.check("A-7K2M9QXP").is_ok() && Param::Handle.check("").is_err());
}

#[test]
fn every_route_that_takes_a_body_says_whether_it_is_json() {
    // Routes taking a body that is not JSON (or none): forms, body-less twins, MCP.
    let not_json = [
        Route::RevokeKey,
        Route::OperatorUnbindChair,
        Route::McpPost,
        Route::McpDelete,
        Route::SandboxPay,
        Route::SandboxCancel,
        Route::SandboxConnectComplete,
        Route::SandboxPayForm,
        Route::SandboxCancelForm,
        Route::SandboxConnectForm,
        Route::ReplayCallback,
        Route::OAuthAuthorizeForm,
        Route::OAuthToken,
        Route::OAuthRevoke,
        Route::OperatorRevokeOAuthGrant,
        Route::AgentRevokeOAuthGrant,
    ];
    for (method, template, route) in ROUTES {
        if ["POST", "PUT", "PATCH", "DELETE"].contains(method) {
            assert!(
                route.reads_json_body() != not_json.contains(route),
                "{method} {template}: declare whether it reads a JSON body"
            );
        } else {
            assert!(!route.reads_json_body(), "{method} {template}");
        }
    }
}

#[test]
fn percent_decoding() {
    assert_eq!(percent_decode_with("a%20b+c%zz%4", true), "a b c%zz%4");
    assert_eq!(percent_decode_with("A-1%2B", false), "A-1+");
}
