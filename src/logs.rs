//! What reaches the logs: every line, at every level, with the secrets bourse issues scrubbed.
//!
//! Two guards. The access log prints a request's target with the values of credential-bearing
//! query parameters replaced ([`redacted_target`]), whatever their value looks like (a PKCE
//! verifier has no prefix). And every line the process logs passes through [`Scrubbing`], which
//! replaces any secret of the kinds bourse mints (each starts with a known prefix, followed by
//! base64url) wherever it appears: in a query, an error message, a header echoed by a library.

use std::borrow::Cow;
use std::io::Write;
use std::sync::{Condvar, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::Duration;

use tracing::Metadata;
use tracing_subscriber::fmt::MakeWriter;

use crate::http::router::percent_decode_with;

/// Query parameter names whose values are credentials (compared without case, `_` or `-`, so
/// `apiKey`, `API-KEY` and `api_key` are one name).
const SECRET_PARAMETERS: [&str; 11] = [
    "apikey",
    "purchasetoken",
    "accesstoken",
    "refreshtoken",
    "code",
    "codeverifier",
    "clientsecret",
    "token",
    "idtoken",
    "password",
    "secret",
];

/// The prefixes of the secrets bourse mints: API keys, OAuth client secrets, access and refresh
/// tokens and codes, rail tokens, the operator key, x402 purchase tokens, checkout sessions.
/// Each is followed by base64url ([`crate::service::mint_secret`]).
pub const SECRET_PREFIXES: [&str; 9] = [
    "svc_live_",
    "bmcs_",
    "bmat_",
    "bmrt_",
    "bmac_",
    "rail_",
    "op_",
    "x402_",
    "cs_",
];

/// How many base64url characters must follow a prefix before the text is taken for a secret
/// (minted secrets carry 32 bytes, 43 characters; checkout sessions 24 bytes, 32): short words
/// such as `cs_x` or `op_code` stay readable.
const MIN_SECRET_TAIL: usize = 16;

/// Whether `name`, a query parameter's name as sent (percent-encoded or not), names a credential.
pub fn is_secret_parameter(name: &str) -> bool {
    let folded: String = percent_decode_with(name, true)
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .collect::<String>()
        .to_ascii_lowercase();
    SECRET_PARAMETERS.contains(&folded.as_str())
}

/// Which bytes begin one of [`SECRET_PREFIXES`].
const STARTS_A_PREFIX: [bool; 256] = {
    let mut table = [false; 256];
    let mut i = 0;
    while i < SECRET_PREFIXES.len() {
        table[SECRET_PREFIXES[i].as_bytes()[0] as usize] = true;
        i += 1;
    }
    table
};

/// `text` with every minted secret's tail replaced by `REDACTED` (its prefix kept, so a reader
/// still sees which kind was sent).
pub fn scrub(text: &str) -> Cow<'_, str> {
    let bytes = text.as_bytes();
    let tail = |from: usize| {
        bytes[from..]
            .iter()
            .take_while(|b| b.is_ascii_alphanumeric() || **b == b'_' || **b == b'-')
            .count()
    };
    let mut out: Option<String> = None;
    let mut copied = 0;
    let mut i = 0;
    while i < bytes.len() {
        // Most bytes start no prefix: one table look-up passes them (every log line is scrubbed).
        if !STARTS_A_PREFIX[usize::from(bytes[i])] {
            i += 1;
            continue;
        }
        // A secret starts a word: not inside a longer identifier.
        let starts_word = i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_');
        let prefix = starts_word
            .then(|| {
                SECRET_PREFIXES
                    .iter()
                    .find(|prefix| bytes[i..].starts_with(prefix.as_bytes()))
            })
            .flatten();
        let Some(prefix) = prefix else {
            i += 1;
            continue;
        };
        let start = i + prefix.len();
        let length = tail(start);
        if length < MIN_SECRET_TAIL {
            i = start;
            continue;
        }
        let out = out.get_or_insert_with(|| String::with_capacity(text.len()));
        out.push_str(&text[copied..start]);
        out.push_str("REDACTED");
        i = start + length;
        copied = i;
    }
    match out {
        None => Cow::Borrowed(text),
        Some(mut out) => {
            out.push_str(&text[copied..]);
            Cow::Owned(out)
        }
    }
}

