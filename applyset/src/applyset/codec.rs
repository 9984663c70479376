//! The ApplySet metadata written on parents and members (pure): labels, annotations, the
//! set's ID, and kubectl's checks of an existing parent.

use std::collections::{BTreeMap, BTreeSet};

use sha2::{Digest, Sha256};

use super::error::{AnnotationError, ParentCheckError};
use crate::cluster::mapper::GroupKind;

use crate::keys::{DEPRECATED_GROUP_RESOURCES_ANNOTATION, GROUP_KINDS_ANNOTATION, PARENT_ID_LABEL, TOOLING_ANNOTATION};

/// Field manager of the parent's server-side apply (kubectl's, see the module docs).
pub const FIELD_MANAGER: &str = "kubectl-applyset";
/// The controller's tool name in the tooling annotation.
pub const TOOL_NAME: &str = "applyset";
/// The tooling annotation kubectl 1.33 writes (its build's version).
pub const KUBECTL_TOOLING: &str = "kubectl/v1.33.1";

/// The tooling annotation value the controller writes: `applyset/v<version>`.
pub fn tooling() -> String {
    format!("{TOOL_NAME}/v{}", env!("CARGO_PKG_VERSION"))
}

/// Which tool a parent is managed as: the CLI is kubectl (a team alternates `kubectl apply
/// --applyset` and `applyset apply --applyset` on one set), the controller is itself (kubectl
/// refuses to take its parents over, and it refuses kubectl's).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tooling {
    Kubectl,
    Controller,
}

impl Tooling {
    /// The tool name kubectl compares (the text before the last `/`).
    pub fn name(self) -> &'static str {
        match self {
            Tooling::Kubectl => tooling_base_name(KUBECTL_TOOLING),
            Tooling::Controller => TOOL_NAME,
        }
    }

    /// The value written to the parent's tooling annotation.
    pub fn annotation(self) -> String {
        match self {
            Tooling::Kubectl => KUBECTL_TOOLING.to_owned(),
            Tooling::Controller => tooling(),
        }
    }
}

/// kubectl's tool base name of a tooling annotation: everything before the last `/`
/// (the whole value when it has no `/`).
pub fn tooling_base_name(tooling: &str) -> &str {
    match tooling.rfind('/') {
        Some(index) => &tooling[..index],
        None => tooling,
    }
}

/// The ApplySet ID: `applyset-` + base64url-nopad(sha256(`name.namespace.Kind.group`)) + `-v1`.
pub fn applyset_id(name: &str, namespace: &str, kind: &str, group: &str) -> String {
    use base64::Engine as _;
    let unencoded = [name, namespace, kind, group].join(".");
    let hashed = Sha256::digest(unencoded.as_bytes());
    let encoded = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(hashed);
    format!("applyset-{encoded}-v1")
}

/// The `contains-group-kinds` value: sorted (byte order), comma-joined `Kind[.group]`.
pub fn group_kinds_annotation<'a>(kinds: impl IntoIterator<Item = &'a GroupKind>) -> String {
    let mut texts: Vec<String> = kinds.into_iter().map(ToString::to_string).collect();
    texts.sort();
    texts.dedup();
    texts.join(",")
}

/// The `additional-namespaces` value: sorted, comma-joined, without `parent_namespace`.
pub fn namespaces_annotation<'a>(namespaces: impl IntoIterator<Item = &'a String>, parent_namespace: &str) -> String {
    let set: BTreeSet<&str> = namespaces.into_iter().map(String::as_str).filter(|ns| *ns != parent_namespace).collect();
    set.into_iter().collect::<Vec<_>>().join(",")
}

/// kubectl's `parseNamespacesAnnotation`: absent or empty → none.
pub fn parse_namespaces_annotation(value: Option<&str>) -> BTreeSet<String> {
    match value {
        None | Some("") => BTreeSet::new(),
        Some(text) => text.split(',').map(str::to_owned).collect(),
    }
}

/// The group-kinds recorded on a parent, parsed but not yet mapped: the group-kinds annotation,
/// or (only when it is absent and non-empty) the legacy group-resources annotation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RecordedKinds {
    GroupKinds(Vec<GroupKind>),
    /// `(resource, group)` pairs from `contains-group-resources`.
    GroupResources(Vec<(String, String)>),
}

/// kubectl's `parseKindAnnotation` before the REST mapping.
pub fn parse_recorded_kinds(annotations: &BTreeMap<String, String>) -> Result<RecordedKinds, AnnotationError> {
    match annotations.get(GROUP_KINDS_ANNOTATION) {
        Some(value) if value.is_empty() => Ok(RecordedKinds::GroupKinds(Vec::new())),
        Some(value) => Ok(RecordedKinds::GroupKinds(value.split(',').map(GroupKind::parse).collect())),
        None => match annotations.get(DEPRECATED_GROUP_RESOURCES_ANNOTATION) {
            Some(value) if !value.is_empty() => Ok(RecordedKinds::GroupResources(
                value
                    .split(',')
                    .map(|gr| {
                        let (resource, group) = gr.split_once('.').unwrap_or((gr, ""));
                        (resource.to_owned(), group.to_owned())
                    })
                    .collect(),
            )),
            _ => Err(AnnotationError::MissingGroupKinds),
        },
    }
}

/// kubectl's checks of an existing parent's metadata (`fetchParent`), in kubectl's order;
/// `reference` is `<resource>.<group>/<name>`.
pub fn check_existing_parent(
    reference: &str,
    tool: Tooling,
    id: &str,
    labels: &BTreeMap<String, String>,
    annotations: &BTreeMap<String, String>,
) -> Result<(), ParentCheckError> {
    let Some(tooling) = annotations.get(TOOLING_ANNOTATION) else {
        return Err(ParentCheckError::MissingTooling { reference: reference.to_owned() });
    };
    let managed_by = tooling_base_name(tooling);
    let ours = tool.name();
    if managed_by != ours {
        return Err(ParentCheckError::OtherTooling {
            reference: reference.to_owned(),
            managed_by: managed_by.to_owned(),
            ours: ours.to_owned(),
        });
    }
    match labels.get(PARENT_ID_LABEL) {
        None => Err(ParentCheckError::MissingIdLabel { reference: reference.to_owned() }),
        Some(found) if found != id => Err(ParentCheckError::WrongIdLabel {
            reference: reference.to_owned(),
            found: found.clone(),
            want: id.to_owned(),
        }),
        Some(_) => Ok(()),
    }
}
