//! The client configuration as kubectl builds it: the kubeconfig files merged as client-go
//! merges them (`--kubeconfig`, else every file of `$KUBECONFIG` that exists, else
//! `~/.kube/config`), kubectl's global flags laid over the chosen context, cluster and user
//! (client-go's `ConfigOverrides`, with its special cases), checked as client-go checks them
//! (`ConfirmUsable`, then the TLS configuration; same messages), and turned into a
//! `kube::Config`. With no cluster at all, the in-cluster service account is used, as
//! client-go's deferred loader does.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use kube::config::{AuthInfo, Context, KubeConfigOptions, Kubeconfig, NamedAuthInfo, NamedCluster, NamedContext};

use crate::causes::with_causes;

/// A secret flag value (`--token`, `--password`): never shown by `Debug`.
#[derive(Clone, PartialEq, Eq)]
pub struct Sensitive(pub String);

impl std::fmt::Debug for Sensitive {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("<redacted>")
    }
}

/// kubectl's global flags that shape the client, as client-go's `ConfigOverrides` holds them
/// (an empty flag value is no override, as in client-go).
#[derive(Debug, Clone, Default)]
pub struct ConfigOverrides {
    /// `--cluster`: the kubeconfig cluster to use instead of the context's.
    pub cluster: Option<String>,
    /// `--user`: the kubeconfig user to use instead of the context's.
    pub user: Option<String>,
    /// `-s/--server`.
    pub server: Option<String>,
    /// `--certificate-authority` (a file; replaces the kubeconfig's CA data and insecure setting).
    pub certificate_authority: Option<String>,
    pub insecure_skip_tls_verify: bool,
    pub tls_server_name: Option<String>,
    pub client_certificate: Option<String>,
    pub client_key: Option<String>,
    pub token: Option<Sensitive>,
    pub username: Option<String>,
    pub password: Option<Sensitive>,
    /// `--as`, `--as-uid`, `--as-group`: impersonation headers.
    pub impersonate: Option<String>,
    pub impersonate_uid: Option<String>,
    pub impersonate_groups: Vec<String>,
    pub disable_compression: bool,
    /// `--request-timeout` as given (client-go parses it only once the rest is usable).
    pub timeout: Option<String>,
}

/// What a kubeconfig and kubectl's global flags make: the client's configuration, and the
/// timeout each request gets (`--request-timeout`).
#[derive(Debug, Clone)]
pub struct LoadedConfig {
    pub config: kube::Config,
    pub request_timeout: Option<Duration>,
}

/// Why no client configuration came out of the kubeconfig and the flags: kubectl's messages.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ConfigError {
    /// `--kubeconfig` names no file (kubectl says it in Go's `os.Stat` words, which are part of
    /// the message: the I/O error is data, not a source).
    #[error("stat {}: {}", .path.display(), go_error_text(.error))]
    KubeconfigMissing { path: PathBuf, error: Arc<std::io::Error> },
    #[error("error loading config file {:?}", .path.display().to_string())]
    KubeconfigUnreadable { path: PathBuf, source: Arc<kube::config::KubeconfigError> },
    #[error("context {0:?} does not exist")]
    NoContext(String),
    #[error("cluster {0:?} does not exist")]
    NoCluster(String),
    #[error("auth info {0:?} does not exist")]
    NoUser(String),
    /// client-go's `ConfirmUsable` problems: one is printed alone, several as kubectl lists them.
    #[error("{}", invalid_text(.0))]
    Invalid(Vec<String>),
    /// Nothing names a cluster and no in-cluster service account is there.
    #[error(
        "invalid configuration: no configuration has been provided (no kubeconfig file, no in-cluster service account, no --server)"
    )]
    Empty,
    #[error(
        "Invalid timeout value. Timeout must be a single integer in seconds, or an integer followed by a corresponding time unit (e.g. 1s | 2m | 3h)"
    )]
    InvalidTimeout(String),
    #[error("specifying a root certificates file with the insecure flag is not allowed")]
    InsecureWithCertificateAuthority,
    #[error("unable to load root certificates: unable to parse bytes as PEM block")]
    CertificateAuthorityNotPem,
    /// What kube could not make of the merged configuration (bad base64, an unreadable file).
    #[error("invalid configuration")]
    Kube(#[source] Arc<kube::config::KubeconfigError>),
    /// `--profile` names no profile kubectl knows.
    #[error("unknown profile '{0}'")]
    UnknownProfile(String),
    /// `--match-server-version`: the server is not the minor version this tool emulates.
    #[error("server version ({server}) differs from client version ({client})")]
    ServerVersion { server: String, client: String },
}

