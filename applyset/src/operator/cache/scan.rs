//! Reads a watched object's JSON text into an [`Entry`] without building its tree: every watch
//! event is read this way, and a run parses the text again only for the objects it reads. The
//! few fields the entry keeps are read from their own text; the content digest is fed the text of
//! everything else as the apiserver wrote it (it writes an unchanged object the same way each
//! time), keys in sorted order at the levels where some are left out.

use std::borrow::{Borrow, Cow};
use std::collections::BTreeMap;
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use serde::Deserialize;
use serde_json::value::RawValue;

use super::store::{Body, Entry};
use crate::cluster::list::Listed;
use crate::keys::{CLUSTER_ANNOTATIONS, LAST_APPLIED_ANNOTATION as LAST_APPLIED, PART_OF_LABEL, PruneMark};

/// What the digest leaves out of the object: the status, and `apiVersion` and `kind`, which a
/// LIST's items leave out and a watch event's object has.
const NOT_CONTENT: [&str; 3] = ["status", "apiVersion", "kind"];
/// The metadata the apiserver keeps for itself.
const VOLATILE_METADATA: [&str; 3] = ["resourceVersion", "managedFields", "generation"];

/// Markers fed around the digest's parts (and for a level that is no object): bytes no UTF-8
/// text holds, so that parts at different levels never feed the same bytes.
const OPEN: u8 = 0xfe;
const CLOSE: u8 = 0xfd;
const NOT_AN_OBJECT: u8 = 0xfc;

/// One level of an object: each key with its value's text, in key order.
type Fields<'a> = BTreeMap<Text<'a>, &'a RawValue>;

/// A key or a string value, borrowed from the object's text unless it had escapes.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Text<'a>(Cow<'a, str>);

impl Text<'_> {
    fn as_str(&self) -> &str {
        &self.0
    }
}

impl Borrow<str> for Text<'_> {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = Text<'de>;
            fn expecting(&self, formatter: &mut std::fmt::Formatter) -> std::fmt::Result {
                formatter.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, text: &'de str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Borrowed(text)))
            }
            fn visit_str<E>(self, text: &str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(text.to_owned())))
            }
            fn visit_string<E>(self, text: String) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(text)))
            }
        }
        deserializer.deserialize_str(Visitor)
    }
}

/// One level of an object, read in one pass with the levels under it: each key with its
/// value's text, but the key the path descends into, read as a level of its own.
#[derive(Debug, Default)]
struct Level<'a> {
    fields: Fields<'a>,
    /// The value at the path's next key: `Some(None)` when it is there but no object.
    inner: Option<Option<Box<Level<'a>>>>,
}

/// The path read level by level; every other value is kept as text.
const PATH: &[&str] = &["metadata", "annotations"];

/// Reads a value as a [`Level`], descending along its path; `None` when it is no object.
struct LevelSeed(&'static [&'static str]);

impl<'de> serde::de::DeserializeSeed<'de> for LevelSeed {
    type Value = Option<Level<'de>>;
    fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for LevelSeed {
    type Value = Option<Level<'de>>;
    fn expecting(&self, formatter: &mut std::fmt::Formatter) -> std::fmt::Result {
        formatter.write_str("any JSON value")
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut level = Level::default();
        while let Some(key) = map.next_key::<Text<'de>>()? {
            match self.0.split_first() {
                Some((next, rest)) if key.as_str() == *next => {
                    level.inner = Some(map.next_value_seed(LevelSeed(rest))?.map(Box::new));
                }
                _ => {
                    level.fields.insert(key, map.next_value()?);
                }
            }
        }
        Ok(Some(level))
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
        Ok(None)
    }
    fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
}

impl<'a> Level<'a> {
    /// The level under this one, when it is an object.
    fn inner(&self) -> Option<&Level<'a>> {
        self.inner.as_ref()?.as_deref()
    }

    /// The string at `key`; `None` when it is absent or not a string.
    fn string(&self, key: &str) -> Option<String> {
        serde_json::from_str::<Text>(self.fields.get(key)?.get()).ok().map(|text| text.0.into_owned())
    }

    /// Whether the value at `key` is a string.
    fn is_string(&self, key: &str) -> bool {
        self.fields.get(key).is_some_and(|raw| raw.get().starts_with('"'))
    }
}

