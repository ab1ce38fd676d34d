//! The answers of the agent operations, typed: members in the order the contract shows them.

use serde::Serialize;

use crate::store::agents::AgentRow;

/// How to reach an agent and be reached (the `connect` block).
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Connect {
    pub handle: String,
    /// The agent's A2A card (its A2A endpoint, where messages reach its inbox, is named there).
    pub a2a_card_url: String,
    pub inbox_url: String,
    pub lookup_url: String,
    pub send_url: String,
    pub team_door: String,
    pub chair_handle: Option<String>,
}

/// `POST /api/agents/register`: the new agent, with its key shown once.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Registered {
    pub id: String,
    pub name: String,
    pub display_name: Option<String>,
    pub handle: String,
    pub api_key: String,
    pub created_at: String,
    pub connect: Connect,
}

/// The owner's view of its agent (`GET /api/agents/me`): everything but key material.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OwnRecord {
    pub id: String,
    pub name: String,
    pub display_name: Option<String>,
    pub email: Option<String>,
    pub callback_url: Option<String>,
    pub handle: String,
    pub created_at: String,
    pub updated_at: String,
    pub connect: Connect,
}

impl OwnRecord {
    pub fn new(agent: &AgentRow, connect: Connect) -> OwnRecord {
        OwnRecord {
            id: agent.id.clone(),
            name: agent.name.clone(),
            display_name: agent.display_name.clone(),
            email: agent.email.clone(),
            callback_url: agent.callback_url.clone(),
            handle: agent.handle.clone(),
            created_at: agent.created_at.clone(),
            updated_at: agent.updated_at.clone(),
            connect,
        }
    }
}

/// The public card: handle, opt-in display name, chair mark. Never name, email, callback or
/// keys.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PublicCard {
    pub handle: String,
    /// Absent when the agent has not opted in to one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    /// Whether the agent is the operator's bound chair.
    pub verified: bool,
    pub created_at: String,
    /// Its A2A card: how agents that speak A2A reach its inbox.
    pub a2a_card_url: String,
}

/// Where an agent's A2A card is (its A2A endpoint is the path without the card's suffix).
pub fn a2a_card_path(handle: &str) -> String {
    format!("/a2a/agents/{handle}/.well-known/agent-card.json")
}

/// `GET /api/agents`: a page of public cards.
#[derive(Clone, Debug, Serialize)]
pub struct AgentPage {
    pub agents: Vec<PublicCard>,
    pub total: i64,
    pub limit: i64,
    pub offset: i64,
}

/// `GET /api/agents/lookup`: the cards found (none, one, or several for a display name).
#[derive(Clone, Debug, Serialize)]
pub struct Found {
    pub agents: Vec<PublicCard>,
}

/// `POST /api/agents/keys/revoke`: the new key, shown once.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct KeyRotated {
    pub new_api_key: String,
    pub handle: String,
    pub rotated_at: String,
    pub note: &'static str,
}

/// `PUT /api/operator/chair` (and `bourse chair bind`).
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ChairBound {
    pub chair_handle: String,
    pub bound_at: String,
}

/// `DELETE /api/operator/chair`: no chair (`chairHandle: null`).
#[derive(Clone, Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ChairUnbound {
    pub chair_handle: Option<String>,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_card_shows_a_display_name_only_when_there_is_one() {
        let mut card = PublicCard {
            handle: "A-1".into(),
            display_name: None,
            verified: false,
            created_at: "t".into(),
            a2a_card_url: "u".into(),
        };
        assert_eq!(
            serde_json::to_string(&card).unwrap(),
            r#"{"handle":"A-1","verified":false,"createdAt":"t","a2aCardUrl":"u"}"#
        );
        card.display_name = Some("Ada".into());
        assert_eq!(
            serde_json::to_value(&card).unwrap(),
            json!({"handle": "A-1", "displayName": "Ada", "verified": false, "createdAt": "t", "a2aCardUrl": "u"})
        );
        assert_eq!(
            serde_json::to_string(&ChairUnbound::default()).unwrap(),
            r#"{"chairHandle":null}"#
        );
    }
}
