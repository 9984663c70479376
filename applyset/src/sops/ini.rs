//! INI as SOPS's INI store reads it (gopkg.in/ini.v1 with its defaults): `[section]` headers
//! (keys before the first are in `DEFAULT`, sections may repeat), `key = value` or
//! `key: value`, `;`/`#` comments (also after a value), values quoted with `"""…"""`,
//! backticks or surrounding quotes. A value's path is its section and key. The metadata is
//! the `[sops]` section, flattened, newlines written as `\n`.

use super::error::{KeyPath, SopsError};
use super::tree::Node;

/// The section keys before any header belong to.
const DEFAULT_SECTION: &str = "DEFAULT";

fn syntax(message: String) -> SopsError {
    SopsError::Syntax { format: "INI", message }
}

/// The sections, each a map of its keys, in file order.
pub(crate) fn parse(text: &[u8]) -> Result<Vec<(String, Node)>, SopsError> {
    let text = std::str::from_utf8(text).map_err(|_| syntax("the file is not UTF-8 text".into()))?;
    let mut sections: Vec<(String, Node)> = Vec::new();
    let mut lines = text.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l)).enumerate();
    while let Some((number, raw)) = lines.next() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with(';') || line.starts_with('#') {
            continue;
        }
        if let Some(header) = line.strip_prefix('[') {
            let name = header
                .split_once(']')
                .map(|(name, _)| name.trim())
                .ok_or_else(|| syntax(format!("line {}: unclosed section header", number + 1)))?;
            sections.push((name.to_owned(), Node::Map(Vec::new())));
            continue;
        }
        let (key, rest) =
            split_key(line).ok_or_else(|| syntax(format!("line {}: a key without a value", number + 1)))?;
        let value = if let Some(body) = rest.strip_prefix("\"\"\"").filter(|_| rest.len() > 3) {
            // A multi-line value runs to the closing quotes, on this line or a later one.
            let mut value = body.to_owned();
            loop {
                if let Some(end) = value.rfind("\"\"\"") {
                    value.truncate(end);
                    break value;
                }
                let (_, next) =
                    lines.next().ok_or_else(|| syntax(format!("line {}: unclosed \"\"\" value", number + 1)))?;
                value.push('\n');
                value.push_str(next);
            }
        } else if let Some(body) = rest.strip_prefix('`') {
            let end = body.rfind('`').ok_or_else(|| syntax(format!("line {}: unclosed ` value", number + 1)))?;
            body[..end].to_owned()
        } else {
            plain_value(rest)
        };
        if sections.is_empty() {
            sections.push((DEFAULT_SECTION.to_owned(), Node::Map(Vec::new())));
        }
        let Some((_, Node::Map(keys))) = sections.last_mut() else { unreachable!("sections hold maps") };
        keys.push((key, Node::Str(value)));
    }
    Ok(sections)
}

/// `key = rest`: the key (quoted with backticks or double quotes, or up to `=`/`:`) trimmed.
fn split_key(line: &str) -> Option<(String, &str)> {
    let (key, after) = match line.as_bytes()[0] {
        quote @ (b'`' | b'"') => {
            let end = line[1..].find(quote as char)? + 1;
            (&line[1..end], line[end + 1..].trim_start())
        }
        _ => {
            let at = line.find(['=', ':'])?;
            (line[..at].trim(), &line[at..])
        }
    };
    let rest = after.strip_prefix(['=', ':'])?;
    Some((key.to_owned(), rest.trim()))
}

/// An unquoted value: up to an inline comment, then without surrounding quotes.
fn plain_value(rest: &str) -> String {
    let value = match rest.find(['#', ';']) {
        Some(at) => rest[..at].trim(),
        None => rest.trim(),
    };
    let quoted = |q: char| value.len() >= 2 && value.starts_with(q) && value.ends_with(q);
    if quoted('"') || quoted('\'') { value[1..value.len() - 1].to_owned() } else { value.to_owned() }
}

/// The sections as INI text, quoting values as gopkg.in/ini.v1 writes them.
pub(crate) fn emit(sections: &[(String, Node)]) -> Result<String, SopsError> {
    let mut out = String::new();
    for (name, section) in sections {
        let Node::Map(keys) = section else {
            return Err(SopsError::NotText { path: KeyPath(vec![name.clone()]), format: "INI" });
        };
        if name != DEFAULT_SECTION {
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str(&format!("[{name}]\n"));
        } else if keys.is_empty() {
            continue;
        }
        for (key, value) in keys {
            let text = match value {
                Node::Str(s) | Node::Time(s) => s.clone(),
                Node::Int(i) => i.to_string(),
                Node::Float(f) => super::tree::go_float_text(*f),
                Node::Bool(b) => b.to_string(),
                Node::Null => String::new(),
                Node::Bytes(_) | Node::Map(_) | Node::Seq(_) => {
                    return Err(SopsError::NotText { path: KeyPath(vec![name.clone(), key.clone()]), format: "INI" });
                }
            };
            let key = if key.contains(['=', ':', '"', '`']) { format!("`{key}`") } else { key.clone() };
            out.push_str(&format!("{key} = {}\n", quote_value(&text)));
        }
    }
    Ok(out)
}

fn quote_value(value: &str) -> String {
    if value.contains(['\n', '`']) {
        format!("\"\"\"{value}\"\"\"")
    } else if value.contains(['#', ';']) {
        format!("`{value}`")
    } else if value.trim() != value {
        format!("\"{value}\"")
    } else {
        value.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &str) -> Node {
        Node::Str(v.into())
    }

    #[test]
    fn sections_keys_comments_and_quotes() {
        let text = "top = 1\n[db]\nuser     = admin\n; comment\npassword = s3cr3t ; inline\nq = \"quoted value\"\nb = `a#b`\nm = \"\"\"one\ntwo\"\"\"\n[db]\nx: y\n";
        let sections = parse(text.as_bytes()).unwrap();
        assert_eq!(
            sections,
            vec![
                ("DEFAULT".into(), Node::Map(vec![("top".into(), s("1"))])),
                (
                    "db".into(),
                    Node::Map(vec![
                        ("user".into(), s("admin")),
                        ("password".into(), s("s3cr3t")),
                        ("q".into(), s("quoted value")),
                        ("b".into(), s("a#b")),
                        ("m".into(), s("one\ntwo")),
                    ])
                ),
                ("db".into(), Node::Map(vec![("x".into(), s("y"))])),
            ]
        );
        assert_eq!(
            emit(&sections).unwrap(),
            "top = 1\n\n[db]\nuser = admin\npassword = s3cr3t\nq = quoted value\nb = `a#b`\nm = \"\"\"one\ntwo\"\"\"\n\n[db]\nx = y\n"
        );
        assert!(parse(b"[open\n").is_err());
        assert!(parse(b"[s]\nnovalue\n").is_err());
    }
}
