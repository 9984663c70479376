//! The network transports: smart HTTP with Basic auth and a bearer token, HTTPS with a private
//! CA, SSH with a deploy key; redirects, and servers that never answer.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use applyset::source::{Credentials, ErrorCategory};

use super::{T, branch, expect_err, key, read, source, spec};
use crate::git::{self, Fixture, GitHttpServer, HttpAuth, SilentServer, Sshd};

#[tokio::test]
async fn http_basic_auth() {
    let f = Fixture::new("http-basic");
    f.write("deploy/cm.yaml", "1");
    let c1 = f.commit("one");
    let password = "correct-horse-battery-staple";
    let http = GitHttpServer::start(
        f.bare.parent().unwrap(),
        HttpAuth::Basic { user: "deployer".into(), password: password.into() },
        None,
    );
    let url = http.url("repo.git");
    let s = spec(&url, branch("main"), Some("deploy"));
    let src = source("http-basic");

    let mut data = BTreeMap::new();
    data.insert("username".to_string(), b"deployer".to_vec());
    data.insert("password".to_string(), password.as_bytes().to_vec());
    let good = Credentials::from_secret_data(&data).unwrap();
    let a = src.sync(&key("h"), &s, Some(good.clone()), T).await.unwrap();
    assert_eq!(a.revision, format!("main@sha1:{c1}"));
    assert_eq!(read(&a, "cm.yaml"), "1");
    // A shallow clone over the network.
    assert!(src.repository_dir(&a.repository_id).join("shallow").exists(), "depth-1 fetch expected");
    let packs = http.upload_packs.load(std::sync::atomic::Ordering::SeqCst);
    assert!(packs >= 1);

    // Unchanged: the server sees a ref listing but no upload-pack.
    let listings = http.ref_listings.load(std::sync::atomic::Ordering::SeqCst);
    let a = src.sync(&key("h"), &s, Some(good.clone()), T).await.unwrap();
    assert!(!a.fetched);
    assert_eq!(http.upload_packs.load(std::sync::atomic::Ordering::SeqCst), packs);
    assert!(http.ref_listings.load(std::sync::atomic::Ordering::SeqCst) > listings);

    // Moved: shallow fetch of the new tip.
    f.write("deploy/cm.yaml", "2");
    let c2 = f.commit("two");
    let a = src.sync(&key("h"), &s, Some(good), T).await.unwrap();
    assert_eq!(a.revision, format!("main@sha1:{c2}"));
    assert_eq!(read(&a, "cm.yaml"), "2");

    // Wrong password: AuthFailed, and the password is nowhere in the error.
    let wrong_password = "Tr0ub4dor&3-wrong";
    let bad = Credentials::basic("deployer", wrong_password);
    let e = expect_err(src.sync(&key("h2"), &s, Some(bad), T).await, ErrorCategory::AuthFailed);
    let shown = format!("{e} {e:?}");
    assert!(!shown.contains(wrong_password), "{shown}");
    assert!(shown.contains(&url), "{shown}");

    // Password in the URL: used, and scrubbed from messages.
    let in_url = url.replacen("http://", &format!("http://deployer:{wrong_password}@"), 1);
    let e = expect_err(
        src.sync(&key("h3"), &spec(&in_url, branch("main"), None), None, T).await,
        ErrorCategory::AuthFailed,
    );
    let shown = format!("{e} {e:?}");
    assert!(!shown.contains(wrong_password), "{shown}");
    // The whole userinfo goes (a user name may be a token).
    assert!(shown.contains("http://***@127.0.0.1"), "{shown}");
    assert!(!shown.contains("deployer:"), "{shown}");
    let ok_url = url.replacen("http://", &format!("http://deployer:{password}@"), 1);
    src.sync(&key("h4"), &spec(&ok_url, branch("main"), None), None, T).await.unwrap();

    // No credentials at all.
    expect_err(src.sync(&key("h5"), &s, None, T).await, ErrorCategory::AuthFailed);
}

