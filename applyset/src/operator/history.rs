//! The revisions an ApplySet applied, kept in its status, and the manifests of the earlier ones
//! read back from git: what stale fields are found from ([`crate::fields`]).
//!
//! Cost: the index is built once per (earlier revisions, current revision) and kept per
//! ApplySet; a run at an unchanged revision reuses it and reads nothing. It keeps, per object,
//! only what earlier manifests had that the current one lacks ([`fields::absent_from`]): an
//! object git did not change costs nothing, a changed one only its removed fields. Reading a revision the cache no longer holds fetches it.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use applyset_merge::{Packed, Value};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::api::{AppliedRevision, ApplySet};
use crate::fields::{self, Version};
use crate::manifest::{LoadedObject, ObjectKey};
use crate::source::{CacheKey, Credentials, GitSource};

/// How many applied revisions the status keeps (the newest first).
pub const HISTORY_LIMIT: usize = 10;

/// The applied revisions after `revision` (at `path`) was applied in full at `now`: it goes
/// first, an earlier entry for the same revision and path is dropped, the oldest beyond the limit
/// too. Applied again while it is the newest, the list stays as it is (its time included), so
/// a steady run writes no status.
pub fn record_applied(
    previous: &[AppliedRevision],
    revision: &str,
    path: Option<&str>,
    now: &Time,
) -> Vec<AppliedRevision> {
    let same = |r: &AppliedRevision| r.revision == revision && r.path.as_deref() == path;
    if previous.first().is_some_and(same) {
        return previous.iter().take(HISTORY_LIMIT).cloned().collect();
    }
    let current =
        AppliedRevision { revision: revision.to_owned(), path: path.map(str::to_owned), applied_at: Some(now.clone()) };
    let mut applied = vec![current];
    applied.extend(previous.iter().filter(|r| !same(r)).cloned());
    applied.truncate(HISTORY_LIMIT);
    applied
}

/// The revisions applied before the current one, newest first: the status's list, or, for an
/// ApplySet applied before the list existed, its last applied revision.
pub fn earlier(applyset: &ApplySet, current: &str) -> Vec<AppliedRevision> {
    let status = applyset.status.as_ref();
    let mut applied = status.map(|s| s.applied_revisions.clone()).unwrap_or_default();
    if applied.is_empty()
        && let Some(last) = status.and_then(|s| s.last_applied_revision.clone())
    {
        applied.push(AppliedRevision { revision: last, path: applyset.spec.source.path.clone(), applied_at: None });
    }
    let path = applyset.spec.source.path.clone();
    applied.retain(|r| !(r.revision == current && r.path == path));
    applied
}

/// The earlier manifests of the objects whose manifest changed since.
#[derive(Debug, Default)]
pub struct HistoryIndex {
    /// What it was built from: the earlier revisions and the current one.
    built_for: (Vec<AppliedRevision>, String),
    objects: HashMap<ObjectKey, Vec<Version>>,
}

impl HistoryIndex {
    /// An object's earlier manifests, oldest first; empty when it did not change (or is new).
    pub fn versions_for(&self, manifest: &Value) -> &[Version] {
        let Some(key) = ObjectKey::of(manifest) else { return &[] };
        if let Some(found) = self.objects.get(&key) {
            return found;
        }
        // A manifest without a namespace is defaulted before it is applied.
        let unnamespaced = ObjectKey { namespace: String::new(), ..key };
        self.objects.get(&unnamespaced).map_or(&[], Vec::as_slice)
    }

    pub fn is_empty(&self) -> bool {
        self.objects.is_empty()
    }

    /// Built from each earlier revision's objects (newest first, as the status lists them) and
    /// the current objects.
    pub fn build(
        built_for: (Vec<AppliedRevision>, String),
        revisions: Vec<(String, Vec<LoadedObject>)>,
        current: &[LoadedObject],
    ) -> HistoryIndex {
        let mut builder = IndexBuilder::new(current);
        for (revision, loaded) in revisions.into_iter().rev() {
            for object in loaded {
                builder.add(&revision, object);
            }
        }
        builder.finish(built_for)
    }
}