/// `ConfirmUsable`'s aggregate, as kubectl prints it.
fn invalid_text(errors: &[String]) -> String {
    match errors {
        [one] => one.clone(),
        many => format!(
            "Error in configuration: \n{}",
            many.iter().map(|e| format!("* {e}")).collect::<Vec<_>>().join("\n")
        ),
    }
}

/// An I/O error in the words Go's `syscall.Errno` uses (`no such file or directory`).
pub(crate) fn go_error_text(error: &std::io::Error) -> String {
    let text = with_causes(&error);
    let text = match text.find(" (os error ") {
        Some(at) => &text[..at],
        None => &text,
    };
    let mut chars = text.chars();
    chars.next().map(|first| first.to_lowercase().chain(chars).collect()).unwrap_or_default()
}

/// client-go's `ParseTimeout`: whole seconds, or a Go duration; `0` is none.
pub fn parse_timeout(text: &str) -> Result<Option<Duration>, ConfigError> {
    let nanos = match text.parse::<i64>() {
        Ok(seconds) if seconds >= 0 => seconds.saturating_mul(1_000_000_000),
        _ => crate::duration::parse_go(text).map_err(|_| ConfigError::InvalidTimeout(text.to_owned()))?,
    };
    // A negative timeout is none, as Go's http.Client reads it.
    Ok((nanos > 0).then(|| Duration::from_nanos(nanos.unsigned_abs())))
}

/// Reads the kubeconfig as kubectl finds it: `explicit` must exist; the files of `$KUBECONFIG`
/// (or `~/.kube/config`) that do not are skipped. No file at all is an empty kubeconfig.
fn read_kubeconfig(explicit: Option<&Path>) -> Result<Kubeconfig, ConfigError> {
    let unreadable = |path: &Path| {
        let path = path.to_path_buf();
        move |e| ConfigError::KubeconfigUnreadable { path, source: Arc::new(e) }
    };
    if let Some(path) = explicit {
        std::fs::metadata(path)
            .map_err(|e| ConfigError::KubeconfigMissing { path: path.to_path_buf(), error: Arc::new(e) })?;
        return Kubeconfig::read_from(path).map_err(unreadable(path));
    }
    let paths: Vec<PathBuf> = match std::env::var_os("KUBECONFIG").filter(|v| !v.is_empty()) {
        Some(list) => std::env::split_paths(&list).filter(|p| !p.as_os_str().is_empty()).collect(),
        None => std::env::home_dir().map(|home| home.join(".kube").join("config")).into_iter().collect(),
    };
    let mut merged = Kubeconfig::default();
    let mut seen = std::collections::HashSet::new();
    for path in paths.iter().filter(|p| p.exists() && seen.insert(p.to_path_buf())) {
        let file = Kubeconfig::read_from(path).map_err(unreadable(path))?;
        merged = merged.merge(file).map_err(unreadable(path))?;
    }
    Ok(merged)
}

/// The context, cluster and user a kubeconfig and the flags choose, the flags laid over them.
#[derive(Debug, Default)]
pub(super) struct Selection {
    pub(super) context_name: String,
    pub(super) context: Context,
    /// The current context names no context of the file (client-go's `ConfirmUsable` error).
    pub(super) dangling_context: bool,
    pub(super) cluster_name: String,
    pub(super) cluster: kube::config::Cluster,
    pub(super) user_name: String,
    pub(super) user: AuthInfo,
}

/// client-go's `getAuthInfo`, `getContext` and `getCluster`, in its order: a name given by a
/// flag must exist; one taken from the kubeconfig may name nothing (and then is empty).
pub(super) fn select(
    file: &Kubeconfig,
    context_flag: Option<&str>,
    overrides: &ConfigOverrides,
) -> Result<Selection, ConfigError> {
    let context_name = context_flag.map(str::to_owned).or_else(|| file.current_context.clone()).unwrap_or_default();
    let context = file.contexts.iter().find(|c| c.name == context_name).map(|c| c.context.clone().unwrap_or_default());
    let user_name =
        overrides.user.clone().or_else(|| context.as_ref().and_then(|c| c.user.clone())).unwrap_or_default();
    let user = match file.auth_infos.iter().find(|u| u.name == user_name) {
        Some(found) => found.auth_info.clone().unwrap_or_default(),
        None if overrides.user.is_some() => return Err(ConfigError::NoUser(user_name)),
        None => AuthInfo::default(),
    };
    if context_flag.is_some() && context.is_none() {
        return Err(ConfigError::NoContext(context_name));
    }
    let cluster_name =
        overrides.cluster.clone().or_else(|| context.as_ref().map(|c| c.cluster.clone())).unwrap_or_default();
    let cluster = match file.clusters.iter().find(|c| c.name == cluster_name) {
        Some(found) => found.cluster.clone().unwrap_or_default(),
        None if overrides.cluster.is_some() => return Err(ConfigError::NoCluster(cluster_name)),
        None => kube::config::Cluster::default(),
    };
    let mut selection = Selection {
        dangling_context: !context_name.is_empty() && context.is_none(),
        context_name,
        context: context.unwrap_or_default(),
        cluster_name,
        cluster,
        user_name,
        user,
    };
    overlay(&mut selection, overrides);
    Ok(selection)
}

