//! The fake apiserver's objects: what a write does to an object's server-owned metadata
//! (uid, resourceVersion, generation, deletion), label selection, and its refusals as
//! `Status` bodies.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::api::Resource;

/// `(group, plural, namespace, name)`; the namespace is `None` for cluster-scoped objects.
pub(super) type Key = (String, String, Option<String>, String);

pub(super) fn key(resource: &Resource, namespace: Option<&str>, name: &str) -> Key {
    let namespace = namespace.filter(|_| resource.namespaced).map(str::to_owned);
    (resource.group.to_owned(), resource.plural.to_owned(), namespace, name.to_owned())
}

/// A request the fake refuses, answered as the apiserver's `Status`.
#[derive(Debug, Clone)]
pub(super) struct Refusal {
    pub(super) code: u16,
    pub(super) reason: String,
    pub(super) message: String,
    /// `details` (name, kind, causes), as the apiserver gives them with `Invalid`.
    pub(super) details: Option<Value>,
}

impl Refusal {
    pub(super) fn new(code: u16, reason: &str, message: impl Into<String>) -> Refusal {
        Refusal { code, reason: reason.to_owned(), message: message.into(), details: None }
    }

    pub(super) fn not_found(key: &Key) -> Refusal {
        Refusal::new(404, "NotFound", format!("{} {:?} not found", key.1, key.3))
    }

    pub(super) fn body(&self) -> Value {
        let mut body = json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": self.message, "reason": self.reason, "code": self.code,
        });
        if let Some(details) = &self.details {
            body["details"] = details.clone();
        }
        body
    }
}

#[derive(Default)]
pub(super) struct Store {
    objects: BTreeMap<Key, Value>,
    revision: u64,
    uids: u64,
}

impl Store {
    pub(super) fn get(&self, key: &Key) -> Option<&Value> {
        self.objects.get(key)
    }

    /// The objects of a resource in a namespace (`None`: every namespace) that `selector`
    /// selects, in namespace and name order.
    pub(super) fn list(&self, resource: &Resource, namespace: Option<&str>, selector: &str) -> Vec<Value> {
        self.objects
            .iter()
            .filter(|(k, _)| k.0 == resource.group && k.1 == resource.plural)
            .filter(|(k, _)| namespace.is_none() || k.2.as_deref() == namespace)
            .filter(|(_, object)| selects(selector, &object["metadata"]["labels"]))
            .map(|(_, object)| object.clone())
            .collect()
    }

    pub(super) fn of_kind(&self, group: &str, plural: &str) -> Vec<Value> {
        self.objects.iter().filter(|(k, _)| k.0 == group && k.1 == plural).map(|(_, o)| o.clone()).collect()
    }

    pub(super) fn revision(&self) -> String {
        self.revision.to_string()
    }

    fn next_revision(&mut self) -> String {
        self.revision += 1;
        self.revision.to_string()
    }

    /// POST: server-owned metadata set, the status of a resource with a status subresource
    /// dropped (as the apiserver does).
    pub(super) fn create(
        &mut self,
        resource: &Resource,
        namespace: Option<&str>,
        mut object: Value,
        dry_run: bool,
    ) -> Result<Value, Refusal> {
        if !object.is_object() {
            return Err(Refusal::new(400, "BadRequest", "the body is not an object"));
        }
        let name = match (object["metadata"]["name"].as_str(), object["metadata"]["generateName"].as_str()) {
            (Some(name), _) if !name.is_empty() => name.to_owned(),
            (_, Some(prefix)) => format!("{prefix}{:05}", self.uids + 1),
            _ => return Err(Refusal::new(422, "Invalid", "metadata.name: Required value")),
        };
        let key = key(resource, namespace, &name);
        if self.objects.contains_key(&key) {
            let message = format!("{} {name:?} already exists", resource.plural);
            return Err(Refusal::new(409, "AlreadyExists", message));
        }
        let uid = self.new_uid();
        object["apiVersion"] = resource.api_version().into();
        object["kind"] = resource.kind.into();
        let metadata = &mut object["metadata"];
        metadata["name"] = name.into();
        if let Some(namespace) = &key.2 {
            metadata["namespace"] = namespace.clone().into();
        }
        metadata["uid"] = uid.into();
        metadata["creationTimestamp"] = "2025-01-01T00:00:00Z".into();
        if resource.status {
            metadata["generation"] = 1.into();
            if let Some(map) = object.as_object_mut() {
                map.remove("status");
            }
        }
        if dry_run {
            return Ok(object);
        }
        object["metadata"]["resourceVersion"] = self.next_revision().into();
        self.objects.insert(key, object.clone());
        Ok(object)
    }

