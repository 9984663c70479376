//! The manifest loader: reads what `kubectl apply -f PATH [-f PATH…] [-R]` (kubectl 1.33,
//! client-side) reads, and turns it into the objects kubectl would apply, in the same order.
//!
//! Pure: files and standard input are the only I/O, no cluster is involved.
//!
//! * Inputs ([`walk`]): `-` is standard input (once); a directory is walked in byte order of
//!   names, its direct files only unless `recursive`, keeping `.json`, `.yaml` and `.yml`
//!   files; a file named explicitly is read whatever its extension; a path that does not exist
//!   is tried as a Go glob. URLs are refused with a clear error.
//! * Streams ([`stream`]): BOM-aware decoding, JSON-or-YAML sniffing, `---` splitting, empty
//!   and `null` documents skipped.
//! * Documents ([`yaml`], [`resolve`]): YAML 1.1 as go-yaml v2 resolves it (`yes` is `true`,
//!   `0755` is 493, …), converted to JSON values with kubectl's number rules.
//! * Objects: each document must be an object with a `kind`; an object with a top-level
//!   `items` key is a list whose items are applied instead (an item with neither `kind` nor
//!   `apiVersion` gets the list's `apiVersion` and its kind minus the `List` suffix).
//!
//! Every error found is collected (so a user sees each broken file at once), but [`load`]
//! returns either all objects or the errors, never a partial result: nothing may be applied
//! or pruned on a partial load.
//!
//! The controller loads with [`load_with`]: size caps ([`Limits`]) and the refusal of patch
//! directives written in manifests ([`directives`]), neither of which kubectl has.

pub mod decryption;
pub mod directives;
mod go_json;
pub mod kustomize;
pub mod limits;
mod objects;
pub mod postbuild;
pub mod resolve;
pub mod stream;
pub mod walk;
pub mod yaml;

use std::collections::HashMap;
use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};

use applyset_merge::Value;
use applyset_merge::value::go_quote;

pub use limits::{LimitExceeded, Limits};
pub use objects::{ObjectError, document_objects, go_aggregate};
use objects::{api_version_of, kind_of, kubectl_validation_error};

use crate::causes::{Chain, with_causes};
pub use stream::{Document, DocumentError, decode_text, decode_text_owned, parse_stream};
pub use walk::{FILE_EXTENSIONS, Input};

/// Where an object came from.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Source {
    /// The file as kubectl names it (the path given, joined with names found by walking), or
    /// `-` for standard input.
    pub path: PathBuf,
    /// The document in the file, from 1 (see [`Document::number`]). Items of a list share the
    /// list's document.
    pub document: usize,
    /// The 1-based line where the document starts.
    pub line: usize,
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: document {} (line {})", self.path.display(), self.document, self.line)
    }
}

/// An object to apply: always an [`Value::Object`] with a non-empty string `kind`.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadedObject {
    pub source: Source,
    pub object: Value,
}

/// What kind of problem a [`FileError`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// A `-f` value that cannot be expanded, or a file that cannot be read.
    Input,
    /// Text that is not JSON or YAML.
    Syntax,
    /// A document that does not make objects (not an object, no kind, a bad list).
    Object,
    /// Over a cap of [`Limits`].
    TooLarge(LimitExceeded),
    /// An object carries a strategic-merge-patch directive key ([`directives`]).
    PatchDirective,
    /// Post-build substitution failed ([`postbuild`]): an undefined variable, a bad reference,
    /// a value that changes the YAML structure.
    Substitution,
    /// A SOPS-encrypted file could not be decrypted, or decryption is not configured
    /// ([`decryption`]).
    Decryption,
}

/// One problem found while loading.
#[derive(Debug, Clone, PartialEq)]
pub struct FileError {
    pub kind: ErrorKind,
    /// The file, when the problem is in a file (argument-level errors name their path in the
    /// message, as kubectl's do).
    pub path: Option<PathBuf>,
    pub document: Option<usize>,
    pub line: Option<usize>,
    pub column: Option<usize>,
    pub message: String,
    /// The line kubectl prints for this problem, where it has one (it names the file but not
    /// the document); [`Display`](fmt::Display) is the located form.
    pub kubectl: Option<String>,
}

