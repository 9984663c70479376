//! The routes, the guard every request passes, and the handlers of the pages and actions.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::{Form, Path, Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::{Next, from_fn_with_state};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use k8s_openapi::api::core::v1::Event;
use k8s_openapi::jiff::Timestamp;
use kube::Api;
use kube::api::ListParams;
use maud::Markup;
use regex::Regex;

use super::access::{self, Access};
use super::page::{self, Frame, detail_path};
use super::{UiError, live, view};
use crate::causes::Chain;
use crate::commands::fleet::drive::Request as ApplySetRequest;
use crate::commands::fleet::events;
use crate::operator::api::ApplySet;
use crate::operator::members::MemberRecords;

/// What the handlers share.
pub struct Ui {
    pub(super) client: kube::Client,
    /// The server URL, shown in the header.
    context: String,
    /// Shown when the identity may not list ApplySets of every namespace.
    pub(super) namespace: String,
    /// The token every action's form carries (random per server).
    csrf: String,
    accept_hosts: Vec<Regex>,
    /// With `--allow-remote-access`: the token every request must carry (see `access.rs`).
    access_token: Option<String>,
    /// Set once a list of every namespace was forbidden: the list page then shows `namespace`.
    namespaced_only: AtomicBool,
    notices: Mutex<VecDeque<(u64, String, bool)>>,
    next_notice: AtomicU64,
}

/// How many action results are kept for the page a POST redirects to.
const NOTICES: usize = 64;

impl Ui {
    pub fn new(
        client: kube::Client,
        context: String,
        namespace: String,
        accept_hosts: Vec<Regex>,
        access_token: Option<String>,
    ) -> Result<Arc<Ui>, UiError> {
        let mut bytes = [0u8; 32];
        openssl::rand::rand_bytes(&mut bytes).map_err(UiError::Token)?;
        let csrf = bytes.iter().map(|b| format!("{b:02x}")).collect();
        Ok(Arc::new(Ui {
            client,
            context,
            namespace,
            csrf,
            accept_hosts,
            access_token,
            namespaced_only: AtomicBool::new(false),
            notices: Mutex::new(VecDeque::new()),
            next_notice: AtomicU64::new(1),
        }))
    }

    /// The ApplySets the identity may list, and the one namespace shown when it may not list
    /// every namespace.
    pub(super) async fn applysets(&self) -> Result<(Vec<ApplySet>, Option<String>), kube::Error> {
        if !self.namespaced_only.load(Ordering::Relaxed) {
            match Api::<ApplySet>::all(self.client.clone()).list(&ListParams::default()).await {
                Ok(list) => return Ok((list.items, None)),
                Err(kube::Error::Api(status)) if status.code == 403 => {
                    self.namespaced_only.store(true, Ordering::Relaxed);
                }
                Err(error) => return Err(error),
            }
        }
        let list = self.applysets_api(&self.namespace).list(&ListParams::default()).await?;
        Ok((list.items, Some(self.namespace.clone())))
    }

    /// The one namespace shown when the identity may not list every namespace, else `None`;
    /// until a list has told, a list of one item of every namespace asks.
    pub(super) async fn scope(&self) -> Result<Option<String>, kube::Error> {
        if !self.namespaced_only.load(Ordering::Relaxed) {
            match Api::<ApplySet>::all(self.client.clone()).list(&ListParams::default().limit(1)).await {
                Ok(_) => return Ok(None),
                Err(kube::Error::Api(status)) if status.code == 403 => {
                    self.namespaced_only.store(true, Ordering::Relaxed);
                }
                Err(error) => return Err(error),
            }
        }
        Ok(Some(self.namespace.clone()))
    }

    pub(super) fn applysets_api(&self, namespace: &str) -> Api<ApplySet> {
        Api::namespaced(self.client.clone(), namespace)
    }

    /// The list page's content.
    pub(super) async fn list_content(&self) -> Result<Markup, kube::Error> {
        let (applysets, scope) = self.applysets().await?;
        Ok(page::list(&view::rows(&applysets, Timestamp::now()), scope.as_deref()))
    }

    /// One ApplySet's page content: the ApplySet, its record of members, its Events (left out
    /// when the identity may not list them).
    pub(super) async fn detail_content(&self, namespace: &str, name: &str) -> Result<Markup, kube::Error> {
        let applyset = self.applysets_api(namespace).get(name).await?;
        let mut status = applyset.status.clone().unwrap_or_default();
        if let Err(error) = MemberRecords::default().read_into(&self.client, &applyset, &mut status).await {
            tracing::debug!(error = %Chain(&error), "the member record is not readable; the status's objects are shown");
        }
        let events: Api<Event> = Api::namespaced(self.client.clone(), namespace);
        let events =
            events.list(&ListParams::default().fields(&events::about(name))).await.map(|l| l.items).unwrap_or_default();
        let detail = view::detail(&applyset, &status, &events, Timestamp::now());
        Ok(page::detail(&detail, &self.csrf))
    }

