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

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use openssl::asn1::Asn1Time;
    use openssl::bn::BigNum;
    use openssl::hash::MessageDigest;
    use openssl::pkey::{PKey, Private};
    use openssl::rsa::Rsa;
    use openssl::x509::extension::{BasicConstraints, SubjectAlternativeName};
    use openssl::x509::{X509Builder, X509NameBuilder};

    /// A CA and a leaf for `names` signed by it (PEM).
    pub(crate) fn ca_and_leaf(names: &[&str]) -> (X509, PKey<Private>, X509, PKey<Private>) {
        let mk_key = || PKey::from_rsa(Rsa::generate(2048).unwrap()).unwrap();
        let name = |cn: &str| {
            let mut n = X509NameBuilder::new().unwrap();
            n.append_entry_by_text("CN", cn).unwrap();
            n.build()
        };
        let ca_key = mk_key();
        let mut b = X509Builder::new().unwrap();
        b.set_version(2).unwrap();
        b.set_serial_number(&BigNum::from_u32(1).unwrap().to_asn1_integer().unwrap()).unwrap();
        b.set_subject_name(&name("test ca")).unwrap();
        b.set_issuer_name(&name("test ca")).unwrap();
        b.set_pubkey(&ca_key).unwrap();
        b.set_not_before(&Asn1Time::days_from_now(0).unwrap()).unwrap();
        b.set_not_after(&Asn1Time::days_from_now(2).unwrap()).unwrap();
        b.append_extension(BasicConstraints::new().critical().ca().build().unwrap()).unwrap();
        b.sign(&ca_key, MessageDigest::sha256()).unwrap();
        let ca = b.build();

        let leaf_key = mk_key();
        let mut b = X509Builder::new().unwrap();
        b.set_version(2).unwrap();
        b.set_serial_number(&BigNum::from_u32(2).unwrap().to_asn1_integer().unwrap()).unwrap();
        b.set_subject_name(&name(names[0])).unwrap();
        b.set_issuer_name(ca.subject_name()).unwrap();
        b.set_pubkey(&leaf_key).unwrap();
        b.set_not_before(&Asn1Time::days_from_now(0).unwrap()).unwrap();
        b.set_not_after(&Asn1Time::days_from_now(2).unwrap()).unwrap();
        let mut san = SubjectAlternativeName::new();
        for n in names {
            if n.parse::<std::net::IpAddr>().is_ok() {
                san.ip(n);
            } else {
                san.dns(n);
            }
        }
        let san = san.build(&b.x509v3_context(Some(&ca), None)).unwrap();
        b.append_extension(san).unwrap();
        b.sign(&ca_key, MessageDigest::sha256()).unwrap();
        (ca, ca_key, b.build(), leaf_key)
    }

    #[test]
    fn verifies_leaf_against_bundle_and_host() {
        let (ca, _, leaf, _) = ca_and_leaf(&["git.internal", "127.0.0.1"]);
        let (other_ca, _, _, _) = ca_and_leaf(&["x"]);
        let bundle = CaBundle::parse(&ca.to_pem().unwrap()).unwrap();
        let der = leaf.to_der().unwrap();
        bundle.verifies(&der, "git.internal").unwrap();
        bundle.verifies(&der, "127.0.0.1").unwrap();
        assert!(bundle.verifies(&der, "evil.example").is_err());
        let other = CaBundle::parse(&other_ca.to_pem().unwrap()).unwrap();
        assert!(other.verifies(&der, "git.internal").is_err());
        assert!(CaBundle::parse(b"not pem").is_err());
    }
}
