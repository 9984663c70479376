//! `ca.crt` support for HTTPS remotes.
//!
//! libgit2's trust store is process-global, so a per-ApplySet CA cannot be
//! installed there. Instead, the certificate-check callback verifies the
//! server's leaf certificate against the CAs of `ca.crt` (plus any
//! intermediates in it) and the host name; if that fails, libgit2's own
//! verification against the system roots decides (so `ca.crt` adds to the
//! system roots, as in Flux).

use openssl::stack::Stack;
use openssl::x509::store::X509StoreBuilder;
use openssl::x509::verify::X509VerifyParam;
use openssl::x509::{X509, X509StoreContext};

/// A `ca.crt` that holds no usable certificate.
#[derive(Debug, Clone, thiserror::Error)]
pub enum CaError {
    #[error("ca.crt is not PEM certificates")]
    NotPem(#[source] openssl::error::ErrorStack),
    #[error("ca.crt holds no certificate")]
    Empty,
}

/// Why a server certificate is not trusted.
#[derive(Debug, thiserror::Error)]
pub(crate) enum VerifyError {
    #[error("server certificate unreadable")]
    Unreadable(#[source] openssl::error::ErrorStack),
    /// It does not chain to the bundle or does not name the host (OpenSSL's reason).
    #[error("{0}")]
    Untrusted(String),
    /// OpenSSL failed to set up the check.
    #[error(transparent)]
    OpenSsl(#[from] openssl::error::ErrorStack),
}

/// Trusted CAs from a Secret's `ca.crt`.
#[derive(Clone)]
pub(crate) struct CaBundle {
    certs: Vec<X509>,
}

impl CaBundle {
    pub(crate) fn parse(pem: &[u8]) -> Result<CaBundle, CaError> {
        let certs = X509::stack_from_pem(pem).map_err(CaError::NotPem)?;
        if certs.is_empty() {
            return Err(CaError::Empty);
        }
        Ok(CaBundle { certs })
    }

    /// The CAs, to trust them on a connection of our own (the redirect
    /// check) on top of the system roots, as the git transport does.
    pub(crate) fn certs(&self) -> &[X509] {
        &self.certs
    }

    /// Whether the DER leaf certificate `leaf` presented by `host` chains to
    /// one of our CAs and names `host`.
    pub(crate) fn verifies(&self, leaf: &[u8], host: &str) -> Result<(), VerifyError> {
        let leaf = X509::from_der(leaf).map_err(VerifyError::Unreadable)?;
        let mut store = X509StoreBuilder::new()?;
        for c in &self.certs {
            store.add_cert(c.clone())?;
        }
        let mut param = X509VerifyParam::new()?;
        let host = host.trim_start_matches('[').trim_end_matches(']');
        match host.parse::<std::net::IpAddr>() {
            Ok(ip) => param.set_ip(ip)?,
            Err(_) => param.set_host(host)?,
        }
        store.set_param(&param)?;
        let store = store.build();
        let chain = Stack::new()?;
        let mut ctx = X509StoreContext::new()?;
        ctx.init(&store, &leaf, &chain, |c| {
            let ok = c.verify_cert()?;
            Ok(if ok { Ok(()) } else { Err(VerifyError::Untrusted(c.error().error_string().to_string())) })
        })?
    }
}

// The unit tests use the integration tests' PKI builder; they need only part of it.
#[cfg(test)]
#[allow(dead_code)]
#[path = "../../tests/support/pki.rs"]
mod pki;

#[cfg(test)]
mod tests {
    use super::pki::ca_and_leaf;
    use super::*;

    #[test]
    fn verifies_leaf_against_bundle_and_host() {
        let ours = ca_and_leaf(&["git.internal", "127.0.0.1"]);
        let other = ca_and_leaf(&["x"]);
        let bundle = CaBundle::parse(&ours.ca.to_pem().unwrap()).unwrap();
        let der = ours.leaf.to_der().unwrap();
        bundle.verifies(&der, "git.internal").unwrap();
        bundle.verifies(&der, "127.0.0.1").unwrap();
        assert!(bundle.verifies(&der, "evil.example").is_err());
        let other = CaBundle::parse(&other.ca.to_pem().unwrap()).unwrap();
        assert!(other.verifies(&der, "git.internal").is_err());
        assert!(CaBundle::parse(b"not pem").is_err());
    }
}
