//! `--applyset` parsing and validation: kubectl's `ParseApplySetParentRef` and
//! `ApplySet.Validate`, with kubectl's messages.

use std::collections::BTreeSet;

use kube::Client;
use kube::core::{ApiResource, GroupVersionKind};

use super::error::Error;
use crate::cluster::list::{error_text, list_all};
use crate::cluster::mapper::gvr_string;
use crate::keys::PARENT_CRD_LABEL;

/// `--applyset` as typed: `[RESOURCE][.GROUP]/NAME`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParentRefSpec {
    pub resource: String,
    pub group: String,
    /// `v1` for the default Secret, else empty (any version).
    pub version: String,
    pub name: String,
}

/// Parses `--applyset` like kubectl's `ParseApplySetParentRef` (before the REST mapping); the
/// error is already wrapped as `invalid parent reference "<text>": …`.
pub fn parse_parent_ref(text: &str) -> Result<ParentRefSpec, Error> {
    let spec = match text.split_once('/') {
        Some((group_resource, name)) => {
            let (resource, group) = group_resource.split_once('.').unwrap_or((group_resource, ""));
            ParentRefSpec {
                resource: resource.to_owned(),
                group: group.to_owned(),
                version: String::new(),
                name: name.to_owned(),
            }
        }
        None => ParentRefSpec {
            resource: "secrets".into(),
            group: String::new(),
            version: "v1".into(),
            name: text.to_owned(),
        },
    };
    if spec.name.is_empty() {
        return Err(Error::InvalidReference(format!("invalid parent reference {text:?}: name cannot be blank")));
    }
    Ok(spec)
}

pub(super) fn is_builtin_parent(api_resource: &ApiResource) -> bool {
    api_resource.group.is_empty()
        && api_resource.version == "v1"
        && (api_resource.plural == "secrets" || api_resource.plural == "configmaps")
}

/// kubectl's `ApplySet.Validate`: every problem, in kubectl's order. `permitted_custom` is the
/// result of listing the CRDs labelled as parent types (`group/resource` pairs), or its error.
pub fn validate_parent(
    api_resource: &ApiResource,
    namespaced: bool,
    namespace: &str,
    permitted_custom: Option<&Result<BTreeSet<(String, String)>, kube::Error>>,
) -> Vec<String> {
    let mut errors = Vec::new();
    if namespaced && namespace.is_empty() {
        errors.push("namespace is required to use namespace-scoped ApplySet".to_owned());
    }
    if !is_builtin_parent(api_resource) {
        let key = (api_resource.group.clone(), api_resource.plural.clone());
        let permitted = match permitted_custom {
            Some(Ok(set)) => set.contains(&key),
            Some(Err(error)) => {
                errors.push(format!("identifying allowed custom resource parent types: {}", error_text(error)));
                false
            }
            None => false,
        };
        if !permitted {
            errors.push(format!(
                "resource {:?} is not permitted as an ApplySet parent",
                gvr_string(&api_resource.group, &api_resource.version, &api_resource.plural)
            ));
        }
    }
    errors
}

/// kubectl prints an aggregate of several errors one per line.
pub(super) fn aggregate(errors: Vec<String>) -> Result<(), Error> {
    if errors.is_empty() { Ok(()) } else { Err(Error::InvalidReference(errors.join("\n"))) }
}

/// `group/resource` of every CRD labelled `applyset.kubernetes.io/is-parent-type`.
pub(super) async fn permitted_custom_parents(client: &Client) -> Result<BTreeSet<(String, String)>, kube::Error> {
    let crds = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("apiextensions.k8s.io", "v1", "CustomResourceDefinition"),
        "customresourcedefinitions",
    );
    let listed = list_all(client, &crds, None, PARENT_CRD_LABEL).await?;
    Ok(listed
        .into_iter()
        .map(|crd| {
            // CRDs are named `<plural>.<group>`.
            let (resource, group) = crd.name.split_once('.').unwrap_or((&crd.name, ""));
            (group.to_owned(), resource.to_owned())
        })
        .collect())
}
