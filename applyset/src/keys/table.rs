//! [`KEYS`]: every key of `keys.rs` described (where it goes, who writes and who reads it, what
//! it means), the source of the reference page `annotations.md`.

use super::*;

/// Where in an object's metadata a key goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyKind {
    Label,
    Annotation,
    /// Read from either (as Flux reads it).
    LabelOrAnnotation,
    Finalizer,
}

impl KeyKind {
    pub fn name(self) -> &'static str {
        match self {
            KeyKind::Label => "label",
            KeyKind::Annotation => "annotation",
            KeyKind::LabelOrAnnotation => "label or annotation",
            KeyKind::Finalizer => "finalizer",
        }
    }
}

/// One key as the reference describes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyDoc {
    pub key: &'static str,
    pub kind: KeyKind,
    /// The objects that carry it.
    pub on: &'static str,
    pub written_by: &'static str,
    pub read_by: &'static str,
    /// Its values and what they do.
    pub meaning: &'static str,
}

/// Wordings several rows share.
const CONTROLLER: &str = "the controller";
const CONTROLLER_AND_APPLY: &str = "the controller; `applyset apply --applyset`";

/// A do-not-prune mark of another tool: read, never written.
const fn prune_mark(key: &'static str, meaning: &'static str) -> KeyDoc {
    KeyDoc {
        key,
        kind: KeyKind::Annotation,
        on: "any object in git",
        written_by: "you (in git)",
        read_by: "the controller's prune; `applyset apply --prune`",
        meaning,
    }
}

/// An annotation of the cluster's own controllers (see [`CLUSTER_ANNOTATIONS`]).
const fn cluster_annotation(key: &'static str, on: &'static str) -> KeyDoc {
    KeyDoc {
        key,
        kind: KeyKind::Annotation,
        on,
        written_by: "the cluster's controllers",
        read_by: "the controller's watch cache",
        meaning: "A change to it alone starts no drift check (the cluster's own fields are never drift); a change made \
                  by hand is still found by the next interval's run.",
    }
}

