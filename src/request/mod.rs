//! Typed requests at the edges. Every operation that more than one face offers (REST and MCP
//! today) has one declaration, an [`Op`]: its fields, each with a type, bounds and its name on
//! each face. The same [`Input`] reader parses a REST body or query string and an MCP tool's
//! arguments against that declaration into one request type (`CreateListing`, `SendMessage`,
//! `Browse`, …), and the MCP `inputSchema`s are generated from it. Services take the request
//! types, never raw JSON.
//!
//! Naming: services name fields in their REST spelling in error messages; the MCP face respells
//! them with [`Op::respell`], so a caller always reads its own names.

pub mod agents;
pub mod catalog;
pub mod commerce;
pub mod contact;
pub mod disclosure;
pub mod messaging;
pub mod oauth;
mod schema;
pub mod sellers;
pub mod spending;
mod tool;
pub mod trust;

use serde_json::{Map, Value};

pub use crate::args::Patch;
use crate::args::{Args, int_in_range, parse_integral};
use crate::error::{Error, Result};
pub use tool::{Access, Scope, Tool};

/// Text for people on one line: at least one character that is not a space (the reader trims)
/// and no control characters (C0, DEL, C1), as the reader refuses.
pub const SINGLE_LINE: &str = "^[^\\u0000-\\u001F\\u007F-\\u009F]*[^\\s\\u0000-\\u001F\\u007F-\\u009F][^\\u0000-\\u001F\\u007F-\\u009F]*$";
/// A token: no whitespace at either end, no control characters.
pub const TOKEN: &str = "^[^\\s\\u0000-\\u001F\\u007F-\\u009F](?:[^\\u0000-\\u001F\\u007F-\\u009F]*[^\\s\\u0000-\\u001F\\u007F-\\u009F])?$";
/// Text for people on several lines: not blank, line breaks and tabs allowed, other control
/// characters refused (descriptions, comments, inquiry and service-request messages).
pub const PARAGRAPH: &str = "^[^\\u0000-\\u0008\\u000B\\u000C\\u000E-\\u001F\\u007F-\\u009F]*[^\\s\\u0000-\\u0008\\u000B\\u000C\\u000E-\\u001F\\u007F-\\u009F][^\\u0000-\\u0008\\u000B\\u000C\\u000E-\\u001F\\u007F-\\u009F]*$";

/// A URL's port as the contract's patterns state it: 1 to 65535, digits without a leading zero.
pub fn is_port(text: &str) -> bool {
    // `u16`'s parser takes a leading `+`: digits only.
    text.bytes().all(|b| b.is_ascii_digit())
        && !text.starts_with('0')
        && text.parse::<u16>().is_ok_and(|port| port > 0)
}

/// Where a request came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Face {
    /// A REST body or query string (the documented camelCase names, or the spec's own).
    Rest,
    /// An MCP tool's arguments (snake_case).
    Mcp,
}

/// A field's JSON type and bounds.
#[derive(Clone, Copy, Debug)]
pub enum Kind {
    /// A string, trimmed, 1..=max characters, no control characters.
    Text(usize),
    /// As [`Kind::Text`], but taken as sent: whitespace at either end is refused, not trimmed
    /// (URLs and slugs, whose schemas have no room for it).
    Token(usize),
    /// Multi-line text, trimmed, 1..=max characters: line breaks and tabs allowed, other
    /// control characters refused.
    Paragraph(usize),
    /// A string taken exactly as sent (message bodies); its bounds are the service's.
    Verbatim,
    /// As [`Kind::Verbatim`], at most this many characters (checked by the service, stated in
    /// the schema).
    VerbatimUpTo(usize),
    /// An integer in `min..=max`; integral floats such as `5.0` are accepted.
    Int(i64, i64),
    /// A number in `min..=max`.
    Number(f64, f64),
    /// A boolean.
    Bool,
    /// A boolean that must be true (an affirmation such as `consent`).
    Consent,
    /// One of these strings.
    Enum(&'static [&'static str]),
    /// A JSON object, checked by the service.
    Object,
    /// An object of these boolean flags, checked by the service.
    Flags(&'static [&'static str]),
    /// Any other JSON, checked by the service; the text is the field's JSON Schema.
    Json(&'static str),
}

