//! A plan's end ([`super::super::RunMode::Plan`]): what the run would do once applied under a
//! client dry run, the prune decided on what the checkout no longer has, and nothing written.
//!
//! Under `spec.secrets: Hashed` the controller records its Secrets' values as keyed hashes,
//! and a plan does not hold the key: a recorded hash is read back as the manifest's value, and
//! the hashed annotation is never rewritten, so a plan compares the values themselves.

use std::sync::Arc;

use applyset_merge::Value;

use super::super::Reconciliation;
use crate::apply::last_applied::{HASH_PREFIX, LastAppliedCodec, is_secret};
use crate::apply::{ApplyReport, CrdKinds, ErrorCategory, PatchFilter};
use crate::applyset::Run;
use crate::cluster::Cluster;
use crate::keys::LAST_APPLIED_ANNOTATION;
use crate::operator::outcome::{Done, Planned};
use crate::operator::{inventory, prune};

impl Reconciliation<'_> {
    /// What the run would do: the apply's report, and, once every object would apply (an
    /// object of a kind a CRD of the build defines cannot, before the CRD exists), the prune
    /// decision on the record as the apply would leave it.
    pub(in crate::operator::reconcile) async fn planned(
        &self,
        cluster: &Cluster,
        run: &Run<'_>,
        report: ApplyReport,
        crd_kinds: CrdKinds,
        revision: &str,
    ) -> Done {
        let applyset = self.applyset;
        let applied_all = report.objects.iter().enumerate().all(|(index, object)| match &object.result {
            Ok(_) => true,
            Err(error) => error.category == ErrorCategory::NoMatch && crd_kinds.get(index).is_some_and(|k| k.0),
        });
        let decision = if applied_all && applyset.spec.prune {
            let recorded = self.previous.inventory.as_ref().and_then(|i| i.members.as_deref());
            let members = inventory::with_applied(recorded, &report.visited);
            let namespace = applyset.namespace_or_default();
            let timeout = self.intervals.timeout;
            let scope = prune::Scope::of_run(applyset, &namespace, &members, recorded.is_some(), revision, timeout);
            Some(match self.ctx.api_index(cluster, false).await {
                Ok(index) => prune::decide(run, &index, &report.visited, &scope).await,
                Err(error) => {
                    prune::Decision { error: Some(crate::causes::with_causes(&error)), ..prune::Decision::default() }
                }
            })
        } else {
            None
        };
        let planned = Planned { report, crd_kinds, decision };
        Done { revision: revision.to_owned(), planned: Some(Box::new(planned)), ..Done::default() }
    }
}

/// Secrets whose annotation holds hashes (`spec.secrets: Hashed`) under the controller's key,
/// which a plan does not have: a recorded hash is read back as the manifest's value (unchanged
/// since the last apply), so the patch sends the values that differ from the live Secret's.
pub(in crate::operator::reconcile) struct UnkeyedHashes;

impl LastAppliedCodec for UnkeyedHashes {
    fn encode(&self, _configuration: &Value) -> Option<Value> {
        None
    }

    fn decode(&self, mut recorded: Value, manifest: &Value) -> Value {
        if !is_secret(manifest) {
            return recorded;
        }
        for section in ["data", "stringData"] {
            let now = manifest.as_object().and_then(|m| m.get(section)).and_then(Value::as_object);
            let Some(Value::Object(values)) = recorded.as_object_mut().and_then(|r| r.get_mut(section)) else {
                continue;
            };
            for (name, value) in values.iter_mut() {
                let hashed = value.as_str().is_some_and(|v| v.starts_with(HASH_PREFIX));
                if let (true, Some(now)) = (hashed, now.and_then(|n| n.get(name))) {
                    *value = now.clone();
                }
            }
        }
        recorded
    }
}

