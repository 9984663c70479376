//! Materialising a commit's tree and checking `source.path`.
//!
//! The tree is read straight from the object database and written into a
//! fresh directory (no index, no working-tree state to clean): regular files
//! (mode 0644, or 0755 when executable in git), directories and symlinks;
//! submodules (gitlinks) are skipped. Entry names that are empty, `.`, `..`,
//! `.git` or contain `/` are refused, and every file is created with
//! `O_EXCL` inside a directory we just created, so a hostile tree cannot
//! write outside the checkout even before the path checks run.

use std::fs;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{OpenOptionsExt, symlink};
use std::path::{Component, Path, PathBuf};

use git2::{ObjectType, Repository, Tree};

use crate::causes::{Chain, with_causes};

/// Why materialising failed.
#[derive(Debug)]
pub(crate) enum CheckoutError {
    TooLarge(String),
    Invalid(String),
    Io(String),
    Cancelled,
}

pub(crate) struct Budget<'a> {
    pub(crate) max_bytes: u64,
    pub(crate) max_files: u64,
    pub(crate) max_file_bytes: u64,
    /// The checkout's root, so that errors name files as the repository does.
    pub(crate) root: &'a Path,
    pub(crate) used_bytes: u64,
    pub(crate) used_files: u64,
    pub(crate) cancelled: &'a dyn Fn() -> bool,
}

/// Write the tree of `tree` into `dest` (which must not exist).
pub(crate) fn write_tree(
    repo: &Repository,
    tree: &Tree<'_>,
    dest: &Path,
    budget: &mut Budget<'_>,
) -> Result<(), CheckoutError> {
    fs::create_dir(dest).map_err(|e| CheckoutError::Io(format!("create {}: {e}", dest.display(), e = Chain(&e))))?;
    for entry in tree.iter() {
        if (budget.cancelled)() {
            return Err(CheckoutError::Cancelled);
        }
        let name = std::str::from_utf8(entry.name_bytes())
            .map_err(|_| CheckoutError::Invalid("tree entry name is not UTF-8".to_string()))?;
        if name.is_empty()
            || name == "."
            || name == ".."
            || name.contains('/')
            || name.contains('\0')
            || name.eq_ignore_ascii_case(".git")
        {
            return Err(CheckoutError::Invalid(format!("tree has an unsafe entry name {name:?}")));
        }
        let path = dest.join(name);
        budget.used_files += 1;
        if budget.used_files > budget.max_files {
            return Err(CheckoutError::TooLarge(format!("checkout has more than {} files", budget.max_files)));
        }
        let io = |e: std::io::Error| CheckoutError::Io(format!("write {}: {e}", path.display(), e = Chain(&e)));
        let git = |e: git2::Error| CheckoutError::Io(format!("read object {} ({name}): {}", entry.id(), e.message()));
        match (entry.kind(), entry.filemode()) {
            (Some(ObjectType::Tree), _) => {
                let sub = repo.find_tree(entry.id()).map_err(git)?;
                write_tree(repo, &sub, &path, budget)?;
            }
            (Some(ObjectType::Blob), mode) => {
                let (size, _) = repo.odb().and_then(|odb| odb.read_header(entry.id())).map_err(git)?;
                if size as u64 > budget.max_file_bytes {
                    return Err(CheckoutError::TooLarge(format!(
                        "{} is {size} bytes, more than the {} bytes a file of a checkout may have",
                        path.strip_prefix(budget.root).unwrap_or(&path).display(),
                        budget.max_file_bytes
                    )));
                }
                let blob = repo.find_blob(entry.id()).map_err(git)?;
                let content = blob.content();
                budget.used_bytes += content.len() as u64;
                if budget.used_bytes > budget.max_bytes {
                    return Err(CheckoutError::TooLarge(format!("checkout is larger than {} bytes", budget.max_bytes)));
                }
                if mode == 0o120000 {
                    let target = std::ffi::OsStr::from_bytes(content);
                    symlink(target, &path).map_err(io)?;
                } else {
                    let perm = if mode == 0o100755 { 0o755 } else { 0o644 };
                    let mut f =
                        fs::OpenOptions::new().write(true).create_new(true).mode(perm).open(&path).map_err(io)?;
                    f.write_all(content).map_err(io)?;
                }
            }
            // Gitlinks (submodules) and anything else: skipped.
            _ => {}
        }
    }
    Ok(())
}

