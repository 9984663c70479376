//! Legacy label-selector prune: `kubectl apply --prune -l SELECTOR` / `--prune --all`
//! without `--applyset` (kubectl 1.33, client-side apply).
//!
//! # API
//!
//! * [`parse_allowlist`] — `--prune-allowlist` values (`group/version/kind`, `core` = the empty
//!   group) → [`GroupVersionKind`]s; bad format → `invalid GroupVersionKind format: x, please
//!   follow <group/version/kind>`.
//! * [`check_allowlist`] — the REST mapping kubectl does while parsing the flags (before anything
//!   is applied): `no matches for kind "Foo" in version "apps/v1"`.
//! * [`validate_selection`] — `--prune` without `-l` and without `--all` is refused with kubectl's
//!   message.
//! * [`by_selector`] — the prune itself. **Call it only when every object applied successfully**
//!   (kubectl skips pruning on any apply error; the caller guarantees it). It LISTs every
//!   allow-listed namespaced kind in every visited namespace (sorted), then every cluster-scoped
//!   kind once, with `labelSelector` = the `-l` value (nothing for `--all`); an item is pruned iff
//!   it carries `kubectl.kubernetes.io/last-applied-configuration` and its UID was not visited.
//!   Deletes use `propagationPolicy` (Background by default), `dryRun=All` for server dry-run and
//!   nothing at all for client dry-run; each deletion prints
//!   `<kind-lower>[.<group>]/<name> pruned` (+ ` (dry run)` / ` (server dry run)`). Like kubectl it
//!   stops at the first error: `error pruning namespaced object <gvk>: <err>` /
//!   `error pruning nonNamespaced object <gvk>: <err>` / `error retrieving RESTMappings to prune:
//!   invalid resource …`.
//!
//! `visited_namespaces` = the namespace of every namespaced input object (even one that failed)
//! plus the `-n` namespace when it was given explicitly.
//!
//! It lives beside the ApplySet prune ([`super::prune`]), whose LIST, DELETE and result types
//! ([`PruneSummary`], [`DeleteOptions`]) it shares.
//!
//! Differences from kubectl: namespaces are visited in sorted order (kubectl: Go map order);
//! LISTs are paginated and up to four run at once; the klog deprecation warning is returned in
//! `warnings` as its message text only (no klog header); server warnings on LIST responses are
//! not shown.

use std::collections::{BTreeSet, HashSet};

use futures::StreamExt;
use kube::core::{ApiResource, GroupVersionKind};

use super::prune::delete_one;
use super::{DeleteOptions, Error, PruneSummary, PrunedObject};
use crate::apply::Visited;
use crate::cluster::Cluster;
use crate::cluster::list::{LIST_CONCURRENCY, Listed, fetch_object, list_all};
use crate::cluster::mapper::{ApiIndex, gvk_string, printed_name};

/// kubectl's deprecation warning, logged whenever the default allow-list is used with a
/// namespace (always, since it defaults to the context's).
pub const DEFAULT_ALLOWLIST_WARNING: &str = "Deprecated: kubectl apply will no longer prune non-namespaced resources by default when used with the --namespace flag in a future release. To preserve the current behaviour, list the resources you want to target explicitly in the --prune-allowlist flag.";

/// kubectl's refusal of `--prune` with neither `-l` nor `--all`.
pub const MISSING_SELECTOR_ERROR: &str = "all resources selected for prune without explicitly passing --all. To prune all resources, pass the --all flag. If you did not mean to prune all resources, specify a label selector";

/// A kind to prune, with its scope (kubectl's `pruneResource`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PruneType {
    pub gvk: GroupVersionKind,
    pub namespaced: bool,
}

impl PruneType {
    fn new(group: &str, version: &str, kind: &str, namespaced: bool) -> Self {
        Self { gvk: GroupVersionKind::gvk(group, version, kind), namespaced }
    }

    /// Go's `%v` of a pruneResource: `group/version, Kind=kind, Namespaced=bool`.
    pub fn describe(&self) -> String {
        format!("{}/{}, Kind={}, Namespaced={}", self.gvk.group, self.gvk.version, self.gvk.kind, self.namespaced)
    }
}

