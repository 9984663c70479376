//! What a run reports: one [`ObjectReport`] per input object, in input order, and the objects
//! it visited (for prune and the ApplySet parent).

use std::collections::BTreeSet;

use applyset_merge::Value;
use kube::core::ApiResource;

use super::error::ObjectError;
use super::options::Verb;
use crate::cluster::PatchType;
use crate::manifest::Source;

/// An object this run created, patched or left unchanged.
#[derive(Debug, Clone, PartialEq)]
pub struct Visited {
    pub api_resource: ApiResource,
    pub namespaced: bool,
    pub namespace: Option<String>,
    pub name: String,
    /// Empty for an object only created by `--dry-run=client`.
    pub uid: String,
}

/// The outcome of one input object.
#[derive(Debug, Clone)]
pub struct ObjectReport {
    pub source: Source,
    /// `deployment.apps/web` (empty when the object has no usable kind or name).
    pub name: String,
    pub result: std::result::Result<Verb, ObjectError>,
    /// Lines for stderr, in kubectl's words (missing annotation, fallback warnings…).
    pub warnings: Vec<String>,
    /// With [`super::ApplyOptions::keep_results`]: what was computed.
    pub details: Option<Box<Details>>,
}

/// The computation behind a report, kept for `diff`.
#[derive(Debug, Clone, Default)]
pub struct Details {
    pub live: Option<Value>,
    pub patch: Option<Value>,
    pub patch_type: Option<PatchType>,
    pub result: Option<Value>,
    /// Stale and foreign fields the field policy found (see [`super::ApplyOptions::field_policy`]).
    pub fields: Vec<crate::fields::Finding>,
    /// Applied server-side (see [`super::ApplyOptions::server_side_fallback`]): why.
    pub server_side: Option<String>,
    /// The live object's last-applied annotation was not a JSON object and was treated as
    /// absent ([`super::UnusableLastApplied::TreatAsAbsent`]).
    pub last_applied_discarded: bool,
}

impl Details {
    /// Drops the patch, and of the live object and the result all but what names them
    /// (`apiVersion`, `kind`, `metadata.name`, `namespace` and `uid`).
    pub fn keep_names_only(&mut self) {
        self.patch = None;
        self.live = self.live.as_ref().map(names_only);
        self.result = self.result.as_ref().map(names_only);
    }
}

fn names_only(object: &Value) -> Value {
    let Some(map) = object.as_object() else { return Value::Null };
    let mut kept = applyset_merge::Map::new();
    for field in ["apiVersion", "kind"] {
        if let Some(value) = map.get(field) {
            kept.insert(field.into(), value.clone());
        }
    }
    if let Some(metadata) = map.get("metadata").and_then(Value::as_object) {
        let mut names = applyset_merge::Map::new();
        for field in ["name", "namespace", "uid"] {
            if let Some(value) = metadata.get(field) {
                names.insert(field.into(), value.clone());
            }
        }
        kept.insert("metadata".into(), Value::Object(names));
    }
    Value::Object(kept)
}

/// A whole run.
#[derive(Debug, Clone, Default)]
pub struct ApplyReport {
    /// One per input object, in input order.
    pub objects: Vec<ObjectReport>,
    /// Objects created, patched or unchanged (for prune).
    pub visited: Vec<Visited>,
    /// Namespaces of all namespaced input objects, plus an explicit `-n` (for legacy prune).
    pub namespaces_visited: BTreeSet<String>,
}

impl ApplyReport {
    pub fn failed(&self) -> bool {
        self.objects.iter().any(|o| o.result.is_err())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeping_names_only_drops_the_patch_and_all_but_the_names() {
        let object = Value::from_json_str(
            r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"ns","uid":"u-1","annotations":{"x":"y"},"managedFields":[{}]},"data":{"k":"v"}}"#,
        )
        .unwrap();
        let mut details = Details {
            live: Some(object.clone()),
            patch: Some(Value::from_json_str(r#"{"data":{"k":"w"}}"#).unwrap()),
            result: Some(object),
            last_applied_discarded: true,
            ..Details::default()
        };
        details.keep_names_only();
        let names = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"ns","uid":"u-1"}}"#;
        assert_eq!(details.live.as_ref().map(Value::to_json_string).as_deref(), Some(names));
        assert_eq!(details.result.as_ref().map(Value::to_json_string).as_deref(), Some(names));
        assert_eq!(details.patch, None);
        assert!(details.last_applied_discarded, "what the run reports on stays");
    }
}