/// One field of an operation.
#[derive(Clone, Copy, Debug)]
pub struct Field {
    /// The name on REST; empty when the field is not offered there.
    pub rest: &'static str,
    /// The name on MCP; empty when the field is not offered there.
    pub mcp: &'static str,
    pub kind: Kind,
    /// Required on REST, on MCP.
    pub required: [bool; 2],
    /// What the field is, for the generated schemas.
    pub doc: &'static str,
    /// Required by the contract, but its absence is the service's business refusal (a 422
    /// with its own code, such as `CONSENT_REQUIRED`), not a malformed request.
    pub refused_by_service: bool,
    /// Where `assets/openapi.json` states the value's format that the service checks (an
    /// email, an https URL, a slug of the taxonomy, the health consent): a JSON pointer, whose
    /// segments may name a parameter by its `name`; empty when the kind says it all. The MCP
    /// schema then states the REST contract's rule.
    pub documented: &'static str,
    /// Offered only with, or never with, a value of another field of the operation (judged by
    /// `Input` when it is made, stated in the MCP schema as a conditional).
    pub depends: Option<Depends>,
}

/// A field's dependence on the value of another field of its operation.
#[derive(Clone, Copy, Debug)]
pub struct Depends {
    /// The other field.
    pub on: &'static Field,
    pub value: &'static str,
    /// Required when `on` has `value`, refused otherwise (`false`: refused when it has it).
    pub with: bool,
}

impl Field {
    /// A field offered on both faces under these names.
    pub const fn both(rest: &'static str, mcp: &'static str, kind: Kind) -> Field {
        Field {
            rest,
            mcp,
            kind,
            required: [false, false],
            doc: "",
            refused_by_service: false,
            documented: "",
            depends: None,
        }
    }

    /// A field offered on REST only (a declared face difference).
    pub const fn rest(name: &'static str, kind: Kind) -> Field {
        Field::both(name, "", kind)
    }

    /// A field offered on MCP only (a declared face difference).
    pub const fn mcp(name: &'static str, kind: Kind) -> Field {
        Field::both("", name, kind)
    }

    /// Required on every face that offers it.
    pub const fn required(mut self) -> Field {
        self.required = [true, true];
        self
    }

    /// Required on `face` only (a declared face difference).
    pub const fn required_on(mut self, face: Face) -> Field {
        match face {
            Face::Rest => self.required[0] = true,
            Face::Mcp => self.required[1] = true,
        }
        self
    }

    /// Required, with its absence refused by the service (see [`Field::refused_by_service`]).
    pub const fn affirmation(mut self) -> Field {
        self.required = [true, true];
        self.refused_by_service = true;
        self
    }

    pub const fn doc(mut self, doc: &'static str) -> Field {
        self.doc = doc;
        self
    }

    /// The value's format as `assets/openapi.json` states it at `pointer` (see
    /// [`Field::documented`]).
    pub const fn documented(mut self, pointer: &'static str) -> Field {
        self.documented = pointer;
        self
    }

    /// Required when `on` is `value`, refused otherwise (`max_copies` of a limited listing).
    pub const fn required_with(mut self, on: &'static Field, value: &'static str) -> Field {
        self.depends = Some(Depends {
            on,
            value,
            with: true,
        });
        self
    }

    /// Refused when `on` is `value` (an inbox page's `limit` with `mark_read`).
    pub const fn never_with(mut self, on: &'static Field, value: &'static str) -> Field {
        self.depends = Some(Depends {
            on,
            value,
            with: false,
        });
        self
    }

