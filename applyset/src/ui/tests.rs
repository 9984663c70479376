//! The UI's pure parts: the views built from ApplySets and Events, the pages' HTML (escaped,
//! forms carrying the token, actions offered when they apply), and the request checks.

use axum::http::{HeaderMap, HeaderValue};
use k8s_openapi::api::core::v1::Event;
use k8s_openapi::jiff::Timestamp;

use super::server::{accepts_host, constant_time_eq, same_origin};
use super::view::{Tone, detail, rows, short_revision};
use super::{accept_hosts, page};
use crate::operator::api::ApplySet;

fn applyset(yaml: &str) -> ApplySet {
    serde_yaml_ng::from_str(yaml).expect("an ApplySet")
}

fn now() -> Timestamp {
    "2026-11-27T10:10:00Z".parse().expect("a time")
}

fn ready(namespace: &str, name: &str, status: &str, reason: &str, message: &str) -> ApplySet {
    applyset(&format!(
        r#"
apiVersion: applyset.dev/v1alpha1
kind: ApplySet
metadata: {{name: {name}, namespace: {namespace}}}
spec: {{source: {{url: "https://git.example/r.git", path: apps/{name}}}, interval: 1m}}
status:
  lastAppliedRevision: main@sha1:0123456789abcdef0123456789abcdef01234567
  conditions:
  - {{type: Ready, status: "{status}", reason: {reason}, message: "{message}", lastTransitionTime: "2026-11-27T10:00:00Z"}}
"#
    ))
}

#[test]
fn the_list_puts_failures_first_then_sorts_by_namespace_and_name() {
    let list = [
        ready("b", "web", "True", "Succeeded", "Applied"),
        ready("a", "api", "True", "Succeeded", "Applied"),
        ready("z", "db", "False", "ApplyFailed", "configmap/x: invalid"),
        ready("c", "new", "Unknown", "Progressing", "Reconciliation in progress"),
    ];
    let rows = rows(&list, now());
    let order: Vec<(&str, &str)> = rows.iter().map(|r| (r.namespace.as_str(), r.name.as_str())).collect();
    assert_eq!(order, [("z", "db"), ("c", "new"), ("a", "api"), ("b", "web")]);
    assert_eq!(rows[0].ready.text, "False ApplyFailed");
    assert_eq!(rows[0].ready.tone, Tone::Bad);
    assert_eq!(rows[0].revision, "main@0123456");
    assert_eq!(rows[0].changed.as_ref().map(|c| c.0.as_str()), Some("10m"));
    assert_eq!(rows[0].message, "configmap/x: invalid");
}

#[test]
fn a_ready_row_says_only_what_its_message_adds_to_the_revision() {
    let revision = "main@sha1:0123456789abcdef0123456789abcdef01234567";
    let plain = ready("a", "web", "True", "Succeeded", &format!("Applied revision: {revision}"));
    let drifted =
        ready("a", "api", "True", "Succeeded", &format!("Applied revision: {revision} (1 object(s) drifted)"));
    let rows = rows(&[plain, drifted], now());
    assert_eq!((rows[0].message.as_str(), rows[1].message.as_str()), ("1 object(s) drifted", ""));
}

#[test]
fn a_suspended_applyset_says_so_whatever_its_last_condition() {
    let mut suspended = ready("a", "web", "True", "Succeeded", "Applied");
    suspended.spec.suspend = true;
    let row = &rows(&[suspended], now())[0];
    assert_eq!((row.ready.text.as_str(), row.ready.tone), ("Suspended", Tone::Neutral));
    assert!(row.suspended);
}

#[test]
fn a_revision_is_shortened_only_when_it_names_a_commit() {
    assert_eq!(short_revision("main@sha1:0123456789abcdef"), "main@0123456");
    assert_eq!(short_revision("v1.2.3"), "v1.2.3");
}