/// The request target the access log prints: capabilities in paths (checkout sessions `cs_…`,
/// x402 purchase tokens, onboarding ids, inquiry ids) and credential-bearing query values are
/// replaced by `REDACTED`.
pub fn redacted_target(path: &str, query: Option<&str>) -> String {
    // The segment after `connect` (an onboarding id) or `inquiries` (an inquiry id, the
    // capability to its thread) is a capability too.
    let mut after_capability_root = false;
    let path = path
        .split('/')
        .map(|segment| {
            let capability =
                after_capability_root || segment.starts_with("cs_") || segment.starts_with("x402_");
            after_capability_root = segment == "connect" || segment == "inquiries";
            if capability && !segment.is_empty() {
                "REDACTED"
            } else {
                segment
            }
        })
        .collect::<Vec<_>>()
        .join("/");
    let Some(query) = query else {
        return path;
    };
    let redacted: Vec<String> = query
        .split('&')
        .map(|pair| match pair.split_once('=') {
            Some((key, _)) if is_secret_parameter(key) => format!("{key}=REDACTED"),
            _ => pair.to_owned(),
        })
        .collect();
    format!("{path}?{}", redacted.join("&"))
}

/// A log writer that scrubs each line before it reaches `W` (stderr): the formatter hands it one
/// whole event per write, so a secret is never split between two writes.
pub struct Scrubbing<W>(pub W);

impl<W: Write> Write for Scrubbing<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match std::str::from_utf8(buf) {
            Ok(text) => self.0.write_all(scrub(text).as_bytes())?,
            Err(_) => self
                .0
                .write_all(scrub(&String::from_utf8_lossy(buf)).as_bytes())?,
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

/// The process's logs: every line scrubbed, then written to stderr. Access lines (target
/// `access`, one per request) are held and written together, once [`HELD_BYTES`] have gathered
/// or [`HOLD`] after the first of them: one `write` per request was a twentieth of a message
/// send's CPU. Every other line is written at once, after whatever was held, so lines keep their
/// order. A stop writes out what is held ([`flush`]), and so does a panic before its message
/// ([`flush_before_panics`]); a process killed outright (SIGKILL) loses at most the access lines
/// of its last [`HOLD`].
pub struct Sink;

impl<'a> MakeWriter<'a> for Sink {
    type Writer = Scrubbing<Line>;

    fn make_writer(&'a self) -> Self::Writer {
        Scrubbing(Line { held: false })
    }

    fn make_writer_for(&'a self, meta: &Metadata<'_>) -> Self::Writer {
        Scrubbing(Line {
            held: meta.target() == "access",
        })
    }
}

/// Most bytes of access lines held before they are written.
pub const HELD_BYTES: usize = 32 * 1024;
/// Longest an access line is held.
pub const HOLD: Duration = Duration::from_millis(100);

static HELD: Mutex<Vec<u8>> = Mutex::new(Vec::new());
/// Told when the first line is held, to the thread that writes it out [`HOLD`] later.
static HELD_FIRST: Condvar = Condvar::new();
/// Whether that thread runs (lines are written at once if it could not start).
static WRITES_LATER: OnceLock<bool> = OnceLock::new();

/// One log line on its way to stderr (the formatter writes each line in one `write`).
pub struct Line {
    held: bool,
}

impl Write for Line {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let mut held = lock_held();
        if self.held && *WRITES_LATER.get_or_init(start_writing_later) {
            if held.is_empty() {
                HELD_FIRST.notify_one();
            }
            held.extend_from_slice(buf);
            if held.len() >= HELD_BYTES {
                write_out(&mut held)?;
            }
        } else {
            // What was held goes first; this line is written even if that write failed.
            let held_written = write_out(&mut held);
            std::io::stderr().write_all(buf)?;
            held_written?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Writes out the access lines held (at a stop, before the process exits).
pub fn flush() {
    let _ = write_out(&mut lock_held());
}

/// Makes a panic write out the access lines held before its message (which the default hook
/// writes straight to stderr), so they keep their order and a panic that ends the process does
/// not lose them. A panic while this thread holds the lines (inside a write) leaves them held.
pub fn flush_before_panics() {
    let report = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if let Ok(mut held) = HELD.try_lock() {
            let _ = write_out(&mut held);
        }
        report(info);
    }));
}

