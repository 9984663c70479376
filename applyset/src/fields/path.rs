//! A field of an object named the way kubectl's errors and our drift report name it:
//! map keys joined by `.`, list elements by their key (`containers[name=app]`), items of a
//! list of scalars by their value (`finalizers[=example.com/x]`).

use std::fmt;

use applyset_merge::Value;
use applyset_merge::value::Map;

/// List elements are named by the first of these keys they have (the usual merge keys), as
/// kubectl's errors name them (`containers[name=app]`).
pub const ELEMENT_KEYS: [&str; 8] = ["name", "containerPort", "mountPath", "devicePath", "ip", "port", "type", "key"];

/// One step of a [`FieldPath`].
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Segment {
    /// A map key.
    Key(String),
    /// The element of a list of maps whose `key` is `value` (a string, or the JSON text of
    /// another scalar).
    Element(String, String),
    /// The item of a list of scalars that equals this JSON text.
    Item(String),
}

/// A field's path from the object's root.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct FieldPath(pub Vec<Segment>);

impl FieldPath {
    pub fn segments(&self) -> &[Segment] {
        &self.0
    }

    /// The first map key (`spec`, `metadata`, `status`, `data`…).
    pub fn root(&self) -> Option<&str> {
        match self.0.first() {
            Some(Segment::Key(key)) => Some(key),
            _ => None,
        }
    }

    /// Whether this path is `prefix` or lies under it.
    pub fn starts_with(&self, prefix: &[&str]) -> bool {
        prefix.len() <= self.0.len()
            && prefix.iter().zip(&self.0).all(|(want, got)| matches!(got, Segment::Key(key) if key == want))
    }

    /// Whether a JSON pointer (split into tokens) covers this path: every token names the
    /// path's key at that depth, or the pointer reaches into a list this path goes through (a
    /// pointer cannot address a list element by key, so it covers the whole list).
    pub fn covered_by_pointer(&self, pointer: &[String]) -> bool {
        for (i, token) in pointer.iter().enumerate() {
            match self.0.get(i) {
                Some(Segment::Key(key)) if key == token => continue,
                Some(Segment::Element(..) | Segment::Item(_)) => return true,
                _ => return false,
            }
        }
        true
    }

    /// The value at this path in `object`, if it has one.
    pub fn lookup<'a>(&self, object: &'a Value) -> Option<&'a Value> {
        let mut node = object;
        for segment in &self.0 {
            node = match segment {
                Segment::Key(key) => node.as_object()?.get(key)?,
                Segment::Element(key, value) => {
                    node.as_array()?.iter().find(|item| element_matches(item, key, value))?
                }
                Segment::Item(text) => node.as_array()?.iter().find(|item| scalar_text(item) == *text)?,
            };
        }
        Some(node)
    }

    /// The smallest document that holds this path's value from `object` at this path: maps
    /// with one key down to it, list elements with only their key (so that a merge finds the
    /// element). `None` when `object` does not have the path.
    pub fn extract(&self, object: &Value) -> Option<Value> {
        let leaf = self.lookup(object)?.clone();
        let mut value = leaf;
        for (i, segment) in self.0.iter().enumerate().rev() {
            value = match segment {
                Segment::Key(key) => {
                    let mut map = Map::new();
                    map.insert(key.clone(), value);
                    Value::Object(map)
                }
                Segment::Element(key, text) => {
                    // The element keeps its key; the key's value is copied as the list has it.
                    let list_path = FieldPath(self.0[..i].to_vec());
                    let element = list_path
                        .lookup(object)
                        .and_then(Value::as_array)
                        .and_then(|items| items.iter().find(|item| element_matches(item, key, text)))?;
                    let key_value = element.as_object()?.get(key)?.clone();
                    // Below the element: its fields on the way down, or (as the leaf) all of it.
                    let mut map = value.into_object().ok()?;
                    map.insert(key.clone(), key_value);
                    Value::Array(vec![Value::Object(map)])
                }
                Segment::Item(_) => Value::Array(vec![value]),
            };
        }
        Some(value)
    }
}

impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            return f.write_str(".");
        }
        for (i, segment) in self.0.iter().enumerate() {
            match segment {
                Segment::Key(key) => {
                    if i > 0 {
                        f.write_str(".")?;
                    }
                    f.write_str(key)?;
                }
                Segment::Element(key, value) => write!(f, "[{key}={value}]")?,
                Segment::Item(text) => {
                    // A string item is shown bare, as kubectl shows element keys.
                    let shown = Value::from_json_str(text).ok().and_then(|v| v.as_str().map(str::to_owned));
                    write!(f, "[={}]", shown.as_deref().unwrap_or(text))?
                }
            }
        }
        Ok(())
    }
}

/// A scalar as the path names it: strings bare, other values as JSON.
pub fn key_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_json_string(),
    }
}

fn scalar_text(value: &Value) -> String {
    value.to_json_string()
}

fn element_matches(item: &Value, key: &str, text: &str) -> bool {
    item.as_object().and_then(|m| m.get(key)).is_some_and(|found| key_text(found) == text)
}

