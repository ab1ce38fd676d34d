//! The lexer the rules read sources with, and the paths a file names.
//!
//! Comments are dropped, and string and character literals are kept apart from the code, so prose
//! in a doc comment never trips a rule and a statement call inside a string never hides one.
//! Paths are made absolute from the crate root (`crate::`, `super::`, `self::`, a file's own
//! child modules and the names its `use` declarations bring in), so a rule about `crate::service`
//! also sees `super::super::service` and `use catalog::x` written in `service/mod.rs`.

use std::collections::{BTreeMap, BTreeSet};

/// A source file split by the lexer.
pub(super) struct Scanned {
    /// The code with comments and literal contents blanked (line breaks kept), so positions and
    /// line numbers still match the file.
    pub(super) code: String,
    /// Every string literal's contents, with the line it starts on.
    pub(super) strings: Vec<(usize, String)>,
}

/// Splits Rust source into code and string literals, dropping comments.
pub(super) fn scan(source: &str) -> Scanned {
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
pub(super) fn find_word(text: &str, word: &str, from: usize) -> Option<usize> {
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

/// The 1-based line of byte offset `at`.
pub(super) fn line_of(code: &str, at: usize) -> usize {
    code[..at].matches('\n').count() + 1
}

/// `code` without its `#[cfg(test)] mod … { … }` blocks (where `super::` means the file itself).
pub(super) fn without_test_modules(code: &str) -> String {
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

/// Every path that follows `prefix` in `code`, with `{a, b::{c}}` groups expanded, and the offset
/// of its `prefix`: `prefix x::{y, z::w}` gives `[x, y]` and `[x, z, w]`.
pub(super) fn module_paths(code: &str, prefix: &str) -> Vec<(usize, Vec<String>)> {
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

/// The top-level items of a use-tree group, `group` being the text after its `{`.
fn group_items(group: &str) -> Vec<&str> {
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
    items
}

/// The paths of one use-tree written at the start of `text`.
pub(super) fn expand(text: &str) -> Vec<Vec<String>> {
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    let text = text.trim_start();
    if let Some(group) = text.strip_prefix('{') {
        return group_items(group).into_iter().flat_map(expand).collect();
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

/// The module a file under `src/` is, as path segments: `service/catalog/listings.rs` is
/// `[service, catalog, listings]`, `service/catalog/mod.rs` is `[service, catalog]`, `lib.rs` the
/// crate root `[]`.
pub(super) fn module_of_file(path: &str) -> Vec<String> {
    let name = path.strip_suffix(".rs").unwrap_or(path);
    let mut segments: Vec<String> = name.split('/').map(str::to_owned).collect();
    if segments.len() == 1 && matches!(segments[0].as_str(), "lib" | "main") {
        return Vec::new();
    }
    if segments.last().is_some_and(|s| s == "mod") {
        segments.pop();
    }
    segments
}

/// The end (one past the `}`) of the block that opens at the first `{` at or after `from`, and
/// where that `{` is.
pub(super) fn block_at(code: &str, from: usize) -> Option<(usize, usize)> {
    let open = from + code.get(from..)?.find('{')?;
    let mut depth = 0usize;
    for (k, c) in code[open..].char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return Some((open, open + k + 1));
                }
            }
            _ => {}
        }
    }
    None
}

/// The child modules a file declares with a file of their own (`mod x;`, `pub mod x;`).
fn child_modules(code: &str) -> BTreeSet<String> {
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    let mut out = BTreeSet::new();
    let mut at = 0;
    while let Some(end) = find_word(code, "mod", at) {
        at = end;
        let rest = code[end..].trim_start();
        let name: String = rest.chars().take_while(|&c| ident(c)).collect();
        if !name.is_empty() && rest[name.len()..].trim_start().starts_with(';') {
            out.insert(name);
        }
    }
    out
}

/// One use-tree's paths, each with the name it is bound to (`as` or its last segment).
fn expand_bound(text: &str) -> Vec<(Vec<String>, String)> {
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    let text = text.trim_start();
    if let Some(group) = text.strip_prefix('{') {
        return group_items(group)
            .into_iter()
            .flat_map(expand_bound)
            .collect();
    }
    let name: String = text.chars().take_while(|&c| ident(c)).collect();
    if name.is_empty() {
        return Vec::new();
    }
    let rest = &text[name.len()..];
    if let Some(rest) = rest.strip_prefix("::") {
        // `a::{self}` binds `a`, `a::{self as b}` binds `b`, both to the path `a`.
        return expand_bound(rest)
            .into_iter()
            .map(|(tail, bound)| {
                let bound = if bound == "self" { name.clone() } else { bound };
                (std::iter::once(name.clone()).chain(tail).collect(), bound)
            })
            .collect();
    }
    let rest = rest.trim_start();
    let bound = match rest.strip_prefix("as") {
        Some(alias) if alias.starts_with(char::is_whitespace) => alias
            .trim_start()
            .chars()
            .take_while(|&c| ident(c))
            .collect(),
        _ => name.clone(),
    };
    if name == "self" {
        return vec![(Vec::new(), bound)];
    }
    vec![(vec![name], bound)]
}

/// The absolute path of `path` written in `module` (whose file declares `children`), if it is a
/// path of this crate: `None` for another crate's.
fn absolute(
    module: &[String],
    children: &BTreeSet<String>,
    path: &[String],
) -> Option<Vec<String>> {
    let (first, rest) = path.split_first()?;
    let mut base: Vec<String> = match first.as_str() {
        "crate" => Vec::new(),
        "self" => module.to_vec(),
        "super" => {
            let mut base = module.to_vec();
            base.pop();
            let mut rest = rest;
            while rest.first().is_some_and(|s| s == "super") {
                base.pop();
                rest = &rest[1..];
            }
            return Some(base.into_iter().chain(rest.iter().cloned()).collect());
        }
        name if children.contains(name) => {
            let mut base = module.to_vec();
            base.push(name.to_owned());
            base
        }
        _ => return None,
    };
    base.extend(rest.iter().cloned());
    Some(base)
}

/// The names a file's `use` declarations bind to paths of this crate, absolute.
fn use_bindings(
    module: &[String],
    children: &BTreeSet<String>,
    code: &str,
) -> BTreeMap<String, Vec<String>> {
    let mut out = BTreeMap::new();
    let mut at = 0;
    while let Some(end) = find_word(code, "use", at) {
        at = end;
        let Some(stop) = code[end..].find(';') else {
            break;
        };
        for (path, bound) in expand_bound(&code[end..end + stop]) {
            if let Some(full) = absolute(module, children, &path) {
                out.insert(bound, full);
            }
        }
    }
    out
}

/// Every path of this crate that the code of `file` (relative to `src/`) names, absolute from
/// the crate root, with the offset where it is written: paths from `crate::`, `self::`, `super::`
/// and the file's own child modules, and the names its `use` declarations bind (a lower-case
/// name where it is followed by `::` or `(`, a capitalised one wherever it stands).
pub(super) fn absolute_paths(file: &str, code: &str) -> Vec<(usize, Vec<String>)> {
    let module = module_of_file(file);
    let children = child_modules(code);
    let mut out = Vec::new();
    let roots = ["crate", "self", "super"]
        .into_iter()
        .map(str::to_owned)
        .chain(children.iter().cloned());
    for root in roots {
        for (at, tail) in module_paths(code, &format!("{root}::")) {
            let path: Vec<String> = std::iter::once(root.clone()).chain(tail).collect();
            out.extend(absolute(&module, &children, &path).map(|p| (at, p)));
        }
    }
    for (name, full) in use_bindings(&module, &children, code) {
        let capital = name.starts_with(|c: char| c.is_uppercase());
        let mut at = 0;
        while let Some(end) = find_word(code, &name, at) {
            let start = end - name.len();
            at = end;
            let before = code[..start].trim_end();
            // `a::name` is another path's segment; `x.name` a field or method.
            if before.ends_with("::") || before.ends_with('.') {
                continue;
            }
            let after = code[end..].trim_start();
            if let Some(rest) = after.strip_prefix("::") {
                let tail = expand(rest);
                if tail.is_empty() {
                    out.push((start, full.clone()));
                }
                out.extend(
                    tail.into_iter()
                        .map(|t| (start, full.iter().cloned().chain(t).collect())),
                );
            } else if capital || after.starts_with('(') {
                out.push((start, full.clone()));
            }
        }
    }
    out.sort();
    out.dedup();
    out
}
