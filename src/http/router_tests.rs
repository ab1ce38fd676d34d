//! Unit tests of `router.rs`.
use super::*;

#[test]
fn static_segments_win_and_wrong_methods_list_the_allowed_ones() {
    assert_eq!(
        resolve("GET", "/api/agents/me").unwrap().operation,
        Operation::GetMe
    );
    assert_eq!(
        resolve("HEAD", "/healthz").unwrap().operation,
        Operation::Healthz
    );
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
