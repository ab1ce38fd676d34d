//! ARCHITECTURE.md stays a map a newcomer reads in ten minutes, and the map names only what
//! exists.
//!
//! Every Rust path the document cites in backquotes (`a::b`, `a::b::c`, …, a trailing `()`
//! allowed) must resolve: its leading segments name a module of the crate (`src/a.rs`,
//! `src/a/mod.rs`, a nested `mod b { … }`, a `#[path]` module, `crate::` for the root) or of the
//! black-box test crate (`it::…`, under `tests/it/`), and its last segment an item declared in
//! that module (fn, struct, enum, trait, const, static, type, union, mod, `macro_rules!`, a
//! `pub use`), or, after a type, an enum variant or an associated fn, const or type of an `impl`
//! (or trait) in the type's module. Paths into the crates listed in [`EXTERNAL_CRATES`] are not
//! checked. The sources are read with a small lexer (comments and literals blanked, braces
//! counted), not compiled, so a name inside a macro's body is not seen.
//!
//! Every backquoted repository path (`src/…`, `tests/…`, `docs/…`, …) must exist, every
//! `docs/*.md` link must name a file, and every file in `docs/` must be linked from the map.

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

mod resolve;
use resolve::*;

/// The map's size limits: about ten minutes of reading.
const MAX_LINES: usize = 400;
const MAX_WORDS: usize = 5_000;

/// Crates outside this repository that the map may cite by path; their paths are not checked.
const EXTERNAL_CRATES: &[&str] = &[
    "std",
    "core",
    "alloc",
    "tokio",
    "hyper",
    "hyper_util",
    "http_body_util",
    "rusqlite",
    "r2d2",
    "r2d2_sqlite",
    "serde",
    "serde_json",
    "tracing",
    "tracing_subscriber",
    "clap",
    "ureq",
    "uuid",
    "jiff",
    "sha2",
    "base64",
    "ed25519_compact",
    "getrandom",
    "mimalloc",
    "libmimalloc_sys",
    "rust_embed",
];

/// Where a backquoted repository path may start.
const REPO_PREFIXES: &[&str] = &[
    "src/",
    "tests/",
    "examples/",
    "assets/",
    "docs/",
    ".ci/",
    ".cargo/",
];

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn architecture() -> String {
    fs::read_to_string(root().join("ARCHITECTURE.md")).expect("ARCHITECTURE.md is readable")
}

#[test]
fn the_map_is_at_most_400_lines_and_5000_words() {
    let text = architecture();
    let lines = text.lines().count();
    let words = text.split_whitespace().count();
    assert!(
        lines <= MAX_LINES && words <= MAX_WORDS,
        "ARCHITECTURE.md is {lines} lines and {words} words; the map keeps to {MAX_LINES} lines \
         and {MAX_WORDS} words (move detail into a docs/ file it links)"
    );
}

#[test]
fn every_rust_path_the_map_cites_resolves() {
    let text = architecture();
    let mut crates = Crates::default();
    let mut unresolved = BTreeSet::new();
    let mut checked = 0;
    for span in code_spans(&text) {
        for path in rust_paths(&span) {
            let segments: Vec<&str> = path.split("::").collect();
            match crates.resolve(&segments) {
                Resolution::Found => checked += 1,
                Resolution::External => {}
                Resolution::Missing => {
                    unresolved.insert(path);
                }
            }
        }
    }
    assert!(
        unresolved.is_empty(),
        "ARCHITECTURE.md cites {} path(s) that name nothing in src/ or tests/it/ \
         (paths start at the crate root, `it::` for tests/it/, or an external crate):\n  {}",
        unresolved.len(),
        unresolved.into_iter().collect::<Vec<_>>().join("\n  ")
    );
    assert!(checked > 0, "no path was checked: the scanner found none");
}

#[test]
fn every_repository_path_and_docs_link_in_the_map_exists() {
    let text = architecture();
    let mut missing = BTreeSet::new();
    for span in code_spans(&text) {
        let is_path = REPO_PREFIXES.iter().any(|p| span.starts_with(p))
            && span
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "_./-".contains(c));
        if is_path && !root().join(&span).exists() {
            missing.insert(span);
        }
    }
    let links = docs_links(&text);
    for link in &links {
        if !root().join(link).is_file() {
            missing.insert(link.clone());
        }
    }
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md names files that do not exist:\n  {}",
        missing.into_iter().collect::<Vec<_>>().join("\n  ")
    );
    let mut orphans = Vec::new();
    for entry in fs::read_dir(root().join("docs")).expect("docs/ exists") {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        if name.ends_with(".md") && !links.contains(&format!("docs/{name}")) {
            orphans.push(name);
        }
    }
    assert!(
        orphans.is_empty(),
        "docs/ files the map does not link: {orphans:?}"
    );
}

