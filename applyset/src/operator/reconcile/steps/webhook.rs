//! webhook path: the receiver's path of an ApplySet with `spec.webhook`, published in
//! `status.webhookPath` (Flux's Receiver publishes its path the same way). It needs the token,
//! so it is computed only when the run may find a new one: a new generation, a run someone
//! asked for (a push, `reconcile`), or no path published yet; an interval run reads nothing.

use k8s_openapi::api::core::v1::Secret;
use kube::Api;

use super::super::Reconciliation;
use crate::operator::webhook::hook_path;

impl Reconciliation<'_> {
    /// Sets `status.webhookPath` (removes it without `spec.webhook`). A token that cannot be
    /// read leaves no path and a Warning Event: the receiver refuses every push meanwhile.
    pub(in crate::operator::reconcile) async fn webhook_path(&mut self) {
        let Some(webhook) = &self.applyset.spec.webhook else {
            self.status.webhook_path = None;
            return;
        };
        let previous = self.previous;
        let current = previous.webhook_path.is_some()
            && previous.observed_generation == self.applyset.metadata.generation
            && !super::super::run::reads_fresh(
                self.applyset.reconcile_requested_at(),
                previous.last_handled_reconcile_at.as_deref(),
            );
        if current {
            return;
        }
        let (namespace, name) = (self.applyset.namespace_or_default(), self.applyset.name());
        let secrets: Api<Secret> = Api::namespaced(self.ctx.client.clone(), &namespace);
        let token = match secrets.get_opt(&webhook.secret_ref.name).await {
            Ok(None) => Err("not found".to_owned()),
            Ok(Some(secret)) => {
                let token = secret.data.and_then(|mut data| data.remove("token")).map(|t| t.0);
                token.filter(|t| !t.is_empty()).ok_or("has no `token` key (or it is empty)".to_owned())
            }
            Err(error) => Err(crate::cluster::list::error_text(&error)),
        };
        match token {
            Ok(token) => self.status.webhook_path = Some(hook_path(&token, &namespace, &name)),
            Err(why) => {
                self.status.webhook_path = None;
                // Said once per generation (and when a path is lost), not at every interval.
                let news = previous.observed_generation != self.applyset.metadata.generation
                    || previous.webhook_path.is_some();
                if news {
                    let secret = &webhook.secret_ref.name;
                    let note = format!("spec.webhook: Secret {namespace}/{secret} {why}: pushes are refused");
                    self.ctx.event(self.applyset, true, "WebhookUnavailable", "Webhook", note).await;
                }
            }
        }
    }
}
