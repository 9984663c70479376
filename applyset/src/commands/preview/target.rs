//! What a preview works on: the ApplySet (from the cluster, or from a manifest file for a
//! preview without a cluster) and the local checkout its `--path` names.

use std::path::{Path, PathBuf};

use kube::Api;

use super::PreviewError;
use crate::causes::Chain;
use crate::cluster::Cluster;
use crate::manifest::LoadedObject;
use crate::operator::api::{ApplySet, GROUP, InventoryMember, KIND};
use crate::operator::members::MemberRecords;

/// The ApplySet `name` of `namespace`, as the cluster has it.
pub(super) async fn applyset_from_cluster(
    cluster: &Cluster,
    namespace: &str,
    name: &str,
) -> Result<ApplySet, PreviewError> {
    let api: Api<ApplySet> = Api::namespaced(cluster.client().clone(), namespace);
    let key = format!("{namespace}/{name}");
    match api.get_opt(name).await {
        Ok(Some(applyset)) => Ok(applyset),
        Ok(None) => Err(PreviewError::NoApplySet { key }),
        Err(error) => Err(PreviewError::ReadApplySet { key, error: Box::new(error) }),
    }
}

/// The ApplySet of a manifest file (`name` chooses one when the file holds several), with its
/// namespace: its own, else `namespace` (`-n`), else `default`; `-n` must not name another.
pub(super) fn applyset_from_file(
    file: &Path,
    name: Option<&str>,
    namespace: Option<&str>,
) -> Result<ApplySet, PreviewError> {
    let bad = |message: String| PreviewError::ApplySetFile { file: file.to_path_buf(), message };
    let loaded = crate::manifest::load(&[file.to_path_buf()], false, std::io::empty())
        .map_err(|error| bad(format!("cannot be read:\n{error}", error = Chain(&error))))?;
    let mut found: Vec<(LoadedObject, ApplySet)> = Vec::new();
    for object in loaded.into_iter().filter(|o| is_applyset(&o.object)) {
        let applyset: ApplySet = serde_json::from_str(&object.object.to_json_string())
            .map_err(|error| bad(format!("{}: not a valid ApplySet: {error}", object.source, error = Chain(&error))))?;
        if name.is_none_or(|name| applyset.metadata.name.as_deref() == Some(name)) {
            found.push((object, applyset));
        }
    }
    let mut applyset = match (found.len(), name) {
        (1, _) => found.remove(0).1,
        (0, Some(name)) => return Err(bad(format!("holds no {GROUP}/v1alpha1 {KIND} named {name:?}"))),
        (0, None) => return Err(bad(format!("holds no {GROUP}/v1alpha1 {KIND}"))),
        (_, Some(name)) => return Err(bad(format!("holds {} {KIND}s named {name:?}", found.len()))),
        (count, None) => {
            let names: Vec<String> = found.iter().map(|(_, a)| a.metadata.name.clone().unwrap_or_default()).collect();
            return Err(bad(format!("holds {count} {KIND}s ({}): name the one to build", names.join(", "))));
        }
    };
    match (applyset.metadata.namespace.as_deref(), namespace) {
        (Some(own), Some(explicit)) if own != explicit => {
            return Err(PreviewError::NamespaceMismatch { own: own.to_owned(), explicit: explicit.to_owned() });
        }
        (Some(_), _) => {}
        (None, explicit) => applyset.metadata.namespace = Some(explicit.unwrap_or("default").to_owned()),
    }
    Ok(applyset)
}

fn is_applyset(object: &applyset_merge::Value) -> bool {
    let text = |field: &str| object.as_object().and_then(|o| o.get(field)).and_then(applyset_merge::Value::as_str);
    text("kind") == Some(KIND) && text("apiVersion").is_some_and(|v| v.starts_with(&format!("{GROUP}/")))
}

