//! The `sops` metadata of a file (`stores/stores.go`'s `metadata`), read with mapstructure's
//! weak typing (dotenv and INI files hold every field as a string), and checked as SOPS checks
//! it before decrypting: a parseable `lastmodified`, at most one encryption rule, some key.

use regex::Regex;

use super::error::{KeyKinds, SopsError};
use super::time;
use super::tree::{Node, Rule};

use crate::causes::Chain;

/// One `age` entry: the data key (or a Shamir share of it) encrypted to `recipient`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AgeStanza {
    pub(crate) recipient: String,
    /// An armored age file.
    pub(crate) enc: String,
}

/// The keys of one key group (one group: all of them wrap the whole data key).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct KeyGroup {
    pub(crate) age: Vec<AgeStanza>,
    /// The other key types present, which applyset cannot use.
    pub(crate) others: KeyKinds,
}

#[derive(Debug)]
pub(crate) struct Metadata {
    pub(crate) groups: Vec<KeyGroup>,
    pub(crate) shamir_threshold: usize,
    /// `lastmodified` as Go formats it back (the MAC's additional data).
    pub(crate) last_modified: String,
    pub(crate) mac: String,
    pub(crate) rule: Rule,
    pub(crate) mac_only_encrypted: bool,
}

/// The key types besides age, with their names in messages, in SOPS's order.
const OTHER_KEY_TYPES: [(&str, &str); 6] = [
    ("kms", "AWS KMS"),
    ("gcp_kms", "GCP KMS"),
    ("hckms", "HuaweiCloud KMS"),
    ("azure_kv", "Azure Key Vault"),
    ("hc_vault", "HashiCorp Vault"),
    ("pgp", "PGP"),
];

/// The fields that set which values are encrypted.
const RULE_FIELDS: [&str; 6] = [
    "unencrypted_suffix",
    "encrypted_suffix",
    "unencrypted_regex",
    "encrypted_regex",
    "unencrypted_comment_regex",
    "encrypted_comment_regex",
];

/// A metadata problem.
fn bad(message: impl Into<String>) -> SopsError {
    SopsError::Metadata(message.into())
}

/// A scalar as mapstructure reads it into a string field (weakly typed).
fn text(node: &Node) -> Option<String> {
    match node {
        Node::Str(s) | Node::Time(s) => Some(s.clone()),
        Node::Int(i) => Some(i.to_string()),
        Node::Float(f) => Some(super::tree::go_float_text(*f)),
        Node::Bool(b) => Some(if *b { "1" } else { "0" }.to_owned()),
        _ => None,
    }
}

fn string_field(sops: &Node, field: &str) -> Result<Option<String>, SopsError> {
    match sops.get(field) {
        None | Some(Node::Null) => Ok(None),
        Some(node) => text(node).map(Some).ok_or_else(|| bad(format!("{field} is not a string"))),
    }
}

impl Metadata {
    /// Reads the metadata map (the value of the `sops` key, or the unflattened `sops_` keys).
    pub(crate) fn read(sops: &Node) -> Result<Metadata, SopsError> {
        if !matches!(sops, Node::Map(_)) {
            return Err(bad("sops is not a mapping"));
        }
        let last_modified = string_field(sops, "lastmodified")?.ok_or_else(|| bad("lastmodified is missing"))?;
        let last_modified =
            time::rfc3339(&last_modified).ok_or_else(|| bad("lastmodified is not an RFC 3339 time"))?.rfc3339();
        let mac = string_field(sops, "mac")?.unwrap_or_default();
        let rule = rule(sops)?;
        let mac_only_encrypted = match sops.get("mac_only_encrypted") {
            None | Some(Node::Null) => false,
            Some(Node::Bool(b)) => *b,
            Some(Node::Int(i)) => *i != 0,
            Some(Node::Str(s)) if s.is_empty() => false,
            Some(Node::Str(s)) => {
                super::cipher::go_parse_bool(s).ok_or_else(|| bad("mac_only_encrypted is not a boolean"))?
            }
            Some(_) => return Err(bad("mac_only_encrypted is not a boolean")),
        };
        let shamir_threshold = match sops.get("shamir_threshold") {
            None | Some(Node::Null) => 0,
            Some(Node::Int(i)) => usize::try_from(*i).map_err(|_| bad("shamir_threshold is negative"))?,
            Some(Node::Str(s)) if s.is_empty() => 0,
            Some(Node::Str(s)) => s.parse().map_err(|_| bad("shamir_threshold is not a number"))?,
            Some(_) => return Err(bad("shamir_threshold is not a number")),
        };
        let groups = key_groups(sops)?;
        Ok(Metadata { groups, shamir_threshold, last_modified, mac, rule, mac_only_encrypted })
    }

