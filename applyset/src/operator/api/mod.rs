//! The `ApplySet` custom resource (`applyset.dev/v1alpha1`): the Rust types are the source of
//! the CRD (`applyset crd`, `crds/applyset.dev_applysets.yaml`).

use std::collections::BTreeMap;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::{CustomResource, CustomResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::keys::{APPROVE_PRUNE, PARENT_CRD_LABEL, RECONCILE_REQUESTED_AT};
use crate::source::SourceSpec;

mod decryption;
mod drift;
mod health;
mod record;
mod remote;
mod status;
pub use decryption::{Decryption, DecryptionProvider};
pub use drift::*;
pub use health::{DependencyReference, HealthCheckExpression, HealthCheckReference};
pub use record::{ApplySetRecord, ApplySetRecordSpec, MemberRecordRef};
pub use remote::{DEFAULT_KUBECONFIG_KEYS, KubeConfigReference, KubeConfigSecretRef};
pub use status::*;

pub const GROUP: &str = "applyset.dev";
pub const KIND: &str = "ApplySet";
pub const PLURAL: &str = "applysets";

/// Go duration syntax, as Flux and Argo CD users write intervals (`30s`, `5m`, `1h30m`).
pub const DURATION_PATTERN: &str = r"^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$";

/// Keeps the cluster in sync with a directory of manifests in a git repository, applying every
/// object exactly as `kubectl apply` (client-side) would.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "applyset.dev",
    version = "v1alpha1",
    kind = "ApplySet",
    plural = "applysets",
    singular = "applyset",
    shortname = "aset",
    category = "gitops",
    namespaced,
    status = "ApplySetStatus",
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Status","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].message"}"#,
    printcolumn = r#"{"name":"Revision","type":"string","jsonPath":".status.lastAppliedRevision"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct ApplySetSpec {
    /// Where the manifests come from.
    pub source: SourceSpec,
    /// How often to fetch, apply and check for drift (Go duration, e.g. `5m`).
    #[serde(default = "default_interval")]
    pub interval: String,
    /// How soon to retry after a failure; defaults to `interval`. Retries back off
    /// exponentially from this value, capped at `interval`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_interval: Option<String>,
    /// Time limit for the git fetch and for the whole apply (Go duration, default `2m`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<String>,
    /// Stop reconciling (nothing is fetched, applied or pruned) until set back to false.
    #[serde(default)]
    pub suspend: bool,
    /// Delete objects that were applied before and are no longer in the source.
    #[serde(default = "default_true")]
    pub prune: bool,
    /// Accept a source with no objects (and prune everything) instead of failing.
    #[serde(default)]
    pub allow_empty: bool,
    /// Delete and re-create objects whose patch fails with a conflict or an invalid
    /// (immutable) field, like `kubectl apply --force`.
    #[serde(default)]
    pub force: bool,
    /// Apply and prune as this ServiceAccount of the ApplySet's namespace (impersonation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_account_name: Option<String>,
    /// Apply to another cluster: its objects are applied, watched, health-checked and pruned
    /// there (the ApplySet and its status stay here), as `serviceAccountName` when set. The
    /// kubeconfig may not run programs or read files unless the controller allows it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kube_config: Option<KubeConfigReference>,
    /// What happens to the objects when the ApplySet is deleted: `Delete` (default when
    /// `prune` is true) or `Orphan`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deletion_policy: Option<DeletionPolicy>,
    /// How changes made to managed objects outside git are handled.
    #[serde(default)]
    pub drift: DriftSpec,
    /// Prune a Namespace that left git even when it holds objects this ApplySet does not
    /// manage (they are deleted with it). Off: such a Namespace is kept and reported in
    /// `status.pruneSkipped`. The ApplySet's own Namespace is never pruned.
    #[serde(default)]
    pub prune_non_empty_namespaces: bool,
    /// Limits on what one revision may prune. Over a limit, the run applies everything, prunes
    /// nothing and sets `Ready=False` (`PruneGuarded`, with the count and names) until the
    /// annotation `applyset.dev/approve-prune: <revision>` lets that revision through.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prune_guard: Option<PruneGuard>,
    /// How pruned objects' dependents go: `Background` (default, as kubectl), `Foreground`
    /// (the object goes after its dependents; the prune waits for it), `Orphan` (they stay).
    #[serde(default)]
    pub prune_propagation: PrunePropagation,
    /// What the last-applied annotation of a Secret records: `Plain` (its values, as kubectl
    /// does) or `Hashed` (an HMAC-SHA256 of each value under a key only the controller has).
    /// Unset: the controller's `--default-secrets`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secrets: Option<SecretsMode>,
    /// Variables substituted in the manifests (after a kustomize build), as Flux's
    /// `postBuild`: `${VAR}`, `${VAR:=default}`; `$${VAR}` for the literal text; objects
    /// labelled or annotated `kustomize.toolkit.fluxcd.io/substitute: disabled` are left alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub post_build: Option<PostBuild>,
    /// Fetch as soon as the git host reports a push, instead of at the next interval: the
    /// host posts to `status.webhookPath` (`/hook/<digest>`, derived from the token, name and
    /// namespace) on the controller's webhook port, signed with the token of this Secret
    /// (GitHub, GitLab, or a generic HMAC-SHA256 signature).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webhook: Option<WebhookSpec>,
    /// Decrypt SOPS-encrypted files of the source (age keys), as Flux's `spec.decryption`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decryption: Option<Decryption>,
    /// `Ready` only once every applied object is healthy (kstatus `Current`: a Deployment
    /// rolled out, a Job complete, a custom resource `Ready`), within `healthTimeout`.
    #[serde(default)]
    pub wait: bool,
    /// `Ready` only once these objects are healthy (when `wait` is off).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub health_checks: Vec<HealthCheckReference>,
    /// How long health is waited for after an apply (Go duration; default: `timeout`). Past
    /// it, `Ready=False` with reason `HealthCheckFailed` names the objects and why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health_timeout: Option<String>,
    /// CEL expressions judging the health of custom resources, per apiVersion and kind.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub health_check_exprs: Vec<HealthCheckExpression>,
    /// ApplySets that must be `Ready` before this one is applied (same namespace by default).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub depends_on: Vec<DependencyReference>,
}

