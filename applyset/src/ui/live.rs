//! The live pages: a page's `…/live` stream watches what the page shows (the ApplySets; one
//! ApplySet and its Events) with the caller's identity and sends the page's content again,
//! rendered by the same code as the page, after each burst of changes.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Path, State};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use futures::stream::{self, BoxStream};
use futures::{Stream, StreamExt};
use k8s_openapi::api::core::v1::Event;
use k8s_openapi::jiff::Timestamp;
use kube::Api;
use kube::runtime::{WatchStreamExt, reflector, watcher};

use super::server::Ui;
use super::{page, view};
use crate::causes::with_causes;
use crate::commands::fleet::events;
use crate::operator::api::ApplySet;

/// Changes closer together than this are sent as one page.
const SETTLE: Duration = Duration::from_millis(150);

/// `/live`: the list page's content on every change of an ApplySet it may list, rendered from
/// the watch's own store (no list request per change, whatever the fleet's size).
pub(super) async fn list(State(ui): State<Arc<Ui>>) -> Sse<impl Stream<Item = Result<SseEvent, Infallible>>> {
    // Every namespace, or the one it may list (a failed probe: the watch says why, retrying).
    let scope = ui.scope().await.unwrap_or(None);
    let api: Api<ApplySet> = match &scope {
        Some(namespace) => ui.applysets_api(namespace),
        None => Api::all(ui.client.clone()),
    };
    sse(list_pages(watcher(api, watcher::Config::default()).default_backoff(), scope))
}

/// The list page's content after each burst of the watch's `events`, from the store they fill.
/// Only a complete store is rendered: the first page comes with the first list's end, however
/// long that list takes.
fn list_pages<S>(events: S, scope: Option<String>) -> BoxStream<'static, Result<maud::Markup, kube::Error>>
where
    S: Stream<Item = watcher::Result<watcher::Event<ApplySet>>> + Send + 'static,
{
    let (store, writer) = reflector::store();
    let changes = settled(reflector(writer, events));
    pages(changes, move || {
        let applysets: Vec<ApplySet> = store.state().iter().map(|a| ApplySet::clone(a)).collect();
        let content = page::list(&view::rows(&applysets, Timestamp::now()), scope.as_deref());
        async move { Ok(content) }
    })
}

/// `/applysets/{namespace}/{name}/live`: the page of one ApplySet on every change of it or of
/// its Events.
pub(super) async fn detail(
    State(ui): State<Arc<Ui>>,
    Path((namespace, name)): Path<(String, String)>,
) -> Sse<impl Stream<Item = Result<SseEvent, Infallible>>> {
    let named = watcher::Config::default().fields(&format!("metadata.name={name}"));
    let about = watcher::Config::default().fields(&events::about(&name));
    let events: Api<Event> = Api::namespaced(ui.client.clone(), &namespace);
    let changes = stream::select(changes(ui.applysets_api(&namespace), named), changes(events, about)).boxed();
    sse(pages(changes, move || {
        let (ui, namespace, name) = (ui.clone(), namespace.clone(), name.clone());
        async move { ui.detail_content(&namespace, &name).await }
    }))
}

/// A unit for each change a watch reports (errors are retried with backoff and not sent: a
/// watch the identity may not make never triggers).
fn changes<K>(api: Api<K>, config: watcher::Config) -> BoxStream<'static, ()>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + 'static,
{
    settled(watcher(api, config).default_backoff())
}

/// A unit for each change a watch's `events` report, a (re)list counting once, at its end:
/// `Init` comes before the list request and `InitApply` in the middle of its pages, so a page
/// rendered on them would show a partial store (or, waiting for a complete one while these
/// changes are not read, never come).
fn settled<K, S>(events: S) -> BoxStream<'static, ()>
where
    K: Send + 'static,
    S: Stream<Item = watcher::Result<watcher::Event<K>>> + Send + 'static,
{
    events
        .filter_map(|event| async move {
            match event {
                Ok(watcher::Event::InitDone | watcher::Event::Apply(_) | watcher::Event::Delete(_)) => Some(()),
                Ok(watcher::Event::Init | watcher::Event::InitApply(_)) | Err(_) => None,
            }
        })
        .boxed()
}

