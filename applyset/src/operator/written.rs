//! The last version of each ApplySet this controller wrote, so that no reconcile starts from
//! an older copy.
//!
//! A reconcile reads its ApplySet from the reflector's store, which learns of the controller's
//! own writes (the status, the parent's labels, the finalizer) only when their watch events
//! arrive, a few milliseconds to a second later. A run that started from the copy before its
//! predecessor's status write would patch the status from the wrong base (keys the last run
//! wrote would stay) and read a member record whose parts the last run replaced. So every
//! write notes the resourceVersion the apiserver answered with, and a reconcile handed an older
//! copy waits for the store instead.
//!
//! Versions are compared as KEP-5504 defines it (Kubernetes 1.35; what kube-apiserver's
//! versions, etcd revisions, always were): decimal integers without leading zeros, of the same
//! resource. A version that is not one is not comparable, and the copy is taken as fresh, as
//! before this guard.

use std::cmp::Ordering;
use std::collections::HashMap;
use std::sync::Mutex;

use super::lock;

/// `a` against `b` by KEP-5504: `None` when either is not a decimal integer without leading
/// zeros (another apiserver's opaque version).
pub fn compare_versions(a: &str, b: &str) -> Option<Ordering> {
    let comparable =
        |v: &str| !v.is_empty() && v.bytes().all(|c| c.is_ascii_digit()) && (v.len() == 1 || !v.starts_with('0'));
    (comparable(a) && comparable(b)).then(|| a.len().cmp(&b.len()).then_with(|| a.cmp(b)))
}

/// By ApplySet key, the newest version the controller's own writes produced and the store has
/// not shown yet.
#[derive(Default)]
pub struct WrittenVersions {
    newest: Mutex<HashMap<String, String>>,
}

impl WrittenVersions {
    /// Notes the version a write of `key` was answered with (kept when newer than the one
    /// noted; a write whose answer carries no version notes nothing).
    pub fn note(&self, key: &str, version: Option<&str>) {
        let Some(version) = version else { return };
        let mut newest = lock(&self.newest);
        match newest.get(key) {
            Some(noted) if compare_versions(version, noted) != Some(Ordering::Greater) => {}
            _ => {
                newest.insert(key.to_owned(), version.to_owned());
            }
        }
    }

    /// Whether a copy of `key` at `seen` is older than the controller's own last write of it.
    /// Once a copy is not, the note is dropped: the store has caught up.
    pub fn is_behind(&self, key: &str, seen: Option<&str>) -> bool {
        let mut newest = lock(&self.newest);
        let Some(noted) = newest.get(key) else { return false };
        if seen.and_then(|seen| compare_versions(seen, noted)) == Some(Ordering::Less) {
            return true;
        }
        newest.remove(key);
        false
    }

    /// The ApplySet is gone.
    pub fn forget(&self, key: &str) {
        lock(&self.newest).remove(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn versions_compare_as_numbers_and_others_not_at_all() {
        assert_eq!(compare_versions("9", "10"), Some(Ordering::Less), "shorter is smaller");
        assert_eq!(compare_versions("123", "122"), Some(Ordering::Greater));
        assert_eq!(compare_versions("0", "0"), Some(Ordering::Equal));
        assert_eq!(compare_versions("007", "8"), None, "leading zeros");
        assert_eq!(compare_versions("", "8"), None);
        assert_eq!(compare_versions("8", "a1"), None, "an opaque version");
        assert_eq!(compare_versions("-1", "1"), None);
    }

    proptest! {
        #[test]
        fn comparison_agrees_with_the_numbers(a in any::<u64>(), b in any::<u64>()) {
            prop_assert_eq!(compare_versions(&a.to_string(), &b.to_string()), Some(a.cmp(&b)));
        }
    }

    #[test]
    fn a_copy_older_than_the_last_write_is_behind_until_the_store_catches_up() {
        let written = WrittenVersions::default();
        assert!(!written.is_behind("ns/app", Some("5")), "nothing written yet");
        written.note("ns/app", Some("12"));
        written.note("ns/app", Some("11"));
        assert!(written.is_behind("ns/app", Some("5")));
        assert!(written.is_behind("ns/app", Some("11")), "the older of two writes is kept out");
        assert!(!written.is_behind("ns/other", Some("5")), "by ApplySet");
        assert!(!written.is_behind("ns/app", Some("12")), "the write itself");
        assert!(!written.is_behind("ns/app", Some("5")), "caught up once: the note is dropped");
        written.note("ns/gone", Some("30"));
        written.forget("ns/gone");
        assert!(!written.is_behind("ns/gone", Some("5")), "forgotten with its ApplySet");
    }

    #[test]
    fn a_newer_or_incomparable_copy_is_fresh() {
        let written = WrittenVersions::default();
        written.note("ns/app", Some("12"));
        assert!(!written.is_behind("ns/app", Some("13")), "someone wrote after us");
        written.note("ns/app", Some("20"));
        assert!(!written.is_behind("ns/app", Some("opaque")), "another apiserver's version");
        written.note("ns/app", Some("20"));
        assert!(!written.is_behind("ns/app", None), "no version at all");
        written.note("ns/app", None);
        assert!(!written.is_behind("ns/app", Some("1")), "a write without a version notes nothing");
    }
}