    /// The field's name on `face`, if offered there.
    pub fn name(&self, face: Face) -> Option<&'static str> {
        let name = match face {
            Face::Rest => self.rest,
            Face::Mcp => self.mcp,
        };
        (!name.is_empty()).then_some(name)
    }

    /// Free text with no documented format: an empty query value of it counts as absent (any
    /// other kind, or a documented format such as a slug, refuses it).
    pub fn free_text(&self) -> bool {
        matches!(
            self.kind,
            Kind::Text(_)
                | Kind::Token(_)
                | Kind::Paragraph(_)
                | Kind::Verbatim
                | Kind::VerbatimUpTo(_)
        ) && self.documented.is_empty()
    }

    pub fn is_required(&self, face: Face) -> bool {
        self.required[face as usize] && self.name(face).is_some()
    }
}

/// An operation's declaration: what it is called and the fields it takes (path parameters
/// included: on MCP they are arguments). Its REST bindings are its rows of the operations table
/// (`crate::operations`).
#[derive(Debug)]
pub struct Op {
    /// The operation's name: its MCP tool's name, when it is one.
    pub name: &'static str,
    pub fields: &'static [Field],
    /// The scope an OAuth access token must hold to call it (an API key holds every scope).
    /// `None`: it takes no agent credential (public, capability or operator operations), or it
    /// is offered on REST only, where tokens are not accepted (`update_me`).
    pub scope: Option<Scope>,
    /// Its MCP tool, when MCP offers it.
    pub tool: Option<Tool>,
}

impl Op {
    /// The fields offered on `face`.
    pub fn on(&self, face: Face) -> impl Iterator<Item = &'static Field> + '_ {
        self.fields.iter().filter(move |f| f.name(face).is_some())
    }

    /// Renames every backquoted REST field name in `error`'s message to its name on `face`, so
    /// the service's messages read in the caller's spelling.
    pub fn respell(&self, face: Face, error: Error) -> Error {
        if face == Face::Rest {
            return error;
        }
        error.map_message(|message| {
            // The reader's own refusal of an unknown member already speaks the caller's names
            // (and quotes the other face's on purpose).
            if message.starts_with("unknown argument `") || message.starts_with("unknown field `") {
                return message.to_owned();
            }
            let mut out = message.to_owned();
            for field in self.fields {
                if let (Some(from), Some(to)) = (field.name(Face::Rest), field.name(face))
                    && from != to
                {
                    out = out.replace(&format!("`{from}`"), &format!("`{to}`"));
                }
            }
            out
        })
    }
}

/// A request being read against its declaration.
pub struct Input {
    face: Face,
    op: &'static Op,
    args: Args,
    /// Values came from a query string: numbers arrive as text.
    query: bool,
    /// Query parameters given more than once (refused when their field is read).
    repeated: Vec<String>,
}

impl Input {
    /// A REST body or MCP arguments whose unknown members are judged later, by the operation's
    /// reader (an operation whose business refusal comes before the shape of the rest).
    pub fn unchecked(face: Face, op: &'static Op, args: Args) -> Input {
        Input {
            face,
            op,
            args,
            query: false,
            repeated: Vec::new(),
        }
    }

    /// The checks [`Input::new`] makes, for an [`Input::unchecked`]: members this face does not
    /// offer, and fields given or missing against another's value.
    ///
    /// # Errors
    /// `INVALID_ARGUMENT` naming the first unknown member, or the field out of its rule.
    pub(crate) fn check_members(&self) -> Result<()> {
        self.deny_unknown()?;
        self.check_dependencies()
    }

    /// A member by its name as sent, declared or not.
    pub fn member(&self, name: &str) -> Option<&Value> {
        self.args.get(name)
    }

