//! `spec.postBuild`: the variables substituted in the manifests (see
//! [`crate::manifest::postbuild`]), read from the spec and from ConfigMaps and Secrets of the
//! ApplySet's namespace as the identity the ApplySet applies with. Secret values are registered
//! for redaction before anything can quote them. Whoever can edit those ConfigMaps and Secrets
//! has the ApplySet's power: a value may be any scalar (an image, a name), and with
//! `allowStructuralValues` any YAML.

use std::sync::Arc;

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::Api;

use super::api::{ApplySet, SubstituteKind};
use super::reconcile::redact_owner;
use super::status::{Stage, StepError};
use crate::applyset::error_text;
use crate::cluster::Cluster;
use crate::manifest::postbuild::{Variables, valid_name};
use crate::redact;

/// The variables, and a digest of them (a change of a referenced ConfigMap is a change of
/// what is applied, as a commit is); `None` without `spec.postBuild`.
pub async fn variables(applyset: &ApplySet, cluster: &Cluster) -> Result<Option<(Arc<Variables>, String)>, StepError> {
    let Some(post_build) = &applyset.spec.post_build else { return Ok(None) };
    let namespace = applyset.namespace_or_default();
    let mut vars = Variables { allow_structural_values: post_build.allow_structural_values, ..Variables::default() };
    let mut secrets = redact::Secrets::new();
    for reference in &post_build.substitute_from {
        let what = format!("spec.postBuild.substituteFrom {:?} {}", reference.kind, reference.name);
        let found = match reference.kind {
            SubstituteKind::ConfigMap => {
                let api: Api<ConfigMap> = Api::namespaced(cluster.client().clone(), &namespace);
                api.get_opt(&reference.name).await.map(|found| found.map(|cm| cm.data.unwrap_or_default()))
            }
            SubstituteKind::Secret => {
                let api: Api<Secret> = Api::namespaced(cluster.client().clone(), &namespace);
                api.get_opt(&reference.name).await.map(|found| {
                    found.map(|secret| {
                        let data = secret.data.unwrap_or_default();
                        data.into_iter().map(|(k, v)| (k, String::from_utf8_lossy(&v.0).into_owned())).collect()
                    })
                })
            }
        };
        let data = match found {
            Ok(Some(data)) => data,
            Ok(None) if reference.optional => continue,
            Ok(None) => {
                return Err(StepError::new(Stage::Build, format!("{what}: not found; nothing was applied or pruned")));
            }
            Err(error) => {
                let message = format!("{what}: {}; nothing was applied or pruned", error_text(&error));
                return Err(StepError::caused(Stage::Build, message, error));
            }
        };
        for (name, value) in data {
            // Flux drops newlines from values (a value cannot add lines to the YAML).
            let value = value.replace('\n', "");
            if reference.kind == SubstituteKind::Secret {
                secrets.add(&value);
            }
            vars.values.insert(name, value);
        }
    }
    redact::register(&redact_owner(applyset, "postbuild"), secrets);
    for (name, value) in &post_build.substitute {
        vars.values.insert(name.clone(), value.replace('\n', ""));
    }
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
    Ok(Some((Arc::new(vars), digest)))
}
