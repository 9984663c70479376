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
    /// What names the object, when nothing else of it was kept ([`Details::keep_names_only`]).
    pub identity: Option<Identity>,
}

impl Details {
    /// Drops the patch, the live object and the result, keeping only what names the object
    /// ([`Identity`]): a run of 20,000 objects would otherwise keep two small trees per object
    /// (kilobytes each) until its status is written.
    pub fn keep_names_only(&mut self) {
        self.identity = self.result.as_ref().or(self.live.as_ref()).map(Identity::of);
        self.patch = None;
        self.live = None;
        self.result = None;
    }
}

/// What names an object: its `apiVersion`, `kind`, `metadata.name` and `metadata.namespace`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Identity {
    pub api_version: String,
    pub kind: String,
    pub name: String,
    pub namespace: Option<String>,
}

impl Identity {
    pub fn of(object: &Value) -> Identity {
        let text = |field: &str| object.as_object().and_then(|o| o.get(field)).and_then(Value::as_str);
        Identity {
            api_version: text("apiVersion").unwrap_or_default().to_owned(),
            kind: text("kind").unwrap_or_default().to_owned(),
            name: super::object::meta_str(object, "name").unwrap_or_default().to_owned(),
            namespace: super::object::meta_str(object, "namespace").map(str::to_owned),
        }
    }
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
    fn keeping_names_only_keeps_the_identity_alone() {
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
        let identity = Identity {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            name: "a".into(),
            namespace: Some("ns".into()),
        };
        assert_eq!(details.identity, Some(identity));
        assert_eq!((details.live, details.result, details.patch), (None, None, None));
        assert!(details.last_applied_discarded, "what the run reports on stays");
    }
}
