//! Architecture invariants, checked by reading the sources under `src/`:
//!
//! - SQL lives in `store`: no SQL text in a string literal (upper-case keywords anywhere, or a
//!   statement in any letter case: `select … from t`, `insert into t`, `pragma x`, …) and no
//!   call that runs a statement or holds a transaction (`prepare`, `execute`, `query_row`,
//!   `query_and_then`, `pragma_update`, `backup`, `transaction`, `query` with statement
//!   parameters, …) in any file outside `src/store/` (these files excepted).
//! - `service` never imports a face (`crate::api`, `crate::mcp`, `crate::pages`,
//!   `crate::server`, `crate::http`) or hyper.
//! - `store` never imports `crate::service` or `crate::request` (nor a face), and neither
//!   `store` nor `crypto` imports hyper; `crypto` never imports rusqlite.
//! - The `agents` table is written only by `store::agents`.
//! - The service modules form no import cycle, file by file; nor do the service domains
//!   (`service/<domain>`), where `service/mod.rs`, the `App`, is the root: a domain that
//!   reaches another through a field or method of `App` imports it (see `graph`).
//! - Services take typed requests (`crate::request`), never raw request JSON read field by field.
//!
//! Paths are read absolute (`super::super::x`, `self::x`, `use` bindings, a file's child
//! modules), so a rule about `crate::service` is not dodged by writing the path another way.

mod graph;
mod lexer;
mod sql;

use std::path::{Path, PathBuf};

use graph::{ROOT, cycles, domain_graph, service_graph};
use lexer::{Scanned, absolute_paths, find_word, line_of, scan, without_test_modules};
use sql::{sql_findings, writes_agents};

/// Crates of the HTTP stack.
const HTTP_CRATES: &[&str] = &["hyper", "hyper_util", "http_body_util"];

/// Crates of the database.
const DATABASE_CRATES: &[&str] = &["rusqlite", "r2d2", "r2d2_sqlite"];

/// The faces: what speaks HTTP, REST, MCP or HTML to the outside and calls the services.
const FACES: &[&str] = &["api", "mcp", "a2a", "pages", "server", "http"];

/// Every `.rs` file under `dir`, sorted.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).expect("a readable source directory") {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// `src/`-relative path with `/` separators.
fn relative(path: &Path) -> String {
    let rel = path.strip_prefix(src()).expect("a file under src/");
    rel.components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/")
}

/// Every source file under `src/`: (path relative to `src/`, scanned).
fn sources() -> Vec<(String, Scanned)> {
    rust_files(&src())
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path).expect("a readable source file");
            (relative(&path), scan(&text))
        })
        .collect()
}

/// Whether `path` is one of these files (whose fixtures hold SQL on purpose).
fn is_invariants(path: &str) -> bool {
    path == "invariants.rs" || path.starts_with("invariants/")
}

/// Lines where the code of `file` uses one of `crates` as a path root, or names a path into one
/// of the crate's top-level `modules`, however the path is written.
fn import_findings(file: &str, code: &str, crates: &[&str], modules: &[&str]) -> Vec<String> {
    let mut found = Vec::new();
    for name in crates {
        let mut at = 0;
        while let Some(end) = find_word(code, name, at) {
            let start = end - name.len();
            // `crate::x::hyper` would be a path of ours, not the crate.
            if !code[..start].ends_with("::") {
                found.push((line_of(code, start), format!("uses `{name}`")));
            }
            at = end;
        }
    }
    for (at, path) in absolute_paths(file, code) {
        if let Some(root) = path.first().filter(|r| modules.contains(&r.as_str())) {
            found.push((line_of(code, at), format!("imports `crate::{root}`")));
        }
    }
    found.sort();
    found.dedup();
    found
        .into_iter()
        .map(|(line, what)| format!("{line}: {what}"))
        .collect()
}