const DETAILED: &str = r#"
apiVersion: applyset.dev/v1alpha1
kind: ApplySet
metadata: {name: web, namespace: shop}
spec: {source: {url: "https://git.example/r.git", path: apps/web}, interval: 1m}
status:
  lastAppliedRevision: main@sha1:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa
  lastAttemptedRevision: main@sha1:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb
  conditions:
  - {type: Ready, status: "False", reason: PruneGuarded, message: "this revision would prune 3 of 4 objects", lastTransitionTime: "2026-11-27T10:05:00Z"}
  - {type: Drifted, status: "True", reason: DriftDetected, message: "1 object(s) differ", lastTransitionTime: "2026-11-27T10:06:00Z"}
  inventory:
    count: 1
    states: {Applied: 1, Drifted: 1}
    objects:
    - {kind: ConfigMap, namespace: shop, name: settings, state: Drifted}
    members:
    - {kind: ConfigMap, namespace: shop, name: settings, uid: u1}
    - {kind: Namespace, name: shop, uid: u2}
  drift:
    count: 1
    mode: Report
    objects:
    - kind: ConfigMap
      namespace: shop
      name: settings
      fields:
      - {path: data.v, manager: hand-edit, reason: Changed}
      - {path: data.old, reason: Stale, appliedIn: main@sha1:cccc}
  pruneSkipped:
  - {kind: Namespace, name: shop, state: Skipped, message: "holds objects this ApplySet does not manage"}
  appliedRevisions:
  - {revision: "main@sha1:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", path: apps/web, appliedAt: "2026-11-27T09:00:00Z"}
"#;

fn event(reason: &str, type_: &str, message: &str, at: &str) -> Event {
    serde_json::from_value(serde_json::json!({
        "metadata": {"name": format!("web.{reason}"), "namespace": "shop"},
        "involvedObject": {"kind": "ApplySet", "name": "web", "namespace": "shop"},
        "type": type_, "reason": reason, "message": message, "lastTimestamp": at,
    }))
    .expect("an Event")
}

#[test]
fn an_applysets_page_shows_its_tree_drift_prune_and_newest_events_first() {
    let applyset = applyset(DETAILED);
    let status = applyset.status.clone().unwrap_or_default();
    let events = [
        event("Pruned", "Normal", "pruned: configmap/old", "2026-11-27T09:00:00Z"),
        event("PruneGuarded", "Warning", "would prune 3", "2026-11-27T10:05:00Z"),
        event("Pruned", "Normal", "pruned: configmap/older", "2026-11-27T08:00:00Z"),
    ];
    let view = detail(&applyset, &status, &events, now());
    assert_eq!(view.source, "https://git.example/r.git (apps/web)");
    assert_eq!(view.object_count, 2, "the members recorded, not the status's count of one revision");
    // Cluster-scoped first, then each namespace; an unlisted member is Applied when every
    // non-applied object is listed.
    let namespaces: Vec<Option<&str>> = view.objects.keys().map(Option::as_deref).collect();
    assert_eq!(namespaces, [None, Some("shop")]);
    assert_eq!(view.objects[&None]["Namespace"][0].state, "Applied");
    assert_eq!(view.objects[&Some("shop".into())]["ConfigMap"][0].state, "Drifted");
    assert_eq!(view.drift.objects[0].fields[1].applied_in.as_deref(), Some("main@sha1:cccc"));
    assert_eq!(view.events.iter().map(|e| e.reason.as_str()).collect::<Vec<_>>(), ["PruneGuarded", "Pruned", "Pruned"]);
    assert_eq!(view.prune.pruned.as_ref().map(|p| p.1.as_str()), Some("pruned: configmap/old"));
    assert_eq!(view.prune.guarded.as_deref(), Some("this revision would prune 3 of 4 objects"));
    assert_eq!(view.guarded_revision.as_deref(), Some("main@sha1:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"));
    assert_eq!(view.revisions[0].result, "PruneGuarded", "the held attempt heads the revisions");

    let html = page::detail(&view, "TOKEN").into_string();
    for action in ["reconcile", "suspend", "approve-prune"] {
        let form = format!(
            r#"<form class="action" method="post" action="/applysets/shop/web/{action}"><input type="hidden" name="csrf" value="TOKEN">"#
        );
        assert!(html.contains(&form), "{action}: {html}");
    }
    assert!(!html.contains("/resume\""), "resume is for a suspended ApplySet");
    for shown in
        ["data.v", "hand-edit", "Changed", "data.old", "Stale", "main@sha1:cccc", "holds objects this ApplySet"]
    {
        assert!(html.contains(shown), "{shown}");
    }
}