/// Every key the controller and the CLI read or write.
pub const KEYS: &[KeyDoc] = &[
    KeyDoc {
        key: LAST_APPLIED_ANNOTATION,
        kind: KeyKind::Annotation,
        on: "every applied object",
        written_by: "the controller; `applyset apply`; kubectl",
        read_by: "the controller; `applyset apply`, `diff`, `plan`",
        meaning: "The manifest as last applied (JSON), as kubectl's client-side apply records it: the three-way patch \
                  deletes what left it. A Secret's values are HMAC-SHA256 digests under `spec.secrets: Hashed`.",
    },
    KeyDoc {
        key: PART_OF_LABEL,
        kind: KeyKind::Label,
        on: "every member of an ApplySet",
        written_by: CONTROLLER_AND_APPLY,
        read_by: "the controller's prune and watch cache; `applyset apply --prune`; kubectl",
        meaning: "The ID of the set the object belongs to (KEP-3659): prune lists members by it. An object of another \
                  set is left alone unless its manifest carries `applyset.dev/take-ownership`.",
    },
    KeyDoc {
        key: PARENT_ID_LABEL,
        kind: KeyKind::Label,
        on: "ApplySet parents (each ApplySet; the parent `--applyset` names)",
        written_by: CONTROLLER_AND_APPLY,
        read_by: "the controller; `applyset apply --applyset`; kubectl",
        meaning: "The set's ID, `applyset-<hash>-v1`, derived from the parent's name, namespace, kind and group.",
    },
    KeyDoc {
        key: TOOLING_ANNOTATION,
        kind: KeyKind::Annotation,
        on: "ApplySet parents",
        written_by: CONTROLLER_AND_APPLY,
        read_by: "the controller; `applyset apply --applyset`; kubectl",
        meaning: "The tool managing the set, `<tool>/<version>`: `applyset/v…` for the controller, `kubectl/v1.33.1` \
                  for `applyset apply` (which takes turns with `kubectl apply --applyset` on one set).",
    },
    KeyDoc {
        key: GROUP_KINDS_ANNOTATION,
        kind: KeyKind::Annotation,
        on: "ApplySet parents",
        written_by: CONTROLLER_AND_APPLY,
        read_by: "the controller; `applyset apply --applyset`; kubectl",
        meaning: "The members' kinds, `Kind.group` separated by commas: the kinds prune lists.",
    },
    KeyDoc {
        key: DEPRECATED_GROUP_RESOURCES_ANNOTATION,
        kind: KeyKind::Annotation,
        on: "ApplySet parents written by older tools",
        written_by: "older kubectl",
        read_by: "the controller; `applyset apply --applyset`",
        meaning: "The members' resources, `resource.group`: read only when `contains-group-kinds` is absent.",
    },
    KeyDoc {
        key: ADDITIONAL_NAMESPACES_ANNOTATION,
        kind: KeyKind::Annotation,
        on: "ApplySet parents",
        written_by: CONTROLLER_AND_APPLY,
        read_by: "the controller; `applyset apply --applyset`; kubectl",
        meaning: "The namespaces of members other than the parent's, separated by commas: the namespaces prune lists.",
    },
    KeyDoc {
        key: PARENT_CRD_LABEL,
        kind: KeyKind::Label,
        on: "the ApplySet CustomResourceDefinition",
        written_by: "`applyset crd` (and the chart, install.yaml)",
        read_by: "kubectl; `applyset apply --applyset`",
        meaning: "`true`: custom resources of this kind may be ApplySet parents, so `--applyset applysets.applyset.dev/NAME` \
                  names an ApplySet.",
    },
    KeyDoc {
        key: PRUNE_OPT_OUT,
        kind: KeyKind::Annotation,
        on: "any object in git",
        written_by: "you (in git)",
        read_by: "the controller's prune; `applyset apply --prune`",
        meaning: "`disabled`: when the object leaves git it is kept (orphaned, listed in `status.pruneSkipped`) \
                  rather than deleted.",
    },
    KeyDoc {
        key: TAKE_OWNERSHIP_ANNOTATION,
        kind: KeyKind::Annotation,
        on: "any object in git",
        written_by: "you (in git)",
        read_by: "the controller's apply",
        meaning: "`true`: the object may be taken from another ApplySet (a deliberate move); without it an object \
                  labelled as another set's is not changed.",
    },
    KeyDoc {
        key: RECONCILE_REQUESTED_AT,
        kind: KeyKind::Annotation,
        on: "ApplySets",
        written_by: "`applyset reconcile`, `applyset resume`, `applyset ui`; the webhook receiver; you",
        read_by: CONTROLLER,
        meaning: "Any new value (a timestamp, as Flux's `reconcile.fluxcd.io/requestedAt`) asks for a run now; the \
                  status records the value a run handled.",
    },
    KeyDoc {
        key: APPROVE_PRUNE,
        kind: KeyKind::Annotation,
        on: "ApplySets",
        written_by: "`applyset ui`; you",
        read_by: "the controller's prune guard",
        meaning: "A revision (`main@sha1:…`, the commit, or 7 or more of its first hex digits) allowed to prune past \
                  `spec.pruneGuard`; a new value asks for a run now.",
    },
    KeyDoc {
        key: FINALIZER,
        kind: KeyKind::Finalizer,
        on: "ApplySets",
        written_by: CONTROLLER,
        read_by: CONTROLLER,
        meaning: "Deleting the ApplySet waits until its objects are pruned (or orphaned, per `spec.deletionPolicy`).",
    },
    KeyDoc {
        key: SUBSTITUTE_OPT_OUT,
        kind: KeyKind::LabelOrAnnotation,
        on: "any object in git",
        written_by: "you (in git)",
        read_by: "the post-build substitution of the controller, `applyset build` and `applyset plan`",
        meaning: "`disabled`: `spec.postBuild` substitution leaves the object as written (Flux's key).",
    },
    KeyDoc {
        key: RECORD_OF_LABEL,
        kind: KeyKind::Label,
        on: "ApplySetRecord objects",
        written_by: CONTROLLER,
        read_by: CONTROLLER,
        meaning: "The UID of the ApplySet whose member record the part holds (a re-created ApplySet of the same name \
                  has its own parts).",
    },
    prune_mark(HELM_RESOURCE_POLICY, "`keep` (Helm's keep policy): never pruned, as `applyset.dev/prune: disabled`."),
    prune_mark(FLUX_PRUNE, "`disabled` (Flux's opt-out): never pruned, as `applyset.dev/prune: disabled`."),
    prune_mark(
        ARGOCD_SYNC_OPTIONS,
        "A list of options holding `Prune=false` (Argo CD's opt-out): never pruned, as `applyset.dev/prune: disabled`. \
         The other options are ignored.",
    ),
    prune_mark(
        KPT_DELETION,
        "`detach` (kpt's and cli-utils' policy): never pruned, as `applyset.dev/prune: disabled`.",
    ),
    KeyDoc {
        key: MANAGED_BY_LABEL,
        kind: KeyKind::Label,
        on: "the Secret of the key of hashed Secret annotations (`--secret-hash-key`)",
        written_by: CONTROLLER,
        read_by: "nothing (for you)",
        meaning: "`applyset`: the controller created this Secret.",
    },
    KeyDoc {
        key: CHANGE_CAUSE_ANNOTATION,
        kind: KeyKind::Annotation,
        on: "objects applied with `--record`",
        written_by: "`applyset apply --record` (deprecated, as in kubectl)",
        read_by: "`kubectl rollout history`",
        meaning: "The command that applied the object.",
    },
    KeyDoc {
        key: NAMESPACE_NAME_LABEL,
        kind: KeyKind::Label,
        on: "Namespaces",
        written_by: "the apiserver",
        read_by: "the controller's drift check",
        meaning: "The Namespace's name: never drift, never stale or foreign.",
    },
    cluster_annotation(CLUSTER_ANNOTATIONS[0], "Deployments"),
    cluster_annotation(CLUSTER_ANNOTATIONS[1], "PersistentVolumeClaims"),
    cluster_annotation(CLUSTER_ANNOTATIONS[2], "PersistentVolumeClaims"),
    cluster_annotation(CLUSTER_ANNOTATIONS[3], "PersistentVolumeClaims"),
    cluster_annotation(CLUSTER_ANNOTATIONS[4], "PersistentVolumeClaims"),
    cluster_annotation(CLUSTER_ANNOTATIONS[5], "PersistentVolumeClaims"),
];

