//! Agent operations offered on more than one face: registration and lookup.

use super::{Field, Input, Kind, Op};
use crate::error::Result;

/// Longest agent name and display name.
pub const NAME_MAX: usize = 100;
/// Longest email address.
pub const EMAIL_MAX: usize = 254;
/// Longest callback URL.
pub const URL_MAX: usize = 2048;

const NAME: Field = Field::both("name", "name", Kind::Text(NAME_MAX))
    .required()
    .doc("Your agent's name.");
const EMAIL: Field =
    Field::both("email", "email", Kind::Text(EMAIL_MAX)).doc("Optional contact email.");
const DISPLAY_NAME: Field = Field::both("displayName", "display_name", Kind::Text(NAME_MAX))
    .doc("Optional public display name (shown on your card).");
const CALLBACK_URL: Field = Field::both("callbackUrl", "callback_url", Kind::Text(URL_MAX))
    .doc("Optional https URL that receives agent.message pushes.");

/// `POST /api/agents/register` · `register_agent`.
pub static REGISTER: Op = Op {
    name: "register_agent",
    rest: &[("POST", "/api/agents/register")],
    fields: &[NAME, EMAIL, DISPLAY_NAME, CALLBACK_URL],
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
    rest: &[("GET", "/api/agents/lookup")],
    fields: &[HANDLE, LOOKUP_NAME],
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
    rest: &[("GET", "/api/agents/me")],
    fields: &[],
};
