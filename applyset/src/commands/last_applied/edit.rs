//! `applyset apply edit-last-applied`: `kubectl apply edit-last-applied`, with kubectl's edit
//! loop (`cmd/util/editor`, apply-edit mode).
//!
//! The annotations of the objects are opened together (one object, or a `v1` `List`) as YAML
//! under a comment header, or as JSON with `-o json`. When the editor exits:
//! - the file unchanged (comments and formatting aside): "Edit cancelled, no changes made.";
//! - not an object with `apiVersion` and `kind` (or not YAML): `error: <resource> "<name>" is
//!   invalid`, and the file opens again with the reason in its header;
//! - objects that cannot be read (an unknown kind): the file opens again with the reason;
//! - saved unchanged after a reason was shown: "Edit cancelled, no valid changes were saved."
//!   (exit 1, the file kept);
//! - else each edited object's annotation is set to it (a JSON merge patch), printed as
//!   `configmap/a edited` (`skipped` when equal to the object it is matched with by UID).

use std::path::PathBuf;
use std::process::ExitCode;

use applyset_merge::Value;
use applyset_merge::value::go_quote;

use super::editor::{EditError, Editor, Reason, crlf, has_lines, header, validate};
use super::error::LastAppliedError;
use super::select::{self, Namespace, Request};
use super::{annotation_patch, encode_to_json, manual_strip, strip_comments};
use crate::apply::object::{display_name, last_applied, meta_str, set_namespace};
use crate::causes::{Chain, with_causes};
use crate::cli::EditLastAppliedArgs;
use crate::cluster::{Cluster, Mapping, PatchType, WriteParams};
use crate::commands::apply::{connect, runtime};
use crate::commands::flags::parse_validate;
use crate::manifest;
use crate::printers::{OutputFormat, PrintFlags};

/// An object of the edit: an annotation's object, or an object of the edited file.
#[derive(Debug, Clone)]
struct Edited {
    mapping: Mapping,
    object: Value,
}

impl Edited {
    fn name(&self) -> &str {
        meta_str(&self.object, "name").unwrap_or_default()
    }

    fn uid(&self) -> &str {
        meta_str(&self.object, "uid").unwrap_or_default()
    }

    /// `configmaps` or `deployments.apps`, as kubectl names the resource in its messages.
    fn resource(&self) -> String {
        let resource = &self.mapping.resource;
        if resource.group.is_empty() {
            resource.plural.clone()
        } else {
            format!("{}.{}", resource.plural, resource.group)
        }
    }
}

/// How the command was asked to run.
struct Session<'a> {
    cluster: &'a Cluster,
    namespace: &'a Namespace,
    editor: Editor,
    json: bool,
    windows_line_endings: bool,
    /// `Strict`, `Warn` or `Ignore` (`--validate=false`: the edited text is not checked
    /// before it is sent).
    field_validation: String,
    field_manager: &'a str,
    output: OutputFormat,
    /// The format of the file to edit, as given with `-o` (empty: YAML).
    edit_format: String,
}

pub fn run(args: EditLastAppliedArgs) -> Result<ExitCode, LastAppliedError> {
    let edit_format = args.print.output.clone().unwrap_or_default();
    let output = OutputFormat::resolve(&PrintFlags {
        output: args.print.output.as_deref(),
        template: args.print.template.as_deref(),
        allow_missing_keys: args.print.allow_missing_template_keys,
        show_managed_fields: args.print.show_managed_fields,
    });
    runtime()?.block_on(async {
        let cluster = connect(&args.cluster).await?;
        let objects = &args.objects;
        let namespace = Namespace::of(objects.namespace.as_deref(), &cluster);
        let request = Request {
            resources: &objects.resources,
            filenames: &objects.filenames,
            kustomize: objects.kustomize.as_deref().map(|dir| (dir, &objects.kustomize_program)),
            recursive: objects.recursive,
            type_alone_selects_all: true,
            args_before_files: true,
            continue_on_error: true,
            ..Request::default()
        };
        let plan = select::plan(&cluster, &request).await?;
        let field_validation = parse_validate(&args.validate)?;
        let mut targets = Vec::new();
        select::visit(&cluster, &namespace, &request, plan, |target| {
            targets.push(target);
            Ok(())
        })
        .await?;
        let mut opened = Vec::new();
        for target in &targets {
            let Some(annotation) = last_applied(&target.object) else { continue };
            // Only the annotation's first object is edited (kubectl reads it as a file).
            if let Some(first) = read_edited(&cluster, annotation.as_bytes()).await?.into_iter().next() {
                opened.push(first);
            }
        }
        if opened.is_empty() {
            return Err(LastAppliedError::EditNoAnnotation);
        }
        let session = Session {
            cluster: &cluster,
            namespace: &namespace,
            editor: Editor::from_env(),
            json: edit_format == "json",
            windows_line_endings: args.windows_line_endings,
            field_validation,
            field_manager: &args.field_manager,
            output,
            edit_format,
        };
        session.edit(opened).await
    })
}

