use std::collections::{BTreeMap, BTreeSet, HashSet};

use kube::core::{ApiResource, GroupVersionKind};

use super::reference::aggregate;
use super::*;
use crate::cluster::DryRun;
use crate::cluster::list::Listed;
use crate::cluster::mapper::{ApiEntry, ApiIndex, GroupKind, gvk_string, printed_name};
use crate::keys::{
    ADDITIONAL_NAMESPACES_ANNOTATION, DEPRECATED_GROUP_RESOURCES_ANNOTATION, GROUP_KINDS_ANNOTATION, PARENT_ID_LABEL,
    PART_OF_LABEL, PruneMark, TOOLING_ANNOTATION,
};

fn ar(group: &str, version: &str, kind: &str, plural: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural)
}

fn entry(
    group: &str,
    version: &str,
    kind: &str,
    plural: &str,
    namespaced: bool,
    short: &[&str],
    preferred: bool,
) -> ApiEntry {
    ApiEntry {
        api_resource: ar(group, version, kind, plural),
        namespaced,
        singular: kind.to_lowercase(),
        short_names: short.iter().map(|s| s.to_string()).collect(),
        preferred,
        verbs: vec!["list".into()],
    }
}

fn index() -> ApiIndex {
    ApiIndex::from_entries(vec![
        entry("", "v1", "ConfigMap", "configmaps", true, &["cm"], true),
        entry("", "v1", "Secret", "secrets", true, &[], true),
        entry("", "v1", "Namespace", "namespaces", false, &["ns"], true),
        entry("apps", "v1", "Deployment", "deployments", true, &["deploy"], true),
        entry("company.com", "v1", "ApplySet", "applysets", false, &[], true),
        entry("company.com", "v1alpha1", "ApplySet", "applysets", false, &[], false),
    ])
}

#[test]
fn id_test_vectors() {
    assert_eq!(applyset_id("my-set", "test", "Secret", ""), "applyset-0eFHV8ySqp7XoShsGvyWFQD3s96yqwHmzc4e0HR1dsY-v1");
    assert_eq!(
        applyset_id("my-set", "", "ApplySet", "company.com"),
        "applyset-rhp1a-HVAVT_dFgyEygyA1BEB82HPp2o10UiFTpqtAs-v1"
    );
    // Seen on the real kubectl 1.33 parent `myset` in namespace `probe-a`.
    assert_eq!(
        applyset_id("myset", "probe-a", "Secret", ""),
        "applyset-CVmZ4ZXxOBAvEywHTyZE3saQEM3X5srFo2g7BB9dLmk-v1"
    );
}

#[test]
fn tooling_values() {
    assert_eq!(tooling(), format!("applyset/v{}", env!("CARGO_PKG_VERSION")));
    assert_eq!(tooling_base_name("kubectl/v1.33.1"), "kubectl");
    assert_eq!(tooling_base_name("a/b/v1"), "a/b");
    assert_eq!(tooling_base_name("helm"), "helm");
}