/// Every `src/file:line: finding` of `rule` over the files `applies` to.
fn findings_in(
    applies: impl Fn(&str) -> bool,
    rule: impl Fn(&str, &Scanned) -> Vec<String>,
) -> Vec<String> {
    sources()
        .iter()
        .filter(|(path, _)| applies(path))
        .flat_map(|(path, scanned)| {
            rule(path, scanned)
                .into_iter()
                .map(move |f| format!("src/{path}:{f}"))
        })
        .collect()
}

/// Fails naming every `file:line: finding`.
fn assert_none(rule: &str, findings: Vec<String>) {
    assert!(findings.is_empty(), "{rule}:\n  {}", findings.join("\n  "));
}

#[test]
fn no_sql_outside_the_store() {
    let findings = findings_in(
        |path| !path.starts_with("store/") && !is_invariants(path),
        |_, scanned| sql_findings(scanned),
    );
    assert_none(
        "SQL outside src/store/ (move the statement into a store module and call it)",
        findings,
    );
}

#[test]
fn agent_rows_are_written_only_by_store_agents() {
    let findings = findings_in(
        |path| path != "store/agents.rs" && !is_invariants(path),
        |_, scanned| {
            scanned
                .strings
                .iter()
                .filter(|(_, text)| writes_agents(text))
                .map(|(line, _)| format!("{line}: writes the agents table"))
                .collect()
        },
    );
    assert_none(
        "agent rows change only through src/store/agents.rs (whose callers keep the known-agents cache true)",
        findings,
    );
}

/// A service is called by the faces, never the other way: it sees no hyper type and no module
/// of a face (a shared type goes down into `service` or `request`).
#[test]
fn service_never_imports_a_face_or_hyper() {
    let findings = findings_in(
        |path| path.starts_with("service/"),
        |path, scanned| import_findings(path, &scanned.code, HTTP_CRATES, FACES),
    );
    assert_none("service imports a face", findings);
}

/// Services take typed requests (`crate::request`), never raw request JSON read field by field:
/// the reading of requests lives at the edges, in one declaration per operation.
#[test]
fn services_take_typed_requests_never_args() {
    let findings = findings_in(
        |path| path.starts_with("service/"),
        |path, scanned| {
            let code = without_test_modules(&scanned.code);
            import_findings(path, &code, &[], &["args"])
        },
    );
    assert_none("a service reads raw arguments", findings);
}

/// The store is below the services and the requests: what both need goes down into the store.
#[test]
fn store_never_imports_service_or_request() {
    let modules: Vec<&str> = ["service", "request"]
        .iter()
        .chain(FACES)
        .copied()
        .collect();
    let findings = findings_in(
        |path| path.starts_with("store/"),
        |path, scanned| import_findings(path, &scanned.code, &[], &modules),
    );
    assert_none("the store imports a layer above it", findings);
}

#[test]
fn store_and_crypto_never_import_hyper_and_crypto_never_imports_rusqlite() {
    let findings = findings_in(
        |path| path.starts_with("store/") || path.starts_with("crypto/"),
        |path, scanned| {
            let mut crates = HTTP_CRATES.to_vec();
            if path.starts_with("crypto/") {
                crates.extend_from_slice(DATABASE_CRATES);
            }
            import_findings(path, &scanned.code, &crates, &["http"])
        },
    );
    assert_none("a layer imports what it must not", findings);
}

#[test]
fn service_modules_form_no_import_cycle() {
    let graph = service_graph(&sources());
    // The graph sees through the domain folders (a check that the test checks something).
    assert!(
        graph["commerce/checkout"].contains("commerce/rails/stripe")
            && graph["commerce/rails/stripe"].contains("commerce/settlement"),
        "{graph:?}"
    );
    let found = cycles(&graph);
    assert_none("import cycles among src/service modules", found);
}
/// The public service functions that answer `serde_json::Value`: each hands back an outside
/// party's JSON as it is (Stripe's API, x402's wire bodies) or JSON that is the content itself.
/// Every other service function answers a typed struct; JSON is made at the faces.
const VALUE_ANSWERS: &[&str] = &[
    // Stripe's API answers, read by the Stripe rail.
    "service/commerce/rails/stripe/client.rs: get",
    "service/commerce/rails/stripe/client.rs: post",
    // x402's wire bodies: the buyer's decoded payment, the requirements bourse sends, the
    // facilitator's answers.
    "service/commerce/rails/x402/wire.rs: decode",
    "service/commerce/rails/x402/wire.rs: facilitate",
    "service/commerce/rails/x402/wire.rs: get_json",
    "service/commerce/rails/x402/wire.rs: requirements",
];