/// The local checkout a preview renders.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Checkout {
    /// The repository's root (canonical): the controller's checkout.
    pub(super) root: PathBuf,
    /// The ApplySet's directory in it (canonical): `--path`.
    pub(super) dir: PathBuf,
    /// What the controller would call the revision: `<branch>@sha1:<commit>` of the work
    /// tree's HEAD (or `sha1:<commit>` when detached), or `local checkout` outside git.
    pub(super) revision: String,
    /// Said on stderr: `--path` is not where `spec.path` points in its repository, or the work
    /// tree has changes that are not committed.
    pub(super) notes: Vec<String>,
}

impl Checkout {
    /// The checkout as a run's fetch gives its revision.
    pub(super) fn artifact(&self) -> crate::source::Artifact {
        crate::source::Artifact {
            revision: self.revision.clone(),
            commit: String::new(),
            dir: self.dir.clone(),
            checkout: self.root.clone(),
            fetched: false,
            network: None,
            change: None,
            source_id: String::new(),
            repository_id: String::new(),
            moved: false,
            inputs: None,
            inputs_unchanged: false,
        }
    }
}

/// The checkout of `path` (`--path`) for an ApplySet whose `spec.path` is `spec_path`, checked
/// as the controller checks `spec.path` in its own checkout (no symbolic link out of it).
pub(super) fn locate(path: &Path, spec_path: Option<&str>) -> Result<Checkout, PreviewError> {
    let dir = path.canonicalize().map_err(|source| PreviewError::Path { path: path.to_path_buf(), source })?;
    if !dir.is_dir() {
        return Err(PreviewError::NotADirectory { path: path.to_path_buf() });
    }
    let spec_dir = crate::source::normalise_path(spec_path)
        .map_err(|cause| PreviewError::SpecPath { path: spec_path.unwrap_or_default().to_owned(), cause })?;
    let repository = git2::Repository::discover(&dir).ok().filter(|r| r.workdir().is_some());
    let root = match repository.as_ref().and_then(|r| r.workdir()).and_then(|w| w.canonicalize().ok()) {
        Some(root) => root,
        None => root_by_spec_path(&dir, &spec_dir),
    };
    let within = dir.strip_prefix(&root).unwrap_or(Path::new("")).to_path_buf();
    crate::source::resolve_dir(&root, &within).map_err(|error| PreviewError::Escapes {
        path: path.to_path_buf(),
        why: match error {
            crate::source::PathError::Escapes(why)
            | crate::source::PathError::NotFound(why)
            | crate::source::PathError::Io(why) => why,
        },
    })?;
    let mut notes = Vec::new();
    if within != spec_dir {
        notes.push(format!(
            "note: --path is {} in its repository, where spec.path is {}: the build is of --path",
            shown(&within),
            shown(&spec_dir)
        ));
    }
    let revision = match &repository {
        Some(repository) => {
            let (revision, dirty) = head_revision(repository);
            if dirty {
                notes.push(format!(
                    "note: the work tree has changes not committed: built as they are, beyond {revision}"
                ));
            }
            revision
        }
        None => "local checkout".to_owned(),
    };
    Ok(Checkout { root, dir, revision, notes })
}

fn shown(path: &Path) -> String {
    if path.as_os_str().is_empty() { "the repository root".to_owned() } else { path.display().to_string() }
}

/// Outside git: the directory `spec.path` names is `dir` when `dir` ends with it, and the
/// repository's root is what comes before; else `dir` is the root.
fn root_by_spec_path(dir: &Path, spec_dir: &Path) -> PathBuf {
    let depth = spec_dir.components().count();
    if depth > 0 && dir.ends_with(spec_dir) {
        let mut root = dir.to_path_buf();
        for _ in 0..depth {
            root.pop();
        }
        return root;
    }
    dir.to_path_buf()
}

/// The revision of the work tree's HEAD as the controller writes revisions, and whether the
/// work tree differs from it.
fn head_revision(repository: &git2::Repository) -> (String, bool) {
    let Ok(head) = repository.head() else { return ("an unborn branch".to_owned(), true) };
    let commit = head.peel_to_commit().map(|c| c.id().to_string()).unwrap_or_default();
    let revision = match head.shorthand().ok().filter(|_| head.is_branch()) {
        Some(branch) => format!("{branch}@sha1:{commit}"),
        None => format!("sha1:{commit}"),
    };
    let mut options = git2::StatusOptions::new();
    options.include_untracked(true).include_ignored(false);
    let dirty = repository.statuses(Some(&mut options)).map(|s| !s.is_empty()).unwrap_or(false);
    (revision, dirty)
}

