//! Contact operations: an idea (`submit_idea`) and a contact message (`contact_marketplace`,
//! `POST /api/inquiries`), both stored as an inquiry thread.

use super::{Field, Input, Kind, Op};
use crate::error::Result;

pub const SUBJECT_MAX: usize = 200;
pub const MESSAGE_MAX: usize = 10_000;
pub const SHORT_MAX: usize = 100;
pub const EMAIL_MAX: usize = 254;
const IMPACT_MAX: usize = 2_000;

const CATEGORY: Field =
    Field::both("category", "category", Kind::Text(SHORT_MAX)).doc("Optional category.");
const SUBMITTED_BY: Field =
    Field::both("submittedBy", "submittedBy", Kind::Text(SHORT_MAX)).doc("Optional: who sends it.");

/// `submit_idea` (MCP only; REST callers use `POST /api/inquiries`).
pub static SUBMIT_IDEA: Op = Op {
    name: "submit_idea",
    rest: &[],
    fields: &[
        Field::both("title", "title", Kind::Text(SUBJECT_MAX))
            .required()
            .doc("A short title."),
        Field::both("description", "description", Kind::Paragraph(MESSAGE_MAX))
            .required()
            .doc("The idea (line breaks allowed)."),
        CATEGORY,
        SUBMITTED_BY,
        Field::both("impact", "impact", Kind::Text(IMPACT_MAX))
            .doc("Optional: who benefits and how."),
    ],
};

/// `POST /api/inquiries` · `contact_marketplace`.
pub static CONTACT: Op = Op {
    name: "contact_marketplace",
    rest: &[("POST", "/api/inquiries")],
    fields: &[
        Field::both("subject", "subject", Kind::Text(SUBJECT_MAX))
            .required()
            .doc("The subject."),
        Field::both("message", "message", Kind::Paragraph(MESSAGE_MAX))
            .required()
            .doc("The message (line breaks allowed)."),
        CATEGORY,
        Field::both("name", "name", Kind::Text(SHORT_MAX)).doc("Optional name to reply to."),
        Field::both("email", "email", Kind::Text(EMAIL_MAX)).doc("Optional email to reply to."),
        SUBMITTED_BY,
    ],
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
                impact: input.text(field(4))?,
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
