//! Label selectors (`-l`): kubectl filters the *input* objects with them before applying, and
//! sends them unchanged as `labelSelector` when pruning.

use std::collections::BTreeMap;

use applyset_merge::Value;

/// Why a selector does not parse; displays as kubectl words it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SelectorError {
    /// One comma-separated requirement is malformed.
    #[error("unable to parse requirement")]
    Requirement(#[source] RequirementError),
}

/// What is wrong with one requirement (`part` is the requirement as written).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RequirementError {
    #[error("{part:?}: missing key")]
    MissingKey { part: String },
    #[error("{part:?}: {value:?} is not an integer")]
    NotAnInteger { part: String, value: String },
    #[error("{part:?}: expected in or notin")]
    ExpectedSetOperator { part: String },
    #[error("{part:?}: expected a (set)")]
    ExpectedSet { part: String },
}

#[derive(Debug, Clone, PartialEq)]
enum Requirement {
    Equals(String, String),
    NotEquals(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    NotExists(String),
    Greater(String, i64),
    Less(String, i64),
}

/// A parsed label selector.
#[derive(Debug, Clone, PartialEq)]
pub struct Selector {
    requirements: Vec<Requirement>,
}

impl Selector {
    /// Parses kubectl's selector syntax: `a=b`, `a==b`, `a!=b`, `a in (x,y)`, `a notin (x)`,
    /// `a`, `!a`, `a>1`, `a<1`, comma-separated.
    pub fn parse(text: &str) -> Result<Selector, SelectorError> {
        let mut requirements = Vec::new();
        for part in split_top_level(text) {
            let part = part.trim();
            if part.is_empty() {
                continue;
            }
            requirements.push(parse_requirement(part).map_err(SelectorError::Requirement)?);
        }
        Ok(Selector { requirements })
    }

    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.requirements.iter().all(|r| match r {
            Requirement::Equals(k, v) => labels.get(k) == Some(v),
            Requirement::NotEquals(k, v) => labels.get(k) != Some(v),
            Requirement::In(k, vs) => labels.get(k).is_some_and(|v| vs.contains(v)),
            Requirement::NotIn(k, vs) => labels.get(k).is_none_or(|v| !vs.contains(v)),
            Requirement::Exists(k) => labels.contains_key(k),
            Requirement::NotExists(k) => !labels.contains_key(k),
            Requirement::Greater(k, n) => labels.get(k).and_then(|v| v.parse::<i64>().ok()).is_some_and(|v| v > *n),
            Requirement::Less(k, n) => labels.get(k).and_then(|v| v.parse::<i64>().ok()).is_some_and(|v| v < *n),
        })
    }

    /// Whether an object's `metadata.labels` match.
    pub fn matches_object(&self, object: &Value) -> bool {
        let labels: BTreeMap<String, String> = object
            .as_object()
            .and_then(|o| o.get("metadata"))
            .and_then(Value::as_object)
            .and_then(|m| m.get("labels"))
            .and_then(Value::as_object)
            .map(|labels| labels.iter().filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_owned()))).collect())
            .unwrap_or_default();
        self.matches(&labels)
    }
}

fn split_top_level(text: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut depth = 0usize;
    let mut start = 0;
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
}

fn parse_requirement(part: &str) -> Result<Requirement, RequirementError> {
    if let Some(key) = part.strip_prefix('!') {
        return Ok(Requirement::NotExists(key.trim().to_owned()));
    }
    for (op, build) in [("==", 0), ("!=", 1), ("=", 0)] {
        if let Some((k, v)) = part.split_once(op) {
            let (k, v) = (k.trim().to_owned(), v.trim().to_owned());
            if k.is_empty() {
                return Err(RequirementError::MissingKey { part: part.to_owned() });
            }
            return Ok(if build == 0 { Requirement::Equals(k, v) } else { Requirement::NotEquals(k, v) });
        }
    }
    for (op, greater) in [(">", true), ("<", false)] {
        if let Some((k, v)) = part.split_once(op) {
            let n: i64 = v
                .trim()
                .parse()
                .map_err(|_| RequirementError::NotAnInteger { part: part.to_owned(), value: v.to_owned() })?;
            let k = k.trim().to_owned();
            return Ok(if greater { Requirement::Greater(k, n) } else { Requirement::Less(k, n) });
        }
    }
    let words: Vec<&str> = part.splitn(2, char::is_whitespace).collect();
    if words.len() == 2 {
        let key = words[0].to_owned();
        let rest = words[1].trim();
        let (negated, set) = if let Some(set) = rest.strip_prefix("notin") {
            (true, set)
        } else if let Some(set) = rest.strip_prefix("in") {
            (false, set)
        } else {
            return Err(RequirementError::ExpectedSetOperator { part: part.to_owned() });
        };
        let set = set.trim();
        let inner = set
            .strip_prefix('(')
            .and_then(|s| s.strip_suffix(')'))
            .ok_or_else(|| RequirementError::ExpectedSet { part: part.to_owned() })?;
        let values: Vec<String> = inner.split(',').map(|v| v.trim().to_owned()).filter(|v| !v.is_empty()).collect();
        return Ok(if negated { Requirement::NotIn(key, values) } else { Requirement::In(key, values) });
    }
    Ok(Requirement::Exists(part.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn selectors() {
        let l = labels(&[("app", "web"), ("tier", "front"), ("n", "5")]);
        for (text, expected) in [
            ("app=web", true),
            ("app==web,tier=front", true),
            ("app!=web", false),
            ("app in (web, api)", true),
            ("app notin (web)", false),
            ("tier", true),
            ("!tier", false),
            ("missing notin (x)", true),
            ("n>4", true),
            ("n<5", false),
            ("", true),
        ] {
            assert_eq!(Selector::parse(text).unwrap().matches(&l), expected, "{text}");
        }
    }
}