    /// A JSON object (REST body or MCP arguments). Members the face does not offer are refused,
    /// named in the caller's own spelling.
    ///
    /// # Errors
    /// `INVALID_ARGUMENT` for an unknown member.
    pub fn new(face: Face, op: &'static Op, args: Map<String, Value>) -> Result<Input> {
        let input = Input {
            face,
            op,
            args: Args::from_value(Value::Object(args))?,
            query: false,
            repeated: Vec::new(),
        };
        input.deny_unknown()?;
        input.check_dependencies()?;
        Ok(input)
    }

    /// A REST body already read as [`Args`].
    ///
    /// # Errors
    /// As [`Input::new`].
    pub fn body(op: &'static Op, args: Args) -> Result<Input> {
        let input = Input {
            face: Face::Rest,
            op,
            args,
            query: false,
            repeated: Vec::new(),
        };
        input.deny_unknown()?;
        input.check_dependencies()?;
        Ok(input)
    }

    /// A query string's pairs. Unknown parameters are ignored, as HTTP caches and tracking
    /// parameters add them; a declared one given more than once is refused when it is read (a
    /// reader that takes the first value would disagree with one that takes the last), as a
    /// body's duplicate member is.
    pub fn query(op: &'static Op, pairs: &[(String, String)]) -> Input {
        let mut map = Map::new();
        let mut repeated = Vec::new();
        for (key, value) in pairs {
            if map.contains_key(key) {
                if !repeated.contains(key) {
                    repeated.push(key.clone());
                }
            } else {
                map.insert(key.clone(), Value::String(value.clone()));
            }
        }
        Input {
            face: Face::Rest,
            op,
            args: Args::from_value(Value::Object(map)).expect("an object"),
            query: true,
            repeated,
        }
    }

    pub fn face(&self) -> Face {
        self.face
    }

    /// Holds every field that depends on another's value ([`Field::depends`]) to its rule: the
    /// one place the rule is judged (the MCP schema states it as a conditional). A rule applies
    /// where the operation offers both fields on this face; `null` counts as absent.
    fn check_dependencies(&self) -> Result<()> {
        let offered = |name: &str| {
            self.op
                .on(self.face)
                .any(|f| f.name(self.face) == Some(name))
        };
        let given = |name: &str| !matches!(self.args.get(name), None | Some(Value::Null));
        for field in self.op.on(self.face) {
            let (Some(depends), Some(name)) = (field.depends, field.name(self.face)) else {
                continue;
            };
            let Some(on) = depends.on.name(self.face).filter(|on| offered(on)) else {
                continue;
            };
            let value = depends.value;
            let has_value = self.args.get(on).and_then(Value::as_str) == Some(value);
            let refusal = match (depends.with, has_value, given(name)) {
                (true, true, false) => format!("`{name}` is required when `{on}` is {value}"),
                (true, false, true) => format!("`{name}` applies only when `{on}` is {value}"),
                (false, true, true) => format!("`{name}` does not apply when `{on}` is {value}"),
                _ => continue,
            };
            return Err(Error::invalid(refusal));
        }
        Ok(())
    }

    fn deny_unknown(&self) -> Result<()> {
        let accepted: Vec<&str> = self
            .op
            .on(self.face)
            .filter_map(|f| f.name(self.face))
            .collect();
        let Some(key) = self.args.keys().find(|k| !accepted.contains(&k.as_str())) else {
            return Ok(());
        };
        let other = match self.face {
            Face::Rest => Face::Mcp,
            Face::Mcp => Face::Rest,
        };
        let hint = self
            .op
            .fields
            .iter()
            .find(|f| f.name(other) == Some(key.as_str()))
            .and_then(|f| f.name(self.face))
            .map_or(String::new(), |own| match self.face {
                Face::Mcp => format!(" (this tool calls it `{own}`)"),
                Face::Rest => format!(" (this endpoint calls it `{own}`)"),
            });
        Err(Error::invalid(match self.face {
            Face::Rest => format!(
                "unknown field `{key}`{hint}; accepted fields: {}",
                accepted.join(", ")
            ),
            Face::Mcp => format!(
                "unknown argument `{key}` for {}{hint}; accepted arguments: {}",
                self.op.name,
                accepted.join(", ")
            ),
        }))
    }

