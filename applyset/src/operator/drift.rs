//! Drift, from the patch apply would send: which fields differ, who last wrote them
//! (`metadata.managedFields`), and which fields `spec.drift.ignore` takes out of both the
//! drift report and the patch. Pure functions over JSON values.

use applyset_merge::Value;

use super::api::{DriftIgnoreRule, DriftedField};
use crate::apply::selector::Selector;
use crate::fields::{FieldPath, Finding, Reason, managed, path};

/// The directive keys a strategic merge patch puts next to a field (`$setElementOrder/x`…).
const FIELD_DIRECTIVES: [&str; 2] = ["$setElementOrder/", "$deleteFromPrimitiveList/"];

/// `spec.drift.ignore`, parsed once per reconcile.
#[derive(Debug, Clone, Default)]
pub struct IgnoreRules {
    rules: Vec<ParsedRule>,
}

#[derive(Debug, Clone)]
struct ParsedRule {
    pointers: Vec<Vec<String>>,
    managers: Vec<String>,
    group: Option<String>,
    kind: Option<String>,
    name: Option<String>,
    namespace: Option<String>,
    selector: Option<Selector>,
}

impl IgnoreRules {
    /// Fails on a malformed pointer or label selector, naming the rule.
    pub fn new(rules: &[DriftIgnoreRule]) -> Result<IgnoreRules, IgnoreRuleError> {
        let mut parsed = Vec::with_capacity(rules.len());
        for (index, rule) in rules.iter().enumerate() {
            let pointers = rule
                .paths
                .iter()
                .map(|p| parse_pointer(p).map_err(|source| IgnoreRuleError::Path { index, source }))
                .collect::<Result<Vec<_>, _>>()?;
            let target = rule.target.clone().unwrap_or_default();
            let selector = target
                .label_selector
                .as_deref()
                .map(Selector::parse)
                .transpose()
                .map_err(|source| IgnoreRuleError::Selector { index, source })?;
            parsed.push(ParsedRule {
                pointers,
                managers: rule.managers.clone(),
                group: target.group,
                kind: target.kind,
                name: target.name,
                namespace: target.namespace,
                selector,
            });
        }
        Ok(IgnoreRules { rules: parsed })
    }

    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// The pointers that apply to `object` (a manifest: apiVersion, kind, metadata).
    pub fn pointers_for<'a>(&'a self, object: &Value) -> Vec<&'a [String]> {
        self.matching(object).into_iter().flat_map(|rule| rule.pointers.iter().map(Vec::as_slice)).collect()
    }

    /// The field managers whose fields are never drift, stale or foreign in `object`.
    pub fn managers_for<'a>(&'a self, object: &Value) -> Vec<&'a str> {
        self.matching(object).into_iter().flat_map(|rule| rule.managers.iter().map(String::as_str)).collect()
    }

    fn matching(&self, object: &Value) -> Vec<&ParsedRule> {
        let text = |path: &[&str]| {
            let mut node = object;
            for key in path {
                node = match node.as_object().and_then(|o| o.get(*key)) {
                    Some(next) => next,
                    None => return String::new(),
                };
            }
            node.as_str().unwrap_or("").to_owned()
        };
        let api_version = text(&["apiVersion"]);
        let group = api_version.rsplit_once('/').map_or("", |(group, _)| group).to_owned();
        let kind = text(&["kind"]);
        let name = text(&["metadata", "name"]);
        let namespace = text(&["metadata", "namespace"]);
        let matches = |wanted: &Option<String>, actual: &str| wanted.as_deref().is_none_or(|w| w == actual);
        self.rules
            .iter()
            .filter(|rule| {
                matches(&rule.group, &group)
                    && matches(&rule.kind, &kind)
                    && matches(&rule.name, &name)
                    && matches(&rule.namespace, &namespace)
                    && rule.selector.as_ref().is_none_or(|s| s.matches_object(object))
            })
            .collect()
    }

    /// Removes the ignored fields of `object` from `patch`.
    /// Removes the ignored fields of `object` from `patch`: the rules' paths, and the fields
    /// the live object's managedFields give to an ignored manager (a list they are in goes
    /// whole, as a patch's list element cannot be addressed alone).
    pub fn filter_patch(&self, object: &Value, live: &Value, patch: &mut Value) {
        for pointer in self.pointers_for(object) {
            remove_path(patch, pointer);
        }
        let managers = self.managers_for(object);
        if managers.is_empty() {
            return;
        }
        let entries = managed::entries(live);
        for field in path::patch_fields(patch) {
            if managed::manager_of(&entries, &field).is_some_and(|m| managers.contains(&m.as_str())) {
                let keys: Vec<String> = field
                    .segments()
                    .iter()
                    .map_while(|s| match s {
                        crate::fields::Segment::Key(key) => Some(key.clone()),
                        _ => None,
                    })
                    .collect();
                remove_path(patch, &keys);
            }
        }
    }
}

