//! A2A's errors (specification §5.4, §9.5, §11.6): the A2A-defined ones, and bourse's own
//! errors (one `Error` enum) given an A2A form in this one place. Every error carries a
//! `google.rpc.ErrorInfo` detail whose `reason` is the A2A reason or bourse's own code.
//!
//! JSON-RPC errors travel with HTTP 200 (clients read the status before the body), except a
//! missing or refused credential, which is HTTP 401 with `WWW-Authenticate` on both bindings.
//! bourse's errors that A2A has no code for take codes of the implementation range:
//! -32010 forbidden, -32011 not found, -32012 conflict, -32013 rate limited, -32014 unavailable.

use serde_json::{Map, Value, json};

use crate::error::Error;

/// An A2A error.
#[derive(Debug)]
pub struct Fault {
    /// The JSON-RPC code.
    pub code: i32,
    /// The HTTP status on the HTTP+JSON binding.
    pub http: u16,
    /// `ErrorInfo.reason`: an A2A reason, or bourse's code.
    pub reason: &'static str,
    /// Whether the reason is bourse's own (`ErrorInfo.domain` [`BOURSE`]) rather than A2A's.
    pub ours: bool,
    pub message: String,
    /// `ErrorInfo.metadata`.
    pub metadata: Vec<(&'static str, String)>,
    /// Seconds to wait before retrying (`Retry-After`).
    pub retry_after: Option<u64>,
}

const A2A: &str = "a2a-protocol.org";
/// The domain of bourse's own reasons.
pub const BOURSE: &str = "bourse";

impl Fault {
    fn a2a(code: i32, http: u16, reason: &'static str, message: String) -> Fault {
        Fault {
            code,
            http,
            reason,
            ours: false,
            message,
            metadata: Vec::new(),
            retry_after: None,
        }
    }

    /// With `key: value` in the detail's metadata.
    #[must_use]
    pub fn with(mut self, key: &'static str, value: &str) -> Fault {
        self.metadata.push((key, value.to_owned()));
        self
    }

    pub fn parse(message: impl Into<String>) -> Fault {
        Fault::a2a(-32700, 400, "PARSE_ERROR", message.into())
    }

    pub fn invalid_request(message: impl Into<String>) -> Fault {
        Fault::a2a(-32600, 400, "INVALID_REQUEST", message.into())
    }

    pub fn method_not_found(method: &str) -> Fault {
        Fault::a2a(
            -32601,
            404,
            "METHOD_NOT_FOUND",
            format!("no A2A method {method:?} here"),
        )
    }

    pub fn invalid_params(message: impl Into<String>) -> Fault {
        Fault::a2a(-32602, 400, "INVALID_PARAMS", message.into())
    }

    pub fn task_not_found(id: &str) -> Fault {
        Fault::a2a(
            -32001,
            404,
            "TASK_NOT_FOUND",
            format!("no task {id:?} of yours"),
        )
        .with("taskId", id)
    }

    pub fn not_cancelable(id: &str, state: &str) -> Fault {
        Fault::a2a(
            -32002,
            400,
            "TASK_NOT_CANCELABLE",
            format!("task {id:?} is {state}: only a purchase waiting for payment can be canceled"),
        )
        .with("taskId", id)
    }

    pub fn unsupported(message: impl Into<String>) -> Fault {
        Fault::a2a(-32004, 400, "UNSUPPORTED_OPERATION", message.into())
    }

    pub fn content_type(message: impl Into<String>) -> Fault {
        Fault::a2a(-32005, 400, "CONTENT_TYPE_NOT_SUPPORTED", message.into())
    }

    pub fn version(asked: &str) -> Fault {
        let said = if asked.is_empty() {
            "no A2A-Version (read as 0.3)".to_owned()
        } else {
            format!("A2A-Version {asked}")
        };
        Fault::a2a(
            -32009,
            400,
            "VERSION_NOT_SUPPORTED",
            format!("{said} is not supported: this server speaks A2A 1.0; send `A2A-Version: 1.0`"),
        )
        .with("supportedVersions", "1.0")
    }

    /// Whether the credential is missing or refused (answered as HTTP 401 on both bindings).
    pub fn is_unauthenticated(&self) -> bool {
        self.http == 401
    }

    /// The gRPC status name (the `status` of a `google.rpc.Status`), per A2A's table for its
    /// errors and by HTTP status for bourse's.
    pub fn grpc(&self) -> &'static str {
        match (self.code, self.http) {
            (-32009..=-32007 | -32004..=-32002, _) => "FAILED_PRECONDITION",
            (_, 400 | 413 | 415 | 422) => "INVALID_ARGUMENT",
            (_, 401) => "UNAUTHENTICATED",
            (_, 403) => "PERMISSION_DENIED",
            (_, 404) => "NOT_FOUND",
            (_, 409) => "ABORTED",
            (_, 429) => "RESOURCE_EXHAUSTED",
            (_, 502..=504) => "UNAVAILABLE",
            _ => "INTERNAL",
        }
    }

    /// The `google.rpc.ErrorInfo` detail.
    pub fn detail(&self) -> Value {
        json!({
            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
            "reason": self.reason,
            "domain": if self.ours { BOURSE } else { A2A },
            "metadata": self
                .metadata
                .iter()
                .map(|(key, value)| ((*key).to_owned(), Value::from(value.as_str())))
                .collect::<Map<String, Value>>(),
        })
    }

    /// The JSON-RPC error object.
    pub fn rpc_error(&self) -> Value {
        json!({"code": self.code, "message": self.message, "data": [self.detail()]})
    }

    /// The HTTP+JSON binding's body (a `google.rpc.Status` under `error`).
    pub fn status_body(&self) -> Value {
        json!({"error": {
            "code": self.http,
            "status": self.grpc(),
            "message": self.message,
            "details": [self.detail()],
        }})
    }
}

impl From<Error> for Fault {
    fn from(error: Error) -> Fault {
        let http = error.status();
        let code = match http {
            400 | 413 | 415 | 422 => -32602,
            401 => -32600,
            403 => -32010,
            404 => -32011,
            409 => -32012,
            429 => -32013,
            502..=504 => -32014,
            _ => -32603,
        };
        let metadata = vec![("httpStatus", http.to_string())];
        Fault {
            code,
            http,
            reason: error.code(),
            ours: true,
            message: error.public_message(),
            metadata,
            retry_after: error.retry_after_secs(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bourse_errors_keep_their_code_as_the_reason() {
        let fault = Fault::from(Error::NotFound("no agent".into()));
        assert_eq!(
            (fault.code, fault.http, fault.reason),
            (-32011, 404, "NOT_FOUND")
        );
        assert_eq!(fault.rpc_error()["data"][0]["domain"], BOURSE);
        let status = Fault::version("0.3").status_body();
        assert_eq!(status["error"]["status"], "FAILED_PRECONDITION");
        assert_eq!(
            status["error"]["details"][0]["reason"],
            "VERSION_NOT_SUPPORTED"
        );
        assert!(Fault::from(Error::Unauthenticated("x".into())).is_unauthenticated());
    }
}
