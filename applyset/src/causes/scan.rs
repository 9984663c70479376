//! The rule of this module, checked over the sources of both crates: no `#[error("…")]`
//! message names a field that is the error's source (`#[source]`, `#[from]`, or a field called
//! `source`), neither as a placeholder (`{source}`, `{0}`) nor in a format argument
//! (`error_text(.source)`). A source is printed by whoever reports the chain, so a message that
//! names it prints it twice.

use std::path::{Path, PathBuf};

/// One `#[error(…)]` attribute that names a source field.
#[derive(Debug)]
struct Violation {
    place: String,
    item: String,
    fields: Vec<String>,
}

/// The Rust files under `dir`.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).expect("a source folder").flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

/// The end (exclusive) of the string literal starting at `at` (`"…"`, `r"…"`, `r#"…"#`).
fn string_end(text: &[u8], at: usize) -> usize {
    if text[at] == b'r' {
        let hashes = text[at + 1..].iter().take_while(|&&b| b == b'#').count();
        let body = at + 2 + hashes;
        let mut end = body;
        loop {
            if text[end] == b'"' && text[end + 1..].iter().take(hashes).all(|&b| b == b'#') {
                return end + 1 + hashes;
            }
            end += 1;
        }
    }
    let mut end = at + 1;
    while text[end] != b'"' {
        end += if text[end] == b'\\' { 2 } else { 1 };
    }
    end + 1
}

/// Whether a string literal starts at `at`.
fn starts_string(text: &[u8], at: usize) -> bool {
    let raw = text[at] == b'r'
        && (at == 0 || !(text[at - 1].is_ascii_alphanumeric() || text[at - 1] == b'_'))
        && text[at + 1..].iter().find(|&&b| b != b'#') == Some(&b'"');
    raw || text[at] == b'"'
}

/// `text` with its comments blanked (strings kept), so that attributes quoted in docs do not
/// count, and where its string literals start and end (attributes quoted in them do not count
/// either).
fn without_comments(text: &str) -> (String, Vec<std::ops::Range<usize>>) {
    let bytes = text.as_bytes();
    let mut out = bytes.to_vec();
    let mut strings = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        if bytes[at..].starts_with(b"//") {
            while at < bytes.len() && bytes[at] != b'\n' {
                out[at] = b' ';
                at += 1;
            }
        } else if bytes[at..].starts_with(b"/*") {
            while at < bytes.len() && !bytes[at..].starts_with(b"*/") {
                if bytes[at] != b'\n' {
                    out[at] = b' ';
                }
                at += 1;
            }
            out[at..(at + 2).min(bytes.len())].fill(b' ');
            at += 2;
        } else if starts_string(bytes, at) {
            let end = string_end(bytes, at);
            strings.push(at..end);
            at = end;
        } else if bytes[at] == b'\'' {
            // A character literal (`'"'`, `'\''`) or a lifetime.
            at += match (bytes.get(at + 1), bytes.get(at + 2)) {
                (Some(b'\\'), _) => bytes[at + 3..].iter().position(|&b| b == b'\'').map_or(1, |p| p + 4),
                (Some(_), Some(b'\'')) => 3,
                _ => 1,
            };
        } else {
            at += 1;
        }
    }
    (String::from_utf8(out).expect("blanking ASCII keeps UTF-8"), strings)
}

/// The end (exclusive) of the bracketed group opening at `at`, strings respected.
fn group_end(text: &[u8], at: usize) -> usize {
    let (open, close) = (
        text[at],
        match text[at] {
            b'(' => b')',
            b'[' => b']',
            b'{' => b'}',
            _ => b'>',
        },
    );
    let mut depth = 0;
    let mut end = at;
    loop {
        if starts_string(text, end) {
            end = string_end(text, end);
            continue;
        }
        if text[end] == open {
            depth += 1;
        } else if text[end] == close && !(close == b'>' && matches!(text[end - 1], b'-' | b'=')) {
            depth -= 1;
            if depth == 0 {
                return end + 1;
            }
        }
        end += 1;
    }
}

