//! Kustomizations, built by the pinned kustomize program (v5.6.0, kubectl 1.33's; no
//! maintained Rust kustomize exists), run as a subprocess the way Argo CD's repo-server runs it.
//!
//! Safe by default, as Flux is. Before kustomize runs, every kustomization reachable from the
//! one asked for is read and each path it names (resources, bases, components, patches,
//! generator files, CRDs, configurations, OpenAPI, replacements, generators, transformers,
//! validators) must be a file or directory inside `root` (the repository checkout): no remote
//! base or git URL, nothing outside the checkout, no Helm chart inflation. kustomize itself then
//! runs with its root-only load restrictor, without plugins (exec and KRM functions need flags
//! it is not given), with an empty environment, under a timeout and an output cap.

use std::path::{Component, Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::io::AsyncReadExt;

use super::{LoadOptions, LoadedObject, load_bytes_with};

use crate::causes::with_causes;

/// The file names kustomize looks for, in its order.
pub const KUSTOMIZATION_FILES: [&str; 3] = ["kustomization.yaml", "kustomization.yml", "Kustomization"];

/// The kustomize this tool builds with: kubectl 1.33's (`scripts/build-kustomize`, the image's
/// `/kustomize`). Another version builds differently (generator hashes, field order), so it is
/// refused rather than used.
pub const PINNED_VERSION: &str = "v5.6.0";

/// How kustomize is run.
#[derive(Debug, Clone)]
pub struct Kustomize {
    pub binary: PathBuf,
    pub timeout: Duration,
    /// The most bytes of output read (the build fails beyond).
    pub max_output: u64,
}

/// Why a kustomization could not be built; each names the kustomization file.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error(
        "{file}: {field} names {reference:?}, which is not a file or directory inside the repository (remote bases and paths outside the checkout are not allowed)"
    )]
    OutsideRoot { file: String, field: String, reference: String },
    #[error("{file}: {field} (Helm chart inflation) is not allowed")]
    Helm { file: String, field: String },
    #[error("{file}: cannot be read: {detail}")]
    Unreadable { file: String, detail: String },
    #[error("kustomize is not available ({binary}): {detail}")]
    NoProgram { binary: String, detail: String },
    #[error(
        "kustomize {binary} is {found}, not the pinned {PINNED_VERSION} (kubectl 1.33's): point --kustomize-binary or $APPLYSET_KUSTOMIZE_BINARY at kustomize {PINNED_VERSION} (scripts/build-kustomize builds it)"
    )]
    WrongVersion { binary: String, found: String },
    #[error(
        "kustomize {binary} does not say its version (`kustomize version` printed {output:?}): point --kustomize-binary or $APPLYSET_KUSTOMIZE_BINARY at kustomize {PINNED_VERSION} (scripts/build-kustomize builds it)"
    )]
    UnknownVersion { binary: String, output: String },
    #[error("{file}: kustomize build did not finish within {after:?}")]
    Timeout { file: String, after: Duration },
    #[error("{file}: kustomize build printed more than {limit} bytes")]
    TooLarge { file: String, limit: u64 },
    #[error("{file}: kustomize build failed: {message}")]
    Failed { file: String, message: String },
    #[error("{file}: the built manifests do not load: {message}")]
    Output { file: String, message: String },
    /// A file the kustomization reads is SOPS-encrypted and cannot be decrypted (or
    /// decryption is not configured); the error names the file.
    #[error(transparent)]
    Decryption(#[from] super::decryption::CopyError),
}

/// The kustomization file of `dir`, if it has one.
pub fn kustomization_file(dir: &Path) -> Option<PathBuf> {
    KUSTOMIZATION_FILES.iter().map(|name| dir.join(name)).find(|path| path.is_file())
}

/// `path` relative to `root` for messages (as is when outside).
fn shown(path: &Path, root: &Path) -> String {
    path.strip_prefix(root).unwrap_or(path).display().to_string()
}

/// The path `reference` names from `dir`, lexically normalised (no `.`/`..` left), when it
/// stays inside `root` and exists there (symbolic links resolved).
fn inside(root: &Path, dir: &Path, reference: &str) -> Option<PathBuf> {
    let path = lexical(&dir.join(reference))?;
    let real = path.canonicalize().ok()?;
    let real_root = root.canonicalize().ok()?;
    real.starts_with(&real_root).then_some(path)
}

/// `path` with `.` and `..` resolved without the disk; `None` when a `..` goes above its start.
pub(crate) fn lexical(path: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    Some(out)
}