    /// The object a patch produced, stored: its server-owned metadata kept, its status kept
    /// (or, through the `status` subresource, only its status taken), its generation raised
    /// when its spec changed. Removing the last finalizer of an object being deleted deletes it.
    pub(super) fn update(
        &mut self,
        resource: &Resource,
        key: &Key,
        mut object: Value,
        status_only: bool,
        dry_run: bool,
    ) -> Result<Value, Refusal> {
        let old = self.objects.get(key).cloned().ok_or_else(|| Refusal::not_found(key))?;
        if status_only {
            let status = object.get("status").cloned();
            object = old.clone();
            set_or_remove(&mut object, "status", status);
        } else if resource.status {
            set_or_remove(&mut object, "status", old.get("status").cloned());
        }
        for field in ["uid", "name", "namespace", "creationTimestamp", "deletionTimestamp", "generation"] {
            let kept = old["metadata"].get(field).cloned();
            set_or_remove(&mut object["metadata"], field, kept);
        }
        if resource.status && !status_only && without_metadata_and_status(&old) != without_metadata_and_status(&object)
        {
            let generation = old["metadata"]["generation"].as_i64().unwrap_or(0) + 1;
            object["metadata"]["generation"] = generation.into();
        }
        if dry_run {
            return Ok(object);
        }
        object["metadata"]["resourceVersion"] = self.next_revision().into();
        let finalized = object["metadata"]["finalizers"].as_array().is_none_or(Vec::is_empty);
        if old["metadata"].get("deletionTimestamp").is_some() && finalized {
            self.objects.remove(key);
        } else {
            self.objects.insert(key.clone(), object.clone());
        }
        Ok(object)
    }

    /// DELETE with the options' preconditions: the Status of a deletion, or the object when
    /// finalizers hold it.
    pub(super) fn delete(&mut self, key: &Key, options: &Value, dry_run: bool) -> Result<Value, Refusal> {
        let object = self.objects.get(key).cloned().ok_or_else(|| Refusal::not_found(key))?;
        let preconditions = &options["preconditions"];
        for field in ["uid", "resourceVersion"] {
            if let Some(wanted) = preconditions[field].as_str()
                && object["metadata"][field].as_str() != Some(wanted)
            {
                let message =
                    format!("Precondition failed: {field}: {wanted}, object {field}: {}", object["metadata"][field]);
                return Err(Refusal::new(409, "Conflict", message));
            }
        }
        let held = object["metadata"]["finalizers"].as_array().is_some_and(|f| !f.is_empty());
        if dry_run {
            return Ok(object);
        }
        if held {
            let mut object = object;
            if object["metadata"].get("deletionTimestamp").is_none() {
                object["metadata"]["deletionTimestamp"] = "2025-01-01T00:00:01Z".into();
            }
            object["metadata"]["resourceVersion"] = self.next_revision().into();
            self.objects.insert(key.clone(), object.clone());
            return Ok(object);
        }
        self.objects.remove(key);
        Ok(json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
            "details": { "name": key.3, "kind": key.1, "uid": object["metadata"]["uid"] },
        }))
    }

    /// A test's own write: stored as given, with a new resourceVersion (not a request).
    pub(super) fn put(&mut self, key: Key, mut object: Value) -> Value {
        object["metadata"]["resourceVersion"] = self.next_revision().into();
        self.objects.insert(key, object.clone());
        object
    }

    /// A new UID, as random-looking as the apiserver's (a version 4 UUID from the SHA-256 of a
    /// counter): records of members compress as real ones do.
    pub(super) fn new_uid(&mut self) -> String {
        use sha2::Digest;
        self.uids += 1;
        let hex = crate::digest::hex(&sha2::Sha256::digest(self.uids.to_be_bytes()));
        format!("{}-{}-4{}-8{}-{}", &hex[..8], &hex[8..12], &hex[13..16], &hex[17..20], &hex[20..32])
    }
}

