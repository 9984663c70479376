//! The parent of one run: resolved from `--applyset` ([`Parent::prepare`]) or held by the
//! caller ([`Parent::from_existing`]), its checks, the members it records, and its writes.

use std::collections::{BTreeMap, BTreeSet};

use kube::Client;
use kube::api::{Api, DynamicObject, Patch, PatchParams, ValidationDirective};
use kube::core::ApiResource;

use super::codec::*;
use super::error::{AnnotationError, Error, MemberLabelError};
use super::reference::{aggregate, is_builtin_parent, parse_parent_ref, permitted_custom_parents, validate_parent};
use crate::apply::Visited;
use crate::causes::{Chain, with_causes};
use crate::cluster::list::{error_text, is_status};
use crate::cluster::mapper::{ApiIndex, GroupKind};
use crate::cluster::{Cluster, DryRun};
use crate::keys::{
    ADDITIONAL_NAMESPACES_ANNOTATION, GROUP_KINDS_ANNOTATION, PARENT_ID_LABEL, PART_OF_LABEL, TOOLING_ANNOTATION,
};

/// A member as the parent records it: its kind, scope and (namespaced only) namespace.
#[derive(Clone, Debug)]
pub struct Member<'a> {
    pub api_resource: &'a ApiResource,
    pub namespaced: bool,
    pub namespace: Option<&'a str>,
}

impl<'a> From<&'a Visited> for Member<'a> {
    fn from(visited: &'a Visited) -> Self {
        Member {
            api_resource: &visited.api_resource,
            namespaced: visited.namespaced,
            namespace: visited.namespace.as_deref(),
        }
    }
}

/// A kind recorded on the parent, with its mapping.
#[derive(Clone, Debug)]
pub struct RecordedKind {
    pub api_resource: ApiResource,
    pub namespaced: bool,
}

/// An ApplySet parent for one run (see the module docs for the call order).
#[derive(Clone, Debug)]
pub struct Parent {
    pub(super) api_resource: ApiResource,
    pub(super) namespaced: bool,
    pub(super) name: String,
    /// Empty for a cluster-scoped parent.
    pub(super) namespace: String,
    pub(super) id: String,
    pub(super) index: ApiIndex,
    /// Recorded on the parent before this run (set by `update_superset`).
    pub(super) current_kinds: BTreeMap<GroupKind, RecordedKind>,
    pub(super) current_namespaces: BTreeSet<String>,
    /// Of this run's objects.
    pub(super) updated_kinds: BTreeSet<GroupKind>,
    pub(super) updated_namespaces: BTreeSet<String>,
    /// Server-side field validation for the parent's apply (`--validate`), if any.
    pub field_validation: Option<FieldValidation>,
    /// Warnings for stderr (e.g. a forced parent update after a conflict); drained by the caller.
    pub warnings: Vec<String>,
    /// The controller's parents: recorded kinds the cluster no longer serves (a CRD deleted)
    /// are skipped, not errors (see [`Parent::from_existing`]).
    pub(super) skip_unknown_kinds: bool,
    /// The tool it is managed as.
    pub(super) tooling: Tooling,
    /// The resourceVersion the parent's last write in this run was answered with.
    written_version: Option<String>,
}

/// `fieldValidation` for the parent's server-side apply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldValidation {
    Strict,
    Warn,
    Ignore,
}

