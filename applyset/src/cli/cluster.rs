//! Which cluster the commands talk to, and how: kubectl 1.33's global flags (`kubectl
//! options`), with kubectl's syntax and meaning, and this tool's request budget.

use std::path::PathBuf;

use clap::Args;

use super::go_bool;
use crate::cluster::config::{ConfigError, ConfigOverrides, Sensitive};
use crate::cluster::{ConnectOptions, HEADERS_TARGET, REQUEST_TARGET};

/// Which cluster, as whom, and how hard to drive it.
#[derive(Debug, Args)]
pub struct ClusterArgs {
    /// Path to the kubeconfig file (default: $KUBECONFIG, else ~/.kube/config, else in-cluster).
    #[arg(long, value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,
    /// The kubeconfig context to use (default: its current context).
    #[arg(long, value_name = "NAME")]
    pub context: Option<String>,
    /// The kubeconfig cluster to use (default: the context's).
    #[arg(long, value_name = "NAME")]
    pub cluster: Option<String>,
    /// The kubeconfig user to use (default: the context's).
    #[arg(long, value_name = "NAME")]
    pub user: Option<String>,
    /// The address and port of the Kubernetes API server.
    #[arg(short = 's', long, value_name = "URL")]
    pub server: Option<String>,
    /// Path to a cert file for the certificate authority.
    #[arg(long, value_name = "FILE")]
    pub certificate_authority: Option<String>,
    /// Path to a client certificate file for TLS.
    #[arg(long, value_name = "FILE")]
    pub client_certificate: Option<String>,
    /// Path to a client key file for TLS.
    #[arg(long, value_name = "FILE")]
    pub client_key: Option<String>,
    /// Server name to use for server certificate validation (default: the server's host name).
    #[arg(long, value_name = "NAME")]
    pub tls_server_name: Option<String>,
    /// Do not check the server's certificate (insecure).
    #[arg(long, default_value = "false", num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = go_bool)]
    pub insecure_skip_tls_verify: bool,
    /// Bearer token for authentication to the API server.
    #[arg(long, value_name = "TOKEN", value_parser = sensitive)]
    pub token: Option<Sensitive>,
    /// Username for basic authentication to the API server.
    #[arg(long, value_name = "NAME")]
    pub username: Option<String>,
    /// Password for basic authentication to the API server.
    #[arg(long, value_name = "PASSWORD", value_parser = sensitive)]
    pub password: Option<Sensitive>,
    /// Username to impersonate for the operation (a user or a service account,
    /// `system:serviceaccount:NAMESPACE:NAME`).
    #[arg(long = "as", value_name = "USER")]
    pub impersonate: Option<String>,
    /// Group to impersonate for the operation. Repeatable.
    #[arg(long = "as-group", value_name = "GROUP")]
    pub impersonate_groups: Vec<String>,
    /// UID to impersonate for the operation.
    #[arg(long = "as-uid", value_name = "UID")]
    pub impersonate_uid: Option<String>,
    /// How long to wait for each request to the server: whole seconds or a Go duration (`1s`,
    /// `2m`); 0 waits as long as the default read timeout allows.
    #[arg(long, value_name = "DURATION", default_value = "0")]
    pub request_timeout: String,
    /// Log verbosity, kubectl's levels: 4 this tool's debug log, 6 each request (verb, URL,
    /// status, milliseconds), 7 with its headers, 8 the kube client's log too.
    #[arg(short = 'v', long = "v", value_name = "LEVEL", default_value = "0", allow_negative_numbers = true, value_parser = go_int32)]
    pub verbosity: i32,
    /// Accepted for kubectl's sake: there are no Go files here to log per file.
    #[arg(long, value_name = "PATTERN=N,...", value_parser = vmodule)]
    pub vmodule: Option<String>,
    /// Accepted for kubectl's sake (Go duration): this tool's log is not buffered.
    #[arg(long, value_name = "DURATION", default_value = "5s", value_parser = flush_frequency)]
    pub log_flush_frequency: String,
    /// Refuse a server that is not Kubernetes 1.33 (the kubectl this tool emulates; compares
    /// major.minor).
    #[arg(long, default_value = "false", num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = go_bool)]
    pub match_server_version: bool,
    /// Treat warnings received from the server as errors: a run that succeeded exits 1.
    #[arg(long, default_value = "false", num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = go_bool)]
    pub warnings_as_errors: bool,
    /// Accepted for kubectl's sake: this tool asks for uncompressed responses anyway.
    #[arg(long, default_value = "false", num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = go_bool)]
    pub disable_compression: bool,
    /// Accepted for kubectl's sake: discovery and OpenAPI are cached in memory for one run.
    #[arg(long, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
    /// Accepted for kubectl's sake (none|cpu|heap|goroutine|threadcreate|block|mutex): Go
    /// runtime profiles; nothing is written.
    #[arg(long, value_name = "NAME", default_value = "none")]
    pub profile: String,
    /// Accepted for kubectl's sake, with --profile.
    #[arg(long, value_name = "FILE", default_value = "profile.pprof")]
    pub profile_output: PathBuf,
    /// Maximum requests per second to the apiserver (0 = unlimited). With at most
    /// --concurrency objects in flight this keeps a run's load bounded; the apiserver's own
    /// API Priority and Fairness still applies. (kubectl sends its requests one at a time.)
    #[arg(long, default_value_t = crate::cluster::DEFAULT_QPS)]
    pub qps: f64,
    /// Requests allowed in a burst above --qps.
    #[arg(long, default_value_t = crate::cluster::DEFAULT_BURST)]
    pub burst: u32,
    /// Objects applied at once.
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u32).range(1..=256))]
    pub concurrency: u32,
}

