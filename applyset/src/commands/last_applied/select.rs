//! Which objects a last-applied subcommand works on: kubectl's resource builder (cli-runtime's
//! `resource.Builder`) as these commands configure it, with its checks and messages, in its
//! order.
//!
//! The objects come from files (`-f`, `-R`, `-k`: each object's live copy is fetched, the
//! builder's `Latest`), from a selector (`TYPE -l …`, `TYPE --all`, or a type alone when every
//! object of it is meant: one LIST per type) or from names (`TYPE NAME…`, `TYPE1,TYPE2 NAME`,
//! `TYPE/NAME…`: one GET each). Types resolve through discovery
//! ([`ApiIndex::mapping_for`](crate::cluster::mapper::ApiIndex::mapping_for)).

use std::path::{Path, PathBuf};

use applyset_merge::Value;
use kube::core::{ApiResource, GroupVersionKind};

use super::builder::Builder;
use super::error::{BuilderError, LastAppliedError};
use crate::apply::object::{meta_str, remove_namespace, set_namespace};
use crate::apply::selector::Selector;
use crate::cluster::mapper::ApiIndex;
use crate::cluster::{self, Cluster, Mapping};
use crate::manifest::{self, LoadedObject};

/// The namespace of a command (kubectl's `ToRawKubeConfigLoader().Namespace()`): `-n`, else the
/// kubeconfig context's, else `default`; `enforced` when `-n` was given (objects of the files
/// naming another namespace are refused then).
#[derive(Debug, Clone)]
pub struct Namespace {
    pub name: String,
    pub enforced: bool,
}

impl Namespace {
    pub fn of(flag: Option<&str>, cluster: &Cluster) -> Namespace {
        match flag {
            Some(name) => Namespace { name: name.to_owned(), enforced: true },
            None => Namespace { name: cluster.default_namespace().to_owned(), enforced: false },
        }
    }
}

/// What the command line asks for, and how the builder is set up.
#[derive(Debug, Default)]
pub struct Request<'a> {
    pub resources: &'a [String],
    pub filenames: &'a [PathBuf],
    /// `-k DIR`, and the kustomize that builds it.
    pub kustomize: Option<(&'a Path, &'a crate::cli::KustomizeArgs)>,
    pub recursive: bool,
    pub selector: Option<&'a str>,
    pub all: bool,
    /// A type alone selects all its objects (kubectl's `allowEmptySelector`).
    pub type_alone_selects_all: bool,
    /// The arguments are read before the files (edit-last-applied's order of checks).
    pub args_before_files: bool,
    /// Visit every object and report every failure (`ContinueOnError`), instead of stopping at
    /// the first.
    pub continue_on_error: bool,
}

/// One object found, as the server has it.
#[derive(Debug, Clone)]
pub struct Target {
    pub mapping: Mapping,
    pub name: String,
    /// `""` for cluster-scoped objects.
    pub namespace: String,
    /// The file (or `STDIN`, or the kustomization directory) the object was named in.
    pub source: Option<String>,
    pub object: Value,
}

/// What the builder found to visit, every type mapped (kubectl's `Do()`): nothing is fetched
/// yet.
pub enum Plan {
    /// Objects of files or a kustomization, fetched one by one; those not matching the
    /// selector (if any) are left out.
    Paths { selector: Option<Selector> },
    /// Every object of each type matching the label selector (empty: all), one LIST per type.
    Selected { mappings: Vec<Mapping>, selector: String },
    /// Objects by type and name, one GET each.
    Named(Vec<(Mapping, String)>),
}