impl Parent {
    /// Parses, resolves and validates `--applyset` (kubectl's `ParseApplySetParentRef` and
    /// `ApplySet.Validate`). `explicit_namespace` is `-n` only when given on the command line.
    /// Makes discovery requests (and a CRD LIST for custom resource parents), no parent GET.
    pub async fn prepare(cluster: &Cluster, parent_ref: &str, explicit_namespace: Option<&str>) -> Result<Self, Error> {
        let spec = parse_parent_ref(parent_ref)?;
        let index = cluster.api_index().await.map_err(|error| match error {
            crate::cluster::Error::Unreachable { .. } => Error::Unreachable(with_causes(&error)),
            other => Error::InvalidReference(format!("discovery failed: {other}")),
        })?;
        let entry = index
            .for_resource(&spec.group, &spec.version, &spec.resource)
            .map_err(|error| {
                Error::InvalidReference(format!(
                    "invalid parent reference {parent_ref:?}: {error}",
                    error = Chain(&error)
                ))
            })?
            .clone();
        let client = cluster.client();
        let namespace = match explicit_namespace {
            Some(ns) if entry.namespaced => ns.to_owned(),
            _ => String::new(),
        };
        let permitted =
            if is_builtin_parent(&entry.api_resource) { None } else { Some(permitted_custom_parents(client).await) };
        aggregate(validate_parent(&entry.api_resource, entry.namespaced, &namespace, permitted.as_ref()))?;
        Ok(Self::new(entry.api_resource, entry.namespaced, &spec.name, &namespace, (*index).clone(), Tooling::Kubectl))
    }

    /// A parent before anything is recorded; its ID follows from its name, namespace and kind.
    pub(super) fn new(
        api_resource: ApiResource,
        namespaced: bool,
        name: &str,
        namespace: &str,
        index: ApiIndex,
        tooling: Tooling,
    ) -> Self {
        let id = applyset_id(name, namespace, &api_resource.kind, &api_resource.group);
        Self {
            api_resource,
            namespaced,
            name: name.to_owned(),
            namespace: namespace.to_owned(),
            id,
            index,
            current_kinds: BTreeMap::new(),
            current_namespaces: BTreeSet::new(),
            updated_kinds: BTreeSet::new(),
            updated_namespaces: BTreeSet::new(),
            field_validation: None,
            warnings: Vec::new(),
            // The controller's parents skip kinds the cluster no longer serves.
            skip_unknown_kinds: tooling == Tooling::Controller,
            tooling,
            written_version: None,
        }
    }

    /// A parent the caller already holds (the controller's own ApplySet object): no discovery
    /// of the parent type and no GET. A parent without any ApplySet metadata yet starts empty;
    /// one with metadata must pass kubectl's checks.
    pub fn from_existing(
        index: ApiIndex,
        api_resource: ApiResource,
        name: &str,
        namespace: &str,
        labels: &BTreeMap<String, String>,
        annotations: &BTreeMap<String, String>,
    ) -> Result<Self, Error> {
        let namespaced = !namespace.is_empty();
        let mut parent = Self::new(api_resource, namespaced, name, namespace, index, Tooling::Controller);
        let fresh = !annotations.contains_key(TOOLING_ANNOTATION) && !labels.contains_key(PARENT_ID_LABEL);
        if fresh {
            if parent.namespaced {
                parent.current_namespaces.insert(parent.namespace.clone());
            }
            return Ok(parent);
        }
        check_existing_parent(&parent.reference(), parent.tooling, &parent.id, labels, annotations)?;
        parent.record_existing(annotations)?;
        Ok(parent)
    }

