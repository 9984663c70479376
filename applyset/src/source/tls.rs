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

/// Trusted CAs from a Secret's `ca.crt`.
#[derive(Clone)]
pub(crate) struct CaBundle {
    certs: Vec<X509>,
}

impl CaBundle {
    pub(crate) fn parse(pem: &[u8]) -> Result<CaBundle, String> {
        let certs = X509::stack_from_pem(pem).map_err(|e| format!("ca.crt is not PEM certificates: {e}"))?;
        if certs.is_empty() {
            return Err("ca.crt holds no certificate".to_string());
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
    pub(crate) fn verifies(&self, leaf: &[u8], host: &str) -> Result<(), String> {
        let leaf = X509::from_der(leaf).map_err(|e| format!("server certificate unreadable: {e}"))?;
        let mut store = X509StoreBuilder::new().map_err(|e| e.to_string())?;
        for c in &self.certs {
            store.add_cert(c.clone()).map_err(|e| e.to_string())?;
        }
        let mut param = X509VerifyParam::new().map_err(|e| e.to_string())?;
        let host = host.trim_start_matches('[').trim_end_matches(']');
        match host.parse::<std::net::IpAddr>() {
            Ok(ip) => param.set_ip(ip).map_err(|e| e.to_string())?,
            Err(_) => param.set_host(host).map_err(|e| e.to_string())?,
        }
        store.set_param(&param).map_err(|e| e.to_string())?;
        let store = store.build();
        let chain = Stack::new().map_err(|e| e.to_string())?;
        let mut ctx = X509StoreContext::new().map_err(|e| e.to_string())?;
        ctx.init(&store, &leaf, &chain, |c| {
            let ok = c.verify_cert()?;
            Ok(if ok { Ok(()) } else { Err(c.error().error_string().to_string()) })
        })
        .map_err(|e| e.to_string())?
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
