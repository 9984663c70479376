//! dotenv as SOPS's dotenv store reads it: `KEY=value` lines (`\n` in a value stands for a
//! newline), `#` comment lines, blank lines skipped; the metadata is flattened into
//! `sops_…` keys. Written back as SOPS writes the decrypted file, the form kustomize's
//! generators (`envs:`) read.

use super::error::{KeyPath, SopsError};
use super::tree::Node;

/// The prefix of the metadata keys.
pub(crate) const METADATA_PREFIX: &str = "sops_";

/// Keys and their values, in file order.
pub(crate) type Entries = Vec<(String, Node)>;

/// The entries of the file (comments left out), and the `sops_` entries apart, unprefixed.
pub(crate) fn parse(text: &[u8]) -> Result<(Entries, Entries), SopsError> {
    let text = std::str::from_utf8(text)
        .map_err(|_| SopsError::Syntax { format: "dotenv", message: "the file is not UTF-8 text".into() })?;
    let mut entries = Vec::new();
    let mut metadata = Vec::new();
    for (number, line) in text.split('\n').enumerate() {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            return Err(SopsError::Syntax {
                format: "dotenv",
                message: format!("line {} is not KEY=value", number + 1),
            });
        };
        let value = Node::Str(value.replace("\\n", "\n"));
        match key.strip_prefix(METADATA_PREFIX) {
            Some(field) => metadata.push((field.to_owned(), value)),
            None => entries.push((key.to_owned(), value)),
        }
    }
    Ok((entries, metadata))
}

/// The entries as dotenv lines (`stores/dotenv`'s `EmitPlainFile`).
pub(crate) fn emit(entries: &[(String, Node)]) -> Result<String, SopsError> {
    let mut out = String::new();
    for (key, value) in entries {
        let text = match value {
            Node::Str(s) | Node::Time(s) => s.replace('\n', "\\n"),
            Node::Int(i) => i.to_string(),
            Node::Float(f) => super::tree::go_float_text(*f),
            Node::Bool(b) => b.to_string(),
            Node::Null => String::new(),
            Node::Bytes(_) | Node::Map(_) | Node::Seq(_) => {
                return Err(SopsError::NotText { path: KeyPath(vec![key.clone()]), format: "dotenv" });
            }
        };
        out.push_str(key);
        out.push('=');
        out.push_str(&text);
        out.push('\n');
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_comments_and_metadata() {
        let (entries, metadata) = parse(b"#c\nA=1\nB=x\\ny=z\n\nsops_mac=M\n").unwrap();
        assert_eq!(entries, vec![("A".into(), Node::Str("1".into())), ("B".into(), Node::Str("x\ny=z".into()))]);
        assert_eq!(metadata, vec![("mac".into(), Node::Str("M".into()))]);
        assert_eq!(emit(&entries).unwrap(), "A=1\nB=x\\ny=z\n");
        let error = parse(b"A=1\nsecret-without-equals\n").unwrap_err().to_string();
        assert_eq!(error, "not valid dotenv: line 2 is not KEY=value");
    }
}