/// The flags over the kubeconfig's cluster and user (client-go's merge with its special cases).
fn overlay(selection: &mut Selection, o: &ConfigOverrides) {
    let cluster = &mut selection.cluster;
    if let Some(server) = &o.server {
        cluster.server = Some(server.clone());
    }
    if o.disable_compression {
        cluster.disable_compression = Some(true);
    }
    // --insecure-skip-tls-verify (or a CA file) replaces the kubeconfig's CA and insecure
    // settings together, or a kubeconfig CA would conflict with the flag.
    if o.insecure_skip_tls_verify || o.certificate_authority.is_some() {
        cluster.insecure_skip_tls_verify = Some(o.insecure_skip_tls_verify);
        cluster.certificate_authority = o.certificate_authority.clone();
        cluster.certificate_authority_data = None;
    }
    // A --server drops the kubeconfig's TLS server name (it was the old server's).
    if o.tls_server_name.is_some() || o.server.is_some() {
        cluster.tls_server_name = o.tls_server_name.clone();
    }
    let user = &mut selection.user;
    let set = |field: &mut Option<String>, value: &Option<String>| {
        if value.is_some() {
            field.clone_from(value);
        }
    };
    set(&mut user.client_certificate, &o.client_certificate);
    set(&mut user.client_key, &o.client_key);
    set(&mut user.username, &o.username);
    set(&mut user.impersonate, &o.impersonate);
    set(&mut user.impersonate_uid, &o.impersonate_uid);
    if let Some(token) = &o.token {
        user.token = Some(token.0.clone().into());
    }
    if let Some(password) = &o.password {
        user.password = Some(password.0.clone().into());
    }
    if !o.impersonate_groups.is_empty() {
        user.impersonate_groups = Some(o.impersonate_groups.clone());
    }
}

/// Whether a file can be opened, as client-go's checks try it (`open PATH: reason`).
fn open_error(path: &str) -> Option<String> {
    std::fs::File::open(path).err().map(|e| format!("open {path}: {}", go_error_text(&e)))
}

/// client-go's `validateAuthInfo`.
pub(super) fn auth_errors(name: &str, user: &AuthInfo) -> Vec<String> {
    let mut errors = Vec::new();
    let mut methods = Vec::new();
    if user.token.is_some() {
        methods.push("token");
    }
    if user.username.is_some() || user.password.is_some() {
        methods.push("basicAuth");
    }
    if user.client_certificate.is_some() || user.client_certificate_data.is_some() {
        if user.client_certificate.is_some() && user.client_certificate_data.is_some() {
            errors.push(format!(
                "client-cert-data and client-cert are both specified for {name}. client-cert-data will override."
            ));
        }
        if user.client_key.is_some() && user.client_key_data.is_some() {
            errors.push(format!(
                "client-key-data and client-key are both specified for {name}; client-key-data will override"
            ));
        }
        if user.client_key.is_none() && user.client_key_data.is_none() {
            errors.push(format!(
                "client-key-data or client-key must be specified for {name} to use the clientCert authentication method."
            ));
        }
        if let Some(problem) = user.client_certificate.as_deref().and_then(open_error) {
            let path = user.client_certificate.as_deref().unwrap_or_default();
            errors.push(format!("unable to read client-cert {path} for {name} due to {problem}"));
        }
        if let Some(problem) = user.client_key.as_deref().and_then(open_error) {
            let path = user.client_key.as_deref().unwrap_or_default();
            errors.push(format!("unable to read client-key {path} for {name} due to {problem}"));
        }
    }
    if methods.len() > 1 {
        errors.push(format!(
            "more than one authentication method found for {name}; found [{}], only one is allowed",
            methods.join(" ")
        ));
    }
    let extras = user.impersonate_uid.is_some()
        || user.impersonate_groups.as_ref().is_some_and(|g| !g.is_empty())
        || user.impersonate_user_extra.as_ref().is_some_and(|e| !e.is_empty());
    if extras && user.impersonate.is_none() {
        errors.push(format!("requesting uid, groups or user-extra for {name} without impersonating a user"));
    }
    errors
}

