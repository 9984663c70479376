//! One document to the objects kubectl would apply from it: its client-side validation
//! (`--validate`), its unstructured decoder and its list flattening, with kubectl's messages.

use applyset_merge::{Map, Value};

use super::Document;

/// kubectl's client-side validation of one document (`validation.paramVerifyingSchema` and,
/// for a `v1` `List`, `schemaValidation.validateList`): `None` when it passes. The checks that
/// need the OpenAPI models (field types of kinds the apiserver cannot validate itself) are not
/// made; the apiserver's field validation covers the kinds it serves.
pub(super) fn kubectl_validation_error(value: &Value) -> Option<String> {
    let Value::Object(map) = value else { return Some("invalid object to validate".to_owned()) };
    let mut errors = object_kind_errors(map);
    if errors.is_empty() && api_version_of(map) == "v1" && kind_of(map) == "List" {
        let Some(Value::Array(items)) = map.get("items") else {
            return Some("invalid object to validate".to_owned());
        };
        for item in items {
            match item {
                Value::Object(item) => errors.extend(object_kind_errors(item)),
                // Go's getObjectKind on a non-map item.
                _ => errors.push("error decoding from json: empty value".to_owned()),
            }
        }
    }
    go_aggregate(errors.iter().map(String::as_str))
}

/// The text of Go's `utilerrors.NewAggregate(errs).Error()`: nothing for no error, one message
/// alone, several deduplicated (first occurrence kept) in brackets.
pub fn go_aggregate<'a>(messages: impl IntoIterator<Item = &'a str>) -> Option<String> {
    let mut unique: Vec<&str> = Vec::new();
    for message in messages {
        if !unique.contains(&message) {
            unique.push(message);
        }
    }
    match unique.as_slice() {
        [] => None,
        [only] => Some((*only).to_owned()),
        several => Some(format!("[{}]", several.join(", "))),
    }
}

/// kubectl's `getObjectKind`: what is wrong with an object's `apiVersion` and `kind`.
fn object_kind_errors(map: &Map) -> Vec<String> {
    let mut errors = Vec::new();
    match map.get("apiVersion") {
        None | Some(Value::Null) => errors.push("apiVersion not set".to_owned()),
        Some(Value::String(api_version)) => {
            if api_version.matches('/').count() > 1 {
                errors.push(format!("unexpected GroupVersion string: {api_version}"));
            }
        }
        Some(_) => errors.push("apiVersion isn't string type".to_owned()),
    }
    match map.get("kind") {
        None | Some(Value::Null) => errors.push("kind not set".to_owned()),
        Some(Value::String(_)) => {}
        Some(_) => errors.push("kind isn't string type".to_owned()),
    }
    errors
}

pub(super) fn kind_of(map: &Map) -> &str {
    map.get("kind").and_then(Value::as_str).unwrap_or("")
}

pub(super) fn api_version_of(map: &Map) -> &str {
    map.get("apiVersion").and_then(Value::as_str).unwrap_or("")
}

fn type_word(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Int(_) | Value::Float(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Why a document makes no objects, worded after kubectl's messages where it has one. `found`
/// is the JSON type met (`array`, `string`, …); `item` counts list items from 1.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ObjectError {
    /// The document is not a JSON object.
    #[error("unable to decode: the document is {} {found}, not an object", article(found))]
    NotAnObject { found: &'static str },
    /// The document (an object, or a list) has no `kind`; `raw` is its text.
    #[error("Object 'Kind' is missing in '{raw}'")]
    KindMissing { raw: String },
    /// A list's `items` is neither an array nor null.
    #[error(
        "unable to decode list: json: cannot unmarshal {found} into Go struct field decodeList.items of type []json.RawMessage"
    )]
    ItemsNotArray { found: &'static str },
    /// A list item is neither an object nor null.
    #[error(
        "unable to decode list item {item}: json: cannot unmarshal {found} into Go value of type map[string]interface {{}}"
    )]
    ItemNotObject { item: usize, found: &'static str },
    /// A list item is itself a list.
    #[error(
        "list item {item} is itself a list, which kubectl does not flatten: *unstructured.Unstructured is not a list: no Items field in this object"
    )]
    NestedList { item: usize },
    /// A list item has no `kind`, and the list's kind gives it none.
    #[error("list item {item}: Object 'Kind' is missing in 'unstructured object has no kind'")]
    ItemKindMissing { item: usize },
}