#[tokio::test]
async fn http_bearer_token() {
    let f = Fixture::new("http-bearer");
    f.write("a.yaml", "1");
    let c = f.commit("one");
    let token = "ghp_exampleTokenValue123";
    let http = GitHttpServer::start(f.bare.parent().unwrap(), HttpAuth::Bearer(token.into()), None);
    let s = spec(&http.url("repo.git"), branch("main"), None);
    let src = source("http-bearer");
    let mut data = BTreeMap::new();
    data.insert("bearerToken".to_string(), token.as_bytes().to_vec());
    let a = src.sync(&key("b"), &s, Some(Credentials::from_secret_data(&data).unwrap()), T).await.unwrap();
    assert_eq!(a.commit, c);
    let e = expect_err(
        src.sync(&key("b2"), &s, Some(Credentials::bearer("wrong-token-value")), T).await,
        ErrorCategory::AuthFailed,
    );
    assert!(!format!("{e} {e:?}").contains("wrong-token-value"), "{e}");
}

#[tokio::test]
async fn https_with_private_ca() {
    let f = Fixture::new("https-ca");
    f.write("a.yaml", "1");
    let c = f.commit("one");
    let pki = git::test_pki();
    let https = GitHttpServer::start(
        f.bare.parent().unwrap(),
        HttpAuth::Basic { user: "u".into(), password: "p4ss-word".into() },
        Some(pki.acceptor.clone()),
    );
    let url = format!("https://127.0.0.1:{}/repo.git", https.port);
    let s = spec(&url, branch("main"), None);
    let src = source("https-ca");

    // Without ca.crt the certificate is not trusted.
    let e = expect_err(
        src.sync(&key("x"), &s, Some(Credentials::basic("u", "p4ss-word")), T).await,
        ErrorCategory::UntrustedHost,
    );
    assert!(e.to_string().contains(&url), "{e}");

    let mut creds = Credentials::basic("u", "p4ss-word");
    creds.ca_cert = Some(pki.ca_pem.clone());
    let a = src.sync(&key("x"), &s, Some(creds), T).await.unwrap();
    assert_eq!(a.commit, c);
    // (Host-name mismatch under the same CA is covered by the unit tests.)
}

#[tokio::test]
async fn ssh_deploy_key() {
    let f = Fixture::new("ssh");
    f.write("deploy/cm.yaml", "ssh");
    let c = f.commit("one");
    let sshd = Sshd::start(&f.root.join("sshd"));
    let url = sshd.url(&f.bare);
    let s = spec(&url, branch("main"), Some("deploy"));
    let src = source("ssh");

    let mut data = BTreeMap::new();
    data.insert("identity".to_string(), sshd.client_key.clone());
    data.insert("known_hosts".to_string(), sshd.known_hosts.clone().into_bytes());
    let good = Credentials::from_secret_data(&data).unwrap();
    let a = match src.sync(&key("s"), &s, Some(good.clone()), T).await {
        Ok(a) => a,
        Err(e) => panic!("ssh sync failed: {e}\nsshd log:\n{}", sshd.log()),
    };
    assert_eq!(a.revision, format!("main@sha1:{c}"));
    assert_eq!(read(&a, "cm.yaml"), "ssh");
    assert!(src.repository_dir(&a.repository_id).join("shallow").exists(), "depth-1 fetch expected");
    let a = src.sync(&key("s"), &s, Some(good.clone()), T).await.unwrap();
    assert!(!a.fetched);

    // scp-like syntax is accepted (port 22 is not ours, so only parse-check it).
    assert!(applyset::source::GitUrl::parse("git@github.com:org/repo.git").is_ok());

    // Unknown host key: rejected before authenticating.
    let wrong_host = Credentials::ssh(sshd.client_key.clone(), sshd.wrong_known_hosts.clone());
    let e = expect_err(src.sync(&key("s2"), &s, Some(wrong_host), T).await, ErrorCategory::UntrustedHost);
    assert!(e.to_string().contains("does not match known_hosts"), "{e}");
    let other_host = Credentials::ssh(
        sshd.client_key.clone(),
        format!("example.com {}", sshd.known_hosts.split_once(' ').unwrap().1),
    );
    let e = expect_err(src.sync(&key("s2"), &s, Some(other_host), T).await, ErrorCategory::UntrustedHost);
    assert!(e.to_string().contains("not in known_hosts"), "{e}");

    // A key the server does not know.
    let wrong_key = Credentials::ssh(sshd.other_key.clone(), sshd.known_hosts.clone());
    expect_err(src.sync(&key("s3"), &s, Some(wrong_key), T).await, ErrorCategory::AuthFailed);

    // known_hosts is mandatory.
    let mut no_kh = good.clone();
    no_kh.known_hosts = None;
    expect_err(src.sync(&key("s4"), &s, Some(no_kh), T).await, ErrorCategory::InvalidSpec);

    // The deploy key only runs git-upload-pack.
    let key_file = f.root.join("sshd/client_key");
    let out = std::process::Command::new("ssh")
        .args(["-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-i"])
        .arg(&key_file)
        .args(["-p", &sshd.port.to_string(), &format!("{}@127.0.0.1", sshd.user), "id"])
        .output()
        .unwrap();
    assert!(!out.status.success(), "a shell command must be refused");
}

