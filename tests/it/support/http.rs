//! A small blocking HTTP client and the response as a user sees it.

use serde_json::Value;

/// A response as a user sees it.
pub struct Resp {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Resp {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.text()))
    }

    /// The body as text (lossy), for pages and failure messages.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// Asserts the status, with the body in the message; returns the response.
    #[track_caller]
    pub fn assert_status(&self, status: u16) -> &Resp {
        assert_eq!(self.status, status, "{}", self.text());
        self
    }

    /// Asserts the status, with the body in the message; returns the JSON body.
    #[track_caller]
    pub fn expect(&self, status: u16) -> Value {
        self.assert_status(status).json()
    }

    /// Asserts 200 (exactly), with the body in the message; returns the JSON body.
    #[track_caller]
    pub fn ok(&self) -> Value {
        self.expect(200)
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// Asserts an error response: status, code, and the documented body shape.
    #[track_caller]
    pub fn assert_error(&self, status: u16, code: &str) {
        let body = self.expect(status);
        assert_eq!(body["error"]["code"], code, "{body}");
        assert_eq!(body["error"]["status"], status, "{body}");
        assert!(
            body["error"]["message"]
                .as_str()
                .is_some_and(|m| !m.is_empty()),
            "{body}"
        );
    }

    /// Asserts a 400 `INVALID_ARGUMENT` whose message names the parameter `name` (backquoted).
    #[track_caller]
    pub fn assert_invalid_naming(&self, name: &str) {
        self.assert_error(400, "INVALID_ARGUMENT");
        let message = self.json()["error"]["message"].to_string();
        assert!(message.contains(&format!("`{name}`")), "{message}");
    }
}

/// `pairs` percent-encoded as a query string or form body.
pub fn form_encode(pairs: &[(&str, &str)]) -> String {
    let encode = |text: &str| -> String {
        text.bytes()
            .map(|b| match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                    char::from(b).to_string()
                }
                other => format!("%{other:02X}"),
            })
            .collect()
    };
    pairs
        .iter()
        .map(|(key, value)| format!("{}={}", encode(key), encode(value)))
        .collect::<Vec<_>>()
        .join("&")
}

/// A blocking HTTP client that reports every status instead of failing on 4xx/5xx.
pub struct Client {
    pub base: String,
    agent: ureq::Agent,
    /// The same, answering redirects instead of following them.
    unredirected: ureq::Agent,
}

impl Client {
    pub fn new(base: &str) -> Client {
        let config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .build();
        let unredirected = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(0)
            .build();
        Client {
            base: base.to_owned(),
            agent: config.into(),
            unredirected: unredirected.into(),
        }
    }

    pub fn request(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<&[u8]>,
    ) -> Resp {
        self.send_with(&self.agent, method, path, headers, body)
    }

    /// As [`Client::request`], answering a redirect instead of following it.
    pub fn request_unredirected(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<&[u8]>,
    ) -> Resp {
        self.send_with(&self.unredirected, method, path, headers, body)
    }

    fn send_with(
        &self,
        agent: &ureq::Agent,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<&[u8]>,
    ) -> Resp {
        let url = format!("{}{path}", self.base);
        let mut builder = ureq::http::Request::builder().method(method).uri(&url);
        for (name, value) in headers {
            builder = builder.header(*name, *value);
        }
        let result = match body {
            Some(bytes) => {
                let typed = headers
                    .iter()
                    .any(|(name, _)| name.eq_ignore_ascii_case("content-type"));
                if !typed {
                    builder = builder.header("content-type", "application/json");
                }
                let request = builder.body(bytes.to_vec()).unwrap();
                agent.run(request)
            }
            None => agent.run(builder.body(()).unwrap()),
        };
        let mut response = result.unwrap_or_else(|e| panic!("{method} {path}: {e}"));
        let status = response.status().as_u16();
        let headers = response
            .headers()
            .iter()
            .map(|(k, v)| {
                (
                    k.as_str().to_owned(),
                    v.to_str().unwrap_or_default().to_owned(),
                )
            })
            .collect();
        let body = response
            .body_mut()
            .with_config()
            .limit(64 << 20)
            .read_to_vec()
            .unwrap_or_default();
        Resp {
            status,
            headers,
            body,
        }
    }

    /// POSTs an HTML form (`application/x-www-form-urlencoded`) with extra headers; a redirect
    /// is answered, not followed.
    pub fn post_form(&self, path: &str, headers: &[(&str, &str)], pairs: &[(&str, &str)]) -> Resp {
        let body = form_encode(pairs);
        let mut all = vec![("content-type", "application/x-www-form-urlencoded")];
        all.extend_from_slice(headers);
        self.request_unredirected("POST", path, &all, Some(body.as_bytes()))
    }

    pub fn get(&self, path: &str) -> Resp {
        self.request("GET", path, &[], None)
    }

    pub fn get_auth(&self, path: &str, key: &str) -> Resp {
        self.request(
            "GET",
            path,
            &[("authorization", &format!("Bearer {key}"))],
            None,
        )
    }

    pub fn post(&self, path: &str, body: &Value) -> Resp {
        self.request("POST", path, &[], Some(body.to_string().as_bytes()))
    }

    pub fn send_auth(&self, method: &str, path: &str, key: &str, body: &Value) -> Resp {
        let auth = format!("Bearer {key}");
        self.request(
            method,
            path,
            &[("authorization", &auth)],
            Some(body.to_string().as_bytes()),
        )
    }

    /// The path of a URL this server handed out.
    #[track_caller]
    pub fn path_of<'a>(&self, url: &'a str) -> &'a str {
        url.strip_prefix(&self.base)
            .unwrap_or_else(|| panic!("{url} is not under {}", self.base))
    }
}
