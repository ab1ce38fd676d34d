//! The resolver behind `architecture.rs`: a small Rust lexer over `src/` and `tests/it/`, the
//! items each module declares, and whether a `a::b::c` path names one of them.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs;
use std::path::{Path, PathBuf};

use super::{EXTERNAL_CRATES, is_ident, is_ident_start, root};

#[derive(Debug, PartialEq)]
pub(super) enum Resolution {
    Found,
    External,
    Missing,
}

#[derive(Clone, Debug, PartialEq)]
pub(super) enum Tok {
    Ident(String),
    Punct(u8),
    /// `->` or `=>`, kept apart from `<` and `>`.
    Arrow,
}

/// One source file, lexed.
pub(super) struct File {
    toks: Vec<Tok>,
    /// `#[path = "…"] mod name;`: name → the path given.
    path_attrs: HashMap<String, String>,
}

/// A module: a token range of a file, and the directory its file modules live in.
#[derive(Clone)]
pub(super) struct Module {
    file: PathBuf,
    range: (usize, usize),
    dir: PathBuf,
}

/// What a module declares.
#[derive(Default)]
pub(super) struct Declared {
    pub(super) items: BTreeSet<String>,
    /// A type, trait or enum → its variants, associated fns, consts and types.
    pub(super) members: BTreeMap<String, BTreeSet<String>>,
    /// `mod name { … }` → its token range.
    pub(super) inline: BTreeMap<String, (usize, usize)>,
    /// `mod name;`
    pub(super) files: BTreeSet<String>,
}

#[derive(Default)]
pub(super) struct Crates {
    files: HashMap<PathBuf, File>,
}

impl Crates {
    fn file(&mut self, path: &Path) -> &File {
        self.files.entry(path.to_owned()).or_insert_with(|| {
            let source = fs::read_to_string(path)
                .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
            File {
                toks: lex(&blank(&source)),
                path_attrs: path_attrs(&source),
            }
        })
    }

    fn root_module(&mut self, file: PathBuf) -> Module {
        let len = self.file(&file).toks.len();
        let dir = file.parent().unwrap().to_owned();
        Module {
            file,
            range: (0, len),
            dir,
        }
    }

    fn declared(&mut self, module: &Module) -> Declared {
        let toks = &self.file(&module.file).toks[module.range.0..module.range.1];
        let mut declared = declare(toks);
        for range in declared.inline.values_mut() {
            range.0 += module.range.0;
            range.1 += module.range.0;
        }
        declared
    }

    fn child(&mut self, module: &Module, name: &str) -> Option<Module> {
        let declared = self.declared(module);
        if let Some(&range) = declared.inline.get(name) {
            return Some(Module {
                file: module.file.clone(),
                range,
                dir: module.dir.join(name),
            });
        }
        if !declared.files.contains(name) {
            return None;
        }
        let attr = self.file(&module.file).path_attrs.get(name).cloned();
        let file = match attr {
            Some(path) => module.file.parent().unwrap().join(path),
            None => {
                let flat = module.dir.join(format!("{name}.rs"));
                if flat.is_file() {
                    flat
                } else {
                    module.dir.join(name).join("mod.rs")
                }
            }
        };
        if !file.is_file() {
            return None;
        }
        let mut child = self.root_module(file.clone());
        if file.file_name().is_some_and(|n| n != "mod.rs") {
            child.dir = file.with_extension("");
        }
        Some(child)
    }

    /// Whether `ty` has the variant or associated item `member`, declared in `module` or in an
    /// `impl` in one of its submodules (an inherent impl may sit in any module of the crate).
    fn has_member(&mut self, module: &Module, ty: &str, member: &str) -> bool {
        let declared = self.declared(module);
        if declared
            .members
            .get(ty)
            .is_some_and(|members| members.contains(member))
        {
            return true;
        }
        let children: Vec<String> = declared
            .inline
            .keys()
            .chain(&declared.files)
            .cloned()
            .collect();
        children.iter().any(|name| {
            self.child(module, name)
                .is_some_and(|child| self.has_member(&child, ty, member))
        })
    }