/// A `spec.drift.ignore` rule that cannot be used (the run is `InvalidSpec`).
#[derive(Debug, thiserror::Error)]
pub enum IgnoreRuleError {
    #[error("spec.drift.ignore[{index}].paths")]
    Path { index: usize, source: PointerError },
    #[error("spec.drift.ignore[{index}].target.labelSelector")]
    Selector { index: usize, source: crate::apply::selector::SelectorError },
}

/// Text that is not an RFC 6901 JSON pointer.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PointerError {
    #[error("{0:?} is not a JSON pointer (it must start with /)")]
    NoLeadingSlash(String),
    #[error("{0:?} is not a JSON pointer (~ must be followed by 0 or 1)")]
    BadEscape(String),
}

/// RFC 6901: `/a/b~1c` → `["a", "b/c"]`.
pub fn parse_pointer(text: &str) -> Result<Vec<String>, PointerError> {
    let Some(rest) = text.strip_prefix('/') else {
        return Err(PointerError::NoLeadingSlash(text.to_owned()));
    };
    rest.split('/')
        .map(|token| {
            let mut out = String::with_capacity(token.len());
            let mut chars = token.chars();
            while let Some(c) = chars.next() {
                if c != '~' {
                    out.push(c);
                    continue;
                }
                match chars.next() {
                    Some('0') => out.push('~'),
                    Some('1') => out.push('/'),
                    _ => return Err(PointerError::BadEscape(text.to_owned())),
                }
            }
            Ok(out)
        })
        .collect()
}

/// Removes `path` from a patch, with the directives that go with the removed field; maps left
/// empty are removed too (an empty map patches nothing). A path reaching into a list removes
/// the list's whole patch: a patch's list cannot be addressed by index.
pub fn remove_path(patch: &mut Value, path: &[String]) {
    remove_in(patch, path);
}

/// Returns whether `node` is now an empty map.
fn remove_in(node: &mut Value, path: &[String]) -> bool {
    let Some((head, rest)) = path.split_first() else { return false };
    let Value::Object(map) = node else { return false };
    let Some(child) = map.get_mut(head) else { return false };
    let remove = rest.is_empty() || matches!(child, Value::Array(_)) || remove_in(child, rest);
    if remove {
        map.remove(head);
        for directive in FIELD_DIRECTIVES {
            map.remove(&format!("{directive}{head}"));
        }
    }
    map.is_empty() || map.keys().all(|k| k == "$retainKeys")
}

/// Whether a patch's `result` (what the apiserver returned for the write, or for a server
/// dry run of it) differs from the `live` object it was computed against. The apiserver
/// canonicalizes some values (`cpu: 1000m` is stored as `1`, `0.5Gi` as `512Mi`), so a patch
/// that re-sends git's spelling is not empty and yet changes nothing: that is not drift, as
/// `kubectl diff` agrees. Bookkeeping the write itself touches (managedFields, resourceVersion,
/// generation) and the status, written by other controllers meanwhile, are not compared.
pub fn server_changed(live: &Value, result: &Value) -> bool {
    let strip = |object: &Value| {
        let mut object = object.clone();
        if let Value::Object(map) = &mut object {
            map.remove("status");
            if let Some(Value::Object(metadata)) = map.get_mut("metadata") {
                for key in ["managedFields", "resourceVersion", "generation"] {
                    metadata.remove(key);
                }
            }
        }
        object
    };
    strip(live) != strip(result)
}

/// The fields a patch changes, in kubectl's path notation, each with the manager that last
/// wrote it in `live`'s managedFields. Directive keys are not fields.
pub fn changed_fields(patch: &Value, live: &Value) -> Vec<DriftedField> {
    let entries = managed::entries(live);
    path::patch_fields(patch).into_iter().map(|field| changed(&entries, &field)).collect()
}

