//! The test control plane's audit log.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

/// The test control plane's audit log (`scripts/control-plane` logs every finished request at
/// level Metadata), read from a point on: which requests the apiserver answered in a window.
pub struct AuditLog {
    path: PathBuf,
    offset: u64,
}

/// One audited request.
#[derive(Debug, Clone)]
pub struct AuditedRequest {
    pub verb: String,
    pub resource: String,
    pub namespace: Option<String>,
    pub name: Option<String>,
    pub user_agent: String,
    pub uri: String,
    /// Who made it (`user.username`).
    pub user: String,
    /// Whom the request impersonated (`--as`, `--as-uid`, `--as-group`), if anyone.
    pub impersonated: Option<Impersonated>,
}

/// The `impersonatedUser` of an audited request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Impersonated {
    pub username: String,
    pub uid: Option<String>,
    pub groups: Vec<String>,
}

impl AuditedRequest {
    /// Whether the control plane made it itself (kube-controller-manager's controllers updating
    /// a Deployment's status, the scheduler, kwok): not a request of the controller under test.
    pub fn by_cluster_components(&self) -> bool {
        self.user.starts_with("system:") || self.user == "kwok-controller"
    }
}

impl AuditLog {
    /// From now on, on the control plane of `kubeconfig` (its state directory holds the log).
    pub fn from_now(kubeconfig: &Path) -> Result<AuditLog> {
        let state = kubeconfig.parent().context("the kubeconfig lies in the control plane's state directory")?;
        let path = state.join("logs/audit.log");
        let offset = std::fs::metadata(&path).with_context(|| format!("reading {}", path.display()))?.len();
        Ok(AuditLog { path, offset })
    }

    /// The requests logged since [`AuditLog::from_now`].
    pub fn requests(&self) -> Result<Vec<AuditedRequest>> {
        use std::io::{Read, Seek};
        let mut file = std::fs::File::open(&self.path)?;
        file.seek(std::io::SeekFrom::Start(self.offset))?;
        let mut text = String::new();
        file.read_to_string(&mut text)?;
        let text_of = |value: &serde_json::Value| value.as_str().map(str::to_owned);
        Ok(text
            .lines()
            .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
            .map(|event| AuditedRequest {
                verb: text_of(&event["verb"]).unwrap_or_default(),
                resource: text_of(&event["objectRef"]["resource"]).unwrap_or_default(),
                namespace: text_of(&event["objectRef"]["namespace"]),
                name: text_of(&event["objectRef"]["name"]),
                user_agent: text_of(&event["userAgent"]).unwrap_or_default(),
                uri: text_of(&event["requestURI"]).unwrap_or_default(),
                user: text_of(&event["user"]["username"]).unwrap_or_default(),
                impersonated: event.get("impersonatedUser").map(|user| Impersonated {
                    username: text_of(&user["username"]).unwrap_or_default(),
                    uid: text_of(&user["uid"]),
                    groups: user["groups"].as_array().into_iter().flatten().filter_map(text_of).collect(),
                }),
            })
            .collect())
    }
}
