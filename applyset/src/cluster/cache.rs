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

/// A live object as a cache knows it.
#[derive(Debug, Clone, PartialEq)]
pub enum Cached {
    /// Present, carrying the asking set's part-of label.
    Found(Value),
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

    /// The caller wrote this object (the apiserver's answer to a create or patch).
    fn wrote(&self, object: &Value);

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
