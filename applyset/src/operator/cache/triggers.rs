//! Drift in seconds: a change the watch cache sees on a managed object (an out-of-band
//! `kubectl edit`, `scale` or `delete`) starts its ApplySet's drift check at once, instead of at
//! the next interval. Changes are collected for a moment first, so that a burst is one check
//! and the controller's own writes (whose answers may arrive after their watch events) are
//! recognised and start nothing.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use kube::runtime::reflector::Store;
use tokio::sync::mpsc;

use super::ManagedCache;
use super::store::Change;
use crate::applyset::applyset_id;
use crate::operator::api::{ApplySet, GROUP, KIND};
use crate::operator::context::Context;

/// How long changes are collected before the checks they ask for start.
pub const SETTLE: Duration = Duration::from_millis(150);

/// Runs, until the cache stops, the drift check of each ApplySet a burst of changes concerns:
/// one request per ApplySet per burst, asked through the schedule ([`Context::schedule`]).
pub async fn drift_checks(
    cache: Arc<ManagedCache>,
    mut changes: mpsc::UnboundedReceiver<Change>,
    applysets: Store<ApplySet>,
    ctx: Arc<Context>,
) {
    let mut triggers = Triggers { cache, applysets, ctx, ids: HashMap::new() };
    let mut held = Vec::new();
    loop {
        if held.is_empty() {
            let Some(first) = changes.recv().await else { break };
            held.push(first);
        }
        tokio::time::sleep(SETTLE).await;
        let mut burst = std::mem::take(&mut held);
        while let Ok(change) = changes.try_recv() {
            burst.push(change);
        }
        let checked = triggers.checked();
        let (now, later) = triggers.hold_during_runs(&checked, burst);
        tracing::debug!(judged = now.len(), held = later.len(), "managed object changes");
        held = later;
        for applyset in triggers.owners_of(&checked, now) {
            triggers.ctx.schedule.check_drift_now(&applyset);
        }
    }
}

struct Triggers {
    cache: Arc<ManagedCache>,
    applysets: Store<ApplySet>,
    ctx: Arc<Context>,
    /// Each ApplySet's ID (`namespace/name` → ID), computed once.
    ids: HashMap<String, String>,
}

impl Triggers {
    /// The ApplySets a change may start a check of, by ID (see [`checked_by_id`]), as the burst
    /// finds them.
    fn checked(&mut self) -> HashMap<String, Arc<ApplySet>> {
        checked_by_id(&self.applysets.state(), &mut self.ids)
    }

    /// Splits off the changes not known as the controller's own whose ApplySet is running:
    /// the answer to that run's write may still be on its way (a loaded apiserver can send the
    /// watch event first), so they are looked at again once the run has ended.
    fn hold_during_runs(
        &self,
        checked: &HashMap<String, Arc<ApplySet>>,
        burst: Vec<Change>,
    ) -> (Vec<Change>, Vec<Change>) {
        let running: HashSet<&str> = checked
            .iter()
            .filter(|(_, applyset)| self.ctx.schedule.is_running(&applyset.key()))
            .map(|(id, _)| id.as_str())
            .collect();
        if running.is_empty() {
            return (burst, Vec::new());
        }
        burst.into_iter().partition(|change| {
            change.status_only || !running.contains(change.set_id.as_str()) || self.cache.is_own(change)
        })
    }

    /// The ApplySets that own what changed, the controller's own writes left out; a change of
    /// status only concerns the ApplySets that wait for their objects' health (healthy ones too:
    /// `Ready` follows an object that fails later). The cache sees every labelled object its
    /// watches reach: changes of sets no ApplySet here checks (another controller's or shard's,
    /// a suspended one's) are neither acted on nor counted.
    fn owners_of(&self, checked: &HashMap<String, Arc<ApplySet>>, burst: Vec<Change>) -> Vec<Arc<ApplySet>> {
        let (mut changed, mut status_changed) = (BTreeSet::new(), BTreeSet::new());
        let judged = burst
            .into_iter()
            .filter(|c| checked.contains_key(&c.set_id))
            .map(|change| {
                let own = !change.status_only && self.cache.is_own(&change);
                (change, own)
            })
            .collect();
        for (change, own) in without_superseded(judged) {
            if change.status_only {
                status_changed.insert(change.set_id);
                continue;
            }
            tracing::debug!(set = %change.set_id, uid = %change.uid, version = ?change.resource_version, own, "managed object changed");
            self.ctx.metrics.watch_change(own);
            if own {
                // The controller's own write may start a rollout that the set waits on.
                status_changed.insert(change.set_id);
            } else {
                changed.insert(change.set_id);
            }
        }
        let mut found: Vec<Arc<ApplySet>> = changed.iter().map(|id| checked[id].clone()).collect();
        for applyset in &found {
            tracing::info!(applyset = %applyset.key(), "managed objects changed: checking for drift now");
        }
        let waiting = status_changed
            .difference(&changed)
            .map(|id| checked[id].clone())
            .filter(|a| crate::operator::waiting::waits(a));
        found.extend(waiting);
        found
    }
}