/// kubectl's default allow-list, in kubectl's order.
pub fn default_allowlist() -> Vec<PruneType> {
    vec![
        PruneType::new("", "v1", "ConfigMap", true),
        PruneType::new("", "v1", "Endpoints", true),
        PruneType::new("", "v1", "Namespace", false),
        PruneType::new("", "v1", "PersistentVolumeClaim", true),
        PruneType::new("", "v1", "PersistentVolume", false),
        PruneType::new("", "v1", "Pod", true),
        PruneType::new("", "v1", "ReplicationController", true),
        PruneType::new("", "v1", "Secret", true),
        PruneType::new("", "v1", "Service", true),
        PruneType::new("batch", "v1", "Job", true),
        PruneType::new("batch", "v1", "CronJob", true),
        PruneType::new("networking.k8s.io", "v1", "Ingress", true),
        PruneType::new("apps", "v1", "DaemonSet", true),
        PruneType::new("apps", "v1", "Deployment", true),
        PruneType::new("apps", "v1", "ReplicaSet", true),
        PruneType::new("apps", "v1", "StatefulSet", true),
    ]
}

/// Parses `--prune-allowlist` values (`group/version/kind`, `core` for the empty group).
pub fn parse_allowlist<S: AsRef<str>>(entries: &[S]) -> Result<Vec<GroupVersionKind>, Error> {
    entries
        .iter()
        .map(|entry| {
            let entry = entry.as_ref();
            let parts: Vec<&str> = entry.split('/').collect();
            let [group, version, kind] = parts[..] else {
                return Err(Error::AllowlistFormat { entry: entry.to_owned() });
            };
            let group = if group == "core" { "" } else { group };
            Ok(GroupVersionKind::gvk(group, version, kind))
        })
        .collect()
}

/// kubectl's flag check: `--prune` needs `-l` or `--all`.
pub fn validate_selection(selector: Option<&str>, all: bool) -> Result<(), Error> {
    if all && selector.is_some_and(|s| !s.is_empty()) {
        return Err(Error::SelectorWithAll);
    }
    if !all && selector.is_none_or(str::is_empty) {
        return Err(Error::MissingSelector);
    }
    Ok(())
}

/// Maps allow-list entries to prune types with their scope (pure part of [`check_allowlist`]).
pub fn map_allowlist(index: &ApiIndex, allowlist: &[GroupVersionKind]) -> Result<Vec<PruneType>, Error> {
    allowlist
        .iter()
        .map(|gvk| {
            let entry = index.for_gvk(&gvk.group, &gvk.version, &gvk.kind).map_err(Error::AllowlistKind)?;
            Ok(PruneType { gvk: gvk.clone(), namespaced: entry.namespaced })
        })
        .collect()
}

/// The REST mapping kubectl performs when it parses `--prune-allowlist` (before applying).
pub async fn check_allowlist(cluster: &Cluster, allowlist: &[GroupVersionKind]) -> Result<Vec<PruneType>, Error> {
    let index = cluster.api_index().await.map_err(Error::AllowlistDiscovery)?;
    map_allowlist(&index, allowlist)
}

/// Legacy prune candidates in one LIST result: objects with the last-applied annotation whose
/// UID was not visited, sorted by namespace and name.
pub fn select_candidates<'a>(items: &'a [Listed], visited: &HashSet<&str>) -> Vec<&'a Listed> {
    let mut selected: Vec<&Listed> =
        items.iter().filter(|item| item.has_last_applied && !visited.contains(item.uid.as_str())).collect();
    selected.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
    selected
}

/// The LISTs to make, in kubectl's order: every visited namespace (sorted) × every namespaced
/// type, then every cluster-scoped type.
pub fn plan<'a>(
    types: &'a [(PruneType, ApiResource)],
    visited_namespaces: &'a BTreeSet<String>,
) -> Vec<(&'a PruneType, &'a ApiResource, Option<&'a str>)> {
    let mut tasks = Vec::new();
    for ns in visited_namespaces {
        for (prune_type, api_resource) in types.iter().filter(|(t, _)| t.namespaced) {
            tasks.push((prune_type, api_resource, Some(ns.as_str())));
        }
    }
    for (prune_type, api_resource) in types.iter().filter(|(t, _)| !t.namespaced) {
        tasks.push((prune_type, api_resource, None));
    }
    tasks
}