    /// The public keys of every age recipient, in file order.
    pub(crate) fn recipients(&self) -> Vec<String> {
        self.groups.iter().flat_map(|g| g.age.iter().map(|s| s.recipient.clone())).collect()
    }
}

/// The encryption rule (`metadata.ToInternal`): more than one is refused, none is
/// `unencrypted_suffix: _unencrypted`.
fn rule(sops: &Node) -> Result<Rule, SopsError> {
    let mut set = Vec::new();
    for field in RULE_FIELDS {
        if let Some(value) = string_field(sops, field)?.filter(|v| !v.is_empty()) {
            set.push((field, value));
        }
    }
    if set.len() > 1 {
        return Err(bad(
            "Cannot use more than one of encrypted_suffix, unencrypted_suffix, encrypted_regex, unencrypted_regex, encrypted_comment_regex, or unencrypted_comment_regex in the same file",
        ));
    }
    let regex = |field: &str, value: &str| {
        Regex::new(value).map_err(|e| bad(format!("{field} is not a valid regular expression: {e}", e = Chain(&e))))
    };
    Ok(match set.pop() {
        None => Rule::UnencryptedSuffix("_unencrypted".to_owned()),
        Some(("unencrypted_suffix", value)) => Rule::UnencryptedSuffix(value),
        Some(("encrypted_suffix", value)) => Rule::EncryptedSuffix(value),
        Some(("unencrypted_regex", value)) => Rule::UnencryptedRegex(regex("unencrypted_regex", &value)?),
        Some(("encrypted_regex", value)) => Rule::EncryptedRegex(regex("encrypted_regex", &value)?),
        // The comment rules decide by the comments above a value, which applyset's readers
        // do not keep.
        Some(_) => return Err(SopsError::Unsupported("encrypted_comment_regex / unencrypted_comment_regex")),
    })
}

/// The key groups: the top-level key lists form one group; else `key_groups` lists them.
fn key_groups(sops: &Node) -> Result<Vec<KeyGroup>, SopsError> {
    let top = group(sops, "sops")?;
    if !top.age.is_empty() || !top.others.0.is_empty() {
        return Ok(vec![top]);
    }
    let groups = match sops.get("key_groups") {
        Some(Node::Seq(items)) if !items.is_empty() => items
            .iter()
            .enumerate()
            .map(|(i, item)| group(item, &format!("key_groups[{i}]")))
            .collect::<Result<Vec<_>, _>>()?,
        Some(Node::Seq(_)) | None | Some(Node::Null) => return Err(bad("No keys found in file")),
        Some(_) => return Err(bad("key_groups is not a list")),
    };
    Ok(groups)
}

fn group(map: &Node, place: &str) -> Result<KeyGroup, SopsError> {
    let mut group = KeyGroup::default();
    for (field, name) in OTHER_KEY_TYPES {
        if let Some(Node::Seq(items)) = map.get(field)
            && !items.is_empty()
        {
            group.others.0.push(name);
        }
    }
    let entries = match map.get("age") {
        None | Some(Node::Null) => return Ok(group),
        Some(Node::Seq(entries)) => entries,
        Some(_) => return Err(bad(format!("{place}.age is not a list"))),
    };
    for (i, entry) in entries.iter().enumerate() {
        let field = |name: &str| -> Result<String, SopsError> {
            entry
                .get(name)
                .and_then(text)
                .filter(|v| !v.is_empty())
                .ok_or_else(|| bad(format!("{place}.age[{i}].{name} is missing")))
        };
        group.age.push(AgeStanza { recipient: field("recipient")?, enc: field("enc")? });
    }
    Ok(group)
}

/// The tree a flattened metadata (`sops_age__list_0__map_enc=…` in dotenv, the `[sops]`
/// section in INI) stands for (`stores/flatten.go`'s `unflattenTreeBranch`).
pub(crate) fn unflatten(entries: Vec<(String, Node)>) -> Result<Node, SopsError> {
    let mut root = Node::Map(Vec::new());
    for (key, value) in entries {
        let mut at = &mut root;
        for token in tokens(&key) {
            at = match token {
                Token::Key(name) => {
                    if matches!(at, Node::Null) {
                        *at = Node::Map(Vec::new());
                    }
                    let Node::Map(map) = at else { return Err(bad(format!("{key}: a list and a map at once"))) };
                    let index = match map.iter().position(|(k, _)| k == name) {
                        Some(index) => index,
                        None => {
                            map.push((name.to_owned(), Node::Null));
                            map.len() - 1
                        }
                    };
                    &mut map[index].1
                }
                Token::Index(index) => {
                    if matches!(at, Node::Null) {
                        *at = Node::Seq(Vec::new());
                    }
                    let Node::Seq(items) = at else { return Err(bad(format!("{key}: a list and a map at once"))) };
                    if index > items.len() {
                        // Indices are written in order; a gap is an incomplete list.
                        return Err(bad(format!("{key}: incomplete list")));
                    }
                    if index == items.len() {
                        items.push(Node::Null);
                    }
                    &mut items[index]
                }
            };
        }
        if !matches!(at, Node::Null) {
            return Err(bad(format!("{key}: given twice")));
        }
        *at = value;
    }
    Ok(root)
}