/// The indefinite article before a [`type_word`].
fn article(word: &str) -> &'static str {
    if word == "array" { "an" } else { "a" }
}

/// The objects of one document, as kubectl's unstructured decoder and list flattening produce
/// them. Errors are worded after kubectl's where it has one.
pub fn document_objects(doc: &Document) -> Result<Vec<Value>, ObjectError> {
    let kind_missing = || ObjectError::KindMissing { raw: doc.raw.clone() };
    let Value::Object(map) = &doc.value else {
        return Err(ObjectError::NotAnObject { found: type_word(&doc.value) });
    };
    let Some(items) = map.get("items") else {
        if kind_of(map).is_empty() {
            return Err(kind_missing());
        }
        return Ok(vec![doc.value.clone()]);
    };
    // A list (kubectl's decodeToList): even `items: null` makes one.
    let items: &[Value] = match items {
        Value::Null => &[],
        Value::Array(items) => items,
        other => return Err(ObjectError::ItemsNotArray { found: type_word(other) }),
    };
    let list_kind = kind_of(map);
    let item_kind = list_kind.strip_suffix("List").unwrap_or(list_kind);
    let list_api_version = api_version_of(map);
    let mut objects = Vec::with_capacity(items.len());
    for (index, item) in items.iter().enumerate() {
        let mut object = match item {
            Value::Object(m) => m.clone(),
            Value::Null => Map::new(),
            other => return Err(ObjectError::ItemNotObject { item: index + 1, found: type_word(other) }),
        };
        if kind_of(&object).is_empty() && api_version_of(&object).is_empty() {
            object.insert("kind".into(), Value::String(item_kind.to_owned()));
            object.insert("apiVersion".into(), Value::String(list_api_version.to_owned()));
        }
        objects.push(object);
    }
    if list_kind.is_empty() {
        return Err(kind_missing());
    }
    let mut out = Vec::with_capacity(objects.len());
    for (index, object) in objects.into_iter().enumerate() {
        if matches!(object.get("items"), Some(Value::Array(_))) {
            // kubectl 1.33 cannot flatten a list nested in a list (ExtractList fails on an
            // unstructured item), so neither do we.
            return Err(ObjectError::NestedList { item: index + 1 });
        }
        if kind_of(&object).is_empty() {
            return Err(ObjectError::ItemKindMissing { item: index + 1 });
        }
        out.push(Value::Object(object));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::parse_stream;

    fn objects(text: &str) -> Result<Vec<String>, String> {
        let docs = parse_stream(text).map_err(|e| e.message)?;
        let mut out = Vec::new();
        for doc in &docs {
            out.extend(document_objects(doc).map_err(|e| e.to_string())?.iter().map(Value::to_json_string));
        }
        Ok(out)
    }

    #[test]
    fn kind_is_required() {
        assert_eq!(
            objects("apiVersion: v1\nmetadata: {name: a}\n").unwrap_err(),
            r#"Object 'Kind' is missing in '{"apiVersion":"v1","metadata":{"name":"a"}}'"#
        );
        assert_eq!(
            objects("{\"apiVersion\": \"v1\"}").unwrap_err(),
            r#"Object 'Kind' is missing in '{"apiVersion": "v1"}'"#
        );
        assert!(objects("kind: 5\n").unwrap_err().contains("'Kind' is missing"));
        assert!(objects("kind: \"\"\n").unwrap_err().contains("'Kind' is missing"));
        assert!(objects("- a\n").unwrap_err().contains("is an array, not an object"));
        assert!(objects("just text\n").unwrap_err().contains("is a string"));
    }

    #[test]
    fn lists_are_flattened() {
        let list = "apiVersion: v1\nkind: ConfigMapList\nitems:\n- metadata: {name: a}\n- kind: Secret\n  metadata: {name: b}\n-\n";
        assert_eq!(
            objects(list).unwrap(),
            [
                r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}"#,
                r#"{"kind":"Secret","metadata":{"name":"b"}}"#,
                r#"{"apiVersion":"v1","kind":"ConfigMap"}"#,
            ]
        );
        assert_eq!(objects("kind: List\napiVersion: v1\nitems: null\n").unwrap(), Vec::<String>::new());
        assert_eq!(objects("kind: List\napiVersion: v1\nitems: []\n").unwrap(), Vec::<String>::new());
    }

    #[test]
    fn list_errors() {
        // An item with an apiVersion but no kind inherits nothing.
        assert_eq!(
            objects("apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  metadata: {name: c}\n").unwrap_err(),
            "list item 1: Object 'Kind' is missing in 'unstructured object has no kind'"
        );
        // `List` minus its suffix is empty: items of a v1 List need their own kind.
        assert!(
            objects("apiVersion: v1\nkind: List\nitems:\n- metadata: {name: c}\n").unwrap_err().contains("list item 1")
        );
        assert!(objects("apiVersion: v1\nitems: [{kind: A}]\n").unwrap_err().starts_with("Object 'Kind' is missing"));
        assert!(objects("kind: List\nitems: 5\n").unwrap_err().contains("cannot unmarshal number"));
        assert!(objects("kind: List\nitems: [5]\n").unwrap_err().contains("list item 1"));
        assert!(objects("kind: List\nitems: [{kind: List, items: []}]\n").unwrap_err().contains("itself a list"));
        // A nested `items` that is not an array does not make a list.
        assert_eq!(objects("kind: List\nitems: [{kind: A, items: x}]\n").unwrap(), [r#"{"items":"x","kind":"A"}"#]);
    }

    #[test]
    fn kubectl_validation_in_kubectls_words() {
        let invalid = |text: &str| kubectl_validation_error(&parse_stream(text).unwrap().remove(0).value);
        assert_eq!(invalid("apiVersion: v1\nkind: ConfigMap\n"), None);
        assert_eq!(invalid("apiVersion: v1\nmetadata: {}\n").as_deref(), Some("kind not set"));
        assert_eq!(invalid("metadata: {}\n").as_deref(), Some("[apiVersion not set, kind not set]"));
        assert_eq!(invalid("apiVersion: 5\nkind: A\n").as_deref(), Some("apiVersion isn't string type"));
        assert_eq!(invalid("apiVersion: v1\nkind: 5\n").as_deref(), Some("kind isn't string type"));
        assert_eq!(invalid("apiVersion: a/b/c\nkind: A\n").as_deref(), Some("unexpected GroupVersion string: a/b/c"));
        assert_eq!(invalid("- a\n").as_deref(), Some("invalid object to validate"));
        assert_eq!(invalid("hello\n").as_deref(), Some("invalid object to validate"));
        // An empty kind passes validation (the decoder refuses it).
        assert_eq!(invalid("apiVersion: v1\nkind: \"\"\n"), None);
        // A v1 List: its items are checked, each error once.
        assert_eq!(invalid("apiVersion: v1\nkind: List\nitems: 5\n").as_deref(), Some("invalid object to validate"));
        assert_eq!(
            invalid("apiVersion: v1\nkind: List\nitems: [{metadata: {}}, {metadata: {}}, {apiVersion: v1, kind: A}]\n")
                .as_deref(),
            Some("[apiVersion not set, kind not set]")
        );
        // Other lists are not (kubectl would check them against the OpenAPI models).
        assert_eq!(invalid("apiVersion: v1\nkind: ConfigMapList\nitems: [{metadata: {}}]\n"), None);
    }
}
