//! Signing in to the operator console as a browser would: the sign-in form's own token from
//! its cookie, the key in the form's body, the session cookie from the answer; and each page's
//! anti-forgery token read from its forms.

use super::{Client, Resp};

/// A signed-in console session: its cookie and its anti-forgery token.
pub struct Console {
    pub cookie: String,
    pub csrf: String,
}

/// Every `Set-Cookie` of a response.
pub fn set_cookies(response: &Resp) -> Vec<&str> {
    response
        .headers
        .iter()
        .filter(|(name, _)| name.eq_ignore_ascii_case("set-cookie"))
        .map(|(_, value)| value.as_str())
        .collect()
}

/// The value `name=…` a response sets (its first `Set-Cookie` of that name).
pub fn cookie_value(response: &Resp, name: &str) -> Option<String> {
    set_cookies(response).into_iter().find_map(|cookie| {
        let (pair, _) = cookie.split_once(';').unwrap_or((cookie, ""));
        let (key, value) = pair.split_once('=')?;
        (key.trim() == name).then(|| value.trim().to_owned())
    })
}

/// The value of the first hidden `csrf` field of a page.
pub fn csrf_of(page: &str) -> Option<String> {
    let at = page.find("name=\"csrf\" value=\"")? + "name=\"csrf\" value=\"".len();
    Some(page[at..].split('"').next()?.to_owned())
}

/// The sign-in form: its token, and the cookie header that carries it.
pub fn sign_in_form(server: &Client) -> (String, String) {
    let page = server.get("/console/sign-in");
    page.assert_status(200);
    let token = cookie_value(&page, "bourse_console_sign_in").expect("the sign-in cookie");
    assert_eq!(csrf_of(&page.text()).as_deref(), Some(token.as_str()));
    (token.clone(), format!("bourse_console_sign_in={token}"))
}

/// Posts `key` through a fresh sign-in form; the answer is not followed.
pub fn try_sign_in(server: &Client, key: &str) -> Resp {
    let (token, cookie) = sign_in_form(server);
    server.post_form(
        "/console/sign-in",
        &[("cookie", &cookie)],
        &[("csrf", &token), ("key", key)],
    )
}

impl Console {
    /// Signs in with `key` and reads the session's token from the overview.
    #[track_caller]
    pub fn sign_in(server: &Client, key: &str) -> Console {
        let answer = try_sign_in(server, key);
        assert_eq!(answer.status, 303, "{}", answer.text());
        assert_eq!(answer.header("location"), Some("/console"));
        let value = cookie_value(&answer, "bourse_console").expect("the session cookie");
        let cookie = format!("bourse_console={value}");
        let overview = server.request_unredirected("GET", "/console", &[("cookie", &cookie)], None);
        assert_eq!(overview.status, 200, "{}", overview.text());
        let csrf = csrf_of(&overview.text()).expect("the overview's forms carry a token");
        Console { cookie, csrf }
    }

    /// GETs a console page with this session (redirects answered, not followed).
    pub fn get(&self, server: &Client, path: &str) -> Resp {
        server.request_unredirected("GET", path, &[("cookie", &self.cookie)], None)
    }

    /// Posts a console form with this session's token and `fields`.
    pub fn post(&self, server: &Client, path: &str, fields: &[(&str, &str)]) -> Resp {
        let mut all = vec![("csrf", self.csrf.as_str())];
        all.extend_from_slice(fields);
        server.post_form(path, &[("cookie", &self.cookie)], &all)
    }

    /// Posts a console form with this session's cookie and exactly `fields` (no token added).
    pub fn post_raw(&self, server: &Client, path: &str, fields: &[(&str, &str)]) -> Resp {
        server.post_form(path, &[("cookie", &self.cookie)], fields)
    }
}
