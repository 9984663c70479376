//! Steps 2–4 of a run: the stages (Namespaces — the new ones waited for until the watch cache
//! has them, when there is one — then CRDs — waited for until `Established`, with
//! discovery refreshed — then everything else), each stage one paginated LIST per (resource,
//! namespace) — none for the objects a watch cache answers for — and then its objects
//! concurrently; results back in input order.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use applyset_merge::Value;
use futures::StreamExt;
use kube::core::GroupVersionKind;

use super::object::meta_str;
use super::one::{Live, apply_one};
use super::options::{ApplyOptions, Verb};
use super::plan::{Plan, Prepared};
use super::report::{ApplyReport, ObjectReport};
use crate::cluster::cache::{CacheRef, Cached, LiveText};
use crate::cluster::{Cluster, DryRun, Mapping, collecting_warnings};

/// One report slot per input object, filled as objects finish (or fail early).
type Slots = [Option<ObjectReport>];

/// Steps 2–4 of [`super::apply`]: the staged, concurrent writes of a [`Plan`].
pub async fn execute(cluster: &Cluster, plan: Plan, options: &ApplyOptions) -> ApplyReport {
    let Plan { items, mut report } = plan;
    let mut slots: Vec<Option<ObjectReport>> = vec![None; items.len()];
    let mut stages: [Vec<Prepared>; 3] = Default::default();
    for (index, item) in items.into_iter().enumerate() {
        match item {
            Ok(prepared) => stages[prepared.stage()].push(prepared),
            Err(failure) => slots[index] = Some(failure),
        }
    }

    let [namespaces, crds, rest] = stages;
    let namespace_names: Vec<(usize, Arc<Mapping>, String)> =
        namespaces.iter().filter_map(|item| Some((item.index, item.mapping.clone()?, item.name.clone()))).collect();
    run_stage(cluster, options, namespaces, &mut slots, &mut report).await;
    if options.dry_run == DryRun::None && !rest.is_empty() {
        let created = namespace_names
            .into_iter()
            .filter(|(index, _, _)| matches!(&slots[*index], Some(ObjectReport { result: Ok(Verb::Created), .. })));
        until_cache_sees(options, created.map(|(_, mapping, name)| (mapping, name)).collect()).await;
    }

    let crd_names: Vec<String> = crds.iter().map(|c| c.name.clone()).collect();
    let crd_indexes: Vec<usize> = crds.iter().map(|c| c.index).collect();
    run_stage(cluster, options, crds, &mut slots, &mut report).await;

    if options.dry_run == DryRun::None && !crd_names.is_empty() {
        settle_crds(cluster, options, &crd_names, &crd_indexes, &rest, &mut slots).await;
    }
    let rest = resolve_predicted(cluster, rest, &mut slots).await;
    run_stage(cluster, options, rest, &mut slots, &mut report).await;

    report.objects = slots.into_iter().map(|slot| slot.expect("every object has a report")).collect();
    report
}

/// How long the objects of a new Namespace wait at most for the watch cache to see it.
const NAMESPACE_SEEN_WITHIN: Duration = Duration::from_secs(1);

