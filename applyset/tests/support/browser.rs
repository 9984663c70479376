//! Real headless Chromium for the UI tests, driven over the Chrome DevTools Protocol: one
//! browser process, one page, commands sent and answered over its websocket (Debian's
//! `chromium`; `.ci/run` installs it).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use base64::Engine;
use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;

type Socket = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// A headless Chromium with one page open; killed on drop.
pub struct Browser {
    child: Child,
    socket: Socket,
    session: String,
    next_id: u64,
    _profile: PathBuf,
}

/// The chromium binary: `$APPLYSET_CHROMIUM`, else `chromium` on the PATH.
pub fn chromium_path() -> Result<PathBuf> {
    if let Some(path) = std::env::var_os("APPLYSET_CHROMIUM") {
        return Ok(PathBuf::from(path));
    }
    for dir in std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()) {
        for name in ["chromium", "chromium-browser"] {
            let candidate = dir.join(name);
            if candidate.is_file() {
                return Ok(candidate);
            }
        }
    }
    bail!("chromium not found on the PATH (apt-get install chromium, or set APPLYSET_CHROMIUM)")
}

impl Browser {
    /// Starts Chromium (a profile of its own under `profile`) and opens a blank page of
    /// `width` × `height` pixels.
    pub async fn launch(profile: &Path, width: u32, height: u32) -> Result<Browser> {
        let mut child = Command::new(chromium_path()?)
            .args([
                "--headless=new",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--no-first-run",
                "--remote-debugging-address=127.0.0.1",
                "--remote-debugging-port=0",
                "--hide-scrollbars",
                "--force-color-profile=srgb",
            ])
            .arg(format!("--user-data-dir={}", profile.display()))
            .arg(format!("--window-size={width},{height}"))
            .arg("about:blank")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .context("starting chromium")?;
        let stderr = child.stderr.take().context("chromium's stderr")?;
        // Chromium prints where its DevTools listen; the rest of its stderr is drained.
        let (sender, receiver) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut sent = false;
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if !sent && let Some(url) = line.strip_prefix("DevTools listening on ") {
                    let _ = sender.send(url.trim().to_owned());
                    sent = true;
                }
            }
        });
        let url = tokio::task::spawn_blocking(move || receiver.recv_timeout(Duration::from_secs(30)))
            .await?
            .context("chromium did not say where its DevTools listen within 30 s")?;
        let (socket, _) = tokio_tungstenite::connect_async(&url).await.context("connecting to chromium's DevTools")?;
        let mut browser = Browser { child, socket, session: String::new(), next_id: 0, _profile: profile.to_owned() };
        let target = browser.call(None, "Target.createTarget", json!({ "url": "about:blank" })).await?;
        let target_id = target["targetId"].as_str().context("a target id")?.to_owned();
        let attached =
            browser.call(None, "Target.attachToTarget", json!({ "targetId": target_id, "flatten": true })).await?;
        browser.session = attached["sessionId"].as_str().context("a session id")?.to_owned();
        browser
            .send(
                "Emulation.setDeviceMetricsOverride",
                json!({
                    "width": width, "height": height, "deviceScaleFactor": 1, "mobile": false,
                }),
            )
            .await?;
        Ok(browser)
    }

    /// One command of the page's session, and its result.
    pub async fn send(&mut self, method: &str, params: Value) -> Result<Value> {
        let session = self.session.clone();
        self.call(Some(&session), method, params).await
    }

    async fn call(&mut self, session: Option<&str>, method: &str, params: Value) -> Result<Value> {
        self.next_id += 1;
        let id = self.next_id;
        let mut message = json!({ "id": id, "method": method, "params": params });
        if let Some(session) = session {
            message["sessionId"] = session.into();
        }
        self.socket.send(Message::text(message.to_string())).await?;
        let answer = tokio::time::timeout(Duration::from_secs(30), async {
            while let Some(frame) = self.socket.next().await {
                let Message::Text(text) = frame? else { continue };
                let value: Value = serde_json::from_str(&text)?;
                if value["id"].as_u64() == Some(id) {
                    return Ok(value);
                }
            }
            bail!("chromium closed its DevTools connection")
        })
        .await
        .with_context(|| format!("{method}: no answer within 30 s"))??;
        if let Some(error) = answer.get("error") {
            bail!("{method}: {error}");
        }
        Ok(answer["result"].clone())
    }

    /// Goes to `url` and waits until the document has loaded.
    pub async fn open(&mut self, url: &str) -> Result<()> {
        self.send("Page.navigate", json!({ "url": url })).await?;
        self.wait_for("the page to load", Duration::from_secs(30), "document.readyState === 'complete'").await?;
        Ok(())
    }

    /// The value of a JavaScript expression in the page.
    pub async fn eval(&mut self, expression: &str) -> Result<Value> {
        let result = self
            .send("Runtime.evaluate", json!({ "expression": expression, "returnByValue": true, "awaitPromise": true }))
            .await?;
        if let Some(exception) = result.get("exceptionDetails") {
            bail!("{expression}: {exception}");
        }
        Ok(result["result"]["value"].clone())
    }

    /// The page's visible text.
    pub async fn text(&mut self) -> Result<String> {
        Ok(self.eval("document.body ? document.body.innerText : ''").await?.as_str().unwrap_or_default().to_owned())
    }

    /// Polls `expression` until it is true.
    pub async fn wait_for(&mut self, what: &str, timeout: Duration, expression: &str) -> Result<()> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            if self.eval(expression).await? == Value::Bool(true) {
                return Ok(());
            }
            if tokio::time::Instant::now() >= deadline {
                bail!("timed out after {timeout:?} waiting for {what}; the page shows:\n{}", self.text().await?);
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Waits until the page's visible text contains every one of `needles`, and returns it.
    pub async fn wait_for_text(&mut self, needles: &[&str], timeout: Duration) -> Result<String> {
        // Between a click and the next page there may be no body yet.
        let mut checks = vec!["!!document.body".to_owned()];
        checks.extend(needles.iter().map(|n| format!("document.body.innerText.includes({})", json!(n))));
        self.wait_for(&format!("{needles:?}"), timeout, &checks.join(" && ")).await?;
        self.text().await
    }

    /// Clicks the first element `selector` matches (a real mouse click at its centre, so focus
    /// and form submission happen as for a person).
    pub async fn click(&mut self, selector: &str) -> Result<()> {
        let at = self.press(selector).await?;
        self.release(at).await
    }

    /// Presses the mouse button at the centre of the first element `selector` matches, and
    /// returns where ([`Browser::release`] lets it go there: a click).
    pub async fn press(&mut self, selector: &str) -> Result<(f64, f64)> {
        let found = self
            .eval(&format!(
                "(() => {{ const e = document.querySelector({}); if (!e) return null; e.scrollIntoView({{block: 'center'}}); \
                 const r = e.getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; }})()",
                json!(selector)
            ))
            .await?;
        let (Some(x), Some(y)) = (found[0].as_f64(), found[1].as_f64()) else { bail!("nothing matches {selector}") };
        self.mouse("mousePressed", (x, y)).await?;
        Ok((x, y))
    }

    /// Lets the mouse button go at `at`.
    pub async fn release(&mut self, at: (f64, f64)) -> Result<()> {
        self.mouse("mouseReleased", at).await
    }

    async fn mouse(&mut self, kind: &str, (x, y): (f64, f64)) -> Result<()> {
        self.send(
            "Input.dispatchMouseEvent",
            json!({ "type": kind, "x": x, "y": y, "button": "left", "clickCount": 1 }),
        )
        .await?;
        Ok(())
    }

    /// Presses Tab `times` times and returns the focused element's text (keyboard navigation).
    pub async fn tab(&mut self, times: usize) -> Result<String> {
        for _ in 0..times {
            for kind in ["keyDown", "keyUp"] {
                self.send(
                    "Input.dispatchKeyEvent",
                    json!({ "type": kind, "key": "Tab", "code": "Tab", "windowsVirtualKeyCode": 9 }),
                )
                .await?;
            }
        }
        Ok(self
            .eval("document.activeElement ? document.activeElement.innerText || document.activeElement.id : ''")
            .await?
            .as_str()
            .unwrap_or_default()
            .to_owned())
    }

    /// A PNG of the whole page, written to `path`.
    pub async fn screenshot(&mut self, path: &Path) -> Result<()> {
        let shot =
            self.send("Page.captureScreenshot", json!({ "format": "png", "captureBeyondViewport": true })).await?;
        let data = shot["data"].as_str().context("screenshot data")?;
        let bytes = base64::engine::general_purpose::STANDARD.decode(data)?;
        std::fs::write(path, bytes).with_context(|| format!("writing {}", path.display()))
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