/// Label-selector prune (see the module docs). `allowlist` empty = kubectl's default list.
/// `selector` is the `-l` value; with `all` it must be absent. Validate both beforehand with
/// [`validate_selection`]; this function refuses them too.
pub async fn by_selector(
    cluster: &Cluster,
    selector: Option<&str>,
    all: bool,
    allowlist: &[GroupVersionKind],
    visited: &[Visited],
    visited_namespaces: &BTreeSet<String>,
    options: &DeleteOptions,
) -> PruneSummary {
    let mut summary = PruneSummary::default();
    if let Err(error) = validate_selection(selector, all) {
        summary.errors.push(error);
        return summary;
    }
    let types = match prune_types(cluster, allowlist, &mut summary.warnings).await {
        Ok(types) => types,
        Err(error) => {
            summary.errors.push(error);
            return summary;
        }
    };
    let visited: HashSet<&str> = visited.iter().map(|v| v.uid.as_str()).collect();
    let tasks = plan(&types, visited_namespaces);
    if let Err(error) =
        delete_unvisited(cluster.client(), &tasks, selector.unwrap_or(""), &visited, options, &mut summary.pruned).await
    {
        summary.errors.push(error);
    }
    summary
}

/// The types to prune (the allowlist, or kubectl's default list with its warning), each mapped
/// to its resource.
async fn prune_types(
    cluster: &Cluster,
    allowlist: &[GroupVersionKind],
    warnings: &mut Vec<String>,
) -> Result<Vec<(PruneType, ApiResource)>, Error> {
    let index = cluster.api_index().await.map_err(Error::PruneDiscovery)?;
    let wanted: Vec<PruneType> = if allowlist.is_empty() {
        warnings.push(DEFAULT_ALLOWLIST_WARNING.to_owned());
        default_allowlist()
    } else {
        map_allowlist(&index, allowlist)?
    };
    wanted
        .into_iter()
        .map(|prune_type| match index.for_gvk(&prune_type.gvk.group, &prune_type.gvk.version, &prune_type.gvk.kind) {
            Ok(entry) => Ok((prune_type, entry.api_resource.clone())),
            Err(source) => Err(Error::PruneKind { kind: prune_type.describe(), source }),
        })
        .collect()
}

