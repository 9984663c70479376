//! What an ApplySet reads from a commit, as one digest, computed from the object database
//! without a checkout: the tree of its `path`, and every file and directory its kustomizations
//! reach outside it (bases, components, patches, generator files), found by reading the
//! kustomization files themselves. Two commits with the same digest give the ApplySet the same
//! files, so a commit that touches another app of a monorepo changes nothing for it.
//!
//! `None` when it cannot tell: a symbolic link in what is read (its target may lie anywhere),
//! a remote base (fetched by kustomize at build time), a kustomization it cannot parse, or a
//! reference leaving the repository. Then every new commit counts as a change.

use std::collections::{BTreeSet, HashSet};
use std::path::Path;

use git2::{ObjectType, Oid, Repository, Tree, TreeWalkMode, TreeWalkResult};

use crate::manifest::kustomize::{KUSTOMIZATION_FILES, kustomization_document, lexical, references};

/// Git's mode of a symbolic link.
const SYMLINK_MODE: i32 = 0o120000;

/// The digest of what `path` of `commit` gives an ApplySet (see the module docs).
pub(super) fn digest(repo: &Repository, commit: Oid, path: &Path) -> Option<String> {
    let root = repo.find_commit(commit).and_then(|c| c.tree()).ok()?;
    let mut read: BTreeSet<(String, Oid)> = BTreeSet::new();
    let mut pending = vec![path.to_path_buf()];
    let mut seen = HashSet::new();
    while let Some(dir) = pending.pop() {
        if !seen.insert(dir.clone()) {
            continue;
        }
        let tree = subtree(repo, &root, &dir)?;
        if has_symlink(&tree) {
            return None;
        }
        read.insert((dir.display().to_string(), tree.id()));
        let Some(text) = kustomization(repo, &tree) else { continue };
        let document = kustomization_document(&text).ok()?;
        for (_, reference, may_be_kustomization) in references(&document) {
            if reference.contains("://") || reference.starts_with("github.com/") || reference.starts_with("git@") {
                return None;
            }
            // Inside the repository: relative, and no `..` above its root.
            let target = lexical(&dir.join(&reference)).filter(|target| !target.has_root())?;
            match root.get_path(&target) {
                Ok(entry) if entry.filemode() == SYMLINK_MODE => return None,
                Ok(entry) if entry.kind() == Some(ObjectType::Tree) => {
                    if may_be_kustomization {
                        pending.push(target);
                    } else {
                        read.insert((target.display().to_string(), entry.id()));
                    }
                }
                Ok(entry) => {
                    read.insert((target.display().to_string(), entry.id()));
                }
                // Missing: kustomize fails on it; a commit adding it is a change.
                Err(_) => {
                    read.insert((target.display().to_string(), Oid::ZERO_SHA1));
                }
            }
        }
    }
    let mut framed = crate::digest::Framed::default();
    for (path, id) in &read {
        framed.value(path.as_bytes()).value(id.as_bytes());
    }
    Some(crate::digest::hex(&framed.finish()))
}

/// The tree at `dir` (the root for an empty path); `None` when it is not a directory.
fn subtree<'r>(repo: &'r Repository, root: &Tree<'r>, dir: &Path) -> Option<Tree<'r>> {
    if dir.as_os_str().is_empty() {
        return Some(root.clone());
    }
    let entry = root.get_path(dir).ok()?;
    repo.find_tree(entry.id()).ok()
}

fn has_symlink(tree: &Tree<'_>) -> bool {
    let mut found = false;
    let _ = tree.walk(TreeWalkMode::PreOrder, |_, entry| {
        if entry.filemode() == SYMLINK_MODE {
            found = true;
            return TreeWalkResult::Abort;
        }
        TreeWalkResult::Ok
    });
    found
}