/// `text` split at its top-level commas (inside no bracket, angle bracket or string).
fn split_top(text: &str) -> Vec<&str> {
    let bytes = text.as_bytes();
    let (mut parts, mut depth, mut start, mut at) = (Vec::new(), 0i32, 0, 0);
    while at < bytes.len() {
        if starts_string(bytes, at) {
            at = string_end(bytes, at);
            continue;
        }
        match bytes[at] {
            b'(' | b'[' | b'{' | b'<' => depth += 1,
            b'>' if at > 0 && matches!(bytes[at - 1], b'-' | b'=') => {}
            b')' | b']' | b'}' | b'>' => depth -= 1,
            b',' if depth == 0 => {
                parts.push(&text[start..at]);
                start = at + 1;
            }
            _ => {}
        }
        at += 1;
    }
    if !text[start..].trim().is_empty() {
        parts.push(&text[start..]);
    }
    parts
}

/// The argument names of a format string's placeholders (`""` for a positional `{}`).
fn placeholders(format: &str) -> Vec<&str> {
    let mut names = Vec::new();
    let mut rest = format;
    while let Some(at) = rest.find(['{', '}']) {
        if rest[at..].starts_with("{{") || rest[at..].starts_with("}}") {
            rest = &rest[at + 2..];
            continue;
        }
        if rest[at..].starts_with('}') {
            rest = &rest[at + 1..];
            continue;
        }
        let end = rest[at..].find('}').map_or(rest.len(), |e| at + e);
        let inner = &rest[at + 1..end];
        names.push(inner.split(':').next().unwrap_or("").trim());
        rest = &rest[(end + 1).min(rest.len())..];
    }
    names
}

/// Whether the expression `expression` names field `field` (as `.field` or `field`, not as a
/// path segment or a method of something else).
fn names_field(expression: &str, field: &str) -> bool {
    let bytes = expression.as_bytes();
    let is_word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    expression.match_indices(field).any(|(at, _)| {
        let after = at + field.len();
        if at > 0 && is_word(bytes[at - 1]) || bytes.get(after).is_some_and(|&b| is_word(b)) {
            return false;
        }
        let before = expression[..at].trim_end();
        if before.ends_with("::") {
            return false;
        }
        match before.strip_suffix('.') {
            Some(receiver) => !receiver.trim_end().ends_with(|c: char| c.is_alphanumeric() || "_)]".contains(c)),
            None => true,
        }
    })
}

/// The fields of an item body (`{ a: T, #[source] b: U }` or `(T, #[from] U)`), each with
/// whether it is the error's source.
fn fields(body: &str, braced: bool) -> Vec<(String, bool)> {
    split_top(body)
        .iter()
        .enumerate()
        .map(|(index, field)| {
            let marked = field.contains("#[source]") || field.contains("#[from]");
            let mut declaration = field.trim();
            while declaration.starts_with("#[") {
                let end = group_end(declaration.as_bytes(), 1);
                declaration = declaration[end..].trim_start();
            }
            let declaration = declaration.strip_prefix("pub ").unwrap_or(declaration).trim_start();
            if braced {
                let name = declaration.split(':').next().unwrap_or("").trim().to_owned();
                let is_source = marked || name == "source";
                (name, is_source)
            } else {
                (index.to_string(), marked)
            }
        })
        .collect()
}