#[cfg(test)]
mod tests {
    use super::*;

    /// The string literals of `source` that are whole keys (`prefix/name`, the prefix a DNS
    /// name), as a key constant, or an array of them, writes them.
    fn key_literals(source: &str) -> Vec<&str> {
        source
            .split('"')
            .skip(1)
            .step_by(2)
            .filter(|literal| {
                let Some((prefix, name)) = literal.split_once('/') else { return false };
                prefix.contains('.')
                    && prefix.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '.' || c == '-')
                    && !name.is_empty()
                    && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-' || c == '_')
            })
            .collect()
    }

    #[test]
    fn every_key_of_keys_rs_is_in_the_table() {
        let source = include_str!("../keys.rs");
        let code = source.split("#[cfg(test)]").next().unwrap_or(source);
        // Comments may quote keys in passing (and hold stray quotes): only code counts.
        let code: String =
            code.lines().filter(|line| !line.trim_start().starts_with("//")).collect::<Vec<_>>().join("\n");
        let literals = key_literals(&code);
        assert!(literals.len() >= KEYS.len(), "found only {literals:?} in keys.rs");
        for literal in literals {
            assert!(
                KEYS.iter().any(|doc| doc.key == literal),
                "{literal} is a key of keys.rs missing from KEYS (keys/table.rs): describe it there"
            );
        }
    }

    #[test]
    fn the_table_lists_each_key_once_and_says_what_it_is() {
        for (index, doc) in KEYS.iter().enumerate() {
            assert!(KEYS[..index].iter().all(|earlier| earlier.key != doc.key), "{} twice", doc.key);
            for (column, text) in [("on", doc.on), ("written by", doc.written_by), ("read by", doc.read_by)] {
                assert!(!text.trim().is_empty(), "{}: no {column}", doc.key);
            }
            assert!(doc.meaning.ends_with('.'), "{}: the meaning is a sentence", doc.key);
        }
        for mark in PruneMark::ALL {
            assert!(KEYS.iter().any(|doc| doc.key == mark.key()), "{mark:?}");
        }
    }

    #[test]
    fn key_literals_are_found_whole() {
        let source =
            r#"const A: &str = "applyset.dev/prune"; const B: &str = "applyset.dev/prune: disabled"; "no-slash""#;
        assert_eq!(key_literals(source), ["applyset.dev/prune"]);
    }
}
