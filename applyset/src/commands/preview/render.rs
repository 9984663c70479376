//! The build of a checkout as a run builds it: `spec.postBuild`'s variables, the controller's
//! render of the directory, and the objects as the apply places them (namespace defaulted,
//! the ApplySet's `part-of` label, no duplicates), in the order it applies them; and the YAML
//! `applyset build` prints.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use applyset_merge::Value;
use base64::Engine as _;
use kube::core::GroupVersionKind;

use super::PreviewError;
use super::scope::Scopes;
use super::target::Checkout;
use crate::apply::{default_namespace, object, predicted_mappings, stage_of};
use crate::causes::with_causes;
use crate::cli::CheckoutArgs;
use crate::cluster::Cluster;
use crate::keys::PART_OF_LABEL;
use crate::manifest::LoadedObject;
use crate::manifest::decryption::Decryption;
use crate::manifest::postbuild;
use crate::operator::api::{ApplySet, GROUP, KIND, PostBuild, SubstituteKind, SubstituteReference};
use crate::operator::postbuild::{assemble, checked, reference_text};
use crate::operator::reconcile::Stage;
use crate::operator::reconcile::{BuildSettings, StepError, render, require_objects};
use crate::operator::schedule::Intervals;

/// Where `spec.postBuild.substituteFrom`'s objects are read.
pub(super) enum Variables<'a> {
    /// From the cluster, as the controller reads them (with the caller's identity).
    Cluster(&'a Cluster),
    /// From `--substitute-from-file` manifests.
    Files(&'a [PathBuf]),
}

/// The redaction owner of values substituted from Secrets read from files.
const REDACT_OWNER: &str = "applyset-preview#postbuild";

/// `spec.postBuild`'s variables (`None` without it).
pub(super) async fn variables(
    applyset: &ApplySet,
    from: Variables<'_>,
) -> Result<Option<Arc<postbuild::Variables>>, PreviewError> {
    let Some(post_build) = &applyset.spec.post_build else { return Ok(None) };
    match from {
        Variables::Cluster(cluster) => {
            let found = crate::operator::postbuild::variables(applyset, cluster).await?;
            Ok(found.map(|(variables, _)| variables))
        }
        Variables::Files(files) => {
            let namespace = applyset.namespace_or_default();
            let found = read_files(post_build, files, &namespace)?;
            let (variables, secrets) = assemble(post_build, found);
            crate::redact::register(REDACT_OWNER, secrets);
            Ok(Some(checked(variables)?.0))
        }
    }
}

/// The data of one object `substituteFrom` names, with its kind.
type Found = (SubstituteKind, BTreeMap<String, String>);

/// The data of the objects `substituteFrom` names, found in `files` (in the references' order;
/// an optional one that is not there is left out).
fn read_files(post_build: &PostBuild, files: &[PathBuf], namespace: &str) -> Result<Vec<Found>, PreviewError> {
    if post_build.substitute_from.is_empty() {
        return Ok(Vec::new());
    }
    if files.is_empty() {
        let reference = reference_text(&post_build.substitute_from[0]);
        return Err(PreviewError::SubstituteFromWithoutCluster { reference });
    }
    let loaded = crate::manifest::load(files, false, std::io::empty())
        .map_err(|error| PreviewError::SubstituteFromFile(with_causes(&error)))?;
    let mut found = Vec::new();
    for reference in &post_build.substitute_from {
        match loaded.iter().find(|o| names(&o.object, reference, namespace)) {
            Some(object) => found.push((reference.kind, data_of(object, reference.kind)?)),
            None if reference.optional => {}
            None => return Err(PreviewError::SubstituteFromMissing { reference: reference_text(reference) }),
        }
    }
    Ok(found)
}

/// Whether `object` is the v1 ConfigMap or Secret `reference` names, in `namespace` (or in no
/// namespace).
fn names(object: &Value, reference: &SubstituteReference, namespace: &str) -> bool {
    let text = |field: &str| object.as_object().and_then(|o| o.get(field)).and_then(Value::as_str);
    let kind = match reference.kind {
        SubstituteKind::ConfigMap => "ConfigMap",
        SubstituteKind::Secret => "Secret",
    };
    text("apiVersion") == Some("v1")
        && text("kind") == Some(kind)
        && object::meta_str(object, "name") == Some(reference.name.as_str())
        && object::meta_str(object, "namespace").is_none_or(|ns| ns == namespace)
}

/// A ConfigMap's `data`, or a Secret's `data` (decoded) with its `stringData` over it, as the
/// apiserver would store them.
fn data_of(loaded: &LoadedObject, kind: SubstituteKind) -> Result<BTreeMap<String, String>, PreviewError> {
    let section = |name: &str| loaded.object.as_object().and_then(|o| o.get(name)).and_then(Value::as_object);
    let bad = |key: &str, what: &str| PreviewError::SubstituteFromFile(format!("{}: {key}: {what}", loaded.source));
    let mut data = BTreeMap::new();
    let sections: &[&str] = match kind {
        SubstituteKind::ConfigMap => &["data"],
        SubstituteKind::Secret => &["data", "stringData"],
    };
    for name in sections {
        for (key, value) in section(name).into_iter().flatten() {
            let text = value.as_str().ok_or_else(|| bad(&format!("{name}.{key}"), "not a string"))?;
            let value = if kind == SubstituteKind::Secret && *name == "data" {
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(text)
                    .map_err(|_| bad(&format!("{name}.{key}"), "not base64"))?;
                String::from_utf8_lossy(&bytes).into_owned()
            } else {
                text.to_owned()
            };
            data.insert(key.clone(), value);
        }
    }
    Ok(data)
}

/// How the build treats SOPS-encrypted files: decrypted with `--decryption-key`, else, under
/// `spec.decryption`, with the Secret it names (read from the cluster as the controller reads
/// it), else refused as the controller refuses them.
pub(super) async fn decryption(
    applyset: &ApplySet,
    args: &CheckoutArgs,
    cluster: Option<&Cluster>,
) -> Result<Decryption, PreviewError> {
    if let Some(decryption) = crate::commands::decryption::from_key_files(&args.decryption_keys)? {
        return Ok(decryption);
    }
    match (&applyset.spec.decryption, cluster) {
        (Some(_), Some(cluster)) => Ok(crate::operator::decryption::for_applyset(applyset, cluster).await?),
        (Some(spec), None) => Err(PreviewError::DecryptionWithoutCluster {
            secret: format!(
                "{}/{}",
                applyset.namespace_or_default(),
                spec.secret_ref.as_ref().map_or("", |r| r.name.as_str())
            ),
        }),
        (None, _) => Ok(Decryption::refusing("the ApplySet has no spec.decryption, so the controller refuses it too")),
    }
}

/// The checkout's objects as a run builds them (the controller's render, with its caps and
/// `spec.timeout` for kustomize), failing as the run would on an empty source.
pub(super) async fn build(
    applyset: &ApplySet,
    checkout: &Checkout,
    args: &CheckoutArgs,
    substitute: Option<Arc<postbuild::Variables>>,
    decryption: &Decryption,
) -> Result<Vec<LoadedObject>, PreviewError> {
    let timeout = Intervals::of(applyset, Duration::ZERO).map_err(|e| StepError::of(Stage::InvalidSpec, e))?.timeout;
    let limits = crate::manifest::Limits {
        file: Some(args.limits.max_manifest_file_size),
        document: Some(args.limits.max_manifest_document_size),
        total: Some(args.limits.max_manifest_revision_size),
    };
    let settings = BuildSettings { limits, kustomize_binary: &args.kustomize_binary, timeout, decryption };
    let loaded = render(applyset, &checkout.dir, &checkout.root, &settings, substitute).await?;
    require_objects(applyset, &loaded, &checkout.revision)?;
    Ok(loaded)
}

/// The objects as the apply sends them, and what could not be told without a cluster.
#[derive(Debug, Default)]
pub(super) struct Placed {
    pub(super) objects: Vec<LoadedObject>,
    pub(super) warnings: Vec<String>,
}

/// The objects as the controller's apply prepares them (its namespace rule, with the
/// ApplySet's namespace as the default; its `part-of` label), in the order it applies them
/// (Namespaces, CRDs, the rest; each in source order). What the apply would refuse (an object
/// without a name, one defined twice) fails the build.
pub(super) async fn place(
    applyset: &ApplySet,
    loaded: Vec<LoadedObject>,
    scopes: &Scopes<'_>,
) -> Result<Placed, PreviewError> {
    let namespace = applyset.namespace_or_default();
    let set_id = crate::applyset::applyset_id(&applyset.name(), &namespace, KIND, GROUP);
    let predicted = predicted_mappings(&loaded);
    let mut placed = Placed::default();
    for LoadedObject { source, mut object } in loaded {
        let source_text = source.to_string();
        let text = |field: &str| object.as_object().and_then(|o| o.get(field)).and_then(Value::as_str);
        let (api_version, kind) = (text("apiVersion").unwrap_or("").to_owned(), text("kind").unwrap_or("").to_owned());
        let (group, version) = api_version.split_once('/').unwrap_or(("", &api_version));
        let gvk = GroupVersionKind::gvk(group, version, &kind);
        let namespaced = match scopes.namespaced(&gvk, &predicted).await? {
            Some(namespaced) => namespaced,
            None => {
                placed.warnings.push(unknown_kind_warning(scopes, &source_text, &kind, &api_version));
                true
            }
        };
        if object::meta_str(&object, "name").is_none_or(str::is_empty) {
            let message = match object::meta_str(&object, "generateName") {
                Some(generate) if !generate.is_empty() => {
                    format!("from {generate}: cannot use generate name with apply")
                }
                _ => "resource name may not be empty".to_owned(),
            };
            return Err(PreviewError::Object { source_text, message });
        }
        let raw_namespace = object::meta_str(&object, "namespace").unwrap_or("").to_owned();
        default_namespace(&mut object, namespaced, &raw_namespace, &namespace);
        object::add_label(&mut object, PART_OF_LABEL, &set_id)
            .map_err(|error| PreviewError::Object { source_text, message: with_causes(&error) })?;
        placed.objects.push(LoadedObject { source, object });
    }
    let duplicates = crate::manifest::find_duplicates(&placed.objects);
    if !duplicates.is_empty() {
        return Err(PreviewError::Duplicates(duplicates.iter().map(ToString::to_string).collect()));
    }
    placed.objects.sort_by_key(|o| stage(&o.object));
    Ok(placed)
}

fn stage(object: &Value) -> usize {
    let text = |field: &str| object.as_object().and_then(|o| o.get(field)).and_then(Value::as_str).unwrap_or("");
    let group = text("apiVersion").rsplit_once('/').map_or("", |(group, _)| group);
    stage_of(group, text("kind"))
}

fn unknown_kind_warning(scopes: &Scopes<'_>, source: &str, kind: &str, api_version: &str) -> String {
    match scopes {
        Scopes::Cluster(_) => format!(
            "warning: {source}: the cluster serves no kind {kind:?} in version {api_version:?} and no CRD of the build defines it: a run would fail on it (ensure CRDs are installed first); shown as namespaced"
        ),
        Scopes::BuiltIn => format!(
            "warning: {source}: kind {kind:?} in version {api_version:?} is neither one Kubernetes 1.33 serves nor one a CRD of the build defines: taken as namespaced (without a cluster its scope cannot be asked)"
        ),
    }
}

/// The objects as YAML documents separated by `---`, as kubectl's `-o yaml` writes each, with
/// Secret values masked (`***`, as `applyset diff` masks them) and every registered secret
/// value (those substituted from Secrets) redacted.
pub(super) fn yaml_documents(objects: &[LoadedObject]) -> String {
    let mut text = String::new();
    for (i, loaded) in objects.iter().enumerate() {
        if i > 0 {
            text.push_str("---\n");
        }
        let object = if crate::apply::last_applied::is_secret(&loaded.object) {
            crate::commands::diff::masked(&loaded.object)
        } else {
            loaded.object.clone()
        };
        match crate::manifest::yaml::to_go_yaml(&object) {
            Some(yaml) => text.push_str(&yaml),
            None => text.push_str(&format!("# {}: cannot be written as YAML\n", loaded.source)),
        }
    }
    crate::redact::redact(&text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::operator::api::ApplySetSpec;

    fn applyset(namespace: &str, post_build: Option<PostBuild>) -> ApplySet {
        let spec: ApplySetSpec =
            serde_json::from_value(serde_json::json!({ "source": { "url": "https://example.com/r.git" } })).unwrap();
        let mut applyset = ApplySet::new("web", ApplySetSpec { post_build, ..spec });
        applyset.metadata.namespace = Some(namespace.to_owned());
        applyset
    }

    fn loaded(text: &str) -> Vec<LoadedObject> {
        crate::manifest::load_bytes(std::path::Path::new("apps/web/all.yaml"), text.as_bytes()).unwrap()
    }

    const OBJECTS: &str = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: extra, namespace: ignored}\n---\napiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n---\napiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: widgets.example.com}\nspec:\n  group: example.com\n  names: {kind: Widget, plural: widgets}\n  scope: Cluster\n  versions: [{name: v1}]\n---\napiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: other}\nstringData: {password: hunter22}\n---\napiVersion: other.example.com/v1\nkind: Gadget\nmetadata: {name: g}\n";

    /// Golden: namespaces defaulted (built-in scopes, a CRD of the build), the part-of label,
    /// the apply's order, a Secret's values masked, an unknown kind warned about.
    #[tokio::test]
    async fn objects_are_placed_as_the_apply_places_them() {
        let placed = place(&applyset("shop", None), loaded(OBJECTS), &Scopes::BuiltIn).await.unwrap();
        let id = crate::applyset::applyset_id("web", "shop", "ApplySet", "applyset.dev");
        let text = yaml_documents(&placed.objects).replace(&id, "ID");
        let expected = "apiVersion: v1
kind: Namespace
metadata:
  labels:
    applyset.kubernetes.io/part-of: ID
  name: extra
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  labels:
    applyset.kubernetes.io/part-of: ID
  name: widgets.example.com
spec:
  group: example.com
  names:
    kind: Widget
    plural: widgets
  scope: Cluster
  versions:
  - name: v1
---
apiVersion: apps/v1
kind: Deployment
metadata:
  labels:
    applyset.kubernetes.io/part-of: ID
  name: web
  namespace: shop
---
apiVersion: example.com/v1
kind: Widget
metadata:
  labels:
    applyset.kubernetes.io/part-of: ID
  name: w
---
apiVersion: v1
kind: Secret
metadata:
  labels:
    applyset.kubernetes.io/part-of: ID
  name: s
  namespace: other
stringData:
  password: '***'
---
apiVersion: other.example.com/v1
kind: Gadget
metadata:
  labels:
    applyset.kubernetes.io/part-of: ID
  name: g
  namespace: shop
";
        assert_eq!(text, expected);
        assert_eq!(placed.warnings.len(), 1, "{:?}", placed.warnings);
        assert!(
            placed.warnings[0].contains("apps/web/all.yaml: document 6 (line 27): kind \"Gadget\""),
            "{:?}",
            placed.warnings
        );
    }

    #[tokio::test]
    async fn what_the_apply_refuses_fails_the_build() {
        let twice = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: shop}\n";
        let error = place(&applyset("shop", None), loaded(twice), &Scopes::BuiltIn).await.unwrap_err().to_string();
        assert!(error.starts_with("ConfigMap shop/a is defined twice"), "{error}");
        let unnamed = "apiVersion: v1\nkind: ConfigMap\nmetadata: {generateName: a-}\n";
        let error = place(&applyset("shop", None), loaded(unnamed), &Scopes::BuiltIn).await.unwrap_err().to_string();
        assert_eq!(error, "apps/web/all.yaml: document 1 (line 1): from a-: cannot use generate name with apply");
    }

    #[tokio::test]
    async fn substitute_from_files_stand_for_the_cluster_objects() {
        let post_build: PostBuild = serde_json::from_value(serde_json::json!({
            "substitute": { "TAG": "from-spec" },
            "substituteFrom": [
                { "kind": "ConfigMap", "name": "vars" },
                { "kind": "Secret", "name": "creds" },
                { "kind": "ConfigMap", "name": "absent", "optional": true }
            ]
        }))
        .unwrap();
        let dir =
            std::env::temp_dir().join(format!("applyset-preview-vars-{}-{}", std::process::id(), fastrand::u64(..)));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("vars.yaml");
        std::fs::write(
            &file,
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: vars}\ndata: {REGION: eu, TAG: from-map}\n---\napiVersion: v1\nkind: Secret\nmetadata: {name: creds, namespace: shop}\ndata: {TOKEN: dDBrZW4teHl6}\nstringData: {USER: admin}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: vars, namespace: elsewhere}\ndata: {REGION: us}\n",
        )
        .unwrap();
        let found =
            variables(&applyset("shop", Some(post_build.clone())), Variables::Files(std::slice::from_ref(&file)))
                .await
                .unwrap()
                .unwrap();
        let values: Vec<(&str, &str)> = found.values.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        assert_eq!(
            values,
            [("REGION", "eu"), ("TAG", "from-spec"), ("TOKEN", "t0ken-xyz"), ("USER", "admin")],
            "spec.substitute wins; a Secret's data decoded; another namespace's object is not it"
        );
        assert_eq!(crate::redact::redact("token t0ken-xyz"), "token <redacted>", "Secret values are redacted");

        let error = variables(&applyset("shop", Some(post_build.clone())), Variables::Files(&[]))
            .await
            .unwrap_err()
            .to_string();
        assert!(
            error.starts_with("spec.postBuild.substituteFrom ConfigMap vars cannot be read without a cluster"),
            "{error}"
        );
        let error = variables(&applyset("elsewhere", Some(post_build)), Variables::Files(&[file]))
            .await
            .unwrap_err()
            .to_string();
        assert_eq!(
            error,
            "spec.postBuild.substituteFrom Secret creds: not found in the --substitute-from-file files; nothing was applied or pruned"
        );
        let _ = std::fs::remove_dir_all(dir);
    }
}