/// Checks the kustomization of `dir` and every kustomization it reaches (see the module docs).
pub fn check_tree(root: &Path, dir: &Path) -> Result<(), BuildError> {
    let mut pending = vec![dir.to_path_buf()];
    let mut seen = std::collections::HashSet::new();
    while let Some(dir) = pending.pop() {
        let Some(file) = kustomization_file(&dir) else { continue };
        let real = file.canonicalize().unwrap_or_else(|_| file.clone());
        if !seen.insert(real) {
            continue;
        }
        let shown_file = shown(&file, root);
        let text = std::fs::read_to_string(&file)
            .map_err(|e| BuildError::Unreadable { file: shown_file.clone(), detail: with_causes(&e) })?;
        let doc = kustomization_document(&text)
            .map_err(|detail| BuildError::Unreadable { file: shown_file.clone(), detail })?;
        for field in ["helmCharts", "helmGlobals", "helmChartInflationGenerator"] {
            if doc.get(field).is_some() {
                return Err(BuildError::Helm { file: shown_file, field: field.into() });
            }
        }
        for (field, reference, is_base) in references(&doc) {
            match inside(root, &dir, &reference) {
                Some(path) if is_base && path.is_dir() => pending.push(path),
                Some(_) => {}
                None => return Err(BuildError::OutsideRoot { file: shown_file, field, reference }),
            }
        }
    }
    Ok(())
}

/// The files the kustomization of `dir` and those it reaches read (relative to `root`, which
/// holds them all: see [`check_tree`]), with the format SOPS would read each in: env files
/// are dotenv, generator files go by their name, the rest are manifests.
pub fn files_read(root: &Path, dir: &Path) -> Result<Vec<(PathBuf, crate::sops::Format)>, BuildError> {
    use crate::sops::Format;
    let mut files = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    let mut seen = std::collections::HashSet::new();
    while let Some(dir) = pending.pop() {
        let Some(file) = kustomization_file(&dir) else { continue };
        if !seen.insert(file.canonicalize().unwrap_or_else(|_| file.clone())) {
            continue;
        }
        let shown_file = shown(&file, root);
        let text = std::fs::read_to_string(&file)
            .map_err(|e| BuildError::Unreadable { file: shown_file.clone(), detail: with_causes(&e) })?;
        let doc = kustomization_document(&text)
            .map_err(|detail| BuildError::Unreadable { file: shown_file.clone(), detail })?;
        for (field, reference, _) in references(&doc) {
            let Some(path) = lexical(&dir.join(&reference)) else { continue };
            if path.is_dir() {
                pending.push(path);
                continue;
            }
            if !path.is_file() {
                continue;
            }
            let format = if field.ends_with(".envs") {
                Format::Dotenv
            } else if field.ends_with(".files") {
                Format::of_path(&path)
            } else {
                Format::of_manifest(&path)
            };
            let relative = path.strip_prefix(root).unwrap_or(&path).to_path_buf();
            if !files.iter().any(|(known, _)| *known == relative) {
                files.push((relative, format));
            }
        }
    }
    Ok(files)
}

/// Every path a kustomization names: (field, path, whether it may be another kustomization).
/// A kustomization file's document, read as kustomize reads it: go-yaml v2's YAML 1.1, the first
/// document (through the manifest loader's parser); the error is go-yaml's words.
pub(crate) fn kustomization_document(text: &str) -> Result<serde_json::Value, String> {
    let document = super::yaml::parse_document_limited(text, None).map_err(|error| error.go_message())?;
    serde_json::from_str(&document.to_json_string()).map_err(|error| with_causes(&error))
}

pub(crate) fn references(doc: &serde_json::Value) -> Vec<(String, String, bool)> {
    use serde_json::Value;
    let mut out = Vec::new();
    let strings = |value: Option<&Value>| -> Vec<String> {
        value.and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).map(str::to_owned).collect()
    };
    for field in ["resources", "bases", "components"] {
        out.extend(strings(doc.get(field)).into_iter().map(|r| (field.to_owned(), r, true)));
    }
    for field in ["crds", "configurations", "generators", "transformers", "validators"] {
        // Inline configurations (YAML text) are not paths.
        out.extend(
            strings(doc.get(field)).into_iter().filter(|r| !r.contains('\n')).map(|r| (field.to_owned(), r, false)),
        );
    }
    // A strategic merge patch is a path unless it is inline YAML.
    for patch in strings(doc.get("patchesStrategicMerge")) {
        if !patch.contains('\n') && !patch.contains(": ") {
            out.push(("patchesStrategicMerge".into(), patch, false));
        }
    }
    for field in ["patches", "patchesJson6902", "replacements"] {
        for item in doc.get(field).and_then(Value::as_array).into_iter().flatten() {
            if let Some(path) = item.get("path").and_then(Value::as_str) {
                out.push((field.to_owned(), path.to_owned(), false));
            }
        }
    }
    if let Some(path) = doc.get("openapi").and_then(|o| o.get("path")).and_then(Value::as_str) {
        out.push(("openapi.path".into(), path.to_owned(), false));
    }
    for field in ["configMapGenerator", "secretGenerator"] {
        for item in doc.get(field).and_then(Value::as_array).into_iter().flatten() {
            for file in strings(item.get("files")) {
                // `key=path` or `path`.
                let path = file.split_once('=').map_or(file.as_str(), |(_, path)| path).to_owned();
                out.push((format!("{field}.files"), path, false));
            }
            for env in
                strings(item.get("envs")).into_iter().chain(item.get("env").and_then(Value::as_str).map(str::to_owned))
            {
                out.push((format!("{field}.envs"), env, false));
            }
        }
    }
    out
}