#[test]
fn a_suspended_applyset_offers_resume_and_nothing_guarded_offers_no_approval() {
    let mut applyset = ready("a", "web", "True", "Succeeded", "Applied");
    applyset.spec.suspend = true;
    let status = applyset.status.clone().unwrap_or_default();
    let html = page::detail(&detail(&applyset, &status, &[], now()), "T").into_string();
    assert!(html.contains("/applysets/a/web/resume"));
    assert!(!html.contains("/suspend\"") && !html.contains("/reconcile\"") && !html.contains("approve-prune"));
}

#[test]
fn whatever_an_applyset_holds_is_escaped() {
    let hostile = ready("a", "web", "False", "ApplyFailed", "<script>alert(1)</script> & \\\"quoted\\\"");
    let html = page::list(&rows(std::slice::from_ref(&hostile), now()), None).into_string();
    assert!(!html.contains("<script>alert"), "{html}");
    assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;quoted&quot;"), "{html}");
    let status = hostile.status.clone().unwrap_or_default();
    let html = page::detail(&detail(&hostile, &status, &[], now()), "T").into_string();
    assert!(!html.contains("<script>alert"), "{html}");
}

#[test]
fn the_list_says_when_it_shows_one_namespace_only() {
    let html = page::list(&[], Some("team-a")).into_string();
    assert!(html.contains("0 ApplySets"));
    assert!(html.contains("<strong>team-a</strong> only: this identity may not list ApplySets in every namespace"));
}

fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
    let mut map = HeaderMap::new();
    for (name, value) in pairs {
        map.insert(*name, HeaderValue::from_str(value).expect("a header value"));
    }
    map
}

#[test]
fn only_the_accepted_host_names_are_answered_with_or_without_a_port() {
    let patterns = accept_hosts(r"^localhost$,^127\.0\.0\.1$,^\[::1\]$").expect("kubectl proxy's default");
    for host in ["localhost", "localhost:9099", "127.0.0.1:9099", "[::1]:9099", "[::1]"] {
        assert!(accepts_host(&patterns, &headers(&[("host", host)])), "{host}");
    }
    for host in ["evil.example", "evil.example:9099", "127.0.0.1.evil.example", "localhost.evil:80"] {
        assert!(!accepts_host(&patterns, &headers(&[("host", host)])), "{host}");
    }
    assert!(!accepts_host(&patterns, &HeaderMap::new()), "no Host");
    assert!(accept_hosts("(").is_err(), "an invalid pattern is an error");
}

#[test]
fn a_post_from_another_site_is_told_apart_from_the_pages_own() {
    let host = ("host", "127.0.0.1:9099");
    assert!(same_origin(&headers(&[host, ("origin", "http://127.0.0.1:9099"), ("sec-fetch-site", "same-origin")])));
    assert!(same_origin(&headers(&[host])), "a client that sends neither (curl) relies on the token");
    assert!(!same_origin(&headers(&[host, ("origin", "http://evil.example")])));
    assert!(!same_origin(&headers(&[host, ("origin", "null")])));
    assert!(!same_origin(&headers(&[host, ("sec-fetch-site", "cross-site")])));
    assert!(!same_origin(&headers(&[host, ("sec-fetch-site", "same-site")])));
}

#[test]
fn tokens_compare_whole() {
    assert!(constant_time_eq(b"abc", b"abc"));
    assert!(!constant_time_eq(b"abc", b"abd"));
    assert!(!constant_time_eq(b"abc", b"abcd"));
}