/// The ApplySet's record of its members as a run reads it (from its status, or from the
/// `ApplySetRecord` parts it names); `None` without one, or when it is lost (said on stderr:
/// the run then prunes nothing it would have named).
pub(super) async fn recorded_members(
    cluster: &Cluster,
    applyset: &ApplySet,
) -> Result<Option<Vec<InventoryMember>>, PreviewError> {
    let mut status = applyset.status.clone().unwrap_or_default();
    match MemberRecords::default().read_into(cluster.client(), applyset, &mut status).await {
        Ok(()) => Ok(status.inventory.and_then(|i| i.members)),
        Err(error) if error.is_lost() => {
            eprintln!("warning: {}: a run goes on without it, and prunes nothing it recorded", error.describe());
            Ok(None)
        }
        Err(source) => Err(PreviewError::Record { key: applyset.key(), source: Box::new(source) }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outside_git_the_root_is_what_precedes_spec_path() {
        let dir = Path::new("/work/repo/apps/web");
        assert_eq!(root_by_spec_path(dir, Path::new("apps/web")), PathBuf::from("/work/repo"));
        assert_eq!(root_by_spec_path(dir, Path::new("web")), PathBuf::from("/work/repo/apps"));
        assert_eq!(root_by_spec_path(dir, Path::new("other")), dir, "not its spec.path: the directory itself");
        assert_eq!(root_by_spec_path(dir, Path::new("")), dir, "spec.path is the root");
    }

    /// A file of its own in a scratch directory (removed with it when the test passes).
    struct Scratch(PathBuf);

    impl Scratch {
        fn path(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }

    fn file_with(text: &str) -> Scratch {
        let name = format!("applyset-preview-test-{}-{}.yaml", std::process::id(), fastrand::u64(..));
        let path = std::env::temp_dir().join(name);
        std::fs::write(&path, text).unwrap();
        Scratch(path)
    }

    const TWO: &str = "apiVersion: applyset.dev/v1alpha1\nkind: ApplySet\nmetadata: {name: web, namespace: shop}\nspec: {source: {url: 'https://example.com/r.git', path: apps/web}}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\n---\napiVersion: applyset.dev/v1alpha1\nkind: ApplySet\nmetadata: {name: db}\nspec: {source: {url: 'https://example.com/r.git'}}\n";

    #[test]
    fn an_applyset_file_names_one_applyset_and_its_namespace() {
        let file = file_with(TWO);
        let web = applyset_from_file(file.path(), Some("web"), None).unwrap();
        assert_eq!((web.key().as_str(), web.spec.source.path.as_deref()), ("shop/web", Some("apps/web")));
        let db = applyset_from_file(file.path(), Some("db"), Some("data")).unwrap();
        assert_eq!(db.key(), "data/db", "-n places an ApplySet without a namespace");
        assert_eq!(applyset_from_file(file.path(), Some("db"), None).unwrap().key(), "default/db");

        let several = applyset_from_file(file.path(), None, None).unwrap_err().to_string();
        assert!(several.ends_with("holds 2 ApplySets (web, db): name the one to build"), "{several}");
        let missing = applyset_from_file(file.path(), Some("x"), None).unwrap_err().to_string();
        assert!(missing.ends_with("holds no applyset.dev/v1alpha1 ApplySet named \"x\""), "{missing}");
        let mismatch = applyset_from_file(file.path(), Some("web"), Some("other")).unwrap_err().to_string();
        assert!(mismatch.contains("the namespace from the provided object \"shop\" does not match"), "{mismatch}");

        let invalid = file_with("apiVersion: applyset.dev/v1alpha1\nkind: ApplySet\nmetadata: {name: x}\nspec: {}\n");
        let message = applyset_from_file(invalid.path(), None, None).unwrap_err().to_string();
        assert!(message.contains("document 1 (line 1): not a valid ApplySet: missing field `source`"), "{message}");
    }
}