#[test]
fn parent_ref_parsing() {
    assert_eq!(
        parse_parent_ref("my-set").unwrap(),
        ParentRefSpec { resource: "secrets".into(), group: "".into(), version: "v1".into(), name: "my-set".into() }
    );
    assert_eq!(
        parse_parent_ref("applysets.company.com/x").unwrap(),
        ParentRefSpec {
            resource: "applysets".into(),
            group: "company.com".into(),
            version: "".into(),
            name: "x".into()
        }
    );
    assert_eq!(parse_parent_ref("cm/x").unwrap().resource, "cm");
    assert_eq!(
        parse_parent_ref("secret/").unwrap_err().to_string(),
        r#"invalid parent reference "secret/": name cannot be blank"#
    );
    assert_eq!(parse_parent_ref("").unwrap_err().to_string(), r#"invalid parent reference "": name cannot be blank"#);
}

#[test]
fn resource_resolution_errors_match_kubectl() {
    let index = index();
    assert_eq!(
        index.for_resource("", "", "").unwrap_err().to_string(),
        "a resource must be present, got: /, Resource="
    );
    assert_eq!(index.for_resource("", "", "foo").unwrap_err().to_string(), "no matches for /, Resource=foo");
    assert_eq!(
        index.for_resource("v1", "", "configmap").unwrap_err().to_string(),
        "no matches for v1/, Resource=configmap"
    );
    assert_eq!(index.for_resource("", "", "cm").unwrap().api_resource.kind, "ConfigMap");
    assert_eq!(index.for_resource("", "", "secret").unwrap().api_resource.kind, "Secret");
    assert_eq!(index.for_resource("", "v1", "secrets").unwrap().api_resource.kind, "Secret");
    // An empty group matches any group.
    assert_eq!(index.for_resource("", "", "deployments").unwrap().api_resource.group, "apps");
    assert_eq!(index.for_resource("company.com", "", "applysets").unwrap().api_resource.version, "v1");
    assert_eq!(
        index.for_gvk("apps", "v9", "Deployment").unwrap_err().to_string(),
        r#"no matches for kind "Deployment" in version "apps/v9""#
    );
    assert_eq!(index.for_gvk("", "v1", "Foo").unwrap_err().to_string(), r#"no matches for kind "Foo" in version "v1""#);
    assert_eq!(
        index.for_group_kind(&GroupKind::parse("Foo.bar")).unwrap_err().to_string(),
        r#"no matches for kind "Foo" in group "bar""#
    );
    assert_eq!(index.for_group_kind(&GroupKind::parse("ApplySet.company.com")).unwrap().api_resource.version, "v1");
}

#[test]
fn validation_messages() {
    let deployments = ar("apps", "v1", "Deployment", "deployments");
    assert_eq!(
        validate_parent(&deployments, true, "", None),
        vec![
            "namespace is required to use namespace-scoped ApplySet".to_owned(),
            r#"resource "apps/v1, Resource=deployments" is not permitted as an ApplySet parent"#.to_owned(),
        ]
    );
    let namespaces = ar("", "v1", "Namespace", "namespaces");
    assert_eq!(
        validate_parent(&namespaces, false, "", Some(&Ok(BTreeSet::new()))),
        vec![r#"resource "/v1, Resource=namespaces" is not permitted as an ApplySet parent"#.to_owned()]
    );
    let secrets = ar("", "v1", "Secret", "secrets");
    assert!(validate_parent(&secrets, true, "ns", None).is_empty());
    assert_eq!(
        validate_parent(&secrets, true, "", None),
        vec!["namespace is required to use namespace-scoped ApplySet"]
    );
    let custom = ar("company.com", "v1", "ApplySet", "applysets");
    let permitted: BTreeSet<_> = [("company.com".to_owned(), "applysets".to_owned())].into();
    assert!(validate_parent(&custom, false, "", Some(&Ok(permitted))).is_empty());
    assert_eq!(
        validate_parent(
            &custom,
            false,
            "",
            Some(&Err(kube::Error::Api(Box::new(kube::core::Status::failure("boom", "InternalError").with_code(500)))))
        ),
        vec![
            "identifying allowed custom resource parent types: boom".to_owned(),
            r#"resource "company.com/v1, Resource=applysets" is not permitted as an ApplySet parent"#.to_owned(),
        ]
    );
    assert_eq!(aggregate(vec!["a".into(), "b".into()]).unwrap_err().to_string(), "a\nb");
}

#[test]
fn annotations_are_sorted_and_joined() {
    let kinds = [
        GroupKind::new("apps", "Deployment"),
        GroupKind::new("", "Service"),
        GroupKind::new("", "ReplicationController"),
    ];
    assert_eq!(group_kinds_annotation(&kinds), "Deployment.apps,ReplicationController,Service");
    assert_eq!(group_kinds_annotation(&[]), "");
    // Byte order, like Go's sort.Strings: upper case before lower case.
    let mixed = [GroupKind::new("", "b"), GroupKind::new("", "B"), GroupKind::new("x.io", "A")];
    assert_eq!(group_kinds_annotation(&mixed), "A.x.io,B,b");
    let namespaces: Vec<String> = vec!["zeta".into(), "alpha".into(), "parent".into()];
    assert_eq!(namespaces_annotation(&namespaces, "parent"), "alpha,zeta");
    assert_eq!(namespaces_annotation(&namespaces, ""), "alpha,parent,zeta");
    assert_eq!(namespaces_annotation(&Vec::<String>::new(), "x"), "");
    assert_eq!(GroupKind::parse("ConfigMap"), GroupKind::new("", "ConfigMap"));
    assert_eq!(GroupKind::parse("Certificate.cert-manager.io"), GroupKind::new("cert-manager.io", "Certificate"));
    assert_eq!(parse_namespaces_annotation(Some("")), BTreeSet::new());
    assert_eq!(parse_namespaces_annotation(None), BTreeSet::new());
    assert_eq!(parse_namespaces_annotation(Some("b,a")), ["a".to_owned(), "b".to_owned()].into());
}

fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

#[test]
fn recorded_kinds() {
    assert_eq!(
        parse_recorded_kinds(&map(&[(GROUP_KINDS_ANNOTATION, "ConfigMap,Deployment.apps")])).unwrap(),
        RecordedKinds::GroupKinds(vec![GroupKind::new("", "ConfigMap"), GroupKind::new("apps", "Deployment")])
    );
    assert_eq!(parse_recorded_kinds(&map(&[(GROUP_KINDS_ANNOTATION, "")])).unwrap(), RecordedKinds::GroupKinds(vec![]));
    assert_eq!(
        parse_recorded_kinds(&map(&[(DEPRECATED_GROUP_RESOURCES_ANNOTATION, "configmaps,deployments.apps")])).unwrap(),
        RecordedKinds::GroupResources(vec![("configmaps".into(), "".into()), ("deployments".into(), "apps".into())])
    );
    assert_eq!(
        parse_recorded_kinds(&map(&[(DEPRECATED_GROUP_RESOURCES_ANNOTATION, "")])).unwrap_err().to_string(),
        r#"kubectl requires the "applyset.kubernetes.io/contains-group-kinds" annotation to be set on all ApplySet parent objects"#
    );
}

#[test]
fn existing_parent_checks_in_kubectl_order() {
    let id = "applyset-x-v1";
    let r = "secrets./myset";
    let good_labels = map(&[(PARENT_ID_LABEL, id)]);
    let controller = Tooling::Controller;
    assert_eq!(
        check_existing_parent(r, controller, id, &good_labels, &map(&[])).unwrap_err().to_string(),
        r#"ApplySet parent object "secrets./myset" already exists and is missing required annotation "applyset.kubernetes.io/tooling""#
    );
    let kubectls = map(&[(TOOLING_ANNOTATION, "kubectl/v1.33.1")]);
    assert_eq!(
        check_existing_parent(r, controller, id, &good_labels, &kubectls).unwrap_err().to_string(),
        r#"ApplySet parent object "secrets./myset" already exists and is managed by tooling "kubectl" instead of "applyset""#
    );
    let ours = map(&[(TOOLING_ANNOTATION, "applyset/v0.0.1")]);
    assert_eq!(
        check_existing_parent(r, controller, id, &map(&[]), &ours).unwrap_err().to_string(),
        r#"ApplySet parent object "secrets./myset" exists and does not have required label applyset.kubernetes.io/id"#
    );
    assert_eq!(
        check_existing_parent(r, controller, id, &map(&[(PARENT_ID_LABEL, "wrong")]), &ours).unwrap_err().to_string(),
        r#"ApplySet parent object "secrets./myset" exists and has incorrect value for label "applyset.kubernetes.io/id" (got: wrong, want: applyset-x-v1)"#
    );
    assert!(check_existing_parent(r, controller, id, &good_labels, &ours).is_ok());
    // The CLI is kubectl: it takes kubectl's sets (any kubectl version) and names the real
    // defect of an invalid one; the controller's sets are another tool's.
    let cli = Tooling::Kubectl;
    assert!(check_existing_parent(r, cli, id, &good_labels, &map(&[(TOOLING_ANNOTATION, "kubectl/v1.30.0")])).is_ok());
    assert_eq!(
        check_existing_parent(r, cli, id, &map(&[]), &kubectls).unwrap_err().to_string(),
        r#"ApplySet parent object "secrets./myset" exists and does not have required label applyset.kubernetes.io/id"#
    );
    assert_eq!(
        check_existing_parent(r, cli, id, &good_labels, &ours).unwrap_err().to_string(),
        r#"ApplySet parent object "secrets./myset" already exists and is managed by tooling "applyset" instead of "kubectl""#
    );
    assert_eq!(cli.annotation(), "kubectl/v1.33.1");
    assert_eq!(controller.annotation(), tooling());
}

fn parent(namespace: &str) -> Parent {
    Parent::new(ar("", "v1", "Secret", "secrets"), true, "set", namespace, index(), Tooling::Controller)
}

#[test]
fn superset_and_latest_bodies() {
    let mut p = parent("ns");
    p.current_kinds.insert(
        GroupKind::new("apps", "Deployment"),
        RecordedKind { api_resource: ar("apps", "v1", "Deployment", "deployments"), namespaced: true },
    );
    p.current_namespaces = ["ns".to_owned(), "old".to_owned()].into();
    p.updated_kinds.insert(GroupKind::new("", "ConfigMap"));
    p.updated_namespaces.insert("ns".into());
    let superset = p.superset_body();
    assert_eq!(
        superset,
        serde_json::json!({
            "kind": "Secret",
            "apiVersion": "v1",
            "metadata": {
                "name": "set",
                "namespace": "ns",
                "labels": { PARENT_ID_LABEL: p.id() },
                "annotations": {
                    TOOLING_ANNOTATION: tooling(),
                    GROUP_KINDS_ANNOTATION: "ConfigMap,Deployment.apps",
                    ADDITIONAL_NAMESPACES_ANNOTATION: "old",
                },
            },
        })
    );
    let latest = p.latest_body();
    assert_eq!(latest["metadata"]["annotations"][GROUP_KINDS_ANNOTATION], "ConfigMap");
    assert_eq!(latest["metadata"]["annotations"][ADDITIONAL_NAMESPACES_ANNOTATION], "");
    assert_eq!(p.reference(), "secrets./set");
    assert_eq!(p.part_of_label(), (PART_OF_LABEL, p.id().to_owned()));
    assert_eq!(p.member_selector(), format!("applyset.kubernetes.io/part-of={}", p.id()));
}

#[test]
fn member_labels() {
    let p = parent("ns");
    let mut object = serde_json::json!({"kind": "ConfigMap", "metadata": {"name": "a"}});
    p.add_labels(&mut object).unwrap();
    assert_eq!(object["metadata"]["labels"][PART_OF_LABEL], p.id());
    assert_eq!(
        p.add_labels(&mut object).unwrap_err().to_string(),
        r#"ApplySet label "applyset.kubernetes.io/part-of" already set in input data"#
    );
    let mut bare = serde_json::json!({"kind": "ConfigMap", "metadata": {"labels": null}});
    p.add_labels(&mut bare).unwrap();
    assert_eq!(bare["metadata"]["labels"][PART_OF_LABEL], p.id());
}

#[test]
fn an_index_from_aggregated_discovery() {
    let apis = serde_json::json!({"kind": "APIGroupDiscoveryList", "items": [{
        "metadata": {"name": "apps"},
        "versions": [
            {"version": "v1", "resources": [
                {"resource": "deployments", "responseKind": {"kind": "Deployment"}, "scope": "Namespaced",
                 "singularResource": "deployment", "shortNames": ["deploy"], "verbs": ["get", "list"]},
                {"resource": "deployments/status", "responseKind": {"kind": "Deployment"}, "scope": "Namespaced"}
            ]},
            {"version": "v1beta1", "resources": [
                {"resource": "deployments", "responseKind": {"kind": "Deployment"}, "scope": "Namespaced"}
            ]}
        ]
    }]});
    let core = serde_json::json!({"kind": "APIGroupDiscoveryList", "items": [{
        "metadata": {"name": ""},
        "versions": [{"version": "v1", "resources": [
            {"resource": "namespaces", "responseKind": {"kind": "Namespace"}, "scope": "Cluster", "verbs": ["list"]}
        ]}]
    }]});
    let index = ApiIndex::from_aggregated(&[&core, &apis]);
    let deployment = index.for_group_kind(&GroupKind::new("apps", "Deployment")).unwrap();
    assert_eq!((deployment.api_resource.version.as_str(), deployment.singular.as_str()), ("v1", "deployment"));
    assert_eq!(deployment.short_names, ["deploy"]);
    assert!(deployment.namespaced && deployment.preferred);
    let namespace = index.for_group_kind(&GroupKind::new("", "Namespace")).unwrap();
    assert!(!namespace.namespaced);
    assert_eq!(namespace.singular, "namespace", "the kind in lower case when discovery has no singular");
    let listable: Vec<&str> = index.namespaced_listable().map(|e| e.api_resource.plural.as_str()).collect();
    assert_eq!(listable, ["deployments"], "preferred versions only, no subresources");
}

#[test]
fn applyset_candidates() {
    let items = vec![
        Listed {
            name: "b".into(),
            namespace: Some("ns".into()),
            uid: "2".into(),
            has_last_applied: false,
            ..Listed::default()
        },
        Listed {
            name: "a".into(),
            namespace: Some("ns".into()),
            uid: "1".into(),
            has_last_applied: true,
            ..Listed::default()
        },
        Listed {
            name: "c".into(),
            namespace: Some("ns".into()),
            uid: "3".into(),
            has_last_applied: true,
            ..Listed::default()
        },
    ];
    let visited: HashSet<&str> = ["3"].into();
    let names: Vec<&str> = select_applyset_candidates(&items, &visited).iter().map(|l| l.name.as_str()).collect();
    // No last-applied requirement for ApplySet prune.
    assert_eq!(names, ["a", "b"]);
}

#[test]
fn printed_names_and_suffixes() {
    assert_eq!(printed_name(&ar("", "v1", "ConfigMap", "configmaps"), "x"), "configmap/x");
    assert_eq!(printed_name(&ar("apps", "v1", "Deployment", "deployments"), "x"), "deployment.apps/x");
    assert_eq!(DryRun::None.suffix(), "");
    assert_eq!(DryRun::Client.suffix(), " (dry run)");
    assert_eq!(DryRun::Server.suffix(), " (server dry run)");
    assert_eq!(gvk_string("", "v1", "ConfigMap"), "/v1, Kind=ConfigMap");
}

#[test]
fn members_recorded_elsewhere_widen_what_an_edited_parent_records() {
    let mut p = parent("ns");
    // The annotations say Deployments in "ns" only (someone removed the rest by hand).
    p.current_kinds.insert(
        GroupKind::new("apps", "Deployment"),
        RecordedKind { api_resource: ar("apps", "v1", "Deployment", "deployments"), namespaced: true },
    );
    p.current_namespaces = ["ns".to_owned()].into();
    let members = [
        ("Deployment.apps", Some("ns")),
        ("ConfigMap", Some("team-b")),
        ("Namespace", None),
        ("Gone.example.com", Some("ns")),
    ];
    let restored = p.include_recorded(members);
    assert_eq!(restored, ["ConfigMap", "Namespace", "namespace team-b"]);
    let kinds: Vec<String> = p.current_kinds().map(ToString::to_string).collect();
    assert_eq!(kinds, ["ConfigMap", "Namespace", "Deployment.apps"], "a kind no longer served is left out");
    assert!(p.current_namespaces().contains("team-b"));
    // The next superset write records them again.
    let superset = p.superset_body();
    assert_eq!(superset["metadata"]["annotations"][GROUP_KINDS_ANNOTATION], "ConfigMap,Deployment.apps,Namespace");
    assert_eq!(superset["metadata"]["annotations"][ADDITIONAL_NAMESPACES_ANNOTATION], "team-b");
    assert!(p.include_recorded(members).is_empty(), "nothing missing the second time");
}

#[test]
fn do_not_prune_marks_of_every_anchor() {
    let find = |pairs: &[(&str, &str)]| {
        let map: BTreeMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        PruneMark::find(|key| map.get(key).map(String::as_str))
    };
    assert_eq!(find(&[("applyset.dev/prune", "disabled")]), Some(PruneMark::Applyset));
    assert_eq!(find(&[("helm.sh/resource-policy", "keep")]), Some(PruneMark::Helm));
    assert_eq!(find(&[("kustomize.toolkit.fluxcd.io/prune", "disabled")]), Some(PruneMark::Flux));
    assert_eq!(find(&[("argocd.argoproj.io/sync-options", "Prune=false")]), Some(PruneMark::ArgoCd));
    assert_eq!(find(&[("client.lifecycle.config.k8s.io/deletion", "detach")]), Some(PruneMark::Kpt));
    assert_eq!(
        find(&[("argocd.argoproj.io/sync-options", "ServerSideApply=true, Prune=false")]),
        Some(PruneMark::ArgoCd)
    );
    for (key, value) in [
        ("applyset.dev/prune", "enabled"),
        ("helm.sh/resource-policy", "delete"),
        ("kustomize.toolkit.fluxcd.io/prune", "enabled"),
        ("argocd.argoproj.io/sync-options", "Prune=true,Delete=false"),
        ("argocd.argoproj.io/compare-options", "Prune=false"),
        ("client.lifecycle.config.k8s.io/deletion", "delete"),
        ("client.lifecycle.config.k8s.io/mutation", "detach"),
    ] {
        assert_eq!(find(&[(key, value)]), None, "{key}: {value}");
    }
    assert_eq!(PruneMark::Helm.text(), "helm.sh/resource-policy: keep");
}