    fn notice(&self, text: String, failed: bool) -> u64 {
        let id = self.next_notice.fetch_add(1, Ordering::Relaxed);
        let mut notices = self.notices.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if notices.len() == NOTICES {
            notices.pop_front();
        }
        notices.push_back((id, text, failed));
        id
    }

    fn notice_of(&self, id: Option<u64>) -> Option<(String, bool)> {
        let notices = self.notices.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        notices.iter().find(|(n, _, _)| Some(*n) == id).map(|(_, text, failed)| (text.clone(), *failed))
    }
}

pub fn router(ui: Arc<Ui>) -> Router {
    Router::new()
        .route("/", get(list_page))
        .route("/live", get(live::list))
        .route("/applysets/{namespace}/{name}", get(detail_page))
        .route("/applysets/{namespace}/{name}/live", get(live::detail))
        .route("/applysets/{namespace}/{name}/{action}", post(action))
        .route("/assets/app.css", get(stylesheet))
        .route("/assets/app.js", get(script))
        .fallback(not_found)
        .layer(from_fn_with_state(ui.clone(), guard))
        .with_state(ui)
}

/// Refuses a Host `--accept-hosts` does not allow, a request without the access token (when
/// the server has one) and a POST from another site; adds the headers that keep the pages out
/// of frames and foreign scripts out of the pages.
async fn guard(State(ui): State<Arc<Ui>>, request: Request, next: Next) -> Response {
    let headers = request.headers();
    if !accepts_host(&ui.accept_hosts, headers) {
        return (StatusCode::FORBIDDEN, "Host not accepted (see applyset ui --accept-hosts)\n").into_response();
    }
    if let Some(token) = &ui.access_token {
        match access::check(token, headers, request.uri()) {
            Access::Granted => {}
            Access::Grant { set_cookie, location } => {
                let mut response = Redirect::to(&location).into_response();
                if let Ok(value) = HeaderValue::from_str(&set_cookie) {
                    response.headers_mut().insert(header::SET_COOKIE, value);
                }
                response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
                return response;
            }
            Access::Denied => {
                let text = "an access token is required: open the URL `applyset ui` printed when it started\n";
                return (StatusCode::UNAUTHORIZED, text).into_response();
            }
        }
    }
    if request.method() == axum::http::Method::POST && !same_origin(headers) {
        return (StatusCode::FORBIDDEN, "cross-site request refused\n").into_response();
    }
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    let fixed = [
        (
            header::CONTENT_SECURITY_POLICY,
            "default-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'; object-src 'none'",
        ),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::X_FRAME_OPTIONS, "DENY"),
        (header::REFERRER_POLICY, "same-origin"),
        (header::CACHE_CONTROL, "no-store"),
    ];
    for (name, value) in fixed {
        headers.insert(name, HeaderValue::from_static(value));
    }
    response
}

/// Whether a request's Host (without its port) is one the `--accept-hosts` patterns allow.
pub(super) fn accepts_host(patterns: &[Regex], headers: &HeaderMap) -> bool {
    let Some(host) = headers.get(header::HOST).and_then(|h| h.to_str().ok()) else { return false };
    let name = match host.rsplit_once(':') {
        Some((name, port)) if port.chars().all(|c| c.is_ascii_digit()) => name,
        _ => host,
    };
    patterns.iter().any(|pattern| pattern.is_match(name))
}

/// A browser says where a POST comes from (`Sec-Fetch-Site`, `Origin`): it must be this site.
pub(super) fn same_origin(headers: &HeaderMap) -> bool {
    let text = |name| headers.get(name).and_then(|v: &HeaderValue| v.to_str().ok());
    if text("sec-fetch-site").is_some_and(|site| site != "same-origin" && site != "none") {
        return false;
    }
    match (text(header::ORIGIN.as_str()), text(header::HOST.as_str())) {
        (Some(origin), Some(host)) => {
            origin.strip_prefix("http://").or_else(|| origin.strip_prefix("https://")) == Some(host)
        }
        _ => true,
    }
}

#[derive(serde::Deserialize)]
pub(super) struct PageQuery {
    notice: Option<u64>,
}

fn html_page(ui: &Ui, title: &str, live: &str, filter: bool, notice: Option<u64>, content: Markup) -> Response {
    let notice = ui.notice_of(notice);
    let frame = Frame {
        title,
        context: &ui.context,
        live,
        notice: notice.as_ref().map(|(text, failed)| (text.as_str(), *failed)),
        filter,
    };
    page::layout(&frame, content).into_response()
}

