//! The plain, serde-derivable spec types (`spec.source` of an ApplySet) and
//! their validation.

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::error::SourceError;
use super::url::scrub_one_url;

/// `spec.source`: where the manifests come from.
#[derive(Deserialize, Serialize, Clone, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SourceSpec {
    /// Repository URL: `https://`, `ssh://`, scp-like `git@host:path`,
    /// `file://` or a local path.
    pub url: String,
    /// Which commit to use. Without it, the remote's default branch (HEAD).
    #[serde(rename = "ref", default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<GitRef>,
    /// Directory inside the repository holding the manifests (default: the
    /// repository root). Must stay inside the repository.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Secret in the ApplySet's namespace with the credentials.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<SecretRef>,
    /// Secret in the ApplySet's namespace naming the HTTP(S) proxy the repository is reached
    /// through, as Flux's GitRepository has it: `address` (`http://proxy.example:3128`), and
    /// optionally `username` and `password`. Unset: the controller's `HTTPS_PROXY`,
    /// `ALL_PROXY` and `NO_PROXY` environment. For https:// URLs only (a CONNECT tunnel).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proxy_secret_ref: Option<SecretRef>,
}

// Manual Debug: the URL may carry a password.
impl fmt::Debug for SourceSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SourceSpec")
            .field("url", &scrub_one_url(&self.url))
            .field("reference", &self.reference)
            .field("path", &self.path)
            .field("secret_ref", &self.secret_ref)
            .field("proxy_secret_ref", &self.proxy_secret_ref)
            .finish()
    }
}

/// `spec.source.ref`: exactly one of `branch`, `tag`, `semver`, `commit`;
/// `commit` may be combined with `branch`.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq, Eq, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GitRef {
    /// Branch name, e.g. `main`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// Tag name, e.g. `v1.2.3`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tag: Option<String>,
    /// Semver range over the tags, e.g. `>=1.2.0 <2`; the highest matching
    /// tag wins. Tags may have a leading `v`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub semver: Option<String>,
    /// Full commit SHA (40 hex digits). With `branch`, the commit must be on
    /// that branch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
}

/// `spec.source.secretRef`.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SecretRef {
    /// The Secret's name, in the ApplySet's namespace.
    pub name: String,
}

/// A validated ref.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum RefRequest {
    /// The remote's HEAD (its default branch).
    DefaultBranch,
    Branch(String),
    Tag(String),
    Semver {
        range: String,
        req: super::semver_ref::Range,
    },
    Commit {
        sha: String,
        branch: Option<String>,
    },
}

impl RefRequest {
    pub(crate) fn from_spec(r: Option<&GitRef>) -> Result<RefRequest, SourceError> {
        let Some(r) = r else {
            return Ok(RefRequest::DefaultBranch);
        };
        let non_empty = |field: &str, v: &Option<String>| -> Result<Option<String>, SourceError> {
            match v {
                Some(s) if s.trim().is_empty() => Err(SourceError::invalid(format!("ref.{field} is empty"))),
                Some(s) => Ok(Some(s.trim().to_string())),
                None => Ok(None),
            }
        };
        let branch = non_empty("branch", &r.branch)?;
        let tag = non_empty("tag", &r.tag)?;
        let semver = non_empty("semver", &r.semver)?;
        let commit = non_empty("commit", &r.commit)?;
        for (field, name) in [("branch", &branch), ("tag", &tag)] {
            if let Some(name) = name {
                check_ref_name(field, name)?;
            }
        }
        match (branch, tag, semver, commit) {
            (None, None, None, None) => Ok(RefRequest::DefaultBranch),
            (Some(b), None, None, None) => Ok(RefRequest::Branch(b)),
            (None, Some(t), None, None) => Ok(RefRequest::Tag(t)),
            (None, None, Some(s), None) => {
                let req = super::semver_ref::Range::parse(&s)?;
                Ok(RefRequest::Semver { range: s, req })
            }
            (branch, None, None, Some(c)) => {
                if c.len() != 40 || !c.bytes().all(|b| b.is_ascii_hexdigit()) {
                    return Err(SourceError::invalid(format!("ref.commit {c:?} is not a full 40-hex-digit SHA-1")));
                }
                Ok(RefRequest::Commit { sha: c.to_ascii_lowercase(), branch })
            }
            _ => Err(SourceError::invalid(
                "ref must set exactly one of branch, tag, semver, commit (commit may be combined with branch)",
            )),
        }
    }

