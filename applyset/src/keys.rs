//! The well-known label and annotation keys, in one place: kubectl's (KEP-3659's ApplySet
//! keys and the last-applied annotation), the controller's own (`applyset.dev/…`), and the
//! do-not-prune marks of the tools teams migrate from. A leaf module: every layer may use it.
//!
//! [`KEYS`] describes each of them for the reference page (`docs/src/reference/annotations.md`);
//! a test fails when a key written here is missing from it.

mod table;

pub use table::{KEYS, KeyDoc, KeyKind};

/// The annotation holding the last applied configuration (kubectl's client-side apply).
pub const LAST_APPLIED_ANNOTATION: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// Member label carrying the set's ID (KEP-3659).
pub const PART_OF_LABEL: &str = "applyset.kubernetes.io/part-of";
/// Parent label carrying the set's ID.
pub const PARENT_ID_LABEL: &str = "applyset.kubernetes.io/id";
/// Parent annotation naming the managing tool (`<tool>/<version>`).
pub const TOOLING_ANNOTATION: &str = "applyset.kubernetes.io/tooling";
/// Parent annotation listing the members' group-kinds.
pub const GROUP_KINDS_ANNOTATION: &str = "applyset.kubernetes.io/contains-group-kinds";
/// Legacy parent annotation listing group-resources (read only when group-kinds is absent).
pub const DEPRECATED_GROUP_RESOURCES_ANNOTATION: &str = "applyset.kubernetes.io/contains-group-resources";
/// Parent annotation listing member namespaces other than the parent's.
pub const ADDITIONAL_NAMESPACES_ANNOTATION: &str = "applyset.kubernetes.io/additional-namespaces";
/// CRD label making the CRD's custom resources valid ApplySet parents.
pub const PARENT_CRD_LABEL: &str = "applyset.kubernetes.io/is-parent-type";

/// On an object in git, `disabled`: the controller keeps it (orphaned) when it leaves git.
pub const PRUNE_OPT_OUT: &str = "applyset.dev/prune";
/// In a manifest: this object may be taken from another ApplySet (a deliberate move).
pub const TAKE_OWNERSHIP_ANNOTATION: &str = "applyset.dev/take-ownership";
/// On an ApplySet, set to any new value (Flux uses a timestamp) to ask for a reconcile now.
pub const RECONCILE_REQUESTED_AT: &str = "applyset.dev/reconcile-requested-at";
/// On an ApplySet: lets one revision (`main@sha1:…`, the commit, or a prefix of 7 or more of
/// its hex digits) prune past `spec.pruneGuard`.
pub const APPROVE_PRUNE: &str = "applyset.dev/approve-prune";
/// Deleting an ApplySet waits for its objects to be pruned (or orphaned).
pub const FINALIZER: &str = "applyset.dev/finalizer";
/// On an object in git, `disabled`: post-build substitution leaves it as written (Flux's key).
pub const SUBSTITUTE_OPT_OUT: &str = "kustomize.toolkit.fluxcd.io/substitute";
/// On each `ApplySetRecord` part: the UID of the ApplySet it records (a re-created ApplySet of
/// the same name has its own parts).
pub const RECORD_OF_LABEL: &str = "applyset.dev/record-of";

/// Helm's keep policy (`keep`): a do-not-prune mark ([`PruneMark::Helm`]).
pub const HELM_RESOURCE_POLICY: &str = "helm.sh/resource-policy";
/// Flux's prune opt-out (`disabled`): a do-not-prune mark ([`PruneMark::Flux`]).
pub const FLUX_PRUNE: &str = "kustomize.toolkit.fluxcd.io/prune";
/// Argo CD's sync options (`Prune=false` among them): a do-not-prune mark ([`PruneMark::ArgoCd`]).
pub const ARGOCD_SYNC_OPTIONS: &str = "argocd.argoproj.io/sync-options";
/// kpt's and cli-utils' deletion policy (`detach`): a do-not-prune mark ([`PruneMark::Kpt`]).
pub const KPT_DELETION: &str = "client.lifecycle.config.k8s.io/deletion";

