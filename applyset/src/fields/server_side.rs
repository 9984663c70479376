//! What the controller's server-side apply fallback (objects whose last-applied annotation
//! would be too large) decides from the live object, before it sends anything: which fields
//! differ and who owns them (a field another manager owns is a conflict the controller does
//! not force), whether the apply would change anything, and, when the object returns to
//! client-side apply, the fields its server-side manager owned.

use applyset_merge::Value;

use super::managed::{self, Entry};
use super::path::{FieldPath, patch_fields};
use super::{Merger, original_with};

/// A field `manifest` sets to another value than the live one, with its owner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Differing {
    pub path: FieldPath,
    pub manager: Option<String>,
}

/// The fields of `manifest` whose live value differs (or that are not live), each with the
/// manager that owns it live (none for a field no one set).
pub fn differing(manifest: &Value, live: &Value) -> Vec<Differing> {
    let entries = managed::entries(live);
    patch_fields(manifest)
        .into_iter()
        .filter(|path| path.lookup(manifest) != path.lookup(live))
        .map(|path| {
            let manager = managed::owner_of(&entries, &path);
            Differing { path, manager }
        })
        .collect()
}

/// `manager`'s server-side apply entry (`operation: Apply`, not a subresource).
fn apply_entry<'a>(entries: &'a [Entry<'a>], manager: &str) -> Option<&'a Entry<'a>> {
    entries.iter().find(|e| e.manager == manager && e.operation == "Apply" && e.subresource.is_none())
}

/// The fields `manager` applied server-side that `manifest` no longer has (the next
/// server-side apply removes them): with none, and nothing [`differing`], it changes nothing.
pub fn owned_but_absent(manifest: &Value, live: &Value, manager: &str) -> Vec<FieldPath> {
    let entries = managed::entries(live);
    apply_entry(&entries, manager)
        .map_or_else(Vec::new, |entry| managed::fields_absent_from(entry.fields, manifest, live))
}

/// The fields `manager` applied server-side, as a document (the live values): the original a
/// client-side patch needs to delete the ones the manifest dropped when the object returns to
/// client-side apply. `None` when the manager owns nothing.
pub fn owned_document(live: &Value, manager: &str, merger: &dyn Merger) -> applyset_merge::Result<Option<Value>> {
    let entries = managed::entries(live);
    let Some(entry) = apply_entry(&entries, manager) else { return Ok(None) };
    let empty = Value::Object(Default::default());
    let fields = managed::fields_absent_from(entry.fields, &empty, live);
    if fields.is_empty() {
        return Ok(None);
    }
    let pairs: Vec<(&FieldPath, &Value)> = fields.iter().map(|path| (path, live)).collect();
    original_with(&empty, &pairs, merger).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json(text: &str) -> Value {
        Value::from_json_str(text).unwrap()
    }

    struct JsonMerge;

    impl Merger for JsonMerge {
        fn merge(&self, doc: &Value, patch: &Value) -> applyset_merge::Result<Value> {
            applyset_merge::json_merge::merge_patch(doc, patch)
        }
        fn deletions(&self, original: &Value, modified: &Value) -> applyset_merge::Result<Value> {
            applyset_merge::json_merge::create_three_way(original, modified, modified)
        }
        fn merges_lists(&self) -> bool {
            false
        }
    }

    const LIVE: &str = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"big","managedFields":[
        {"manager":"applyset","operation":"Apply","fieldsV1":{"f:data":{"f:a":{},"f:b":{}}}},
        {"manager":"kubectl-edit","operation":"Update","fieldsV1":{"f:data":{"f:c":{}}}}
      ]},"data":{"a":"1","b":"2","c":"3"}}"#;

    #[test]
    fn differing_fields_are_named_with_their_owner() {
        let live = json(LIVE);
        let manifest = json(
            r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"big"},"data":{"a":"1","b":"9","c":"8","d":"4"}}"#,
        );
        let found: Vec<(String, Option<String>)> =
            differing(&manifest, &live).into_iter().map(|d| (d.path.to_string(), d.manager)).collect();
        assert_eq!(
            found,
            [
                ("data.b".to_owned(), Some("applyset".to_owned())),
                ("data.c".to_owned(), Some("kubectl-edit".to_owned())),
                ("data.d".to_owned(), None),
            ]
        );
    }

    #[test]
    fn what_the_manager_owns_is_known_for_the_no_op_and_the_return_to_client_side() {
        let live = json(LIVE);
        let same = json(r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"big"},"data":{"a":"1","b":"2"}}"#);
        assert!(differing(&same, &live).is_empty() && owned_but_absent(&same, &live, "applyset").is_empty(), "a no-op");
        let dropped = json(r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"big"},"data":{"a":"1"}}"#);
        let absent: Vec<String> =
            owned_but_absent(&dropped, &live, "applyset").iter().map(ToString::to_string).collect();
        assert_eq!(absent, ["data.b"]);
        let owned = owned_document(&live, "applyset", &JsonMerge).unwrap().unwrap();
        assert_eq!(owned.to_json_string(), r#"{"data":{"a":"1","b":"2"}}"#);
        assert_eq!(owned_document(&live, "someone-else", &JsonMerge).unwrap(), None);
    }
}
