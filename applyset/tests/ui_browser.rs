//! `applyset ui` in real headless Chromium, against the real control plane and controller:
//! the list and an ApplySet's page render the live state, a drift made by hand appears without
//! a reload (field path and manager), the actions work with the caller's identity, requests
//! from elsewhere are refused, an identity allowed one namespace sees only that one, and a UI
//! served beyond loopback needs the flag that allows it and then its access token.
//! Screenshots of each page land in `target/tmp/ui-screens/`.

mod git;
mod operator;
mod support;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::{Context, Result, bail, ensure};
use operator::{
    ControllerFixture, config_map, create_applyset, get_applyset, is_ready, start_controller, wait_for_applyset,
};
use support::TestNamespace;
use support::browser::Browser;

const T: Duration = Duration::from_secs(90);
const LIVE: Duration = Duration::from_secs(30);

/// `applyset ui` on a free port with `kubeconfig`; stopped on drop.
struct UiServer {
    child: Child,
    url: String,
}

impl UiServer {
    fn start(kubeconfig: &Path, args: &[&str]) -> Result<UiServer> {
        UiServer::start_at("127.0.0.1:0", kubeconfig, args)
    }

    fn start_at(address: &str, kubeconfig: &Path, args: &[&str]) -> Result<UiServer> {
        let mut child = Command::new(env!("CARGO_BIN_EXE_applyset"))
            .env_remove("KUBECONFIG")
            .args(["ui", "--address", address, "--kubeconfig"])
            .arg(kubeconfig)
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .context("starting applyset ui")?;
        let mut line = String::new();
        BufReader::new(child.stdout.take().context("its stdout")?).read_line(&mut line)?;
        let url = line
            .split_whitespace()
            .find(|word| word.starts_with("http://"))
            .with_context(|| format!("no URL in {line:?}"))?
            .trim_end_matches('/')
            .to_owned();
        Ok(UiServer { child, url })
    }

    fn port(&self) -> u16 {
        let after_host = self.url.split("://").nth(1).unwrap_or_default();
        let port = after_host.split('/').next().and_then(|h| h.rsplit(':').next());
        port.and_then(|p| p.parse().ok()).unwrap_or(0)
    }

    /// A raw request (the browser's view aside): status code and body.
    fn request(&self, head: &str, body: &str) -> Result<(u16, String)> {
        operator::http_request(self.port(), head, body)
    }
}

