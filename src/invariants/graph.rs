//! The import graphs of `src/service`: one of its modules (file by file), one of its domains.
//!
//! # Domains and the root
//! A domain is a folder or file directly under `service/` (`catalog`, `commerce`, `ledger`,
//! `rail`, …); an edge `a -> b` means some file of `a` names a path into `b`. `service/mod.rs`,
//! the root ([`ROOT`]), holds `App`: every domain takes it, and it holds every domain's state,
//! so the root is a node with edges out (what it holds and opens) and none in. What a domain
//! reaches *through* the root is an edge of that domain: `app.field` where the field's type is
//! another domain's, `app.method(…)` where the method's signature names another domain (its
//! body is the root's own work: keeping its state coherent), and a free function of the root
//! (`crate::service::name`, a pass-through) whose signature or body names one. So the root
//! cannot lend a domain's type or pass a call through unseen, and it is never part of a loop.

use std::collections::{BTreeMap, BTreeSet};

use super::lexer::{Scanned, absolute_paths, block_at, find_word, without_test_modules};

/// The name of `service/mod.rs` in the domain graph.
pub(super) const ROOT: &str = "App";

/// The service modules each service module uses (tests excluded; the root, `service/mod.rs`,
/// is the domain graph's).
pub(super) fn service_graph(files: &[(String, Scanned)]) -> BTreeMap<String, BTreeSet<String>> {
    // A module is a file under service/ (`a/mod.rs` is `a`), named by its path: `commerce/checkout`.
    let module_of = |path: &str| -> Option<String> {
        let name = path.strip_prefix("service/")?.strip_suffix(".rs")?;
        let name = name.strip_suffix("/mod").unwrap_or(name);
        (name != "mod").then(|| name.to_owned())
    };
    let modules: BTreeSet<String> = files.iter().filter_map(|(p, _)| module_of(p)).collect();
    // The deepest module a path (segments after `service`) names.
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
        let mut used = BTreeSet::new();
        for (_, full) in absolute_paths(path, &code) {
            if full.first().is_some_and(|s| s == "service") {
                used.extend(resolve(&full[1..]));
            }
        }
        used.remove(&name);
        graph.insert(name, used);
    }
    graph
}

/// The domain a file under `service/` belongs to (the root for `service/mod.rs`).
fn domain_of_file(path: &str) -> Option<String> {
    let rest = path.strip_prefix("service/")?;
    Some(match rest.split_once('/') {
        Some((domain, _)) => domain.to_owned(),
        None if rest == "mod.rs" => ROOT.to_owned(),
        None => rest.strip_suffix(".rs")?.to_owned(),
    })
}

/// What the root lends the domains: the domains each field of `App`, each method of `App` and
/// each free function of the root names.
#[derive(Default)]
struct Root {
    fields: BTreeMap<String, BTreeSet<String>>,
    methods: BTreeMap<String, BTreeSet<String>>,
    functions: BTreeMap<String, BTreeSet<String>>,
    /// What the root file names at all: its own edges.
    imports: BTreeSet<String>,
}

/// The `fn name` items declared in `code[from..to]` at brace depth 0 of that range: each name,
/// where its signature begins, and its body's range.
fn functions_in(code: &str, from: usize, to: usize) -> Vec<(String, usize, usize, usize)> {
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    let mut out = Vec::new();
    let mut at = from;
    while let Some(end) = find_word(code, "fn", at).filter(|&e| e < to) {
        at = end;
        let depth: i64 = code[from..end]
            .chars()
            .map(|c| match c {
                '{' => 1,
                '}' => -1,
                _ => 0,
            })
            .sum();
        if depth != 0 {
            continue;
        }
        let name: String = code[end..]
            .trim_start()
            .chars()
            .take_while(|&c| ident(c))
            .collect();
        // A body, not a declaration ending in `;` (a trait's).
        let body = block_at(code, end).filter(|_| {
            let semi = code[end..].find(';').map_or(usize::MAX, |k| end + k);
            code[end..].find('{').is_some_and(|k| end + k < semi)
        });
        if let Some((open, close)) = body.filter(|_| !name.is_empty()) {
            out.push((name, end, open, close));
            at = close;
        }
    }
    out
}

/// The identifiers that follow `receiver.` in `code`, each with whether it is called.
fn members(code: &str, receiver: &str) -> Vec<(String, bool)> {
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(end) = find_word(code, receiver, at) {
        at = end;
        let Some(rest) = code[end..].strip_prefix('.') else {
            continue;
        };
        let name: String = rest.chars().take_while(|&c| ident(c)).collect();
        if !name.is_empty() {
            let called = rest[name.len()..].trim_start().starts_with('(');
            out.push((name, called));
        }
    }
    out
}

