//! Health, embedded documents, signing key and receipt verification.

use hyper::body::Bytes;
use serde_json::json;

use crate::assets;
use crate::error::{Error, Result};
use crate::http::request::Ctx;
use crate::http::response::Reply;
use crate::service::{App, trust::receipts};

pub fn healthz() -> Reply {
    Reply::ok(json!({ "status": "ok" }))
}

/// `GET /metrics`: the Prometheus text exposition (never signed).
pub async fn metrics(app: &App) -> Result<Reply> {
    let text = crate::service::metrics::render(app).await?;
    Ok(Reply::Bytes(
        crate::telemetry::CONTENT_TYPE,
        Bytes::from(text),
    ))
}

pub async fn readyz(app: &App) -> Result<Reply> {
    if let Some(why) = app.follower.as_ref().and_then(|f| f.unready()) {
        return Err(Error::Unavailable {
            code: "NOT_READY",
            message: why,
        });
    }
    match app.store.check_ready().await {
        Ok(()) => Ok(Reply::ok(match &app.follower {
            None => json!({ "status": "ready", "role": "primary" }),
            Some(follower) => json!({
                "status": "ready",
                "role": "follower",
                "primary": follower.primary,
                "lagSeconds": follower.lag_seconds(),
            }),
        })),
        Err(error) => {
            tracing::warn!(%error, "not ready");
            Err(Error::Unavailable {
                code: "NOT_READY",
                message: "the database is not writable or not migrated".into(),
            })
        }
    }
}

/// The address the embedded documents are written for (`bourse serve`'s default).
const DOCUMENTED_BASE: &str = "http://127.0.0.1:8080";

/// `/llms.txt`, with every URL of the documented default address naming this instance.
pub fn llms_txt(app: &App) -> Reply {
    let text = app.documents.llms_txt.get_or_init(|| {
        String::from_utf8_lossy(&assets::bytes("llms.txt"))
            .replace(DOCUMENTED_BASE, &app.public_url)
            .into_bytes()
            .into()
    });
    Reply::Bytes("text/plain; charset=utf-8", Bytes::from_owner(text.clone()))
}

/// `/openapi.json`, its `servers` naming this instance (examples keep the documented address).
pub fn openapi(app: &App) -> Reply {
    let text = app.documents.openapi.get_or_init(|| {
        let documented = format!("\"servers\": [\n    {{\n      \"url\": \"{DOCUMENTED_BASE}\"");
        let served = format!(
            "\"servers\": [\n    {{\n      \"url\": \"{}\"",
            app.public_url
        );
        String::from_utf8_lossy(&assets::bytes("openapi.json"))
            .replacen(&documented, &served, 1)
            .into_bytes()
            .into()
    });
    Reply::Bytes("application/json", Bytes::from_owner(text.clone()))
}

/// The name the MCP Registry would list this instance under: its host's labels reversed
/// (`market.example.com` → `com.example.market/bourse`); `local.bourse/bourse` for an address.
fn registry_name(public_url: &str) -> String {
    let host = public_url
        .split_once("://")
        .map_or(public_url, |(_, rest)| rest)
        .split(['/', ':'])
        .next()
        .unwrap_or_default();
    let is_name = host.contains('.')
        && host.bytes().any(|b| b.is_ascii_alphabetic())
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-');
    if is_name {
        let mut labels: Vec<&str> = host.split('.').collect();
        labels.reverse();
        format!("{}/bourse", labels.join("."))
    } else {
        "local.bourse/bourse".to_owned()
    }
}

/// `/server.json`: the MCP Registry entry (schema 2025-12-11) of this instance, from
/// `assets/server.json` with its URLs and name rewritten for the public URL.
pub fn server_json(app: &App) -> Reply {
    let text = app.documents.server_json.get_or_init(|| {
        String::from_utf8_lossy(&assets::bytes("server.json"))
            .replace(DOCUMENTED_BASE, &app.public_url)
            .replace(
                "\"com.example/bourse\"",
                &format!("\"{}\"", registry_name(&app.public_url)),
            )
            .into_bytes()
            .into()
    });
    Reply::Bytes("application/json", Bytes::from_owner(text.clone()))
}

/// `/.well-known/api-catalog` (RFC 9727): where the contract, the documentation, the MCP
/// endpoint and its OAuth metadata, x402 discovery and the AI catalog are, as a linkset
/// (RFC 9264).
pub fn api_catalog(app: &App) -> Reply {
    let link = |path: &str, media: &str| json!([{ "href": app.url(path), "type": media }]);
    let catalog = json!({
        "linkset": [
            {
                "anchor": app.url("/api"),
                "service-desc": link("/openapi.json", "application/vnd.oai.openapi+json;version=3.1"),
                "service-doc": link("/llms.txt", "text/plain"),
                "status": link("/readyz", "application/json"),
            },
            {
                "anchor": app.url("/api/mcp"),
                "service-desc": link("/server.json", "application/json"),
                "service-doc": link("/llms.txt", "text/plain"),
                "service-meta": link("/.well-known/oauth-protected-resource/api/mcp", "application/json"),
            },
            {
                "anchor": app.url("/discovery/resources"),
                "service-desc": link("/openapi.json", "application/vnd.oai.openapi+json;version=3.1"),
                "service-doc": link("/llms.txt", "text/plain"),
            },
            {
                "anchor": app.url("/log/checkpoint"),
                "service-doc": link("/llms.txt", "text/plain"),
                "describedby": link("/api/signing-key", "application/json"),
            },
            {
                "anchor": app.url("/.well-known/ai-catalog.json"),
                "service-doc": link("/llms.txt", "text/plain"),
                "alternate": link("/.well-known/ard.json", "application/json"),
            },
        ]
    });
    Reply::Raw(crate::http::response::RawReply {
        status: 200,
        content_type: "application/linkset+json; profile=\"https://www.rfc-editor.org/info/rfc9727\"",
        body: Bytes::from(serde_json::to_vec(&catalog).expect("a Value serializes")),
        headers: Vec::new(),
    })
}

pub fn signing_key(app: &App) -> Result<Reply> {
    Reply::answer(200, &receipts::signing_key(app))
}

pub fn verify_receipt(app: &App, ctx: &Ctx) -> Result<Reply> {
    let verdict = receipts::verify_request(ctx.body_text()?, receipts::resolver(&app.keyring))?;
    Ok(Reply::ok(
        serde_json::to_value(verdict).expect("verdict serializes"),
    ))
}