/// The recommended label naming the tool that manages an object: the controller's own Secret
/// (the key of hashed Secret annotations) carries `applyset`.
pub const MANAGED_BY_LABEL: &str = "app.kubernetes.io/managed-by";
/// kubectl's `--record` annotation: the command that last changed the object.
pub const CHANGE_CAUSE_ANNOTATION: &str = "kubernetes.io/change-cause";
/// The label the apiserver sets on every Namespace (its name): never drift.
pub const NAMESPACE_NAME_LABEL: &str = "kubernetes.io/metadata.name";

/// Annotations the cluster's own controllers write on objects a set applies, by themselves:
/// kube-controller-manager's Deployment revision (at each rollout, just after the apply that
/// started it), and the volume binder's and scheduler's marks on a PersistentVolumeClaim. A
/// change to them alone is like a change of status: those managers' fields are never drift,
/// stale or foreign, so checking at once would be a whole run for nothing (one written by hand
/// is still found by the next interval's run).
pub const CLUSTER_ANNOTATIONS: [&str; 6] = [
    "deployment.kubernetes.io/revision",
    "pv.kubernetes.io/bind-completed",
    "pv.kubernetes.io/bound-by-controller",
    "volume.kubernetes.io/storage-provisioner",
    "volume.beta.kubernetes.io/storage-provisioner",
    "volume.kubernetes.io/selected-node",
];

/// The do-not-prune marks the controller honours: its own, and those of the tools teams
/// migrate from (Helm's keep policy, Flux's and Argo CD's prune opt-outs, kpt's detach), so
/// that a manifest carrying one keeps its meaning here.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PruneMark {
    /// `applyset.dev/prune: disabled`.
    Applyset,
    /// `helm.sh/resource-policy: keep`.
    Helm,
    /// `kustomize.toolkit.fluxcd.io/prune: disabled`.
    Flux,
    /// `argocd.argoproj.io/sync-options` holding `Prune=false`.
    ArgoCd,
    /// `client.lifecycle.config.k8s.io/deletion: detach` (kpt, cli-utils).
    Kpt,
}

impl PruneMark {
    pub const ALL: [PruneMark; 5] =
        [PruneMark::Applyset, PruneMark::Helm, PruneMark::Flux, PruneMark::ArgoCd, PruneMark::Kpt];

    /// The annotation key.
    pub fn key(self) -> &'static str {
        match self {
            PruneMark::Applyset => PRUNE_OPT_OUT,
            PruneMark::Helm => HELM_RESOURCE_POLICY,
            PruneMark::Flux => FLUX_PRUNE,
            PruneMark::ArgoCd => ARGOCD_SYNC_OPTIONS,
            PruneMark::Kpt => KPT_DELETION,
        }
    }

    /// The mark as written in a manifest: `helm.sh/resource-policy: keep`.
    pub fn text(self) -> &'static str {
        match self {
            PruneMark::Applyset => "applyset.dev/prune: disabled",
            PruneMark::Helm => "helm.sh/resource-policy: keep",
            PruneMark::Flux => "kustomize.toolkit.fluxcd.io/prune: disabled",
            PruneMark::ArgoCd => "argocd.argoproj.io/sync-options: Prune=false",
            PruneMark::Kpt => "client.lifecycle.config.k8s.io/deletion: detach",
        }
    }

    /// Whether the annotation's value is this mark (Argo CD's is a comma-separated list of
    /// options, `Prune=false,ServerSideApply=true`).
    fn holds(self, value: &str) -> bool {
        match self {
            PruneMark::Applyset | PruneMark::Flux => value == "disabled",
            PruneMark::Helm => value == "keep",
            PruneMark::Kpt => value == "detach",
            PruneMark::ArgoCd => value.split(',').any(|option| option.trim() == "Prune=false"),
        }
    }

    /// The first mark among an object's annotations, looked up by key.
    pub fn find<'a>(annotation: impl Fn(&str) -> Option<&'a str>) -> Option<PruneMark> {
        PruneMark::ALL.into_iter().find(|mark| annotation(mark.key()).is_some_and(|value| mark.holds(value)))
    }
}