/// Two repositories with different content behind two servers (two ports of
/// one host); `a` is asked for `repo.git`.
struct TwoServers {
    a: Fixture,
    b: Fixture,
    server_a: GitHttpServer,
    server_b: GitHttpServer,
}

fn two_servers(name: &str, tls: Option<git::TlsAcceptor>) -> TwoServers {
    let a = Fixture::new(&format!("{name}-a"));
    a.write("cm.yaml", "from: a\n");
    a.commit("a");
    let b = Fixture::new(&format!("{name}-b"));
    b.write("cm.yaml", "from: b\n");
    b.commit("b");
    let server_a = GitHttpServer::start(a.bare.parent().unwrap(), HttpAuth::None, tls.clone());
    let server_b = GitHttpServer::start(b.bare.parent().unwrap(), HttpAuth::None, tls);
    TwoServers { a, b, server_a, server_b }
}

#[tokio::test]
async fn redirect_to_another_port_is_refused() {
    let pki = git::test_pki();
    for (scheme, tls) in [("http", None), ("https", Some(pki.acceptor.clone()))] {
        let t = two_servers(&format!("redirect-port-{scheme}"), tls);
        let url_a = format!("{scheme}://127.0.0.1:{}/repo.git", t.server_a.port);
        let url_b = format!("{scheme}://127.0.0.1:{}/repo.git", t.server_b.port);
        t.server_a.redirect("repo.git", &url_b);
        let mut creds = Credentials::basic("deployer", "redirect-S3cret");
        creds.ca_cert = Some(pki.ca_pem.clone());
        let src = source(&format!("redirect-port-{scheme}"));
        let e = expect_err(
            src.sync(&key("r"), &spec(&url_a, branch("main"), None), Some(creds), T).await,
            ErrorCategory::RedirectRefused,
        );
        let shown = e.to_string();
        assert!(shown.contains(&url_a) && shown.contains(&url_b), "{shown}");
        assert!(shown.contains("refused"), "{shown}");
        assert!(!shown.contains("redirect-S3cret"), "{shown}");
        assert!(t.server_a.redirected.load(std::sync::atomic::Ordering::SeqCst) >= 1);
        // Nothing, credentials included, ever reached the other server.
        for counter in [&t.server_b.ref_listings, &t.server_b.upload_packs, &t.server_b.unauthorized] {
            assert_eq!(counter.load(std::sync::atomic::Ordering::SeqCst), 0, "{scheme}");
        }
        drop((t.a, t.b));
    }
}

#[tokio::test]
async fn same_origin_redirect_is_followed() {
    let pki = git::test_pki();
    for (scheme, tls) in [("http", None), ("https", Some(pki.acceptor.clone()))] {
        let t = two_servers(&format!("redirect-same-{scheme}"), tls);
        let expected = git::git(&t.a.work, &["rev-parse", "HEAD"]);
        // `/old.git` moved to `/repo.git` on the same server: once as a path,
        // once as an absolute URL.
        t.server_a.redirect("old.git", "/repo.git");
        let absolute = format!("{scheme}://127.0.0.1:{}/repo.git", t.server_a.port);
        t.server_a.redirect("older.git", &absolute);
        let creds = Credentials { ca_cert: Some(pki.ca_pem.clone()), ..Default::default() };
        let src = source(&format!("redirect-same-{scheme}"));
        for (k, old) in [("old", "old.git"), ("older", "older.git")] {
            let url = format!("{scheme}://127.0.0.1:{}/{old}", t.server_a.port);
            let a = src
                .sync(&key(k), &spec(&url, branch("main"), None), Some(creds.clone()), T)
                .await
                .unwrap_or_else(|e| panic!("{url}: {e}"));
            assert_eq!(a.commit, expected);
            assert_eq!(read(&a, "cm.yaml"), "from: a\n");
        }
        assert!(t.server_a.redirected.load(std::sync::atomic::Ordering::SeqCst) >= 2);
        assert_eq!(t.server_b.ref_listings.load(std::sync::atomic::Ordering::SeqCst), 0);
        drop(t.b);
    }
}

