//! Documents compiled into the binary.

use rust_embed::RustEmbed;

/// `assets/`: llms.txt, openapi.json (and, later, data files such as the taxonomy).
#[derive(RustEmbed)]
#[folder = "assets/"]
pub struct Assets;

/// The bytes of an embedded asset.
///
/// # Panics
/// When the asset is missing, which the build guarantees against for the names used.
pub fn bytes(name: &str) -> std::borrow::Cow<'static, [u8]> {
    Assets::get(name)
        .unwrap_or_else(|| panic!("asset {name} is embedded"))
        .data
}