impl FileError {
    fn argument(message: String) -> Self {
        FileError {
            kind: ErrorKind::Input,
            path: None,
            document: None,
            line: None,
            column: None,
            message,
            kubectl: None,
        }
    }

    fn file(kind: ErrorKind, path: &Path, message: String) -> Self {
        FileError {
            kind,
            path: Some(path.to_path_buf()),
            document: None,
            line: None,
            column: None,
            message,
            kubectl: None,
        }
    }

    /// What kubectl prints for this problem: its own wording where it has one, else the
    /// located form.
    pub fn kubectl_message(&self) -> String {
        self.kubectl.clone().unwrap_or_else(|| self.to_string())
    }

    fn too_large(path: &Path, exceeded: LimitExceeded) -> Self {
        FileError::file(ErrorKind::TooLarge(exceeded), path, exceeded.to_string())
    }
}

impl fmt::Display for FileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(path) = &self.path {
            write!(f, "{}: ", path.display())?;
        }
        if let Some(document) = self.document {
            write!(f, "document {document}: ")?;
        }
        match (self.line, self.column) {
            (Some(line), Some(column)) => write!(f, "line {line} column {column}: ")?,
            (Some(line), None) => write!(f, "line {line}: ")?,
            _ => {}
        }
        f.write_str(&self.message)
    }
}

/// Loading failed; `errors` holds every problem found, in input order. Displayed one per line.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadError {
    pub errors: Vec<FileError>,
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.errors.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for LoadError {}

/// How to load (the controller's checks; the default is kubectl's behaviour).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LoadOptions {
    pub limits: Limits,
    /// Refuse objects carrying strategic-merge-patch directive keys ([`directives`]).
    pub reject_patch_directives: bool,
    /// Relative paths are read from this directory instead of the working directory, and every
    /// path in sources and errors stays relative to it (the controller names files from the
    /// repository root, never from its checkout on disk).
    pub base_dir: Option<PathBuf>,
    /// `spec.postBuild`: the variables substituted in each document's text ([`postbuild`]).
    pub substitute: Option<std::sync::Arc<postbuild::Variables>>,
    /// kubectl's client-side validation (`--validate` other than `false`): a document without
    /// a string `apiVersion` and `kind` (or not an object, or a `v1` `List` whose items lack
    /// them) is refused in kubectl's words, and ends the reading of its file.
    pub kubectl_validation: bool,
    /// SOPS-encrypted files: decrypted, or refused ([`decryption`]); `None` reads them as they
    /// are, as kubectl does.
    pub decryption: Option<decryption::Decryption>,
}

/// Reads the objects `kubectl apply -f paths… [-R]` would apply, in order. `stdin` is read only
/// if a path is `-`. Either every input loaded cleanly, or all problems are returned.
pub fn load(paths: &[PathBuf], recursive: bool, stdin: impl Read) -> Result<Vec<LoadedObject>, LoadError> {
    load_with(paths, recursive, stdin, &LoadOptions::default())
}

/// [`load`] with the controller's checks. With size caps, every file's size is checked before
/// any file is read, and nothing is read when one is over a cap.
pub fn load_with(
    paths: &[PathBuf],
    recursive: bool,
    stdin: impl Read,
    options: &LoadOptions,
) -> Result<Vec<LoadedObject>, LoadError> {
    let loaded = load_partial(paths, recursive, stdin, options);
    if loaded.errors.is_empty() { Ok(loaded.objects) } else { Err(LoadError { errors: loaded.errors }) }
}

/// What [`load_partial`] read: the objects of every document that could be read, and the
/// problems of the others.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Loaded {
    pub objects: Vec<LoadedObject>,
    pub errors: Vec<FileError>,
    /// For each error, how many objects were read before it: where it falls in input order.
    pub positions: Vec<usize>,
    /// Set when nothing may be applied whatever was read: a `-f` value that names nothing (as
    /// kubectl, which then reads no file), a size cap, or a file that cannot be decrypted.
    pub fatal: bool,
}

