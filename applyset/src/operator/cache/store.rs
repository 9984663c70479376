//! One kind's objects as its watch delivered them, and what each event changed. Pure: the
//! watch loop feeds it events, the run reads it; it answers only while its view is complete.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use applyset_merge::Value;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::runtime::watcher::Event;

use super::packed::{self, Dictionary, Packed};
use crate::causes::Chain;
use crate::cluster::list::Listed;

/// `(namespace, name)`; the namespace is `None` for a cluster-scoped object.
pub type Key = (Option<String>, String);

/// One watched object: what prune needs, the set it belongs to, and the whole object as
/// compact JSON (parsed again only when a run reads it: text takes a third of the memory of
/// the parsed tree, and a no-op interval reads each object once), deflated once stored.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub listed: Listed,
    pub resource_version: String,
    /// The part-of label's value.
    pub set_id: String,
    /// A digest of the object without what others change on their own (status, resourceVersion,
    /// managedFields): a new value is a change somebody made to what the set applies.
    pub content: u64,
    pub body: Body,
}

/// An object's JSON: as the watch read it, until its kind's store deflates it.
#[derive(Debug, Clone, PartialEq)]
pub enum Body {
    Text(Arc<str>),
    Packed(Packed),
}

impl Entry {
    pub fn key(&self) -> Key {
        (self.listed.namespace.clone(), self.listed.name.clone())
    }

    /// The object's JSON, inflated when stored deflated; `None` when it cannot be read back
    /// (the run then reads the object from the apiserver).
    pub fn text(&self) -> Option<Arc<str>> {
        match &self.body {
            Body::Text(text) => Some(text.clone()),
            Body::Packed(packed) => match packed.unpack() {
                Ok(text) => Some(text.into()),
                Err(error) => {
                    tracing::warn!(error = %Chain(&error), name = %self.listed.name, "a cached object cannot be read back: reading it from the apiserver");
                    None
                }
            },
        }
    }

    /// The object, parsed again.
    pub fn object(&self) -> Option<Value> {
        Value::from_json_str(&self.text()?).ok()
    }
}

/// What one watched object is to kube's watcher: its metadata (the resourceVersion the watch
/// resumes from) and our entry.
#[derive(Debug, Clone)]
pub struct Watched {
    pub meta: ObjectMeta,
    pub entry: Entry,
}

impl<'de> serde::Deserialize<'de> for Watched {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // The object's text as sent is kept (it is what a run parses again), and read once for
        // what the entry needs: no tree built, no copy written out again.
        let raw = Box::<serde_json::value::RawValue>::deserialize(deserializer)?;
        let entry = Entry::from_json(Arc::from(Box::<str>::from(raw))).map_err(serde::de::Error::custom)?;
        let meta = ObjectMeta {
            name: Some(entry.listed.name.clone()),
            namespace: entry.listed.namespace.clone(),
            uid: Some(entry.listed.uid.clone()),
            resource_version: Some(entry.resource_version.clone()),
            ..ObjectMeta::default()
        };
        Ok(Watched { meta, entry })
    }
}

/// A change to a set's objects that the set did not necessarily make.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub set_id: String,
    pub uid: String,
    /// The new resourceVersion; `None` when the object was deleted.
    pub resource_version: Option<String>,
    /// Only the status (or the apiserver's own metadata) changed: nothing the set applies,
    /// but maybe its health.
    pub status_only: bool,
}

/// One kind's objects.
#[derive(Debug, Default)]
pub struct KindStore {
    /// The view is complete: listed, and watched since without an error.
    synced: bool,
    /// Synced at least once: a later list compares with what was known.
    listed_once: bool,
    objects: HashMap<Key, Arc<Entry>>,
    by_set: HashMap<String, BTreeSet<Key>>,
    /// A list in progress (kube's `Init` … `InitDone`).
    relisting: Option<HashMap<Key, Arc<Entry>>>,
    /// The one namespace watched, when not all are: nothing elsewhere is answered.
    scope: Option<String>,
    /// What this kind's objects are deflated against: the first one stored.
    dictionary: Option<Arc<Dictionary>>,
}

impl KindStore {
    pub fn is_synced(&self) -> bool {
        self.synced
    }

    pub fn len(&self) -> usize {
        self.objects.len()
    }

    pub fn is_empty(&self) -> bool {
        self.objects.is_empty()
    }

    /// From now on the watch covers `namespace` only.
    pub fn set_scope(&mut self, namespace: Option<String>) {
        self.scope = namespace;
        self.fail();
    }

    fn covers(&self, namespace: Option<&str>) -> bool {
        match (&self.scope, namespace) {
            (Some(scope), Some(namespace)) => scope == namespace,
            _ => true,
        }
    }

    /// The watch failed: nothing is answered until the next complete list.
    pub fn fail(&mut self) {
        self.synced = false;
        self.relisting = None;
    }

