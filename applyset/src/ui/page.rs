//! The HTML of the pages (maud escapes every value it is given): a layout, the list of
//! ApplySets and the page of one, the latter two also as the fragments the live stream sends.

use maud::{DOCTYPE, Markup, html};

use super::view::{Badge, Detail, Drift, Prune, Row, Tone};
use crate::commands::fleet::tree::Entry as ObjectEntry;
use crate::operator::api::DriftedObject;

/// What every page shows around its content.
pub struct Frame<'a> {
    pub title: &'a str,
    /// The kubeconfig context (or server) the pages read.
    pub context: &'a str,
    /// The live stream of this page's content.
    pub live: &'a str,
    /// A notice from the last action (its text, and whether it failed).
    pub notice: Option<(&'a str, bool)>,
    /// A filter box above the content (the list page).
    pub filter: bool,
}

pub fn layout(frame: &Frame<'_>, content: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (frame.title) " · applyset" }
                link rel="stylesheet" href="/assets/app.css";
                script src="/assets/app.js" defer {}
            }
            body {
                a.skip href="#content" { "Skip to content" }
                header.top {
                    a.brand href="/" { "applyset" }
                    span.context title="the cluster (kubeconfig)" { (frame.context) }
                    span #live.live role="status" aria-live="polite" { "connecting…" }
                }
                @if let Some((text, failed)) = frame.notice {
                    p.notice.(if failed { "bad" } else { "good" }) role="alert" { (text) }
                }
                @if frame.filter {
                    div.filter {
                        label for="filter" { "Filter" }
                        input #filter type="search" placeholder="namespace, name, reason, revision" autocomplete="off";
                    }
                }
                main #content data-live=(frame.live) tabindex="-1" { (content) }
            }
        }
    }
}

/// A table's header row.
fn head(columns: &[&str]) -> Markup {
    html! { thead { tr { @for column in columns { th scope="col" { (column) } } } } }
}

fn badge(badge: &Badge) -> Markup {
    html! { span.badge.(tone_class(badge.tone)) title=(badge.title) { (badge.text) } }
}

fn tone_class(tone: Tone) -> &'static str {
    match tone {
        Tone::Bad => "bad",
        Tone::Pending => "pending",
        Tone::Good => "good",
        Tone::Neutral => "neutral",
    }
}

/// The link to an ApplySet's page.
pub fn detail_path(namespace: &str, name: &str) -> String {
    format!("/applysets/{namespace}/{name}")
}

/// The list page's content. `scope` says which namespace is shown when the identity may not
/// list every namespace.
pub fn list(rows: &[Row], scope: Option<&str>) -> Markup {
    let not_ready = rows.iter().filter(|r| r.ready.tone == Tone::Bad).count();
    let drifted = rows.iter().filter(|r| r.drifted.text == "True").count();
    let suspended = rows.iter().filter(|r| r.suspended).count();
    html! {
        h1 { "ApplySets" }
        p.summary {
            (rows.len()) @if rows.len() == 1 { " ApplySet · " } @else { " ApplySets · " } (not_ready) " not ready · " (drifted) " drifted · " (suspended) " suspended"
            @if let Some(namespace) = scope {
                " · namespace " strong { (namespace) } " only: this identity may not list ApplySets in every namespace"
            }
        }
        @if rows.is_empty() {
            p.empty { "No ApplySets." }
        } @else {
            table.applysets {
                (head(&["Namespace", "Name", "Ready", "Healthy", "Drifted", "Revision", "Last change", "Message"]))
                tbody {
                    @for row in rows {
                        tr data-search=(format!("{}/{} {} {}", row.namespace, row.name, row.ready.text, row.revision)) {
                            td.nowrap { (row.namespace) }
                            td.nowrap { a href=(detail_path(&row.namespace, &row.name)) { (row.name) } }
                            td { (badge(&row.ready)) }
                            td { (badge(&row.healthy)) }
                            td { (badge(&row.drifted)) }
                            td.mono { (row.revision) }
                            td { @if let Some((age, at)) = &row.changed { time datetime=(at) title=(at) { (age) " ago" } } }
                            td.message { (row.message) }
                        }
                    }
                }
            }
        }
    }
}