    pub(super) fn resolve(&mut self, segments: &[&str]) -> Resolution {
        let lib = self.root_module(root().join("src/lib.rs"));
        let (mut module, rest) = match segments[0] {
            "crate" => (lib, &segments[1..]),
            "it" => (
                self.root_module(root().join("tests/it/main.rs")),
                &segments[1..],
            ),
            first if self.child(&lib, first).is_some() => (lib, segments),
            first if EXTERNAL_CRATES.contains(&first) => return Resolution::External,
            _ => return Resolution::Missing,
        };
        for (i, segment) in rest.iter().enumerate() {
            if let Some(child) = self.child(&module, segment) {
                module = child;
                continue;
            }
            let declared = self.declared(&module);
            let found = match rest.len() - i {
                1 => declared.items.contains(*segment),
                2 => {
                    declared.items.contains(*segment)
                        && self.has_member(&module, segment, rest[i + 1])
                }
                _ => false,
            };
            return if found {
                Resolution::Found
            } else {
                Resolution::Missing
            };
        }
        Resolution::Found
    }
}

/// The source with comments, strings and char literals blanked (newlines kept).
pub(super) fn blank(source: &str) -> Vec<u8> {
    let s = source.as_bytes();
    let mut out = s.to_vec();
    let mut i = 0;
    let wipe = |out: &mut Vec<u8>, from: usize, to: usize| {
        for b in &mut out[from..to] {
            if *b != b'\n' {
                *b = b' ';
            }
        }
    };
    while i < s.len() {
        let after_ident = i > 0 && is_ident(s[i - 1]);
        if s[i..].starts_with(b"//") {
            let end = s[i..]
                .iter()
                .position(|&b| b == b'\n')
                .map_or(s.len(), |p| i + p);
            wipe(&mut out, i, end);
            i = end;
        } else if s[i..].starts_with(b"/*") {
            let mut depth = 0;
            let mut j = i;
            while j < s.len() {
                if s[j..].starts_with(b"/*") {
                    depth += 1;
                    j += 2;
                } else if s[j..].starts_with(b"*/") {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    j += 1;
                }
            }
            wipe(&mut out, i, j);
            i = j;
        } else if !after_ident
            && (s[i..].starts_with(b"r#")
                || s[i..].starts_with(b"r\"")
                || s[i..].starts_with(b"br"))
        {
            // A raw string, if `#`s and a quote follow; else a raw identifier or a plain one.
            let mut j = i + if s[i] == b'b' { 2 } else { 1 };
            let hashes = s[j..].iter().take_while(|&&b| b == b'#').count();
            j += hashes;
            if s.get(j) == Some(&b'"') {
                let close: Vec<u8> = std::iter::once(b'"')
                    .chain(std::iter::repeat_n(b'#', hashes))
                    .collect();
                let end = s[j + 1..]
                    .windows(close.len())
                    .position(|w| w == close.as_slice())
                    .map_or(s.len(), |p| j + 1 + p + close.len());
                wipe(&mut out, i, end);
                i = end;
            } else {
                i += 1;
            }
        } else if s[i] == b'"' {
            let mut j = i + 1;
            while j < s.len() && s[j] != b'"' {
                j += if s[j] == b'\\' { 2 } else { 1 };
            }
            let end = (j + 1).min(s.len());
            wipe(&mut out, i, end);
            i = end;
        } else if s[i] == b'\'' {
            // A char literal ('x', '\n', '\u{..}', a multi-byte char), or a lifetime.
            let end = if s.get(i + 1) == Some(&b'\\') {
                s.get(i + 3..)
                    .and_then(|rest| rest.iter().position(|&b| b == b'\''))
                    .map(|p| i + 4 + p)
            } else {
                let width = match s.get(i + 1) {
                    Some(&b) if b >= 0xF0 => 4,
                    Some(&b) if b >= 0xE0 => 3,
                    Some(&b) if b >= 0xC0 => 2,
                    _ => 1,
                };
                (s.get(i + 1 + width) == Some(&b'\'')).then_some(i + 2 + width)
            };
            match end {
                Some(end) => {
                    wipe(&mut out, i, end);
                    i = end;
                }
                None => i += 1,
            }
        } else {
            i += 1;
        }
    }
    out
}