    /// The operation's own declaration of `field` (matched by its names): a request type shared
    /// by two operations reads the fields of both, and each operation decides, for example,
    /// whether a field is required on a face.
    fn declared(&self, field: &Field) -> Option<&'static Field> {
        self.op
            .fields
            .iter()
            .find(|f| f.rest == field.rest && f.mcp == field.mcp)
    }

    /// The field's name here, or None when this face or this operation does not offer it.
    fn name(&self, field: &Field) -> Option<&'static str> {
        self.declared(field).and_then(|f| f.name(self.face))
    }

    /// The raw value, absent or null counting as none; a required field's absence is an error.
    /// From a query string, a parameter given twice is refused, and an empty value counts as
    /// absent only for free text ([`Field::free_text`]): an empty number, choice or slug is
    /// refused, as its schema refuses it.
    fn present(&self, field: &Field) -> Result<Option<(&'static str, &Value)>> {
        let Some(field) = self.declared(field) else {
            return Ok(None);
        };
        let Some(name) = field.name(self.face) else {
            return Ok(None);
        };
        if self.query && self.repeated.iter().any(|r| r == name) {
            return Err(Error::invalid(format!(
                "`{name}` is given more than once; send it once"
            )));
        }
        let value = match self.args.get(name) {
            None | Some(Value::Null) => None,
            Some(Value::String(text)) if self.query && text.is_empty() => {
                if !field.free_text() {
                    return Err(Error::invalid(format!(
                        "`{name}` is empty: give a value, or leave the parameter out for its default"
                    )));
                }
                None
            }
            Some(value) => Some(value),
        };
        match value {
            None if field.is_required(self.face) && !field.refused_by_service => {
                Err(Error::invalid(format!("`{name}` is required")))
            }
            None => Ok(None),
            Some(value) => Ok(Some((name, value))),
        }
    }

    /// A [`Kind::Text`] field, trimmed and bounded, or a [`Kind::Token`] one, bounded.
    ///
    /// # Errors
    /// Missing when required, not a string, empty, too long or with control characters; a
    /// token with whitespace at an end.
    pub fn text(&self, field: &Field) -> Result<Option<String>> {
        let (Kind::Text(max) | Kind::Token(max)) = field.kind else {
            return Err(wrong_kind(field));
        };
        match self.present(field)? {
            None => Ok(None),
            Some((name, value)) => {
                untrimmed_token(field, name, value)?;
                self.args.opt_str(name, max)
            }
        }
    }

    /// A required [`Kind::Text`] field.
    ///
    /// # Errors
    /// As [`Input::text`], and missing.
    pub fn req_text(&self, field: &Field) -> Result<String> {
        self.text(field)?.ok_or_else(|| self.missing(field))
    }

    /// The id a path names: REST's path segment when `path` is given, else (MCP) the required
    /// text argument `field`.
    ///
    /// # Errors
    /// As [`Input::req_text`] (MCP only).
    pub fn path_id(&self, field: &Field, path: Option<&str>) -> Result<String> {
        match path {
            Some(id) => Ok(id.to_owned()),
            None => self.req_text(field),
        }
    }

    /// An optional [`Kind::Paragraph`] field.
    ///
    /// # Errors
    /// Not a string, empty, too long, or control characters other than line breaks and tabs.
    pub fn paragraph(&self, field: &Field) -> Result<Option<String>> {
        let Kind::Paragraph(max) = field.kind else {
            return Err(wrong_kind(field));
        };
        match self.present(field)? {
            None => Ok(None),
            Some((name, _)) => self.args.opt_paragraph(name, max),
        }
    }

    /// A required [`Kind::Paragraph`] field.
    ///
    /// # Errors
    /// Missing, not a string, empty, too long, or control characters other than line breaks
    /// and tabs.
    pub fn req_paragraph(&self, field: &Field) -> Result<String> {
        let Kind::Paragraph(max) = field.kind else {
            return Err(wrong_kind(field));
        };
        match self.present(field)? {
            None => Err(self.missing(field)),
            Some((name, _)) => self.args.req_paragraph(name, max),
        }
    }

    /// A [`Kind::Text`] field of a PATCH: absent keeps, null clears.
    ///
    /// # Errors
    /// As [`Input::text`].
    pub fn patch_text(&self, field: &Field) -> Result<Patch<String>> {
        let (Kind::Text(max) | Kind::Token(max), Some(name)) = (field.kind, self.name(field))
        else {
            return Ok(Patch::Keep);
        };
        if let Some(value) = self.args.get(name) {
            untrimmed_token(field, name, value)?;
        }
        self.args.patch_str(name, max)
    }

    /// A [`Kind::Verbatim`] string, exactly as sent; never empty (an empty query parameter is
    /// absent).
    ///
    /// # Errors
    /// Missing when required, not a string, empty.
    pub fn verbatim(&self, field: &Field) -> Result<Option<String>> {
        match self.present(field)? {
            None => Ok(None),
            Some((name, Value::String(text))) if text.is_empty() => {
                Err(Error::invalid(format!("`{name}` must not be empty")))
            }
            Some((_, Value::String(text))) => Ok(Some(text.clone())),
            Some((name, _)) => Err(Error::invalid(format!("`{name}` must be a string"))),
        }
    }

    /// A [`Kind::Int`] field.
    ///
    /// # Errors
    /// Missing when required, not an integer, out of range.
    pub fn int(&self, field: &Field) -> Result<Option<i64>> {
        let Kind::Int(min, max) = field.kind else {
            return Err(wrong_kind(field));
        };
        match self.present(field)? {
            None => Ok(None),
            Some((name, Value::String(text))) if self.query => match parse_integral(text) {
                Some(value) if (min..=max).contains(&value) => Ok(Some(value)),
                _ => Err(Error::invalid(format!(
                    "`{name}` must be an integer from {min} to {max}"
                ))),
            },
            Some((name, value)) => int_in_range(name, value, min, max).map(Some),
        }
    }

    /// A [`Kind::Bool`] field.
    ///
    /// # Errors
    /// Missing when required, not a boolean.
    pub fn bool(&self, field: &Field) -> Result<Option<bool>> {
        match self.present(field)? {
            None => Ok(None),
            Some((_, Value::Bool(flag))) => Ok(Some(*flag)),
            Some((name, _)) => Err(Error::invalid(format!("`{name}` must be a boolean"))),
        }
    }

    /// A [`Kind::Consent`] field: true only when sent as `true`.
    ///
    /// # Errors
    /// Sent as something other than a boolean.
    pub fn consent(&self, field: &Field) -> Result<bool> {
        Ok(self.bool(field)? == Some(true))
    }

    /// A [`Kind::Number`] field (a finite number; from a query string, its decimal text).
    ///
    /// # Errors
    /// Missing when required, not a number, out of range.
    pub fn number(&self, field: &Field) -> Result<Option<f64>> {
        let Kind::Number(min, max) = field.kind else {
            return Err(wrong_kind(field));
        };
        let Some((name, value)) = self.present(field)? else {
            return Ok(None);
        };
        let number = match value {
            Value::Number(number) => number.as_f64(),
            Value::String(text) if self.query => text.parse::<f64>().ok(),
            _ => None,
        };
        match number {
            Some(n) if n.is_finite() && (min..=max).contains(&n) => Ok(Some(n)),
            _ => Err(Error::invalid(format!(
                "`{name}` must be a number from {min} to {max}; got {value}"
            ))),
        }
    }

    /// The field's name as this caller spells it (for messages about it).
    pub fn spelling(&self, field: &Field) -> &'static str {
        field.name(self.face).unwrap_or(field.rest)
    }

    /// A [`Kind::Enum`] field.
    ///
    /// # Errors
    /// Missing when required, not one of the values.
    pub fn choice(&self, field: &Field) -> Result<Option<&'static str>> {
        let Kind::Enum(values) = field.kind else {
            return Err(wrong_kind(field));
        };
        match self.present(field)? {
            None => Ok(None),
            Some((name, value)) => {
                let text = value.as_str();
                values
                    .iter()
                    .find(|v| Some(**v) == text)
                    .copied()
                    .map(Some)
                    .ok_or_else(|| {
                        Error::invalid(format!("`{name}` must be one of {}", values.join(", ")))
                    })
            }
        }
    }

    /// A [`Kind::Flags`] object: each of its flags, when present, a boolean (whether they hold
    /// is the service's business).
    ///
    /// # Errors
    /// Missing when required, not an object, a flag that is not a boolean.
    pub fn flags(&self, field: &Field) -> Result<Option<Value>> {
        let Kind::Flags(flags) = field.kind else {
            return Err(wrong_kind(field));
        };
        let Some((name, value)) = self.present(field)? else {
            return Ok(None);
        };
        let Value::Object(members) = value else {
            return Err(Error::invalid(format!(
                "`{name}` must be an object of booleans"
            )));
        };
        match flags
            .iter()
            .find(|flag| members.get(**flag).is_some_and(|v| !v.is_boolean()))
        {
            Some(flag) => Err(Error::invalid(format!("`{name}.{flag}` must be a boolean"))),
            None => Ok(Some(value.clone())),
        }
    }

    /// The member exactly as sent, `null` included (a PATCH where `null` means "clear").
    pub fn raw(&self, field: &Field) -> Option<&Value> {
        self.name(field).and_then(|name| self.args.get(name))
    }

    /// Any JSON value ([`Kind::Object`], [`Kind::Json`]), for the service's own checks.
    ///
    /// # Errors
    /// Missing when required.
    pub fn json(&self, field: &Field) -> Result<Option<Value>> {
        Ok(self.present(field)?.map(|(_, value)| value.clone()))
    }

    fn missing(&self, field: &Field) -> Error {
        let name = field.name(self.face).unwrap_or(field.rest);
        Error::invalid(format!("`{name}` is required"))
    }
}