    /// Applies one watch event; returns the changes others may have made.
    pub fn apply(&mut self, event: Event<Watched>) -> Vec<Change> {
        match event {
            Event::Init => {
                self.synced = false;
                self.relisting = Some(HashMap::new());
                Vec::new()
            }
            Event::InitApply(watched) => {
                if let Some(listing) = &mut self.relisting {
                    let entry = pack(&mut self.dictionary, watched.entry);
                    listing.insert(entry.key(), entry);
                }
                Vec::new()
            }
            Event::InitDone => {
                let Some(listed) = self.relisting.take() else { return Vec::new() };
                // After a gap (an error, a 410), whatever changed meanwhile is a change. The first
                // list is the starting point: what it shows may have changed since a run read it
                // from the apiserver (a `kubectl scale` while the list was on its way), so each
                // object counts as a change; the versions the controller wrote or read itself are
                // known as its own and start nothing (see `ObjectCache::seen`).
                let changes = if self.listed_once {
                    diff(&self.objects, &listed)
                } else {
                    listed.values().map(|entry| changed(&entry.set_id, entry)).collect()
                };
                self.by_set.clear();
                for (key, entry) in &listed {
                    self.by_set.entry(entry.set_id.clone()).or_default().insert(key.clone());
                }
                self.objects = listed;
                self.synced = true;
                self.listed_once = true;
                changes
            }
            Event::Apply(watched) => {
                let entry = pack(&mut self.dictionary, watched.entry);
                self.upsert(entry)
            }
            Event::Delete(watched) => self.remove(&watched.entry),
        }
    }

    fn upsert(&mut self, entry: Arc<Entry>) -> Vec<Change> {
        let key = entry.key();
        let old = self.objects.insert(key.clone(), entry.clone());
        self.by_set.entry(entry.set_id.clone()).or_default().insert(key.clone());
        match old {
            Some(old) if old.resource_version == entry.resource_version => Vec::new(),
            Some(old) if old.content == entry.content && old.set_id == entry.set_id => {
                vec![Change { status_only: true, ..changed(&entry.set_id, &entry) }]
            }
            Some(old) if old.set_id != entry.set_id => {
                self.unindex(&old.set_id, &key);
                vec![changed(&old.set_id, &entry), changed(&entry.set_id, &entry)]
            }
            _ => vec![changed(&entry.set_id, &entry)],
        }
    }

    fn remove(&mut self, entry: &Entry) -> Vec<Change> {
        let key = entry.key();
        let removed = self.objects.remove(&key);
        let set_id = removed.as_ref().map_or(&entry.set_id, |old| &old.set_id).clone();
        self.unindex(&set_id, &key);
        vec![Change { set_id, uid: entry.listed.uid.clone(), resource_version: None, status_only: false }]
    }

    fn unindex(&mut self, set_id: &str, key: &Key) {
        if let Some(keys) = self.by_set.get_mut(set_id) {
            keys.remove(key);
            if keys.is_empty() {
                self.by_set.remove(set_id);
            }
        }
    }

    /// The object `key` when the view is complete: `Some(None)` when no labelled object has
    /// that name.
    pub fn get(&self, key: &Key) -> Option<Option<Arc<Entry>>> {
        (self.synced && self.covers(key.0.as_deref())).then(|| self.objects.get(key).cloned())
    }

    /// The members of `set_id` in `namespace` (every namespace of a cluster-scoped kind is
    /// `None`), when the view is complete.
    pub fn members(&self, set_id: &str, namespace: Option<&str>) -> Option<Vec<Listed>> {
        if !self.synced || !self.covers(namespace) {
            return None;
        }
        let Some(keys) = self.by_set.get(set_id) else { return Some(Vec::new()) };
        let listed = keys
            .iter()
            .filter(|(ns, _)| ns.as_deref() == namespace)
            .filter_map(|key| self.objects.get(key))
            .map(|entry| entry.listed.clone())
            .collect();
        Some(listed)
    }
}

/// The entry as a store keeps it: its text deflated against the kind's `dictionary` (the first
/// text stored, taken here), or kept as it is if zlib refuses.
fn pack(dictionary: &mut Option<Arc<Dictionary>>, mut entry: Entry) -> Arc<Entry> {
    if let Body::Text(text) = &entry.body {
        let dictionary = dictionary.get_or_insert_with(|| Dictionary::of(text));
        if let Some(packed) = packed::pack(text, dictionary) {
            entry.body = Body::Packed(packed);
        }
    }
    Arc::new(entry)
}

fn changed(set_id: &str, entry: &Entry) -> Change {
    Change {
        set_id: set_id.to_owned(),
        uid: entry.listed.uid.clone(),
        resource_version: Some(entry.resource_version.clone()),
        status_only: false,
    }
}

/// What differs between two complete views: objects new, gone, changed or moved to another set.
fn diff(before: &HashMap<Key, Arc<Entry>>, after: &HashMap<Key, Arc<Entry>>) -> Vec<Change> {
    let mut changes = Vec::new();
    for (key, entry) in after {
        match before.get(key) {
            Some(old) if old.resource_version == entry.resource_version => {}
            Some(old) if old.content == entry.content && old.set_id == entry.set_id => {
                changes.push(Change { status_only: true, ..changed(&entry.set_id, entry) });
            }
            Some(old) if old.set_id != entry.set_id => {
                changes.push(changed(&old.set_id, entry));
                changes.push(changed(&entry.set_id, entry));
            }
            _ => changes.push(changed(&entry.set_id, entry)),
        }
    }
    for (key, old) in before {
        if !after.contains_key(key) {
            changes.push(Change {
                set_id: old.set_id.clone(),
                uid: old.listed.uid.clone(),
                resource_version: None,
                status_only: false,
            });
        }
    }
    changes
}

#[cfg(test)]
#[path = "store_tests.rs"]
mod tests;