/// `spec.webhook`.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WebhookSpec {
    /// A Secret of the ApplySet's namespace whose `token` key is the webhook's shared secret.
    pub secret_ref: crate::source::SecretRef,
}

#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PostBuild {
    /// Variables by name (they win over `substituteFrom`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub substitute: BTreeMap<String, String>,
    /// ConfigMaps and Secrets of the ApplySet's namespace whose data are variables (a later
    /// one wins over an earlier one); read as the identity the ApplySet applies with. They are
    /// as trusted as the ApplySet: whoever can edit them has its power.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub substitute_from: Vec<SubstituteReference>,
    /// Let a variable's value change the YAML structure of the document it lands in. Off (the
    /// default), a value may only stand where its `${VAR}` is, as one scalar (`replicas: ${R}`
    /// may become a number): a value that adds a key, an item, a line or a document (say
    /// `x, namespace: other` in `metadata: {name: ${NAME}}`) fails the build (`BuildFailed`,
    /// naming the variable, never its value). Defaults written in git are not checked. Even
    /// off, `substitute` and `substituteFrom` are as trusted as the ApplySet itself: whoever
    /// can edit those ConfigMaps and Secrets chooses images, names and any other scalar, with
    /// the identity the ApplySet applies with; on, they write any object.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub allow_structural_values: bool,
}

#[derive(Deserialize, Serialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SubstituteReference {
    /// `ConfigMap` (its `data`) or `Secret` (its values, decoded).
    pub kind: SubstituteKind,
    /// The object's name, in the ApplySet's namespace.
    pub name: String,
    /// A missing object is skipped instead of failing the run.
    #[serde(default)]
    pub optional: bool,
}

#[derive(Deserialize, Serialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum SubstituteKind {
    ConfigMap,
    Secret,
}

#[derive(Deserialize, Serialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema, clap::ValueEnum)]
pub enum SecretsMode {
    #[default]
    Plain,
    Hashed,
}

