//! What a watch cache of managed objects answers in place of the apiserver. The controller has
//! one (`operator::cache`); the CLI asks the apiserver every time, as kubectl does.
//!
//! A cache answers only when its view is complete: a kind it does not watch yet, has not
//! listed, or is listing again (after a watch error or a 410) answers `None`, and the caller
//! asks the apiserver as before. Writes and deletes are reported back, so that the watch
//! events they cause are known as the caller's own.

use std::sync::Arc;

use applyset_merge::Value;
use kube::core::ApiResource;

use super::Mapping;
use super::list::Listed;

/// A live object kept as compact JSON and parsed when its apply begins: a stage of 20,000
/// objects parsed at once would hold them all as trees (about 8 KiB each) until the last is
/// applied.
#[derive(Debug, Clone, PartialEq)]
pub struct LiveText {
    json: Arc<str>,
    /// `(apiVersion, kind)` to set: a LIST's items and a watch cache's objects leave them out.
    type_meta: Option<(String, String)>,
}

impl LiveText {
    pub fn new(json: Arc<str>, type_meta: Option<(String, String)>) -> LiveText {
        LiveText { json, type_meta }
    }

    /// The object, as a GET shows it.
    pub fn parse(&self) -> Option<Value> {
        let mut object = Value::from_json_str(&self.json).ok()?;
        if let (Value::Object(map), Some((api_version, kind))) = (&mut object, &self.type_meta) {
            map.insert("apiVersion".into(), Value::String(api_version.clone()));
            map.insert("kind".into(), Value::String(kind.clone()));
        }
        Some(object)
    }
}

/// A live object as a cache knows it.
#[derive(Debug, Clone, PartialEq)]
pub enum Cached {
    /// Present, carrying the asking set's part-of label.
    Found(LiveText),
    /// No object of that name carries any ApplySet's part-of label.
    Unlabelled,
}

/// The read and write-back side of a watch cache.
pub trait ObjectCache: Send + Sync {
    /// The object `name`, when the cache's answer for its kind is complete: `Found` only if it
    /// carries `set_id`'s part-of label (another set's object, or one without it, is read from
    /// the apiserver as before).
    fn live(&self, mapping: &Mapping, namespace: Option<&str>, name: &str, set_id: &str) -> Option<Cached>;

    /// The objects of `resource` in `namespace` (`None`: cluster-scoped) that carry `set_id`'s
    /// part-of label, as prune's LIST would return them; `None` when the view is incomplete.
    fn members(&self, resource: &ApiResource, namespace: Option<&str>, set_id: &str) -> Option<Vec<Listed>>;

    /// The object `name` as the cache holds it, when that is `resource_version` (which a LIST
    /// just returned): a run reading fresh shares the cache's text instead of keeping a copy.
    fn at_version(
        &self,
        mapping: &Mapping,
        namespace: Option<&str>,
        name: &str,
        resource_version: &str,
    ) -> Option<LiveText> {
        let _ = (mapping, namespace, name, resource_version);
        None
    }

    /// The caller wrote this object (the apiserver's answer to a create or patch).
    fn wrote(&self, object: &Value);

    /// The caller read this version of the object from the apiserver (the cache could not
    /// answer yet): when the cache's first list shows the same version, nothing changed since.
    fn seen(&self, object: &Value) {
        self.wrote(object);
    }

    /// The caller deleted the object with this uid.
    fn deleted(&self, uid: &str);
}

/// A shared cache, and whether an object it does not know may be taken as unlabelled: only
/// when the writes use the identity that watches (an impersonated identity's reads stay its
/// own, so that what it may not read is not read for it).
#[derive(Clone)]
pub struct CacheRef {
    pub cache: Arc<dyn ObjectCache>,
    pub trust_unlabelled: bool,
}

impl std::fmt::Debug for CacheRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CacheRef").field("trust_unlabelled", &self.trust_unlabelled).finish_non_exhaustive()
    }
}

/// A cache that is told of writes and deletes but answers nothing, so that every read goes to
/// the apiserver: for a run someone asked for (a `reconcile` request, a webhook push), which
/// must see a `kubectl edit` made a moment before even if its watch event is still on its way.
/// Writes are still reported, so that their watch events are known as the run's own.
pub struct WritesOnly(pub Arc<dyn ObjectCache>);

impl ObjectCache for WritesOnly {
    fn live(&self, _: &Mapping, _: Option<&str>, _: &str, _: &str) -> Option<Cached> {
        None
    }

    fn members(&self, _: &ApiResource, _: Option<&str>, _: &str) -> Option<Vec<Listed>> {
        None
    }

    /// The version was just read from the apiserver: the cache's text of it is as fresh.
    fn at_version(
        &self,
        mapping: &Mapping,
        namespace: Option<&str>,
        name: &str,
        resource_version: &str,
    ) -> Option<LiveText> {
        self.0.at_version(mapping, namespace, name, resource_version)
    }

    fn wrote(&self, object: &Value) {
        self.0.wrote(object);
    }

    fn deleted(&self, uid: &str) {
        self.0.deleted(uid);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    /// A cache that knows everything and remembers what it was told.
    #[derive(Default)]
    struct Knowing {
        told: Mutex<Vec<String>>,
    }

    impl ObjectCache for Knowing {
        fn live(&self, _: &Mapping, _: Option<&str>, _: &str, _: &str) -> Option<Cached> {
            Some(Cached::Unlabelled)
        }
        fn members(&self, _: &ApiResource, _: Option<&str>, _: &str) -> Option<Vec<Listed>> {
            Some(Vec::new())
        }
        fn wrote(&self, object: &Value) {
            let uid = object.as_object().and_then(|o| o.get("metadata")).and_then(Value::as_object);
            let uid = uid.and_then(|m| m.get("uid")).and_then(Value::as_str).unwrap_or("?");
            self.told.lock().unwrap().push(format!("wrote {uid}"));
        }
        fn deleted(&self, uid: &str) {
            self.told.lock().unwrap().push(format!("deleted {uid}"));
        }
    }

    #[test]
    fn writes_only_answers_nothing_and_passes_writes_on() {
        let inner = Arc::new(Knowing::default());
        let cache = WritesOnly(inner.clone());
        let resource = ApiResource::erase::<k8s_openapi::api::core::v1::ConfigMap>(&());
        let mapping = Mapping { resource: resource.clone(), namespaced: true };
        assert_eq!(cache.live(&mapping, Some("shop"), "web", "set"), None);
        assert_eq!(cache.members(&resource, Some("shop"), "set"), None);
        cache.wrote(&serde_json::from_str(r#"{"metadata":{"uid":"u1"}}"#).unwrap());
        cache.deleted("u2");
        assert_eq!(*inner.told.lock().unwrap(), ["wrote u1", "deleted u2"]);
    }
}