/// Reads what can be read, as kubectl's builder with `ContinueOnError` does: a file stops at
/// its first unreadable document (a syntax error; with [`LoadOptions::kubectl_validation`],
/// a document that fails it), the documents before it are kept, and the other files are read.
pub fn load_partial(paths: &[PathBuf], recursive: bool, mut stdin: impl Read, options: &LoadOptions) -> Loaded {
    let limits = options.limits;
    let root = walk::Root(options.base_dir.as_deref().unwrap_or_else(|| Path::new("")));
    let (inputs, argument_errors) = walk::expand(paths, recursive, root);
    let mut loaded = Loaded {
        fatal: !argument_errors.is_empty(),
        errors: argument_errors.into_iter().map(FileError::argument).collect(),
        ..Loaded::default()
    };
    if loaded.fatal {
        return loaded;
    }
    if limits.file.is_some() || limits.total.is_some() {
        check_sizes(&inputs, &limits, root, &mut loaded.errors);
        if loaded.errors.iter().any(|e| matches!(e.kind, ErrorKind::TooLarge(_))) {
            loaded.fatal = true;
            return loaded;
        }
    }
    let mut total: u64 = 0;
    for input in inputs {
        let (path, bytes) = match &input {
            Input::Stdin => (PathBuf::from("-"), read_bounded(&mut stdin, limits.file)),
            Input::File(path) => {
                (path.clone(), std::fs::File::open(root.at(path)).and_then(|mut f| read_bounded(&mut f, limits.file)))
            }
        };
        let bytes = match bytes {
            Ok(bytes) => bytes,
            Err(e) => {
                loaded.errors.push(FileError::file(
                    ErrorKind::Input,
                    &path,
                    format!("error reading file: {e}", e = Chain(&e)),
                ));
                loaded.positions.push(loaded.objects.len());
                continue;
            }
        };
        // Checked again on what was read: standard input has no size beforehand, and a file
        // may have grown since.
        total += bytes.len() as u64;
        let exceeded = match (limits.file, limits.total) {
            (Some(limit), _) if bytes.len() as u64 > limit => {
                Some(LimitExceeded::File { size: bytes.len() as u64, limit })
            }
            (_, Some(limit)) if total > limit => Some(LimitExceeded::Total { size: total, limit }),
            _ => None,
        };
        if let Some(exceeded) = exceeded {
            loaded.errors.push(FileError::too_large(&path, exceeded));
            loaded.fatal = true;
            return loaded;
        }
        let bytes = match &options.decryption {
            Some(decryption) => match decryption.manifest(&path, bytes) {
                Ok(bytes) => bytes,
                Err(error) => {
                    loaded.errors.push(FileError::file(ErrorKind::Decryption, &path, with_causes(&error)));
                    loaded.positions.push(loaded.objects.len());
                    // Beyond kubectl's reading: a Secret that cannot be decrypted stops the
                    // whole input (applying the rest, or pruning without it, is never wanted).
                    loaded.fatal = true;
                    continue;
                }
            },
            None => bytes,
        };
        let (objects_before, errors_before) = (loaded.objects.len(), loaded.errors.len());
        load_text_into(&path, decode_text_owned(bytes), options, &mut loaded.objects, &mut loaded.errors);
        // Within the file, an error comes after the objects of the documents before it.
        let file_objects = &loaded.objects[objects_before..];
        for error in &loaded.errors[errors_before..] {
            let before = match error.document {
                Some(document) => file_objects.iter().filter(|o| o.source.document < document).count(),
                None => 0,
            };
            loaded.positions.push(objects_before + before);
        }
    }
    loaded
}

/// The size caps on the files' metadata, in walk order: every file over the per-file cap, and
/// the file with which the sum of the others goes over the total cap.
fn check_sizes(inputs: &[Input], limits: &Limits, root: walk::Root<'_>, errors: &mut Vec<FileError>) {
    let mut total: u64 = 0;
    for input in inputs {
        let Input::File(path) = input else { continue };
        // A file that cannot be inspected is reported when it is read.
        let Ok(meta) = std::fs::metadata(root.at(path)) else { continue };
        let size = meta.len();
        if let Some(limit) = limits.file
            && size > limit
        {
            errors.push(FileError::too_large(path, LimitExceeded::File { size, limit }));
            continue;
        }
        total += size;
        if let Some(limit) = limits.total
            && total > limit
        {
            errors.push(FileError::too_large(path, LimitExceeded::Total { size: total, limit }));
            return;
        }
    }
}

