//! A throwaway test PKI: a CA and a server certificate it signed. Shared by the integration
//! tests (through `tests/git`) and by the `ca.crt` unit tests (`src/source/tls.rs`, which
//! includes this file by path), so there is one builder.

use openssl::asn1::Asn1Time;
use openssl::bn::BigNum;
use openssl::ec::{EcGroup, EcKey};
use openssl::hash::MessageDigest;
use openssl::nid::Nid;
use openssl::pkey::{PKey, Private};
use openssl::x509::extension::{BasicConstraints, SubjectAlternativeName};
use openssl::x509::{X509, X509Builder, X509Name, X509NameBuilder};

/// A CA, and a leaf it signed for `names` (DNS names or IP addresses; the first is also the
/// common name). Valid from now for two days.
pub struct CaAndLeaf {
    pub ca: X509,
    pub leaf: X509,
    pub leaf_key: PKey<Private>,
}

pub fn ca_and_leaf(names: &[&str]) -> CaAndLeaf {
    let ca_key = new_key();
    let mut b = X509Builder::new().unwrap();
    b.set_version(2).unwrap();
    b.set_serial_number(&BigNum::from_u32(1).unwrap().to_asn1_integer().unwrap()).unwrap();
    b.set_subject_name(&common_name("applyset test CA")).unwrap();
    b.set_issuer_name(&common_name("applyset test CA")).unwrap();
    b.set_pubkey(&ca_key).unwrap();
    b.set_not_before(&Asn1Time::days_from_now(0).unwrap()).unwrap();
    b.set_not_after(&Asn1Time::days_from_now(2).unwrap()).unwrap();
    b.append_extension(BasicConstraints::new().critical().ca().build().unwrap()).unwrap();
    b.sign(&ca_key, MessageDigest::sha256()).unwrap();
    let ca = b.build();

    let leaf_key = new_key();
    let mut b = X509Builder::new().unwrap();
    b.set_version(2).unwrap();
    b.set_serial_number(&BigNum::from_u32(2).unwrap().to_asn1_integer().unwrap()).unwrap();
    b.set_subject_name(&common_name(names[0])).unwrap();
    b.set_issuer_name(ca.subject_name()).unwrap();
    b.set_pubkey(&leaf_key).unwrap();
    b.set_not_before(&Asn1Time::days_from_now(0).unwrap()).unwrap();
    b.set_not_after(&Asn1Time::days_from_now(2).unwrap()).unwrap();
    let mut san = SubjectAlternativeName::new();
    for name in names {
        if name.parse::<std::net::IpAddr>().is_ok() {
            san.ip(name);
        } else {
            san.dns(name);
        }
    }
    let san = san.build(&b.x509v3_context(Some(&ca), None)).unwrap();
    b.append_extension(san).unwrap();
    b.sign(&ca_key, MessageDigest::sha256()).unwrap();
    CaAndLeaf { ca, leaf: b.build(), leaf_key }
}

fn new_key() -> PKey<Private> {
    let group = EcGroup::from_curve_name(Nid::X9_62_PRIME256V1).unwrap();
    PKey::from_ec_key(EcKey::generate(&group).unwrap()).unwrap()
}

fn common_name(cn: &str) -> X509Name {
    let mut n = X509NameBuilder::new().unwrap();
    n.append_entry_by_text("CN", cn).unwrap();
    n.build()
}