#[derive(Deserialize, Serialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PruneGuard {
    /// At most this many objects pruned by one revision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_objects: Option<u32>,
    /// At most this percentage (0–100) of the objects the ApplySet manages pruned by one
    /// revision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(max = 100))]
    pub max_percent: Option<u32>,
}

#[derive(Deserialize, Serialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum PrunePropagation {
    #[default]
    Background,
    Foreground,
    Orphan,
}

fn default_interval() -> String {
    "5m".into()
}

fn default_true() -> bool {
    true
}

#[derive(Deserialize, Serialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum DeletionPolicy {
    Delete,
    Orphan,
}

/// The CRD: generated from the types, then given what the derive cannot express (the
/// ApplySet parent-type label, validation rules).
pub fn crd() -> CustomResourceDefinition {
    let mut crd = serde_json::to_value(ApplySet::crd()).expect("CRD serializes");
    crd["metadata"]["labels"] = serde_json::json!({ PARENT_CRD_LABEL: "true" });
    let schema = &mut crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
    let spec = &mut schema["properties"]["spec"];
    for field in ["interval", "retryInterval", "timeout"] {
        spec["properties"][field]["pattern"] = DURATION_PATTERN.into();
    }
    // A floor the apiserver enforces; the controller's --min-interval (default 10s) is the
    // one that usually applies.
    spec["x-kubernetes-validations"] = serde_json::json!([
        { "rule": "duration(self.interval) >= duration('1s')", "message": "interval must be at least 1s", "fieldPath": ".interval" },
        { "rule": "!has(self.retryInterval) || duration(self.retryInterval) >= duration('1s')", "message": "retryInterval must be at least 1s", "fieldPath": ".retryInterval" }
    ]);
    spec["properties"]["serviceAccountName"]["minLength"] = 1.into();
    let source = &mut spec["properties"]["source"];
    source["properties"]["url"]["minLength"] = 1.into();
    source["properties"]["url"]["pattern"] = r"^(https?://|ssh://|file://|[A-Za-z0-9._-]+@[^:/]+:).+".into();
    source["properties"]["secretRef"]["properties"]["name"]["minLength"] = 1.into();
    source["properties"]["ref"]["x-kubernetes-validations"] = serde_json::json!([
        {
            "rule": "[has(self.branch), has(self.tag), has(self.semver), has(self.commit)].filter(x, x).size() <= 1 || (has(self.branch) && has(self.commit) && !has(self.tag) && !has(self.semver))",
            "message": "set one of branch, tag, semver or commit (commit may be combined with branch)"
        },
        { "rule": "!has(self.commit) || self.commit.matches('^[0-9a-fA-F]{40}$')", "message": "commit must be a full 40-hex-digit SHA-1" },
        { "rule": "!has(self.branch) || self.branch != ''", "message": "branch must not be empty" },
        { "rule": "!has(self.tag) || self.tag != ''", "message": "tag must not be empty" },
        { "rule": "!has(self.semver) || self.semver != ''", "message": "semver must not be empty" }
    ]);
    let ignore_items = &mut spec["properties"]["drift"]["properties"]["ignore"]["items"];
    ignore_items["properties"]["paths"]["minItems"] = 1.into();
    ignore_items["properties"]["paths"]["items"]["pattern"] = "^(/([^~]|~[01])*)+$".into();
    serde_json::from_value(crd).expect("CRD deserializes")
}

/// The CRD of [`ApplySetRecord`], the parts of large member records.
pub fn record_crd() -> CustomResourceDefinition {
    ApplySetRecord::crd()
}

/// `crds/applyset.dev_applysets.yaml`: both CRDs (`ApplySet`, then `ApplySetRecord`) as YAML,
/// with a header saying where they come from.
pub fn crd_yaml() -> String {
    let mut out = String::from("# Generated by `applyset crd` from applyset/src/operator/api/; do not edit.\n");
    for crd in [crd(), record_crd()] {
        out.push_str("---\n");
        out.push_str(&serde_yaml_ng::to_string(&crd).expect("CRD serializes as YAML"));
    }
    out
}