    /// Adds the kinds and namespaces of members the caller recorded itself (the controller's
    /// record of members, by `Kind[.group]` and namespace) to those the parent's
    /// annotations record, so that a hand edit of the annotations cannot hide a member from
    /// prune; the next superset write puts them back. Returns what the annotations lacked, as
    /// `Kind[.group]` and `namespace NAME` (a kind the cluster no longer serves is left out).
    pub fn include_recorded<'a>(
        &mut self,
        members: impl IntoIterator<Item = (&'a str, Option<&'a str>)>,
    ) -> Vec<String> {
        let mut missing = BTreeSet::new();
        for (kind, namespace) in members {
            let group_kind = GroupKind::parse(kind);
            if !self.current_kinds.contains_key(&group_kind)
                && let Ok(entry) = self.index.for_group_kind(&group_kind)
            {
                let recorded = RecordedKind { api_resource: entry.api_resource.clone(), namespaced: entry.namespaced };
                missing.insert(group_kind.to_string());
                self.current_kinds.insert(group_kind, recorded);
            }
            if let Some(namespace) = namespace.filter(|ns| !ns.is_empty())
                && self.current_namespaces.insert(namespace.to_owned())
            {
                missing.insert(format!("namespace {namespace}"));
            }
        }
        missing.into_iter().collect()
    }

    /// Records this run's members (the first half of [`Parent::update_superset`], no write).
    pub fn record_members<'a>(&mut self, members: impl IntoIterator<Item = Member<'a>>) {
        for member in members {
            self.updated_kinds.insert(GroupKind::of(member.api_resource));
            if let Some(ns) = member.namespace.filter(|ns| member.namespaced && !ns.is_empty()) {
                self.updated_namespaces.insert(ns.to_owned());
            }
        }
    }

    /// Server-side applies `body` unless the parent's current labels, annotations and
    /// finalizers already hold every value in it; returns whether it wrote.
    pub async fn apply_if_changed(
        &mut self,
        client: &Client,
        body: serde_json::Value,
        labels: &BTreeMap<String, String>,
        annotations: &BTreeMap<String, String>,
        finalizers: &[String],
    ) -> Result<bool, Error> {
        let holds = |field: &str, current: &BTreeMap<String, String>| {
            body["metadata"][field]
                .as_object()
                .is_none_or(|wanted| wanted.iter().all(|(k, v)| v.as_str() == current.get(k).map(String::as_str)))
        };
        let holds_finalizers = body["metadata"]["finalizers"]
            .as_array()
            .is_none_or(|wanted| wanted.iter().all(|f| finalizers.iter().any(|held| f.as_str() == Some(held))));
        if holds("labels", labels) && holds("annotations", annotations) && holds_finalizers {
            return Ok(false);
        }
        self.server_side_apply(client, body, DryRun::None).await?;
        Ok(true)
    }

    /// The set's ID (`applyset-…-v1`).
    pub fn id(&self) -> &str {
        &self.id
    }

    pub fn api_resource(&self) -> &ApiResource {
        &self.api_resource
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// Empty for a cluster-scoped parent.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// kubectl's `ApplySetParentRef.String()`: `<resource>.<group>/<name>` (`secrets./x`).
    pub fn reference(&self) -> String {
        format!("{}.{}/{}", self.api_resource.plural, self.api_resource.group, self.name)
    }

    /// The member label: (`applyset.kubernetes.io/part-of`, ID).
    pub fn part_of_label(&self) -> (&'static str, String) {
        (PART_OF_LABEL, self.id.clone())
    }

    /// The member label selector (`applyset.kubernetes.io/part-of=<ID>`).
    pub fn member_selector(&self) -> String {
        format!("{PART_OF_LABEL}={}", self.id)
    }

    /// Adds the member label to an input object (kubectl's `AddLabels`).
    pub fn add_labels(&self, object: &mut serde_json::Value) -> Result<(), Error> {
        Ok(self.add_member_label(object)?)
    }

    fn add_member_label(&self, object: &mut serde_json::Value) -> Result<(), MemberLabelError> {
        let metadata = object
            .as_object_mut()
            .ok_or(MemberLabelError::ObjectNotMap)?
            .entry("metadata")
            .or_insert_with(|| serde_json::json!({}));
        let metadata = metadata.as_object_mut().ok_or(MemberLabelError::MetadataNotMap)?;
        let labels = metadata.entry("labels").or_insert_with(|| serde_json::json!({}));
        if labels.is_null() {
            *labels = serde_json::json!({});
        }
        let labels = labels.as_object_mut().ok_or(MemberLabelError::LabelsNotMap)?;
        if labels.contains_key(PART_OF_LABEL) {
            return Err(MemberLabelError::AlreadySet);
        }
        labels.insert(PART_OF_LABEL.to_owned(), serde_json::Value::String(self.id.clone()));
        Ok(())
    }

    /// Kinds recorded on the parent before this run (after `update_superset`).
    pub fn current_kinds(&self) -> impl Iterator<Item = &GroupKind> {
        self.current_kinds.keys()
    }

    /// Namespaces recorded on the parent before this run, with its own (after `update_superset`).
    pub fn current_namespaces(&self) -> &BTreeSet<String> {
        &self.current_namespaces
    }

    /// GETs the parent and checks it (kubectl's `fetchParent`), records this run's members and
    /// server-side applies the superset (kubectl's `BeforeApply`).
    pub async fn update_superset<'a>(
        &mut self,
        client: &Client,
        members: impl IntoIterator<Item = Member<'a>>,
        dry_run: DryRun,
    ) -> Result<(), Error> {
        self.fetch(client).await?;
        self.record_members(members);
        let body = self.superset_body();
        self.server_side_apply(client, body, dry_run).await
    }

    /// Server-side applies the latest set (this run's kinds and namespaces only).
    pub async fn update_latest(&mut self, client: &Client, dry_run: DryRun) -> Result<(), Error> {
        let body = self.latest_body();
        self.server_side_apply(client, body, dry_run)
            .await
            .map_err(|error| error.context("apply and prune succeeded, but ApplySet update failed"))
    }

    /// The parent body for the superset update (pure).
    pub fn superset_body(&self) -> serde_json::Value {
        let kinds: BTreeSet<&GroupKind> = self.current_kinds.keys().chain(&self.updated_kinds).collect();
        let namespaces: BTreeSet<&String> = self.current_namespaces.iter().chain(&self.updated_namespaces).collect();
        self.body(group_kinds_annotation(kinds), namespaces_annotation(namespaces, &self.namespace))
    }

    /// The parent body for the latest update (pure).
    pub fn latest_body(&self) -> serde_json::Value {
        self.body(
            group_kinds_annotation(&self.updated_kinds),
            namespaces_annotation(&self.updated_namespaces, &self.namespace),
        )
    }

    fn body(&self, group_kinds: String, namespaces: String) -> serde_json::Value {
        let mut metadata = serde_json::json!({
            "name": self.name,
            "annotations": {
                TOOLING_ANNOTATION: self.tooling.annotation(),
                GROUP_KINDS_ANNOTATION: group_kinds,
                ADDITIONAL_NAMESPACES_ANNOTATION: namespaces,
            },
            "labels": { PARENT_ID_LABEL: self.id },
        });
        if !self.namespace.is_empty() {
            metadata["namespace"] = self.namespace.clone().into();
        }
        serde_json::json!({
            "kind": self.api_resource.kind,
            "apiVersion": self.api_resource.api_version,
            "metadata": metadata,
        })
    }

    fn api(&self, client: &Client) -> Api<DynamicObject> {
        if self.namespaced {
            Api::namespaced_with(client.clone(), &self.namespace, &self.api_resource)
        } else {
            Api::all_with(client.clone(), &self.api_resource)
        }
    }

    async fn fetch(&mut self, client: &Client) -> Result<(), Error> {
        let reference = self.reference();
        let parent = match self.api(client).get_metadata_opt(&self.name).await {
            Ok(parent) => parent,
            Err(error) => {
                return Err(Error::request(format!("failed to fetch ApplySet parent object {reference:?}"), error));
            }
        };
        let Some(parent) = parent else {
            if !is_builtin_parent(&self.api_resource) {
                return Err(Error::InvalidParent(
                    "custom resource ApplySet parents cannot be created automatically".to_owned(),
                ));
            }
            return Ok(());
        };
        let labels: BTreeMap<String, String> = parent.metadata.labels.unwrap_or_default();
        let annotations: BTreeMap<String, String> = parent.metadata.annotations.unwrap_or_default();
        check_existing_parent(&reference, self.tooling, &self.id, &labels, &annotations)?;
        self.record_existing(&annotations)
    }

    /// Reads the kinds and namespaces an existing parent records (kubectl's `fetchParent`
    /// after its checks).
    ///
    /// For the controller's parents, a recorded kind the cluster no longer serves (its CRD
    /// deleted) is left out with a warning instead of failing: no object of it can exist to
    /// prune, and kubectl's error would otherwise repeat at every interval.
    fn record_existing(&mut self, annotations: &BTreeMap<String, String>) -> Result<(), Error> {
        let reference = self.reference();
        let wrap = |source: AnnotationError| Error::ParentAnnotation { reference: reference.clone(), source };
        let mut kinds = BTreeMap::new();
        match parse_recorded_kinds(annotations).map_err(wrap)? {
            RecordedKinds::GroupKinds(gks) => {
                for gk in gks {
                    let entry = match self.index.for_group_kind(&gk) {
                        Ok(entry) => entry,
                        Err(error) if self.skip_unknown_kinds => {
                            self.warnings.push(format!(
                                "{reference}: recorded kind {gk} is no longer served ({error}); nothing of it to prune"
                            ));
                            continue;
                        }
                        Err(error) => return Err(wrap(AnnotationError::UnmappedKind(error))),
                    };
                    kinds.insert(
                        gk,
                        RecordedKind { api_resource: entry.api_resource.clone(), namespaced: entry.namespaced },
                    );
                }
            }
            RecordedKinds::GroupResources(grs) => {
                for (resource, group) in grs {
                    let entry = self
                        .index
                        .for_resource(&group, "", &resource)
                        .map_err(|error| wrap(AnnotationError::UnmappedGroupResource(error)))?;
                    kinds.insert(
                        GroupKind::of(&entry.api_resource),
                        RecordedKind { api_resource: entry.api_resource.clone(), namespaced: entry.namespaced },
                    );
                }
            }
        }
        self.current_kinds = kinds;
        self.current_namespaces =
            parse_namespaces_annotation(annotations.get(ADDITIONAL_NAMESPACES_ANNOTATION).map(String::as_str));
        if self.namespaced {
            self.current_namespaces.insert(self.namespace.clone());
        }
        Ok(())
    }

    async fn server_side_apply(
        &mut self,
        client: &Client,
        body: serde_json::Value,
        dry_run: DryRun,
    ) -> Result<(), Error> {
        if matches!(dry_run, DryRun::Client) {
            return Ok(());
        }
        let mut params = PatchParams::apply(FIELD_MANAGER);
        params.dry_run = matches!(dry_run, DryRun::Server);
        params.field_validation = self.field_validation.map(|v| match v {
            FieldValidation::Strict => ValidationDirective::Strict,
            FieldValidation::Warn => ValidationDirective::Warn,
            FieldValidation::Ignore => ValidationDirective::Ignore,
        });
        let api = self.api(client);
        let mut result = api.patch(&self.name, &params, &Patch::Apply(&body)).await;
        if let Err(error) = &result
            && is_status(error, 409)
        {
            self.warnings.push(format!(
                "WARNING: failed to update ApplySet: {}\nApplySet field manager {FIELD_MANAGER} should own these fields. Retrying with conflicts forced.",
                error_text(error)
            ));
            params.force = true;
            result = api.patch(&self.name, &params, &Patch::Apply(&body)).await;
        }
        let written = result.map_err(|error| Error::request("failed to update ApplySet", error))?;
        if !params.dry_run {
            self.written_version = written.metadata.resource_version;
        }
        Ok(())
    }

    /// The resourceVersion the parent's last write of this run produced (none before one, or
    /// for dry runs): the controller waits for its own writes to be in its view of the parent.
    pub fn written_version(&self) -> Option<&str> {
        self.written_version.as_deref()
    }
}
