//! Display names people read: one normal form, nothing invisible, and no two agents that look
//! alike. A display name is NFC-normalised; invisible characters (default-ignorable code points
//! such as zero-width spaces and joiners, soft hyphens, variation selectors, tags),
//! bidirectional controls (U+202A–202E, U+2066–2069, the marks) and private-use characters are
//! refused; and its Unicode UTS #39 confusable skeleton must differ from every other agent's
//! display name's (so `pаypal` with a Cyrillic `а` cannot pose as `paypal`).

use unicode_normalization::UnicodeNormalization;
use unicode_security::confusable_detection::skeleton as confusable_skeleton;

use crate::error::{Error, Result};

/// A display name in normal form, with the skeleton that must be unique.
#[derive(Debug, PartialEq, Eq)]
pub struct DisplayName {
    pub text: String,
    pub skeleton: String,
}

/// Checks and normalises a display name (already trimmed and bounded by the request reader).
///
/// # Errors
/// 422 `INVALID_DISPLAY_NAME` naming the character refused.
pub fn display_name(text: &str) -> Result<DisplayName> {
    let text = normalized(text);
    if let Some(c) = text.chars().find(|c| refused(*c)) {
        return Err(Error::Unprocessable {
            code: "INVALID_DISPLAY_NAME",
            message: format!(
                "`displayName` must not contain invisible, bidirectional-control or private-use characters (U+{:04X} found)",
                u32::from(c)
            ),
        });
    }
    let skeleton = skeleton(&text);
    Ok(DisplayName { text, skeleton })
}

/// `text` in NFC, the form display names are stored in.
pub fn normalized(text: &str) -> String {
    text.nfc().collect()
}

/// The UTS #39 skeleton of `text`, with case folded in between, so that neither case alone
/// nor a capital confusable with a small letter (`I` and `l`, `0` and `O`) makes a new name:
/// skeleton(lowercase(skeleton(NFC(text)))).
pub fn skeleton(text: &str) -> String {
    let first: String = confusable_skeleton(&normalized(text)).collect();
    let folded: String = first.chars().flat_map(char::to_lowercase).collect();
    confusable_skeleton(&folded).collect()
}

/// The refusal for a name that looks like another agent's.
pub fn taken() -> Error {
    Error::Conflict {
        code: "DISPLAY_NAME_TAKEN",
        message: "another agent's display name looks the same (the same characters, or characters that are confusable with them): choose another".into(),
    }
}

fn refused(c: char) -> bool {
    let u = u32::from(c);
    default_ignorable(u) || bidi_control(u) || private_use(u)
}

/// Unicode's Default_Ignorable_Code_Point set (DerivedCoreProperties): rendered as nothing.
fn default_ignorable(u: u32) -> bool {
    matches!(
        u,
        0x00AD
            | 0x034F
            | 0x061C
            | 0x115F..=0x1160
            | 0x17B4..=0x17B5
            | 0x180B..=0x180F
            | 0x200B..=0x200F
            | 0x202A..=0x202E
            | 0x2060..=0x206F
            | 0x3164
            | 0xFE00..=0xFE0F
            | 0xFEFF
            | 0xFFA0
            | 0xFFF0..=0xFFF8
            | 0x1BCA0..=0x1BCA3
            | 0x1D173..=0x1D17A
            | 0xE0000..=0xE0FFF
    )
}

/// Bidirectional formatting characters (UAX #9): embeddings, overrides, isolates, marks.
fn bidi_control(u: u32) -> bool {
    matches!(u, 0x061C | 0x200E | 0x200F | 0x202A..=0x202E | 0x2066..=0x2069)
}

/// Private-use code points: their look is whatever a font says.
fn private_use(u: u32) -> bool {
    matches!(u, 0xE000..=0xF8FF | 0xF0000..=0xFFFFD | 0x100000..=0x10FFFD)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_normalised_and_invisible_or_directional_characters_refused() {
        let composed = display_name("Cafe\u{301}").unwrap();
        assert_eq!(composed.text, "Caf\u{e9}");
        for bad in [
            "Ali\u{200B}ce",
            "evil\u{202E}txt",
            "a\u{2066}b",
            "soft\u{AD}hyphen",
            "pua\u{E000}",
            "tag\u{E0041}",
        ] {
            assert!(display_name(bad).is_err(), "{bad:?}");
        }
        assert!(display_name("Research Bot 2").is_ok());
        assert!(display_name("Ünïcödé 研究").is_ok());
    }

    #[test]
    fn look_alikes_share_a_skeleton() {
        assert_eq!(skeleton("paypal"), skeleton("p\u{430}ypal"));
        assert_eq!(skeleton("Research Bot"), skeleton("research bot"));
        assert_eq!(skeleton("Caf\u{e9}"), skeleton("Cafe\u{301}"));
        assert_ne!(skeleton("Research Bot"), skeleton("Research Bat"));
        assert_eq!(
            skeleton("PayPal"),
            skeleton("PayPaI"),
            "capital i and small L"
        );
        assert_eq!(skeleton("Google"), skeleton("G00gle"), "zeros and Os");
    }
}
