//! Architecture invariants, checked by reading the sources under `src/`:
//!
//! - SQL lives in `store`: no SQL text in a string literal and no call of a statement method
//!   (`prepare`, `execute`, `query_row`, …) in any file outside `src/store/` (this file
//!   excepted).
//! - `service` never imports the HTTP layer (`crate::http`) or hyper.
//! - `store` and `crypto` never import hyper (nor `crate::http`); `crypto` never imports
//!   rusqlite.
//! - The `agents` table is written only by `store::agents`.
//! - The service modules form no import cycle.
//! - Services take typed requests (`crate::request`), never raw request JSON read field by field.
//!
//! The scanner is a small Rust lexer: comments are dropped, and string and character literals
//! are kept apart from the code, so prose in a doc comment never trips a rule and a statement
//! call inside a string never hides one.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Statement keywords that mark a string literal as SQL (each as a whole word; a pair must
/// appear in this order).
const SQL_MARKERS: &[&[&str]] = &[
    &["SELECT"],
    &["INSERT", "INTO"],
    &["UPDATE", "SET"],
    &["DELETE", "FROM"],
    &["CREATE", "TABLE"],
    &["CREATE", "INDEX"],
    &["CREATE", "TRIGGER"],
    &["ALTER", "TABLE"],
    &["DROP", "TABLE"],
    &["PRAGMA"],
    &["VACUUM"],
    &["SAVEPOINT"],
];

/// Methods that run SQL (rusqlite's `Connection` and `Statement`), found as `.name(` in code.
const SQL_CALLS: &[&str] = &[
    "prepare",
    "prepare_cached",
    "execute",
    "execute_batch",
    "query_row",
    "query_map",
];

/// Crates of the HTTP stack.
const HTTP_CRATES: &[&str] = &["hyper", "hyper_util", "http_body_util"];

/// Crates of the database.
const DATABASE_CRATES: &[&str] = &["rusqlite", "r2d2", "r2d2_sqlite"];

/// A source file split by the lexer.
struct Scanned {
    /// The code with comments and literal contents blanked (line breaks kept), so positions and
    /// line numbers still match the file.
    code: String,
    /// Every string literal's contents, with the line it starts on.
    strings: Vec<(usize, String)>,
}

/// Splits Rust source into code and string literals, dropping comments.
fn scan(source: &str) -> Scanned {
    let chars: Vec<char> = source.chars().collect();
    let mut code = String::with_capacity(source.len());
    let mut strings = Vec::new();
    let mut line = 1;
    let mut i = 0;
    // Appends `c` as blank code (a line break stays one).
    let blank = |code: &mut String, line: &mut usize, c: char| {
        if c == '\n' {
            *line += 1;
            code.push('\n');
        } else {
            code.push(' ');
        }
    };
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                code.push(' ');
                i += 1;
            }
            continue;
        }
        if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    code.push_str("  ");
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    code.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    blank(&mut code, &mut line, chars[i]);
                    i += 1;
                }
            }
            continue;
        }
        // A raw string: `r"…"`, `r#"…"#` (also `br…`), not part of an identifier.
        let prefix_ok = i == 0 || !ident(chars[i - 1]);
        let raw_start = match (c, next) {
            ('r', Some('"' | '#')) if prefix_ok => Some(i + 1),
            ('b', Some('r')) if prefix_ok && matches!(chars.get(i + 2), Some('"' | '#')) => {
                Some(i + 2)
            }
            _ => None,
        };
        if let Some(mut j) = raw_start {
            let mut hashes = 0;
            while chars.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if chars.get(j) == Some(&'"') {
                let start_line = line;
                for _ in i..=j {
                    code.push(' ');
                }
                j += 1;
                let mut text = String::new();
                while let Some(&d) = chars.get(j) {
                    if d == '"' && (1..=hashes).all(|k| chars.get(j + k) == Some(&'#')) {
                        for _ in 0..=hashes {
                            code.push(' ');
                        }
                        j += hashes + 1;
                        break;
                    }
                    text.push(d);
                    blank(&mut code, &mut line, d);
                    j += 1;
                }
                strings.push((start_line, text));
                i = j;
                continue;
            }
        }
        if c == '"' {
            let start_line = line;
            code.push('"');
            i += 1;
            let mut text = String::new();
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' && i + 1 < chars.len() {
                    text.push(chars[i]);
                    blank(&mut code, &mut line, chars[i]);
                    i += 1;
                }
                text.push(chars[i]);
                blank(&mut code, &mut line, chars[i]);
                i += 1;
            }
            code.push('"');
            i += 1;
            strings.push((start_line, text));
            continue;
        }
        if c == '\'' {
            // A character literal (`'x'`, `'\n'`, `'\''`), else a lifetime or label.
            let end = if next == Some('\\') {
                (i + 2..chars.len()).find(|&k| chars[k] == '\'' && k > i + 2)
            } else if chars.get(i + 2) == Some(&'\'') {
                Some(i + 2)
            } else {
                None
            };
            if let Some(end) = end {
                code.push('\'');
                for _ in i + 1..end {
                    code.push(' ');
                }
                code.push('\'');
                i = end + 1;
                continue;
            }
        }
        if c == '\n' {
            line += 1;
        }
        code.push(c);
        i += 1;
    }
    Scanned { code, strings }
}

