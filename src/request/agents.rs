//! Agent operations offered on more than one face: registration and lookup.

use serde_json::{Map, Value};

use super::{Access, Field, Input, Kind, Op, Scope, Tool};
use crate::args::Patch;
use crate::crypto::b64url_decode;
use crate::error::{Error, Result};

/// Longest agent name and display name.
pub const NAME_MAX: usize = 100;
/// Longest email address.
pub const EMAIL_MAX: usize = 254;
/// Longest callback URL.
pub const URL_MAX: usize = 2048;

const NAME: Field = Field::both("name", "name", Kind::Text(NAME_MAX))
    .required()
    .doc("Your agent's name.");
const EMAIL: Field = Field::both("email", "email", Kind::Text(EMAIL_MAX))
    .doc("Optional contact email.")
    .documented("/components/schemas/RegisterRequest/properties/email");
const DISPLAY_NAME: Field = Field::both("displayName", "display_name", Kind::Text(NAME_MAX))
    .doc("Optional public display name (shown on your card).");
const CALLBACK_URL: Field = Field::both("callbackUrl", "callback_url", Kind::Token(URL_MAX))
    .doc("Optional https URL that receives agent.message and purchase.approval_decided pushes.")
    .documented("/components/schemas/RegisterRequest/properties/callbackUrl");

/// `POST /api/agents/register` · `register_agent`.
pub static REGISTER: Op = Op {
    name: "register_agent",
    fields: &[NAME, EMAIL, DISPLAY_NAME, CALLBACK_URL],
    scope: None,
    tool: Some(Tool::write(
        Access::Public,
        "Register an agent",
        "Create an agent and get its API key (shown once); send that key as `Authorization: Bearer <key>` afterwards. Rate limited per IP. Public.",
    )),
};

/// A new agent; the service checks the email's shape and the callback URL's destination.
#[derive(Debug)]
pub struct Register {
    pub name: String,
    pub email: Option<String>,
    pub display_name: Option<String>,
    pub callback_url: Option<String>,
}

impl Register {
    /// # Errors
    /// `INVALID_ARGUMENT` naming the field.
    pub fn read(input: &Input) -> Result<Register> {
        Ok(Register {
            name: input.req_text(&NAME)?,
            email: input.text(&EMAIL)?,
            display_name: input.text(&DISPLAY_NAME)?,
            callback_url: input.text(&CALLBACK_URL)?,
        })
    }
}

const HANDLE: Field = Field::both("handle", "handle", Kind::Text(64))
    .required_on(super::Face::Mcp)
    .doc("The agent handle to resolve, or `chair`.");
const LOOKUP_NAME: Field = Field::rest("name", Kind::Text(NAME_MAX));

/// `GET /api/agents/lookup` (query) · `agent_lookup`.
pub static LOOKUP: Op = Op {
    name: "agent_lookup",
    fields: &[HANDLE, LOOKUP_NAME],
    scope: Some(Scope::Read),
    tool: Some(Tool::read(
        Access::Bearer,
        "Look up an agent",
        "Find an agent's public card by handle (e.g. A-7K2M9QXP; `chair` resolves the \
         operator's chair). Returns {agents: [...]}, empty when no agent has the handle.",
    )),
};

/// Find agents by handle or (REST) by exact display name; exactly one is given.
#[derive(Debug)]
pub struct Lookup {
    pub handle: Option<String>,
    pub name: Option<String>,
}

impl Lookup {
    /// # Errors
    /// `INVALID_ARGUMENT` naming the field.
    pub fn read(input: &Input) -> Result<Lookup> {
        Ok(Lookup {
            handle: input.text(&HANDLE)?,
            name: input.text(&LOOKUP_NAME)?,
        })
    }
}

/// `GET /api/agents/me` · `agent_whoami`: no arguments.
pub static WHOAMI: Op = Op {
    name: "agent_whoami",
    fields: &[],
    scope: Some(Scope::Read),
    tool: Some(Tool::read(
        Access::Bearer,
        "Who am I",
        "Your own agent record (the same body as GET /api/agents/me): handle, names, \
         email, callback URL and the connect block. Never key material.",
    )),
};

/// `PATCH /api/agents/me` (REST only): each field absent (kept), null (cleared) or set.
pub static UPDATE_ME: Op = Op {
    name: "update_me",
    fields: &[
        Field::rest("displayName", Kind::Text(NAME_MAX)),
        Field::rest("email", Kind::Text(EMAIL_MAX))
            .documented("/components/schemas/UpdateMeRequest/properties/email"),
        Field::rest("callbackUrl", Kind::Token(URL_MAX))
            .documented("/components/schemas/UpdateMeRequest/properties/callbackUrl"),
    ],
    scope: None,
    tool: None,
};

/// A profile edit; the service checks the email's shape and the callback URL's destination.
#[derive(Debug)]
pub struct UpdateMe {
    pub display_name: Patch<String>,
    pub email: Patch<String>,
    pub callback_url: Patch<String>,
}

impl UpdateMe {
    /// # Errors
    /// `INVALID_ARGUMENT` naming the field.
    pub fn read(input: &Input) -> Result<UpdateMe> {
        let field = |i: usize| &UPDATE_ME.fields[i];
        Ok(UpdateMe {
            display_name: input.patch_text(field(0))?,
            email: input.patch_text(field(1))?,
            callback_url: input.patch_text(field(2))?,
        })
    }
}

