//! Contact operations: an idea (`submit_idea`) and a contact message (`contact_marketplace`,
//! `POST /api/inquiries`), both stored as an inquiry thread.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};

use super::{Access, Field, ID_MAX, Input, Kind, Op, Tool};
use crate::args::{Args, int_in_range};
use crate::error::{Error, Result};

pub const SUBJECT_MAX: usize = 200;
pub const MESSAGE_MAX: usize = 10_000;
pub const SHORT_MAX: usize = 100;
pub const EMAIL_MAX: usize = 254;
const IMPACT_MAX: usize = 2_000;
/// Attachments per message.
pub const ATTACHMENTS_MAX: usize = 5;
/// Decoded bytes per attachment.
pub const ATTACHMENT_BYTES_MAX: usize = 256 * 1024;
/// Decoded bytes of all attachments of one message (keeps a message under the 1 MiB body cap).
pub const ATTACHMENTS_TOTAL_MAX: usize = 512 * 1024;
/// The statuses an inquiry may have.
pub const STATUSES: [&str; 4] = ["open", "answered", "resolved", "closed"];
const ATTACHMENT_NAME_MAX: usize = 200;
const CONTENT_TYPE_MAX: usize = 100;
const WHAT_MAX: usize = MESSAGE_MAX;
const BUDGET_MAX_CENTS: i64 = 1_000_000_000_000;

const CATEGORY: Field =
    Field::both("category", "category", Kind::Text(SHORT_MAX)).doc("Optional category.");
const SUBMITTED_BY: Field =
    Field::both("submittedBy", "submittedBy", Kind::Text(SHORT_MAX)).doc("Optional: who sends it.");

/// `submit_idea` (MCP only; REST callers use `POST /api/inquiries`).
pub static SUBMIT_IDEA: Op = Op {
    name: "submit_idea",
    fields: &[
        Field::both("title", "title", Kind::Text(SUBJECT_MAX))
            .required()
            .doc("A short title."),
        Field::both("description", "description", Kind::Paragraph(MESSAGE_MAX))
            .required()
            .doc("The idea (line breaks allowed)."),
        CATEGORY,
        SUBMITTED_BY,
        Field::both("impact", "impact", Kind::Paragraph(IMPACT_MAX))
            .doc("Optional: who benefits and how."),
    ],
    scope: None,
    tool: Some(Tool::write(
        Access::PublicInAgentsName,
        "Submit an idea",
        "Send the operator an idea (a feature, a dataset wanted); returns the inquiry id, which is the capability to read its thread later. Public.",
    )),
};

/// `POST /api/inquiries` · `contact_marketplace`.
pub static CONTACT: Op = Op {
    name: "contact_marketplace",
    fields: &[
        Field::both("subject", "subject", Kind::Text(SUBJECT_MAX))
            .required()
            .doc("The subject."),
        Field::both("message", "message", Kind::Paragraph(MESSAGE_MAX))
            .required()
            .doc("The message (line breaks allowed)."),
        CATEGORY,
        Field::both("name", "name", Kind::Text(SHORT_MAX)).doc("Optional name to reply to."),
        Field::both("email", "email", Kind::Text(EMAIL_MAX))
            .doc("Optional email to reply to.")
            .documented("/components/schemas/CreateInquiryRequest/properties/email"),
        SUBMITTED_BY,
    ],
    scope: None,
    tool: Some(Tool::write(
        Access::PublicInAgentsName,
        "Contact the marketplace",
        "Send the operator a message; returns the inquiry id, which is the capability to read its thread later. Public.",
    )),
};

/// What kind of inquiry is being sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InquiryKind {
    Idea,
    Contact,
}

impl InquiryKind {
    pub fn as_str(self) -> &'static str {
        match self {
            InquiryKind::Idea => "idea",
            InquiryKind::Contact => "contact",
        }
    }
}

/// A new inquiry: an idea's title and description are its subject and message.
#[derive(Debug)]
pub struct NewInquiry {
    pub kind: InquiryKind,
    pub subject: String,
    pub message: String,
    pub category: Option<String>,
    pub name: Option<String>,
    pub email: Option<String>,
    pub submitted_by: Option<String>,
    pub impact: Option<String>,
}