/// Whether `word` occurs in `text` as a whole word at or after `from`; returns where it ends.
fn find_word(text: &str, word: &str, from: usize) -> Option<usize> {
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    let mut start = from;
    while let Some(found) = text.get(start..)?.find(word) {
        let at = start + found;
        let end = at + word.len();
        let before = text[..at].chars().next_back();
        let after = text[end..].chars().next();
        if !before.is_some_and(ident) && !after.is_some_and(ident) {
            return Some(end);
        }
        start = at + word.len().max(1);
    }
    None
}

/// Whether a string literal looks like SQL.
fn is_sql(text: &str) -> bool {
    SQL_MARKERS.iter().any(|words| {
        let mut at = 0;
        words.iter().all(|word| match find_word(text, word, at) {
            Some(end) => {
                at = end;
                true
            }
            None => false,
        })
    })
}

/// Whether a string literal writes the `agents` table.
fn writes_agents(text: &str) -> bool {
    let words: Vec<String> = text
        .split_whitespace()
        .map(|w| {
            w.chars()
                .take_while(|&c| c.is_alphanumeric() || c == '_')
                .collect()
        })
        .collect();
    let pairs = words
        .windows(2)
        .any(|w| matches!(w[0].as_str(), "UPDATE" | "INTO") && w[1] == "agents");
    let deletes = words
        .windows(3)
        .any(|w| w[0] == "DELETE" && w[1] == "FROM" && w[2] == "agents");
    pairs || deletes
}

/// The 1-based line of byte offset `at`.
fn line_of(code: &str, at: usize) -> usize {
    code[..at].matches('\n').count() + 1
}

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

/// SQL findings in one scanned file: `line: what`.
fn sql_findings(scanned: &Scanned) -> Vec<String> {
    let mut found: Vec<(usize, String)> = scanned
        .strings
        .iter()
        .filter(|(_, text)| is_sql(text))
        .map(|(line, text)| {
            let first = text.split_whitespace().collect::<Vec<_>>().join(" ");
            let short: String = first.chars().take(60).collect();
            (*line, format!("SQL text {short:?}"))
        })
        .collect();
    for method in SQL_CALLS {
        for (at, _) in scanned.code.match_indices(&format!(".{method}(")) {
            found.push((line_of(&scanned.code, at), format!("calls `{method}`")));
        }
    }
    found.sort();
    found
        .into_iter()
        .map(|(line, what)| format!("{line}: {what}"))
        .collect()
}

/// Lines where `code` uses one of `crates` as a path root, or `crate::http`.
fn import_findings(code: &str, crates: &[&str], http_layer: bool) -> Vec<String> {
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
    if http_layer {
        for (at, path) in module_paths(code, "crate::") {
            if path.first().is_some_and(|root| root == "http") {
                found.push((line_of(code, at), "imports `crate::http`".to_owned()));
            }
        }
    }
    found.sort();
    found
        .into_iter()
        .map(|(line, what)| format!("{line}: {what}"))
        .collect()
}

