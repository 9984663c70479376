//! The object-level rules of kubectl's client-side apply that need no cluster: the
//! last-applied annotation and `modified` (spec §10.3 step 3), the create body, the size limit,
//! names and output words.

use applyset_merge::{Map, Value};

use crate::keys::LAST_APPLIED_ANNOTATION;

/// The apiserver's limit on the total size of an object's annotations (keys + values, bytes).
pub const ANNOTATIONS_SIZE_LIMIT: usize = 262_144;

/// `A` (the annotation text, with the encoder's trailing newline) and `modified` (the object
/// with `A` as its last-applied annotation), as kubectl's `GetModifiedConfiguration` builds
/// them.
///
/// kubectl reads the annotations through the unstructured accessor: an annotations map that is
/// absent, `null`, not an object or holds a non-string value reads as empty, and writing the
/// map back then stores `{}` — which is why `"annotations":{}` appears in `A`.
pub fn modified_configuration(object: &Value) -> (String, Value) {
    modified_configuration_with(object, None)
}

/// [`modified_configuration`] with the annotation's text from `codec` (see
/// [`super::last_applied`]).
pub fn modified_configuration_with(
    object: &Value,
    codec: Option<&dyn super::last_applied::LastAppliedCodec>,
) -> (String, Value) {
    let mut object = object.clone();
    let Value::Object(root) = &mut object else {
        return (object.to_json_string() + "\n", object);
    };
    let metadata = root.entry("metadata".to_owned()).or_insert_with(|| Value::Object(Map::new()));
    if !matches!(metadata, Value::Object(_)) {
        *metadata = Value::Object(Map::new());
    }
    let Value::Object(metadata) = metadata else { unreachable!() };
    let mut annotations = match metadata.get("annotations") {
        Some(Value::Object(map)) if map.values().all(|v| matches!(v, Value::String(_))) => map.clone(),
        _ => Map::new(),
    };
    annotations.remove(LAST_APPLIED_ANNOTATION);
    metadata.insert("annotations".to_owned(), Value::Object(annotations));
    let recorded = codec.and_then(|codec| codec.encode(&object));
    let text = recorded.as_ref().unwrap_or(&object).to_json_string() + "\n";
    set_annotation(&mut object, LAST_APPLIED_ANNOTATION, &text);
    (text, object)
}

/// Sets `metadata.annotations[key]`, creating `metadata` and `annotations` when missing (a map
/// of another shape is replaced, as kubectl's accessor does).
pub fn set_annotation_value(object: &mut Value, key: &str, value: &str) {
    let Some(root) = object.as_object_mut() else { return };
    let metadata = root.entry("metadata".to_owned()).or_insert_with(|| Value::Object(Map::new()));
    if !matches!(metadata, Value::Object(_)) {
        *metadata = Value::Object(Map::new());
    }
    let Value::Object(metadata) = metadata else { return };
    let annotations = metadata.entry("annotations".to_owned()).or_insert_with(|| Value::Object(Map::new()));
    if !matches!(annotations, Value::Object(_)) {
        *annotations = Value::Object(Map::new());
    }
    if let Value::Object(annotations) = annotations {
        annotations.insert(key.to_owned(), Value::String(value.to_owned()));
    }
}

fn set_annotation(object: &mut Value, key: &str, value: &str) {
    if let Some(Value::Object(annotations)) = object
        .as_object_mut()
        .and_then(|root| root.get_mut("metadata"))
        .and_then(Value::as_object_mut)
        .and_then(|metadata| metadata.get_mut("annotations"))
    {
        annotations.insert(key.to_owned(), Value::String(value.to_owned()));
    }
}

/// The body kubectl POSTs for a new object: `modified` with every `null` object member removed
/// (recursively; `null` list elements stay) and `metadata.resourceVersion` cleared.
pub fn create_body(modified: &Value) -> Value {
    let mut body = prune_nulls(modified);
    clear_resource_version(&mut body);
    body
}

/// The body of `--force`'s re-creation: `modified` as it is, without a resourceVersion.
pub fn recreate_body(object: &Value) -> Value {
    let mut body = object.clone();
    clear_resource_version(&mut body);
    body
}

fn clear_resource_version(object: &mut Value) {
    if let Some(metadata) = object.as_object_mut().and_then(|o| o.get_mut("metadata")).and_then(Value::as_object_mut) {
        metadata.remove("resourceVersion");
    }
}

fn prune_nulls(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            Value::Object(map.iter().filter(|(_, v)| !v.is_null()).map(|(k, v)| (k.clone(), prune_nulls(v))).collect())
        }
        Value::Array(items) => Value::Array(items.iter().map(prune_nulls).collect()),
        other => other.clone(),
    }
}

/// `metadata.<field>` as a string.
pub fn meta_str<'a>(object: &'a Value, field: &str) -> Option<&'a str> {
    object.as_object()?.get("metadata")?.as_object()?.get(field)?.as_str()
}

/// `metadata.annotations[key]` as a string.
pub fn annotation<'a>(object: &'a Value, key: &str) -> Option<&'a str> {
    object.as_object()?.get("metadata")?.as_object()?.get("annotations")?.as_object()?.get(key)?.as_str()
}

