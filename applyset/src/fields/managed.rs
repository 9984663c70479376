//! `metadata.managedFields`: who wrote which field (the apiserver's field ownership, kept for
//! client-side writes too), read as paths.

use applyset_merge::Value;

use super::path::{ELEMENT_KEYS, FieldPath, Segment, key_text};

/// One `managedFields` entry.
#[derive(Debug, Clone)]
pub struct Entry<'a> {
    pub manager: &'a str,
    /// `Update` or `Apply`.
    pub operation: &'a str,
    /// `status`, `scale`… for writes to a subresource.
    pub subresource: Option<&'a str>,
    /// The `fieldsV1` set.
    pub fields: &'a Value,
}

/// The entries of `object`'s managedFields, in the apiserver's order (oldest first).
pub fn entries(object: &Value) -> Vec<Entry<'_>> {
    let list = object
        .as_object()
        .and_then(|o| o.get("metadata"))
        .and_then(Value::as_object)
        .and_then(|m| m.get("managedFields"))
        .and_then(Value::as_array);
    let Some(list) = list else { return Vec::new() };
    list.iter()
        .filter_map(|entry| {
            let entry = entry.as_object()?;
            Some(Entry {
                manager: entry.get("manager")?.as_str()?,
                operation: entry.get("operation").and_then(Value::as_str).unwrap_or(""),
                subresource: entry.get("subresource").and_then(Value::as_str).filter(|s| !s.is_empty()),
                fields: entry.get("fieldsV1")?,
            })
        })
        .collect()
}