/// The version `kustomize version` printed: `v5.6.0` (v5), or the one inside
/// `{Version:kustomize/v4.5.7 GitCommit:…}` (v3, v4).
fn reported_version(output: &str) -> Option<&str> {
    output
        .split(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '+')))
        .find(|word| word.strip_prefix('v').is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit())))
}

/// Runs `BINARY version` and refuses any kustomize but [`PINNED_VERSION`] (the CLI before its
/// first `-k` build, the controller at start).
pub async fn check_version(program: &Path) -> Result<(), BuildError> {
    let binary = program.display().to_string();
    let run = tokio::process::Command::new(program)
        .arg("version")
        .env_clear()
        .env("HOME", std::env::temp_dir())
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let output = match tokio::time::timeout(Duration::from_secs(30), run).await {
        Err(_) => {
            return Err(BuildError::NoProgram {
                binary,
                detail: "`kustomize version` did not finish within 30s".into(),
            });
        }
        Ok(Err(e)) => return Err(BuildError::NoProgram { binary, detail: with_causes(&e) }),
        Ok(Ok(output)) => output,
    };
    let text = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    match reported_version(&text) {
        Some(PINNED_VERSION) if output.status.success() => Ok(()),
        Some(found) if output.status.success() => Err(BuildError::WrongVersion { binary, found: found.to_owned() }),
        _ => {
            let shown = if text.is_empty() { String::from_utf8_lossy(&output.stderr).trim().to_owned() } else { text };
            Err(BuildError::UnknownVersion { binary, output: shown.chars().take(200).collect() })
        }
    }
}

impl Kustomize {
    /// `kustomize build` of `dir` (inside `root`), checked first; the output loaded as if read
    /// from the kustomization file.
    pub async fn build(&self, root: &Path, dir: &Path) -> Result<Vec<LoadedObject>, BuildError> {
        self.build_with(root, dir, &LoadOptions::default()).await
    }