/// A [`HistoryIndex`] built one object at a time, the earlier revisions oldest first: an
/// earlier revision is never held whole (ten revisions of 20,000 objects would be hundreds of
/// megabytes as trees). Per object it keeps the last version seen, packed, and what each
/// version had that the current manifest lacks.
struct IndexBuilder<'a> {
    /// Each current object, and its versions seen so far.
    objects: HashMap<ObjectKey, (&'a Value, Vec<Seen>)>,
    /// The revision being added (one copy for all its objects).
    revision: Arc<str>,
}

/// One version of an object in the earlier revisions.
struct Seen {
    /// The newest revision that applied it unchanged.
    revision: Arc<str>,
    manifest: Packed,
    /// What it had that the current manifest lacks (`None`: nothing).
    absent_now: Option<Value>,
}

impl<'a> IndexBuilder<'a> {
    fn new(current: &'a [LoadedObject]) -> Self {
        let objects =
            current.iter().filter_map(|o| Some((ObjectKey::of(&o.object)?, (&o.object, Vec::new())))).collect();
        IndexBuilder { objects, revision: Arc::from("") }
    }

    /// An object of `revision`, which is not older than any revision added before.
    fn add(&mut self, revision: &str, object: LoadedObject) {
        if *self.revision != *revision {
            self.revision = Arc::from(revision);
        }
        let Some(key) = ObjectKey::of(&object.object) else { return };
        // Only objects git still has can have stale fields (the others are pruned).
        let Some((now, versions)) = self.objects.get_mut(&key) else { return };
        let manifest = Packed::new(&object.object);
        // Equal bytes are equal values; unequal bytes may still be (0.0 and -0.0).
        let same_as_last =
            versions.last().is_some_and(|v| v.manifest == manifest || v.manifest.unpack() == object.object);
        match versions.last_mut() {
            Some(last) if same_as_last => last.revision = self.revision.clone(),
            _ => versions.push(Seen {
                revision: self.revision.clone(),
                manifest,
                absent_now: fields::absent_from(&object.object, now),
            }),
        }
    }

    /// Only what the current manifest lacks can be stale: the rest is not kept.
    fn finish(self, built_for: (Vec<AppliedRevision>, String)) -> HistoryIndex {
        let objects = self
            .objects
            .into_iter()
            .filter_map(|(key, (_, seen))| {
                let versions: Vec<Version> = seen
                    .into_iter()
                    .filter_map(|s| Some(Version { revision: s.revision.to_string(), manifest: s.absent_now? }))
                    .collect();
                (!versions.is_empty()).then_some((key, versions))
            })
            .collect();
        HistoryIndex { built_for, objects }
    }
}

/// Per ApplySet, the last index built.
#[derive(Default)]
pub struct HistoryCache {
    indexes: std::sync::Mutex<HashMap<String, Arc<HistoryIndex>>>,
}

/// How earlier revisions are read: the ApplySet's git cache, with its credentials, within its
/// timeout.
pub struct RevisionReader<'a> {
    pub git: &'a GitSource,
    pub credentials: Option<Credentials>,
    pub timeout: Duration,
}