/// After the Namespace stage, when a watch cache answers: waits (at most
/// [`NAMESPACE_SEEN_WITHIN`]) until it has the Namespaces the stage created. The apiserver's
/// admission finds Namespaces in its own informer, fed by the same watch as ours: an object
/// created in a Namespace it has not seen yet makes it read the Namespace from etcd first
/// (`GET namespaces` by `system:apiserver` in a first apply of 100 × 100: 282–382 before the
/// wait, 204 with it; those left come later than our watch saw the Namespace).
async fn until_cache_sees(options: &ApplyOptions, mut created: Vec<(Arc<Mapping>, String)>) {
    let (Some(cache), Some(set_id)) = (options.cache.as_ref(), options.applyset_label.as_deref()) else {
        return;
    };
    let deadline = tokio::time::Instant::now() + NAMESPACE_SEEN_WITHIN;
    loop {
        // Only "no such object yet" is waited for: a cache that does not answer (its view is
        // incomplete, or it answers nothing for this run) is not waited for at all.
        created.retain(|(mapping, name)| {
            matches!(cache.cache.live(mapping, None, name, set_id), Some(Cached::Unlabelled))
        });
        if created.is_empty() || tokio::time::Instant::now() >= deadline {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// After the CRD stage: waits until the applied CRDs are `Established` (a warning on the first
/// CRD's report for each that is not in time) and, when later objects have kinds only those
/// CRDs define, until discovery serves them.
async fn settle_crds(
    cluster: &Cluster,
    options: &ApplyOptions,
    names: &[String],
    indexes: &[usize],
    rest: &[Prepared],
    slots: &mut Slots,
) {
    let applied: Vec<&String> = names
        .iter()
        .zip(indexes)
        .filter(|(_, index)| slots[**index].as_ref().is_some_and(|r| r.result.is_ok()))
        .map(|(name, _)| name)
        .collect();
    let (mut warnings, gone) = wait_for_crds(cluster, &applied, options.crd_timeout).await;
    if rest.iter().any(|p| p.mapping.is_none()) {
        // A gone CRD's kinds will never be served: one look at discovery, no waiting.
        let patience = if gone { Duration::ZERO } else { options.crd_timeout };
        refresh_until_known(cluster, rest, patience).await;
    }
    if let Some(first) = indexes.first().and_then(|i| slots[*i].as_mut()) {
        first.warnings.append(&mut warnings);
    }
}

/// Kinds known only from a CRD of this input must now resolve for real; those that do not
/// fail with kubectl's no-match message.
async fn resolve_predicted(cluster: &Cluster, rest: Vec<Prepared>, slots: &mut Slots) -> Vec<Prepared> {
    let mut resolved = Vec::with_capacity(rest.len());
    let mut unresolved = Vec::new();
    for mut item in rest {
        if item.mapping.is_none() {
            match cluster.mapping(&item.gvk).await {
                Ok(mapping) => item.mapping = Some(Arc::new(mapping)),
                Err(_) => {
                    unresolved.push((item.index, item.report(Err(item.no_match()), Vec::new())));
                    continue;
                }
            }
        }
        resolved.push(item);
    }
    for (index, failure) in unresolved {
        slots[index] = Some(failure);
    }
    resolved
}

/// Polls the CRDs until each has `Established=True`; returns warnings for those that did not
/// in time, and whether one is gone or going (its kinds will never be served). One gone or
/// going ends its wait without a word: kubectl says nothing of it either, and its custom
/// resources fail with their own errors.
async fn wait_for_crds(cluster: &Cluster, names: &[&String], timeout: Duration) -> (Vec<String>, bool) {
    let gvk = GroupVersionKind::gvk("apiextensions.k8s.io", "v1", "CustomResourceDefinition");
    let Ok(mapping) = cluster.mapping(&gvk).await else { return (Vec::new(), false) };
    let deadline = tokio::time::Instant::now() + timeout;
    let waits = names.iter().map(|name| {
        let mapping = mapping.clone();
        async move {
            loop {
                let state = match cluster.get(&mapping, None, name).await {
                    Ok(crd) => CrdState::of(Some(&crd)),
                    Err(error) if error.is_not_found() => CrdState::of(None),
                    Err(_) => CrdState::Pending,
                };
                match state {
                    CrdState::Established => return (None, false),
                    CrdState::Deleting | CrdState::Deleted => return (None, true),
                    CrdState::Pending if tokio::time::Instant::now() < deadline => {
                        tokio::time::sleep(Duration::from_millis(200)).await;
                    }
                    CrdState::Pending => {
                        let warning = format!(
                            "Warning: customresourcedefinition.apiextensions.k8s.io/{name} is not Established after {timeout:?}; its custom resources may fail"
                        );
                        return (Some(warning), false);
                    }
                }
            }
        }
    });
    let ended = futures::future::join_all(waits).await;
    let gone = ended.iter().any(|(_, gone)| *gone);
    (ended.into_iter().filter_map(|(warning, _)| warning).collect(), gone)
}

/// Where an applied CRD is on its way to serving its kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CrdState {
    Established,
    /// Not yet, or not readable just now: worth another look.
    Pending,
    /// Deleted since it was applied (by hand, or a drift run raced a `kubectl delete`): it
    /// will never be Established, so waiting would only hold the run until its timeout.
    Deleted,
    /// Being deleted (an Established one keeps saying so meanwhile): its kinds go with it, so
    /// discovery is not waited on for them either.
    Deleting,
}

impl CrdState {
    /// The state of a CRD as read (`None`: not found).
    fn of(crd: Option<&Value>) -> CrdState {
        match crd {
            None => CrdState::Deleted,
            Some(crd) if terminating(crd) => CrdState::Deleting,
            Some(crd) if established(crd) => CrdState::Established,
            Some(_) => CrdState::Pending,
        }
    }
}

fn established(crd: &Value) -> bool {
    crd.as_object()
        .and_then(|o| o.get("status"))
        .and_then(Value::as_object)
        .and_then(|s| s.get("conditions"))
        .and_then(Value::as_array)
        .is_some_and(|conditions| {
            conditions.iter().filter_map(Value::as_object).any(|c| {
                c.get("type").and_then(Value::as_str) == Some("Established")
                    && c.get("status").and_then(Value::as_str) == Some("True")
            })
        })
}

fn terminating(crd: &Value) -> bool {
    crd.as_object()
        .and_then(|o| o.get("metadata"))
        .and_then(Value::as_object)
        .is_some_and(|m| m.get("deletionTimestamp").is_some_and(|t| !matches!(t, Value::Null)))
}

/// Refreshes discovery until every predicted kind of `items` is served (discovery can lag a
/// CRD's Established condition briefly), or the timeout passes.
async fn refresh_until_known(cluster: &Cluster, items: &[Prepared], timeout: Duration) {
    let deadline = tokio::time::Instant::now() + timeout.min(Duration::from_secs(30));
    loop {
        if cluster.refresh_discovery().await.is_err() {
            return;
        }
        let mut all_known = true;
        for item in items.iter().filter(|p| p.mapping.is_none()) {
            if !cluster.knows(&item.gvk).await.unwrap_or(false) {
                all_known = false;
                break;
            }
        }
        if all_known || tokio::time::Instant::now() >= deadline {
            return;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

type ListKey = (String, String, String, Option<String>);

fn list_key(mapping: &Mapping, namespace: &Option<String>) -> ListKey {
    let r = &mapping.resource;
    (r.group.clone(), r.version.clone(), r.plural.clone(), if mapping.namespaced { namespace.clone() } else { None })
}

/// Per (resource, namespace): its objects by name, or `None` when the LIST failed.
type Listed = HashMap<ListKey, Option<HashMap<String, LiveText>>>;

/// Applies one stage: LIST per (resource, namespace), then every object concurrently.
async fn run_stage(
    cluster: &Cluster,
    options: &ApplyOptions,
    items: Vec<Prepared>,
    slots: &mut Slots,
    report: &mut ApplyReport,
) {
    if items.is_empty() {
        return;
    }
    let concurrency = options.concurrency.max(1);
    // No copies of the stage (20,000 planned objects are tens of megabytes): each object is
    // moved from the stage to its apply, and each report straight to its slot.
    let (known, unknown): (Vec<_>, Vec<_>) =
        items.into_iter().map(|item| (cached(options, &item), item)).partition(|(live, _)| live.is_some());
    let mut lists = {
        let unknown = unknown.iter().map(|(_, item)| item);
        list_stage(cluster, unknown, concurrency, options.cache.as_ref()).await
    };
    let listed = unknown.into_iter().map(|(_, item)| {
        let key = list_key(item.mapping.as_ref().expect("resolved"), &item.namespace);
        let live = match lists.get_mut(&key) {
            Some(Some(found)) => match found.remove(&item.name) {
                Some(text) => Live::Text(text),
                None => Live::Listed(None),
            },
            _ => Live::Unknown,
        };
        (item, live)
    });
    let work = known.into_iter().map(|(live, item)| (item, live.expect("partitioned"))).chain(listed);
    let mut outcomes = futures::stream::iter(work)
        .map(|(item, live)| async move {
            let span = tracing::debug_span!("apply_object", object = %item.display(), source = %item.source);
            let applied = tracing::Instrument::instrument(apply_one(cluster, options, &item, live), span);
            let ((mut object_report, visited), server_warnings) = collecting_warnings(applied).await;
            // The missing-annotation warning comes before the patch's server warnings.
            object_report.warnings.extend(server_warnings);
            (item.index, object_report, visited)
        })
        .buffer_unordered(concurrency);
    let mut visited = Vec::new();
    while let Some((index, object_report, seen)) = outcomes.next().await {
        slots[index] = Some(object_report);
        visited.extend(seen.map(|seen| (index, seen)));
    }
    // In input order, whatever order the applies finished in.
    visited.sort_unstable_by_key(|(index, _)| *index);
    report.visited.extend(visited.into_iter().map(|(_, seen)| seen));
}

/// What the caller's watch cache knows of the object, when it answers for it: its own object,
/// or (when trusted) that no labelled object has the name, so that a create is tried and one
/// that exists unlabelled is read after the conflict, as when a LIST raced a create.
fn cached(options: &ApplyOptions, item: &Prepared) -> Option<Live> {
    let cache = options.cache.as_ref()?;
    let set_id = options.applyset_label.as_deref()?;
    let mapping = item.mapping.as_ref()?;
    match cache.cache.live(mapping, item.namespace.as_deref(), &item.name, set_id)? {
        Cached::Found(object) => Some(Live::Text(object)),
        Cached::Unlabelled if cache.trust_unlabelled => Some(Live::Listed(None)),
        Cached::Unlabelled => None,
    }
}

/// Objects of one (resource, namespace) up to which they are read with a GET each (as kubectl
/// does) rather than a LIST: a LIST reads the whole namespace's objects of the kind, which in a
/// namespace shared by many apps (a monorepo's) is thousands for a few.
const GET_EACH_UP_TO: usize = 8;

/// One paginated LIST per (resource, namespace) of the stage with more than [`GET_EACH_UP_TO`]
/// objects, instead of one GET per object; each version read is told to the watch cache
/// (`seen`), each object kept as text. Smaller groups are left out (their objects are read
/// with a GET each when applied).
async fn list_stage<'a>(
    cluster: &Cluster,
    items: impl Iterator<Item = &'a Prepared>,
    concurrency: usize,
    cache: Option<&CacheRef>,
) -> Listed {
    let mut groups: HashMap<ListKey, (Arc<Mapping>, Option<String>, usize)> = HashMap::new();
    for item in items {
        let mapping = item.mapping.as_ref().expect("resolved before its stage");
        let group = groups
            .entry(list_key(mapping, &item.namespace))
            .or_insert_with(|| (mapping.clone(), item.namespace.clone(), 0));
        group.2 += 1;
    }
    let groups = groups.into_iter().filter(|(_, (_, _, count))| *count > GET_EACH_UP_TO);
    futures::stream::iter(groups.map(|(key, (mapping, namespace, _))| (key, (mapping, namespace))))
        .map(|(key, (mapping, namespace))| async move {
            let namespace = if mapping.namespaced { namespace } else { None };
            let mut found = HashMap::new();
            let listed = cluster.list_each(&mapping, namespace.as_deref(), None, |item| {
                if let Some(cache) = cache {
                    cache.cache.seen(&item);
                }
                let Some(name) = meta_str(&item, "name") else { return };
                // The watch cache's text of the same version, shared, else a copy of its own.
                let shared = cache
                    .zip(meta_str(&item, "resourceVersion"))
                    .and_then(|(cache, version)| cache.cache.at_version(&mapping, namespace.as_deref(), name, version));
                let text = shared.unwrap_or_else(|| LiveText::new(item.to_json_string().into(), None));
                found.insert(name.to_owned(), text);
            });
            let listed = listed.await.ok().map(|()| found);
            (key, listed)
        })
        .buffer_unordered(concurrency)
        .collect()
        .await
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use kube::core::ApiResource;

    use super::*;
    use crate::cluster::cache::{CacheRef, ObjectCache};
    use crate::cluster::list::Listed;

    /// A watch cache that has seen a Namespace once it was asked `seen_after` times
    /// (`None`: never), or that does not answer at all.
    struct Seeing {
        asked: AtomicUsize,
        seen_after: Option<usize>,
        answers: bool,
    }

    impl ObjectCache for Seeing {
        fn live(&self, _: &Mapping, _: Option<&str>, _: &str, _: &str) -> Option<Cached> {
            let asked = self.asked.fetch_add(1, Ordering::SeqCst) + 1;
            match self.seen_after {
                _ if !self.answers => None,
                Some(after) if asked > after => Some(Cached::Found(LiveText::new("{}".into(), None))),
                _ => Some(Cached::Unlabelled),
            }
        }
        fn members(&self, _: &ApiResource, _: Option<&str>, _: &str) -> Option<Vec<Listed>> {
            None
        }
        fn wrote(&self, _: &Value) {}
        fn deleted(&self, _: &str) {}
    }

    fn namespace_mapping() -> Mapping {
        Mapping {
            resource: ApiResource {
                group: String::new(),
                version: "v1".into(),
                api_version: "v1".into(),
                kind: "Namespace".into(),
                plural: "namespaces".into(),
            },
            namespaced: false,
        }
    }

    /// How many times `until_cache_sees` asked the cache, and how long it waited (tokio's
    /// paused clock: no real time passes).
    async fn wait_with(seen_after: Option<usize>, answers: bool) -> (usize, Duration) {
        let cache = Arc::new(Seeing { asked: AtomicUsize::new(0), seen_after, answers });
        let options = ApplyOptions {
            cache: Some(CacheRef { cache: cache.clone(), trust_unlabelled: true }),
            applyset_label: Some("applyset-x-v1".into()),
            ..ApplyOptions::default()
        };
        let started = tokio::time::Instant::now();
        until_cache_sees(&options, vec![(Arc::new(namespace_mapping()), "shop".into())]).await;
        (cache.asked.load(Ordering::SeqCst), started.elapsed())
    }

    #[tokio::test(start_paused = true)]
    async fn a_new_namespaces_objects_wait_until_the_watch_cache_has_it() {
        let (asked, waited) = wait_with(Some(3), true).await;
        assert_eq!(asked, 4);
        assert!(waited >= Duration::from_millis(15) && waited < NAMESPACE_SEEN_WITHIN, "{waited:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn the_wait_is_bounded_and_skipped_when_the_cache_does_not_answer() {
        let (_, waited) = wait_with(None, true).await;
        assert!(waited >= NAMESPACE_SEEN_WITHIN && waited < NAMESPACE_SEEN_WITHIN + Duration::from_millis(10));
        let (asked, waited) = wait_with(None, false).await;
        assert_eq!((asked, waited), (1, Duration::ZERO));
    }

    /// A CRD that is gone or going is not waited for: it will never be Established.
    #[test]
    fn a_crd_gone_or_going_ends_the_wait() {
        let crd = |status: &str, metadata: &str| {
            let text = format!(
                r#"{{"kind":"CustomResourceDefinition","metadata":{{"name":"widgets.example.test"{metadata}}}{status}}}"#
            );
            Value::from_json_str(&text).expect("JSON")
        };
        let established = r#","status":{"conditions":[{"type":"Established","status":"True"}]}"#;
        let terminating = r#","deletionTimestamp":"2026-12-08T00:00:00Z""#;
        assert_eq!(CrdState::of(None), CrdState::Deleted);
        assert_eq!(CrdState::of(Some(&crd("", ""))), CrdState::Pending);
        assert_eq!(CrdState::of(Some(&crd(established, ""))), CrdState::Established);
        assert_eq!(CrdState::of(Some(&crd("", terminating))), CrdState::Deleting);
        // A terminating CRD keeps Established=True while its objects are removed (as the
        // apiserver shows it); it is going all the same.
        assert_eq!(CrdState::of(Some(&crd(established, terminating))), CrdState::Deleting);
    }
}