#[tokio::test]
async fn timeout_on_a_silent_server() {
    let server = SilentServer::start();
    let src = source("timeout");
    let url = format!("http://127.0.0.1:{}/repo.git", server.port);
    let started = Instant::now();
    let e = expect_err(
        src.sync(&key("t"), &spec(&url, branch("main"), None), None, Duration::from_millis(1500)).await,
        ErrorCategory::Timeout,
    );
    let took = started.elapsed();
    assert!(took < Duration::from_secs(10), "timed out after {took:?}");
    assert!(took >= Duration::from_millis(1400), "{took:?}");
    assert!(e.to_string().contains(&url), "{e}");
}

#[tokio::test]
async fn a_hanging_fetch_reports_the_real_limit() {
    let server = SilentServer::start();
    let src = source("hanging");
    let url = format!("http://127.0.0.1:{}/repo.git", server.port);
    let limit = Duration::from_millis(1500);
    // The second sync of the key comes while the first may still hold its
    // cache: both name the limit that expired, never "0ns".
    for attempt in 0..2 {
        let e = expect_err(
            src.sync(&key("t"), &spec(&url, branch("main"), None), None, limit).await,
            ErrorCategory::Timeout,
        );
        let shown = e.to_string();
        assert!(shown.contains("timed out after 1.5s"), "attempt {attempt}: {shown}");
        assert!(!shown.contains("0ns"), "attempt {attempt}: {shown}");
    }
}

/// Credentials go only where the server asks for them: a server that never answers 401 sees
/// no `Authorization` header, from the listing or from libgit2, whether the password is in the
/// Secret or in the URL; one that asks gets it after its challenge.
#[tokio::test]
async fn credentials_wait_for_the_challenge() {
    use std::sync::atomic::Ordering::SeqCst;
    let f = Fixture::new("no-challenge");
    f.write("a.yaml", "1");
    let c = f.commit("one");
    let open = GitHttpServer::start(f.bare.parent().unwrap(), HttpAuth::None, None);
    let src = source("no-challenge");
    let url = open.url("repo.git");
    let a = src.sync(&key("s"), &spec(&url, branch("main"), None), Some(Credentials::basic("u", "pw-1")), T).await;
    assert_eq!(a.unwrap().commit, c);
    let in_url = url.replacen("http://", "http://u:pw-2@", 1);
    src.sync(&key("u"), &spec(&in_url, branch("main"), None), None, T).await.unwrap();
    assert_eq!(open.authorizations.load(SeqCst), 0, "a server that never asked received credentials");

    let guarded = GitHttpServer::start(
        f.bare.parent().unwrap(),
        HttpAuth::Basic { user: "u".into(), password: "pw-3".into() },
        None,
    );
    let s = spec(&guarded.url("repo.git"), branch("main"), None);
    src.sync(&key("g"), &s, Some(Credentials::basic("u", "pw-3")), T).await.unwrap();
    let (challenged, sent) = (guarded.unauthorized.load(SeqCst), guarded.authorizations.load(SeqCst));
    assert!(challenged >= 1 && sent >= 1, "challenged {challenged} times, credentials sent {sent} times");
}