/// The controller's patch filter, then: a Secret's hashed annotation is not rewritten (a plan
/// cannot make the controller's hashes; the values are compared instead).
pub(in crate::operator::reconcile) fn keeping_hashed_annotations(filter: Option<PatchFilter>) -> PatchFilter {
    PatchFilter(Arc::new(move |object, live, patch| {
        if let Some(filter) = &filter {
            (filter.0)(object, live, patch);
        }
        let hashed = is_secret(live)
            && crate::apply::object::annotation(live, LAST_APPLIED_ANNOTATION)
                .is_some_and(|text| text.contains(HASH_PREFIX));
        if hashed {
            drop_annotation(patch);
        }
    }))
}

/// Removes the last-applied annotation from a patch, and the maps it leaves empty.
fn drop_annotation(patch: &mut Value) {
    let Some(metadata) = patch.as_object_mut().and_then(|p| p.get_mut("metadata")).and_then(Value::as_object_mut)
    else {
        return;
    };
    if let Some(Value::Object(annotations)) = metadata.get_mut("annotations") {
        annotations.remove(LAST_APPLIED_ANNOTATION);
        if annotations.is_empty() {
            metadata.remove("annotations");
        }
    }
    if metadata.is_empty()
        && let Some(root) = patch.as_object_mut()
    {
        root.remove("metadata");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json(text: &str) -> Value {
        Value::from_json_str(text).unwrap()
    }

    #[test]
    fn hashed_annotations_are_compared_by_value() {
        let manifest = json(r#"{"apiVersion":"v1","kind":"Secret","data":{"a":"bmV3","b":"c2FtZQ=="}}"#);
        let recorded = json(
            r#"{"apiVersion":"v1","kind":"Secret","data":{"a":"hmac-sha256:01","b":"hmac-sha256:02","gone":"hmac-sha256:03"}}"#,
        );
        let original = UnkeyedHashes.decode(recorded, &manifest);
        assert_eq!(
            original.to_json_string(),
            r#"{"apiVersion":"v1","data":{"a":"bmV3","b":"c2FtZQ==","gone":"hmac-sha256:03"},"kind":"Secret"}"#,
            "a key git dropped stays a hash, so the patch deletes it"
        );
        let config_map = json(r#"{"apiVersion":"v1","kind":"ConfigMap","data":{"a":"hmac-sha256:01"}}"#);
        assert_eq!(UnkeyedHashes.decode(config_map.clone(), &config_map), config_map);
        assert!(UnkeyedHashes.encode(&manifest).is_none(), "plain: its annotation is left out of the patch");
    }

    #[test]
    fn a_hashed_annotation_is_left_out_of_the_patch() {
        let filter = keeping_hashed_annotations(None);
        let live = json(&format!(
            r#"{{"apiVersion":"v1","kind":"Secret","metadata":{{"annotations":{{"{LAST_APPLIED_ANNOTATION}":"{{\"data\":{{\"a\":\"hmac-sha256:01\"}}}}"}}}}}}"#
        ));
        let mut patch = json(&format!(
            r#"{{"metadata":{{"annotations":{{"{LAST_APPLIED_ANNOTATION}":"x"}}}},"data":{{"a":"bmV3"}}}}"#
        ));
        (filter.0)(&live, &live, &mut patch);
        assert_eq!(patch.to_json_string(), r#"{"data":{"a":"bmV3"}}"#);
        let mut only_annotation =
            json(&format!(r#"{{"metadata":{{"annotations":{{"{LAST_APPLIED_ANNOTATION}":"x"}}}}}}"#));
        (filter.0)(&live, &live, &mut only_annotation);
        assert_eq!(only_annotation.to_json_string(), "{}", "an emptied patch: unchanged");
        let plain = json(r#"{"apiVersion":"v1","kind":"Secret"}"#);
        let mut kept = json(&format!(r#"{{"metadata":{{"annotations":{{"{LAST_APPLIED_ANNOTATION}":"x"}}}}}}"#));
        (filter.0)(&plain, &plain, &mut kept);
        assert!(
            kept.to_json_string().contains(LAST_APPLIED_ANNOTATION),
            "a plain annotation is written as the run writes it"
        );
    }
}