/// Lists each (type, namespace) task by the selector and deletes what this apply did not
/// visit, stopping at the first error as kubectl does. LISTs run a few at a time but are
/// consumed in order, so output and the first error are kubectl's.
async fn delete_unvisited(
    client: &kube::Client,
    tasks: &[(&PruneType, &ApiResource, Option<&str>)],
    selector: &str,
    visited: &HashSet<&str>,
    options: &DeleteOptions,
    pruned: &mut Vec<PrunedObject>,
) -> Result<(), Error> {
    let mut lists =
        futures::stream::iter(tasks.iter().map(|(_, api_resource, ns)| list_all(client, api_resource, *ns, selector)))
            .buffered(LIST_CONCURRENCY);
    let mut position = 0;
    while let Some(result) = lists.next().await {
        let (prune_type, api_resource, ns) = tasks[position];
        position += 1;
        let gvk = gvk_string(&prune_type.gvk.group, &prune_type.gvk.version, &prune_type.gvk.kind);
        let scope = if prune_type.namespaced { "namespaced" } else { "nonNamespaced" };
        let fail = |error: kube::Error| Error::request(format!("error pruning {scope} object {gvk}"), error);
        let items = result.map_err(fail)?;
        for item in select_candidates(&items, visited) {
            let object = match options.keep_objects {
                true => fetch_object(client, api_resource, item.namespace.as_deref(), &item.name).await,
                false => None,
            };
            delete_one(client, api_resource, ns, &item.name, options, None).await.map_err(fail)?;
            pruned.push(PrunedObject {
                name: printed_name(api_resource, &item.name),
                namespace: item.namespace.clone(),
                object,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::mapper::ApiEntry;

    #[test]
    fn allowlist_parsing() {
        assert_eq!(
            parse_allowlist(&["core/v1/ConfigMap", "apps/v1/Deployment"]).unwrap(),
            vec![GroupVersionKind::gvk("", "v1", "ConfigMap"), GroupVersionKind::gvk("apps", "v1", "Deployment")]
        );
        assert_eq!(
            parse_allowlist(&["v1/ConfigMap"]).unwrap_err().to_string(),
            "invalid GroupVersionKind format: v1/ConfigMap, please follow <group/version/kind>"
        );
        assert_eq!(
            parse_allowlist(&["a/b/c/d"]).unwrap_err().to_string(),
            "invalid GroupVersionKind format: a/b/c/d, please follow <group/version/kind>"
        );
        assert!(parse_allowlist::<&str>(&[]).unwrap().is_empty());
    }

    #[test]
    fn default_allowlist_is_kubectls() {
        let list = default_allowlist();
        assert_eq!(list.len(), 16);
        let cluster: Vec<&str> = list.iter().filter(|t| !t.namespaced).map(|t| t.gvk.kind.as_str()).collect();
        assert_eq!(cluster, ["Namespace", "PersistentVolume"]);
        assert_eq!(list[0].describe(), "/v1, Kind=ConfigMap, Namespaced=true");
        assert!(list.iter().any(|t| t.gvk == GroupVersionKind::gvk("networking.k8s.io", "v1", "Ingress")));
        assert!(list.iter().any(|t| t.gvk == GroupVersionKind::gvk("batch", "v1", "CronJob")));
    }

    #[test]
    fn selection_flags() {
        assert_eq!(validate_selection(None, false).unwrap_err().to_string(), MISSING_SELECTOR_ERROR);
        assert_eq!(validate_selection(Some(""), false).unwrap_err().to_string(), MISSING_SELECTOR_ERROR);
        assert_eq!(
            validate_selection(Some("a=b"), true).unwrap_err().to_string(),
            "cannot set --all and --selector at the same time"
        );
        assert!(validate_selection(Some("a=b"), false).is_ok());
        assert!(validate_selection(None, true).is_ok());
    }

    #[test]
    fn allowlist_mapping() {
        let ar =
            |g: &str, v: &str, k: &str, p: &str| ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(g, v, k), p);
        let index = ApiIndex::from_entries(vec![
            ApiEntry {
                api_resource: ar("", "v1", "ConfigMap", "configmaps"),
                namespaced: true,
                singular: "configmap".into(),
                short_names: vec![],
                preferred: true,
                verbs: vec!["list".into()],
            },
            ApiEntry {
                api_resource: ar("", "v1", "Namespace", "namespaces"),
                namespaced: false,
                singular: "namespace".into(),
                short_names: vec![],
                preferred: true,
                verbs: vec!["list".into()],
            },
        ]);
        let types =
            map_allowlist(&index, &parse_allowlist(&["core/v1/ConfigMap", "core/v1/Namespace"]).unwrap()).unwrap();
        assert_eq!(types.iter().map(|t| t.namespaced).collect::<Vec<_>>(), [true, false]);
        assert_eq!(
            map_allowlist(&index, &parse_allowlist(&["core/v1/Foo"]).unwrap()).unwrap_err().to_string(),
            r#"no matches for kind "Foo" in version "v1""#
        );
        assert_eq!(
            map_allowlist(&index, &parse_allowlist(&["apps/v1/Foo"]).unwrap()).unwrap_err().to_string(),
            r#"no matches for kind "Foo" in version "apps/v1""#
        );
    }

    #[test]
    fn candidates_need_annotation_and_no_visit() {
        let item = |name: &str, uid: &str, annotated: bool| Listed {
            name: name.into(),
            namespace: Some("ns".into()),
            uid: uid.into(),
            has_last_applied: annotated,
            ..Listed::default()
        };
        let items = vec![
            item("z", "1", true),
            item("kept-visited", "2", true),
            item("no-annotation", "3", false),
            item("a", "4", true),
        ];
        let visited: HashSet<&str> = ["2"].into();
        let names: Vec<&str> = select_candidates(&items, &visited).iter().map(|l| l.name.as_str()).collect();
        assert_eq!(names, ["a", "z"]);
    }

    #[test]
    fn plan_order() {
        let ar = |k: &str| ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("", "v1", k), &k.to_lowercase());
        let types = vec![
            (PruneType::new("", "v1", "ConfigMap", true), ar("ConfigMap")),
            (PruneType::new("", "v1", "Namespace", false), ar("Namespace")),
            (PruneType::new("", "v1", "Secret", true), ar("Secret")),
        ];
        let namespaces: BTreeSet<String> = ["b".to_owned(), "a".to_owned()].into();
        let order: Vec<(String, Option<&str>)> =
            plan(&types, &namespaces).into_iter().map(|(t, _, ns)| (t.gvk.kind.clone(), ns)).collect();
        assert_eq!(
            order,
            vec![
                ("ConfigMap".into(), Some("a")),
                ("Secret".into(), Some("a")),
                ("ConfigMap".into(), Some("b")),
                ("Secret".into(), Some("b")),
                ("Namespace".into(), None),
            ]
        );
    }
}