/// `code` without its `#[cfg(test)] mod … { … }` blocks (where `super::` means the file itself).
fn without_test_modules(code: &str) -> String {
    let mut out = code.to_owned();
    while let Some(at) = out.find("#[cfg(test)]") {
        let after = at + "#[cfg(test)]".len();
        let rest = out[after..].trim_start();
        if !rest.starts_with("mod ") {
            out.replace_range(at..after, "");
            continue;
        }
        let Some(open) = out[after..].find('{').map(|k| after + k) else {
            break;
        };
        let mut depth = 0;
        let mut close = out.len();
        for (k, c) in out[open..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        close = open + k + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        out.replace_range(at..close, "");
    }
    out
}

/// The service modules each service module uses (tests excluded).
fn service_graph(files: &[(String, Scanned)]) -> BTreeMap<String, BTreeSet<String>> {
    // A module is a file under service/ (`a/mod.rs` is `a`), named by its path: `commerce/checkout`.
    let module_of = |path: &str| -> Option<String> {
        let name = path.strip_prefix("service/")?.strip_suffix(".rs")?;
        let name = name.strip_suffix("/mod").unwrap_or(name);
        (name != "mod").then(|| name.to_owned())
    };
    let modules: BTreeSet<String> = files.iter().filter_map(|(p, _)| module_of(p)).collect();
    // The deepest module a path (segments after `crate::service::`) names.
    let resolve = |segments: &[String]| -> Option<String> {
        (1..=segments.len())
            .rev()
            .map(|n| segments[..n].join("/"))
            .find(|candidate| modules.contains(candidate))
    };
    let mut graph = BTreeMap::new();
    for (path, scanned) in files {
        let Some(name) = module_of(path) else {
            continue;
        };
        let code = without_test_modules(&scanned.code);
        // `super::` is the parent module: for `a/b.rs` (module `a/b`) it is `a`, for `a/mod.rs`
        // (module `a`) the root.
        let mut parent: Vec<String> = name.split('/').map(str::to_owned).collect();
        parent.pop();
        let mut used = BTreeSet::new();
        for (_, segments) in module_paths(&code, "crate::service::") {
            used.extend(resolve(&segments));
        }
        for (_, segments) in module_paths(&code, "super::") {
            let full: Vec<String> = parent.iter().cloned().chain(segments).collect();
            used.extend(resolve(&full));
        }
        used.remove(&name);
        graph.insert(name, used);
    }
    graph
}

/// Every path that follows `prefix` in `code`, with `{a, b::{c}}` groups expanded, and the offset
/// of its `prefix`: `prefix x::{y, z::w}` gives `[x, y]` and `[x, z, w]`.
fn module_paths(code: &str, prefix: &str) -> Vec<(usize, Vec<String>)> {
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    let mut out = Vec::new();
    for (at, _) in code.match_indices(prefix) {
        let before = &code[..at];
        if before.ends_with("::") || before.chars().next_back().is_some_and(ident) {
            continue;
        }
        out.extend(
            expand(&code[at + prefix.len()..])
                .into_iter()
                .map(|p| (at, p)),
        );
    }
    out
}

/// The paths of one use-tree written at the start of `text`.
fn expand(text: &str) -> Vec<Vec<String>> {
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    let text = text.trim_start();
    if let Some(group) = text.strip_prefix('{') {
        let mut items = Vec::new();
        let (mut depth, mut start) = (0usize, 0usize);
        for (k, c) in group.char_indices() {
            match c {
                '{' => depth += 1,
                '}' if depth == 0 => {
                    items.push(&group[start..k]);
                    break;
                }
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    items.push(&group[start..k]);
                    start = k + 1;
                }
                _ => {}
            }
        }
        return items.into_iter().flat_map(expand).collect();
    }
    let name: String = text.chars().take_while(|&c| ident(c)).collect();
    if name.is_empty() || name == "self" {
        return Vec::new();
    }
    let rest = &text[name.len()..];
    match rest.strip_prefix("::") {
        Some(rest) => {
            let tails = expand(rest);
            if tails.is_empty() {
                vec![vec![name]]
            } else {
                tails
                    .into_iter()
                    .map(|tail| std::iter::once(name.clone()).chain(tail).collect())
                    .collect()
            }
        }
        None => vec![vec![name]],
    }
}

