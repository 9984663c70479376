//! `spec.secrets: Hashed`: the controller's key is created on first need, and a Secret's
//! last-applied annotation records hashes of its values, never the values.

use serde_json::json;

use super::fixture::{Fixture, NS};
use crate::apply::last_applied::HASH_PREFIX;
use crate::keys::LAST_APPLIED_ANNOTATION;

#[tokio::test]
async fn reconcile_hashed_secret_records_hashes_in_its_annotation() {
    let f = Fixture::new();
    let secret = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: creds\nstringData:\n  password: hunter2-plain\n";
    f.repo.write("creds.yaml", secret).commit("a secret");
    f.applyset("app", json!({ "secrets": "Hashed" }));

    f.reconcile("app").await.expect("the run");

    let (ready, reason, message) = f.ready("app");
    assert_eq!((ready.as_str(), reason.as_str()), ("True", "Succeeded"), "{message}");
    let (key_namespace, key_name) = f.ctx.settings.secret_hash_key.clone();
    let key = f.fake.object(&format!("/api/v1/namespaces/{key_namespace}/secrets/{key_name}"));
    assert!(key.is_some_and(|k| k["data"]["key"].is_string()), "the hash key was created");
    let creds = f.fake.object(&format!("/api/v1/namespaces/{NS}/secrets/creds")).expect("the Secret");
    // The value reaches the Secret (stringData folded into data), base64 as data is.
    assert_eq!(creds["data"]["password"], "aHVudGVyMi1wbGFpbg==", "{creds}");
    let annotation = creds["metadata"]["annotations"][LAST_APPLIED_ANNOTATION].as_str().expect("an annotation");
    assert!(annotation.contains(HASH_PREFIX), "{annotation}");
    assert!(!annotation.contains("hunter2") && !annotation.contains("aHVudGVyMi1wbGFpbg"), "{annotation}");
}