fn changed(entries: &[managed::Entry<'_>], field: &FieldPath) -> DriftedField {
    DriftedField {
        path: field.to_string(),
        manager: managed::manager_of(entries, field),
        reason: Reason::Changed.as_str().into(),
        applied_in: None,
    }
}

/// [`changed_fields`], less the fields whose value in `result` (the apiserver's answer to the
/// patch, or to its server dry run) is the one `live` had: values the apiserver canonicalizes
/// (`cpu: 1000m` stored as `1`) are re-sent by every patch of a drifted object without being
/// drift themselves. Falls back to every patched field if none can be told apart.
pub fn changed_fields_in(patch: &Value, live: &Value, result: &Value) -> Vec<DriftedField> {
    let fields = path::patch_fields(patch);
    let differs: Vec<bool> = fields.iter().map(|field| field.lookup(live) != field.lookup(result)).collect();
    let entries = managed::entries(live);
    let keep_all = !differs.iter().any(|d| *d);
    fields.iter().zip(differs).filter(|(_, differs)| keep_all || *differs).map(|(f, _)| changed(&entries, f)).collect()
}

/// A stale or foreign field as the drift report lists it.
pub fn finding_field(finding: &Finding) -> DriftedField {
    DriftedField {
        path: finding.path.to_string(),
        manager: finding.manager.clone(),
        reason: finding.reason.as_str().into(),
        applied_in: finding.applied_in.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::operator::api::DriftTarget;

    fn json(text: &str) -> Value {
        Value::from_json_str(text).unwrap()
    }

    fn deployment(labels: &str) -> Value {
        json(&format!(
            r#"{{"apiVersion":"apps/v1","kind":"Deployment","metadata":{{"name":"web","namespace":"shop","labels":{labels}}}}}"#
        ))
    }

    #[test]
    fn pointers_unescape() {
        assert_eq!(parse_pointer("/spec/replicas").unwrap(), ["spec", "replicas"]);
        assert_eq!(parse_pointer("/metadata/annotations/a~1b~0c").unwrap(), ["metadata", "annotations", "a/b~c"]);
        assert!(parse_pointer("spec/replicas").is_err());
        assert!(parse_pointer("/a~2").is_err());
    }

    #[test]
    fn removing_a_field_drops_its_directives_and_empty_parents() {
        let mut patch = json(
            r#"{"spec":{"replicas":3,"template":{"spec":{"$setElementOrder/containers":[{"name":"app"}],"containers":[{"image":"b","name":"app"}]}}}}"#,
        );
        remove_path(&mut patch, &parse_pointer("/spec/replicas").unwrap());
        assert_eq!(
            patch.to_json_string(),
            r#"{"spec":{"template":{"spec":{"$setElementOrder/containers":[{"name":"app"}],"containers":[{"image":"b","name":"app"}]}}}}"#
        );
        remove_path(&mut patch, &parse_pointer("/spec/template/spec/containers/0/image").unwrap());
        assert_eq!(patch.to_json_string(), "{}");
    }

    #[test]
    fn removing_an_absent_path_changes_nothing() {
        let mut patch = json(r#"{"spec":{"replicas":3}}"#);
        remove_path(&mut patch, &parse_pointer("/spec/paused").unwrap());
        remove_path(&mut patch, &parse_pointer("/data/x").unwrap());
        assert_eq!(patch.to_json_string(), r#"{"spec":{"replicas":3}}"#);
    }

    #[test]
    fn targets_select_by_kind_name_namespace_and_labels() {
        let rule = |target: DriftTarget| DriftIgnoreRule {
            paths: vec!["/spec/replicas".into()],
            managers: Vec::new(),
            target: Some(target),
        };
        let rules = IgnoreRules::new(&[
            rule(DriftTarget { group: Some("apps".into()), kind: Some("Deployment".into()), ..Default::default() }),
            rule(DriftTarget { kind: Some("StatefulSet".into()), ..Default::default() }),
            rule(DriftTarget { label_selector: Some("autoscaled=true".into()), ..Default::default() }),
        ])
        .unwrap();
        assert_eq!(rules.pointers_for(&deployment("{}")).len(), 1);
        assert_eq!(rules.pointers_for(&deployment(r#"{"autoscaled":"true"}"#)).len(), 2);
        let config_map = json(r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"web"}}"#);
        assert!(rules.pointers_for(&config_map).is_empty());
        let mut patch = json(r#"{"spec":{"replicas":5}}"#);
        rules.filter_patch(&deployment("{}"), &Value::Null, &mut patch);
        assert_eq!(patch.to_json_string(), "{}");
    }

    #[test]
    fn bad_rules_name_the_field() {
        let error =
            IgnoreRules::new(&[DriftIgnoreRule { paths: vec!["spec".into()], managers: Vec::new(), target: None }])
                .unwrap_err();
        assert!(matches!(error, IgnoreRuleError::Path { index: 0, source: PointerError::NoLeadingSlash(_) }));
        assert_eq!(
            crate::causes::with_causes(&error),
            r#"spec.drift.ignore[0].paths: "spec" is not a JSON pointer (it must start with /)"#
        );
        let error = IgnoreRules::new(&[DriftIgnoreRule {
            managers: Vec::new(),
            paths: vec!["/spec".into()],
            target: Some(DriftTarget { label_selector: Some("a in (".into()), ..Default::default() }),
        }])
        .unwrap_err();
        assert!(matches!(error, IgnoreRuleError::Selector { index: 0, .. }), "{error}");
        assert_eq!(error.to_string(), "spec.drift.ignore[0].target.labelSelector");
        assert!(
            crate::causes::with_causes(&error).starts_with("spec.drift.ignore[0].target.labelSelector: "),
            "{error}"
        );
    }

    #[test]
    fn changed_fields_name_elements_and_managers() {
        let patch = json(
            r#"{"data":{"color":"blue"},"spec":{"replicas":3,"template":{"spec":{"$setElementOrder/containers":[{"name":"app"}],"containers":[{"image":"shop:1","name":"app"}]}}}}"#,
        );
        let live = json(
            r#"{"metadata":{"managedFields":[
                {"manager":"kubectl-client-side-apply","operation":"Update","fieldsV1":{"f:data":{"f:color":{}},"f:spec":{"f:replicas":{},"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{".":{},"f:image":{},"f:name":{}}}}}}}},
                {"manager":"kubectl-edit","operation":"Update","fieldsV1":{"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{"f:image":{}}}}}}}},
                {"manager":"kubectl-scale","operation":"Update","subresource":"scale","fieldsV1":{"f:spec":{"f:replicas":{}}}}
            ]}}"#,
        );
        let fields = changed_fields(&patch, &live);
        let shown: Vec<(String, Option<String>)> = fields.into_iter().map(|f| (f.path, f.manager)).collect();
        assert_eq!(
            shown,
            [
                ("data.color".to_owned(), Some("kubectl-client-side-apply".to_owned())),
                ("spec.replicas".to_owned(), Some("kubectl-scale".to_owned())),
                ("spec.template.spec.containers[name=app].image".to_owned(), Some("kubectl-edit".to_owned())),
            ]
        );
    }

    #[test]
    fn canonicalized_values_resent_with_a_real_change_are_not_listed() {
        let patch = json(
            r#"{"spec":{"containers":[{"image":"app:1","name":"app","resources":{"limits":{"cpu":"1000m"}}}],"$setElementOrder/containers":[{"name":"app"}]}}"#,
        );
        let live =
            json(r#"{"spec":{"containers":[{"image":"app:2","name":"app","resources":{"limits":{"cpu":"1"}}}]}}"#);
        let result =
            json(r#"{"spec":{"containers":[{"image":"app:1","name":"app","resources":{"limits":{"cpu":"1"}}}]}}"#);
        let paths: Vec<String> = changed_fields_in(&patch, &live, &result).into_iter().map(|f| f.path).collect();
        assert_eq!(paths, ["spec.containers[name=app].image"]);
        // Nothing told apart (the result could not be compared): every patched field.
        let paths: Vec<String> = changed_fields_in(&patch, &live, &live).into_iter().map(|f| f.path).collect();
        assert_eq!(paths.len(), 2);
        // A removed field is listed.
        let patch = json(r#"{"metadata":{"labels":{"team":null}}}"#);
        let live = json(r#"{"metadata":{"labels":{"team":"a"}}}"#);
        let result = json(r#"{"metadata":{"labels":{}}}"#);
        let paths: Vec<String> = changed_fields_in(&patch, &live, &result).into_iter().map(|f| f.path).collect();
        assert_eq!(paths, ["metadata.labels.team"]);
    }

    #[test]
    fn a_write_that_changed_nothing_but_bookkeeping_is_not_a_change() {
        let live = json(
            r#"{"metadata":{"name":"web","resourceVersion":"7","generation":1,"managedFields":[{"manager":"a"}]},"spec":{"cpu":"1"},"status":{"replicas":0}}"#,
        );
        let same = json(
            r#"{"metadata":{"name":"web","resourceVersion":"9","generation":1,"managedFields":[{"manager":"b"}]},"spec":{"cpu":"1"},"status":{"replicas":1}}"#,
        );
        assert!(!server_changed(&live, &same));
        let changed = json(r#"{"metadata":{"name":"web","resourceVersion":"9","generation":2},"spec":{"cpu":"2"}}"#);
        assert!(server_changed(&live, &changed));
        let labelled = json(r#"{"metadata":{"name":"web","labels":{"a":"b"}},"spec":{"cpu":"1"}}"#);
        assert!(server_changed(&live, &labelled));
    }

    #[test]
    fn removed_fields_and_unkeyed_lists_are_leaves() {
        let patch = json(r#"{"metadata":{"labels":{"team":null}},"spec":{"args":["a","b"]}}"#);
        let fields = changed_fields(&patch, &json("{}"));
        let paths: Vec<&str> = fields.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(paths, ["metadata.labels.team", "spec.args"]);
        assert!(fields.iter().all(|f| f.manager.is_none()));
    }

    mod properties {
        use super::super::*;
        use proptest::prelude::*;

        /// Small JSON-like patches: maps over a few keys (directives included), lists, scalars.
        fn patch() -> impl Strategy<Value = Value> {
            let leaf = prop_oneof![
                Just(Value::Null),
                any::<bool>().prop_map(Value::Bool),
                "[a-c]{0,2}".prop_map(Value::String),
            ];
            leaf.prop_recursive(4, 24, 4, |inner| {
                prop_oneof![
                    prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
                    prop::collection::btree_map(
                        prop_oneof![
                            Just("a".to_owned()),
                            Just("b".to_owned()),
                            Just("$setElementOrder/a".to_owned()),
                            Just("$retainKeys".to_owned())
                        ],
                        inner,
                        0..4
                    )
                    .prop_map(|m| {
                        let mut map = applyset_merge::Map::new();
                        for (k, v) in m {
                            map.insert(k, v);
                        }
                        Value::Object(map)
                    }),
                ]
            })
        }

        fn get<'a>(value: &'a Value, path: &[String]) -> Option<&'a Value> {
            path.iter().try_fold(value, |node, key| node.as_object()?.get(key))
        }

        proptest! {
            /// Any text either parses as a pointer or is refused; never a panic. A parsed
            /// pointer, escaped again, reads back the same.
            #[test]
            fn pointers_round_trip(text in "(/[a-z~01/]{0,6}){0,4}|[^/].{0,8}") {
                if let Ok(tokens) = parse_pointer(&text) {
                    let escaped: String = tokens.iter().map(|t| format!("/{}", t.replace('~', "~0").replace('/', "~1"))).collect();
                    prop_assert_eq!(parse_pointer(&escaped).unwrap(), tokens);
                }
            }

            /// After removal the path is gone, with its `$setElementOrder` sibling, and no
            /// map on the way is left empty by it.
            #[test]
            fn removal_removes_exactly_the_path(mut value in patch(), path in prop::collection::vec(prop_oneof![Just("a".to_owned()), Just("b".to_owned())], 1..4)) {
                let before = value.clone();
                remove_path(&mut value, &path);
                prop_assert!(get(&value, &path).is_none());
                if get(&before, &path).is_none() && !path.iter().enumerate().any(|(i, _)| matches!(get(&before, &path[..i]), Some(Value::Array(_)))) {
                    prop_assert_eq!(value.to_json_string(), before.to_json_string());
                }
                let parent = &path[..path.len() - 1];
                let directive = format!("$setElementOrder/{}", path[path.len() - 1]);
                if get(&before, &path).is_some()
                    && let Some(Value::Object(map)) = get(&value, parent)
                {
                    prop_assert!(!map.contains_key(&directive));
                }
            }
        }
    }
}