/// Public service functions whose signature answers `Value`, as `path: name`.
fn value_answers(path: &str, code: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut at = 0;
    while let Some(end) = find_word(code, "fn", at) {
        at = end;
        let mut before = code[..end - 2].trim_end();
        for qualifier in ["async", "const", "unsafe"] {
            before = before.strip_suffix(qualifier).unwrap_or(before).trim_end();
        }
        let public = before.ends_with("pub")
            || before.ends_with(')') && before[before.rfind("pub(").unwrap_or(0)..].len() < 16;
        if !public {
            continue;
        }
        let rest = &code[end..];
        let name: String = rest
            .trim_start()
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let signature = &rest[..rest.find(['{', ';']).unwrap_or(rest.len())];
        if let Some((_, answer)) = signature.rsplit_once("->")
            && find_word(answer, "Value", 0).is_some()
        {
            found.push(format!("{path}: {name}"));
        }
    }
    found
}

/// Services answer typed structs (`serde::Serialize`), never `serde_json::Value`, except the few
/// listed in [`VALUE_ANSWERS`]: pages, MCP and other services read fields, never string keys.
#[test]
fn services_answer_typed_structs() {
    let mut found: Vec<String> = sources()
        .iter()
        .filter(|(path, _)| path.starts_with("service/"))
        .flat_map(|(path, scanned)| value_answers(path, &without_test_modules(&scanned.code)))
        .collect();
    found.sort();
    let mut listed: Vec<String> = VALUE_ANSWERS.iter().map(|s| (*s).to_owned()).collect();
    listed.sort();
    assert_eq!(
        found, listed,
        "public service functions answering serde_json::Value (answer a typed struct, or list an outside party's JSON in VALUE_ANSWERS)"
    );
}

/// The domains import one another without a loop: `commerce` sells `catalog`'s listings,
/// `disclosure` reports on the sales; what two domains share goes below both (`taxonomy`,
/// `rail`, `ledger`).
#[test]
fn service_domains_form_no_import_cycle() {
    let graph = domain_graph(&sources());
    // The graph sees imports, and what a domain reaches through the App (a check that the test
    // checks something).
    assert!(
        graph["commerce"].contains("catalog")
            && graph[ROOT].contains("catalog")
            && graph["catalog"].contains("rail"),
        "{graph:?}"
    );
    let found = cycles(&graph);
    let edges: Vec<String> = graph
        .iter()
        .map(|(node, to)| {
            format!(
                "{node} -> {}",
                to.iter().cloned().collect::<Vec<_>>().join(", ")
            )
        })
        .collect();
    assert!(
        found.is_empty(),
        "import cycles among src/service domains (move what one needs of the other to its owner, or below both):\n  {}\nthe graph:\n  {}",
        found.join("\n  "),
        edges.join("\n  ")
    );
}

mod scanner {
    use super::*;

    #[test]
    fn value_answers_are_public_functions_whose_answer_names_value() {
        let code = "pub async fn a(x: Value) -> Result<Value> {}\n\
                    pub(crate) fn b() -> Value {}\n\
                    fn c() -> Value {}\n\
                    pub fn d(v: Value) -> Result<Typed> {}\n\
                    pub const fn e() -> Option<serde_json::Value>;\n";
        assert_eq!(
            value_answers("service/x.rs", code),
            ["service/x.rs: a", "service/x.rs: b", "service/x.rs: e"]
        );
    }
    use crate::invariants::graph::{domain_graph, service_graph};
    use crate::invariants::lexer::module_paths;
    use crate::invariants::sql::is_sql;