enum Token<'a> {
    Key(&'a str),
    Index(usize),
}

/// `a__map_b__list_0` → `a`, `b`, `0`.
fn tokens(path: &str) -> Vec<Token<'_>> {
    const MAP: &str = "__map_";
    const LIST: &str = "__list_";
    let mut out = Vec::new();
    let mut rest = path;
    let mut is_index = false;
    loop {
        let next = [rest.find(MAP).map(|at| (at, MAP, false)), rest.find(LIST).map(|at| (at, LIST, true))]
            .into_iter()
            .flatten()
            .min_by_key(|(at, _, _)| *at);
        let (part, following) = match next {
            Some((at, separator, index)) => ((&rest[..at]), Some((&rest[at + separator.len()..], index))),
            None => (rest, None),
        };
        out.push(if is_index { Token::Index(part.parse().unwrap_or(usize::MAX)) } else { Token::Key(part) });
        match following {
            Some((remaining, index)) => {
                rest = remaining;
                is_index = index;
            }
            None => return out,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &str) -> Node {
        Node::Str(v.to_owned())
    }

    #[test]
    fn flattened_metadata_unflattens() {
        let tree = unflatten(vec![
            ("age__list_0__map_enc".into(), s("E0")),
            ("age__list_0__map_recipient".into(), s("age1a")),
            ("age__list_1__map_enc".into(), s("E1")),
            ("age__list_1__map_recipient".into(), s("age1b")),
            ("lastmodified".into(), s("2026-11-27T05:35:22Z")),
            ("mac".into(), s("M")),
            ("mac_only_encrypted".into(), s("true")),
        ])
        .unwrap();
        let metadata = Metadata::read(&tree).unwrap();
        assert_eq!(metadata.recipients(), vec!["age1a".to_owned(), "age1b".to_owned()]);
        assert!(metadata.mac_only_encrypted);
        assert_eq!(metadata.last_modified, "2026-11-27T05:35:22Z");
        assert!(unflatten(vec![("age__list_1__map_enc".into(), s("x"))]).is_err(), "a gap");
        assert!(unflatten(vec![("mac".into(), s("x")), ("mac".into(), s("y"))]).is_err(), "twice");
    }

    #[test]
    fn refusals_name_the_field() {
        let meta = |extra: Vec<(&str, Node)>| {
            let mut entries = vec![("lastmodified".to_owned(), s("2026-11-27T05:35:22Z")), ("mac".to_owned(), s("M"))];
            entries.extend(extra.into_iter().map(|(k, v)| (k.to_owned(), v)));
            Metadata::read(&Node::Map(entries)).map(|_| ()).unwrap_err().to_string()
        };
        assert_eq!(meta(vec![]), "malformed sops metadata: No keys found in file");
        let both = vec![("encrypted_regex", s("^data$")), ("unencrypted_suffix", s("_x"))];
        assert!(meta(both).contains("Cannot use more than one"));
        assert!(meta(vec![("encrypted_regex", s("("))]).contains("encrypted_regex is not a valid regular expression"));
        assert_eq!(
            meta(vec![("encrypted_comment_regex", s("x"))]),
            "encrypted_comment_regex / unencrypted_comment_regex is not supported"
        );
        let no_time = Metadata::read(&Node::Map(vec![("mac".into(), s("M"))])).unwrap_err().to_string();
        assert_eq!(no_time, "malformed sops metadata: lastmodified is missing");
    }

    #[test]
    fn other_key_types_are_listed() {
        let pgp = Node::Seq(vec![Node::Map(vec![("fp".into(), s("ABC"))])]);
        let tree = Node::Map(vec![
            ("lastmodified".into(), s("2026-11-27T05:35:22Z")),
            ("pgp".into(), pgp.clone()),
            ("kms".into(), pgp),
        ]);
        let metadata = Metadata::read(&tree).unwrap();
        assert_eq!(metadata.groups[0].others, KeyKinds(vec!["AWS KMS", "PGP"]));
        assert!(metadata.groups[0].age.is_empty());
    }
}
