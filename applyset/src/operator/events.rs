//! Events (`events.k8s.io/v1`) on ApplySets, folded into a series only when they say the same
//! thing.
//!
//! kube-runtime's `Recorder` folds every Event with the same reason and action into one series
//! and keeps the first note: a `FetchFailed` that said "connection refused" went on saying so
//! while the real failures were authentication and TLS. Here the note is part of the key, so
//! each distinct message is its own Event, and only true repeats raise a series count.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::{Event, EventSeries};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};
use std::sync::Mutex;

/// A repeat within this window joins the series; later, it starts a new Event (as client-go's
/// and kube-runtime's recorders do).
const SERIES_WINDOW: Duration = Duration::from_secs(6 * 60);

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Key {
    regarding_uid: String,
    warning: bool,
    reason: String,
    action: String,
    note: String,
}

#[derive(Debug, Clone)]
struct Published {
    name: String,
    count: i32,
    last: Instant,
}

/// Publishes Events as the controller (`reportingController`, `reportingInstance`).
pub struct EventPublisher {
    client: kube::Client,
    controller: String,
    instance: String,
    published: Mutex<HashMap<Key, Published>>,
}

/// One Event to publish.
pub struct NewEvent<'a> {
    pub warning: bool,
    pub reason: &'a str,
    pub action: &'a str,
    pub note: String,
}

impl EventPublisher {
    pub fn new(client: kube::Client, controller: &str, instance: &str) -> EventPublisher {
        EventPublisher {
            client,
            controller: controller.to_owned(),
            instance: instance.to_owned(),
            published: Mutex::new(HashMap::new()),
        }
    }

    /// Creates the Event, or raises the count of the series it repeats.
    pub async fn publish(&self, regarding: &ObjectReference, event: NewEvent<'_>) -> Result<(), kube::Error> {
        let namespace = regarding.namespace.clone().unwrap_or_else(|| "default".into());
        let events: Api<Event> = Api::namespaced(self.client.clone(), &namespace);
        let key = Key {
            regarding_uid: regarding.uid.clone().unwrap_or_default(),
            warning: event.warning,
            reason: event.reason.to_owned(),
            action: event.action.to_owned(),
            note: event.note.clone(),
        };
        let now = k8s_openapi::jiff::Timestamp::now();
        // The lock is not held across requests: one ApplySet's Events must not wait for another's.
        let repeated = {
            let mut published = self.published.lock().unwrap_or_else(|p| p.into_inner());
            published.retain(|_, p| p.last.elapsed() < SERIES_WINDOW);
            published.get(&key).cloned()
        };
        if let Some(series) = repeated {
            let count = series.count + 1;
            let patch = serde_json::json!({ "series": EventSeries { count, last_observed_time: MicroTime(now) } });
            match events.patch(&series.name, &PatchParams::default(), &Patch::Merge(&patch)).await {
                Ok(_) => {
                    let updated = Published { count, last: Instant::now(), ..series };
                    self.published.lock().unwrap_or_else(|p| p.into_inner()).insert(key, updated);
                    return Ok(());
                }
                // The Event expired (the apiserver's TTL) or was deleted: start a new one.
                Err(kube::Error::Api(status)) if status.code == 404 => {}
                Err(error) => return Err(error),
            }
        }
        let object_name = regarding.name.clone().unwrap_or_default();
        let body = Event {
            metadata: ObjectMeta {
                // Unique per Event, as kubectl's and client-go's names are.
                name: Some(format!("{object_name}.{:x}", now.as_nanosecond())),
                namespace: Some(namespace),
                ..ObjectMeta::default()
            },
            action: Some(event.action.to_owned()),
            reason: Some(event.reason.to_owned()),
            note: Some(event.note),
            type_: Some(if event.warning { "Warning" } else { "Normal" }.to_owned()),
            event_time: Some(MicroTime(now)),
            regarding: Some(regarding.clone()),
            reporting_controller: Some(self.controller.clone()),
            reporting_instance: Some(self.instance.clone()),
            ..Event::default()
        };
        let created = events.create(&PostParams::default(), &body).await?;
        let name = created.metadata.name.unwrap_or_default();
        let entry = Published { name, count: 1, last: Instant::now() };
        self.published.lock().unwrap_or_else(|p| p.into_inner()).insert(key, entry);
        Ok(())
    }
}