/// Reads to the end, or to one byte past `limit` (enough to tell it is over).
fn read_bounded(reader: &mut impl Read, limit: Option<u64>) -> std::io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    match limit {
        Some(limit) => reader.take(limit.saturating_add(1)).read_to_end(&mut bytes)?,
        None => reader.read_to_end(&mut bytes)?,
    };
    Ok(bytes)
}

/// Loads one file's content (e.g. a blob from a git checkout) as if read from `path`.
pub fn load_bytes(path: &Path, bytes: &[u8]) -> Result<Vec<LoadedObject>, LoadError> {
    load_bytes_with(path, bytes, &LoadOptions::default())
}

/// [`load_bytes`] with the controller's options (post-build substitution, caps).
pub fn load_bytes_with(path: &Path, bytes: &[u8], options: &LoadOptions) -> Result<Vec<LoadedObject>, LoadError> {
    let mut objects = Vec::new();
    let mut errors = Vec::new();
    load_text_into(path, decode_text(bytes), options, &mut objects, &mut errors);
    if errors.is_empty() { Ok(objects) } else { Err(LoadError { errors }) }
}

fn load_text_into(
    path: &Path,
    text: String,
    options: &LoadOptions,
    objects: &mut Vec<LoadedObject>,
    errors: &mut Vec<FileError>,
) {
    let text = match &options.substitute {
        Some(vars) => match postbuild::substitute_stream(&text, vars, options.limits.document) {
            Ok(substituted) => substituted,
            Err(error) => {
                errors.push(FileError::file(ErrorKind::Substitution, path, with_causes(&error)));
                return;
            }
        },
        None => text,
    };
    let stream = stream::parse_stream_partial(&text, options.limits.document);
    drop(text);
    let source_name = kubectl_source(path);
    for doc in stream.documents {
        let source = Source { path: path.to_path_buf(), document: doc.number, line: doc.line };
        let at = |kind: ErrorKind, message: String, kubectl: Option<String>| FileError {
            kind,
            path: Some(path.to_path_buf()),
            document: Some(doc.number),
            line: Some(doc.line),
            column: None,
            message,
            kubectl,
        };
        if options.kubectl_validation
            && let Some(invalid) = kubectl_validation_error(&doc.value)
        {
            let kubectl = format!(
                "error validating {}: error validating data: {invalid}; if you choose to ignore these errors, turn validation off with --validate=false",
                go_quote(&source_name)
            );
            errors.push(at(ErrorKind::Object, invalid, Some(kubectl)));
            // kubectl's stream visitor returns at a validation error: the rest of the file
            // is not read.
            return;
        }
        match document_objects(&doc) {
            Ok(found) => {
                for object in found {
                    if options.reject_patch_directives
                        && let Some(field) = directives::find_patch_directive(&object)
                    {
                        // The controller's check: kubectl has no wording for it.
                        errors.push(at(ErrorKind::PatchDirective, directive_message(&object, &field), None));
                        continue;
                    }
                    objects.push(LoadedObject { source: source.clone(), object });
                }
            }
            Err(e) => {
                let message = with_causes(&e);
                let kubectl = format!("unable to decode {}: {message}", go_quote(&source_name));
                errors.push(at(ErrorKind::Object, message, Some(kubectl)));
            }
        }
    }
    if let Some(e) = stream.error {
        errors.push(FileError {
            kind: e.too_large.map_or(ErrorKind::Syntax, ErrorKind::TooLarge),
            path: Some(path.to_path_buf()),
            document: Some(e.document),
            line: e.line,
            column: e.column,
            kubectl: Some(format!("error parsing {source_name}: {}", e.go_message)),
            message: e.message,
        });
    }
}

/// The name kubectl gives an input in messages (`STDIN` for `-`).
pub fn kubectl_source(path: &Path) -> String {
    if path == Path::new("-") { "STDIN".to_owned() } else { path.display().to_string() }
}

fn directive_message(object: &Value, field: &directives::FieldPath) -> String {
    let name = match ObjectKey::of(object) {
        Some(key) => key.to_string(),
        None => format!("{} (without a name)", object.as_object().map_or("", kind_of)),
    };
    format!(
        "{name}: field {field}: a strategic merge patch directive in a manifest is refused (the apiserver would act on it, and kubectl would keep it in the last-applied annotation, breaking every later apply); remove the key"
    )
}