/// One ApplySet's page content; its forms carry `csrf`.
pub fn detail(detail: &Detail, csrf: &str) -> Markup {
    let path = detail_path(&detail.namespace, &detail.name);
    let action = |name: &str, label: &str, hint: &str| {
        html! {
            form.action method="post" action=(format!("{path}/{name}")) {
                input type="hidden" name="csrf" value=(csrf);
                // The approval is what a guarded ApplySet waits for: it stands out.
                button.primary[name == "approve-prune"] type="submit" title=(hint) { (label) }
            }
        }
    };
    html! {
        nav.crumbs aria-label="breadcrumb" { a href="/" { "ApplySets" } " / " (detail.namespace) }
        h1 { (detail.name) " " (badge(&detail.ready)) }
        dl.facts {
            dt { "Source" } dd.mono { (detail.source) }
            dt { "Revision" } dd.mono { (detail.revision.as_deref().unwrap_or("-")) }
            dt { "Objects" } dd { (detail.object_count) }
        }
        div.actions {
            @if !detail.suspended {
                (action("reconcile", "Reconcile now", "run now, reading git again"))
                (action("suspend", "Suspend", "stop reconciling (spec.suspend: true)"))
            } @else {
                (action("resume", "Resume", "reconcile again (spec.suspend: false)"))
            }
            @if let Some(revision) = &detail.guarded_revision {
                (action("approve-prune", "Approve prune", &format!("let {revision} prune (applyset.dev/approve-prune)")))
            }
        }
        nav.sections aria-label="sections" {
            a href="#conditions" { "Conditions" } a href="#objects" { "Objects" } a href="#drift" { "Drift" }
            a href="#revisions" { "Revisions" } a href="#prune" { "Prune" } a href="#events" { "Events" }
        }
        section #conditions {
            h2 { "Conditions" }
            table {
                (head(&["Type", "Status", "Reason", "Message", "Changed"]))
                tbody { @for c in &detail.conditions {
                    tr { td { (c.type_) } td { span.badge.(tone_class(c.tone)) { (c.status) } } td { (c.reason) } td.message { (c.message) }
                         td { time datetime=(c.changed.1) title=(c.changed.1) { (c.changed.0) " ago" } } }
                } }
            }
        }
        section #objects {
            h2 { "Objects" }
            @if detail.objects.is_empty() { p.empty { "No objects recorded yet." } }
            ul.tree {
                @for (namespace, kinds) in &detail.objects {
                    li {
                        span.ns { (namespace.as_deref().unwrap_or("(cluster-scoped)")) }
                        ul { @for (kind, entries) in kinds {
                            li { span.kind { (kind) } ul { @for entry in entries { li { (object(entry)) } } } }
                        } }
                    }
                }
            }
        }
        section #drift { h2 { "Drift" } (drift(&detail.drift)) }
        section #revisions {
            h2 { "Revisions" }
            @if detail.revisions.is_empty() { p.empty { "Nothing applied yet." } } @else {
                table {
                    (head(&["Revision", "Path", "Applied", "Result"]))
                    tbody { @for r in &detail.revisions {
                        tr { td.mono { (r.revision) } td.mono { (r.path.as_deref().unwrap_or("")) }
                             td.nowrap { @if let Some(at) = &r.applied_at { time datetime=(at.0.to_string()) { (at.0.to_string()) } } }
                             td { (r.result) @if let Some(message) = &r.message { ": " (message) } } }
                    } }
                }
            }
        }
        section #prune { h2 { "Prune" } (prune(&detail.prune)) }
        section #events {
            h2 { "Events" }
            @if detail.events.is_empty() { p.empty { "No Events." } } @else {
                table {
                    (head(&["Last seen", "Type", "Reason", "Message"]))
                    tbody { @for e in &detail.events {
                        tr.(if e.type_ == "Warning" { "warning" } else { "" }) {
                            td { (e.last_seen) @if e.count > 1 { " (×" (e.count) ")" } } td { (e.type_) } td { (e.reason) } td.message { (e.message) }
                        }
                    } }
                }
            }
        }
    }
}

fn object(entry: &ObjectEntry) -> Markup {
    let tone = match entry.state.as_str() {
        "Failed" => Tone::Bad,
        "Drifted" => Tone::Pending,
        "Applied" => Tone::Good,
        _ => Tone::Neutral,
    };
    html! {
        span.name { (entry.name) } " "
        span.badge.(tone_class(tone)) { (entry.state) }
        @if let Some(health) = &entry.health {
            " " span.badge.(tone_class(if health == "Healthy" || health == "Current" { Tone::Good } else { Tone::Pending })) { (health) }
        }
        @if let Some(message) = &entry.message { " " span.message { (message) } }
        @if let Some(message) = &entry.health_message { " " span.message { (message) } }
    }
}

fn drifted_objects(objects: &[DriftedObject]) -> Markup {
    html! {
        table.drift {
            (head(&["Object", "Field", "Reason", "Manager", "Applied in"]))
            tbody { @for o in objects { @for f in &o.fields {
                tr {
                    td { (o.kind) "/" @if let Some(ns) = &o.namespace { (ns) "/" } (o.name) }
                    td.mono { (f.path) } td { (f.reason) } td.mono { (f.manager.as_deref().unwrap_or("-")) }
                    td.mono { (f.applied_in.as_deref().unwrap_or("-")) }
                }
            } } }
        }
    }
}

fn drift(drift: &Drift) -> Markup {
    html! {
        @if drift.objects.is_empty() && drift.removed.is_empty() {
            p.empty { "No drift found by the last run." }
        }
        @if !drift.objects.is_empty() {
            p { (drift.count) " object(s) drifted (mode " (drift.mode) "):" }
            (drifted_objects(&drift.objects))
        }
        @if !drift.removed.is_empty() {
            p { "Removed by the last run (stale and foreign fields):" }
            (drifted_objects(&drift.removed))
        }
    }
}

fn prune(prune: &Prune) -> Markup {
    html! {
        @if let Some(message) = &prune.guarded {
            p.notice.bad { strong { "Guarded: " } (message) }
        }
        @match &prune.pruned {
            Some((age, message)) => p { "Last pruned " (age) " ago: " (message) },
            None => p.empty { "Nothing pruned recently." },
        }
        @if !prune.skipped.is_empty() {
            p { "Kept (not pruned):" }
            ul { @for o in &prune.skipped {
                li { (o.kind) "/" @if let Some(ns) = &o.namespace { (ns) "/" } (o.name) @if let Some(m) = &o.message { ": " (m) } }
            } }
            @if prune.skipped_omitted > 0 { p { "and " (prune.skipped_omitted) " more" } }
        }
    }
}

/// A page for a request that went wrong (not found, refused).
pub fn problem(message: &str) -> Markup {
    html! { h1 { "Not available" } p.notice.bad role="alert" { (message) } p { a href="/" { "All ApplySets" } } }
}
