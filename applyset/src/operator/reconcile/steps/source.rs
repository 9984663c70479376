//! dependencies and fetch: nothing is fetched until every dependency is Ready; the revision
//! comes from git with the source's credentials (kept to read earlier revisions).

use std::collections::BTreeMap;
use std::time::{Duration, Instant, SystemTime};

use k8s_openapi::api::core::v1::Secret;
use kube::Api;

use super::super::redact_owner;
use super::super::{Reconciliation, RunMode};
use crate::causes::Chain;
use crate::operator::dependencies;
use crate::operator::outcome::Done;
use crate::operator::reconcile::Stage;
use crate::operator::reconcile::StepError;
use crate::operator::status::{self, READY};
use crate::redact;
use crate::source::{Artifact, CacheKey, Credentials, ErrorCategory, GitUrl, ProxySettings, SyncOptions, Transport};

/// What fetch brought: the revision's checkout, and the credentials that read it.
pub(in crate::operator::reconcile) struct Fetched {
    pub(in crate::operator::reconcile) artifact: Artifact,
    pub(in crate::operator::reconcile) credentials: Option<Credentials>,
}

impl Reconciliation<'_> {
    /// With `--no-cross-namespace-refs`, no reference into another namespace; then every
    /// `spec.dependsOn` ApplySet Ready (the controller's view of them, once listed).
    pub(in crate::operator::reconcile) async fn dependencies(&self) -> Result<(), StepError> {
        if self.ctx.settings.no_cross_namespace_refs {
            dependencies::cross_namespace(self.applyset)?;
        }
        if !self.applyset.spec.depends_on.is_empty() {
            dependencies::check(self.applyset, &self.ctx.applysets().await)?;
        }
        Ok(())
    }

    /// The source's credentials, then the revision from git; the attempted revision goes into
    /// the status and the run's span.
    pub(in crate::operator::reconcile) async fn fetch(&mut self) -> Result<Fetched, StepError> {
        if let RunMode::Plan(local) = &self.mode {
            // A plan's revision is its local checkout, as found.
            self.status.last_attempted_revision = Some(local.artifact.revision.clone());
            return Ok(Fetched { artifact: local.artifact.clone(), credentials: None });
        }
        let (applyset, ctx) = (self.applyset, self.ctx);
        let credentials = self.credentials().await?;
        // The source's secrets (URL user info, the auth Secret's values) are redacted from
        // everything published from here on.
        let mut source_secrets = redact::Secrets::new();
        let values = crate::source::url_secrets(&applyset.spec.source.url).into_iter();
        for value in values.chain(credentials.iter().flat_map(Credentials::secret_values)) {
            source_secrets.add(&value);
        }
        redact::register(&redact_owner(applyset, "source"), source_secrets);
        if !ctx.settings.allow_local_sources
            && GitUrl::parse(&applyset.spec.source.url).is_ok_and(|url| url.transport() == Transport::Local)
        {
            return Err(StepError::new(
                Stage::InvalidSpec,
                "spec.source.url: local repositories (file:// or a path) are disabled on this controller (--allow-local-sources)",
            ));
        }
        let namespace = applyset.namespace_or_default();
        let fetch_started = Instant::now();
        let key = CacheKey::new(&namespace, applyset.name());
        let options = SyncOptions {
            previous: self.previous.last_applied_revision.as_deref(),
            listed_since: self.listed_since(),
            applied_inputs: self.previous.last_applied_inputs.as_deref(),
        };
        let artifact =
            ctx.git.sync_with(&key, &applyset.spec.source, credentials.clone(), self.intervals.timeout, options).await;
        match artifact {
            Ok(artifact) => {
                ctx.metrics.source_synced(artifact.network, artifact.fetched);
                if artifact.moved {
                    self.wake_fellow_followers(&key, &artifact.source_id).await;
                }
                self.status.last_attempted_revision = Some(artifact.revision.clone());
                tracing::Span::current().record("revision", artifact.revision.as_str());
                Ok(Fetched { artifact, credentials })
            }
            Err(error) => {
                let category = error.category();
                ctx.metrics.source_failed(category, fetch_started.elapsed());
                let stage = if category == ErrorCategory::InvalidSpec { Stage::InvalidSpec } else { Stage::Fetch };
                Err(StepError::of(stage, error))
            }
        }
    }

    /// A new commit that changes nothing this ApplySet reads (its path's tree and what its
    /// kustomizations reach, see [`Artifact::inputs_unchanged`]), at the generation a full run
    /// handled last and with the post-build variables of that run, after a run that succeeded
    /// and was Ready: the new revision is recorded, and nothing is loaded, built, applied or
    /// pruned. Not for a drift check, which must apply; nor after any spec change, even one the
    /// apply digest leaves out (a new `serviceAccountName` must be run as).
    pub(in crate::operator::reconcile) fn inputs_unchanged(
        &self,
        artifact: &Artifact,
        spec_digest: &str,
    ) -> Option<Done> {
        let previous = self.previous;
        let applied = previous.last_applied_revision.as_deref()?;
        let unchanged = artifact.inputs_unchanged
            && self.mode.writes()
            && !self.drift_check
            && previous.last_applied_generation.is_some()
            && previous.last_applied_generation == self.applyset.metadata.generation
            && previous.last_applied_spec_digest.as_deref() == Some(spec_digest)
            && previous.last_attempted_revision.as_deref() == Some(applied)
            && status::condition(previous, READY).is_some_and(|c| c.status == "True");
        unchanged.then(|| Done {
            revision: artifact.revision.clone(),
            applied_digest: spec_digest.to_owned(),
            inputs: artifact.inputs.clone(),
            inputs_unchanged_since: Some(applied.to_owned()),
            ..Done::default()
        })
    }

    /// How recent a listing of the remote, by any ApplySet of the same source, this run may
    /// take instead of connecting: one made since the request a requested run handles (a
    /// webhook push, `reconcile`), none after a spec change, else one made within this
    /// ApplySet's interval. So a source followed by many ApplySets is listed about once per
    /// interval, and once per push.
    fn listed_since(&self) -> Option<SystemTime> {
        let handled = self.previous.last_handled_reconcile_at.as_deref();
        match self.applyset.reconcile_requested_at() {
            Some(requested) if Some(requested) != handled => {
                // Not a timestamp: connect.
                let at = requested.parse::<k8s_openapi::jiff::Timestamp>().ok()?;
                Some(SystemTime::UNIX_EPOCH + Duration::from_nanos(u64::try_from(at.as_nanosecond()).ok()?))
            }
            // A new spec (a path, a ref just pushed) is read from the remote as it is now.
            _ if self.previous.observed_generation != self.applyset.metadata.generation => Some(SystemTime::now()),
            _ => SystemTime::now().checked_sub(self.intervals.interval),
        }
    }

    /// The source moved: the other ApplySets that follow it run now (they take this listing).
    async fn wake_fellow_followers(&self, key: &CacheKey, source_id: &str) {
        let fellows = self.ctx.git.fellow_followers(source_id, key);
        if fellows.is_empty() {
            return;
        }
        for applyset in self.ctx.applysets().await {
            let of = CacheKey::new(applyset.namespace_or_default(), applyset.name());
            if fellows.contains(&of) {
                self.ctx.schedule.run_now(&applyset);
            }
        }
    }

    /// Reads the source `auth` Secret (same namespace) into credentials, with the proxy of
    /// `spec.source.proxySecretRef`; never logs their data.
    async fn credentials(&self) -> Result<Option<Credentials>, StepError> {
        let source = &self.applyset.spec.source;
        let mut credentials = match &source.secret_ref {
            Some(secret_ref) => {
                let data = self.secret_data(&secret_ref.name, "spec.source.secretRef").await?;
                Some(Credentials::from_secret_data(&data).map_err(|e| self.secret_error(&secret_ref.name, e))?)
            }
            None => None,
        };
        if let Some(proxy_ref) = &source.proxy_secret_ref {
            let data = self.secret_data(&proxy_ref.name, "spec.source.proxySecretRef").await?;
            let proxy = ProxySettings::from_secret_data(&data).map_err(|e| self.secret_error(&proxy_ref.name, e))?;
            credentials = Some(credentials.unwrap_or_default().with_proxy(proxy));
        }
        Ok(credentials)
    }

    /// The data of a Secret of the ApplySet's namespace that `field` names.
    async fn secret_data(&self, name: &str, field: &str) -> Result<BTreeMap<String, Vec<u8>>, StepError> {
        let namespace = self.applyset.namespace_or_default();
        let secrets: Api<Secret> = Api::namespaced(self.ctx.client.clone(), &namespace);
        let secret = secrets.get_opt(name).await.map_err(|e| {
            let message = format!("reading Secret {namespace}/{name}: {}", crate::cluster::list::error_text(&e));
            StepError::caused(Stage::Fetch, message, e)
        })?;
        let Some(secret) = secret else {
            return Err(StepError::new(Stage::Fetch, format!("Secret {namespace}/{name} ({field}) not found")));
        };
        Ok(secret.data.unwrap_or_default().into_iter().map(|(k, v)| (k, v.0)).collect())
    }

    fn secret_error(&self, name: &str, error: crate::source::SourceError) -> StepError {
        let namespace = self.applyset.namespace_or_default();
        StepError::caused(Stage::Fetch, format!("Secret {namespace}/{name}: {error}", error = Chain(&error)), error)
    }
}