/// A failed read as a page: the apiserver's answer (NotFound, Forbidden) with its code.
fn problem(ui: &Ui, error: &kube::Error) -> Response {
    let (code, message) = match error {
        kube::Error::Api(status) => (
            StatusCode::from_u16(status.code).unwrap_or(StatusCode::BAD_GATEWAY),
            format!("Error from server ({}): {}", status.reason, status.message),
        ),
        other => (StatusCode::BAD_GATEWAY, format!("the cluster did not answer: {other}")),
    };
    let frame = Frame { title: "Not available", context: &ui.context, live: "", notice: None, filter: false };
    (code, page::layout(&frame, page::problem(&message))).into_response()
}

async fn list_page(State(ui): State<Arc<Ui>>, Query(query): Query<PageQuery>) -> Response {
    match ui.list_content().await {
        Ok(content) => html_page(&ui, "ApplySets", "/live", true, query.notice, content),
        Err(error) => problem(&ui, &error),
    }
}

async fn detail_page(
    State(ui): State<Arc<Ui>>,
    Path((namespace, name)): Path<(String, String)>,
    Query(query): Query<PageQuery>,
) -> Response {
    match ui.detail_content(&namespace, &name).await {
        Ok(content) => {
            let live = format!("{}/live", detail_path(&namespace, &name));
            html_page(&ui, &format!("{namespace}/{name}"), &live, false, query.notice, content)
        }
        Err(error) => problem(&ui, &error),
    }
}

#[derive(serde::Deserialize)]
pub(super) struct ActionForm {
    csrf: String,
}

/// An action with the caller's identity; the page it came from shows how it went.
async fn action(
    State(ui): State<Arc<Ui>>,
    Path((namespace, name, action)): Path<(String, String, String)>,
    Form(form): Form<ActionForm>,
) -> Response {
    if !constant_time_eq(form.csrf.as_bytes(), ui.csrf.as_bytes()) {
        return (StatusCode::FORBIDDEN, "invalid request token: reload the page\n").into_response();
    }
    let api = ui.applysets_api(&namespace);
    let request = match action.as_str() {
        "reconcile" => ApplySetRequest::Reconcile,
        "suspend" => ApplySetRequest::Suspend,
        "resume" => ApplySetRequest::Resume,
        // The revision the guard holds now, read here: never one a form names.
        "approve-prune" => match api.get(&name).await {
            Ok(applyset) => {
                let status = applyset.status.unwrap_or_default();
                match view::guarded_revision(&status) {
                    Some(revision) => ApplySetRequest::ApprovePrune { revision },
                    None => return redirect_with(&ui, &namespace, &name, "No prune is guarded now.".into(), true),
                }
            }
            Err(error) => return problem(&ui, &error),
        },
        _ => return not_found(State(ui)).await,
    };
    let span = tracing::info_span!("ui_action", namespace = %namespace, name = %name, action = %action);
    let sent = tracing::Instrument::instrument(request.send(&api, &name), span.clone()).await;
    let _entered = span.enter();
    let (text, failed) = match sent {
        Ok(_) => (done_text(&request, &namespace, &name), false),
        Err(kube::Error::Api(status)) => {
            (format!("Refused: Error from server ({}): {}", status.reason, status.message), true)
        }
        Err(error) => (format!("The cluster did not answer: {error}", error = Chain(&error)), true),
    };
    if failed {
        tracing::warn!(%text, "action refused");
    } else {
        tracing::info!(%text, "action done");
    }
    redirect_with(&ui, &namespace, &name, text, failed)
}

fn done_text(request: &ApplySetRequest, namespace: &str, name: &str) -> String {
    match request {
        ApplySetRequest::Reconcile => format!("Reconcile of {namespace}/{name} requested."),
        ApplySetRequest::Suspend => format!("{namespace}/{name} suspended."),
        ApplySetRequest::Resume => format!("{namespace}/{name} resumed; a run is requested."),
        ApplySetRequest::ApprovePrune { revision } => format!("Prune of {revision} approved."),
    }
}

fn redirect_with(ui: &Ui, namespace: &str, name: &str, text: String, failed: bool) -> Response {
    let id = ui.notice(text, failed);
    Redirect::to(&format!("{}?notice={id}", detail_path(namespace, name))).into_response()
}

pub(super) fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

async fn not_found(State(ui): State<Arc<Ui>>) -> Response {
    let frame = Frame { title: "Not found", context: &ui.context, live: "", notice: None, filter: false };
    (StatusCode::NOT_FOUND, page::layout(&frame, page::problem("There is no such page."))).into_response()
}

async fn stylesheet() -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "text/css; charset=utf-8")], include_str!("assets/app.css"))
}

async fn script() -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "text/javascript; charset=utf-8")], include_str!("assets/app.js"))
}