fn lock_held() -> MutexGuard<'static, Vec<u8>> {
    HELD.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Writes `held` to stderr and empties it (even when the write fails: a closed stderr must not
/// make the buffer grow).
fn write_out(held: &mut Vec<u8>) -> std::io::Result<()> {
    if held.is_empty() {
        return Ok(());
    }
    let written = std::io::stderr().write_all(held);
    held.clear();
    if held.capacity() > 4 * HELD_BYTES {
        held.shrink_to(HELD_BYTES);
    }
    written
}

/// Starts the thread that writes held lines out [`HOLD`] after the first of them; it sleeps
/// while none is held.
fn start_writing_later() -> bool {
    std::thread::Builder::new()
        .name("bourse-log".into())
        .spawn(|| {
            loop {
                let mut held = lock_held();
                while held.is_empty() {
                    held = HELD_FIRST
                        .wait(held)
                        .unwrap_or_else(PoisonError::into_inner);
                }
                drop(held);
                std::thread::sleep(HOLD);
                flush();
            }
        })
        .is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capabilities_in_paths_never_reach_the_log() {
        for (path, kept) in [
            (
                "/sandbox/checkout/cs_secret/pay",
                "/sandbox/checkout/REDACTED/pay",
            ),
            (
                "/api/svcpay/receipts/x402_secret/verify",
                "/api/svcpay/receipts/REDACTED/verify",
            ),
            (
                "/api/sandbox/connect/secret/complete",
                "/api/sandbox/connect/REDACTED/complete",
            ),
            ("/sell/connect/secret", "/sell/connect/REDACTED"),
            (
                "/api/inquiries/0b3c2f4e-1111-4222-8333-444455556666/thread",
                "/api/inquiries/REDACTED/thread",
            ),
            (
                "/api/operator/inquiries/0b3c2f4e-1111-4222-8333-444455556666/reply",
                "/api/operator/inquiries/REDACTED/reply",
            ),
            (
                "/api/marketplace/listings/abc",
                "/api/marketplace/listings/abc",
            ),
        ] {
            assert_eq!(redacted_target(path, None), kept);
        }
    }

    #[test]
    fn api_keys_never_reach_the_log() {
        let target = redacted_target(
            "/api/x",
            Some("a=1&api_key=svc_live_secret&api%5Fkey=svc_live_2"),
        );
        assert!(
            !target.contains("secret") && !target.contains("svc_live_2"),
            "{target}"
        );
        assert!(target.contains("a=1"));
    }

    #[test]
    fn every_credential_parameter_is_redacted_in_any_spelling() {
        let target = redacted_target(
            "/oauth/token",
            Some(
                "code=abc&code_verifier=v&API-KEY=k&apiKey=k&access_token=a&refresh%5Ftoken=r\
                 &client_secret=s&token=t&purchase_token=p&limit=5&q=code",
            ),
        );
        assert_eq!(
            target,
            "/oauth/token?code=REDACTED&code_verifier=REDACTED&API-KEY=REDACTED&apiKey=REDACTED\
             &access_token=REDACTED&refresh%5Ftoken=REDACTED&client_secret=REDACTED&token=REDACTED\
             &purchase_token=REDACTED&limit=5&q=code"
        );
    }

    #[test]
    fn minted_secrets_are_scrubbed_wherever_they_appear() {
        let (key, _) = crate::service::mint_secret("svc_live_");
        let line = format!(
            "error: no agent has key {key}; Bearer bmat_{}",
            "A".repeat(43)
        );
        let scrubbed = scrub(&line);
        assert!(!scrubbed.contains(&key[9..]), "{scrubbed}");
        assert_eq!(
            scrubbed,
            "error: no agent has key svc_live_REDACTED; Bearer bmat_REDACTED"
        );
        // Words that only look like a prefix, and short tails, stay.
        for text in [
            "docs_x",
            "op_code",
            "cs_abc",
            "unit_cs_AAAAAAAAAAAAAAAAAAAA",
            "plain",
        ] {
            assert_eq!(scrub(text), text);
        }
        assert!(matches!(scrub("nothing here"), Cow::Borrowed(_)));
    }

    #[test]
    fn the_writer_scrubs_what_it_passes_on() {
        let mut sink = Scrubbing(Vec::new());
        let secret = format!("x402_{}", "b".repeat(32));
        write!(sink, "token {secret} end").unwrap();
        assert_eq!(
            String::from_utf8(sink.0).unwrap(),
            "token x402_REDACTED end"
        );
    }
}
