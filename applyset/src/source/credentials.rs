//! Credentials from a Kubernetes Secret's `data`, wrapped so that they never
//! show up in `Debug` output, logs or error messages.

use std::collections::BTreeMap;
use std::fmt;

use super::error::SourceError;

/// Secret bytes. `Debug` prints `<redacted>`; the memory is zeroed on drop.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(Vec<u8>);

impl Secret {
    pub fn new(bytes: impl Into<Vec<u8>>) -> Self {
        Secret(bytes.into())
    }

    /// The secret bytes. Only to be handed to libgit2.
    pub fn expose(&self) -> &[u8] {
        &self.0
    }

    pub(crate) fn expose_str(&self) -> Option<&str> {
        std::str::from_utf8(&self.0).ok()
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

impl Drop for Secret {
    #[allow(unsafe_code)]
    fn drop(&mut self) {
        for b in self.0.iter_mut() {
            // SAFETY: `b` is a valid, aligned, exclusive reference.
            unsafe { std::ptr::write_volatile(b, 0) };
        }
    }
}

/// Authentication material for one repository, built from the Secret named
/// by `source.secretRef`.
///
/// Recognised keys (as Flux's GitRepository):
/// - HTTPS: `username` + `password` (basic auth) or `bearerToken`
///   (`Authorization: Bearer`), optionally `ca.crt` (PEM, extra trusted CAs
///   on top of the system roots).
/// - SSH: `identity` (private key, PEM or OpenSSH format), `known_hosts`
///   (required: the host key is always checked), optionally `identity.pub`,
///   `password` (the key's passphrase) and `username` (default: the URL's user,
///   else `git`).
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Credentials {
    pub username: Option<String>,
    pub password: Option<Secret>,
    pub bearer_token: Option<Secret>,
    pub identity: Option<Secret>,
    pub identity_pub: Option<String>,
    pub known_hosts: Option<String>,
    pub ca_cert: Option<Vec<u8>>,
    /// `spec.source.proxySecretRef`'s proxy (read from its own Secret).
    pub proxy: Option<super::proxy::ProxySettings>,
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let set = |o: bool| if o { "<redacted>" } else { "<none>" };
        f.debug_struct("Credentials")
            .field("username", &self.username)
            .field("password", &set(self.password.is_some()))
            .field("bearer_token", &set(self.bearer_token.is_some()))
            .field("identity", &set(self.identity.is_some()))
            .field("known_hosts", &self.known_hosts.as_ref().map(|k| k.lines().count()))
            .field("ca_cert", &self.ca_cert.as_ref().map(|c| c.len()))
            .field("proxy", &self.proxy)
            .finish()
    }
}

impl Credentials {
    /// A digest of every value, so that two ApplySets share a fetch only when they would fetch
    /// with the same secret content (never through another tenant's credentials).
    pub(crate) fn digest(&self) -> [u8; 32] {
        let mut framed = crate::digest::Framed::default();
        framed
            .optional(self.username.as_deref().map(str::as_bytes))
            .optional(self.password.as_ref().map(Secret::expose))
            .optional(self.bearer_token.as_ref().map(Secret::expose))
            .optional(self.identity.as_ref().map(Secret::expose))
            .optional(self.identity_pub.as_deref().map(str::as_bytes))
            .optional(self.known_hosts.as_deref().map(str::as_bytes))
            .optional(self.ca_cert.as_deref());
        if let Some(proxy) = &self.proxy {
            for part in proxy.digest_parts() {
                framed.value(part);
            }
        }
        framed.finish()
    }

    /// These credentials, reaching the remote through `proxy`.
    pub fn with_proxy(mut self, proxy: super::proxy::ProxySettings) -> Self {
        self.proxy = Some(proxy);
        self
    }

    /// HTTPS basic auth.
    pub fn basic(username: impl Into<String>, password: impl Into<Vec<u8>>) -> Self {
        Credentials { username: Some(username.into()), password: Some(Secret::new(password)), ..Default::default() }
    }

    /// HTTPS bearer token.
    pub fn bearer(token: impl Into<Vec<u8>>) -> Self {
        Credentials { bearer_token: Some(Secret::new(token)), ..Default::default() }
    }

    /// SSH deploy key plus the `known_hosts` lines the server must match.
    pub fn ssh(identity: impl Into<Vec<u8>>, known_hosts: impl Into<String>) -> Self {
        Credentials {
            identity: Some(Secret::new(identity)),
            known_hosts: Some(known_hosts.into()),
            ..Default::default()
        }
    }

    /// Build from a Secret's `data` (values already base64-decoded, as
    /// k8s-openapi's `ByteString` holds them). Unknown keys are ignored.
    pub fn from_secret_data(data: &BTreeMap<String, Vec<u8>>) -> Result<Self, SourceError> {
        let text = |key: &str| -> Result<Option<String>, SourceError> {
            match data.get(key) {
                None => Ok(None),
                Some(v) => String::from_utf8(v.clone())
                    .map(|s| Some(s.trim_end_matches(['\n', '\r']).to_string()))
                    .map_err(|_| SourceError::invalid(format!("secret key {key:?} is not UTF-8"))),
            }
        };
        let secret = |key: &str| -> Result<Option<Secret>, SourceError> {
            match data.get(key) {
                None => Ok(None),
                Some(v) => {
                    let s = std::str::from_utf8(v)
                        .map_err(|_| SourceError::invalid(format!("secret key {key:?} is not UTF-8")))?;
                    Ok(Some(Secret::new(s.trim_end_matches(['\n', '\r']).as_bytes().to_vec())))
                }
            }
        };
        let creds = Credentials {
            username: text("username")?,
            password: secret("password")?,
            bearer_token: secret("bearerToken")?,
            // Keys keep their trailing newline: libssh2 wants it.
            identity: data.get("identity").map(|v| Secret::new(v.clone())),
            identity_pub: text("identity.pub")?,
            known_hosts: text("known_hosts")?,
            ca_cert: data.get("ca.crt").cloned(),
            proxy: None,
        };
        if creds.bearer_token.is_some() && creds.password.is_some() && creds.identity.is_none() {
            return Err(SourceError::invalid("secret has both bearerToken and password: set only one"));
        }
        if creds.password.is_some() && creds.username.is_none() && creds.identity.is_none() {
            return Err(SourceError::invalid("secret has a password but no username"));
        }
        Ok(creds)
    }