impl Entry {
    /// Reads one object as the apiserver sent it; `json` becomes its body as it is.
    pub fn from_json(json: Arc<str>) -> Result<Entry, serde_json::Error> {
        let mut deserializer = serde_json::Deserializer::from_str(&json);
        let root = serde::de::DeserializeSeed::deserialize(LevelSeed(PATH), &mut deserializer)?
            .ok_or_else(|| <serde_json::Error as serde::de::Error>::custom("a watched object is not a JSON object"))?;
        deserializer.end()?;
        let empty = Level::default();
        let metadata = root.inner().unwrap_or(&empty);
        let annotations = metadata.inner().unwrap_or(&empty);
        let labels: Level = metadata
            .fields
            .get("labels")
            .and_then(|raw| serde_json::from_str(raw.get()).ok())
            .map(|fields| Level { fields, inner: None })
            .unwrap_or_default();
        let marks: Vec<(&str, String)> =
            PruneMark::ALL.into_iter().filter_map(|mark| Some((mark.key(), annotations.string(mark.key())?))).collect();
        let listed = Listed {
            name: metadata.string("name").unwrap_or_default(),
            namespace: metadata.string("namespace").filter(|ns| !ns.is_empty()),
            uid: metadata.string("uid").unwrap_or_default(),
            has_last_applied: annotations.is_string(LAST_APPLIED),
            deleting: metadata.is_string("deletionTimestamp"),
            finalizers: metadata
                .fields
                .get("finalizers")
                .and_then(|raw| serde_json::from_str::<Vec<&RawValue>>(raw.get()).ok())
                .map(|items| items.into_iter().filter_map(|item| serde_json::from_str(item.get()).ok()).collect())
                .unwrap_or_default(),
            prune_mark: PruneMark::find(|key| marks.iter().find(|(mark, _)| *mark == key).map(|(_, v)| v.as_str())),
            cached_version: metadata.string("resourceVersion"),
        };
        let content = content_digest(&root);
        let set_id = labels.string(PART_OF_LABEL).unwrap_or_default();
        let resource_version = listed.cached_version.clone().unwrap_or_default();
        Ok(Entry { listed, resource_version, set_id, content, body: Body::Text(json) })
    }
}

/// The digest of what a set applies and others may change: everything but the status, the
/// metadata the apiserver keeps for itself and the cluster's own annotations (annotations
/// holding only those count as none at all).
fn content_digest(root: &Level) -> u64 {
    let mut hasher = DefaultHasher::new();
    hash_fields(root.fields.iter().filter(|(key, _)| !NOT_CONTENT.contains(&key.as_str())), &mut hasher);
    if let Some(metadata) = inner_or_mark(&root.inner, &mut hasher) {
        let kept = metadata.fields.iter().filter(|(key, _)| !VOLATILE_METADATA.contains(&key.as_str()));
        hash_fields(kept, &mut hasher);
        if let Some(annotations) = inner_or_mark(&metadata.inner, &mut hasher) {
            let mut applied =
                annotations.fields.iter().filter(|(key, _)| !CLUSTER_ANNOTATIONS.contains(&key.as_str())).peekable();
            if applied.peek().is_some() {
                hash_fields(applied, &mut hasher);
            }
        }
    }
    hasher.finish()
}

/// The level under one, when there is an object; when the value there is none, `hasher` is
/// fed the mark saying so.
fn inner_or_mark<'l, 'a>(
    inner: &'l Option<Option<Box<Level<'a>>>>,
    hasher: &mut DefaultHasher,
) -> Option<&'l Level<'a>> {
    match inner {
        Some(Some(level)) => Some(level),
        Some(None) => {
            hasher.write_u8(NOT_AN_OBJECT);
            None
        }
        None => None,
    }
}

/// Feeds one level's keys and values' text to `hasher`, in key order, as one part.
fn hash_fields<'a, 'b: 'a>(fields: impl Iterator<Item = (&'a Text<'b>, &'a &'b RawValue)>, hasher: &mut DefaultHasher) {
    hasher.write_u8(OPEN);
    for (key, raw) in fields {
        key.0.hash(hasher);
        raw.get().hash(hasher);
    }
    hasher.write_u8(CLOSE);
}

#[cfg(test)]
#[path = "scan_tests.rs"]
mod tests;
