//! What SQL looks like to the rules: SQL text in a string literal, a call that runs a statement,
//! and a statement that writes the `agents` table.

use super::lexer::{Scanned, find_word, line_of};

/// Upper-case statement keywords that mark a string literal as SQL wherever they stand (each as
/// a whole word; a pair must appear in this order). SQL in any other letter case is recognised
/// by its shape ([`begins_a_statement`]).
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

/// Methods that run SQL or hold a transaction (rusqlite's `Connection`, `Statement` and
/// `Transaction`), found as `.name(` in code. None of these names is a method of ours outside
/// the store.
const SQL_CALLS: &[&str] = &[
    "prepare",
    "prepare_cached",
    "execute",
    "execute_batch",
    "query_row",
    "query_row_and_then",
    "query_map",
    "query_and_then",
    "query_one",
    "pragma",
    "pragma_query",
    "pragma_query_value",
    "pragma_update",
    "pragma_update_and_check",
    "backup",
    "restore",
    "transaction",
    "transaction_with_behavior",
    "unchecked_transaction",
    "savepoint",
    "savepoint_with_name",
];

/// How the parameters of rusqlite's `Statement::query` begin (`[]`, `()`, `(a, b)`, `&[…]`,
/// `params![…]`, …). `query` is also a method of ours (a request's query string, the browse
/// index, the counters), so `.query(` is a statement call only with such an argument.
const QUERY_PARAMETERS: &[&str] = &[
    "[",
    "(",
    "&[",
    "params!",
    "named_params!",
    "params_from_iter",
    "rusqlite::",
];

/// Whether a string literal looks like SQL.
pub(super) fn is_sql(text: &str) -> bool {
    begins_a_statement(text)
        || SQL_MARKERS.iter().any(|words| {
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
pub(super) fn writes_agents(text: &str) -> bool {
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

/// A word or a single punctuation mark of SQL text, lower-cased.
fn tokens(text: &str) -> Vec<String> {
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    let mut out: Vec<String> = Vec::new();
    let mut word = String::new();
    for c in text.chars() {
        if ident(c) {
            word.extend(c.to_lowercase());
            continue;
        }
        if !word.is_empty() {
            out.push(std::mem::take(&mut word));
        }
        if !c.is_whitespace() {
            out.push(c.to_string());
        }
    }
    if !word.is_empty() {
        out.push(word);
    }
    out
}

/// Whether a statement of SQL, in any letter case, begins at the start of `text`, after a `;` or
/// after a `(` (a subquery): `select … from t`, `insert [or x] into t`, `replace into t`,
/// `update [or x] t set`, `delete from t`, `create [unique|temp|virtual] table|index|trigger|
/// view`, `alter table t`, `drop table|index|trigger|view`, `pragma x` (then nothing, `=`, `(`
/// or `;`), `with [recursive] x … as (`, `vacuum`, `savepoint x`, `release [savepoint] x` and
/// `begin deferred|immediate|exclusive|transaction`, each after an optional `explain [query
/// plan]`. Requiring that shape keeps prose out ("please update your settings", "delete is
/// refused").
pub(super) fn begins_a_statement(text: &str) -> bool {
    let tokens = tokens(text);
    let word = |k: usize| {
        tokens
            .get(k)
            .filter(|t| t.starts_with(|c: char| c.is_alphanumeric() || c == '_'))
    };
    let is = |k: usize, w: &str| tokens.get(k).is_some_and(|t| t == w);
    let ends = |k: usize| tokens.get(k).is_none_or(|t| t == ";");
    // Where the statement begun at `start` ends.
    let end_of = |start: usize| {
        (start..tokens.len())
            .find(|&k| tokens[k] == ";")
            .unwrap_or(tokens.len())
    };
    let starts = std::iter::once(0).chain(
        (0..tokens.len())
            .filter(|&k| tokens[k] == ";" || tokens[k] == "(")
            .map(|k| k + 1),
    );
    starts.into_iter().any(|mut k| {
        if is(k, "explain") {
            k += 1;
            if is(k, "query") && is(k + 1, "plan") {
                k += 2;
            }
        }
        let Some(first) = word(k) else {
            return false;
        };
        let end = end_of(k);
        // An `or replace`-style conflict clause.
        let skip_or = |k: usize| {
            if is(k, "or") && word(k + 1).is_some() {
                k + 2
            } else {
                k
            }
        };
        match first.as_str() {
            "select" => (k + 1..end).any(|j| is(j, "from") && word(j + 1).is_some()),
            "insert" => {
                let j = skip_or(k + 1);
                is(j, "into") && word(j + 1).is_some()
            }
            "replace" => is(k + 1, "into") && word(k + 2).is_some(),
            "update" => {
                let j = skip_or(k + 1);
                word(j).is_some()
                    && (is(j + 1, "set")
                        || is(j + 1, ".") && word(j + 2).is_some() && is(j + 3, "set"))
            }
            "delete" => is(k + 1, "from") && word(k + 2).is_some(),
            "create" => {
                let mut j = k + 1;
                while ["unique", "temp", "temporary", "virtual"]
                    .iter()
                    .any(|w| is(j, w))
                {
                    j += 1;
                }
                ["table", "index", "trigger", "view"]
                    .iter()
                    .any(|w| is(j, w))
            }
            "alter" => is(k + 1, "table") && word(k + 2).is_some(),
            "drop" => ["table", "index", "trigger", "view"]
                .iter()
                .any(|w| is(k + 1, w)),
            "pragma" => {
                let mut j = k + 1;
                if word(j).is_some() && is(j + 1, ".") {
                    j += 2;
                }
                word(j).is_some() && (ends(j + 1) || is(j + 1, "=") || is(j + 1, "("))
            }
            "with" => {
                let j = if is(k + 1, "recursive") { k + 2 } else { k + 1 };
                word(j).is_some() && (j + 1..end).any(|a| is(a, "as") && is(a + 1, "("))
            }
            "vacuum" => ends(k + 1) || is(k + 1, "into"),
            "savepoint" => word(k + 1).is_some() && ends(k + 2),
            "release" => {
                let j = if is(k + 1, "savepoint") { k + 2 } else { k + 1 };
                word(j).is_some() && ends(j + 1)
            }
            "begin" => ["deferred", "immediate", "exclusive", "transaction"]
                .iter()
                .any(|w| is(k + 1, w)),
            _ => false,
        }
    })
}

/// SQL findings in one scanned file: `line: what`.
pub(super) fn sql_findings(scanned: &Scanned) -> Vec<String> {
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
    for (at, _) in scanned.code.match_indices(".query(") {
        let argument = scanned.code[at + ".query(".len()..].trim_start();
        if QUERY_PARAMETERS.iter().any(|p| argument.starts_with(p)) {
            found.push((line_of(&scanned.code, at), "calls `query`".to_owned()));
        }
    }
    found.sort();
    found
        .into_iter()
        .map(|(line, what)| format!("{line}: {what}"))
        .collect()
}