/// The element key of a list item: the first of [`ELEMENT_KEYS`] it has.
pub fn element_key(item: &Value) -> Option<(String, String)> {
    let map = item.as_object()?;
    ELEMENT_KEYS.iter().find_map(|key| Some(((*key).to_owned(), key_text(map.get(*key)?))))
}

/// The fields a patch sets or deletes, in document order. Directive keys (`$patch`,
/// `$setElementOrder/…`, `$retainKeys`) are not fields; a list element the patch deletes
/// (`{"$patch": "delete", "name": "x"}`) and a removed key (`x: null`) are.
pub fn patch_fields(patch: &Value) -> Vec<FieldPath> {
    let mut out = Vec::new();
    collect(patch, &mut Vec::new(), &mut out);
    out
}

fn collect(node: &Value, prefix: &mut Vec<Segment>, out: &mut Vec<FieldPath>) {
    match node {
        Value::Object(map) if !map.is_empty() => {
            for (key, value) in map.iter() {
                if key.starts_with('$') {
                    continue;
                }
                prefix.push(Segment::Key(key.clone()));
                collect(value, prefix, out);
                prefix.pop();
            }
        }
        Value::Array(items) if items.iter().any(|item| element_key(item).is_some()) => {
            for item in items {
                match element_key(item) {
                    Some((key, value)) => {
                        prefix.push(Segment::Element(key.clone(), value));
                        let mut rest = item.clone();
                        if let Value::Object(map) = &mut rest {
                            map.remove(&key);
                        }
                        if rest.as_object().is_some_and(|m| m.keys().all(|k| k.starts_with('$'))) {
                            out.push(FieldPath(prefix.clone()));
                        } else {
                            collect(&rest, prefix, out);
                        }
                        prefix.pop();
                    }
                    None => out.push(FieldPath(prefix.clone())),
                }
            }
        }
        _ => out.push(FieldPath(prefix.clone())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json(text: &str) -> Value {
        Value::from_json_str(text).unwrap()
    }

    fn path(segments: &[Segment]) -> FieldPath {
        FieldPath(segments.to_vec())
    }

    fn key(k: &str) -> Segment {
        Segment::Key(k.into())
    }

    fn element(k: &str, v: &str) -> Segment {
        Segment::Element(k.into(), v.into())
    }

    #[test]
    fn renders_keys_elements_and_items() {
        let env = path(&[key("spec"), key("containers"), element("name", "app"), key("env"), element("name", "X")]);
        assert_eq!(env.to_string(), "spec.containers[name=app].env[name=X]");
        let finalizer = path(&[key("metadata"), key("finalizers"), Segment::Item("\"example.com/x\"".into())]);
        assert_eq!(finalizer.to_string(), "metadata.finalizers[=example.com/x]");
        assert_eq!(FieldPath::default().to_string(), ".");
    }

    #[test]
    fn lookup_and_extract_keep_the_element_key() {
        let object = json(
            r#"{"spec":{"containers":[{"name":"app","image":"a","env":[{"name":"X","value":"1"},{"name":"Y","value":"2"}]}]}}"#,
        );
        let env = path(&[key("spec"), key("containers"), element("name", "app"), key("env"), element("name", "Y")]);
        assert_eq!(env.lookup(&object).unwrap().to_json_string(), r#"{"name":"Y","value":"2"}"#);
        assert_eq!(
            env.extract(&object).unwrap().to_json_string(),
            r#"{"spec":{"containers":[{"env":[{"name":"Y","value":"2"}],"name":"app"}]}}"#
        );
        let image = path(&[key("spec"), key("containers"), element("name", "app"), key("image")]);
        assert_eq!(
            image.extract(&object).unwrap().to_json_string(),
            r#"{"spec":{"containers":[{"image":"a","name":"app"}]}}"#
        );
        assert!(path(&[key("spec"), key("containers"), element("name", "web")]).extract(&object).is_none());
    }

    #[test]
    fn pointers_cover_their_subtree_and_whole_lists() {
        let replicas = path(&[key("spec"), key("replicas")]);
        let pointer = |p: &[&str]| p.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(replicas.covered_by_pointer(&pointer(&["spec", "replicas"])));
        assert!(replicas.covered_by_pointer(&pointer(&["spec"])));
        assert!(!replicas.covered_by_pointer(&pointer(&["spec", "paused"])));
        let env = path(&[key("spec"), key("containers"), element("name", "app"), key("env")]);
        assert!(env.covered_by_pointer(&pointer(&["spec", "containers", "0", "env"])));
        assert!(!replicas.covered_by_pointer(&pointer(&["spec", "replicas", "x"])));
    }

    #[test]
    fn patch_fields_skip_directives_and_name_deleted_elements() {
        let patch = json(
            r#"{"metadata":{"labels":{"gone":null}},"spec":{"template":{"spec":{"$setElementOrder/containers":[{"name":"app"}],"containers":[{"name":"app","env":[{"$patch":"delete","name":"X"}]}]}}}}"#,
        );
        let rendered: Vec<String> = patch_fields(&patch).iter().map(ToString::to_string).collect();
        assert_eq!(rendered, ["metadata.labels.gone", "spec.template.spec.containers[name=app].env[name=X]"]);
    }
}