    /// Every secret value as text, for a redaction layer: the password (or
    /// the SSH key's passphrase), the bearer token, the Basic
    /// `Authorization` value (base64 of `username:password`), and the SSH
    /// private key: its whole text and each line of its body. Values may be
    /// short; a redactor decides what is too short to replace.
    pub fn secret_values(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        let mut push = |s: &str| {
            let s = s.trim_end_matches(['\n', '\r']);
            if !s.is_empty() && !out.iter().any(|o| o == s) {
                out.push(s.to_string());
            }
        };
        let proxy_password = self.proxy.as_ref().and_then(|p| p.password.as_ref());
        for secret in [&self.password, &self.bearer_token, &proxy_password.cloned()].into_iter().flatten() {
            if let Some(s) = secret.expose_str() {
                push(s);
            }
        }
        if let (Some(user), Some(password)) = (&self.username, &self.password)
            && self.identity.is_none()
        {
            let mut pair = format!("{user}:").into_bytes();
            pair.extend_from_slice(password.expose());
            push(&openssl::base64::encode_block(&pair));
        }
        if let Some(key) = self.identity.as_ref().and_then(|k| k.expose_str()) {
            push(key);
            // A partial dump (one line of a log) must not show the key either.
            for line in key.lines().map(str::trim) {
                if !line.starts_with("-----") && !line.contains(':') && line.len() >= 16 {
                    push(line);
                }
            }
        }
        out
    }

    /// The values to remove from messages coming from libgit2 or servers
    /// (long enough that replacing them does not mangle the message).
    pub(crate) fn secret_strings(&self) -> Vec<String> {
        self.secret_values().into_iter().filter(|s| s.len() >= 3).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_is_redacted() {
        let mut data = BTreeMap::new();
        data.insert("username".to_string(), b"alice".to_vec());
        data.insert("password".to_string(), b"hunter2-very-secret\n".to_vec());
        let c = Credentials::from_secret_data(&data).unwrap();
        assert_eq!(c.password.as_ref().unwrap().expose(), b"hunter2-very-secret");
        let dbg = format!("{c:?} {:?}", c.password);
        assert!(!dbg.contains("hunter2"), "{dbg}");
        assert!(dbg.contains("<redacted>"));

        let t = Credentials::bearer("tok-123456");
        assert!(!format!("{t:?}").contains("tok-123456"));
        let s = Credentials::ssh(b"-----BEGIN OPENSSH PRIVATE KEY-----".to_vec(), "h ssh-ed25519 AAAA");
        assert!(!format!("{s:?}").contains("PRIVATE"));
    }

    #[test]
    fn secret_values_cover_every_secret() {
        let basic = Credentials::basic("deployer", "hunter2-very-secret");
        let values = basic.secret_values();
        assert!(values.contains(&"hunter2-very-secret".to_string()), "{values:?}");
        let header = openssl::base64::encode_block(b"deployer:hunter2-very-secret");
        assert!(values.contains(&header), "the Basic header value: {values:?}");
        assert!(!values.contains(&"deployer".to_string()), "a user name is no secret");

        assert_eq!(Credentials::bearer("tok-123456").secret_values(), ["tok-123456"]);

        let key = "-----BEGIN OPENSSH PRIVATE KEY-----\n\
                   b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n\
                   QyNTUxOQAAACBZ\n\
                   -----END OPENSSH PRIVATE KEY-----\n";
        let mut ssh = Credentials::ssh(key.as_bytes().to_vec(), "h ssh-ed25519 AAAA");
        ssh.password = Some(Secret::new(b"key-passphrase".to_vec()));
        ssh.username = Some("git".into());
        let values = ssh.secret_values();
        assert!(values.contains(&key.trim_end().to_string()), "{values:?}");
        assert!(values.contains(&"b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW".to_string()));
        assert!(values.contains(&"key-passphrase".to_string()));
        assert!(!values.iter().any(|v| v.starts_with("-----BEGIN") && !v.contains('\n')), "{values:?}");
        assert!(!values.contains(&"git".to_string()));
        assert!(Credentials::default().secret_values().is_empty());
    }

    #[test]
    fn rejects_inconsistent_secrets() {
        let mut data = BTreeMap::new();
        data.insert("password".to_string(), b"x".to_vec());
        assert!(Credentials::from_secret_data(&data).is_err());
        data.insert("username".to_string(), b"u".to_vec());
        data.insert("bearerToken".to_string(), b"t".to_vec());
        assert!(Credentials::from_secret_data(&data).is_err());
    }
}
