//! The repository carries what its tests read: a clone with nothing beside it passes `.ci/run`.
//! Every path a test, bench or fuzz target builds from `CARGO_MANIFEST_DIR` must resolve inside
//! the repository, and no source names a folder the team keeps next to it.

mod support;

use std::path::{Component, Path, PathBuf};

/// The folders the team keeps next to the repository (spelt in two halves so that this file
/// does not name them).
const SHARED_FOLDERS: [&str; 2] = [concat!("shared", "/conformance"), concat!("shared", "/docs")];

/// The Rust files of both crates' tests, benches, fuzz targets and sources.
fn rust_files(root: &Path) -> Vec<PathBuf> {
    let dirs = ["applyset/src", "applyset/tests", "applyset/fuzz", "merge/src", "merge/tests", "merge/benches"];
    support::files_under(&dirs.map(|dir| root.join(dir)), "rs")
}

/// `base` joined with `relative`, `..` taken lexically (the folders need not exist).
fn resolve(base: &Path, relative: &str) -> PathBuf {
    let mut path = base.to_path_buf();
    for component in Path::new(relative.trim_start_matches('/')).components() {
        match component {
            Component::ParentDir => {
                path.pop();
            }
            Component::Normal(part) => path.push(part),
            _ => {}
        }
    }
    path
}

/// The crate directory a file belongs to: the nearest folder above it with a `Cargo.toml`
/// (`applyset/`, `merge/`, or the fuzz crate).
fn manifest_dir(file: &Path) -> PathBuf {
    let mut crate_dir = file.parent().expect("a file has a folder").to_path_buf();
    while !crate_dir.join("Cargo.toml").is_file() {
        assert!(crate_dir.pop(), "{} is in no crate", file.display());
    }
    crate_dir
}

#[test]
fn no_test_reads_a_path_outside_the_repository() {
    let root = support::repo_root();
    let literal = regex::Regex::new(r#""([^"\\]*)""#).expect("a valid pattern");
    let mut outside = Vec::new();
    let files = rust_files(&root);
    assert!(files.len() > 100, "the scan found the sources ({} files)", files.len());
    for file in &files {
        let text = std::fs::read_to_string(file).expect("readable");
        let crate_dir = manifest_dir(file);
        for (number, line) in text.lines().enumerate() {
            let place = format!("{}:{}", file.strip_prefix(&root).unwrap_or(file).display(), number + 1);
            let code = !line.trim_start().starts_with("//");
            if code && SHARED_FOLDERS.iter().any(|folder| line.contains(folder)) {
                outside.push(format!("{place}: names the team's shared folder: {}", line.trim()));
            }
            if !line.contains("CARGO_MANIFEST_DIR") {
                continue;
            }
            for path in literal.captures_iter(line).map(|c| c[1].to_owned()).filter(|p| p.contains('/')) {
                let resolved = resolve(&crate_dir, &path);
                if !resolved.starts_with(&root) {
                    outside.push(format!(
                        "{place}: {path} resolves to {} outside {}",
                        resolved.display(),
                        root.display()
                    ));
                }
            }
        }
    }
    assert!(outside.is_empty(), "tests read paths outside the repository:\n{}", outside.join("\n"));
}

#[test]
fn the_resolution_sees_an_escape() {
    let root = Path::new("/r/repo");
    assert_eq!(resolve(&root.join("merge"), "../../shared/x"), Path::new("/r/shared/x"));
    assert!(resolve(&root.join("merge"), "tests/conformance").starts_with(root));
    assert!(resolve(&root.join("applyset"), "/../crds/a.yaml").starts_with(root));
}