pub(super) fn lex(code: &[u8]) -> Vec<Tok> {
    let mut toks = Vec::new();
    let mut i = 0;
    while i < code.len() {
        let c = code[i];
        if is_ident_start(c) {
            let start = i;
            while i < code.len() && is_ident(code[i]) {
                i += 1;
            }
            let mut word = String::from_utf8_lossy(&code[start..i]).into_owned();
            if word == "r"
                && code.get(i) == Some(&b'#')
                && code.get(i + 1).is_some_and(|&b| is_ident_start(b))
            {
                let start = i + 1;
                i = start;
                while i < code.len() && is_ident(code[i]) {
                    i += 1;
                }
                word = String::from_utf8_lossy(&code[start..i]).into_owned();
            }
            toks.push(Tok::Ident(word));
        } else if c.is_ascii_digit() {
            while i < code.len() && is_ident(code[i]) {
                i += 1;
            }
        } else if (c == b'-' || c == b'=') && code.get(i + 1) == Some(&b'>') {
            toks.push(Tok::Arrow);
            i += 2;
        } else {
            if c.is_ascii_punctuation() {
                toks.push(Tok::Punct(c));
            }
            i += 1;
        }
    }
    toks
}

/// `#[path = "…"]` attributes on file modules: module name → path.
pub(super) fn path_attrs(source: &str) -> HashMap<String, String> {
    let mut attrs = HashMap::new();
    for (at, _) in source.match_indices("#[path") {
        let rest = &source[at..];
        let Some(open) = rest.find('"') else { continue };
        let Some(len) = rest[open + 1..].find('"') else {
            continue;
        };
        let path = &rest[open + 1..open + 1 + len];
        let after = &rest[open + 1 + len..];
        let Some(module) = after.find("mod ") else {
            continue;
        };
        let name: String = after[module + 4..]
            .trim_start()
            .chars()
            .take_while(|&c| c.is_ascii_alphanumeric() || c == '_')
            .collect();
        attrs.insert(name, path.to_owned());
    }
    attrs
}

pub(super) fn ident(tok: Option<&Tok>) -> Option<&str> {
    match tok {
        Some(Tok::Ident(word)) => Some(word),
        _ => None,
    }
}

pub(super) const KEYWORDS: &[&str] = &[
    "fn", "unsafe", "async", "extern", "mut", "const", "static", "struct", "enum", "trait", "type",
    "mod", "impl", "pub", "use", "crate", "where", "for", "dyn",
];

/// The next word after `at` if it is a name, not a keyword.
pub(super) fn name_at(toks: &[Tok], at: usize) -> Option<&str> {
    ident(toks.get(at)).filter(|w| !KEYWORDS.contains(w))
}

/// The index of the `}` closing the `{` at `open`.
pub(super) fn closing(toks: &[Tok], open: usize) -> usize {
    let mut depth = 0;
    for (i, tok) in toks.iter().enumerate().skip(open) {
        match tok {
            Tok::Punct(b'{') => depth += 1,
            Tok::Punct(b'}') => {
                depth -= 1;
                if depth == 0 {
                    return i;
                }
            }
            _ => {}
        }
    }
    toks.len()
}

/// The first `{` at or after `from`, if it comes before a `;`.
pub(super) fn body_open(toks: &[Tok], from: usize) -> Option<usize> {
    toks[from..]
        .iter()
        .position(|t| matches!(t, Tok::Punct(b'{' | b';')))
        .map(|p| from + p)
        .filter(|&p| toks[p] == Tok::Punct(b'{'))
}