/// The profiles kubectl's `--profile` knows.
const PROFILES: [&str; 7] = ["none", "cpu", "heap", "goroutine", "threadcreate", "block", "mutex"];

impl ClusterArgs {
    /// What [`crate::cluster::Cluster::connect`] needs, with kubectl's checks of the flags it
    /// makes before connecting (`--profile`; the rest are client-go's, made while loading).
    pub fn connect_options(&self) -> Result<ConnectOptions, ConfigError> {
        if !PROFILES.contains(&self.profile.as_str()) {
            return Err(ConfigError::UnknownProfile(self.profile.clone()));
        }
        // client-go takes an empty flag for no flag.
        let given = |value: &Option<String>| value.clone().filter(|v| !v.is_empty());
        let overrides = ConfigOverrides {
            cluster: given(&self.cluster),
            user: given(&self.user),
            server: given(&self.server),
            certificate_authority: given(&self.certificate_authority),
            insecure_skip_tls_verify: self.insecure_skip_tls_verify,
            tls_server_name: given(&self.tls_server_name),
            client_certificate: given(&self.client_certificate),
            client_key: given(&self.client_key),
            token: self.token.clone().filter(|t| !t.0.is_empty()),
            username: given(&self.username),
            password: self.password.clone().filter(|p| !p.0.is_empty()),
            impersonate: given(&self.impersonate),
            impersonate_uid: given(&self.impersonate_uid),
            impersonate_groups: self.impersonate_groups.iter().filter(|g| !g.is_empty()).cloned().collect(),
            disable_compression: self.disable_compression,
            timeout: Some(self.request_timeout.clone()).filter(|t| !t.is_empty()),
        };
        Ok(ConnectOptions {
            kubeconfig: self.kubeconfig.clone().filter(|k| !k.as_os_str().is_empty()),
            context: given(&self.context),
            overrides,
            qps: self.qps,
            burst: self.burst,
            match_server_version: self.match_server_version,
            warnings_as_errors: self.warnings_as_errors,
        })
    }

    /// Starts the `-v` log on stderr (once per process; nothing below level 4).
    pub fn init_logging(&self) {
        let Some(filter) = log_filter(self.verbosity) else { return };
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
            .with_writer(crate::redact::RedactingWriter)
            .with_ansi(false)
            .try_init();
    }
}

/// The tracing filter a kubectl verbosity level means here (`None`: no log at all, as kubectl
/// prints nothing extra below 4).
pub fn log_filter(verbosity: i32) -> Option<String> {
    let requests = format!("{REQUEST_TARGET}=trace");
    let no_headers = format!("{HEADERS_TARGET}=off");
    match verbosity {
        ..=3 => None,
        4..=5 => Some("applyset=debug".into()),
        6 => Some(format!("applyset=debug,{requests},{no_headers}")),
        7 => Some(format!("applyset=debug,{requests}")),
        8.. => Some(format!("applyset=debug,kube=debug,{requests}")),
    }
}

/// A secret flag value, kept out of `Debug`.
fn sensitive(value: &str) -> Result<Sensitive, String> {
    Ok(Sensitive(value.to_owned()))
}

/// An `int32` as Go's `strconv.ParseInt(value, 10, 32)` reads it (klog's `-v`).
pub fn go_int32(value: &str) -> Result<i32, String> {
    let digits = value.strip_prefix(['+', '-']).unwrap_or(value);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("strconv.ParseInt: parsing {value:?}: invalid syntax"));
    }
    value.parse().map_err(|_| format!("strconv.ParseInt: parsing {value:?}: value out of range"))
}