/// RFC 6902 (`add`, `remove`, `replace`, `test`): what kube-runtime's finalizer helper sends. A
/// `test` of `null` passes on a missing path, as the apiserver's library has it.
pub(super) fn json_patch(mut doc: Value, operations: &Value) -> Result<Value, Refusal> {
    let invalid = |message: String| Refusal::new(422, "Invalid", message);
    for operation in operations.as_array().ok_or_else(|| invalid("a JSON patch is a list".into()))? {
        let path = operation["path"].as_str().unwrap_or_default();
        let value = operation.get("value").cloned().unwrap_or(Value::Null);
        let (parent, last) = path.rsplit_once('/').ok_or_else(|| invalid(format!("bad path {path:?}")))?;
        let last = last.replace("~1", "/").replace("~0", "~");
        let op = operation["op"].as_str().unwrap_or_default();
        if op == "test" {
            if doc.pointer(path).unwrap_or(&Value::Null) != &value {
                return Err(invalid(format!("testing value {path} failed: test failed")));
            }
            continue;
        }
        let missing = || invalid(format!("{op} {path}: the parent does not exist"));
        match (op, doc.pointer_mut(parent).ok_or_else(missing)?) {
            ("add", Value::Array(items)) if last == "-" => items.push(value),
            ("add", Value::Array(items)) => {
                let index = last.parse().ok().filter(|i| *i <= items.len()).ok_or_else(missing)?;
                items.insert(index, value);
            }
            ("remove", Value::Array(items)) => {
                let index = last.parse().ok().filter(|i| *i < items.len()).ok_or_else(missing)?;
                items.remove(index);
            }
            ("add" | "replace", Value::Object(map)) => {
                map.insert(last, value);
            }
            ("replace", Value::Array(items)) => {
                let slot = last.parse::<usize>().ok().and_then(|i| items.get_mut(i)).ok_or_else(missing)?;
                *slot = value;
            }
            ("remove", Value::Object(map)) => {
                map.remove(&last).ok_or_else(missing)?;
            }
            _ => return Err(invalid(format!("the fake cannot {op} {path}"))),
        }
    }
    Ok(doc)
}

fn set_or_remove(object: &mut Value, field: &str, value: Option<Value>) {
    match (object.as_object_mut(), value) {
        (Some(map), Some(value)) => {
            map.insert(field.to_owned(), value);
        }
        (Some(map), None) => {
            map.remove(field);
        }
        (None, _) => {}
    }
}

fn without_metadata_and_status(object: &Value) -> Value {
    let mut object = object.clone();
    if let Some(map) = object.as_object_mut() {
        map.remove("metadata");
        map.remove("status");
    }
    object
}

/// Equality-based label selectors (`a=b,c!=d,e,!f`): all the controller sends.
fn selects(selector: &str, labels: &Value) -> bool {
    selector.split(',').map(str::trim).filter(|r| !r.is_empty()).all(|requirement| {
        let label = |key: &str| labels.get(key.trim()).and_then(Value::as_str);
        if let Some((key, value)) = requirement.split_once("!=") {
            label(key) != Some(value.trim())
        } else if let Some((key, value)) = requirement.split_once("==").or_else(|| requirement.split_once('=')) {
            label(key) == Some(value.trim())
        } else if let Some(key) = requirement.strip_prefix('!') {
            label(key).is_none()
        } else {
            label(requirement).is_some()
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reconcile_fake_selectors_select_by_equality_and_existence() {
        let labels = json!({ "a": "1", "b": "2" });
        assert!(selects("a=1,b", &labels));
        assert!(selects("a==1,!c,b!=3", &labels));
        assert!(!selects("a=2", &labels));
        assert!(!selects("c", &labels));
        assert!(selects("", &Value::Null));
    }

    #[test]
    fn reconcile_fake_json_patch_tests_and_removes_a_finalizer() {
        let doc = json!({ "metadata": { "finalizers": ["x", "y"] } });
        let remove = json!([
            { "op": "test", "path": "/metadata/finalizers/1", "value": "y" },
            { "op": "remove", "path": "/metadata/finalizers/1" },
        ]);
        assert_eq!(json_patch(doc.clone(), &remove).unwrap(), json!({ "metadata": { "finalizers": ["x"] } }));
        let wrong = json!([{ "op": "test", "path": "/metadata/finalizers/0", "value": "y" }]);
        assert_eq!(json_patch(doc, &wrong).unwrap_err().code, 422);
        let add = json!([
            { "op": "test", "path": "/metadata/finalizers", "value": null },
            { "op": "add", "path": "/metadata/finalizers", "value": ["z"] },
        ]);
        assert_eq!(
            json_patch(json!({ "metadata": {} }), &add).unwrap(),
            json!({ "metadata": { "finalizers": ["z"] } })
        );
    }
}