impl HistoryCache {
    /// The index for `earlier` revisions and the `current` one: the cached one when it was
    /// built for the same, else read from git. A revision that cannot be read is left out with
    /// a warning (its fields are not checked), never taken as "nothing was applied".
    pub async fn index(
        &self,
        reader: RevisionReader<'_>,
        applyset: &ApplySet,
        earlier: Vec<AppliedRevision>,
        current_revision: &str,
        current: &[LoadedObject],
    ) -> (Arc<HistoryIndex>, Vec<String>) {
        let key = applyset.key();
        let built_for = (earlier, current_revision.to_owned());
        if let Some(found) = self.indexes.lock().unwrap_or_else(|p| p.into_inner()).get(&key)
            && found.built_for == built_for
        {
            return (found.clone(), Vec::new());
        }
        let cache_key = CacheKey::new(applyset.namespace_or_default(), applyset.name());
        let mut builder = IndexBuilder::new(current);
        let mut warnings = Vec::new();
        // Oldest first, each read and added a file at a time.
        for applied in built_for.0.iter().rev() {
            if let Err(why) = read(&reader, &cache_key, applyset, applied, &mut builder).await {
                warnings.push(format!(
                    "earlier revision {} cannot be read, so fields only it applied are not checked for staleness: {why}",
                    applied.revision
                ));
            }
        }
        // Newest first, as the status lists the revisions.
        warnings.reverse();
        let index = Arc::new(builder.finish(built_for));
        // A failed read is tried again next run rather than cached.
        if warnings.is_empty() {
            self.indexes.lock().unwrap_or_else(|p| p.into_inner()).insert(key, index.clone());
        }
        (index, warnings)
    }

    /// Forgets an ApplySet (deleted).
    pub fn forget(&self, key: &str) {
        self.indexes.lock().unwrap_or_else(|p| p.into_inner()).remove(key);
    }
}