/// klog's `--vmodule` syntax: `pattern=N` items separated by commas.
fn vmodule(value: &str) -> Result<String, String> {
    let valid = value.is_empty()
        || value.split(',').all(|item| {
            item.split_once('=').is_some_and(|(pattern, level)| !pattern.is_empty() && level.parse::<i32>().is_ok())
        });
    if valid { Ok(value.to_owned()) } else { Err("syntax error: expect comma-separated list of filename=N".into()) }
}

/// `--log-flush-frequency`: a Go duration (the words are klog's flag's).
fn flush_frequency(value: &str) -> Result<String, String> {
    crate::duration::parse_go(value).map(|_| value.to_owned()).map_err(|_| "parse error".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Probe {
        #[command(flatten)]
        cluster: ClusterArgs,
    }

    fn parse(args: &[&str]) -> Result<ClusterArgs, clap::Error> {
        Probe::try_parse_from(std::iter::once("probe").chain(args.iter().copied())).map(|p| p.cluster)
    }

    #[test]
    fn kubectls_global_flags_parse_with_its_syntax() {
        let args = parse(&[
            "-s",
            "https://h:6443",
            "--token=t0k",
            "--as",
            "jane",
            "--as-group=a",
            "--as-group",
            "b",
            "--as-uid=42",
            "--insecure-skip-tls-verify",
            "-v=6",
            "--request-timeout",
            "5",
            "--vmodule=foo=2,bar*=3",
            "--log-flush-frequency=1m",
            "--warnings-as-errors=true",
            "--match-server-version=F",
            "--disable-compression",
            "--profile=cpu",
            "--cache-dir=/tmp/c",
        ])
        .unwrap();
        let options = args.connect_options().unwrap();
        let o = &options.overrides;
        assert_eq!(o.server.as_deref(), Some("https://h:6443"));
        assert_eq!(o.token, Some(Sensitive("t0k".into())));
        assert_eq!(o.impersonate.as_deref(), Some("jane"));
        assert_eq!(o.impersonate_groups, ["a", "b"]);
        assert_eq!(o.impersonate_uid.as_deref(), Some("42"));
        assert!(o.insecure_skip_tls_verify && o.disable_compression);
        assert_eq!(o.timeout.as_deref(), Some("5"));
        assert_eq!(args.verbosity, 6);
        assert!(options.warnings_as_errors && !options.match_server_version);
        assert!(!format!("{args:?}").contains("t0k"), "the token stays out of Debug");
        // -v's other spellings.
        for spelling in [&["-v", "7"][..], &["-v7"], &["--v=7"], &["--v", "7"]] {
            assert_eq!(parse(spelling).unwrap().verbosity, 7, "{spelling:?}");
        }
        // Empty values are no override, as in client-go.
        let empty = parse(&["--token=", "--server=", "--as="]).unwrap().connect_options().unwrap();
        assert!(empty.overrides.token.is_none() && empty.overrides.server.is_none());
        assert!(empty.overrides.impersonate.is_none());
    }

    #[test]
    fn bad_values_get_kubectls_reasons() {
        let reason = |args: &[&str]| parse(args).unwrap_err().to_string();
        assert!(reason(&["-v=x"]).contains(r#"strconv.ParseInt: parsing "x": invalid syntax"#));
        assert!(reason(&["--vmodule=bogus"]).contains("syntax error: expect comma-separated list of filename=N"));
        assert!(reason(&["--log-flush-frequency=x"]).contains("parse error"));
        assert!(reason(&["--insecure-skip-tls-verify=maybe"]).contains("strconv.ParseBool"));
        let profile = parse(&["--profile=bogus"]).unwrap().connect_options().unwrap_err();
        assert_eq!(profile.to_string(), "unknown profile 'bogus'");
    }

    /// Every command flattening these flags (`-s`, `-v`, `--user`…) keeps clap consistent.
    #[test]
    fn every_command_takes_the_global_flags_without_a_clash() {
        use clap::CommandFactory;
        crate::cli::Cli::command().debug_assert();
    }

    #[test]
    fn verbosity_levels_map_to_filters() {
        assert_eq!(log_filter(0), None);
        assert_eq!(log_filter(3), None);
        assert_eq!(log_filter(4).as_deref(), Some("applyset=debug"));
        let six = log_filter(6).unwrap();
        assert!(six.contains("applyset::request=trace") && six.contains("applyset::request::headers=off"), "{six}");
        assert!(!log_filter(7).unwrap().contains("headers=off"));
        assert!(log_filter(9).unwrap().contains("kube=debug"));
        assert_eq!(
            go_int32("2147483648").unwrap_err(),
            r#"strconv.ParseInt: parsing "2147483648": value out of range"#
        );
        assert_eq!(go_int32("-1"), Ok(-1));
    }
}