/// What the items at the top of a module's tokens declare.
pub(super) fn declare(toks: &[Tok]) -> Declared {
    let mut declared = Declared::default();
    let mut i = 0;
    while i < toks.len() {
        match &toks[i] {
            Tok::Punct(b'{') => {
                i = closing(toks, i) + 1;
                continue;
            }
            Tok::Ident(word) => match word.as_str() {
                "fn" | "struct" | "union" | "const" | "static" | "type" => {
                    let at = if ident(toks.get(i + 1)) == Some("mut") {
                        i + 2
                    } else {
                        i + 1
                    };
                    if let Some(name) = name_at(toks, at) {
                        declared.items.insert(name.to_owned());
                    }
                }
                "macro_rules" if toks.get(i + 1) == Some(&Tok::Punct(b'!')) => {
                    if let Some(name) = name_at(toks, i + 2) {
                        declared.items.insert(name.to_owned());
                        // What a macro's body declares (the operations table's enum and table)
                        // counts as the module's: the module invokes it.
                        if let Some(open) = body_open(toks, i + 3) {
                            let end = closing(toks, open);
                            for pair in toks[open + 1..end].windows(2) {
                                if let [Tok::Ident(keyword), Tok::Ident(item)] = pair
                                    && ["enum", "struct", "fn", "static", "const", "type"]
                                        .contains(&keyword.as_str())
                                {
                                    declared.items.insert(item.clone());
                                }
                            }
                            i = end + 1;
                            continue;
                        }
                    }
                }
                "mod" => {
                    if let Some(name) = name_at(toks, i + 1) {
                        declared.items.insert(name.to_owned());
                        match toks.get(i + 2) {
                            Some(Tok::Punct(b'{')) => {
                                let end = closing(toks, i + 2);
                                declared.inline.insert(name.to_owned(), (i + 3, end));
                                i = end + 1;
                                continue;
                            }
                            _ => {
                                declared.files.insert(name.to_owned());
                            }
                        }
                    }
                }
                "enum" | "trait" => {
                    if let Some(name) = name_at(toks, i + 1) {
                        let name = name.to_owned();
                        declared.items.insert(name.clone());
                        if let Some(open) = body_open(toks, i + 2) {
                            let end = closing(toks, open);
                            let members = if word == "enum" {
                                variants(&toks[open + 1..end])
                            } else {
                                associated(&toks[open + 1..end])
                            };
                            declared.members.entry(name).or_default().extend(members);
                            i = end + 1;
                            continue;
                        }
                    }
                }
                "impl" => {
                    if let Some(open) = body_open(toks, i + 1) {
                        let end = closing(toks, open);
                        if let Some(name) = self_type(&toks[i + 1..open]) {
                            declared
                                .members
                                .entry(name)
                                .or_default()
                                .extend(associated(&toks[open + 1..end]));
                        }
                        i = end + 1;
                        continue;
                    }
                }
                "use"
                    if i > 0
                        && (ident(toks.get(i - 1)) == Some("pub")
                            || toks.get(i - 1) == Some(&Tok::Punct(b')'))) =>
                {
                    let end = toks[i..]
                        .iter()
                        .position(|t| *t == Tok::Punct(b';'))
                        .map_or(toks.len(), |p| i + p);
                    for j in i + 1..end {
                        let leaf = matches!(toks.get(j + 1), Some(Tok::Punct(b',' | b'}' | b';')));
                        let alias = ident(toks.get(j.wrapping_sub(1))) == Some("as");
                        if let Some(name) = name_at(toks, j).filter(|_| leaf || alias) {
                            declared.items.insert(name.to_owned());
                        }
                    }
                    i = end;
                }
                _ => {}
            },
            _ => {}
        }
        i += 1;
    }
    declared
}

/// The associated fns, consts and types at the top of an `impl` or trait body.
pub(super) fn associated(toks: &[Tok]) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut i = 0;
    while i < toks.len() {
        if toks[i] == Tok::Punct(b'{') {
            i = closing(toks, i) + 1;
            continue;
        }
        if let Some("fn" | "const" | "type") = ident(toks.get(i))
            && let Some(name) = name_at(toks, i + 1)
        {
            names.insert(name.to_owned());
        }
        i += 1;
    }
    names
}

/// An enum body's variant names.
pub(super) fn variants(toks: &[Tok]) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut depth = 0;
    let mut expecting = true;
    for tok in toks {
        match tok {
            Tok::Punct(b'(' | b'{' | b'[') => depth += 1,
            Tok::Punct(b')' | b'}' | b']') => depth -= 1,
            Tok::Punct(b',') if depth == 0 => expecting = true,
            Tok::Ident(name) if depth == 0 && expecting => {
                names.insert(name.clone());
                expecting = false;
            }
            _ => {}
        }
    }
    names
}

/// The type an `impl` header (the tokens between `impl` and `{`) is for.
pub(super) fn self_type(header: &[Tok]) -> Option<String> {
    let mut start = 0;
    if header.first() == Some(&Tok::Punct(b'<')) {
        let mut depth = 0;
        for (i, tok) in header.iter().enumerate() {
            match tok {
                Tok::Punct(b'<') => depth += 1,
                Tok::Punct(b'>') => {
                    depth -= 1;
                    if depth == 0 {
                        start = i + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
    }
    let mut depth = 0;
    let mut name = None;
    for tok in &header[start..] {
        match tok {
            Tok::Punct(b'<') => depth += 1,
            Tok::Punct(b'>') => depth -= 1,
            Tok::Ident(word) if depth == 0 && word == "for" => name = None,
            Tok::Ident(word) if depth == 0 && word == "where" => break,
            Tok::Ident(word) if depth == 0 && !KEYWORDS.contains(&word.as_str()) => {
                name = Some(word.clone());
            }
            _ => {}
        }
    }
    name
}