/// A server that sends its answer a byte at a time is cut at the sync's deadline, not held
/// for as long as it keeps dripping: the run fails with `Timeout`, the connection is closed,
/// and the ApplySet's next sync is not blocked behind it.
#[tokio::test]
async fn a_dripping_server_is_cut_at_the_deadline() {
    let drip = git::drip::DripServer::start();
    let src = source("drip");
    let url = format!("http://127.0.0.1:{}/repo.git", drip.port);
    let started = Instant::now();
    let limit = Duration::from_millis(1500);
    expect_err(src.sync(&key("d"), &spec(&url, branch("main"), None), None, limit).await, ErrorCategory::Timeout);
    let took = started.elapsed();
    assert!(took < Duration::from_secs(10), "cut after {took:?}");
    let closed = Instant::now();
    while drip.open.load(std::sync::atomic::Ordering::SeqCst) > 0 {
        assert!(closed.elapsed() < Duration::from_secs(10), "the dripped connection is still open");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let f = Fixture::new("after-drip");
    f.write("a.yaml", "1");
    let c = f.commit("one");
    let http = GitHttpServer::start(f.bare.parent().unwrap(), HttpAuth::None, None);
    let next = src.sync(&key("d"), &spec(&http.url("repo.git"), branch("main"), None), None, limit).await;
    assert_eq!(next.expect("the next sync of the key").commit, c);
}

/// A remote reachable only through a proxy (its host name resolves nowhere but in the proxy):
/// unreachable without one; fetched through `spec.source.proxySecretRef`'s proxy, with its
/// credentials, in a CONNECT tunnel (the server's certificate still checked against
/// `ca.crt`), the listing and libgit2's requests alike. A plain-http remote with a proxy is
/// refused: libgit2 cannot fetch one through it.
#[tokio::test]
async fn a_remote_behind_a_proxy_is_reached_through_it() {
    use std::sync::atomic::Ordering::SeqCst;

    use applyset::source::{ProxySettings, Secret};
    let f = Fixture::new("proxied");
    f.write("a.yaml", "1");
    let c = f.commit("one");
    let pki = crate::support::pki::ca_and_leaf(&["git.invalid"]);
    let acceptor = {
        use openssl::ssl::{SslAcceptor, SslMethod};
        let mut acceptor = SslAcceptor::mozilla_intermediate_v5(SslMethod::tls()).unwrap();
        acceptor.set_private_key(&pki.leaf_key).unwrap();
        acceptor.set_certificate(&pki.leaf).unwrap();
        std::sync::Arc::new(acceptor.build())
    };
    let https = GitHttpServer::start(f.bare.parent().unwrap(), HttpAuth::None, Some(acceptor));
    let proxy = git::proxy::ForwardProxy::start(&[("git.invalid", https.port)], Some(("egress", "pr0xy-pw")));
    let tls = spec(&format!("https://git.invalid:{}/repo.git", https.port), branch("main"), None);
    let src = source("proxied");
    let via = |user: &str, password: &str| {
        let settings = ProxySettings {
            address: proxy.address(),
            username: Some(user.to_owned()),
            password: Some(Secret::new(password.as_bytes().to_vec())),
        };
        let mut creds = Credentials::default().with_proxy(settings);
        creds.ca_cert = Some(pki.ca.to_pem().unwrap());
        creds
    };

    let direct = Credentials { ca_cert: Some(pki.ca.to_pem().unwrap()), ..Credentials::default() };
    expect_err(src.sync(&key("direct"), &tls, Some(direct), T).await, ErrorCategory::Unreachable);
    let refused = src.sync(&key("wrong"), &tls, Some(via("egress", "nope")), T).await;
    assert!(refused.is_err(), "wrong proxy credentials: {refused:?}");
    assert!(proxy.refused.load(SeqCst) >= 1);

    let a = src.sync(&key("tls"), &tls, Some(via("egress", "pr0xy-pw")), T).await;
    let counts = (proxy.tunnels.load(SeqCst), proxy.refused.load(SeqCst));
    assert_eq!(a.unwrap_or_else(|e| panic!("through the proxy {counts:?}: {e:?}")).commit, c);
    assert!(proxy.tunnels.load(SeqCst) >= 2, "the listing's and libgit2's tunnels: {counts:?}");

    let plain = spec("http://git.invalid:1/repo.git", branch("main"), None);
    let e = expect_err(
        src.sync(&key("plain"), &plain, Some(via("egress", "pr0xy-pw")), T).await,
        ErrorCategory::InvalidSpec,
    );
    assert!(e.to_string().contains("https:// URLs only"), "{e}");
}