/// After each burst of `changes`, the content `render` gives.
fn pages<F, Fut>(changes: BoxStream<'static, ()>, render: F) -> BoxStream<'static, Result<maud::Markup, kube::Error>>
where
    F: Fn() -> Fut + Send + 'static,
    Fut: std::future::Future<Output = Result<maud::Markup, kube::Error>> + Send,
{
    stream::unfold((changes, render), |(mut changes, render)| async move {
        changes.next().await?;
        while let Ok(Some(())) = tokio::time::timeout(SETTLE, changes.next()).await {}
        let content = render().await;
        Some((content, (changes, render)))
    })
    .boxed()
}

/// Each content as an SSE event `page`; a failed render as an event `problem` (the page keeps
/// what it shows).
fn sse(
    pages: BoxStream<'static, Result<maud::Markup, kube::Error>>,
) -> Sse<impl Stream<Item = Result<SseEvent, Infallible>>> {
    Sse::new(pages.map(|content| {
        Ok(match content {
            Ok(content) => SseEvent::default().event("page").data(content.into_string()),
            Err(error) => SseEvent::default().event("problem").data(with_causes(&error)),
        })
    }))
    .keep_alive(KeepAlive::default())
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use futures::{StreamExt, stream};
    use kube::runtime::watcher;

    use super::{SETTLE, list_pages};
    use crate::operator::api::ApplySet;

    fn applyset(name: &str) -> ApplySet {
        serde_yaml_ng::from_str(&format!(
            "apiVersion: applyset.dev/v1alpha1\nkind: ApplySet\nmetadata: {{name: {name}, namespace: team}}\nspec: {{source: {{url: https://git.example/r.git}}, interval: 1m}}\n"
        ))
        .expect("an ApplySet")
    }

    /// The watch's events, each after its pause.
    fn paced(
        events: Vec<(Duration, watcher::Event<ApplySet>)>,
    ) -> impl futures::Stream<Item = watcher::Result<watcher::Event<ApplySet>>> + Send + 'static {
        stream::iter(events).then(|(pause, event)| async move {
            tokio::time::sleep(pause).await;
            Ok(event)
        })
    }

    /// A first list slower than a burst (the request is made after `Init`): its page comes at
    /// the list's end, whole, and a later change brings the next one.
    #[tokio::test(start_paused = true)]
    async fn a_slow_first_list_is_shown_whole_and_changes_follow_it() {
        let mut suspended = applyset("beta");
        suspended.spec.suspend = true;
        let events = paced(vec![
            (Duration::ZERO, watcher::Event::Init),
            (SETTLE * 10, watcher::Event::InitApply(applyset("alpha"))),
            (SETTLE * 10, watcher::Event::InitApply(applyset("beta"))),
            (Duration::ZERO, watcher::Event::InitDone),
            (SETTLE * 10, watcher::Event::Apply(suspended)),
        ]);
        let mut pages = list_pages(events.chain(stream::pending()), None);
        // The clock is paused: a page that never comes fails the test after an hour of it.
        let hour = Duration::from_secs(3600);
        let first = tokio::time::timeout(hour, pages.next()).await.expect("a first page");
        let first = first.expect("a page").expect("rendered").into_string();
        assert!(first.contains("alpha") && first.contains("beta"), "{first}");
        assert!(first.contains("0 suspended"), "{first}");
        let second = tokio::time::timeout(hour, pages.next()).await.expect("a second page");
        let second = second.expect("a page").expect("rendered").into_string();
        assert!(second.contains("1 suspended"), "{second}");
    }
}