/// The targets of `](docs/….md)` links, anchors dropped.
fn docs_links(text: &str) -> BTreeSet<String> {
    let mut links = BTreeSet::new();
    for (at, _) in text.match_indices("](docs/") {
        let rest = &text[at + 2..];
        let end = rest.find(')').unwrap_or(rest.len());
        let target = rest[..end].split('#').next().unwrap();
        if target.ends_with(".md") {
            links.insert(target.to_owned());
        }
    }
    links
}

/// The inline code spans of a Markdown text, fenced blocks left out.
fn code_spans(text: &str) -> Vec<String> {
    let mut prose = String::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if !fenced {
            prose.push_str(line);
            prose.push('\n');
        }
    }
    prose
        .split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect()
}

fn is_ident_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_'
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// Every `a::b(::c…)` in a code span.
fn rust_paths(span: &str) -> Vec<String> {
    let bytes = span.as_bytes();
    let mut paths = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let starts = is_ident_start(bytes[i])
            && (i == 0 || !(is_ident(bytes[i - 1]) || bytes[i - 1] == b':'));
        if !starts {
            i += 1;
            continue;
        }
        let start = i;
        let mut segments = 0;
        let mut end = i;
        loop {
            let mut j = end;
            if j >= bytes.len() || !is_ident_start(bytes[j]) {
                break;
            }
            while j < bytes.len() && is_ident(bytes[j]) {
                j += 1;
            }
            segments += 1;
            end = j;
            if bytes[end..].starts_with(b"::")
                && end + 2 < bytes.len()
                && is_ident_start(bytes[end + 2])
            {
                end += 2;
            } else {
                break;
            }
        }
        if segments >= 2 {
            paths.push(span[start..end].to_owned());
        }
        i = end.max(i + 1);
    }
    paths
}

#[test]
fn the_scanner_sees_declarations_and_not_comments_or_strings() {
    let source = r##"
        //! `fn in_doc()` is prose.
        pub mod inner { pub struct Deep; }
        mod file;
        pub(crate) use other::{Shown, nested::Alias as Renamed};
        const fn constant_fn() {}
        static mut COUNTER: u32 = 0;
        macro_rules! ours { () => {} }
        fn f<'a>(x: &'a str) -> char { let _ = "fn in_string()"; let _ = r#"fn raw()"#; 'x' }
        pub enum Kind { #[default] First, Second(u8), Third { x: u8 } = 3 }
        impl<'a, T: Into<u8>> std::fmt::Display for Wrapper<'a, T> where T: Clone { fn fmt() {} }
        impl Store { pub const LIMIT: usize = 1; pub async fn read(&self) { fn hidden() {} } }
        trait Face { fn name(&self); }
    "##;
    let declared = declare(&lex(&blank(source)));
    let items: Vec<&str> = declared.items.iter().map(String::as_str).collect();
    assert_eq!(
        items,
        [
            "COUNTER",
            "Face",
            "Kind",
            "Renamed",
            "Shown",
            "constant_fn",
            "f",
            "file",
            "inner",
            "ours",
        ]
    );
    let members = |name: &str| -> Vec<String> { declared.members[name].iter().cloned().collect() };
    assert_eq!(members("Kind"), ["First", "Second", "Third"]);
    assert_eq!(members("Wrapper"), ["fmt"]);
    assert_eq!(members("Store"), ["LIMIT", "read"]);
    assert_eq!(members("Face"), ["name"]);
    assert!(declared.inline.contains_key("inner"));
    assert_eq!(declared.files, BTreeSet::from(["file".to_owned()]));
    assert_eq!(
        rust_paths("store::Store::read() then `Route::auth()` and http://x, a::b::<T>"),
        ["store::Store::read", "Route::auth", "a::b"]
    );
}

#[test]
fn paths_resolve_into_modules_files_nested_modules_and_impls() {
    let mut crates = Crates::default();
    for path in [
        "store::Store::read",
        "request::Op::input_schema",
        "http::router::resolve",
        "operations::Operation",
        "operations::Operation::routes",
        "operations::Auth::Public",
        "operations::tests::every_agent_or_operator_operation_is_unsigned_and_every_public_one_signed",
        "store::tests::newer_schema_is_refused",
        "crate::bind",
        "it::support::TestServer",
        "invariants::no_sql_outside_the_store",
    ] {
        let segments: Vec<&str> = path.split("::").collect();
        assert_eq!(crates.resolve(&segments), Resolution::Found, "{path}");
    }
    for path in [
        "store::STEPS",
        "listings::index_rows",
        "store::listings::index_rows",
        "Route::auth",
    ] {
        let segments: Vec<&str> = path.split("::").collect();
        assert_eq!(crates.resolve(&segments), Resolution::Missing, "{path}");
    }
    assert_eq!(
        crates.resolve(&["std", "sync", "Arc"]),
        Resolution::External
    );
}