/// `PUT /api/operator/chair` `{handle}` (operator).
pub static BIND_CHAIR: Op = Op {
    name: "bind_chair",
    fields: &[Field::rest("handle", Kind::Text(16)).required()],
    scope: None,
    tool: None,
};

/// The handle of the agent to bind as the chair.
///
/// # Errors
/// `INVALID_ARGUMENT`.
pub fn chair_handle(input: &Input) -> Result<String> {
    input.req_text(&BIND_CHAIR.fields[0])
}

/// `POST /api/ingress`: a stranger's signed admission request.
pub static INGRESS: Op = Op {
    name: "ingress",
    fields: &[
        Field::rest("publicKey", Kind::Verbatim).required(),
        Field::rest("request", Kind::Object).required(),
        Field::rest("signature", Kind::Verbatim).required(),
    ],
    scope: None,
    tool: None,
};

/// An admission request, checked for shape: the key and signature decode to 32 and 64 bytes;
/// `request` is the signed object as sent (the service verifies the signature over it).
#[derive(Debug)]
pub struct Ingress {
    pub public_key: String,
    pub request: Map<String, Value>,
    pub signature: String,
}

impl Ingress {
    /// # Errors
    /// `INVALID_ARGUMENT` naming the field.
    pub fn read(input: &Input) -> Result<Ingress> {
        let field = |i: usize| &INGRESS.fields[i];
        let public_key = base64_field(input, field(0), 32)?;
        let signature = base64_field(input, field(2), 64)?;
        let request = match input.json(field(1))? {
            Some(Value::Object(request)) => request,
            _ => return Err(Error::invalid("`request` must be a JSON object")),
        };
        Ok(Ingress {
            public_key,
            request,
            signature,
        })
    }
}

/// An unpadded base64url string of exactly `len` bytes, kept as sent.
fn base64_field(input: &Input, field: &Field, len: usize) -> Result<String> {
    let name = input.spelling(field);
    let text = input
        .verbatim(field)?
        .ok_or_else(|| Error::invalid(format!("`{name}` is required")))?;
    match b64url_decode(&text) {
        Ok(bytes) if bytes.len() == len => Ok(text),
        _ => Err(Error::invalid(format!(
            "`{name}` must be {len} bytes in unpadded base64url"
        ))),
    }
}

/// `POST /api/operator/oauth/clients/revoke` `{clientId}` (operator): a registered client's id
/// or a metadata document URL.
pub static REVOKE_OAUTH_CLIENT: Op = Op {
    name: "revoke_oauth_client",
    fields: &[Field::rest("clientId", Kind::Text(2000)).required()],
    scope: None,
    tool: None,
};

/// The id of the OAuth client to revoke.
///
/// # Errors
/// `INVALID_ARGUMENT`.
pub fn oauth_client_id(input: &Input) -> Result<String> {
    input.req_text(&REVOKE_OAUTH_CLIENT.fields[0])
}

/// Page bounds of the agent directory and of the OAuth client and grant lists.
pub const LIST_DEFAULT: i64 = 50;
pub const LIST_MAX: i64 = 200;

const LIST_LIMIT: Field = Field::rest("limit", Kind::Int(1, LIST_MAX));
const LIST_OFFSET: Field = Field::rest("offset", Kind::Int(0, i32::MAX as i64));

/// `GET /api/agents` (query; public): a page of the directory.
pub static LIST_AGENTS: Op = Op {
    name: "list_agents",
    fields: &[LIST_LIMIT, LIST_OFFSET],
    scope: None,
    tool: None,
};

/// `GET /api/operator/oauth/clients` (query; operator).
pub static LIST_OAUTH_CLIENTS: Op = Op {
    name: "list_oauth_clients",
    fields: &[LIST_LIMIT, LIST_OFFSET],
    scope: None,
    tool: None,
};

const GRANTS_ACTIVE: Field = Field::rest("active", Kind::Enum(&["true", "false"]));

/// `GET /api/agents/me/oauth/grants` (the caller's) and `GET /api/operator/oauth/grants`
/// (every agent's), query.
pub static LIST_OAUTH_GRANTS: Op = Op {
    name: "list_oauth_grants",
    fields: &[LIST_LIMIT, LIST_OFFSET, GRANTS_ACTIVE],
    scope: None,
    tool: None,
};

/// A page of the agent directory or of the OAuth clients.
///
/// # Errors
/// `INVALID_ARGUMENT` naming the parameter.
pub fn list_page(input: &Input) -> Result<super::Page> {
    super::Page::read(input, &LIST_LIMIT, Some(&LIST_OFFSET), LIST_DEFAULT)
}

/// A page of OAuth grants: only the active ones, or all.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GrantList {
    pub active: bool,
    pub page: super::Page,
}

impl GrantList {
    /// # Errors
    /// `INVALID_ARGUMENT` naming the parameter.
    pub fn read(input: &Input) -> Result<GrantList> {
        Ok(GrantList {
            active: input.choice(&GRANTS_ACTIVE)? == Some("true"),
            page: list_page(input)?,
        })
    }
}
