//! Patch metadata and the patch itself, with kubectl's provider chain (spec §2.2): the server's
//! OpenAPI v3 document of the object's group-version when its PATCH operation for the kind
//! accepts strategic merge patch, else OpenAPI v2, else — for kinds kubectl does not compile
//! in (custom resources, CRDs themselves, aggregated APIs) — the three-way JSON merge patch.

use applyset_merge::{SchemaRef, Value, json_merge};
use kube::core::GroupVersionKind;

use crate::causes::{Chain, with_causes};
use crate::cluster::{Cluster, PatchType};

/// How a patch is computed and applied.
#[derive(Debug, Clone)]
pub enum Engine {
    Strategic(SchemaRef),
    JsonMerge,
}

impl Engine {
    pub fn patch_type(&self) -> PatchType {
        match self {
            Engine::Strategic(_) => PatchType::Strategic,
            Engine::JsonMerge => PatchType::JsonMerge,
        }
    }

    /// The three-way patch from `original` (computed again from another original than the
    /// annotation, see [`crate::fields`]).
    pub fn three_way(&self, original: &Value, modified: &Value, current: &Value) -> applyset_merge::Result<Value> {
        match self {
            Engine::Strategic(schema) => {
                applyset_merge::create_three_way_merge_patch(original, modified, current, schema.as_ref(), true)
            }
            Engine::JsonMerge => json_merge::create_three_way_for_apply(original, modified, current),
        }
    }

    /// Applies a patch as the server would (used by `--dry-run=client` and `diff`).
    pub fn apply(&self, current: &Value, patch: &Value) -> applyset_merge::Result<Value> {
        match self {
            Engine::Strategic(schema) => applyset_merge::strategic_merge_patch(current, patch, schema.as_ref()),
            Engine::JsonMerge => json_merge::merge_patch(current, patch),
        }
    }
}

impl crate::fields::Merger for Engine {
    fn merge(&self, doc: &Value, patch: &Value) -> applyset_merge::Result<Value> {
        self.apply(doc, patch)
    }

    fn deletions(&self, original: &Value, modified: &Value) -> applyset_merge::Result<Value> {
        // With the manifest as the live object, the patch holds only the deletions.
        self.three_way(original, modified, modified)
    }

    fn merges_lists(&self) -> bool {
        matches!(self, Engine::Strategic(_))
    }
}

/// A computed three-way patch.
#[derive(Debug, Clone)]
pub struct ComputedPatch {
    pub patch: Value,
    pub engine: Engine,
}

/// The final provider failed. kubectl reports `<context> "<source>": <error>` with context
/// `creating patch with:\noriginal:\n…\nmodified:\n…\ncurrent:\n…\nfor:`.
#[derive(Debug, Clone)]
pub struct PatchError {
    pub context: String,
    pub error: String,
    /// The documents `context` quotes (see [`super::ObjectError::bodies`]).
    pub bodies: Vec<String>,
}

/// API groups whose types kubectl 1.33 compiles into its scheme (all of k8s.io/api, not
/// apiextensions.k8s.io nor apiregistration.k8s.io). Such kinds never reach the JSON merge
/// patch: kubectl falls back to Go struct tags instead.
const KUBECTL_SCHEME_GROUPS: &[&str] = &[
    "",
    "admissionregistration.k8s.io",
    "apiserverinternal.k8s.io",
    "apps",
    "authentication.k8s.io",
    "authorization.k8s.io",
    "autoscaling",
    "batch",
    "certificates.k8s.io",
    "coordination.k8s.io",
    "discovery.k8s.io",
    "events.k8s.io",
    "extensions",
    "flowcontrol.apiserver.k8s.io",
    "networking.k8s.io",
    "node.k8s.io",
    "policy",
    "rbac.authorization.k8s.io",
    "resource.k8s.io",
    "scheduling.k8s.io",
    "storage.k8s.io",
    "storagemigration.k8s.io",
];

pub fn in_kubectl_scheme(group: &str) -> bool {
    KUBECTL_SCHEME_GROUPS.contains(&group)
}

/// The three-way patch kubectl's `patchSimple` computes. Warnings of failed providers are
/// pushed to `warnings` in kubectl's words.
pub async fn compute_patch(
    cluster: &Cluster,
    gvk: &GroupVersionKind,
    original: &Value,
    modified: &Value,
    current: &Value,
    overwrite: bool,
    warnings: &mut Vec<String>,
) -> Result<ComputedPatch, PatchError> {
    let (g, v, k) = (gvk.group.as_str(), gvk.version.as_str(), gvk.kind.as_str());
    let mut v3_knows_kind_without_smp = false;
    // The strategic patch's own failure (a conflict under --overwrite=false): kubectl's
    // baked-in types would fail the same way.
    let mut last_error = None;

    // 1. OpenAPI v3 of the group-version.
    if let Some(doc) = cluster.openapi_v3(g, v).await {
        if doc.supports_strategic_merge(g, v, k) {
            if let Some(schema) = doc.schema_for_gvk(g, v, k) {
                match applyset_merge::create_three_way_merge_patch(
                    original,
                    modified,
                    current,
                    schema.as_ref(),
                    overwrite,
                ) {
                    Ok(patch) => return Ok(ComputedPatch { patch, engine: Engine::Strategic(schema) }),
                    Err(e) => {
                        warnings
                            .push(format!("warning: error calculating patch from openapi v3 spec: {e}", e = Chain(&e)));
                        last_error = Some(e);
                    }
                }
            }
        } else if doc.schema_for_gvk(g, v, k).is_some() {
            // The server documents the kind and says it takes no strategic merge patch (custom
            // resources): v2 would say the same, so its multi-megabyte download is skipped.
            v3_knows_kind_without_smp = true;
        }
    }

    // 2. OpenAPI v2.
    if (!v3_knows_kind_without_smp || in_kubectl_scheme(g))
        && let Some(doc) = cluster.openapi_v2().await
        && doc.supports_strategic_merge(g, v, k)
        && let Some(schema) = doc.schema_for_gvk(g, v, k)
    {
        match applyset_merge::create_three_way_merge_patch(original, modified, current, schema.as_ref(), overwrite) {
            Ok(patch) => return Ok(ComputedPatch { patch, engine: Engine::Strategic(schema) }),
            Err(e) => {
                warnings.push(format!("warning: error calculating patch from openapi spec: {e}", e = Chain(&e)));
                last_error = Some(e);
            }
        }
    }

    let creating_patch = |e: applyset_merge::Error| {
        let bodies = vec![json_line(original), json_line(modified), json_line(current)];
        PatchError {
            context: format!(
                "creating patch with:\noriginal:\n{}\nmodified:\n{}\ncurrent:\n{}\nfor:",
                bodies[0], bodies[1], bodies[2]
            ),
            error: with_causes(&e),
            bodies,
        }
    };

    // 3. Kinds compiled into kubectl would use Go struct tags, which we do not have: their
    //    OpenAPI metadata is the same, so the last error stands.
    if in_kubectl_scheme(g) {
        let error = last_error.unwrap_or_else(|| {
            applyset_merge::Error::Lookup(format!(
                "no usable patch metadata for {}/{}, Kind={} in the server's OpenAPI documents",
                g, v, k
            ))
        });
        return Err(creating_patch(error));
    }

    // 4. JSON merge patch.
    match json_merge::create_three_way_for_apply(original, modified, current) {
        Ok(patch) => Ok(ComputedPatch { patch, engine: Engine::JsonMerge }),
        Err(e) => Err(creating_patch(e)),
    }
}

fn json_line(v: &Value) -> String {
    let mut text = v.to_json_string();
    text.push('\n');
    text
}