/// client-go's `validateClusterInfo`; `None` for a cluster with nothing set at all.
pub(super) fn cluster_errors(name: &str, cluster: &kube::config::Cluster) -> Option<Vec<String>> {
    let empty = cluster.server.is_none()
        && cluster.certificate_authority.is_none()
        && cluster.certificate_authority_data.is_none()
        && !cluster.insecure_skip_tls_verify.unwrap_or(false)
        && cluster.proxy_url.is_none()
        && cluster.tls_server_name.is_none();
    if empty {
        return None;
    }
    let mut errors = Vec::new();
    if cluster.server.as_deref().is_none_or(str::is_empty) {
        errors.push(if name.is_empty() {
            "default cluster has no server defined".to_owned()
        } else {
            format!("no server found for cluster {name:?}")
        });
    }
    if cluster.certificate_authority.is_some() && cluster.certificate_authority_data.is_some() {
        errors.push(format!(
            "certificate-authority-data and certificate-authority are both specified for {name}. certificate-authority-data will override."
        ));
    }
    if let Some(path) = &cluster.certificate_authority
        && let Some(problem) = open_error(path)
    {
        errors.push(format!("unable to read certificate-authority {path} for {name} due to {problem}"));
    }
    Some(errors)
}

/// The client configuration the kubeconfig (`kubeconfig`, else `$KUBECONFIG`, else
/// `~/.kube/config`, else in-cluster) and kubectl's global flags make.
pub async fn load(
    kubeconfig: Option<&Path>,
    context: Option<&str>,
    overrides: &ConfigOverrides,
) -> Result<LoadedConfig, ConfigError> {
    let file = read_kubeconfig(kubeconfig)?;
    let selection = select(&file, context, overrides)?;
    let mut errors = Vec::new();
    if selection.dangling_context {
        errors.push(format!("context was not found for specified context: {}", selection.context_name));
    }
    errors.extend(auth_errors(&selection.user_name, &selection.user));
    let cluster = cluster_errors(&selection.cluster_name, &selection.cluster);
    let no_cluster = cluster.is_none();
    errors.extend(cluster.unwrap_or_else(|| vec!["cluster has no server defined".to_owned()]));
    if no_cluster && errors.len() == 1 {
        return match in_cluster(overrides) {
            Some(config) => Ok(LoadedConfig {
                config: with_timeouts(config),
                request_timeout: overrides.timeout.as_deref().map(parse_timeout).transpose()?.flatten(),
            }),
            None => Err(ConfigError::Empty),
        };
    }
    if !errors.is_empty() {
        return Err(ConfigError::Invalid(errors));
    }
    let request_timeout = overrides.timeout.as_deref().map(parse_timeout).transpose()?.flatten();
    check_tls(&selection.cluster)?;
    let mut config = kube_config(selection).await?;
    config.disable_compression |= overrides.disable_compression;
    Ok(LoadedConfig { config: with_timeouts(config), request_timeout })
}

/// client-go's TLS checks made when the client is built (`rest.TLSConfigFor`).
pub(super) fn check_tls(cluster: &kube::config::Cluster) -> Result<(), ConfigError> {
    let has_ca = cluster.certificate_authority.is_some() || cluster.certificate_authority_data.is_some();
    if has_ca && cluster.insecure_skip_tls_verify.unwrap_or(false) {
        return Err(ConfigError::InsecureWithCertificateAuthority);
    }
    let pem = match (&cluster.certificate_authority_data, &cluster.certificate_authority) {
        (Some(data), _) => {
            use base64::Engine;
            // Bad base64 is kube's error to report, with its words.
            match base64::engine::general_purpose::STANDARD.decode(data.trim()) {
                Ok(bytes) => bytes,
                Err(_) => return Ok(()),
            }
        }
        (None, Some(path)) => std::fs::read(path).unwrap_or_default(),
        (None, None) => return Ok(()),
    };
    if !String::from_utf8_lossy(&pem).contains("-----BEGIN CERTIFICATE-----") {
        return Err(ConfigError::CertificateAuthorityNotPem);
    }
    Ok(())
}