impl ApplySetSpec {
    /// See [`ApplySetStatus::last_applied_spec_digest`]: 16 hex digits of a SHA-256 of the
    /// fields that shape what is applied. Every field of the spec is named below, so a field
    /// added later does not compile until it is classified as shaping the apply or not. Those
    /// that do not (the identity, waits, health, force) still make the next run a full one,
    /// through `status.lastAppliedGeneration`: only the drift verdict of a steady run reads
    /// this digest.
    pub fn apply_digest(&self) -> String {
        let ApplySetSpec {
            source,
            prune,
            allow_empty,
            drift,
            secrets,
            post_build,
            decryption,
            kube_config,
            // How often and how long: not what is applied.
            interval: _,
            retry_interval: _,
            timeout: _,
            suspend: _,
            // How it is applied, waited for and deleted, not what: a change runs in full (a
            // new generation) without turning a Report-mode run into an apply.
            force: _,
            service_account_name: _,
            deletion_policy: _,
            prune_non_empty_namespaces: _,
            prune_guard: _,
            prune_propagation: _,
            webhook: _,
            wait: _,
            health_checks: _,
            health_timeout: _,
            health_check_exprs: _,
            depends_on: _,
        } = self;
        let crate::source::SourceSpec { url, path, reference: _, secret_ref: _, proxy_secret_ref: _ } = source;
        let DriftSpec { ignore, stale_fields, foreign_fields, mode: _ } = drift;
        let mut shaping = serde_json::json!({
            "url": url,
            "path": path,
            "prune": prune,
            "allowEmpty": allow_empty,
            "ignore": ignore,
            "staleFields": stale_fields,
            "foreignFields": foreign_fields,
        });
        // Fields added later count only when set: an upgrade must not make every Report-mode
        // ApplySet's next run a real apply.
        if let Some(secrets) = secrets {
            shaping["secrets"] = serde_json::json!(secrets);
        }
        if let Some(post_build) = post_build {
            shaping["postBuild"] = serde_json::json!(post_build);
        }
        if let Some(decryption) = decryption {
            shaping["decryption"] = serde_json::json!(decryption);
        }
        if let Some(kube_config) = kube_config {
            shaping["kubeConfig"] = serde_json::json!(kube_config);
        }
        crate::digest::short_sha256(&shaping.to_string())
    }
}

impl ApplySet {
    pub fn namespace_or_default(&self) -> String {
        self.metadata.namespace.clone().unwrap_or_else(|| "default".into())
    }

    pub fn name(&self) -> String {
        self.metadata.name.clone().unwrap_or_default()
    }

    /// `namespace/name`, for logs and metric bookkeeping (never a metric label).
    pub fn key(&self) -> String {
        format!("{}/{}", self.namespace_or_default(), self.name())
    }

    /// What its Secrets' last-applied annotations record: `spec.secrets`, or the controller's
    /// `default`; always `Hashed` under `spec.decryption` (a decrypted value is never recorded
    /// in clear). The one rule for the run and `applyset plan`.
    pub fn secrets_mode(&self, default: SecretsMode) -> SecretsMode {
        if self.spec.decryption.is_some() {
            return SecretsMode::Hashed;
        }
        self.spec.secrets.unwrap_or(default)
    }

    pub fn reconcile_requested_at(&self) -> Option<&str> {
        self.metadata.annotations.as_ref()?.get(RECONCILE_REQUESTED_AT).map(String::as_str)
    }

    /// The annotations a new value of which asks for a run now: `reconcile-requested-at`, and
    /// `approve-prune` (a guarded revision approved runs at once, not at the next retry).
    pub fn run_requests(&self) -> Option<String> {
        let annotations = self.metadata.annotations.as_ref()?;
        let requested = annotations.get(RECONCILE_REQUESTED_AT);
        let approved = annotations.get(APPROVE_PRUNE);
        (requested.is_some() || approved.is_some()).then(|| format!("{requested:?} {approved:?}"))
    }

    /// How prune and deletion delete objects (`spec.prunePropagation`).
    pub fn delete_options(&self) -> crate::applyset::DeleteOptions {
        use crate::applyset::Propagation;
        let mut options = crate::applyset::DeleteOptions::new(crate::cluster::DryRun::None);
        options.propagation = match self.spec.prune_propagation {
            PrunePropagation::Background => Propagation::Background,
            PrunePropagation::Foreground => Propagation::Foreground,
            PrunePropagation::Orphan => Propagation::Orphan,
        };
        options
    }

