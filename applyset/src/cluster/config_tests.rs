//! The kubeconfig and kubectl's global flags, without a cluster: each case's expectation is what
//! kubectl 1.33 does with the same kubeconfig and flags (its messages checked by hand against the
//! local control plane; `tests/global_flags_cli.rs` compares them live).

use super::*;

/// A PEM block kube accepts as a CA (it is not parsed as X.509 before a TLS handshake).
const PEM: &str = "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIU\n-----END CERTIFICATE-----\n";

fn pem_base64() -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(PEM)
}

/// Two contexts over two clusters; `admin` authenticates with a client certificate (data).
fn kubeconfig() -> Kubeconfig {
    let yaml = format!(
        r#"
apiVersion: v1
kind: Config
current-context: main
clusters:
- name: main-cluster
  cluster: {{server: "https://main:6443", certificate-authority-data: "{ca}", tls-server-name: main.internal}}
- name: other-cluster
  cluster: {{server: "https://other:6443"}}
users:
- name: admin
  user: {{client-certificate-data: "{ca}", client-key-data: "{ca}"}}
- name: reader
  user: {{token: r3ad3r}}
contexts:
- name: main
  context: {{cluster: main-cluster, user: admin, namespace: team-a}}
- name: other
  context: {{cluster: other-cluster, user: reader}}
"#,
        ca = pem_base64()
    );
    Kubeconfig::from_yaml(&yaml).expect("a valid kubeconfig")
}

fn write_kubeconfig(file: &Kubeconfig) -> PathBuf {
    let path = std::env::temp_dir().join(format!("applyset-config-{}-{}.yaml", std::process::id(), fastrand::u64(..)));
    std::fs::write(&path, serde_json::to_vec(file).expect("serializable")).expect("written");
    path
}