/// Reads the root file: what `App`'s fields, `App`'s methods and the free functions name.
fn read_root(code: &str, paths: &[(usize, Vec<String>)], domains: &BTreeSet<String>) -> Root {
    let domain = |full: &Vec<String>| {
        full.first()
            .filter(|s| *s == "service")
            .and(full.get(1))
            .filter(|d| domains.contains(*d))
            .cloned()
    };
    let named = |from: usize, to: usize| -> BTreeSet<String> {
        paths
            .iter()
            .filter(|(at, _)| (from..to).contains(at))
            .filter_map(|(_, full)| domain(full))
            .collect()
    };
    let mut root = Root {
        imports: named(0, code.len()),
        ..Root::default()
    };
    let find_block = |head: &str| {
        let at = code
            .match_indices(head)
            .map(|(k, _)| k)
            .find(|&k| code[k + head.len()..].trim_start().starts_with('{'))?;
        block_at(code, at)
    };
    // `struct App { name: Type, … }`: the domains each field's type names.
    if let Some((open, close)) = find_block("struct App") {
        let body = &code[open + 1..close - 1];
        let (mut depth, mut start) = (0i32, 0usize);
        let mut items = Vec::new();
        for (k, c) in body.char_indices() {
            match c {
                '<' | '(' | '[' | '{' => depth += 1,
                '>' | ')' | ']' | '}' => depth -= 1,
                ',' if depth == 0 => {
                    items.push((start, k));
                    start = k + 1;
                }
                _ => {}
            }
        }
        items.push((start, body.len()));
        for (from, to) in items {
            let item = &body[from..to];
            let Some(colon) = item.find(':').filter(|&c| !item[c..].starts_with("::")) else {
                continue;
            };
            let Some(name) = item[..colon].split_whitespace().last() else {
                continue;
            };
            let base = open + 1 + from;
            root.fields
                .insert(name.to_owned(), named(base + colon, base + item.len()));
        }
    }
    // A method of `App` lends what its signature names (its body is the root's own work, such
    // as clearing the signed answers when the provenance changes); a free function of the root
    // is a pass-through, so it lends what its signature and its body name.
    if let Some((open, close)) = find_block("impl App") {
        for (name, signature, body, _) in functions_in(code, open + 1, close - 1) {
            root.methods.insert(name, named(signature, body));
        }
    }
    for (name, signature, _, end) in functions_in(code, 0, code.len()) {
        root.functions.insert(name, named(signature, end));
    }
    root
}

/// The domains each domain of `src/service` uses (tests excluded), the root included as a node
/// with its own edges (see the module's documentation).
pub(super) fn domain_graph(files: &[(String, Scanned)]) -> BTreeMap<String, BTreeSet<String>> {
    let domains: BTreeSet<String> = files
        .iter()
        .filter_map(|(p, _)| domain_of_file(p))
        .filter(|d| d != ROOT)
        .collect();
    let domain = |full: &[String]| -> Option<String> {
        (full.first()? == "service")
            .then(|| full.get(1).filter(|d| domains.contains(*d)).cloned())
            .flatten()
    };
    let mut root = Root::default();
    for (path, scanned) in files.iter().filter(|(p, _)| p == "service/mod.rs") {
        let code = without_test_modules(&scanned.code);
        root = read_root(&code, &absolute_paths(path, &code), &domains);
    }
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    graph.insert(ROOT.to_owned(), root.imports.clone());
    for (path, scanned) in files {
        let Some(name) = domain_of_file(path).filter(|d| d != ROOT) else {
            continue;
        };
        let code = without_test_modules(&scanned.code);
        let used = graph.entry(name.clone()).or_default();
        for (_, full) in absolute_paths(path, &code) {
            match domain(&full) {
                Some(other) => {
                    used.insert(other);
                }
                // A free function of the root: what it names.
                None if full.len() == 2 && full[0] == "service" => {
                    used.extend(root.functions.get(&full[1]).into_iter().flatten().cloned());
                }
                None => {}
            }
        }
        for (member, called) in members(&code, "app") {
            let lent = if called {
                root.methods.get(&member)
            } else {
                root.fields.get(&member)
            };
            used.extend(lent.into_iter().flatten().cloned());
        }
        used.remove(&name);
    }
    graph
}

/// Every elementary cycle found by a depth-first search, each as `a -> b -> a`, sorted.
pub(super) fn cycles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
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
