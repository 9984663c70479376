//! Health targets the ApplySet did not apply (a `spec.healthChecks` entry naming someone
//! else's Deployment) are not in the watch cache, which holds the ApplySets' own objects: each
//! run reads them with one GET. While a run waits for them, each is watched (its name as a
//! field selector, with the run's identity, from the version the run read), and its first
//! change runs the ApplySet again, so that `Ready` follows it within moments instead of at the
//! health timeout. The watches end at the wait's deadline, at the next run (which starts its
//! own if it still waits) and with the ApplySet.

use std::time::Instant;

use futures::{StreamExt, TryStreamExt};
use kube::api::{Api, DynamicObject, WatchEvent, WatchParams};

use crate::causes::Chain;
use crate::health::targets::Target;

/// A target read from the apiserver, and the version it was read at (`None`: not found).
#[derive(Debug, Clone)]
pub struct External {
    pub target: Target,
    pub resource_version: Option<String>,
}

/// How long one watch request lasts before it is made again (the apiserver's limit is longer).
const WATCH_SECONDS: u32 = 290;

/// Resolves when any of `externals` changes after the version the run read (or appears, when
/// it was not found), or at `deadline`: `true` for a change.
pub async fn changed(client: kube::Client, externals: Vec<External>, deadline: Instant) -> bool {
    let watches: Vec<_> = externals.into_iter().map(|external| Box::pin(watch_one(client.clone(), external))).collect();
    if watches.is_empty() {
        return false;
    }
    tokio::select! {
        _ = futures::future::select_all(watches) => true,
        () = tokio::time::sleep_until(deadline.into()) => false,
    }
}

/// Returns at the object's first change after its version; an error (a version too old, a
/// watch refused) counts as a change too: the run that follows reads the object again.
async fn watch_one(client: kube::Client, external: External) {
    let Target { mapping, namespace, name } = external.target;
    let api: Api<DynamicObject> = match &namespace {
        Some(namespace) if mapping.namespaced => Api::namespaced_with(client, namespace, &mapping.resource),
        _ => Api::all_with(client, &mapping.resource),
    };
    let params = WatchParams::default().fields(&format!("metadata.name={name}")).timeout(WATCH_SECONDS);
    // Not found: from "0", so that an object created since the run's GET is reported at once.
    let mut version = external.resource_version.unwrap_or_else(|| "0".into());
    loop {
        let mut events = match api.watch(&params, &version).await {
            Ok(events) => events.boxed(),
            Err(error) => {
                tracing::debug!(%name, error = %Chain(&error), "health target watch refused");
                return;
            }
        };
        loop {
            match events.try_next().await {
                Ok(Some(WatchEvent::Bookmark(bookmark))) => version = bookmark.metadata.resource_version,
                Ok(Some(WatchEvent::Added(_) | WatchEvent::Modified(_) | WatchEvent::Deleted(_))) => return,
                Ok(Some(WatchEvent::Error(error))) => {
                    tracing::debug!(%name, error = %error.message, "health target watch ended");
                    return;
                }
                // The request's time is over: watch again from the same version.
                Ok(None) => break,
                Err(error) => {
                    tracing::debug!(%name, error = %Chain(&error), "health target watch failed");
                    return;
                }
            }
        }
    }
}