#[test]
fn names_given_by_flags_must_exist_and_the_user_is_looked_up_first() {
    let file = kubeconfig();
    let with =
        |context: Option<&str>, o: ConfigOverrides| select(&file, context, &o).map(|_| ()).unwrap_err().to_string();
    let user = || ConfigOverrides { user: Some("nope".into()), ..Default::default() };
    assert_eq!(with(Some("nope"), ConfigOverrides::default()), r#"context "nope" does not exist"#);
    assert_eq!(with(None, user()), r#"auth info "nope" does not exist"#);
    assert_eq!(with(Some("nope"), user()), r#"auth info "nope" does not exist"#);
    let cluster = ConfigOverrides { cluster: Some("nope".into()), ..Default::default() };
    assert_eq!(with(None, cluster), r#"cluster "nope" does not exist"#);

    let chosen = select(&file, Some("other"), &ConfigOverrides { user: Some("admin".into()), ..Default::default() })
        .expect("both exist");
    assert_eq!(chosen.cluster.server.as_deref(), Some("https://other:6443"));
    assert!(chosen.user.client_certificate_data.is_some() && chosen.user.token.is_none());
    // A current context naming nothing is no error here: ConfirmUsable reports it.
    let mut dangling = kubeconfig();
    dangling.current_context = Some("gone".into());
    assert!(select(&dangling, None, &ConfigOverrides::default()).unwrap().dangling_context);
}

#[test]
fn flags_override_as_client_go_merges_them() {
    let file = kubeconfig();
    let overrides = ConfigOverrides {
        server: Some("https://elsewhere:443".into()),
        insecure_skip_tls_verify: true,
        token: Some(Sensitive("t".into())),
        impersonate: Some("jane".into()),
        impersonate_groups: vec!["devs".into(), "ops".into()],
        ..Default::default()
    };
    let s = select(&file, None, &overrides).unwrap();
    assert_eq!(s.cluster.server.as_deref(), Some("https://elsewhere:443"));
    // Insecure replaces the kubeconfig's CA; a new server drops its TLS server name.
    assert_eq!(s.cluster.insecure_skip_tls_verify, Some(true));
    assert!(s.cluster.certificate_authority_data.is_none() && s.cluster.certificate_authority.is_none());
    assert!(s.cluster.tls_server_name.is_none());
    assert!(s.user.token.is_some() && s.user.client_certificate_data.is_some(), "merged, not replaced");
    assert_eq!(s.user.impersonate.as_deref(), Some("jane"));
    assert_eq!(s.user.impersonate_groups.as_deref(), Some(&["devs".to_owned(), "ops".to_owned()][..]));
    assert_eq!(s.context.namespace.as_deref(), Some("team-a"));

    // A CA file replaces the CA data and the insecure setting; the TLS server name stays
    // without a new server.
    let ca = ConfigOverrides { certificate_authority: Some("/ca.crt".into()), ..Default::default() };
    let s = select(&file, None, &ca).unwrap();
    assert_eq!(s.cluster.certificate_authority.as_deref(), Some("/ca.crt"));
    assert!(s.cluster.certificate_authority_data.is_none());
    assert_eq!(s.cluster.tls_server_name.as_deref(), Some("main.internal"));
}

#[test]
fn unusable_users_get_client_gos_messages() {
    let user = |yaml: &str| -> AuthInfo { serde_json::from_value(serde_yaml_ng::from_str(yaml).unwrap()).unwrap() };
    assert_eq!(
        auth_errors("admin", &user("{token: a, username: b}")),
        ["more than one authentication method found for admin; found [token basicAuth], only one is allowed"]
    );
    assert_eq!(
        auth_errors("admin", &user("{as-groups: [g]}")),
        ["requesting uid, groups or user-extra for admin without impersonating a user"]
    );
    assert!(auth_errors("admin", &user("{as: jane, as-groups: [g], as-uid: '1'}")).is_empty());
    assert_eq!(
        auth_errors("u", &user("{client-certificate-data: eA==}")),
        ["client-key-data or client-key must be specified for u to use the clientCert authentication method."]
    );
    assert_eq!(
        auth_errors("u", &user("{client-certificate-data: eA==, client-certificate: /c, client-key-data: eA==}")),
        [
            "client-cert-data and client-cert are both specified for u. client-cert-data will override.",
            "unable to read client-cert /c for u due to open /c: no such file or directory",
        ]
    );
    // A token file is no second method (client-go counts the inline token only).
    assert!(auth_errors("u", &user("{token: a, tokenFile: /t}")).is_empty());
}

#[test]
fn unusable_clusters_get_client_gos_messages() {
    let cluster = |yaml: &str| -> kube::config::Cluster { serde_yaml_ng::from_str(yaml).unwrap() };
    assert_eq!(cluster_errors("c", &cluster("{}")), None);
    assert_eq!(
        cluster_errors("c", &cluster("{insecure-skip-tls-verify: true}")).unwrap(),
        [r#"no server found for cluster "c""#]
    );
    assert_eq!(
        cluster_errors("", &cluster("{tls-server-name: x}")).unwrap(),
        ["default cluster has no server defined"]
    );
    let both = cluster("{server: 'https://h', certificate-authority: /nope, certificate-authority-data: eA==}");
    assert_eq!(
        cluster_errors("c", &both).unwrap(),
        [
            "certificate-authority-data and certificate-authority are both specified for c. certificate-authority-data will override.",
            "unable to read certificate-authority /nope for c due to open /nope: no such file or directory",
        ]
    );
    assert_eq!(
        ConfigError::Invalid(vec!["a".into(), "b".into()]).to_string(),
        "Error in configuration: \n* a\n* b",
        "several problems print as kubectl lists them"
    );
}

#[test]
fn tls_settings_are_checked_as_client_go_checks_them() {
    let cluster = |yaml: &str| -> kube::config::Cluster { serde_yaml_ng::from_str(yaml).unwrap() };
    let insecure_with_ca =
        cluster("{server: 'https://h', insecure-skip-tls-verify: true, certificate-authority-data: eA==}");
    assert_eq!(
        check_tls(&insecure_with_ca).unwrap_err().to_string(),
        "specifying a root certificates file with the insecure flag is not allowed"
    );
    let not_pem = cluster("{server: 'https://h', certificate-authority: /etc/hostname}");
    assert_eq!(
        check_tls(&not_pem).unwrap_err().to_string(),
        "unable to load root certificates: unable to parse bytes as PEM block"
    );
    let pem = cluster(&format!("{{server: 'https://h', certificate-authority-data: {}}}", pem_base64()));
    check_tls(&pem).expect("a PEM certificate");
}

#[test]
fn request_timeouts_are_seconds_or_go_durations() {
    assert_eq!(parse_timeout("0").unwrap(), None);
    assert_eq!(parse_timeout("5").unwrap(), Some(Duration::from_secs(5)));
    assert_eq!(parse_timeout("1m30s").unwrap(), Some(Duration::from_secs(90)));
    assert_eq!(parse_timeout("250ms").unwrap(), Some(Duration::from_millis(250)));
    assert_eq!(parse_timeout("-5s").unwrap(), None, "negative: no timeout, as Go's http.Client");
    for bad in ["bogus", "-1", "5x", ""] {
        assert_eq!(
            parse_timeout(bad).unwrap_err().to_string(),
            "Invalid timeout value. Timeout must be a single integer in seconds, or an integer followed by a corresponding time unit (e.g. 1s | 2m | 3h)",
            "{bad:?}"
        );
    }
}

#[test]
fn the_server_version_must_be_the_emulated_minor() {
    let version =
        |major: &str, minor: &str| serde_json::json!({"major": major, "minor": minor, "gitVersion": "v1.32.4"});
    check_server_version(&version("1", "33")).unwrap();
    check_server_version(&version("1", "33+")).unwrap();
    let text = check_server_version(&version("1", "32")).unwrap_err().to_string();
    assert!(text.starts_with(r#"server version (&version.Info{Major:"1", Minor:"32", EmulationMajor:"""#), "{text}");
    assert!(text.contains(r#"GitVersion:"v1.32.4""#), "{text}");
    assert!(text.ends_with(r#"differs from client version (version.Info{Major:"1", Minor:"33"})"#), "{text}");
}

#[test]
fn io_errors_read_as_gos() {
    let missing = std::fs::File::open("/nonexistent/x").unwrap_err();
    assert_eq!(go_error_text(&missing), "no such file or directory");
}

#[tokio::test]
async fn a_kubeconfig_and_flags_make_kubes_config() {
    let path = write_kubeconfig(&kubeconfig());
    let loaded = load(Some(&path), None, &ConfigOverrides::default()).await.expect("usable");
    assert_eq!(loaded.config.cluster_url.to_string(), "https://main:6443/");
    assert_eq!(loaded.config.default_namespace, "team-a");
    assert_eq!(loaded.config.tls_server_name.as_deref(), Some("main.internal"));
    assert!(loaded.config.root_cert.is_some() && !loaded.config.accept_invalid_certs);
    assert_eq!(loaded.request_timeout, None);

    let overrides = ConfigOverrides {
        insecure_skip_tls_verify: true,
        impersonate: Some("jane".into()),
        impersonate_uid: Some("7".into()),
        timeout: Some("3s".into()),
        ..Default::default()
    };
    let loaded = load(Some(&path), Some("other"), &overrides).await.expect("usable");
    assert_eq!(loaded.config.cluster_url.to_string(), "https://other:6443/");
    assert_eq!(loaded.config.default_namespace, "default");
    assert!(loaded.config.accept_invalid_certs);
    assert_eq!(loaded.config.auth_info.impersonate.as_deref(), Some("jane"));
    assert_eq!(loaded.config.auth_info.impersonate_uid.as_deref(), Some("7"));
    assert!(loaded.config.auth_info.token.is_some());
    assert_eq!(loaded.request_timeout, Some(Duration::from_secs(3)));

    // Plain HTTP: no credentials are sent (client-go's rule), impersonation still is; a server
    // without a scheme gets http:// when nothing asks for TLS.
    let plain = ConfigOverrides {
        server: Some("127.0.0.1:8080".into()),
        impersonate: Some("jane".into()),
        ..Default::default()
    };
    let loaded = load(Some(&path), Some("other"), &plain).await.expect("usable");
    assert_eq!(loaded.config.cluster_url.to_string(), "http://127.0.0.1:8080/");
    assert!(loaded.config.auth_info.token.is_none());
    assert_eq!(loaded.config.auth_info.impersonate.as_deref(), Some("jane"));

    let problems = ConfigOverrides {
        token: Some(Sensitive("t".into())),
        username: Some("u".into()),
        impersonate_groups: vec!["g".into()],
        ..Default::default()
    };
    let text = load(Some(&path), None, &problems).await.unwrap_err().to_string();
    assert_eq!(
        text,
        "Error in configuration: \n* more than one authentication method found for admin; found [token basicAuth], only one is allowed\n* requesting uid, groups or user-extra for admin without impersonating a user"
    );
    let bad_timeout = ConfigOverrides { timeout: Some("soon".into()), ..Default::default() };
    assert!(matches!(load(Some(&path), None, &bad_timeout).await, Err(ConfigError::InvalidTimeout(_))));
    let _ = std::fs::remove_file(&path);

    let missing = load(Some(Path::new("/nonexistent/kubeconfig")), None, &ConfigOverrides::default()).await;
    assert_eq!(missing.unwrap_err().to_string(), "stat /nonexistent/kubeconfig: no such file or directory");
}

#[tokio::test]
async fn flags_alone_make_a_configuration_without_a_kubeconfig() {
    let empty = write_kubeconfig(&Kubeconfig::default());
    let overrides = ConfigOverrides {
        server: Some("https://10.0.0.1:6443".into()),
        token: Some(Sensitive("t".into())),
        tls_server_name: Some("kubernetes".into()),
        ..Default::default()
    };
    let loaded = load(Some(&empty), None, &overrides).await.expect("the flags suffice");
    assert_eq!(loaded.config.cluster_url.to_string(), "https://10.0.0.1:6443/");
    assert_eq!(loaded.config.tls_server_name.as_deref(), Some("kubernetes"));
    assert!(loaded.config.auth_info.token.is_some());
    // Nothing at all (and no pod around): kubectl's "no configuration".
    if std::env::var_os("KUBERNETES_SERVICE_HOST").is_none() {
        let nothing = load(Some(&empty), None, &ConfigOverrides::default()).await.unwrap_err();
        assert!(matches!(nothing, ConfigError::Empty), "{nothing}");
    }
    let _ = std::fs::remove_file(&empty);
}
