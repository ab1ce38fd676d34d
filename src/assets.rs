//! The files of `assets/` compiled into the binary: the documents served as they are
//! (`llms.txt`, `openapi.json`) and the data the service reads at start (`taxonomy.json`). A
//! neutral module, so that the HTTP faces (`api`) and `service` both read it without importing
//! each other.

use rust_embed::RustEmbed;

/// `assets/`: llms.txt, openapi.json, taxonomy.json.
#[derive(RustEmbed)]
#[folder = "assets/"]
struct Assets;

/// The bytes of an embedded asset.
///
/// # Panics
/// When the asset is missing, which the build guarantees against for the names used.
pub fn bytes(name: &str) -> std::borrow::Cow<'static, [u8]> {
    Assets::get(name)
        .unwrap_or_else(|| panic!("asset {name} is embedded"))
        .data
}