/// Reads the command line as kubectl's builder does, refusing what it refuses, and maps the
/// types it names.
pub async fn plan(cluster: &Cluster, request: &Request<'_>) -> Result<Plan, LastAppliedError> {
    let builder = Builder::read(cluster, request).await?;
    let label_selector = if builder.select_all { Some(String::new()) } else { builder.label_selector.clone() };
    if builder.has_paths {
        if !builder.resources.is_empty() {
            return Err(BuilderError::PathsAndResources.into());
        }
        if !builder.names.is_empty() {
            return Err(BuilderError::PathsAndNames.into());
        }
        if !builder.tuples.is_empty() {
            return Err(BuilderError::PathsAndTuples.into());
        }
        let selector = match label_selector.as_deref() {
            Some(text) => Some(
                Selector::parse(text)
                    .map_err(|source| BuilderError::InvalidSelector { selector: text.to_owned(), source })?,
            ),
            None => None,
        };
        return Ok(Plan::Paths { selector });
    }
    if let Some(selector) = label_selector {
        if !builder.names.is_empty() {
            return Err(BuilderError::SelectorAndNames.into());
        }
        if !builder.tuples.is_empty() {
            return Err(BuilderError::SelectorAndTuples.into());
        }
        if builder.resources.is_empty() {
            return Err(BuilderError::SelectorWithoutResource.into());
        }
        let mappings = resource_mappings(cluster, &builder.resources).await?;
        return Ok(Plan::Selected { mappings, selector });
    }
    if !builder.tuples.is_empty() {
        // Every type is mapped before anything is fetched.
        let index = cluster.api_index().await?;
        let mut mapped: Vec<(String, Mapping)> = Vec::new();
        for (resource, _) in &builder.tuples {
            if !mapped.iter().any(|(r, _)| r == resource) {
                mapped.push((resource.clone(), mapping_of(&index, resource)?));
            }
        }
        let mapping = |resource: &str| mapped.iter().find(|(r, _)| r == resource).map(|(_, m)| m.clone());
        let named = builder.tuples.iter().filter_map(|(resource, name)| Some((mapping(resource)?, name.clone())));
        return Ok(Plan::Named(named.collect()));
    }
    if !builder.names.is_empty() {
        let mapping = match builder.resources.as_slice() {
            [] => return Err(BuilderError::ResourceAndNameTogether.into()),
            [_] => resource_mappings(cluster, &builder.resources).await?.remove(0),
            _ => return Err(BuilderError::OnlyOneResource.into()),
        };
        return Ok(Plan::Named(builder.names.iter().map(|name| (mapping.clone(), name.clone())).collect()));
    }
    if !builder.resources.is_empty() {
        resource_mappings(cluster, &builder.resources).await?;
        return Err(BuilderError::NoName.into());
    }
    Err(BuilderError::MissingResource.into())
}

/// The objects of `plan`, handed to `each` in order (its error is the object's failure).
/// Stops at the first failure unless the request continues on error; then every failure is
/// returned together.
pub async fn visit(
    cluster: &Cluster,
    namespace: &Namespace,
    request: &Request<'_>,
    plan: Plan,
    mut each: impl FnMut(Target) -> Result<(), LastAppliedError>,
) -> Result<(), LastAppliedError> {
    let mut failures = Vec::new();
    // A failure is kept (continue on error) or ends the visit.
    let mut outcome = |result: Result<Target, LastAppliedError>| -> Result<(), LastAppliedError> {
        match result.and_then(|target| each(finish(target, namespace)?)) {
            Err(error) if request.continue_on_error => {
                failures.push(error);
                Ok(())
            }
            other => other,
        }
    };
    match plan {
        Plan::Paths { selector } => {
            for loaded in load_inputs(request).await? {
                let target = match loaded {
                    Ok(loaded) => file_target(cluster, loaded, namespace, true).await,
                    Err(error) => Err(error),
                };
                if let (Ok(target), Some(selector)) = (&target, &selector)
                    && !selector.matches_object(&target.object)
                {
                    continue;
                }
                outcome(target)?;
            }
        }
        Plan::Selected { mappings, selector } => {
            let selector = Some(selector.as_str()).filter(|s| !s.is_empty());
            for mapping in mappings {
                let list_namespace = mapping.namespaced.then_some(namespace.name.as_str());
                let items = match cluster.list(&mapping, list_namespace, selector).await {
                    Ok(items) => items,
                    Err(error) => {
                        outcome(Err(error.into()))?;
                        continue;
                    }
                };
                for object in items {
                    outcome(Ok(Target {
                        mapping: mapping.clone(),
                        name: meta_str(&object, "name").unwrap_or_default().to_owned(),
                        namespace: meta_str(&object, "namespace").unwrap_or_default().to_owned(),
                        source: None,
                        object,
                    }))?;
                }
            }
        }
        Plan::Named(named) => {
            for (mapping, name) in named {
                let object_namespace = if mapping.namespaced { namespace.name.clone() } else { String::new() };
                let object = get_latest(cluster, &mapping, &object_namespace, &name).await;
                outcome(object.map_err(LastAppliedError::from).map(|object| Target {
                    mapping,
                    name,
                    namespace: object_namespace,
                    source: None,
                    object,
                }))?;
            }
        }
    }
    match LastAppliedError::aggregate(failures) {
        Some(error) => Err(error),
        None => Ok(()),
    }
}

