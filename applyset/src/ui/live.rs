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
    let (store, writer) = reflector::store();
    let changes = reflector(writer, watcher(api, watcher::Config::default()))
        .default_backoff()
        .filter_map(|event| async move { event.ok().map(|_| ()) })
        .boxed();
    stream_pages(changes, move || {
        let (store, scope) = (store.clone(), scope.clone());
        async move {
            // A first list of many pages is shown whole.
            let _ = store.wait_until_ready().await;
            let applysets: Vec<ApplySet> = store.state().iter().map(|a| ApplySet::clone(a)).collect();
            Ok(page::list(&view::rows(&applysets, Timestamp::now()), scope.as_deref()))
        }
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
    stream_pages(changes, move || {
        let (ui, namespace, name) = (ui.clone(), namespace.clone(), name.clone());
        async move { ui.detail_content(&namespace, &name).await }
    })
}

/// A unit for each change a watch reports (errors are retried with backoff and not sent: a
/// watch the identity may not make never triggers).
fn changes<K>(api: Api<K>, config: watcher::Config) -> BoxStream<'static, ()>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + 'static,
{
    watcher(api, config).default_backoff().filter_map(|event| async move { event.ok().map(|_| ()) }).boxed()
}

/// After each burst of `changes`, the content `render` gives, as an SSE event `page`; a
/// failed render is sent as an event `problem` (the page keeps what it shows).
fn stream_pages<F, Fut>(
    changes: BoxStream<'static, ()>,
    render: F,
) -> Sse<impl Stream<Item = Result<SseEvent, Infallible>>>
where
    F: Fn() -> Fut + Send + 'static,
    Fut: std::future::Future<Output = Result<maud::Markup, kube::Error>> + Send,
{
    let pages = stream::unfold((changes, render), |(mut changes, render)| async move {
        changes.next().await?;
        while let Ok(Some(())) = tokio::time::timeout(SETTLE, changes.next()).await {}
        let event = match render().await {
            Ok(content) => SseEvent::default().event("page").data(content.into_string()),
            Err(error) => SseEvent::default().event("problem").data(error.to_string()),
        };
        Some((Ok(event), (changes, render)))
    });
    Sse::new(pages).keep_alive(KeepAlive::default())
}
