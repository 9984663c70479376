//! `known_hosts` checking for SSH remotes, done by us in libgit2's
//! certificate-check callback (libgit2's own check would read
//! `~/.ssh/known_hosts` of the operator's user, which is not what we want).
//!
//! Supported: plain and hashed (`|1|salt|hash`) host entries, comma-separated
//! patterns with `*`/`?` wildcards and `!` negation, `[host]:port` for
//! non-standard ports, `@revoked` lines. `@cert-authority` lines are ignored
//! (host certificates are not supported).

use openssl::base64;
use openssl::hash::MessageDigest;
use openssl::pkey::PKey;
use openssl::sign::Signer;

/// One key line.
#[derive(Clone, Debug)]
struct Entry {
    revoked: bool,
    patterns: String,
    key_type: String,
    key: Vec<u8>,
}

/// Parsed `known_hosts` content.
#[derive(Clone, Debug, Default)]
pub(crate) struct KnownHosts {
    entries: Vec<Entry>,
}

/// The outcome of a host key check.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum HostKeyCheck {
    Trusted,
    /// Why not, for the error message (names the host and key type, never
    /// key material).
    Rejected(String),
}

/// A `known_hosts` entry of the source Secret that cannot be read (never quoting key material).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KnownHostsError {
    #[error("known_hosts line {line}: unknown marker {marker}")]
    Marker { line: usize, marker: String },
    #[error("known_hosts line {line}: expected `hosts keytype key`")]
    Fields { line: usize },
    #[error("known_hosts line {line}: key is not base64")]
    Base64 { line: usize },
    #[error("known_hosts has no host keys")]
    Empty,
}

impl KnownHosts {
    pub(crate) fn parse(text: &str) -> Result<KnownHosts, KnownHostsError> {
        let mut entries = Vec::new();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let mut fields = line.split_whitespace();
            let mut first = fields.next().unwrap_or_default();
            let mut revoked = false;
            if first.starts_with('@') {
                match first {
                    "@revoked" => revoked = true,
                    "@cert-authority" => continue,
                    other => {
                        return Err(KnownHostsError::Marker { line: n + 1, marker: other.to_owned() });
                    }
                }
                first = fields.next().unwrap_or_default();
            }
            let (Some(key_type), Some(key_b64)) = (fields.next(), fields.next()) else {
                return Err(KnownHostsError::Fields { line: n + 1 });
            };
            let key = base64::decode_block(key_b64).map_err(|_| KnownHostsError::Base64 { line: n + 1 })?;
            entries.push(Entry { revoked, patterns: first.to_string(), key_type: key_type.to_string(), key });
        }
        if entries.is_empty() {
            return Err(KnownHostsError::Empty);
        }
        Ok(KnownHosts { entries })
    }

    /// Check the key `blob` (SSH wire format, as in known_hosts) presented by
    /// `host` on `port`. When libgit2 gives only a SHA-256 of the key,
    /// `blob` is `None` and `sha256` is compared instead.
    pub(crate) fn check(&self, host: &str, port: u16, blob: Option<&[u8]>, sha256: Option<&[u8; 32]>) -> HostKeyCheck {
        let name = if port == 22 { host.to_string() } else { format!("[{host}]:{port}") };
        let same_key = |e: &Entry| match (blob, sha256) {
            (Some(b), _) => b == e.key.as_slice(),
            (None, Some(h)) => openssl::sha::sha256(&e.key) == *h,
            (None, None) => false,
        };
        let for_host: Vec<&Entry> = self.entries.iter().filter(|e| host_matches(&e.patterns, &name)).collect();
        if for_host.iter().any(|e| e.revoked && same_key(e)) {
            return HostKeyCheck::Rejected(format!("the host key of {name} is marked @revoked"));
        }
        if for_host.iter().any(|e| !e.revoked && same_key(e)) {
            return HostKeyCheck::Trusted;
        }
        if for_host.iter().all(|e| e.revoked) {
            HostKeyCheck::Rejected(format!("{name} is not in known_hosts"))
        } else {
            let types: Vec<&str> = for_host.iter().filter(|e| !e.revoked).map(|e| e.key_type.as_str()).collect();
            HostKeyCheck::Rejected(format!(
                "the host key of {name} does not match known_hosts (known key types: {})",
                types.join(", ")
            ))
        }
    }
}

fn host_matches(patterns: &str, name: &str) -> bool {
    if let Some(hashed) = patterns.strip_prefix("|1|") {
        return hashed_matches(hashed, name);
    }
    let mut matched = false;
    for p in patterns.split(',') {
        if let Some(neg) = p.strip_prefix('!') {
            if glob(&neg.to_ascii_lowercase(), &name.to_ascii_lowercase()) {
                return false;
            }
        } else if glob(&p.to_ascii_lowercase(), &name.to_ascii_lowercase()) {
            matched = true;
        }
    }
    matched
}