    /// How the ref is shown in messages.
    pub(crate) fn describe(&self) -> String {
        match self {
            RefRequest::DefaultBranch => "default branch".to_string(),
            RefRequest::Branch(b) => format!("branch {b}"),
            RefRequest::Tag(t) => format!("tag {t}"),
            RefRequest::Semver { range, .. } => format!("semver {range}"),
            RefRequest::Commit { sha, branch: None } => format!("commit {sha}"),
            RefRequest::Commit { sha, branch: Some(b) } => format!("branch {b} commit {sha}"),
        }
    }
}

/// A conservative subset of git's ref-name rules (`git check-ref-format`),
/// enough to keep names from being refspec syntax.
fn check_ref_name(field: &str, name: &str) -> Result<(), SourceError> {
    let bad = name.starts_with('/')
        || name.ends_with('/')
        || name.ends_with('.')
        || name.ends_with(".lock")
        || name.starts_with('-')
        || name.contains("..")
        || name.contains("//")
        || name.contains("@{")
        || name == "@"
        || name.chars().any(|c| c.is_control() || c.is_whitespace() || "~^:?*[\\".contains(c));
    if bad {
        return Err(SourceError::invalid(format!("ref.{field} {name:?} is not a valid git ref name")));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serde_shape_is_camel_case() {
        let spec: SourceSpec = serde_json::from_value(serde_json::json!({
            "url": "https://example.com/r.git",
            "ref": {"branch": "main", "commit": "0123456789abcdef0123456789abcdef01234567"},
            "path": "deploy/prod",
            "secretRef": {"name": "git-auth"}
        }))
        .unwrap();
        assert_eq!(spec.reference.as_ref().unwrap().branch.as_deref(), Some("main"));
        assert_eq!(spec.secret_ref.as_ref().unwrap().name, "git-auth");
        let back = serde_json::to_value(&spec).unwrap();
        assert_eq!(back["secretRef"]["name"], "git-auth");
        assert_eq!(back["ref"]["branch"], "main");
        assert!(back["ref"].get("tag").is_none());
        let schema = serde_json::to_value(schemars::schema_for!(SourceSpec)).unwrap();
        assert!(schema["properties"]["secretRef"].is_object(), "{schema}");
        assert!(schema["properties"]["ref"].is_object(), "{schema}");
    }

    #[test]
    fn debug_scrubs_url() {
        let spec = SourceSpec {
            url: "https://bob:s3cr3t@example.com/r.git".into(),
            reference: None,
            path: None,
            secret_ref: None,
            proxy_secret_ref: None,
        };
        assert!(!format!("{spec:?}").contains("s3cr3t"));
    }

    #[test]
    fn validates_refs() {
        let r = |b: Option<&str>, t: Option<&str>, s: Option<&str>, c: Option<&str>| GitRef {
            branch: b.map(Into::into),
            tag: t.map(Into::into),
            semver: s.map(Into::into),
            commit: c.map(Into::into),
        };
        let sha = "0123456789ABCDEF0123456789abcdef01234567";
        assert_eq!(RefRequest::from_spec(None).unwrap(), RefRequest::DefaultBranch);
        assert_eq!(
            RefRequest::from_spec(Some(&r(Some("main"), None, None, None))).unwrap(),
            RefRequest::Branch("main".into())
        );
        assert!(matches!(
            RefRequest::from_spec(Some(&r(Some("main"), None, None, Some(sha)))).unwrap(),
            RefRequest::Commit { ref sha, branch: Some(_) } if sha == &sha.to_ascii_lowercase()
        ));
        for bad in [
            r(Some("a"), Some("b"), None, None),
            r(None, Some("v1"), None, Some(sha)),
            r(None, None, Some(">=1"), Some(sha)),
            r(None, None, None, Some("abc123")),
            r(Some("a b"), None, None, None),
            r(Some("a..b"), None, None, None),
            r(Some(""), None, None, None),
            r(None, None, Some("not a range"), None),
        ] {
            let err = RefRequest::from_spec(Some(&bad)).unwrap_err();
            assert_eq!(err.category(), super::super::ErrorCategory::InvalidSpec, "{bad:?}");
        }
    }
}