impl NewInquiry {
    /// Reads an idea ([`SUBMIT_IDEA`]) or a contact message ([`CONTACT`]).
    ///
    /// # Errors
    /// `INVALID_ARGUMENT` naming the field.
    pub fn read(input: &Input, kind: InquiryKind) -> Result<NewInquiry> {
        let op = match kind {
            InquiryKind::Idea => &SUBMIT_IDEA,
            InquiryKind::Contact => &CONTACT,
        };
        let field = |i: usize| &op.fields[i];
        Ok(match kind {
            InquiryKind::Idea => NewInquiry {
                kind,
                subject: input.req_text(field(0))?,
                message: input.req_paragraph(field(1))?,
                category: input.text(&CATEGORY)?,
                name: None,
                email: None,
                submitted_by: input.text(&SUBMITTED_BY)?,
                impact: input.paragraph(field(4))?,
            },
            InquiryKind::Contact => NewInquiry {
                kind,
                subject: input.req_text(field(0))?,
                message: input.req_paragraph(field(1))?,
                category: input.text(&CATEGORY)?,
                name: input.text(field(3))?,
                email: input.text(field(4))?,
                submitted_by: input.text(&SUBMITTED_BY)?,
                impact: None,
            },
        })
    }
}

const MESSAGE: Field = Field::rest("message", Kind::Paragraph(MESSAGE_MAX)).required();

/// `POST /api/inquiries/{id}/messages` (the inquirer) and `POST /api/operator/inquiries/{id}/reply`
/// (the team).
pub static POST_MESSAGE: Op = Op {
    name: "post_inquiry_message",
    fields: &[
        MESSAGE,
        Field::rest("authorName", Kind::Text(SHORT_MAX)),
        Field::rest(
            "attachments",
            Kind::Json(r#"{"type":"array","maxItems":5}"#),
        ),
    ],
    scope: None,
    tool: None,
};

/// A message for an inquiry's thread; attachments checked and decoded-size counted.
#[derive(Debug)]
pub struct PostMessage {
    pub message: String,
    pub author_name: Option<String>,
    /// `{name, contentType, size, data}` each, `data` the base64 as sent.
    pub attachments: Vec<Value>,
}

impl PostMessage {
    /// # Errors
    /// `INVALID_ARGUMENT` naming the field (`attachments[i].data` and the like).
    pub fn read(input: &Input) -> Result<PostMessage> {
        Ok(PostMessage {
            message: input.req_paragraph(&POST_MESSAGE.fields[0])?,
            author_name: input.text(&POST_MESSAGE.fields[1])?,
            attachments: read_attachments(input.json(&POST_MESSAGE.fields[2])?.as_ref())?,
        })
    }
}

/// `PATCH /api/operator/inquiries/{id}` `{status}`.
pub static SET_STATUS: Op = Op {
    name: "set_inquiry_status",
    fields: &[Field::rest("status", Kind::Enum(&STATUSES)).required()],
    scope: None,
    tool: None,
};

/// The status to set.
pub fn status(input: &Input) -> Result<&'static str> {
    input
        .choice(&SET_STATUS.fields[0])?
        .ok_or_else(|| Error::invalid("`status` is required"))
}

/// Page bounds of the operator's inquiry list.
pub const INQUIRIES_DEFAULT: i64 = 50;
pub const INQUIRIES_MAX: i64 = 200;

const LIST_STATUS: Field = Field::rest("status", Kind::Enum(&STATUSES));
const LIST_LIMIT: Field = Field::rest("limit", Kind::Int(1, INQUIRIES_MAX));
const LIST_OFFSET: Field = Field::rest("offset", Kind::Int(0, i64::MAX >> 11));

/// `GET /api/operator/inquiries` (query; operator).
pub static LIST_INQUIRIES: Op = Op {
    name: "list_inquiries",
    fields: &[LIST_STATUS, LIST_LIMIT, LIST_OFFSET],
    scope: None,
    tool: None,
};

