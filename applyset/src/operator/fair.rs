//! Runs shared fairly between namespaces (tenants): at most `--concurrent-reconciles` runs go
//! at once, and a slot that frees goes to the waiting run whose namespace has the fewest runs
//! going, then whose namespace had its last turn longest ago (namespaces take turns), then
//! first come, first served. So 500 ApplySets of one tenant falling due
//! together do not queue another tenant's run behind them: it takes the next free slot.
//!
//! kube-runtime hands every due ApplySet to a reconcile at once (its own limit is off); the
//! runs wait here, which costs a small future each.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::oneshot;

/// The slots, and who waits for one.
pub struct FairGate {
    slots: usize,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// Runs going, per namespace (namespaces with none are left out).
    running: HashMap<String, usize>,
    /// Runs waiting, in arrival order: the namespace, and where its slot is handed over.
    waiting: VecDeque<(String, oneshot::Sender<()>)>,
    /// Slots given so far, and the number of the last one each namespace got.
    turns: u64,
    last_turn: HashMap<String, u64>,
}

impl State {
    /// Counts a slot given to `namespace`.
    fn grant(&mut self, namespace: &str) {
        *self.running.entry(namespace.to_owned()).or_default() += 1;
        self.turns += 1;
        self.last_turn.insert(namespace.to_owned(), self.turns);
    }
}

/// A run's slot: the next waiting run gets it when this is dropped.
pub struct Slot {
    gate: Arc<FairGate>,
    namespace: String,
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.gate.leave(&self.namespace);
    }
}

impl FairGate {
    pub fn new(slots: usize) -> Arc<FairGate> {
        Arc::new(FairGate { slots: slots.max(1), state: Mutex::default() })
    }

    /// A slot for a run of an ApplySet of `namespace`, once one is free and it is its turn.
    pub async fn enter(self: &Arc<Self>, namespace: &str) -> Slot {
        let handed_over = {
            let mut state = self.lock();
            if state.running.values().sum::<usize>() < self.slots {
                state.grant(namespace);
                None
            } else {
                let (sender, receiver) = oneshot::channel();
                state.waiting.push_back((namespace.to_owned(), sender));
                Some(receiver)
            }
        };
        if let Some(receiver) = handed_over {
            let mut waiting = Waiting { gate: self, namespace, receiver };
            // The slot comes counted. (A sender is only dropped unsent with the gate.)
            let _ = (&mut waiting.receiver).await;
        }
        Slot { gate: self.clone(), namespace: namespace.to_owned() }
    }

    /// Runs going and runs waiting, over every namespace.
    pub fn load(&self) -> (usize, usize) {
        let state = self.lock();
        (state.running.values().sum(), state.waiting.len())
    }