fn mapping_of(index: &ApiIndex, resource: &str) -> Result<Mapping, LastAppliedError> {
    let entry = index.mapping_for(resource)?;
    Ok(Mapping { resource: entry.api_resource.clone(), namespaced: entry.namespaced })
}

/// Each type's mapping, once per kind.
async fn resource_mappings(cluster: &Cluster, resources: &[String]) -> Result<Vec<Mapping>, LastAppliedError> {
    let index = cluster.api_index().await?;
    let mut mappings: Vec<Mapping> = Vec::new();
    for resource in resources {
        let mapping = mapping_of(&index, resource)?;
        let same = |m: &Mapping| {
            m.resource.api_version == mapping.resource.api_version && m.resource.kind == mapping.resource.kind
        };
        if !mappings.iter().any(same) {
            mappings.push(mapping);
        }
    }
    Ok(mappings)
}

/// The objects of the files (or the kustomization), and the problems reading them, in input
/// order.
pub async fn load_inputs(
    request: &Request<'_>,
) -> Result<Vec<Result<LoadedObject, LastAppliedError>>, LastAppliedError> {
    if let Some((dir, program)) = request.kustomize {
        let built = crate::commands::apply::build_kustomization(dir, program, None).await?;
        return Ok(built.into_iter().map(Ok).collect());
    }
    let loaded = manifest::load_partial(request.filenames, request.recursive, std::io::stdin(), &Default::default());
    let mut errors = loaded.errors.iter().zip(&loaded.positions).peekable();
    let mut out = Vec::new();
    for (index, object) in loaded.objects.into_iter().enumerate() {
        while let Some((error, _)) = errors.next_if(|&(_, &position)| position <= index) {
            out.push(Err(LastAppliedError::Load(error.kubectl_message())));
        }
        out.push(Ok(object));
    }
    out.extend(errors.map(|(error, _)| Err(LastAppliedError::Load(error.kubectl_message()))));
    Ok(out)
}

/// An object of a file with its mapping and namespace, and its live copy when `latest`
/// (the builder's `Latest`: an object without a name stays as written).
pub async fn file_target(
    cluster: &Cluster,
    loaded: LoadedObject,
    namespace: &Namespace,
    latest: bool,
) -> Result<Target, LastAppliedError> {
    let source = manifest::kubectl_source(&loaded.source.path);
    let mapping = object_mapping(cluster, &loaded.object, &source, false).await?;
    let mut object = loaded.object;
    let name = meta_str(&object, "name").unwrap_or_default().to_owned();
    let mut target_namespace = meta_str(&object, "namespace").unwrap_or_default().to_owned();
    if latest {
        if mapping.namespaced && target_namespace.is_empty() {
            target_namespace = namespace.name.clone();
        }
        if !name.is_empty() {
            object = get_latest(cluster, &mapping, &target_namespace, &name).await?;
        }
    }
    Ok(Target { mapping, name, namespace: target_namespace, source: Some(source), object })
}