/// What makes two manifests the same object: API group (not version), kind, namespace as
/// written in the object (`""` when absent), and name.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ObjectKey {
    pub group: String,
    pub kind: String,
    pub namespace: String,
    pub name: String,
}

impl ObjectKey {
    /// The key of an object, or `None` when it has no string `metadata.name` (e.g. one that
    /// uses `generateName`), which cannot collide.
    pub fn of(object: &Value) -> Option<ObjectKey> {
        let map = object.as_object()?;
        let metadata = map.get("metadata").and_then(Value::as_object);
        let meta_str = |key: &str| metadata.and_then(|m| m.get(key)).and_then(Value::as_str);
        let name = meta_str("name").filter(|n| !n.is_empty())?;
        let api_version = api_version_of(map);
        let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
        Some(ObjectKey {
            group: group.to_owned(),
            kind: kind_of(map).to_owned(),
            namespace: meta_str("namespace").unwrap_or("").to_owned(),
            name: name.to_owned(),
        })
    }
}

impl fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.kind)?;
        if !self.group.is_empty() {
            write!(f, ".{}", self.group)?;
        }
        f.write_str(" ")?;
        if !self.namespace.is_empty() {
            write!(f, "{}/", self.namespace)?;
        }
        f.write_str(&self.name)
    }
}

/// The same object given twice.
#[derive(Debug, Clone, PartialEq)]
pub struct Duplicate {
    pub key: ObjectKey,
    pub first: Source,
    pub second: Source,
}

impl fmt::Display for Duplicate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} is defined twice: in {} and in {}", self.key, self.first, self.second)
    }
}

/// Every object that appears again after its first occurrence (same [`ObjectKey`]). Run it on
/// the loaded objects, and again after namespaces have been defaulted.
pub fn find_duplicates<'a>(objects: impl IntoIterator<Item = &'a LoadedObject>) -> Vec<Duplicate> {
    find_duplicates_in(objects.into_iter().map(|loaded| (&loaded.source, &loaded.object)))
}

/// [`find_duplicates`] over `(source, object)` pairs held elsewhere (no copy of the objects).
pub fn find_duplicates_in<'a>(objects: impl IntoIterator<Item = (&'a Source, &'a Value)>) -> Vec<Duplicate> {
    let mut finder = DuplicateFinder::default();
    for (source, object) in objects {
        finder.add(source, object);
    }
    finder.finish()
}

/// [`find_duplicates_in`] one object at a time, for objects that are not all kept (the plan
/// packs each once it is prepared).
#[derive(Debug, Default)]
pub struct DuplicateFinder {
    seen: HashMap<ObjectKey, Source>,
    found: Vec<Duplicate>,
}

impl DuplicateFinder {
    pub fn add(&mut self, source: &Source, object: &Value) {
        let Some(key) = ObjectKey::of(object) else { return };
        match self.seen.get(&key) {
            Some(first) => self.found.push(Duplicate { key, first: first.clone(), second: source.clone() }),
            None => {
                self.seen.insert(key, source.clone());
            }
        }
    }

    /// Every object that appeared again after its first occurrence, in the order added.
    pub fn finish(self) -> Vec<Duplicate> {
        self.found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicates() {
        let source = |document| Source { path: "f.yaml".into(), document, line: 1 };
        let obj = |text: &str, document| LoadedObject {
            source: source(document),
            object: parse_stream(text).unwrap().remove(0).value,
        };
        let list = [
            obj("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: a}\n", 1),
            obj("apiVersion: apps/v1beta2\nkind: Deployment\nmetadata: {name: a}\n", 2),
            obj("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: a, namespace: x}\n", 3),
            obj("apiVersion: v1\nkind: Deployment\nmetadata: {name: a}\n", 4),
            obj("apiVersion: v1\nkind: Pod\nmetadata: {generateName: a-}\n", 5),
            obj("apiVersion: v1\nkind: Pod\nmetadata: {generateName: a-}\n", 6),
        ];
        let dups = find_duplicates(&list);
        assert_eq!(dups.len(), 1);
        assert_eq!(
            dups[0].to_string(),
            "Deployment.apps a is defined twice: in f.yaml: document 1 (line 1) and in f.yaml: document 2 (line 1)"
        );
    }
}