/// The objects of an annotation or of the edited file, read as kubectl reads a file named
/// `edited-file`, each mapped through discovery; every problem reported together.
async fn read_edited(cluster: &Cluster, text: &[u8]) -> Result<Vec<Edited>, LastAppliedError> {
    let source = "edited-file";
    let loaded = manifest::load_bytes(std::path::Path::new(source), text).map_err(|error| {
        let errors = error.errors.iter().map(|e| LastAppliedError::Load(e.kubectl_message())).collect();
        LastAppliedError::aggregate(errors).unwrap_or_else(|| LastAppliedError::Load(with_causes(&error)))
    })?;
    // The documents that are lists: kubectl words an unknown kind of their items differently.
    let lists: Vec<usize> = manifest::parse_stream(&manifest::decode_text(text))
        .map(|documents| documents.iter().filter(|d| is_list(&d.value)).map(|d| d.number).collect())
        .unwrap_or_default();
    let mut errors: Vec<LastAppliedError> = Vec::new();
    let mut objects = Vec::new();
    for loaded in loaded {
        let list_item = lists.contains(&loaded.source.document);
        match select::object_mapping(cluster, &loaded.object, source, list_item).await {
            Ok(mapping) => objects.push(Edited { mapping, object: loaded.object }),
            Err(error) => errors.push(error),
        }
    }
    match LastAppliedError::aggregate(errors) {
        Some(error) => Err(error),
        None => Ok(objects),
    }
}

/// A document the loader reads as a list (an object with `items`).
fn is_list(document: &Value) -> bool {
    document.as_object().is_some_and(|o| o.contains_key("items"))
}

/// The objects as one document: the object alone, or a `v1` `List` of them.
fn document(objects: &[Edited]) -> Value {
    if let [only] = objects {
        return only.object.clone();
    }
    let mut list = applyset_merge::value::Map::new();
    list.insert("apiVersion".into(), Value::String("v1".into()));
    list.insert("items".into(), Value::Array(objects.iter().map(|o| o.object.clone()).collect()));
    list.insert("kind".into(), Value::String("List".into()));
    list.insert("metadata".into(), Value::Object(Default::default()));
    Value::Object(list)
}

/// Prints that `file` keeps the user's changes (kubectl's `preservedFile`), and passes `error` on.
fn preserved(error: impl Into<LastAppliedError>, file: Option<&PathBuf>) -> LastAppliedError {
    if let Some(file) = file.filter(|f| f.exists()) {
        eprintln!("A copy of your changes has been stored to {}", go_quote(&file.display().to_string()));
    }
    error.into()
}