    #[test]
    fn sql_is_seen_in_literals_and_calls_but_not_in_comments_or_prose() {
        let scanned = scan(concat!(
            "// SELECT x FROM t in a comment\n",
            "/* DELETE FROM t /* nested */ UPDATE t SET x = 1 */\n",
            "let a = \"SELECT id FROM agents\";\n",
            "let b = r#\"INSERT OR IGNORE INTO t (k) VALUES (\"q\")\"#;\n",
            "let c = '\"'; let d = \"DELETE is 405\"; let e = 'x';\n",
            "fn f<'a>(x: &'a str) {}\n",
            "let g = \"a \\\" PRAGMA user_version\";\n",
            // Lines 9 and 10 are split at each call so that a plain text search of the
            // repository for SQL call sites does not count this fixture as one.
            "conn\n    .prepare_cached",
            "(\"x\")?.execute",
            "(p)?;\n",
            "let h = \"call .execute",
            "( in a string\";\n",
            "let i = \"please UPDATE your settings\";\n",
        ));
        let found = sql_findings(&scanned);
        assert_eq!(
            found,
            [
                "3: SQL text \"SELECT id FROM agents\"",
                "4: SQL text \"INSERT OR IGNORE INTO t (k) VALUES (\\\"q\\\")\"",
                "7: SQL text \"a \\\\\\\" PRAGMA user_version\"",
                "9: calls `execute`",
                "9: calls `prepare_cached`",
            ]
        );
    }

    #[test]
    fn sql_in_any_letter_case_is_seen_by_its_shape_and_prose_is_not() {
        for sql in [
            "select id from listings where seller_id = ?1",
            "  Select count(*)\n  From agents",
            "insert or ignore into t (k) values (?1)",
            "replace into settings (k, v) values (?1, ?2)",
            "update agents set x = 1",
            "update main.listings set x = 1",
            "delete from purchases where id = ?1",
            "create unique index if not exists i on t (x)",
            "create table t (x)",
            "alter table t add column y",
            "drop trigger t_ai",
            "pragma journal_mode = wal",
            "pragma main.user_version",
            "PRAGMA foreign_keys",
            "with recent as (select id from ledger) select * from recent",
            "explain query plan select x from t",
            "vacuum into '/tmp/copy.db'",
            "savepoint before_write",
            "release savepoint before_write",
            "begin immediate",
            "x = 1; delete from t",
            "exists (select 1 from t)",
        ] {
            assert!(is_sql(sql), "{sql:?} is SQL");
        }
        for prose in [
            "please update your settings",
            "delete is refused on this route",
            "insert the key into your configuration",
            "pragma",
            "no-cache",
            "select one of: checkout, card",
            "update the listing, then set its price",
            "a savepoint is kept",
            "begin here",
            "vacuum cleaner",
            "drop the price",
            "create an account",
            "with care",
        ] {
            assert!(!is_sql(prose), "{prose:?} is prose");
        }
    }