fn hashed_matches(hashed: &str, name: &str) -> bool {
    let Some((salt, hash)) = hashed.split_once('|') else {
        return false;
    };
    let (Ok(salt), Ok(hash)) = (base64::decode_block(salt), base64::decode_block(hash)) else {
        return false;
    };
    let Ok(key) = PKey::hmac(&salt) else {
        return false;
    };
    let Ok(mut signer) = Signer::new(MessageDigest::sha1(), &key) else {
        return false;
    };
    signer.update(name.as_bytes()).is_ok() && signer.sign_to_vec().is_ok_and(|mac| mac == hash)
}

/// `*` and `?` wildcards, as ssh's `match_pattern`.
fn glob(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    let (mut pi, mut ti) = (0, 0);
    let (mut star, mut mark) = (None, 0);
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ti;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ti = mark;
        } else {
            return false;
        }
    }
    while pi < p.len() && p[pi] == '*' {
        pi += 1;
    }
    pi == p.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY_A: &str = "AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl";
    const KEY_B: &str = "AAAAC3NzaC1lZDI1NTE5AAAAIBtmkSdzbhdc1bEt6Wx0n4i9d2z+MoOtW3ZsmTxcY8Ll";

    fn blob(k: &str) -> Vec<u8> {
        base64::decode_block(k).unwrap()
    }

    #[test]
    fn plain_and_port_entries() {
        let kh = KnownHosts::parse(&format!(
            "# comment\ngithub.com,*.example.org ssh-ed25519 {KEY_A}\n[127.0.0.1]:2222 ssh-ed25519 {KEY_B} c\n"
        ))
        .unwrap();
        assert_eq!(kh.check("github.com", 22, Some(&blob(KEY_A)), None), HostKeyCheck::Trusted);
        assert_eq!(kh.check("git.example.org", 22, Some(&blob(KEY_A)), None), HostKeyCheck::Trusted);
        assert!(matches!(kh.check("github.com", 22, Some(&blob(KEY_B)), None), HostKeyCheck::Rejected(_)));
        assert!(matches!(kh.check("gitlab.com", 22, Some(&blob(KEY_A)), None), HostKeyCheck::Rejected(_)));
        assert_eq!(kh.check("127.0.0.1", 2222, Some(&blob(KEY_B)), None), HostKeyCheck::Trusted);
        // Same host, other port: not trusted.
        assert!(matches!(kh.check("127.0.0.1", 22, Some(&blob(KEY_B)), None), HostKeyCheck::Rejected(_)));
        let sha = openssl::sha::sha256(&blob(KEY_A));
        assert_eq!(kh.check("github.com", 22, None, Some(&sha)), HostKeyCheck::Trusted);
    }

    #[test]
    fn hashed_negated_and_revoked() {
        // `ssh-keygen -H` style entry for "git.example.com".
        let salt = [7u8; 20];
        let key = PKey::hmac(&salt).unwrap();
        let mut s = Signer::new(MessageDigest::sha1(), &key).unwrap();
        s.update(b"git.example.com").unwrap();
        let mac = s.sign_to_vec().unwrap();
        let line = format!(
            "|1|{}|{} ssh-ed25519 {KEY_A}\n*.corp,!bad.corp ssh-ed25519 {KEY_B}\n@revoked * ssh-ed25519 {KEY_A}\n",
            base64::encode_block(&salt),
            base64::encode_block(&mac)
        );
        let kh = KnownHosts::parse(&line).unwrap();
        assert!(
            matches!(kh.check("git.example.com", 22, Some(&blob(KEY_A)), None), HostKeyCheck::Rejected(m) if m.contains("revoked"))
        );
        assert_eq!(kh.check("a.corp", 22, Some(&blob(KEY_B)), None), HostKeyCheck::Trusted);
        assert!(matches!(kh.check("bad.corp", 22, Some(&blob(KEY_B)), None), HostKeyCheck::Rejected(_)));
        assert!(KnownHosts::parse("").is_err());
        assert!(KnownHosts::parse("host ssh-ed25519").is_err());
        assert!(KnownHosts::parse("host ssh-ed25519 !!!").is_err());
    }

    #[test]
    fn hashed_entry_matches() {
        let salt = [9u8; 20];
        let key = PKey::hmac(&salt).unwrap();
        let mut s = Signer::new(MessageDigest::sha1(), &key).unwrap();
        s.update(b"[10.0.0.1]:2222").unwrap();
        let mac = s.sign_to_vec().unwrap();
        let kh = KnownHosts::parse(&format!(
            "|1|{}|{} ssh-ed25519 {KEY_A}",
            base64::encode_block(&salt),
            base64::encode_block(&mac)
        ))
        .unwrap();
        assert_eq!(kh.check("10.0.0.1", 2222, Some(&blob(KEY_A)), None), HostKeyCheck::Trusted);
        assert!(matches!(kh.check("10.0.0.2", 2222, Some(&blob(KEY_A)), None), HostKeyCheck::Rejected(_)));
    }
}
