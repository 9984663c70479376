use std::sync::Arc;

use super::*;
use crate::keys::PRUNE_OPT_OUT;

fn read(text: &str) -> Entry {
    Entry::from_json(Arc::from(text)).expect("an object")
}

/// A Deployment as the apiserver writes it (its key order, not sorted), with `metadata`'s
/// `extra` fields and `annotations` spliced in.
fn deployment(extra: &str, annotations: &str, status: &str) -> String {
    format!(
        r#"{{"kind":"Deployment","apiVersion":"apps/v1","metadata":{{"name":"web","namespace":"shop","uid":"u-1","resourceVersion":"7","generation":2,{extra}"labels":{{"{PART_OF_LABEL}":"applyset-a-v1","app":"web"}},"annotations":{{{annotations}}},"managedFields":[{{"manager":"kubectl-client-side-apply"}}]}},"spec":{{"replicas":2,"template":{{"spec":{{"containers":[{{"name":"web","image":"web:1"}}]}}}}}},"status":{{{status}}}}}"#
    )
}

const APPLIED: &str = r#""kubectl.kubernetes.io/last-applied-configuration":"{\"kind\":\"Deployment\"}\n""#;

#[test]
fn reads_every_field_the_entry_keeps_from_the_text_as_sent() {
    let text = deployment(
        r#""deletionTimestamp":"2026-11-29T10:00:00Z","finalizers":["a/b","c"],"#,
        &format!(r#"{APPLIED},"argocd.argoproj.io/sync-options":"ServerSideApply=true, Prune=false""#),
        r#""replicas":2"#,
    );
    let entry = read(&text);
    assert_eq!(entry.listed.name, "web");
    assert_eq!(entry.listed.namespace.as_deref(), Some("shop"));
    assert_eq!(entry.listed.uid, "u-1");
    assert_eq!(entry.listed.cached_version.as_deref(), Some("7"));
    assert_eq!(entry.resource_version, "7");
    assert_eq!(entry.set_id, "applyset-a-v1");
    assert!(entry.listed.has_last_applied && entry.listed.deleting);
    assert_eq!(entry.listed.finalizers, ["a/b", "c"]);
    assert_eq!(entry.listed.prune_mark, Some(PruneMark::ArgoCd));
    assert!(matches!(&entry.body, Body::Text(body) if **body == *text), "the body is the text as sent");
    // Indented the same (what a proxy or a hand-written list may send): the same fields.
    let indented = serde_json::to_string_pretty(&serde_json::from_str::<serde_json::Value>(&text).expect("JSON"))
        .expect("indented");
    let again = read(&indented);
    assert_eq!(
        (&again.listed, &again.set_id, &again.resource_version),
        (&entry.listed, &entry.set_id, &entry.resource_version)
    );

    let plain = read(&deployment("", "", ""));
    assert!(!plain.listed.has_last_applied && !plain.listed.deleting && plain.listed.finalizers.is_empty());
    assert_eq!(plain.listed.prune_mark, None);
}

#[test]
fn escaped_strings_are_read_as_what_they_say() {
    let text = format!(
        r#"{{"metadata":{{"n\u0061me":"w\u0065b","namespace":"","uid":"u","annotations":{{"{PRUNE_OPT_OUT}":"dis\u0061bled"}}}}}}"#
    );
    let entry = read(&text);
    assert_eq!(entry.listed.name, "web");
    assert_eq!(entry.listed.namespace, None, "an empty namespace is a cluster-scoped object");
    assert_eq!(entry.listed.prune_mark, Some(PruneMark::Applyset));
}

#[test]
fn the_digest_leaves_out_status_the_apiservers_metadata_and_the_clusters_annotations() {
    let base = read(&deployment("", APPLIED, r#""replicas":2"#)).content;
    // kube-controller-manager's rollout: status, version, generation, managedFields, revision.
    let rolled = deployment("", &format!(r#"{APPLIED},"deployment.kubernetes.io/revision":"3""#), r#""replicas":3"#)
        .replace(r#""resourceVersion":"7","generation":2"#, r#""resourceVersion":"9","generation":3"#)
        .replace("kubectl-client-side-apply", "kube-controller-manager");
    assert_eq!(read(&rolled).content, base);
    // A LIST's item has no apiVersion and kind.
    let listed = deployment("", APPLIED, "").replace(r#""kind":"Deployment","apiVersion":"apps/v1","#, "");
    assert_eq!(read(&listed).content, base);
    // Annotations holding only the cluster's own count as none at all.
    let none = read(&deployment("", "", "")).content;
    assert_eq!(read(&deployment("", r#""deployment.kubernetes.io/revision":"1""#, "")).content, none);

    let changed = [
        deployment("", APPLIED, "").replace(r#""replicas":2"#, r#""replicas":3"#),
        deployment("", &APPLIED.replace("Deployment", "Deploy"), ""),
        deployment("", &format!(r#"{APPLIED},"team":"a""#), ""),
        deployment("", APPLIED, "").replace(r#""app":"web""#, r#""app":"api""#),
        deployment(r#""finalizers":["x"],"#, APPLIED, ""),
        deployment("", APPLIED, "").replace(r#""image":"web:1""#, r#""image":"web:2""#),
    ];
    for text in changed {
        assert_ne!(read(&text).content, base, "{text}");
    }
}

#[test]
fn the_digest_does_not_depend_on_key_order_where_keys_are_left_out() {
    let sorted = r#"{"apiVersion":"v1","data":{"a":"1"},"kind":"ConfigMap","metadata":{"annotations":{"b":"2","team":"x"},"name":"c","uid":"u"}}"#;
    let as_sent = r#"{"kind":"ConfigMap","metadata":{"uid":"u","name":"c","annotations":{"team":"x","b":"2"}},"data":{"a":"1"},"apiVersion":"v1"}"#;
    assert_eq!(read(sorted).content, read(as_sent).content);
    // The same bytes at another level are another object.
    let moved =
        r#"{"kind":"ConfigMap","metadata":{"uid":"u","name":"c","annotations":{"team":"x"},"b":"2"},"data":{"a":"1"}}"#;
    assert_ne!(read(moved).content, read(sorted).content);
}

#[test]
fn what_is_not_an_object_is_an_error_and_odd_metadata_is_read_as_far_as_it_goes() {
    for text in ["[]", "\"web\"", "{\"metadata\":", ""] {
        assert!(Entry::from_json(Arc::from(text)).is_err(), "{text}");
    }
    for text in
        [r#"{"metadata":null}"#, r#"{"metadata":{"name":3,"labels":[],"annotations":"x","finalizers":[1,"f"]}}"#]
    {
        let entry = read(text);
        assert_eq!(entry.listed.name, "", "{text}");
        assert!(entry.set_id.is_empty() && !entry.listed.has_last_applied, "{text}");
    }
    let odd = read(r#"{"metadata":{"finalizers":[1,"f"]}}"#);
    assert_eq!(odd.listed.finalizers, ["f"], "the strings of a list holding others");
}

#[test]
fn a_deeply_nested_object_is_read_on_a_small_stack() {
    // Tokio's worker threads have 2 MiB stacks; the values under the levels read are skipped
    // as text, however deep. (A tree parse refused such an object past its depth limit, and
    // with it the whole LIST of its kind.)
    std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(|| {
            let depth = 100_000;
            let text = format!(
                r#"{{"metadata":{{"name":"deep","uid":"u"}},"spec":{}{}}}"#,
                "[".repeat(depth),
                "]".repeat(depth)
            );
            let read = Entry::from_json(Arc::from(text.as_str()));
            assert_eq!(read.map(|entry| entry.listed.name).map_err(|e| e.to_string()), Ok("deep".to_owned()));
        })
        .expect("a thread")
        .join()
        .expect("no overflow");
}