/// The chosen context, cluster and user as kube's config (it loads the files, CA, certificates,
/// exec plugins), the server given a scheme as client-go gives one.
pub(super) async fn kube_config(selection: Selection) -> Result<kube::Config, ConfigError> {
    let Selection { context, mut cluster, mut user, .. } = selection;
    let tls = cluster.certificate_authority.is_some()
        || cluster.certificate_authority_data.is_some()
        || cluster.insecure_skip_tls_verify.unwrap_or(false)
        || user.client_certificate.is_some()
        || user.client_certificate_data.is_some();
    if let Some(server) = cluster.server.as_mut().filter(|s| !s.contains("://")) {
        *server = format!("{}://{server}", if tls { "https" } else { "http" });
    }
    // client-go sends credentials only over TLS; impersonation is not a credential.
    if cluster.server.as_deref().is_some_and(|s| s.starts_with("http://")) {
        user = AuthInfo {
            impersonate: user.impersonate,
            impersonate_uid: user.impersonate_uid,
            impersonate_groups: user.impersonate_groups,
            impersonate_user_extra: user.impersonate_user_extra,
            ..AuthInfo::default()
        };
    }
    let (cluster_name, user_name, context_name) = ("cluster", "user", "context");
    let merged = Kubeconfig {
        clusters: vec![NamedCluster { name: cluster_name.into(), cluster: Some(cluster), ..Default::default() }],
        auth_infos: vec![NamedAuthInfo { name: user_name.into(), auth_info: Some(user), ..Default::default() }],
        contexts: vec![NamedContext {
            name: context_name.into(),
            context: Some(Context {
                cluster: cluster_name.into(),
                user: Some(user_name.into()),
                namespace: context.namespace,
                ..Default::default()
            }),
            ..Default::default()
        }],
        current_context: Some(context_name.into()),
        ..Default::default()
    };
    kube::Config::from_custom_kubeconfig(merged, &KubeConfigOptions::default())
        .await
        .map_err(|e| ConfigError::Kube(Arc::new(e)))
}

/// The pod's service account, with the flags client-go's in-cluster config takes (token, CA
/// file) and impersonation; `None` outside a pod.
fn in_cluster(o: &ConfigOverrides) -> Option<kube::Config> {
    let mut config = kube::Config::incluster().ok()?;
    if let Some(token) = &o.token {
        config.auth_info.token = Some(token.0.clone().into());
        config.auth_info.token_file = None;
    }
    if let Some(path) = &o.certificate_authority {
        config.root_cert_file = Some(path.into());
    }
    config.auth_info.impersonate.clone_from(&o.impersonate);
    config.auth_info.impersonate_uid.clone_from(&o.impersonate_uid);
    if !o.impersonate_groups.is_empty() {
        config.auth_info.impersonate_groups = Some(o.impersonate_groups.clone());
    }
    Some(config)
}

/// kube leaves reads unbounded; a hung apiserver must not hang a run forever. (`--request-timeout`
/// is a deadline of each whole request, kept by `super::wire`.)
pub(super) fn with_timeouts(mut config: kube::Config) -> kube::Config {
    config.read_timeout = Some(Duration::from_secs(120));
    config.connect_timeout = Some(Duration::from_secs(10));
    config
}

/// `--match-server-version`: this tool emulates kubectl 1.33, so the server must be a 1.33
/// (kubectl compares its whole build, commit included, which no server other than the one
/// built with it would match; the minor version is what the emulation is about).
pub fn check_server_version(version: &serde_json::Value) -> Result<(), ConfigError> {
    let field = |name: &str| version.get(name).and_then(serde_json::Value::as_str).unwrap_or_default();
    // Some providers write `33+`.
    let (major, minor) = (field("major"), field("minor").trim_end_matches('+'));
    if (major, minor) == (EMULATED_MAJOR, EMULATED_MINOR) {
        return Ok(());
    }
    let fields = [
        ("Major", "major"),
        ("Minor", "minor"),
        ("EmulationMajor", "emulationMajor"),
        ("EmulationMinor", "emulationMinor"),
        ("MinCompatibilityMajor", "minCompatibilityMajor"),
        ("MinCompatibilityMinor", "minCompatibilityMinor"),
        ("GitVersion", "gitVersion"),
        ("GitCommit", "gitCommit"),
        ("GitTreeState", "gitTreeState"),
        ("BuildDate", "buildDate"),
        ("GoVersion", "goVersion"),
        ("Compiler", "compiler"),
        ("Platform", "platform"),
    ];
    let server = fields.iter().map(|(go, json)| format!("{go}:{:?}", field(json))).collect::<Vec<_>>().join(", ");
    Err(ConfigError::ServerVersion {
        server: format!("&version.Info{{{server}}}"),
        client: format!("version.Info{{Major:{EMULATED_MAJOR:?}, Minor:{EMULATED_MINOR:?}}}"),
    })
}

/// The kubectl this tool behaves as.
const EMULATED_MAJOR: &str = "1";
const EMULATED_MINOR: &str = "33";

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