    fn leave(&self, namespace: &str) {
        let mut state = self.lock();
        release(&mut state.running, namespace);
        loop {
            let waiting = state.waiting.iter().map(|(namespace, _)| namespace.as_str());
            let Some(index) = next_turn(&state.running, &state.last_turn, waiting) else { break };
            let (namespace, sender) = state.waiting.remove(index).expect("an index of the queue");
            state.grant(&namespace);
            if sender.send(()).is_ok() {
                break;
            }
            // That run is gone (its reconcile was dropped while waiting): the next one.
            release(&mut state.running, &namespace);
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A run waiting for its turn: dropped after its slot was handed over but before it took it
/// (its reconcile was cancelled right then), it gives the slot back.
struct Waiting<'g> {
    gate: &'g Arc<FairGate>,
    namespace: &'g str,
    receiver: oneshot::Receiver<()>,
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        if self.receiver.try_recv().is_ok() {
            self.gate.leave(self.namespace);
        }
    }
}

fn release(running: &mut HashMap<String, usize>, namespace: &str) {
    if let Some(count) = running.get_mut(namespace) {
        *count -= 1;
        if *count == 0 {
            running.remove(namespace);
        }
    }
}

/// Which waiting run (its index in arrival order) gets a free slot: of those whose namespace
/// has the fewest runs going, the ones whose namespace's last turn is oldest (never: 0), the
/// first come.
pub fn next_turn<'a>(
    running: &HashMap<String, usize>,
    last_turn: &HashMap<String, u64>,
    waiting: impl Iterator<Item = &'a str>,
) -> Option<usize> {
    let key = |namespace: &str| {
        (running.get(namespace).copied().unwrap_or(0), last_turn.get(namespace).copied().unwrap_or(0))
    };
    waiting.enumerate().min_by_key(|&(index, namespace)| (key(namespace), index)).map(|(index, _)| index)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn the_namespace_with_fewest_runs_goes_next_then_the_longest_waiting_then_the_first_come() {
        let running: HashMap<String, usize> = [("busy".to_owned(), 3), ("calm".to_owned(), 1)].into();
        let never = HashMap::new();
        let next = |waiting: &[&str], last: &HashMap<String, u64>| next_turn(&running, last, waiting.iter().copied());
        assert_eq!(next(&["busy", "busy", "calm", "idle"], &never), Some(3), "idle has none going");
        assert_eq!(next(&["busy", "calm", "calm"], &never), Some(1), "the first of calm's");
        assert_eq!(next(&["busy", "busy"], &never), Some(0));
        assert_eq!(next(&[], &never), None);
        // Equal runs going: the namespace served longest ago goes first, whatever the arrival.
        let last: HashMap<String, u64> = [("a".to_owned(), 7), ("b".to_owned(), 3)].into();
        assert_eq!(next(&["a", "a", "b"], &last), Some(2));
        assert_eq!(next(&["a", "b", "new"], &last), Some(2), "never served goes first");
    }

    /// One slot: two namespaces take turns, however many runs the first has waiting.
    #[tokio::test]
    async fn with_one_slot_namespaces_take_turns() {
        let gate = FairGate::new(1);
        let slot = gate.enter("crowd").await;
        let order = Arc::new(Mutex::new(Vec::new()));
        let mut runs = Vec::new();
        for namespace in ["crowd", "crowd", "crowd", "other", "other"] {
            let (entering, order) = (gate.clone(), order.clone());
            runs.push(tokio::spawn(async move {
                let _slot = entering.enter(namespace).await;
                order.lock().unwrap().push(namespace);
            }));
            while gate.load().1 < runs.len() {
                tokio::task::yield_now().await;
            }
        }
        drop(slot);
        for run in runs {
            run.await.unwrap();
        }
        assert_eq!(*order.lock().unwrap(), ["other", "crowd", "other", "crowd", "crowd"]);
    }

    /// 40 runs of one tenant wait for 2 slots; a run of another tenant that arrives after them
    /// gets the first slot that frees.
    #[tokio::test]
    async fn another_tenant_does_not_wait_behind_a_crowd() {
        let gate = FairGate::new(2);
        let first = gate.enter("crowd").await;
        let second = gate.enter("crowd").await;
        let mut crowd = Vec::new();
        for _ in 0..40 {
            let gate = gate.clone();
            crowd.push(tokio::spawn(async move { drop(gate.enter("crowd").await) }));
        }
        while gate.load().1 < 40 {
            tokio::task::yield_now().await;
        }
        let other = tokio::spawn({
            let gate = gate.clone();
            async move { gate.enter("other").await }
        });
        while gate.load().1 < 41 {
            tokio::task::yield_now().await;
        }
        drop(first);
        let slot = tokio::time::timeout(Duration::from_secs(5), other).await.expect("its turn came").unwrap();
        assert_eq!(gate.load(), (2, 40), "the other tenant took the freed slot; the crowd still waits");
        drop((slot, second));
        for run in crowd {
            run.await.unwrap();
        }
        assert_eq!(gate.load(), (0, 0), "every slot came back");
    }

    #[tokio::test]
    async fn a_waiting_run_that_goes_away_passes_its_turn_on() {
        let gate = FairGate::new(1);
        let slot = gate.enter("a").await;
        let gone = tokio::spawn({
            let gate = gate.clone();
            async move { drop(gate.enter("b").await) }
        });
        while gate.load().1 < 1 {
            tokio::task::yield_now().await;
        }
        gone.abort();
        let _ = gone.await;
        let next = tokio::spawn({
            let gate = gate.clone();
            async move { gate.enter("c").await }
        });
        while gate.load().1 < 2 {
            tokio::task::yield_now().await;
        }
        drop(slot);
        let slot = tokio::time::timeout(Duration::from_secs(5), next).await.expect("c's turn came").unwrap();
        assert_eq!(gate.load(), (1, 0));
        drop(slot);
        assert_eq!(gate.load(), (0, 0));
    }
}
