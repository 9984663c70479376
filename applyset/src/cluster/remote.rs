//! A kubeconfig handed over as bytes (an ApplySet's `spec.kubeConfig` Secret): read with the
//! rules of [`super::config`] (its current context, checked as client-go checks it), without
//! kubectl's flags, `$KUBECONFIG` or the in-cluster fallback. A tenant writes it, so by default
//! it may not make the controller run a program (`exec`, an `auth-provider`) or read a file of
//! the controller's machine (`tokenFile`, `client-certificate`, `client-key`,
//! `certificate-authority` by path): only data inline.

use std::sync::Arc;

use kube::config::{AuthInfo, Kubeconfig};

use super::config::{self, ConfigError, ConfigOverrides};

/// Whether the kubeconfig may run programs and read files on the controller's machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LocalAccess {
    /// Only inline data (the default).
    Refused,
    /// `--allow-remote-exec`: as kubectl would use it.
    Allowed,
}

/// Why a kubeconfig given as bytes makes no client configuration.
#[derive(Debug, Clone, thiserror::Error)]
pub enum RemoteConfigError {
    #[error("not a kubeconfig")]
    Parse(#[source] Arc<kube::config::KubeconfigError>),
    /// A field that would run a program or read a file where the controller runs.
    #[error(
        "{owner} uses {field}, which would {effect} on the controller's machine: refused (only inline credentials are accepted unless the controller runs with --allow-remote-exec)"
    )]
    LocalAccess { owner: String, field: &'static str, effect: &'static str },
    /// The kubeconfig's current context names no cluster with a server.
    #[error("the kubeconfig names no cluster to connect to (its current-context {0:?} has no server)")]
    NoCluster(String),
    #[error(transparent)]
    Invalid(#[from] ConfigError),
}

/// The client configuration of the kubeconfig in `text`: its current context, cluster and user.
pub async fn config_from_bytes(text: &str, local: LocalAccess) -> Result<kube::Config, RemoteConfigError> {
    let file = Kubeconfig::from_yaml(text).map_err(|e| RemoteConfigError::Parse(Arc::new(e)))?;
    let selection = config::select(&file, None, &ConfigOverrides::default())?;
    if local == LocalAccess::Refused {
        check_inline(&selection.user_name, &selection.user, &selection.cluster_name, &selection.cluster)?;
    }
    let mut errors = Vec::new();
    if selection.dangling_context {
        errors.push(format!("context was not found for specified context: {}", selection.context_name));
    }
    errors.extend(config::auth_errors(&selection.user_name, &selection.user));
    match config::cluster_errors(&selection.cluster_name, &selection.cluster) {
        Some(found) => errors.extend(found),
        // No server at all: never the controller's own cluster in its place.
        None if errors.is_empty() => return Err(RemoteConfigError::NoCluster(selection.context_name)),
        None => errors.push("cluster has no server defined".to_owned()),
    }
    if !errors.is_empty() {
        return Err(ConfigError::Invalid(errors).into());
    }
    config::check_tls(&selection.cluster)?;
    Ok(config::with_timeouts(config::kube_config(selection).await?))
}

/// Refuses what would run a program or read a file of the controller's machine.
fn check_inline(
    user_name: &str,
    user: &AuthInfo,
    cluster_name: &str,
    cluster: &kube::config::Cluster,
) -> Result<(), RemoteConfigError> {
    const RUN: &str = "run a program";
    const READ: &str = "read a file";
    let user_fields = [
        (user.exec.is_some(), "an exec plugin (exec)", RUN),
        (user.auth_provider.is_some(), "an auth-provider", RUN),
        (user.token_file.is_some(), "a token file (tokenFile)", READ),
        (user.client_certificate.is_some(), "a client certificate file (client-certificate)", READ),
        (user.client_key.is_some(), "a client key file (client-key)", READ),
    ];
    if let Some((_, field, effect)) = user_fields.into_iter().find(|(set, ..)| *set) {
        return Err(RemoteConfigError::LocalAccess {
            owner: format!("the kubeconfig's user {user_name:?}"),
            field,
            effect,
        });
    }
    if cluster.certificate_authority.is_some() {
        return Err(RemoteConfigError::LocalAccess {
            owner: format!("the kubeconfig's cluster {cluster_name:?}"),
            field: "a CA file (certificate-authority)",
            effect: READ,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kubeconfig(user: &str, cluster: &str) -> String {
        format!(
            "apiVersion: v1\nkind: Config\ncurrent-context: remote\ncontexts:\n- name: remote\n  context: {{cluster: c, user: u}}\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:6443\n{cluster}users:\n- name: u\n  user:\n{user}"
        )
    }

    const INSECURE: &str = "    insecure-skip-tls-verify: true\n";

    async fn refused(user: &str, cluster: &str) -> RemoteConfigError {
        config_from_bytes(&kubeconfig(user, cluster), LocalAccess::Refused).await.expect_err("refused")
    }

    #[tokio::test]
    async fn inline_credentials_make_a_config_for_the_current_context() {
        let config =
            config_from_bytes(&kubeconfig("    token: abc\n", INSECURE), LocalAccess::Refused).await.expect("a config");
        assert_eq!(config.cluster_url.to_string(), "https://127.0.0.1:6443/");
        assert!(config.auth_info.token.is_some());
    }

    #[tokio::test]
    async fn programs_and_files_of_the_controllers_machine_are_refused() {
        let exec = "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: /bin/sh\n      args: [-c, 'touch /tmp/pwned']\n";
        let cases = [
            (exec, INSECURE, "the kubeconfig's user \"u\" uses an exec plugin (exec), which would run a program"),
            ("    auth-provider:\n      name: gcp\n", INSECURE, "uses an auth-provider, which would run a program"),
            ("    tokenFile: /etc/shadow\n", INSECURE, "uses a token file (tokenFile), which would read a file"),
            (
                "    client-certificate: /etc/cert\n    client-key: /etc/key\n",
                INSECURE,
                "uses a client certificate file (client-certificate)",
            ),
            ("    token: abc\n", "    certificate-authority: /etc/ca.crt\n", "cluster \"c\" uses a CA file"),
        ];
        for (user, cluster, expected) in cases {
            let error = refused(user, cluster).await;
            assert!(matches!(error, RemoteConfigError::LocalAccess { .. }), "{error:?}");
            let message = error.to_string();
            assert!(message.contains(expected), "{message}");
            assert!(message.ends_with("unless the controller runs with --allow-remote-exec)"), "{message}");
        }
    }

    #[tokio::test]
    async fn allowed_local_access_is_checked_as_kubectl_checks_it() {
        let text = kubeconfig("    tokenFile: /nonexistent/token\n", INSECURE);
        // Allowed, the file reference passes the inline check and kube reads it later.
        assert!(!matches!(
            config_from_bytes(&text, LocalAccess::Allowed).await,
            Err(RemoteConfigError::LocalAccess { .. })
        ));
    }

    #[tokio::test]
    async fn no_server_is_never_the_controllers_own_cluster() {
        let text = "apiVersion: v1\nkind: Config\nclusters: []\nusers: []\ncontexts: []\n";
        let error = config_from_bytes(text, LocalAccess::Refused).await.expect_err("no cluster");
        assert!(matches!(error, RemoteConfigError::NoCluster(_)), "{error:?}");
        let error = config_from_bytes("a: [", LocalAccess::Refused).await.expect_err("not YAML");
        assert!(matches!(error, RemoteConfigError::Parse(_)), "{error:?}");
    }
}