impl Drop for UiServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn screens() -> Result<std::path::PathBuf> {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("ui-screens");
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

async fn browser(name: &str) -> Result<Browser> {
    Browser::launch(&support::scratch_dir("ui-browser", name), 1280, 900).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pages_follow_the_cluster_and_the_actions_work() -> Result<()> {
    let ControllerFixture { ns, repo } = ControllerFixture::new("ui").await?;
    // The key `v`, as the issue's check names the drifted path `data.v`.
    let cm_a = format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: cm-a, namespace: {}}}\ndata: {{v: one}}\n",
        ns.name
    );
    repo.write("alpha/cm.yaml", cm_a);
    let secret = format!(
        "apiVersion: v1\nkind: Secret\nmetadata: {{name: token, namespace: {}}}\nstringData: {{token: do-not-show-me-1234}}\n",
        ns.name
    );
    repo.write("beta/cm.yaml", format!("{}---\n{secret}", config_map("cm-b", &ns.name, "two")));
    repo.commit("two apps");
    let controller = start_controller(&ns)?;
    let spec = |path: &str, drift: &str| serde_json::json!({ "source": { "url": repo.url(), "path": path }, "interval": "1h", "drift": { "mode": drift } });
    create_applyset(&ns, "alpha", spec("alpha", "Report")).await?;
    create_applyset(&ns, "beta", spec("beta", "Correct")).await?;
    for name in ["alpha", "beta"] {
        wait_for_applyset(&ns, name, &controller, "Ready", T, is_ready).await?;
    }
    // Drift in seconds comes from the controller's watch cache: the edit waits until it
    // watches both kinds (an edit before would be in its first list, not seen as a change).
    support::eventually("the watch cache", T, || async {
        Ok(operator::sample(&controller.metrics()?, "applyset_watched_kinds").filter(|n| *n >= 2.0))
    })
    .await?;
    let ui = UiServer::start(&ns.kubeconfig, &[])?;
    let mut page = browser("actions").await?;

    // The list: both ApplySets, Ready, each linking to its page.
    page.open(&format!("{}/", ui.url)).await?;
    page.wait_for("the live stream", LIVE, "document.getElementById('live').textContent === 'live'").await?;
    let list = page.wait_for_text(&["alpha", "beta", "True Succeeded"], LIVE).await?;
    ensure!(list.contains(&ns.name), "{list}");
    // The filter box hides what does not match.
    page.eval("(() => { const f = document.getElementById('filter'); f.value = 'beta'; f.dispatchEvent(new Event('input')); })()").await?;
    let hidden = page
        .eval("[...document.querySelectorAll('tr[data-search]')].filter(r => !r.hidden).map(r => r.dataset.search)")
        .await?;
    ensure!(
        hidden.as_array().is_some_and(|rows| rows.iter().all(|r| r.as_str().unwrap_or_default().contains("beta"))),
        "{hidden}"
    );
    page.eval(
        "(() => { const f = document.getElementById('filter'); f.value = ''; f.dispatchEvent(new Event('input')); })()",
    )
    .await?;
    page.screenshot(&screens()?.join("list.png")).await?;
    // The list follows the cluster too: a change made elsewhere appears without a reload.
    page.eval("window.notReloaded = true").await?;
    ns.kubectl_ok(&["patch", "applyset", "beta", "--type=merge", "-p", r#"{"spec":{"suspend":true}}"#], None)?;
    let beta_suspended = format!(
        "[...document.querySelectorAll('tr[data-search]')].some(r => r.dataset.search.startsWith('{}/beta ') && r.innerText.includes('Suspended'))",
        ns.name
    );
    page.wait_for("beta's row to say Suspended", LIVE, &beta_suspended).await?;
    ensure!(page.eval("window.notReloaded === true").await? == serde_json::Value::Bool(true), "the list was reloaded");
    ns.kubectl_ok(&["patch", "applyset", "beta", "--type=merge", "-p", r#"{"spec":{"suspend":false}}"#], None)?;

    // An ApplySet's page, then a drift made by hand: it appears without a reload.
    page.open(&format!("{}/applysets/{}/alpha", ui.url, ns.name)).await?;
    page.wait_for_text(&["cm-a", "Conditions", "Revisions"], LIVE).await?;
    page.wait_for("the live stream", LIVE, "document.getElementById('live').textContent === 'live'").await?;
    page.eval("window.notReloaded = true").await?;
    ns.kubectl_ok(
        &["patch", "configmap", "cm-a", "--field-manager=hand-edit", "-p", r#"{"data":{"v":"by hand"}}"#],
        None,
    )?;
    wait_for_applyset(&ns, "alpha", &controller, "DriftDetected", T, operator::reason_is("Drifted", "DriftDetected"))
        .await?;
    let drifted = page.wait_for_text(&["data.v", "hand-edit", "Changed"], LIVE).await?;
    ensure!(page.eval("window.notReloaded === true").await? == serde_json::Value::Bool(true), "the page was reloaded");
    ensure!(drifted.contains("Drifted"), "{drifted}");
    page.screenshot(&screens()?.join("detail.png")).await?;

    // The keyboard reaches the skip link first.
    ensure!(page.tab(1).await? == "Skip to content", "the first Tab stop");

    // Suspend, then resume, as the caller. A page that comes while the button is pressed does
    // not take the click away.
    let received = "Number(document.getElementById('content').dataset.received || '0')";
    let before = page.eval(received).await?;
    let at = page.press("form[action$='/suspend'] button").await?;
    ns.kubectl_ok(&["annotate", "applyset", "alpha", "example.com/poked=while-pressed"], None)?;
    page.wait_for("a page while pressed", LIVE, &format!("{received} > {before}")).await?;
    page.release(at).await?;
    page.wait_for_text(&["suspended.", "Resume"], LIVE).await?;
    ensure!(get_applyset(&ns, "alpha").await?.spec.suspend, "spec.suspend is true");
    page.click("form[action$='/resume'] button").await?;
    page.wait_for_text(&["resumed", "Suspend"], LIVE).await?;
    ensure!(!get_applyset(&ns, "alpha").await?.spec.suspend, "spec.suspend is false again");
    let requested = get_applyset(&ns, "alpha").await?.metadata.annotations.unwrap_or_default();
    ensure!(requested.contains_key("applyset.dev/reconcile-requested-at"), "a run was requested: {requested:?}");

    // A prune the guard holds: the page offers the approval, which lets that revision prune.
    repo.write("gamma/one.yaml", config_map("g1", &ns.name, "1"));
    repo.write("gamma/two.yaml", config_map("g2", &ns.name, "2"));
    repo.commit("gamma");
    let guarded = serde_json::json!({
        "source": { "url": repo.url(), "path": "gamma" }, "interval": "1h", "pruneGuard": { "maxObjects": 1 },
    });
    create_applyset(&ns, "gamma", guarded).await?;
    wait_for_applyset(&ns, "gamma", &controller, "Ready", T, is_ready).await?;
    repo.remove("gamma/one.yaml");
    repo.remove("gamma/two.yaml");
    repo.write("gamma/three.yaml", config_map("g3", &ns.name, "3"));
    repo.commit("gamma: two removed");
    page.open(&format!("{}/applysets/{}/gamma", ui.url, ns.name)).await?;
    page.wait_for("the live stream", LIVE, "document.getElementById('live').textContent === 'live'").await?;
    operator::request_reconcile(&ns, "gamma").await?;
    page.wait_for_text(&["PruneGuarded", "Approve prune", "Guarded:"], LIVE).await?;
    page.screenshot(&screens()?.join("guarded.png")).await?;
    page.click("form[action$='/approve-prune'] button").await?;
    page.wait_for_text(&["approved", "Last pruned", "configmap/g1"], LIVE).await?;
    ensure!(!ns.exists("configmap/g1")? && !ns.exists("configmap/g2")?, "the approved revision pruned");

    // A Secret's page shows its name, never its value.
    page.open(&format!("{}/applysets/{}/beta", ui.url, ns.name)).await?;
    let beta = page.wait_for_text(&["token", "cm-b"], LIVE).await?;
    let html = page.eval("document.documentElement.outerHTML").await?;
    ensure!(!beta.contains("do-not-show-me") && !html.to_string().contains("do-not-show-me"), "{beta}");

    // Requests that do not come from the UI's own pages are refused.
    let form_path = format!("/applysets/{}/alpha/reconcile", ns.name);
    let host = format!("127.0.0.1:{}", ui.port());
    let post = |extra: &str| {
        format!("POST {form_path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/x-www-form-urlencoded{extra}")
    };
    let (code, body) = ui.request(&post(""), "csrf=guessed")?;
    ensure!(code == 403 && body.contains("invalid request token"), "{code} {body}");
    let token = page.eval("document.querySelector('input[name=csrf]').value").await?;
    let token = token.as_str().context("the page's token")?.to_owned();
    let (code, _) = ui.request(&post("\r\nOrigin: http://evil.example"), &format!("csrf={token}"))?;
    ensure!(code == 403, "a cross-site POST: {code}");
    let (code, _) = ui.request(&post("\r\nSec-Fetch-Site: cross-site"), &format!("csrf={token}"))?;
    ensure!(code == 403, "a cross-site POST (fetch metadata): {code}");
    let (code, _) = ui.request("GET / HTTP/1.1\r\nHost: rebound.example:80", "")?;
    ensure!(code == 403, "a Host --accept-hosts does not allow: {code}");
    let (code, _) = ui.request(&post(""), &format!("csrf={token}"))?;
    ensure!(code == 303, "the page's own form: {code}");
    Ok(())
}

/// A ServiceAccount of `ns` that may read and watch ApplySets and Events there (nothing else),
/// and a kubeconfig that authenticates as it.
fn reader_of(ns: &TestNamespace) -> Result<support::TokenKubeconfig> {
    ns.kubectl_ok(&["create", "serviceaccount", "reader"], None)?;
    ns.kubectl_ok(
        &["create", "role", "reader", "--verb=get,list,watch", "--resource=applysets.applyset.dev,events"],
        None,
    )?;
    let subject = format!("--serviceaccount={}:reader", ns.name);
    ns.kubectl_ok(&["create", "rolebinding", "reader", "--role=reader", &subject], None)?;
    let token = ns.kubectl_ok(&["create", "token", "reader", "--duration=1h"], None)?;
    ns.token_kubeconfig(token.trim(), "reader")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_identity_allowed_one_namespace_sees_only_that_namespace() -> Result<()> {
    let ControllerFixture { ns: mine, repo } = ControllerFixture::new("ui-mine").await?;
    let theirs = operator::crd_namespace("ui-theirs").await?;
    let spec = serde_json::json!({ "source": { "url": repo.url() }, "interval": "1h" });
    create_applyset(&mine, "visible", spec.clone()).await?;
    create_applyset(&theirs, "hidden", spec).await?;
    let reader = reader_of(&mine)?;
    let ui = UiServer::start(&reader.path, &["-n", &mine.name])?;
    let mut page = browser("one-namespace").await?;

    page.open(&format!("{}/", ui.url)).await?;
    let list =
        page.wait_for_text(&["visible", "only: this identity may not list ApplySets in every namespace"], LIVE).await?;
    ensure!(!list.contains("hidden") && !list.contains(&theirs.name), "another namespace shows: {list}");
    page.wait_for("the live stream", LIVE, "document.getElementById('live').textContent === 'live'").await?;
    page.screenshot(&screens()?.join("one-namespace.png")).await?;

    // The other namespace's page: the apiserver's refusal, nothing of the ApplySet.
    page.open(&format!("{}/applysets/{}/hidden", ui.url, theirs.name)).await?;
    let refused = page.wait_for_text(&["Forbidden"], LIVE).await?;
    ensure!(!refused.contains("True") && !refused.contains(&repo.url()), "{refused}");

    // An action RBAC does not allow: refused cleanly, nothing changed.
    page.open(&format!("{}/applysets/{}/visible", ui.url, mine.name)).await?;
    page.wait_for_text(&["Reconcile now"], LIVE).await?;
    page.click("form[action$='/suspend'] button").await?;
    let text = page.wait_for_text(&["Refused: Error from server (Forbidden)"], LIVE).await?;
    ensure!(text.contains("cannot patch"), "{text}");
    if get_applyset(&mine, "visible").await?.spec.suspend {
        bail!("the refused action changed the ApplySet");
    }
    Ok(())
}

/// A non-loopback address is refused without `--allow-remote-access`; with it, every request
/// needs the token printed at start: the browser opens the printed URL once, the token moves to
/// a strict cookie and out of the address, and a request without it (or with another) is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ui_beyond_loopback_needs_the_flag_and_then_its_token() -> Result<()> {
    let ns = TestNamespace::create("ui-remote").await?;
    let refused = Command::new(env!("CARGO_BIN_EXE_applyset"))
        .env_remove("KUBECONFIG")
        .args(["ui", "--address", "0.0.0.0:0", "--kubeconfig"])
        .arg(&ns.kubeconfig)
        .output()?;
    let stderr = String::from_utf8_lossy(&refused.stderr);
    ensure!(!refused.status.success(), "served 0.0.0.0 without the flag");
    ensure!(stderr.contains("not a loopback address") && stderr.contains("--allow-remote-access"), "{stderr}");

    let ui = UiServer::start_at("0.0.0.0:0", &ns.kubeconfig, &["--allow-remote-access", "-n", &ns.name])?;
    let token = ui.url.split("token=").nth(1).context("a token in the printed URL")?.to_owned();
    ensure!(token.len() == 64, "{}", ui.url);
    let port = ui.port();
    let get = |path: &str, extra: &str| {
        operator::http_request(port, &format!("GET {path} HTTP/1.1\r\nHost: ui.example:{port}{extra}"), "")
    };
    let (code, body) = get("/", "")?;
    ensure!(code == 401 && body.contains("access token"), "no token: {code} {body}");
    ensure!(get("/?token=0123", "")?.0 == 401, "a wrong token in the URL");
    ensure!(get("/", "\r\nCookie: applyset-ui-access=0123")?.0 == 401, "a wrong cookie");
    ensure!(get("/assets/app.css", "")?.0 == 401, "assets too");
    ensure!(get("/", &format!("\r\nCookie: applyset-ui-access={token}"))?.0 == 200, "the cookie");

    let mut page = browser("remote").await?;
    page.open(&format!("http://127.0.0.1:{port}/?token={token}")).await?;
    page.wait_for_text(&["ApplySets"], LIVE).await?;
    let address = page.eval("location.href").await?;
    ensure!(
        address.as_str() == Some(&format!("http://127.0.0.1:{port}/")[..]),
        "the token left the address: {address}"
    );
    let readable = page.eval("document.cookie").await?;
    ensure!(readable.as_str() == Some(""), "the cookie is HttpOnly: {readable}");
    page.open(&format!("http://127.0.0.1:{port}/")).await?;
    page.wait_for_text(&["ApplySets"], LIVE).await?;
    page.screenshot(&screens()?.join("remote-access.png")).await?;
    Ok(())
}
