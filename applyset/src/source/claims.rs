//! Which ApplySet reads which checkout.
//!
//! A checkout is the whole tree of one commit (a kustomization may reach anywhere in the
//! repository), so it is written once per (repository, commit) and read by every ApplySet of
//! that repository at that commit: a monorepo of N apps costs one tree per commit, not N.
//! An ApplySet claims the checkout its last sync returned, and reads it until its next sync
//! (runs of one ApplySet never overlap); a checkout nobody claims is removed. Claims change,
//! and checkouts are written and removed, only under the repository's lock.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::CacheKey;

use crate::causes::Chain;

/// The checkout each ApplySet (by cache key) reads now.
#[derive(Debug, Default)]
pub(crate) struct Claims {
    by_key: Mutex<HashMap<CacheKey, PathBuf>>,
}

impl Claims {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<CacheKey, PathBuf>> {
        self.by_key.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// `key` reads `dir` now (and no longer the checkout it claimed before).
    pub(crate) fn claim(&self, key: &CacheKey, dir: &Path) {
        self.lock().insert(key.clone(), dir.to_path_buf());
    }

    /// `key` reads nothing any more; the checkout it claimed, when nobody else claims it.
    pub(crate) fn release(&self, key: &CacheKey) -> Option<PathBuf> {
        let mut by_key = self.lock();
        let dir = by_key.remove(key)?;
        (!by_key.values().any(|d| *d == dir)).then_some(dir)
    }

    pub(crate) fn is_claimed(&self, dir: &Path) -> bool {
        self.lock().values().any(|d| d == dir)
    }

    /// Removes every entry of `checkouts` (one repository's) that nobody claims: the
    /// checkouts every ApplySet has moved on from, those left by an earlier process, and
    /// temporary directories of writes that did not finish. Call under the repository's lock.
    pub(crate) fn sweep(&self, checkouts: &Path) {
        let Ok(entries) = fs::read_dir(checkouts) else { return };
        for entry in entries.flatten() {
            let path = entry.path();
            if !self.is_claimed(&path)
                && let Err(error) = fs::remove_dir_all(&path)
            {
                tracing::warn!(checkout = %path.display(), error = %Chain(&error), "could not remove an unused checkout");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_checkout_is_removed_once_the_last_applyset_moved_on() {
        let base = std::env::temp_dir().join(format!("applyset-claims-test-{}", fastrand::u64(..)));
        fs::create_dir_all(&base).unwrap();
        let checkouts = base.as_path();
        let (one, two) = (checkouts.join("c1"), checkouts.join("c2"));
        for dir in [&one, &two, &checkouts.join(".tmp-c3-1-2"), &checkouts.join("left-by-a-restart")] {
            fs::create_dir(dir).unwrap();
            fs::write(dir.join("a.yaml"), "x").unwrap();
        }
        let claims = Claims::default();
        let (a, b, c) =
            (CacheKey::new("team-a", "app"), CacheKey::new("team-b", "app"), CacheKey::new("team-b", "web"));
        claims.claim(&a, &one);
        claims.claim(&b, &one);
        claims.claim(&c, &two);
        claims.sweep(checkouts);
        let left = |want: &[&Path]| {
            let mut names: Vec<PathBuf> = fs::read_dir(checkouts).unwrap().flatten().map(|e| e.path()).collect();
            names.sort();
            assert_eq!(names, want);
        };
        left(&[&one, &two]);
        // a moves on; b still reads c1.
        claims.claim(&a, &two);
        claims.sweep(checkouts);
        left(&[&one, &two]);
        // b moves on too: c1 is nobody's.
        claims.claim(&b, &two);
        claims.sweep(checkouts);
        left(&[&two]);
        assert_eq!(claims.release(&a), None, "b and c still read c2");
        assert_eq!(claims.release(&b), None, "c still reads c2");
        assert_eq!(claims.release(&c), Some(two.clone()));
        assert!(!claims.is_claimed(&two));
        fs::remove_dir_all(&base).unwrap();
    }
}