impl Session<'_> {
    /// The edit loop, until the edit is applied, cancelled or fails.
    async fn edit(&self, opened: Vec<Edited>) -> Result<ExitCode, LastAppliedError> {
        let program = std::env::args().next().unwrap_or_default();
        let prefix = format!("{}-edit-", program.rsplit('/').next().unwrap_or_default());
        let extension = if self.json { ".json" } else { ".yaml" };
        let mut reasons: Vec<Reason> = Vec::new();
        // The previous pass's file, removed once the next one is written.
        let mut kept: Option<PathBuf> = None;
        let mut original: Vec<u8> = Vec::new();
        let mut edited: Vec<u8> = Vec::new();
        let mut contains_error = false;
        loop {
            let mut content = String::new();
            if !self.json {
                content.push_str(&self.line_endings(header(&reasons)));
            }
            if contains_error {
                content.push_str(&String::from_utf8_lossy(&manual_strip(&edited)));
            } else {
                let printed = self.print_to_edit(&document(&opened)).map_err(|e| preserved(e, kept.as_ref()))?;
                content.push_str(&self.line_endings(printed));
                original = content.clone().into_bytes();
            }
            let previous = std::mem::take(&mut edited);
            let (result, file) = self.editor.edit_temp_file(&prefix, extension, content.as_bytes());
            edited = result.map_err(|e| preserved(e, kept.as_ref()))?;
            if contains_error && strip_comments(&previous) == strip_comments(&edited) {
                return Err(preserved(EditError::NoValidChanges, file.as_ref()));
            }
            if let Some(old) = kept.take() {
                let _ = std::fs::remove_file(old);
            }
            if self.field_validation != "Ignore"
                && let Err(message) = validate(&strip_comments(&edited))
            {
                let first = &opened[0];
                let (resource, name) = (first.resource(), go_quote(first.name()));
                reasons = vec![Reason {
                    head: format!("{resource} {name} was not valid"),
                    other: vec![format!("<nil>: Invalid value: \"The edited file failed validation\": {message}")],
                }];
                eprintln!("error: {resource} {name} is invalid");
                kept = file;
                contains_error = true;
                continue;
            }
            if strip_comments(&original) == strip_comments(&edited) {
                remove(file);
                eprintln!("Edit cancelled, no changes made.");
                return Ok(ExitCode::SUCCESS);
            }
            if !has_lines(&edited) {
                remove(file);
                eprintln!("Edit cancelled, saved file was empty.");
                return Ok(ExitCode::SUCCESS);
            }
            kept = file;
            reasons.clear();
            let updated = match read_edited(self.cluster, &edited).await {
                Ok(updated) => updated,
                Err(error) => {
                    contains_error = true;
                    reasons.push(Reason {
                        head: format!("The edited file had a syntax error: {error}", error = Chain(&error)),
                        ..Reason::default()
                    });
                    continue;
                }
            };
            self.apply(&opened, updated).await.map_err(|e| preserved(e, kept.as_ref()))?;
            remove(kept);
            return Ok(ExitCode::SUCCESS);
        }
    }

    /// Sets each edited object's annotation, in order (kubectl's `visitToApplyEditPatch`).
    async fn apply(&self, opened: &[Edited], updated: Vec<Edited>) -> Result<(), LastAppliedError> {
        let mut updated = updated;
        for object in &mut updated {
            restore_managed_fields(object, opened);
            self.require_namespace(object)?;
        }
        for object in &updated {
            // Matched by UID: annotations rarely hold one, so every object then compares with
            // the first opened (as kubectl does).
            let original = opened
                .iter()
                .find(|o| o.uid() == object.uid())
                .ok_or_else(|| EditError::NoOriginal(object.object.to_json_string()))?;
            let verb = if encode_to_json(&original.object) == encode_to_json(&object.object) {
                "skipped"
            } else {
                let params = WriteParams {
                    field_manager: self.field_manager.to_owned(),
                    field_validation: self.field_validation.clone(),
                    server_dry_run: false,
                    force: false,
                };
                let patch = annotation_patch(&encode_to_json(&object.object));
                let namespace = Some(self.namespace.name.as_str());
                self.cluster
                    .patch(&object.mapping, namespace, object.name(), PatchType::JsonMerge, &patch, &params)
                    .await?;
                "edited"
            };
            self.print(&object.object, verb)?;
        }
        Ok(())
    }

    /// kubectl's `RequireNamespace(cmdNamespace)` on an edited object.
    fn require_namespace(&self, object: &mut Edited) -> Result<(), LastAppliedError> {
        if !object.mapping.namespaced {
            return Ok(());
        }
        match meta_str(&object.object, "namespace").unwrap_or_default() {
            "" => set_namespace(&mut object.object, &self.namespace.name),
            found if found != self.namespace.name => {
                return Err(LastAppliedError::NamespaceMismatch {
                    found: found.to_owned(),
                    expected: self.namespace.name.clone(),
                });
            }
            _ => {}
        }
        Ok(())
    }

    /// The document as the editor shows it: YAML, or JSON with `-o json`, without managed fields.
    fn print_to_edit(&self, document: &Value) -> Result<String, LastAppliedError> {
        let mut document = document.clone();
        without_managed_fields(&mut document);
        match self.edit_format.as_str() {
            "json" => Ok(document.to_json_indented("    ", 0) + "\n"),
            "" | "yaml" => manifest::yaml::to_go_yaml(&document)
                .ok_or_else(|| LastAppliedError::Annotation("cannot write the annotations as YAML".to_owned())),
            other => Err(EditError::Format(other.to_owned()).into()),
        }
    }

    fn line_endings(&self, text: String) -> String {
        if self.windows_line_endings { crlf(&text) } else { text }
    }

    /// One object as kubectl's printer for `verb` prints it (a printer per object).
    fn print(&self, object: &Value, verb: &str) -> Result<(), LastAppliedError> {
        use std::io::Write;
        let text = |field: &str| object.as_object().and_then(|o| o.get(field)).and_then(Value::as_str).unwrap_or("");
        let group = text("apiVersion").split_once('/').map_or("", |(group, _)| group);
        let name = display_name(text("kind"), group, meta_str(object, "name").unwrap_or_default());
        let mut out = std::io::stdout().lock();
        match &self.output {
            OutputFormat::Lines => {
                let _ = writeln!(out, "{name} {verb}");
            }
            OutputFormat::Name => {
                let _ = writeln!(out, "{name}");
            }
            OutputFormat::Objects(printer) => {
                let printed = printer.print(vec![object.clone()]);
                let _ = out.write_all(printed.text.as_bytes());
                if let Some(error) = printed.error {
                    let _ = out.flush();
                    return Err(error.into());
                }
            }
            OutputFormat::Unusable(error) => return Err(error.clone().into()),
        }
        let _ = out.flush();
        Ok(())
    }
}