/// The manager whose field set holds the deepest prefix of `path` (the most recent entry on a
/// tie, as the apiserver lists them oldest first).
pub fn manager_of(entries: &[Entry<'_>], path: &FieldPath) -> Option<String> {
    let mut best: Option<(usize, &str)> = None;
    for entry in entries {
        let depth = owned_depth(entry.fields, path.segments());
        if depth > 0 && best.is_none_or(|(d, _)| depth >= d) {
            best = Some((depth, entry.manager));
        }
    }
    best.map(|(_, manager)| manager.to_owned())
}

/// The manager whose field set holds `path` itself (the most recent on a tie): who a
/// server-side apply of another value would conflict with. `None` for a field no one set.
pub fn owner_of(entries: &[Entry<'_>], path: &FieldPath) -> Option<String> {
    let depth = path.segments().len();
    entries.iter().rev().find(|e| owned_depth(e.fields, path.segments()) == depth).map(|e| e.manager.to_owned())
}

/// How many leading segments of the path a fieldsV1 set contains.
fn owned_depth(fields: &Value, segments: &[Segment]) -> usize {
    let mut node = fields;
    let mut depth = 0;
    for segment in segments {
        let Some(map) = node.as_object() else { break };
        let next = map.iter().find_map(|(k, v)| (parse_key(k).as_ref() == Some(segment)).then_some(v));
        match next {
            Some(next) => {
                node = next;
                depth += 1;
            }
            None => break,
        }
    }
    depth
}

/// A fieldsV1 key as a path segment: `f:name` a field, `k:{"name":"x"}` a keyed list element,
/// `v:"x"` an item of a set. `.` (the node itself) and `i:` (an index) are not segments.
fn parse_key(key: &str) -> Option<Segment> {
    if let Some(name) = key.strip_prefix("f:") {
        return Some(Segment::Key(name.to_owned()));
    }
    if let Some(keyed) = key.strip_prefix("k:") {
        let parsed = Value::from_json_str(keyed).ok()?;
        let map = parsed.as_object()?;
        // Named by the usual element key when it has one (as drift paths are), else its first.
        let name = ELEMENT_KEYS.iter().find(|k| map.contains_key(**k)).map(|k| (*k).to_owned());
        let name = name.or_else(|| map.keys().next().cloned())?;
        let value = key_text(map.get(&name)?);
        return Some(Segment::Element(name, value));
    }
    if let Some(item) = key.strip_prefix("v:") {
        return Some(Segment::Item(Value::from_json_str(item).ok()?.to_json_string()));
    }
    None
}

/// The fields of a fieldsV1 set that `manifest` does not have, each as deep as the set names
/// it: a map the manifest lacks is followed down to the fields in it, a list element or set
/// item it lacks is named whole. Fields `live` no longer has are left out.
pub fn fields_absent_from(fields: &Value, manifest: &Value, live: &Value) -> Vec<FieldPath> {
    let mut out = Vec::new();
    walk(fields, &mut Vec::new(), manifest, live, &mut out);
    out
}

fn walk(node: &Value, prefix: &mut Vec<Segment>, manifest: &Value, live: &Value, out: &mut Vec<FieldPath>) {
    let Some(map) = node.as_object() else { return };
    for (key, child) in map.iter() {
        let Some(segment) = parse_key(key) else { continue };
        let is_key = matches!(segment, Segment::Key(_));
        prefix.push(segment);
        let path = FieldPath(prefix.clone());
        let has_children = child.as_object().is_some_and(|m| m.keys().any(|k| parse_key(k).is_some()));
        if path.lookup(manifest).is_some() {
            if has_children {
                walk(child, prefix, manifest, live, out);
            }
        } else if path.lookup(live).is_some() {
            if is_key && has_children {
                walk(child, prefix, manifest, live, out);
            } else {
                out.push(path);
            }
        }
        prefix.pop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json(text: &str) -> Value {
        Value::from_json_str(text).unwrap()
    }

    fn live() -> Value {
        json(
            r#"{"metadata":{"labels":{"app":"web","team":"x"},"managedFields":[
                {"manager":"applyset-controller","operation":"Update","fieldsV1":{"f:metadata":{"f:labels":{".":{},"f:app":{}}},"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{".":{},"f:name":{},"f:image":{}}}}}}}},
                {"manager":"kubectl-edit","operation":"Update","fieldsV1":{"f:metadata":{"f:labels":{"f:team":{}}},"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{"f:env":{".":{},"k:{\"name\":\"DEBUG\"}":{".":{},"f:name":{},"f:value":{}}}}}}}}}},
                {"manager":"kube-controller-manager","operation":"Update","subresource":"status","fieldsV1":{"f:status":{"f:replicas":{}}}}
            ]},"spec":{"template":{"spec":{"containers":[{"name":"app","image":"a","env":[{"name":"DEBUG","value":"1"}]}]}}},"status":{"replicas":1}}"#,
        )
    }

    #[test]
    fn entries_name_manager_operation_and_subresource() {
        let live = live();
        let entries = entries(&live);
        let names: Vec<(&str, Option<&str>)> = entries.iter().map(|e| (e.manager, e.subresource)).collect();
        assert_eq!(
            names,
            [("applyset-controller", None), ("kubectl-edit", None), ("kube-controller-manager", Some("status"))]
        );
    }

    #[test]
    fn the_deepest_owner_of_a_path_is_its_manager() {
        let live = live();
        let entries = entries(&live);
        let env = FieldPath(vec![
            Segment::Key("spec".into()),
            Segment::Key("template".into()),
            Segment::Key("spec".into()),
            Segment::Key("containers".into()),
            Segment::Element("name".into(), "app".into()),
            Segment::Key("env".into()),
            Segment::Element("name".into(), "DEBUG".into()),
        ]);
        assert_eq!(manager_of(&entries, &env).as_deref(), Some("kubectl-edit"));
        let image =
            FieldPath(vec![Segment::Key("metadata".into()), Segment::Key("labels".into()), Segment::Key("app".into())]);
        assert_eq!(manager_of(&entries, &image).as_deref(), Some("applyset-controller"));
    }

    #[test]
    fn fields_the_manifest_lacks_are_named_down_to_fields_and_elements() {
        let live = live();
        let manifest = json(
            r#"{"metadata":{"labels":{"app":"web"}},"spec":{"template":{"spec":{"containers":[{"name":"app","image":"a"}]}}}}"#,
        );
        let entries = entries(&live);
        let edit: Vec<String> =
            fields_absent_from(entries[1].fields, &manifest, &live).iter().map(ToString::to_string).collect();
        assert_eq!(edit, ["metadata.labels.team", "spec.template.spec.containers[name=app].env[name=DEBUG]"]);
        assert!(fields_absent_from(entries[0].fields, &manifest, &live).is_empty());
    }
}