    /// [`Kustomize::build`], the output loaded with `options` (post-build substitution).
    pub async fn build_with(
        &self,
        root: &Path,
        dir: &Path,
        options: &LoadOptions,
    ) -> Result<Vec<LoadedObject>, BuildError> {
        let file = kustomization_file(dir).unwrap_or_else(|| dir.join(KUSTOMIZATION_FILES[0]));
        let shown_file = shown(&file, root);
        check_tree(root, dir)?;
        // Encrypted files are decrypted into a private copy, which kustomize builds instead.
        let mut private = None;
        if let Some(decryption) = &options.decryption {
            let clear = super::decryption::decrypt_files(root, &files_read(root, dir)?, decryption)?;
            if !clear.is_empty() {
                private = Some(super::decryption::private_copy(root, &clear)?);
            }
        }
        let (root, dir) = match &private {
            Some(copy) => (copy.root(), copy.root().join(dir.strip_prefix(root).unwrap_or(dir))),
            None => (root, dir.to_path_buf()),
        };
        let dir = dir.as_path();
        let home = std::env::temp_dir();
        let mut child = tokio::process::Command::new(&self.binary)
            .args(["build", "--load-restrictor", "LoadRestrictionsRootOnly"])
            .arg(dir)
            .current_dir(root)
            .env_clear()
            .env("HOME", &home)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| BuildError::NoProgram {
                binary: self.binary.display().to_string(),
                detail: with_causes(&e),
            })?;
        let (mut stdout, mut stderr) = (child.stdout.take().expect("piped"), child.stderr.take().expect("piped"));
        let limit = self.max_output;
        let run = async {
            let mut output = Vec::new();
            let mut errors = Vec::new();
            let (mut capped_out, mut capped_err) = ((&mut stdout).take(limit + 1), (&mut stderr).take(64 * 1024));
            let (out, err) = tokio::join!(capped_out.read_to_end(&mut output), capped_err.read_to_end(&mut errors));
            out.and(err).map_err(|e| with_causes(&e))?;
            if output.len() as u64 > limit {
                return Ok::<_, String>((None, output, errors));
            }
            let status = child.wait().await.map_err(|e| with_causes(&e))?;
            Ok((Some(status), output, errors))
        };
        let (status, output, errors) = match tokio::time::timeout(self.timeout, run).await {
            Err(_) => return Err(BuildError::Timeout { file: shown_file, after: self.timeout }),
            Ok(Err(message)) => return Err(BuildError::Failed { file: shown_file, message }),
            Ok(Ok(done)) => done,
        };
        let Some(status) = status else { return Err(BuildError::TooLarge { file: shown_file, limit }) };
        if !status.success() {
            let message = String::from_utf8_lossy(&errors).trim().trim_start_matches("Error: ").to_owned();
            return Err(BuildError::Failed { file: shown_file, message });
        }
        // The output is clear already.
        let options = LoadOptions { decryption: None, ..options.clone() };
        load_bytes_with(Path::new(&shown_file), &output, &options)
            .map_err(|e| BuildError::Output { file: shown_file.clone(), message: with_causes(&e) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(files: &[(&str, &str)]) -> PathBuf {
        let root =
            std::env::temp_dir().join(format!("applyset-kustomize-{}-{}", std::process::id(), fastrand::u64(..)));
        for (path, text) in files {
            let path = root.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        root
    }

    #[test]
    fn versions_as_each_kustomize_prints_them() {
        assert_eq!(reported_version("v5.6.0"), Some("v5.6.0"));
        assert_eq!(reported_version("v5.7.1\n"), Some("v5.7.1"));
        let v4 = "{Version:kustomize/v4.5.7 GitCommit:56d82a8378dfc8dc3b3b1085e5a6e67b82966bd7 BuildDate:2022-08-02T16:35:54Z GoOs:linux GoArch:amd64}";
        assert_eq!(reported_version(v4), Some("v4.5.7"));
        assert_eq!(reported_version("(devel)"), None);
        assert_eq!(reported_version(""), None);
    }

    #[test]
    fn bases_and_files_inside_the_checkout_pass() {
        let root = tree(&[
            (
                "base/kustomization.yaml",
                "resources: [cm.yaml]\nconfigMapGenerator:\n- name: g\n  files: [k=data.txt]\n",
            ),
            ("base/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n"),
            ("base/data.txt", "x"),
            (
                "overlays/prod/kustomization.yaml",
                "resources: [../../base]\npatches:\n- path: patch.yaml\npatchesStrategicMerge:\n- |\n  apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: a}\n",
            ),
            ("overlays/prod/patch.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n"),
        ]);
        check_tree(&root, &root.join("overlays/prod")).unwrap();
    }

    #[test]
    fn remote_bases_outside_paths_and_helm_are_refused_naming_the_file() {
        let cases = [
            ("resources: [github.com/example/repo//base?ref=v1]\n", "resources"),
            ("resources: [https://example.com/base.yaml]\n", "resources"),
            ("resources: [../../../etc]\n", "resources"),
            ("configMapGenerator:\n- name: g\n  files: [/etc/passwd]\n", "configMapGenerator.files"),
            ("patches:\n- path: ../outside.yaml\n", "patches"),
        ];
        for (kustomization, field) in cases {
            let root = tree(&[("app/kustomization.yaml", kustomization), ("outside.yaml", "")]);
            let app = root.join("app");
            // The checkout is `app`: `../outside.yaml` exists but is not inside it.
            let error = check_tree(&app, &app).unwrap_err();
            let text = error.to_string();
            assert!(matches!(error, BuildError::OutsideRoot { .. }), "{text}");
            assert!(text.starts_with("kustomization.yaml: ") && text.contains(field), "{text}");
        }
        let root = tree(&[("kustomization.yaml", "helmCharts:\n- name: x\n")]);
        assert!(matches!(check_tree(&root, &root), Err(BuildError::Helm { .. })));
        // A base reached through another base is checked too.
        let root = tree(&[
            ("a/kustomization.yaml", "resources: [../b]\n"),
            ("b/kustomization.yaml", "resources: [https://example.com/x.yaml]\n"),
        ]);
        let text = check_tree(&root, &root.join("a")).unwrap_err().to_string();
        assert!(text.starts_with("b/kustomization.yaml: "), "{text}");
    }
}