    #[test]
    fn statement_calls_are_seen_but_methods_of_ours_named_alike_are_not() {
        // Each call is split from its parenthesis, so that a plain text search of the
        // repository for SQL call sites does not count this fixture as one.
        let scanned = scan(concat!(
            "let rows = stmt.query",
            "(params![id])?;\n",
            "let rows = stmt.query",
            "([])?;\n",
            "let rows = stmt.query",
            "((a, b))?;\n",
            "conn.query_and_then",
            "(\"x\", [], f)?;\n",
            "conn.query_row_and_then",
            "(\"x\", [], f)?;\n",
            "conn.pragma_update",
            "(None, \"journal_mode\", \"wal\")?;\n",
            "conn.pragma_query_value",
            "(None, \"user_version\", f)?;\n",
            "src.backup",
            "(DatabaseName::Main, path, None)?;\n",
            "let tx = conn.transaction",
            "()?;\n",
            "let sp = tx.savepoint",
            "()?;\n",
            "let q = ctx.query",
            "(\"limit\");\n",
            "let q = uri.query",
            "();\n",
            "let (seqs, total) = index.query",
            "(&conn, &search)?;\n",
            "app.counters.query",
            "(querier);\n",
            "// conn.backup",
            "(x) in a comment\n",
        ));
        let found = sql_findings(&scanned);
        assert_eq!(
            found,
            [
                "1: calls `query`",
                "2: calls `query`",
                "3: calls `query`",
                "4: calls `query_and_then`",
                "5: calls `query_row_and_then`",
                "6: calls `pragma_update`",
                "7: calls `pragma_query_value`",
                "8: calls `backup`",
                "9: calls `transaction`",
                "10: calls `savepoint`",
            ]
        );
    }

    #[test]
    fn writes_to_the_agents_table_are_recognised() {
        assert!(writes_agents("UPDATE agents SET x = 1"));
        assert!(writes_agents(
            "INSERT OR IGNORE INTO agents(id) VALUES (?1)"
        ));
        assert!(writes_agents("DELETE\n FROM agents WHERE id = ?1"));
        assert!(!writes_agents("SELECT id FROM agents"));
        assert!(!writes_agents("UPDATE listings SET seller_reputation = ?2"));
    }

    #[test]
    fn nested_use_trees_are_expanded_into_paths() {
        let paths = module_paths(
            "use crate::service::{App, messaging::{callbacks, message::x}, identity::agents};",
            "crate::service::",
        );
        let joined: Vec<String> = paths.iter().map(|(_, p)| p.join("::")).collect();
        assert_eq!(
            joined,
            [
                "App",
                "messaging::callbacks",
                "messaging::message::x",
                "identity::agents"
            ]
        );
    }

    #[test]
    fn paths_are_made_absolute_however_they_are_written() {
        let code = scan(concat!(
            "mod child;\n",
            "use super::super::api::x;\n",
            "use self::child::y;\n",
            "use crate::store::{self as db, Store};\n",
            "use commerce::rails::stripe::client as stripe_client;\n",
            "fn f() -> Store { child::z(); stripe_client::go(); db::open() }\n",
        ))
        .code;
        let mut paths: Vec<String> = absolute_paths("service/catalog/mod.rs", &code)
            .into_iter()
            .map(|(_, p)| p.join("::"))
            .collect();
        paths.sort();
        paths.dedup();
        assert_eq!(
            paths,
            [
                "api::x",
                "service::catalog::child::y",
                "service::catalog::child::z",
                "store::Store",
                "store::open",
            ]
        );
    }

    #[test]
    fn imports_are_seen_in_code_only() {
        let code = scan(concat!(
            "//! never sees hyper types\n",
            "use crate::{error::Error, http::assets};\n",
            "use crate::store::hyper;\n",
            "fn f() -> hyper::Response<()> { make(\"hyper\") }\n",
        ))
        .code;
        assert_eq!(
            import_findings("service/x.rs", &code, HTTP_CRATES, &["http"]),
            ["2: imports `crate::http`", "4: uses `hyper`"]
        );
    }

    #[test]
    fn a_service_naming_a_face_is_seen_however_the_path_is_written() {
        let code = scan(concat!(
            "//! rendered by `crate::pages`\n",
            "use crate::{api::reply, error::Error};\n",
            "use super::super::super::mcp::tools;\n",
            "fn f() { crate::server::stop(); let s = \"crate::http::x\"; }\n",
            "use crate::service::pages;\n",
        ))
        .code;
        assert_eq!(
            import_findings("service/catalog/view.rs", &code, HTTP_CRATES, FACES),
            [
                "2: imports `crate::api`",
                "3: imports `crate::mcp`",
                "4: imports `crate::server`",
            ]
        );
    }