/// The manifest files (kubectl's extensions, at every depth) of `tree`, read into memory within
/// the budget, as (path from `prefix`, content). Symbolic links are not followed.
pub(crate) fn read_manifest_files(
    repo: &Repository,
    tree: &Tree<'_>,
    prefix: &Path,
    budget: &mut Budget<'_>,
    out: &mut Vec<(PathBuf, Vec<u8>)>,
) -> Result<(), CheckoutError> {
    for entry in tree.iter() {
        if (budget.cancelled)() {
            return Err(CheckoutError::Cancelled);
        }
        let Ok(name) = std::str::from_utf8(entry.name_bytes()) else { continue };
        let path = prefix.join(name);
        budget.used_files += 1;
        if budget.used_files > budget.max_files {
            return Err(CheckoutError::TooLarge(format!("revision has more than {} files", budget.max_files)));
        }
        let git = |e: git2::Error| CheckoutError::Io(format!("read object {} ({name}): {}", entry.id(), e.message()));
        match (entry.kind(), entry.filemode()) {
            (Some(ObjectType::Tree), _) => {
                let sub = repo.find_tree(entry.id()).map_err(git)?;
                read_manifest_files(repo, &sub, &path, budget, out)?;
            }
            (Some(ObjectType::Blob), mode) if mode != 0o120000 => {
                let extension = name.rfind('.').map_or("", |i| &name[i..]);
                if !crate::manifest::FILE_EXTENSIONS.contains(&extension) {
                    continue;
                }
                let (size, _) = repo.odb().and_then(|odb| odb.read_header(entry.id())).map_err(git)?;
                budget.used_bytes += size as u64;
                if size as u64 > budget.max_file_bytes || budget.used_bytes > budget.max_bytes {
                    return Err(CheckoutError::TooLarge(format!(
                        "{} is over the checkout size limits",
                        path.display()
                    )));
                }
                out.push((path, repo.find_blob(entry.id()).map_err(git)?.content().to_vec()));
            }
            _ => {}
        }
    }
    Ok(())
}

/// Why `source.path` is refused before the disk is touched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum UnsafePath {
    #[error("it contains `..`")]
    Parent,
    #[error("it is absolute")]
    Absolute,
}

/// `source.path` as given, normalised to relative components. `..` and
/// absolute paths are rejected here, before touching the disk.
pub(crate) fn normalise_path(path: Option<&str>) -> Result<PathBuf, UnsafePath> {
    let Some(path) = path else {
        return Ok(PathBuf::new());
    };
    let p = Path::new(path);
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::Normal(n) => out.push(n),
            Component::ParentDir => return Err(UnsafePath::Parent),
            Component::RootDir | Component::Prefix(_) => return Err(UnsafePath::Absolute),
        }
    }
    Ok(out)
}

/// Why a path check failed.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum PathError {
    Escapes(String),
    NotFound(String),
    Io(String),
}

/// Resolve `rel` inside `root` and make sure that neither it nor any symlink
/// under it leads outside `root`. Returns the canonical directory.
pub(crate) fn resolve_dir(root: &Path, rel: &Path) -> Result<PathBuf, PathError> {
    let root = root.canonicalize().map_err(|e| PathError::Io(format!("canonicalize checkout: {e}", e = Chain(&e))))?;
    let joined = root.join(rel);
    // Check each prefix, so a symlinked component is reported as escaping
    // even when the final target does not exist.
    let mut prefix = root.clone();
    for c in rel.components() {
        prefix.push(c);
        match fs::symlink_metadata(&prefix) {
            Ok(_) => {
                let real = canonical_or_nearest(&prefix);
                if !real.starts_with(&root) {
                    return Err(PathError::Escapes(format!(
                        "{} resolves outside the repository",
                        prefix.strip_prefix(&root).unwrap_or(&prefix).display()
                    )));
                }
            }
            Err(_) => {
                return Err(PathError::NotFound("no such directory in the commit".to_string()));
            }
        }
    }
    let dir = joined.canonicalize().map_err(|_| PathError::NotFound("no such directory in the commit".to_string()))?;
    if !dir.starts_with(&root) {
        return Err(PathError::Escapes("it resolves outside the repository".to_string()));
    }
    if !dir.is_dir() {
        return Err(PathError::NotFound("it is not a directory".to_string()));
    }
    check_symlinks_under(&root, &dir)?;
    Ok(dir)
}