/// The burst without the changes by others that a later write of the controller's own to the
/// same object follows: a run read the object after that change and handled it (corrected or
/// reported it), so it asks for no new check. (Watch events of one object arrive in order; a
/// correcting run can read an edit before its event arrives.)
fn without_superseded(judged: Vec<(Change, bool)>) -> Vec<(Change, bool)> {
    let last_own: HashMap<&str, usize> =
        judged.iter().enumerate().filter(|(_, (_, own))| *own).map(|(at, (c, _))| (c.uid.as_str(), at)).collect();
    let kept: Vec<bool> = judged
        .iter()
        .enumerate()
        .map(|(at, (change, own))| {
            *own || change.status_only || last_own.get(change.uid.as_str()).is_none_or(|own_at| *own_at < at)
        })
        .collect();
    judged.into_iter().zip(kept).filter_map(|(judged, keep)| keep.then_some(judged)).collect()
}

/// The ApplySet's ID, computed once (`ids`: `namespace/name` → ID).
fn id_of<'i>(ids: &'i mut HashMap<String, String>, applyset: &ApplySet) -> &'i str {
    ids.entry(applyset.key())
        .or_insert_with(|| applyset_id(&applyset.name(), &applyset.namespace_or_default(), KIND, GROUP))
}

/// The ApplySets whose drift a change starts a check of, by ID: every one but the suspended (a
/// suspended ApplySet changes nothing, drift included).
fn checked_by_id(applysets: &[Arc<ApplySet>], ids: &mut HashMap<String, String>) -> HashMap<String, Arc<ApplySet>> {
    applysets
        .iter()
        .filter(|applyset| !applyset.spec.suspend)
        .map(|applyset| (id_of(ids, applyset).to_owned(), applyset.clone()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::operator::api::ApplySetSpec;

    fn applyset(namespace: &str, name: &str, suspend: bool) -> Arc<ApplySet> {
        let spec: ApplySetSpec = serde_json::from_value(serde_json::json!({
            "source": { "url": "https://git.example/repo.git" },
            "suspend": suspend,
        }))
        .expect("a valid spec");
        let mut applyset = ApplySet::new(name, spec);
        applyset.metadata.namespace = Some(namespace.into());
        Arc::new(applyset)
    }

    fn change(uid: &str, version: &str) -> Change {
        Change { set_id: "set".into(), uid: uid.into(), resource_version: Some(version.into()), status_only: false }
    }

    #[test]
    fn an_edit_the_controller_wrote_over_later_asks_for_no_check() {
        let burst = vec![
            (change("deployment", "1743"), false),
            (change("config", "1744"), true),
            (change("deployment", "1745"), true),
            (change("config", "1746"), false),
        ];
        let kept: Vec<(String, bool)> = without_superseded(burst)
            .into_iter()
            .map(|(c, own)| (format!("{}@{}", c.uid, c.resource_version.unwrap_or_default()), own))
            .collect();
        assert_eq!(
            kept,
            [("config@1744".to_owned(), true), ("deployment@1745".to_owned(), true), ("config@1746".to_owned(), false)],
            "the deployment's edit was read by the run that wrote 1745; the config's edit after 1744 was not"
        );
    }

    #[test]
    fn changes_are_checked_for_the_sets_here_that_are_not_suspended() {
        let sets = [applyset("team-a", "web", false), applyset("team-b", "web", false), applyset("team-a", "db", true)];
        let web_a = applyset_id("web", "team-a", KIND, GROUP);
        let web_b = applyset_id("web", "team-b", KIND, GROUP);
        let mut ids = HashMap::new();
        let checked = checked_by_id(&sets, &mut ids);
        let mut keys: Vec<_> = checked.iter().map(|(id, a)| (id.clone(), a.key())).collect();
        keys.sort();
        let mut expected = vec![(web_a, "team-a/web".to_owned()), (web_b, "team-b/web".to_owned())];
        expected.sort();
        assert_eq!(keys, expected, "a suspended set is not checked, nor a set of another controller");
        assert_eq!(ids.len(), 2, "the IDs of the checked sets are kept for the next burst");
    }
}