    /// What to do with the objects when the ApplySet is deleted.
    pub fn deletion_policy(&self) -> DeletionPolicy {
        self.spec.deletion_policy.unwrap_or(if self.spec.prune {
            DeletionPolicy::Delete
        } else {
            DeletionPolicy::Orphan
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crd_names_and_columns() {
        let crd = serde_json::to_value(crd()).unwrap();
        assert_eq!(crd["metadata"]["name"], "applysets.applyset.dev");
        assert_eq!(crd["metadata"]["labels"][PARENT_CRD_LABEL], "true");
        assert_eq!(crd["spec"]["names"]["shortNames"], serde_json::json!(["aset"]));
        assert_eq!(crd["spec"]["names"]["categories"], serde_json::json!(["gitops"]));
        assert_eq!(crd["spec"]["scope"], "Namespaced");
        let version = &crd["spec"]["versions"][0];
        assert_eq!(version["subresources"]["status"], serde_json::json!({}));
        let columns: Vec<&str> = version["additionalPrinterColumns"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        assert_eq!(columns, ["Ready", "Status", "Revision", "Age"]);
        let spec = &version["schema"]["openAPIV3Schema"]["properties"]["spec"];
        assert_eq!(spec["properties"]["interval"]["pattern"], DURATION_PATTERN);
        assert_eq!(spec["properties"]["drift"]["properties"]["mode"]["enum"], serde_json::json!(["Correct", "Report"]));
        assert_eq!(spec["required"], serde_json::json!(["source"]));
    }

    /// CI fails when the committed CRD is not what `applyset crd` prints.
    #[test]
    fn committed_crd_is_current() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../crds/applyset.dev_applysets.yaml");
        let committed = std::fs::read_to_string(path).expect("crds/applyset.dev_applysets.yaml exists");
        assert!(
            committed == crd_yaml(),
            "crds/applyset.dev_applysets.yaml is stale: run `cargo run -p applyset -- crd > crds/applyset.dev_applysets.yaml`"
        );
    }

    #[test]
    fn the_apply_digest_follows_only_the_fields_that_shape_the_apply() {
        let spec = |extra: serde_json::Value| {
            let mut base =
                serde_json::json!({"source": {"url": "https://example.com/r.git", "path": "app"}, "interval": "5m"});
            for (k, v) in extra.as_object().unwrap() {
                base[k] = v.clone();
            }
            serde_json::from_value::<ApplySetSpec>(base).unwrap().apply_digest()
        };
        let base = spec(serde_json::json!({}));
        assert_eq!(base.len(), 16);
        assert_eq!(
            base,
            spec(serde_json::json!({"interval": "1h", "suspend": true, "force": true, "drift": {"mode": "Report"}}))
        );
        assert_ne!(base, spec(serde_json::json!({"prune": false})));
        assert_ne!(base, spec(serde_json::json!({"source": {"url": "https://example.com/r.git", "path": "other"}})));
        assert_ne!(base, spec(serde_json::json!({"drift": {"ignore": [{"paths": ["/spec/replicas"]}]}})));
        assert_ne!(base, spec(serde_json::json!({"secrets": "Hashed"})));
        assert_ne!(base, spec(serde_json::json!({"postBuild": {"substitute": {"A": "1"}}})));
        // A spec that sets none of the later fields keeps the digest it had before they existed
        // (the seven fields only), so an upgrade does not turn Report-mode runs into applies.
        let before = serde_json::json!({
            "url": "https://example.com/r.git", "path": "app", "prune": true, "allowEmpty": false,
            "ignore": [], "staleFields": "Report", "foreignFields": "Ignore",
        });
        assert_eq!(base, crate::digest::short_sha256(&before.to_string()));
    }

    #[test]
    fn defaults_fill_an_almost_empty_spec() {
        let spec: ApplySetSpec =
            serde_json::from_value(serde_json::json!({"source": {"url": "https://example.com/repo.git"}})).unwrap();
        assert_eq!(spec.interval, "5m");
        assert!(spec.prune);
        assert!(!spec.suspend);
        assert_eq!(spec.drift.mode, DriftMode::Correct);
    }
}