/// Every symlink under `dir` (recursively, not following links) must resolve
/// inside `root`. A dangling link is judged by the nearest existing ancestor
/// of where it points.
fn check_symlinks_under(root: &Path, dir: &Path) -> Result<(), PathError> {
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let entries =
            fs::read_dir(&d).map_err(|e| PathError::Io(format!("read {}: {e}", d.display(), e = Chain(&e))))?;
        for entry in entries {
            let entry = entry.map_err(|e| PathError::Io(with_causes(&e)))?;
            let ft = entry.file_type().map_err(|e| PathError::Io(with_causes(&e)))?;
            let p = entry.path();
            if ft.is_symlink() {
                let real = canonical_or_nearest(&p);
                if !real.starts_with(root) {
                    return Err(PathError::Escapes(format!(
                        "symlink {} points outside the repository",
                        p.strip_prefix(root).unwrap_or(&p).display()
                    )));
                }
            } else if ft.is_dir() {
                stack.push(p);
            }
        }
    }
    Ok(())
}

/// `canonicalize(p)`, or for a dangling symlink chain: the canonical form of
/// the nearest existing ancestor of the lexical target, with the rest
/// appended lexically.
fn canonical_or_nearest(p: &Path) -> PathBuf {
    if let Ok(c) = p.canonicalize() {
        return c;
    }
    // Follow the link by hand (bounded), lexically.
    let mut current = p.to_path_buf();
    for _ in 0..40 {
        match fs::read_link(&current) {
            Ok(target) => {
                let base = current.parent().map(Path::to_path_buf).unwrap_or_default();
                current = lexical_join(&base, &target);
            }
            Err(_) => break,
        }
    }
    // Nearest existing ancestor.
    let mut tail = Vec::new();
    let mut probe = current.clone();
    loop {
        if let Ok(c) = probe.canonicalize() {
            let mut out = c;
            for t in tail.iter().rev() {
                out.push(t);
            }
            return out;
        }
        match (probe.file_name().map(|n| n.to_os_string()), probe.parent()) {
            (Some(name), Some(parent)) => {
                tail.push(name);
                probe = parent.to_path_buf();
            }
            _ => return current,
        }
    }
}

fn lexical_join(base: &Path, target: &Path) -> PathBuf {
    let mut out = if target.is_absolute() { PathBuf::from("/") } else { base.to_path_buf() };
    for c in target.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(n) => out.push(n),
            Component::RootDir => out = PathBuf::from("/"),
            Component::CurDir | Component::Prefix(_) => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalises() {
        assert_eq!(normalise_path(None).unwrap(), PathBuf::new());
        assert_eq!(normalise_path(Some("./a/./b/")).unwrap(), PathBuf::from("a/b"));
        assert_eq!(normalise_path(Some(".")).unwrap(), PathBuf::new());
        assert!(normalise_path(Some("a/../../b")).is_err());
        assert!(normalise_path(Some("/etc")).is_err());
    }

    #[test]
    fn symlink_checks() {
        let base = std::env::temp_dir().join(format!("applyset-checkout-test-{}", std::process::id()));
        let _ = fs::remove_dir_all(&base);
        let root = base.join("root");
        fs::create_dir_all(root.join("app/sub")).unwrap();
        fs::create_dir_all(root.join("common")).unwrap();
        fs::create_dir_all(base.join("outside")).unwrap();
        symlink("../common", root.join("app/common")).unwrap();
        symlink("../../nowhere/deeper", root.join("app/sub/dangling-inside")).unwrap();
        assert!(resolve_dir(&root, Path::new("app")).is_ok());
        assert_eq!(
            resolve_dir(&root, Path::new("missing")).unwrap_err(),
            PathError::NotFound("no such directory in the commit".into())
        );

        symlink("../../../outside", root.join("app/sub/out")).unwrap();
        assert!(
            matches!(resolve_dir(&root, Path::new("app")), Err(PathError::Escapes(m)) if m.contains("app/sub/out"))
        );
        fs::remove_file(root.join("app/sub/out")).unwrap();

        symlink("../../../outside/nope", root.join("app/sub/dangling-out")).unwrap();
        assert!(matches!(resolve_dir(&root, Path::new("app")), Err(PathError::Escapes(_))));
        fs::remove_file(root.join("app/sub/dangling-out")).unwrap();

        symlink("/etc", root.join("etc")).unwrap();
        assert!(matches!(resolve_dir(&root, Path::new("etc")), Err(PathError::Escapes(_))));
        assert!(matches!(resolve_dir(&root, Path::new("etc/ssl")), Err(PathError::Escapes(_))));
        assert!(matches!(resolve_dir(&root, Path::new("etc/definitely-missing")), Err(PathError::Escapes(_))));
        fs::remove_dir_all(&base).unwrap();
    }
}