/// The live object's last-applied annotation, if it has one.
pub fn last_applied(object: &Value) -> Option<&str> {
    object
        .as_object()?
        .get("metadata")?
        .as_object()?
        .get("annotations")?
        .as_object()?
        .get(LAST_APPLIED_ANNOTATION)?
        .as_str()
}

/// The total size the apiserver counts against [`ANNOTATIONS_SIZE_LIMIT`].
pub fn annotations_size(object: &Value) -> usize {
    object
        .as_object()
        .and_then(|o| o.get("metadata"))
        .and_then(Value::as_object)
        .and_then(|m| m.get("annotations"))
        .and_then(Value::as_object)
        .map_or(0, |annotations| annotations.iter().map(|(k, v)| k.len() + v.as_str().map_or(0, str::len)).sum())
}

/// `deployment.apps/web`, `configmap/x`: kubectl's name printer.
pub fn display_name(kind: &str, group: &str, name: &str) -> String {
    if group.is_empty() {
        format!("{}/{}", kind.to_lowercase(), name)
    } else {
        format!("{}.{}/{}", kind.to_lowercase(), group, name)
    }
}

/// Removes `metadata.namespace` (cluster-scoped kinds).
pub fn remove_namespace(object: &mut Value) {
    if let Some(metadata) = object.as_object_mut().and_then(|o| o.get_mut("metadata")).and_then(Value::as_object_mut) {
        metadata.remove("namespace");
    }
}

/// Sets `metadata.namespace`, creating `metadata` if needed.
pub fn set_namespace(object: &mut Value, namespace: &str) {
    if let Some(root) = object.as_object_mut() {
        let metadata = root.entry("metadata".to_owned()).or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(metadata) = metadata {
            metadata.insert("namespace".to_owned(), Value::String(namespace.to_owned()));
        }
    }
}

/// Why [`add_label`] refused an object.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LabelError {
    /// The input already sets the label.
    #[error("ApplySet label {key:?} already set in input data")]
    AlreadySet { key: String },
}

/// Adds a label, failing if it is already set (kubectl's ApplySet rule).
pub fn add_label(object: &mut Value, key: &str, value: &str) -> Result<(), LabelError> {
    let Some(root) = object.as_object_mut() else { return Ok(()) };
    let metadata = root.entry("metadata".to_owned()).or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(metadata) = metadata else { return Ok(()) };
    let labels = metadata.entry("labels".to_owned()).or_insert_with(|| Value::Object(Map::new()));
    if !matches!(labels, Value::Object(_)) {
        *labels = Value::Object(Map::new());
    }
    let Value::Object(labels) = labels else { unreachable!() };
    if labels.contains_key(key) {
        return Err(LabelError::AlreadySet { key: key.to_owned() });
    }
    labels.insert(key.to_owned(), Value::String(value.to_owned()));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::PART_OF_LABEL;

    fn v(text: &str) -> Value {
        Value::from_json_str(text).unwrap()
    }

    #[test]
    fn annotation_gets_empty_annotations_and_newline() {
        let (text, modified) = modified_configuration(&v(
            r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","namespace":"d"},"data":{"a":"<b>"}}"#,
        ));
        assert_eq!(
            text,
            "{\"apiVersion\":\"v1\",\"data\":{\"a\":\"\\u003cb\\u003e\"},\"kind\":\"ConfigMap\",\"metadata\":{\"annotations\":{},\"name\":\"x\",\"namespace\":\"d\"}}\n"
        );
        assert_eq!(last_applied(&modified), Some(text.as_str()));
    }

    #[test]
    fn annotation_drops_old_last_applied_and_keeps_others() {
        let (text, _) = modified_configuration(&v(
            r#"{"kind":"A","metadata":{"name":"x","annotations":{"k":"v","kubectl.kubernetes.io/last-applied-configuration":"old"}}}"#,
        ));
        assert_eq!(text, "{\"kind\":\"A\",\"metadata\":{\"annotations\":{\"k\":\"v\"},\"name\":\"x\"}}\n");
        let (text, _) = modified_configuration(&v(r#"{"kind":"A","metadata":{"name":"x","annotations":null}}"#));
        assert!(text.contains("\"annotations\":{}"));
    }

    #[test]
    fn create_body_prunes_nulls_but_not_in_lists() {
        let body = create_body(&v(
            r#"{"a":null,"b":{"c":null,"d":1},"e":[null,{"f":null}],"metadata":{"resourceVersion":"5"}}"#,
        ));
        assert_eq!(body.to_json_string(), r#"{"b":{"d":1},"e":[null,{}],"metadata":{}}"#);
    }

    #[test]
    fn names_and_sizes() {
        assert_eq!(display_name("Deployment", "apps", "web"), "deployment.apps/web");
        assert_eq!(display_name("ConfigMap", "", "x"), "configmap/x");
        assert_eq!(annotations_size(&v(r#"{"metadata":{"annotations":{"ab":"cde"}}}"#)), 5);
        let mut o = v(r#"{"metadata":{"labels":{"applyset.kubernetes.io/part-of":"x"}}}"#);
        assert_eq!(
            add_label(&mut o, PART_OF_LABEL, "y").unwrap_err().to_string(),
            r#"ApplySet label "applyset.kubernetes.io/part-of" already set in input data"#
        );
    }
}