/// Refuses a [`Kind::Token`] string with whitespace at either end (tokens are taken as sent).
fn untrimmed_token(field: &Field, name: &str, value: &Value) -> Result<()> {
    match value {
        Value::String(text) if matches!(field.kind, Kind::Token(_)) && text.trim() != text => Err(
            Error::invalid(format!("`{name}` must not begin or end with whitespace")),
        ),
        _ => Ok(()),
    }
}

fn wrong_kind(field: &Field) -> Error {
    Error::Internal(format!("field {field:?} read as another kind"))
}

/// A page of a list read from a query string: `limit` (its default when absent) and `offset`
/// (0 when absent, or when the list takes none).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Page {
    pub limit: i64,
    pub offset: i64,
}

impl Page {
    /// # Errors
    /// `INVALID_ARGUMENT` naming a parameter out of its field's kind.
    pub fn read(
        input: &Input,
        limit: &Field,
        offset: Option<&Field>,
        default_limit: i64,
    ) -> Result<Page> {
        Ok(Page {
            limit: input.int(limit)?.unwrap_or(default_limit),
            offset: match offset {
                Some(offset) => input.int(offset)?.unwrap_or(0),
                None => 0,
            },
        })
    }
}

/// A path identifier (a listing, purchase or message id): on REST the path segment, on MCP an
/// argument. Ids are at most this long.
pub const ID_MAX: usize = 64;

#[cfg(test)]
mod tests;