/// The text of the directory's kustomization file, if it has one.
fn kustomization(repo: &Repository, tree: &Tree<'_>) -> Option<String> {
    let entry = KUSTOMIZATION_FILES.iter().find_map(|name| tree.get_name(name))?;
    let blob = repo.find_blob(entry.id()).ok()?;
    Some(String::from_utf8_lossy(blob.content()).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A repository whose commits are written straight into the object database.
    struct Repo {
        dir: std::path::PathBuf,
        repo: Repository,
    }

    impl Drop for Repo {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }

    impl Repo {
        fn new() -> Repo {
            use std::sync::atomic::{AtomicUsize, Ordering};
            static NEXT: AtomicUsize = AtomicUsize::new(0);
            let name = format!("applyset-inputs-{}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed));
            let dir = std::env::temp_dir().join(name);
            let repo = Repository::init_bare(&dir).unwrap();
            Repo { dir, repo }
        }

        /// A commit of exactly these files (`path`, content; a content starting with `->` is
        /// a symbolic link to the rest).
        fn commit(&self, files: &[(&str, &str)]) -> Oid {
            let mut index = git2::Index::new().unwrap();
            for (path, content) in files {
                let (mode, bytes) = match content.strip_prefix("->") {
                    Some(target) => (SYMLINK_MODE as u32, target.as_bytes()),
                    None => (0o100644, content.as_bytes()),
                };
                let id = self.repo.blob(bytes).unwrap();
                let entry = git2::IndexEntry {
                    ctime: git2::IndexTime::new(0, 0),
                    mtime: git2::IndexTime::new(0, 0),
                    dev: 0,
                    ino: 0,
                    mode,
                    uid: 0,
                    gid: 0,
                    file_size: bytes.len() as u32,
                    id,
                    flags: 0,
                    flags_extended: 0,
                    path: path.as_bytes().to_vec(),
                };
                index.add(&entry).unwrap();
            }
            let tree = self.repo.find_tree(index.write_tree_to(&self.repo).unwrap()).unwrap();
            let signature = git2::Signature::now("t", "t@example.com").unwrap();
            self.repo.commit(None, &signature, &signature, "c", &tree, &[]).unwrap()
        }

        fn digest(&self, commit: Oid, path: &str) -> Option<String> {
            digest(&self.repo, commit, Path::new(path))
        }
    }

    const BASE: (&str, &str) = ("base/kustomization.yaml", "resources: [cm.yaml]\n");
    const APP_A: (&str, &str) = ("apps/a/kustomization.yaml", "resources: [../../base, svc.yaml]\n");

    #[test]
    fn a_commit_to_another_app_changes_nothing_and_one_to_a_reached_base_does() {
        let repo = Repo::new();
        let files = |cm: &'static str, b: &'static str| {
            vec![BASE, ("base/cm.yaml", cm), APP_A, ("apps/a/svc.yaml", "svc"), ("apps/b/cm.yaml", b)]
        };
        let first = repo.commit(&files("cm 1", "b 1"));
        let other_app = repo.commit(&files("cm 1", "b 2"));
        let base_changed = repo.commit(&files("cm 2", "b 2"));
        let a = |commit| repo.digest(commit, "apps/a").expect("a digest");
        let b = |commit| repo.digest(commit, "apps/b").expect("a digest");
        assert_eq!(a(first), a(other_app), "b's change is not a's input");
        assert_ne!(a(other_app), a(base_changed), "the base a reaches changed");
        assert_ne!(b(first), b(other_app));
        assert_eq!(b(other_app), b(base_changed), "b reaches no base");
    }

    #[test]
    fn patches_and_generator_files_outside_the_path_are_inputs() {
        let repo = Repo::new();
        let kustomization = "patches:\n- path: ../shared/patch.yaml\nconfigMapGenerator:\n- name: g\n  files: [key=../shared/data.txt]\n";
        let files = |patch: &'static str, data: &'static str| {
            vec![("app/kustomization.yaml", kustomization), ("shared/patch.yaml", patch), ("shared/data.txt", data)]
        };
        let first = repo.commit(&files("p1", "d1"));
        let patch = repo.commit(&files("p2", "d1"));
        let data = repo.commit(&files("p2", "d2"));
        let app = |commit| repo.digest(commit, "app").expect("a digest");
        assert_ne!(app(first), app(patch));
        assert_ne!(app(patch), app(data));
    }

    #[test]
    fn what_it_cannot_follow_is_never_unchanged() {
        let repo = Repo::new();
        let remote = repo.commit(&[("app/kustomization.yaml", "resources: [https://example.com/base.yaml]\n")]);
        assert_eq!(repo.digest(remote, "app"), None, "a remote base");
        let link = repo.commit(&[("app/cm.yaml", "->../shared/cm.yaml"), ("shared/cm.yaml", "x")]);
        assert_eq!(repo.digest(link, "app"), None, "a symbolic link");
        let outside = repo.commit(&[("kustomization.yaml", "resources: [../../etc]\n")]);
        assert_eq!(repo.digest(outside, ""), None, "outside the repository");
        let broken = repo.commit(&[("app/kustomization.yaml", "resources: [\n")]);
        assert_eq!(repo.digest(broken, "app"), None, "unparsable");
        assert_eq!(repo.digest(broken, "missing"), None, "no such directory");
    }
}