    #[test]
    fn a_store_naming_a_service_or_a_request_is_seen() {
        let code = scan(concat!(
            "//! called by `crate::service::catalog`\n",
            "use crate::service::App;\n",
            "use super::super::request::catalog::NewListing;\n",
            "use crate::store::requests;\n",
            "fn f(x: crate::request::Page) -> &'static str { \"crate::service\" }\n",
        ))
        .code;
        assert_eq!(
            import_findings("store/listings.rs", &code, &[], &["service", "request"]),
            [
                "2: imports `crate::service`",
                "3: imports `crate::request`",
                "5: imports `crate::request`",
            ]
        );
    }

    #[test]
    fn the_service_graph_follows_super_and_crate_paths_and_finds_cycles() {
        let file = |path: &str, text: &str| (path.to_owned(), scan(text));
        let files = vec![
            file("service/mod.rs", "pub mod a; use self::a::X;"),
            file(
                "service/a.rs",
                "use super::{App, b::{f, g}};\n#[cfg(test)]\nmod tests { use super::c; }",
            ),
            file("service/b.rs", "fn h() { crate::service::c::run() }"),
            file(
                "service/c.rs",
                "use super::super::service::a::x; use super::a;",
            ),
            file("service/d.rs", "use super::App;"),
        ];
        let graph = service_graph(&files);
        let edges = |n: &str| graph[n].iter().cloned().collect::<Vec<_>>();
        assert_eq!(edges("a"), ["b"]);
        assert_eq!(edges("b"), ["c"]);
        assert_eq!(edges("c"), ["a"]);
        assert!(edges("d").is_empty());
        assert_eq!(cycles(&graph), ["a -> b -> c -> a"]);
    }

    #[test]
    fn the_domain_graph_sees_loops_between_folders_and_through_the_app() {
        let file = |path: &str, text: &str| (path.to_owned(), scan(text));
        let files = vec![
            file(
                "service/mod.rs",
                concat!(
                    "pub mod shop; pub mod shelf; pub mod report; pub mod names;\n",
                    "use shelf::index;\n",
                    "pub struct App { pub index: Arc<index::Index>, pub url: String }\n",
                    "impl App {\n",
                    "    pub fn counts(&self) -> u64 { names::all() + self.index.count() }\n",
                    "    pub fn shelf(&self) -> &index::Index { &self.index }\n",
                    "}\n",
                    "pub fn label(x: &str) -> String { crate::service::report::label(x) }\n",
                    "pub fn hash(x: &str) -> String { x.into() }\n",
                ),
            ),
            file(
                "service/shop/buy.rs",
                "use crate::service::{App, shelf::index};\nfn f(app: &App) { app.url.len(); }",
            ),
            file(
                "service/shelf/index.rs",
                "use crate::service::{App, hash};\n",
            ),
            // The report reaches the shelf through the App's field, and the shelf the report
            // through a function of the root.
            file(
                "service/report/mod.rs",
                "fn f(app: &App) { app.index.count(); }",
            ),
            file(
                "service/shelf/stats.rs",
                "fn g(app: &App) -> u64 { app.counts() + crate::service::label(\"x\").len() }",
            ),
            file(
                "service/names.rs",
                "fn all(app: &App) { app.shelf(); } // crate::service::shop\n",
            ),
        ];
        let graph = domain_graph(&files);
        let edges = |n: &str| graph[n].iter().cloned().collect::<Vec<_>>();
        assert_eq!(edges(ROOT), ["names", "report", "shelf"]);
        assert_eq!(edges("shop"), ["shelf"]);
        assert_eq!(edges("report"), ["shelf"]);
        assert_eq!(edges("shelf"), ["report"]);
        assert_eq!(edges("names"), ["shelf"]);
        assert_eq!(cycles(&graph), ["report -> shelf -> report"]);
    }
}
