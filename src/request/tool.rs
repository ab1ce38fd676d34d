//! What MCP and OAuth need of an operation beyond its fields: its tool (title, description,
//! hints, who may call it) and the OAuth scopes a hosted client may be granted.

/// An operation's MCP tool: `tools/list` shows it under the operation's name, with its input
/// schema generated from the fields.
#[derive(Debug)]
pub struct Tool {
    pub title: &'static str,
    /// The description; for an [`Access::Keyed`] tool the MCP face adds how to authenticate.
    pub description: &'static str,
    pub read_only: bool,
    pub idempotent: bool,
    pub access: Access,
}

impl Tool {
    /// A read (read-only, idempotent).
    pub const fn read(access: Access, title: &'static str, description: &'static str) -> Tool {
        Tool {
            title,
            description,
            read_only: true,
            idempotent: true,
            access,
        }
    }

    /// A write that is not idempotent (each call makes something new).
    pub const fn write(access: Access, title: &'static str, description: &'static str) -> Tool {
        Tool {
            read_only: false,
            idempotent: false,
            ..Tool::read(access, title, description)
        }
    }

    /// A write whose repetition changes nothing more.
    pub const fn idempotent_write(
        access: Access,
        title: &'static str,
        description: &'static str,
    ) -> Tool {
        Tool {
            read_only: false,
            ..Tool::read(access, title, description)
        }
    }
}

/// Who may call an MCP tool, and how an `api_key` argument is taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// Anyone; a key argument is refused (a public tool needs none).
    Public,
    /// Anyone; given a caller, it speaks in its agent's name (an idea or a contact message is
    /// attributed to the agent), through an OAuth token only with `message`.
    PublicInAgentsName,
    /// The `Authorization: Bearer` credential only; a key argument is refused (the Agent
    /// Connect tools).
    Bearer,
    /// The `Authorization: Bearer` credential; an `api_key` argument, which the interface lists
    /// on the keyed marketplace tools, is accepted only when it names the same agent.
    Keyed,
}

impl Access {
    /// Whether the tool works without a credential.
    pub fn is_public(self) -> bool {
        matches!(self, Access::Public | Access::PublicInAgentsName)
    }
}

/// What a person lets a hosted MCP client do for their agent (OAuth scopes). Reading and
/// messaging are ordinary; selling publishes in the agent's name; spending moves money and is
/// never granted unless the person ticks it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Scope {
    /// Who the agent is, lookups, its inbox, its purchases.
    Read,
    /// Sending messages and ratings in the agent's name.
    Message,
    /// Becoming a seller, listing, updating and withdrawing listings, the seller dashboard.
    Sell,
    /// Buying (charges the buyer).
    Spend,
}

impl Scope {
    /// Every scope, in the order pages and metadata list them.
    pub const ALL: [Scope; 4] = [Scope::Read, Scope::Message, Scope::Sell, Scope::Spend];

    /// The scope's OAuth name.
    pub fn name(self) -> &'static str {
        match self {
            Scope::Read => "read",
            Scope::Message => "message",
            Scope::Sell => "sell",
            Scope::Spend => "spend",
        }
    }

    /// The scope named `name`.
    pub fn named(name: &str) -> Option<Scope> {
        Scope::ALL.into_iter().find(|scope| scope.name() == name)
    }

    /// What it allows, in a sentence a person reads before allowing it.
    pub fn sentence(self) -> &'static str {
        match self {
            Scope::Read => {
                "see the agent's profile, look up agents, read its inbox and its purchases"
            }
            Scope::Message => "send messages and ratings in the agent's name",
            Scope::Sell => {
                "become a seller and create, change or withdraw listings in the agent's name"
            }
            Scope::Spend => "buy listings in the agent's name: this spends money",
        }
    }
}
