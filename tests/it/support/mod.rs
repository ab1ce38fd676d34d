//! Test harness: an in-process server on port 0 with a temp data dir and a manual clock, the
//! real binary for CLI-level checks, a small blocking HTTP client, and the helpers tests share:
//! status assertions that show the body (`Resp::ok`, `Resp::expect`), a bounded `wait_until`,
//! waiting for a background worker's pass, and paying a sandbox checkout.

mod binary;
#[path = "../../../examples/common/cargo_env.rs"]
pub mod cargo_env;
pub mod catalog;
pub mod console;
mod http;
mod market;
pub mod mcp;
pub mod oauth;
mod server;
pub mod stripe;
mod tools;
mod wait;

pub use binary::{BinServer, bourse, example, release_binary};
pub use http::{Client, Resp, form_encode};
pub use market::{Party, checkout_session};
pub use server::TestServer;
pub use tools::{skip_or_fail, skip_unless_ci};
pub use wait::{WAIT, all_at_once, exit_within, wait_until};