fn remove(file: Option<PathBuf>) {
    if let Some(file) = file {
        let _ = std::fs::remove_file(file);
    }
}

/// Drops `metadata.managedFields` (of the items too, for a `List`): the editor never shows them.
fn without_managed_fields(document: &mut Value) {
    let drop = |object: &mut Value| {
        if let Some(metadata) =
            object.as_object_mut().and_then(|o| o.get_mut("metadata")).and_then(Value::as_object_mut)
        {
            metadata.remove("managedFields");
        }
    };
    if let Some(Value::Array(items)) = document.as_object_mut().and_then(|o| o.get_mut("items")) {
        items.iter_mut().for_each(drop);
    }
    drop(document);
}

/// An edited object gets the managed fields of the opened object of its UID back (none when
/// there were none), as kubectl restores them.
fn restore_managed_fields(object: &mut Edited, opened: &[Edited]) {
    let managed = opened
        .iter()
        .find(|o| o.uid() == object.uid())
        .and_then(|o| o.object.as_object()?.get("metadata")?.as_object()?.get("managedFields").cloned());
    if let Some(metadata) =
        object.object.as_object_mut().and_then(|o| o.get_mut("metadata")).and_then(Value::as_object_mut)
    {
        match managed {
            Some(fields) => {
                metadata.insert("managedFields".into(), fields);
            }
            None => {
                metadata.remove("managedFields");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::core::{ApiResource, GroupVersionKind};

    fn edited(json: &str) -> Edited {
        let gvk = GroupVersionKind::gvk("apps", "v1", "Deployment");
        Edited {
            mapping: Mapping { resource: ApiResource::from_gvk_with_plural(&gvk, "deployments"), namespaced: true },
            object: Value::from_json_str(json).unwrap(),
        }
    }

    #[test]
    fn several_objects_open_as_a_list() {
        let (a, b) = (
            edited(r#"{"kind":"Deployment","metadata":{"name":"a"}}"#),
            edited(r#"{"kind":"Deployment","metadata":{"name":"b"}}"#),
        );
        assert_eq!(document(std::slice::from_ref(&a)), a.object);
        assert_eq!(
            document(&[a.clone(), b]).to_json_string(),
            r#"{"apiVersion":"v1","items":[{"kind":"Deployment","metadata":{"name":"a"}},{"kind":"Deployment","metadata":{"name":"b"}}],"kind":"List","metadata":{}}"#
        );
        assert_eq!(a.resource(), "deployments.apps");
    }

    #[test]
    fn managed_fields_are_hidden_and_restored_by_uid() {
        let mut list = Value::from_json_str(
            r#"{"items":[{"metadata":{"managedFields":[1],"name":"a"}}],"metadata":{"managedFields":[]}}"#,
        )
        .unwrap();
        without_managed_fields(&mut list);
        assert_eq!(list.to_json_string(), r#"{"items":[{"metadata":{"name":"a"}}],"metadata":{}}"#);
        let opened = [edited(r#"{"metadata":{"uid":"u","managedFields":[{"manager":"m"}]}}"#)];
        let mut object = edited(r#"{"metadata":{"uid":"u"}}"#);
        restore_managed_fields(&mut object, &opened);
        assert_eq!(object.object.to_json_string(), r#"{"metadata":{"managedFields":[{"manager":"m"}],"uid":"u"}}"#);
        let mut other = edited(r#"{"metadata":{"managedFields":[1]}}"#);
        restore_managed_fields(&mut other, &opened);
        assert_eq!(other.object.to_json_string(), r#"{"metadata":{}}"#);
    }
}