/// Why an earlier revision could not be read (a warning: its stale fields are not checked).
#[derive(Debug, thiserror::Error)]
enum ReadError {
    #[error("not a revision of a commit")]
    NotACommit,
    #[error(transparent)]
    Git(#[from] crate::source::SourceError),
    #[error(transparent)]
    Load(#[from] crate::manifest::LoadError),
}

/// One earlier revision's objects, loaded as the controller loads manifests, into the index
/// being built. Its files are all loaded before any object is added: a revision that cannot be
/// read adds nothing.
async fn read(
    reader: &RevisionReader<'_>,
    cache_key: &CacheKey,
    applyset: &ApplySet,
    applied: &AppliedRevision,
    builder: &mut IndexBuilder<'_>,
) -> Result<(), ReadError> {
    let RevisionReader { git, credentials, timeout } = reader;
    let (_, commit) = crate::source::parse_revision(&applied.revision).ok_or(ReadError::NotACommit)?;
    let spec = crate::source::SourceSpec { path: applied.path.clone(), ..applyset.spec.source.clone() };
    let files: Vec<(PathBuf, Vec<u8>)> =
        git.read_revision(cache_key, &spec, commit, credentials.clone(), *timeout).await?;
    let files: Vec<_> = files.into_iter().filter(|(path, bytes)| !sops_encrypted(path, bytes)).collect();
    // Loaded once to know every file loads (kept as nothing), then again a file at a time.
    for (path, bytes) in &files {
        crate::manifest::load_bytes(path, bytes)?;
    }
    for (path, bytes) in &files {
        for object in crate::manifest::load_bytes(path, bytes)? {
            builder.add(&applied.revision, object);
        }
    }
    Ok(())
}

/// Whether a file is SOPS-encrypted (or unreadable as such): its earlier version, ciphertext
/// and metadata, cannot be compared with the decrypted current one, so its objects' stale
/// fields are not checked.
fn sops_encrypted(path: &std::path::Path, bytes: &[u8]) -> bool {
    !matches!(crate::sops::open(bytes, crate::sops::Format::of_manifest(path)), Ok(None))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::Source;

    fn loaded(text: &str) -> LoadedObject {
        LoadedObject {
            object: Value::from_json_str(text).unwrap(),
            source: Source { path: "a.yaml".into(), document: 1, line: 1 },
        }
    }

    /// An object's versions in the index: (revision, what it had that the current one lacks).
    fn versions<'a>(index: &'a HistoryIndex, object: &Value) -> Vec<(&'a str, String)> {
        index.versions_for(object).iter().map(|v| (v.revision.as_str(), v.manifest.to_json_string())).collect()
    }

    fn config_map(data: &str) -> LoadedObject {
        loaded(&format!(r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"a"}},"data":{{{data}}}}}"#))
    }

    const SHA: &str = "0123456789abcdef0123456789abcdef01234567";

    #[test]
    fn encrypted_files_of_earlier_revisions_are_left_out() {
        let path = std::path::Path::new("db.yaml");
        let encrypted = include_bytes!("../sops/testdata/regex.enc.yaml");
        assert!(sops_encrypted(path, encrypted));
        assert!(!sops_encrypted(path, b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: sops}\n"));
    }

    #[test]
    fn the_applied_list_is_newest_first_unique_and_bounded() {
        let at = |s: i64| Time(k8s_openapi::jiff::Timestamp::from_second(s).expect("a time"));
        let mut applied = Vec::new();
        for i in 0..12 {
            applied = record_applied(&applied, &format!("main@sha1:{i}"), Some("deploy"), &at(i));
        }
        assert_eq!(applied.len(), HISTORY_LIMIT);
        assert_eq!(applied[0].revision, "main@sha1:11");
        assert_eq!(applied[0].applied_at, Some(at(11)));
        let again = record_applied(&applied, "main@sha1:5", Some("deploy"), &at(100));
        assert_eq!(again[0].revision, "main@sha1:5");
        assert_eq!(again[0].applied_at, Some(at(100)), "applied again after another: the new time");
        assert_eq!(again.iter().filter(|r| r.revision == "main@sha1:5").count(), 1);
        // A steady run at the newest revision changes nothing, its time included.
        assert_eq!(record_applied(&again, "main@sha1:5", Some("deploy"), &at(200)), again);
        assert_eq!(crate::source::parse_revision(&format!("main@sha1:{SHA}")), Some((Some("main"), SHA)));
        assert_eq!(crate::source::parse_revision(&format!("sha1:{SHA}")), Some((None, SHA)));
        assert_eq!(crate::source::parse_revision("main@sha1:abc"), None);
    }

    #[test]
    fn a_version_applied_again_counts_from_its_newest_revision_only_when_consecutive() {
        let a = || config_map(r#""k":"1","gone":"x""#);
        let b = || config_map(r#""k":"2","gone":"y""#);
        // Newest first: a (v4), a (v3), b (v2), a (v1).
        let revisions = ["v4", "v3", "v2", "v1"].into_iter().zip([a(), a(), b(), a()]);
        let revisions = revisions.map(|(r, o)| (r.to_owned(), vec![o])).collect();
        let current = [config_map(r#""k":"5""#)];
        let index = HistoryIndex::build(Default::default(), revisions, &current);
        let versions = versions(&index, &current[0].object);
        let gone = |v: &str| format!(r#"{{"data":{{"gone":"{v}"}}}}"#);
        assert_eq!(versions, [("v1", gone("x")), ("v2", gone("y")), ("v4", gone("x"))]);
    }

    #[test]
    fn only_what_the_current_manifest_lacks_is_kept() {
        let unchanged = loaded(r#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"}}"#);
        let revisions = vec![
            ("v3".to_owned(), vec![config_map(r#""k":"3""#), unchanged.clone()]),
            ("v2".to_owned(), vec![config_map(r#""k":"2","gone":"x""#), unchanged.clone()]),
            ("v1".to_owned(), vec![config_map(r#""k":"1","gone":"x","older":"y""#), unchanged.clone()]),
        ];
        let current = [config_map(r#""k":"4""#), unchanged.clone()];
        let index = HistoryIndex::build(Default::default(), revisions, &current);
        let versions = versions(&index, &current[0].object);
        // v3 only changed a value git still sets: nothing of it can be stale.
        assert_eq!(
            versions,
            [("v1", r#"{"data":{"gone":"x","older":"y"}}"#.to_owned()), ("v2", r#"{"data":{"gone":"x"}}"#.to_owned())]
        );
        assert!(index.versions_for(&unchanged.object).is_empty());
    }
}