/// The resource of an object read from `source`, worded as kubectl's builder words a kind it
/// does not know: for an object of its own document (`infoForData`), or an item of a `List`
/// (`infoForObject`).
pub async fn object_mapping(
    cluster: &Cluster,
    object: &Value,
    source: &str,
    list_item: bool,
) -> Result<Mapping, LastAppliedError> {
    let text = |field: &str| object.as_object().and_then(|o| o.get(field)).and_then(Value::as_str).unwrap_or_default();
    let (api_version, kind) = (text("apiVersion"), text("kind"));
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    match cluster.mapping(&GroupVersionKind::gvk(group, version, kind)).await {
        Ok(mapping) => Ok(mapping),
        Err(cause) if list_item => Err(LastAppliedError::UnrecognizedItem(cause)),
        Err(cluster::Error::NoMatch { .. }) => Err(LastAppliedError::NoMapping {
            name: meta_str(object, "name").unwrap_or_default().to_owned(),
            namespace: meta_str(object, "namespace").unwrap_or_default().to_owned(),
            file: source.to_owned(),
            kind: kind.to_owned(),
            api_version: api_version.to_owned(),
        }),
        Err(cause) => Err(LastAppliedError::Unrecognized { file: source.to_owned(), cause }),
    }
}

/// The builder's last steps on every object: the command's namespace for namespaced objects
/// that name none (and, with `-n`, the refusal of another), none for cluster-scoped ones.
fn finish(mut target: Target, namespace: &Namespace) -> Result<Target, LastAppliedError> {
    if !target.mapping.namespaced {
        target.namespace.clear();
        remove_namespace(&mut target.object);
        return Ok(target);
    }
    if target.namespace.is_empty() {
        target.namespace = namespace.name.clone();
        set_namespace(&mut target.object, &namespace.name);
    } else if namespace.enforced && target.namespace != namespace.name {
        return Err(LastAppliedError::NamespaceMismatch { found: target.namespace, expected: namespace.name.clone() });
    }
    Ok(target)
}

/// [`finish`] for the objects of `set-last-applied`, which it reads without fetching them.
pub fn finish_file_target(target: Target, namespace: &Namespace) -> Result<Target, LastAppliedError> {
    finish(target, namespace)
}

/// GET an object (kubectl's `Info.Get`): when it is not found in a namespace other than
/// `default`, and that namespace does not exist either, the namespace's NotFound is the error.
pub async fn get_latest(cluster: &Cluster, mapping: &Mapping, namespace: &str, name: &str) -> cluster::Result<Value> {
    let scoped = Some(namespace).filter(|ns| !ns.is_empty());
    match cluster.get(mapping, scoped, name).await {
        Err(error) if error.is_not_found() && scoped.is_some_and(|ns| ns != "default") => {
            let namespaces = Mapping {
                resource: ApiResource::from_gvk_with_plural(
                    &GroupVersionKind::gvk("", "v1", "Namespace"),
                    "namespaces",
                ),
                namespaced: false,
            };
            match cluster.get(&namespaces, None, namespace).await {
                Err(missing) if missing.is_not_found() => Err(missing),
                _ => Err(error),
            }
        }
        result => result,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(namespaced: bool, namespace: &str) -> Target {
        let gvk = GroupVersionKind::gvk("", "v1", "ConfigMap");
        let object =
            Value::from_json_str(&format!(r#"{{"metadata":{{"name":"a","namespace":"{namespace}"}}}}"#)).unwrap();
        Target {
            mapping: Mapping { resource: ApiResource::from_gvk_with_plural(&gvk, "configmaps"), namespaced },
            name: "a".into(),
            namespace: namespace.into(),
            source: None,
            object,
        }
    }

    #[test]
    fn namespaces_are_defaulted_checked_and_dropped() {
        let flag = Namespace { name: "ns".into(), enforced: true };
        let context = Namespace { name: "ns".into(), enforced: false };
        let mut empty = target(true, "");
        empty.object = Value::from_json_str(r#"{"metadata":{"name":"a"}}"#).unwrap();
        let defaulted = finish(empty, &flag).unwrap();
        assert_eq!((defaulted.namespace.as_str(), meta_str(&defaulted.object, "namespace")), ("ns", Some("ns")));
        let error = finish(target(true, "other"), &flag).unwrap_err();
        assert_eq!(
            error.to_string(),
            r#"the namespace from the provided object "other" does not match the namespace "ns". You must pass '--namespace=other' to perform this operation."#
        );
        assert_eq!(finish(target(true, "other"), &context).unwrap().namespace, "other", "without -n another is fine");
        let cluster_scoped = finish(target(false, "other"), &flag).unwrap();
        assert_eq!((cluster_scoped.namespace.as_str(), meta_str(&cluster_scoped.object, "namespace")), ("", None));
    }
}