/// The `#[error(…)]` attributes of `source` that name a source field.
fn violations(place: &str, source: &str) -> Vec<Violation> {
    let (text, strings) = without_comments(source);
    let text = text.as_str();
    let bytes = text.as_bytes();
    let mut found = Vec::new();
    for (attribute, _) in text.match_indices("#[error(") {
        if strings.iter().any(|string| string.contains(&attribute)) {
            continue;
        }
        let open = attribute + "#[error".len();
        let close = group_end(bytes, open);
        let arguments = text[open + 1..close - 1].trim();
        if arguments.starts_with("transparent") {
            continue;
        }
        let format_end = string_end(arguments.as_bytes(), 0);
        let format = &arguments[..format_end];
        let extra = split_top(arguments[format_end..].trim_start().trim_start_matches(','));
        let (named, positional): (Vec<&str>, Vec<&str>) = extra.iter().partition(|argument| {
            argument.split_once('=').is_some_and(|(name, rest)| {
                !rest.starts_with('=') && name.trim().chars().all(|c| c.is_alphanumeric() || c == '_')
            })
        });

        // The item the attribute is on: skip other attributes, then `pub`, `struct`, the name.
        let mut at = close + 1;
        loop {
            while bytes[at].is_ascii_whitespace() {
                at += 1;
            }
            if bytes[at..].starts_with(b"#[") {
                at = group_end(bytes, at + 1);
            } else {
                break;
            }
        }
        let rest = &text[at..];
        let rest = rest.strip_prefix("pub ").unwrap_or(rest).trim_start();
        let rest = rest.strip_prefix("struct ").unwrap_or(rest).trim_start();
        let name_end = rest.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(rest.len());
        let item = rest[..name_end].to_owned();
        let mut body_at = at + (text[at..].len() - rest.len()) + name_end;
        while bytes[body_at].is_ascii_whitespace() {
            body_at += 1;
        }
        if bytes[body_at] == b'<' {
            body_at = group_end(bytes, body_at);
            while bytes[body_at].is_ascii_whitespace() {
                body_at += 1;
            }
        }
        let item_fields = match bytes[body_at] {
            open @ (b'{' | b'(') => fields(&text[body_at + 1..group_end(bytes, body_at) - 1], open == b'{'),
            _ => Vec::new(),
        };
        let sources: Vec<&str> = item_fields.iter().filter(|(_, is)| *is).map(|(n, _)| n.as_str()).collect();

        let mut named_sources = Vec::new();
        let mut positional = positional.iter();
        for placeholder in placeholders(&format[1..format.len() - 1]) {
            let expression = if placeholder.is_empty() {
                positional.next().copied()
            } else {
                named.iter().find(|a| a.split('=').next().is_some_and(|n| n.trim() == placeholder)).copied()
            };
            match expression {
                Some(expression) => {
                    let value =
                        expression.split_once('=').filter(|_| !placeholder.is_empty()).map_or(expression, |(_, v)| v);
                    named_sources
                        .extend(sources.iter().filter(|field| names_field(value, field)).map(|f| f.to_string()));
                }
                None if sources.contains(&placeholder) => named_sources.push(placeholder.to_owned()),
                None => {}
            }
        }
        if !named_sources.is_empty() {
            named_sources.sort();
            named_sources.dedup();
            let line = text[..attribute].matches('\n').count() + 1;
            found.push(Violation { place: format!("{place}:{line}"), item, fields: named_sources });
        }
    }
    found
}

#[test]
fn the_scan_finds_a_source_in_a_message() {
    let scanned = |text: &str| violations("x.rs", text).into_iter().map(|v| v.item).collect::<Vec<_>>();
    let text = r#"
        enum E {
            /// #[error("{source}")] in a comment is not code.
            #[error("reading {path}: {source}")]
            Named { path: String, source: std::io::Error },
            #[error("decoding: {0}")]
            Tuple(#[from] serde_json::Error),
            #[error("listing {plural}: {}", error_text(.error))]
            Rendered { plural: String, #[source] error: kube::Error },
            #[error("reading {path}")]
            Fine { path: String, #[source] error: std::io::Error },
            #[error("{what}: {}", .detail.len())]
            Data { what: String, detail: String },
            #[error(transparent)]
            Through(#[from] Other),
        }
    "#;
    assert_eq!(scanned(text), ["Named", "Tuple", "Rendered"]);
}

#[test]
fn no_error_message_names_its_source() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut checked = 0;
    let mut found = Vec::new();
    for dir in [root.join("src"), root.join("../merge/src")] {
        for file in rust_files(&dir) {
            let text = std::fs::read_to_string(&file).expect("a readable source");
            checked += text.matches("#[error(").count();
            let place = file.strip_prefix(root).unwrap_or(&file).display().to_string();
            found.extend(violations(&place, &text));
        }
    }
    assert!(checked > 300, "the scan saw the error types ({checked} attributes)");
    let report: Vec<String> = found
        .iter()
        .map(|v| format!("{}: {} prints its source {:?} in its message", v.place, v.item, v.fields))
        .collect();
    assert!(report.is_empty(), "{}", report.join("\n"));
}