/// Every elementary cycle found by a depth-first search, each as `a -> b -> a`, sorted.
fn cycles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        stack: &mut Vec<String>,
        done: &mut BTreeSet<String>,
        found: &mut BTreeSet<String>,
    ) {
        stack.push(node.to_owned());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(at) = stack.iter().position(|n| n == next) {
                let mut cycle: Vec<&str> = stack[at..].iter().map(String::as_str).collect();
                // Start at the smallest name, so each cycle is reported once.
                let first = (0..cycle.len()).min_by_key(|&k| cycle[k]).unwrap_or(0);
                cycle.rotate_left(first);
                let start = cycle[0];
                cycle.push(start);
                found.insert(cycle.join(" -> "));
            } else if !done.contains(next) {
                visit(next, graph, stack, done, found);
            }
        }
        stack.pop();
        done.insert(node.to_owned());
    }
    let mut found = BTreeSet::new();
    let mut done = BTreeSet::new();
    for node in graph.keys() {
        if !done.contains(node) {
            visit(node, graph, &mut Vec::new(), &mut done, &mut found);
        }
    }
    found.into_iter().collect()
}

/// Fails naming every `file:line: finding`.
fn assert_none(rule: &str, findings: Vec<String>) {
    assert!(findings.is_empty(), "{rule}:\n  {}", findings.join("\n  "));
}

#[test]
fn no_sql_outside_the_store() {
    let findings = sources()
        .iter()
        .filter(|(path, _)| !path.starts_with("store/") && path != "invariants.rs")
        .flat_map(|(path, scanned)| {
            sql_findings(scanned)
                .into_iter()
                .map(move |f| format!("src/{path}:{f}"))
        })
        .collect();
    assert_none(
        "SQL outside src/store/ (move the statement into a store module and call it)",
        findings,
    );
}

#[test]
fn agent_rows_are_written_only_by_store_agents() {
    let findings = sources()
        .iter()
        .filter(|(path, _)| path != "store/agents.rs" && path != "invariants.rs")
        .flat_map(|(path, scanned)| {
            scanned
                .strings
                .iter()
                .filter(|(_, text)| writes_agents(text))
                .map(move |(line, _)| format!("src/{path}:{line}: writes the agents table"))
        })
        .collect();
    assert_none(
        "agent rows change only through src/store/agents.rs (whose callers keep the known-agents cache true)",
        findings,
    );
}

#[test]
fn service_never_imports_the_http_layer_or_hyper() {
    let findings = sources()
        .iter()
        .filter(|(path, _)| path.starts_with("service/"))
        .flat_map(|(path, scanned)| {
            import_findings(&scanned.code, HTTP_CRATES, true)
                .into_iter()
                .map(move |f| format!("src/{path}:{f}"))
        })
        .collect();
    assert_none("service imports the HTTP layer", findings);
}

/// Services take typed requests (`crate::request`), never raw request JSON read field by field:
/// the reading of requests lives at the edges, in one declaration per operation.
#[test]
fn services_take_typed_requests_never_args() {
    let findings = sources()
        .iter()
        .filter(|(path, _)| path.starts_with("service/"))
        .flat_map(|(path, scanned)| {
            let code = without_test_modules(&scanned.code);
            module_paths(&code, "crate::")
                .into_iter()
                .filter(|(_, p)| p.first().is_some_and(|root| root == "args"))
                .map(|(at, _)| format!("src/{path}:{}: imports `crate::args`", line_of(&code, at)))
                .collect::<Vec<_>>()
        })
        .collect();
    assert_none("a service reads raw arguments", findings);
}

#[test]
fn store_and_crypto_never_import_hyper_and_crypto_never_imports_rusqlite() {
    let findings = sources()
        .iter()
        .flat_map(|(path, scanned)| {
            let mut crates = Vec::new();
            if path.starts_with("store/") || path.starts_with("crypto/") {
                crates.extend_from_slice(HTTP_CRATES);
            }
            if path.starts_with("crypto/") {
                crates.extend_from_slice(DATABASE_CRATES);
            }
            if crates.is_empty() {
                return Vec::new();
            }
            import_findings(&scanned.code, &crates, true)
                .into_iter()
                .map(|f| format!("src/{path}:{f}"))
                .collect()
        })
        .collect();
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

mod scanner {
    use super::*;

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
    fn imports_are_seen_in_code_only() {
        let code = scan(concat!(
            "//! never sees hyper types\n",
            "use crate::{error::Error, http::assets};\n",
            "use crate::store::hyper;\n",
            "fn f() -> hyper::Response<()> { make(\"hyper\") }\n",
        ))
        .code;
        assert_eq!(
            import_findings(&code, HTTP_CRATES, true),
            ["2: imports `crate::http`", "4: uses `hyper`"]
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
            file("service/c.rs", "use super::super::a::x; use super::a;"),
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
}
