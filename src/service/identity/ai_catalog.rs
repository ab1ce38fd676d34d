//! The AI catalog (ARD 0.9, `/.well-known/ai-catalog.json` and `/.well-known/ard.json`): the
//! marketplace's A2A agent card, its MCP server (`/server.json`) and the agents that opted in to
//! a display name, each by URL.
//!
//! Identifiers are `urn:air:<host>:bourse:<name>` for the marketplace's own entries and
//! `urn:air:<host>:agents:<handle>` for agents, `<host>` being the public URL's host (without
//! port). The MCP entry's type is `application/mcp-server+json`: `/server.json` is the MCP
//! Registry's server document, not the experimental server card that
//! `application/mcp-server-card+json` names. At most [`AGENT_ENTRIES`] agents are listed, the
//! most recently registered first.

use serde::Serialize;

use crate::error::Result;
use crate::service::App;
use crate::store::agents as agent_store;

/// The ai-catalog version the ARD 0.9 schema requires.
pub const SPEC_VERSION: &str = "1.0";
/// Most agent entries (the newest registrations with a display name).
pub const AGENT_ENTRIES: i64 = 1_000;
/// The media type of an A2A agent card.
pub const A2A_CARD: &str = "application/a2a-agent-card+json";
/// The media type of the MCP Registry's server document (`server.json`).
pub const MCP_SERVER: &str = "application/mcp-server+json";

/// The catalog.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AiCatalog {
    pub spec_version: &'static str,
    pub host: Host,
    pub entries: Vec<Entry>,
}

/// Who publishes the catalog: this instance.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Host {
    /// The operator's brand (provenance `brand`, `bourse` by default).
    pub display_name: String,
    /// `/llms.txt`.
    pub documentation_url: String,
}

/// One artifact, by URL.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Entry {
    pub identifier: String,
    pub display_name: String,
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub url: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<String>,
}

/// The catalog of this instance.
///
/// # Errors
/// Database failure.
pub async fn catalog(app: &App) -> Result<AiCatalog> {
    let agents = app
        .store
        .read(|conn| agent_store::with_display_names(conn, AGENT_ENTRIES))
        .await?;
    let host = publisher(&app.public_url);
    let brand = app.provenance().brand;
    let mut entries = vec![
        Entry {
            identifier: format!("urn:air:{host}:bourse:marketplace"),
            display_name: brand.clone(),
            kind: A2A_CARD,
            url: app.url("/.well-known/agent-card.json"),
            description: Some(
                "The marketplace as an A2A agent: browse, buy and sell data listings, message agents."
                    .into(),
            ),
            tags: vec!["marketplace".into(), "a2a".into(), "x402".into()],
            updated_at: None,
        },
        Entry {
            identifier: format!("urn:air:{host}:bourse:mcp"),
            display_name: format!("{brand} MCP server"),
            kind: MCP_SERVER,
            url: app.url("/server.json"),
            description: Some(
                "The MCP Registry entry (server.json) of the marketplace's MCP endpoint /api/mcp (streamable HTTP)."
                    .into(),
            ),
            tags: vec!["marketplace".into(), "mcp".into()],
            updated_at: None,
        },
    ];
    entries.extend(agents.into_iter().filter_map(|agent| {
        let display_name = agent.display_name?;
        Some(Entry {
            identifier: format!("urn:air:{host}:agents:{}", agent.handle),
            display_name,
            kind: A2A_CARD,
            url: app.url(&super::cards::a2a_card_path(&agent.handle)),
            description: None,
            tags: Vec::new(),
            updated_at: Some(agent.updated_at),
        })
    }));
    Ok(AiCatalog {
        spec_version: SPEC_VERSION,
        host: Host {
            display_name: brand,
            documentation_url: app.url("/llms.txt"),
        },
        entries,
    })
}

/// The publisher segment of identifiers: the public URL's host without port, in the characters
/// the schema allows (`[a-zA-Z0-9.-]`; anything else becomes `-`).
fn publisher(public_url: &str) -> String {
    let authority = crate::service::authority(public_url);
    let host = match authority.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or_default(),
        None => authority.split(':').next().unwrap_or_default(),
    };
    let host: String = host
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect();
    if host.is_empty() {
        "localhost".to_owned()
    } else {
        host
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_publisher_is_the_host_without_port_in_urn_characters() {
        assert_eq!(publisher("http://127.0.0.1:8080"), "127.0.0.1");
        assert_eq!(
            publisher("https://market.example.com/"),
            "market.example.com"
        );
        assert_eq!(publisher("http://[::1]:8080"), "--1");
        assert_eq!(publisher("http://"), "localhost");
    }
}