/// A page of inquiries, newest first: those with one status, or all.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InquiryList {
    pub status: Option<&'static str>,
    pub page: super::Page,
}

impl InquiryList {
    /// # Errors
    /// `INVALID_ARGUMENT` naming the parameter.
    pub fn read(input: &Input) -> Result<InquiryList> {
        Ok(InquiryList {
            status: input.choice(&LIST_STATUS)?,
            page: super::Page::read(input, &LIST_LIMIT, Some(&LIST_OFFSET), INQUIRIES_DEFAULT)?,
        })
    }
}

/// `POST /api/rails` `{rootInquiryId}`.
pub static CREATE_RAIL: Op = Op {
    name: "create_rail",
    fields: &[Field::rest("rootInquiryId", Kind::Text(ID_MAX)).required()],
    scope: None,
    tool: None,
};

/// The root inquiry of a new rail.
pub fn root_inquiry(input: &Input) -> Result<String> {
    input.req_text(&CREATE_RAIL.fields[0])
}

/// `POST /api/services/request`.
pub static SERVICE_REQUEST: Op = Op {
    name: "service_request",
    fields: &[
        Field::rest("what", Kind::Paragraph(WHAT_MAX)).required(),
        Field::rest("title", Kind::Text(SUBJECT_MAX)),
        Field::rest("budget", Kind::Json(r#"{"type":"object"}"#)),
        Field::rest("deadline", Kind::Text(10)),
        Field::rest("contact", Kind::Json(r#"{"type":"object"}"#)),
        Field::rest("submittedBy", Kind::Text(SHORT_MAX)),
    ],
    scope: None,
    tool: None,
};

/// A service request: what is wanted, for how much, by when, and whom to answer.
#[derive(Debug)]
pub struct ServiceRequest {
    pub what: String,
    pub title: Option<String>,
    /// `{amountCents, currency}` normalized, or null.
    pub budget: Value,
    pub deadline: Option<String>,
    pub contact_name: Option<String>,
    pub contact_email: Option<String>,
    pub contact_handle: Option<String>,
    pub submitted_by: Option<String>,
}

impl ServiceRequest {
    /// # Errors
    /// `INVALID_ARGUMENT` naming the field (`budget.amountCents`, `contact.email`, …).
    pub fn read(input: &Input) -> Result<ServiceRequest> {
        let field = |i: usize| &SERVICE_REQUEST.fields[i];
        let what = input.req_paragraph(field(0))?;
        let title = input.text(field(1))?;
        let budget = match input.json(field(2))? {
            None => Value::Null,
            Some(value @ Value::Object(_)) => {
                let budget = Args::from_value(value)?;
                budget.deny_unknown(&["amountCents", "currency"])?;
                let amount = match budget.get("amountCents") {
                    Some(value) => int_in_range("budget.amountCents", value, 1, BUDGET_MAX_CENTS)?,
                    None => return Err(Error::invalid("`budget.amountCents` is required")),
                };
                let currency = budget
                    .opt_str("currency", 3)?
                    .unwrap_or_else(|| "USD".into());
                if currency.len() != 3 || !currency.chars().all(|c| c.is_ascii_uppercase()) {
                    return Err(Error::invalid(
                        "`budget.currency` must be a three-letter code such as USD",
                    ));
                }
                json!({ "amountCents": amount, "currency": currency })
            }
            Some(_) => {
                return Err(Error::invalid(
                    "`budget` must be an object {amountCents, currency}",
                ));
            }
        };
        let deadline = input.text(field(3))?;
        if let Some(deadline) = &deadline
            && deadline.parse::<jiff::civil::Date>().is_err()
        {
            return Err(Error::invalid("`deadline` must be a date YYYY-MM-DD"));
        }
        let (contact_name, contact_email, contact_handle) = match input.json(field(4))? {
            None => (None, None, None),
            Some(value @ Value::Object(_)) => {
                let contact = Args::from_value(value)?;
                contact.deny_unknown(&["name", "email", "handle"])?;
                (
                    contact.opt_str("name", SHORT_MAX)?,
                    contact.opt_str("email", EMAIL_MAX)?,
                    contact.opt_str("handle", SHORT_MAX)?,
                )
            }
            Some(_) => {
                return Err(Error::invalid(
                    "`contact` must be an object {name, email, handle}",
                ));
            }
        };
        Ok(ServiceRequest {
            what,
            title,
            budget,
            deadline,
            contact_name,
            contact_email,
            contact_handle,
            submitted_by: input.text(field(5))?,
        })
    }
}

fn read_attachments(value: Option<&Value>) -> Result<Vec<Value>> {
    let items = match value {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(items)) => items,
        Some(_) => {
            return Err(Error::invalid(
                "`attachments` must be an array of {name, contentType, data}",
            ));
        }
    };
    if items.len() > ATTACHMENTS_MAX {
        return Err(Error::invalid(format!(
            "at most {ATTACHMENTS_MAX} attachments per message"
        )));
    }
    let mut total = 0;
    let mut out = Vec::with_capacity(items.len());
    for (index, item) in items.iter().enumerate() {
        let field = |name: &str| format!("attachments[{index}].{name}");
        let args = Args::from_value(item.clone()).map_err(|_| {
            Error::invalid(format!(
                "`attachments[{index}]` must be an object {{name, contentType, data}}"
            ))
        })?;
        args.deny_unknown(&["name", "contentType", "data"])?;
        let name = match args.get("name") {
            Some(_) => args.req_str("name", ATTACHMENT_NAME_MAX),
            None => Err(Error::invalid(format!("`{}` is required", field("name")))),
        }?;
        // Taken as sent, untrimmed, so its length is the one the schema's maxLength counts.
        let content_type = match args.get("contentType") {
            Some(Value::String(text)) if text.chars().count() <= CONTENT_TYPE_MAX => text.clone(),
            _ => {
                return Err(Error::invalid(format!(
                    "`{}` is required (type/subtype, at most {CONTENT_TYPE_MAX} characters)",
                    field("contentType")
                )));
            }
        };
        if !plausible_media_type(&content_type) {
            return Err(Error::invalid(format!(
                "`{}` must be a media type such as text/plain",
                field("contentType")
            )));
        }
        let Some(Value::String(data)) = args.get("data") else {
            return Err(Error::invalid(format!(
                "`{}` must be a base64 string",
                field("data")
            )));
        };
        // Cheap bound before decoding: 4 base64 characters carry 3 bytes.
        if data.len() > (ATTACHMENT_BYTES_MAX / 3 + 1) * 4 {
            return Err(Error::invalid(format!(
                "`{}` exceeds {ATTACHMENT_BYTES_MAX} bytes decoded",
                field("data")
            )));
        }
        let bytes = STANDARD.decode(data).map_err(|error| {
            Error::invalid(format!(
                "`{}` is not valid padded base64: {error}",
                field("data")
            ))
        })?;
        if bytes.len() > ATTACHMENT_BYTES_MAX {
            return Err(Error::invalid(format!(
                "`{}` exceeds {ATTACHMENT_BYTES_MAX} bytes decoded",
                field("data")
            )));
        }
        total += bytes.len();
        if total > ATTACHMENTS_TOTAL_MAX {
            return Err(Error::invalid(format!(
                "attachments exceed {ATTACHMENTS_TOTAL_MAX} bytes decoded per message"
            )));
        }
        out.push(json!({
            "name": name,
            "contentType": content_type,
            "size": bytes.len(),
            "data": data,
        }));
    }
    Ok(out)
}

/// `type/subtype`, then optionally spaces and `;` parameters; no control characters (the
/// schema's pattern, exactly).
fn plausible_media_type(text: &str) -> bool {
    let token = |part: &str| {
        !part.is_empty()
            && part
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "!#$&^_.+-".contains(c))
    };
    let essence = match text.split_once(';') {
        Some((essence, _)) => essence.trim_end_matches(' '),
        None => text,
    };
    !text.chars().any(char::is_control)
        && matches!(essence.split_once('/'), Some((kind, sub)) if token(kind) && token(sub))
}
