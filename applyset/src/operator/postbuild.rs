//! `spec.postBuild`: the variables substituted in the manifests (see
//! [`crate::manifest::postbuild`]), read from the spec and from ConfigMaps and Secrets of the
//! ApplySet's namespace as the identity the ApplySet applies with. Secret values are registered
//! for redaction before anything can quote them. Whoever can edit those ConfigMaps and Secrets
//! has the ApplySet's power: a value may be any scalar (an image, a name), and with
//! `allowStructuralValues` any YAML.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::Api;

use super::api::{ApplySet, PostBuild, SubstituteKind, SubstituteReference};
use super::reconcile::redact_owner;
use crate::cluster::Cluster;
use crate::cluster::list::error_text;
use crate::manifest::postbuild::{Variables, valid_name};
use crate::operator::reconcile::Stage;
use crate::operator::reconcile::StepError;
use crate::redact;

/// The variables, and a digest of them (a change of a referenced ConfigMap is a change of
/// what is applied, as a commit is); `None` without `spec.postBuild`.
pub async fn variables(applyset: &ApplySet, cluster: &Cluster) -> Result<Option<(Arc<Variables>, String)>, StepError> {
    let Some(post_build) = &applyset.spec.post_build else { return Ok(None) };
    let namespace = applyset.namespace_or_default();
    let mut found = Vec::with_capacity(post_build.substitute_from.len());
    for reference in &post_build.substitute_from {
        let what = reference_text(reference);
        match read(cluster, &namespace, reference).await {
            Ok(Some(data)) => found.push((reference.kind, data)),
            Ok(None) if reference.optional => continue,
            Ok(None) => {
                return Err(StepError::new(Stage::Build, format!("{what}: not found; nothing was applied or pruned")));
            }
            Err(error) => {
                let message = format!("{what}: {}; nothing was applied or pruned", error_text(&error));
                return Err(StepError::caused(Stage::Build, message, error));
            }
        }
    }
    let (vars, secrets) = assemble(post_build, found);
    redact::register(&redact_owner(applyset, "postbuild"), secrets);
    checked(vars).map(Some)
}

/// `spec.postBuild.substituteFrom ConfigMap NAME`, as messages name a reference.
pub(crate) fn reference_text(reference: &SubstituteReference) -> String {
    format!("spec.postBuild.substituteFrom {:?} {}", reference.kind, reference.name)
}

/// The data of one referenced object (a Secret's decoded), `None` when it does not exist.
async fn read(
    cluster: &Cluster,
    namespace: &str,
    reference: &SubstituteReference,
) -> Result<Option<BTreeMap<String, String>>, kube::Error> {
    match reference.kind {
        SubstituteKind::ConfigMap => {
            let api: Api<ConfigMap> = Api::namespaced(cluster.client().clone(), namespace);
            api.get_opt(&reference.name).await.map(|found| found.map(|cm| cm.data.unwrap_or_default()))
        }
        SubstituteKind::Secret => {
            let api: Api<Secret> = Api::namespaced(cluster.client().clone(), namespace);
            api.get_opt(&reference.name).await.map(|found| {
                found.map(|secret| {
                    let data = secret.data.unwrap_or_default();
                    data.into_iter().map(|(k, v)| (k, String::from_utf8_lossy(&v.0).into_owned())).collect()
                })
            })
        }
    }
}

/// The variables of `post_build` from the data of the `substituteFrom` objects that exist
/// (in their order, each with its kind: a later one wins), then `substitute` (which wins over
/// them all), each value without its newlines; and the Secrets' values, to redact. Pure:
/// `applyset build` gives it data read from local files.
pub(crate) fn assemble(
    post_build: &PostBuild,
    found: impl IntoIterator<Item = (SubstituteKind, BTreeMap<String, String>)>,
) -> (Variables, redact::Secrets) {
    let mut vars = Variables { allow_structural_values: post_build.allow_structural_values, ..Variables::default() };
    let mut secrets = redact::Secrets::new();
    for (kind, data) in found {
        for (name, value) in data {
            // Flux drops newlines from values (a value cannot add lines to the YAML).
            let value = value.replace('\n', "");
            if kind == SubstituteKind::Secret {
                secrets.add(&value);
            }
            vars.values.insert(name, value);
        }
    }
    for (name, value) in &post_build.substitute {
        vars.values.insert(name.clone(), value.replace('\n', ""));
    }
    (vars, secrets)
}

/// The variables once every name is valid, with the digest of their values.
pub(crate) fn checked(vars: Variables) -> Result<(Arc<Variables>, String), StepError> {
    if let Some(bad) = vars.values.keys().find(|name| !valid_name(name)) {
        return Err(StepError::new(
            Stage::InvalidSpec,
            format!(
                "spec.postBuild: variable name {bad:?} is invalid, must match ^[_[:alpha:]][_[:alpha:][:digit:]]*$"
            ),
        ));
    }
    // The values only: allowStructuralValues is in the spec, whose digest is taken apart.
    let digest = crate::digest::short_sha256(&serde_json::to_string(&vars.values).unwrap_or_default());
    Ok((Arc::new(vars), digest))
}
