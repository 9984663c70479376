//! `spec.decryption`: the age identities of the Secret it names (Flux's convention: each
//! `*.agekey` entry holds identities), read as the identity the ApplySet applies with, or the
//! refusal of encrypted files when the field is not set.

use k8s_openapi::api::core::v1::Secret;
use kube::Api;

use super::api::ApplySet;
use crate::causes::with_causes;
use crate::cluster::Cluster;
use crate::cluster::list::error_text;
use crate::manifest::decryption::Decryption;
use crate::operator::reconcile::Stage;
use crate::operator::reconcile::StepError;
use crate::sops::Keyring;

/// What a refusal says to do.
const HOW: &str = "set spec.decryption: {provider: sops, secretRef: {name: <a Secret with *.agekey entries>}}";

/// The suffix of the entries that hold age identities.
const AGE_KEY_SUFFIX: &str = ".agekey";

/// How the run treats SOPS-encrypted files: decrypted with the Secret's identities under
/// `spec.decryption`, refused without it.
pub async fn for_applyset(applyset: &ApplySet, cluster: &Cluster) -> Result<Decryption, StepError> {
    let Some(spec) = &applyset.spec.decryption else { return Ok(Decryption::refusing(HOW)) };
    let Some(reference) = &spec.secret_ref else {
        return Err(StepError::new(
            Stage::InvalidSpec,
            "spec.decryption.secretRef is required: applyset decrypts with the age identities of a Secret (its *.agekey entries), not with a cloud KMS"
                .to_owned(),
        ));
    };
    let namespace = applyset.namespace_or_default();
    let place = format!("spec.decryption.secretRef Secret {namespace}/{}", reference.name);
    let api: Api<Secret> = Api::namespaced(cluster.client().clone(), &namespace);
    let secret = match api.get_opt(&reference.name).await {
        Ok(Some(secret)) => secret,
        Ok(None) => {
            return Err(StepError::new(Stage::Build, format!("{place}: not found; nothing was applied or pruned")));
        }
        Err(error) => {
            let message = format!("{place}: {}; nothing was applied or pruned", error_text(&error));
            return Err(StepError::caused(Stage::Build, message, error));
        }
    };
    keyring(&place, &secret)
        .map(Decryption::with_keys)
        .map_err(|message| StepError::new(Stage::Build, format!("{message}; nothing was applied or pruned")))
}

/// The identities of every `*.agekey` entry of `secret` (`place` names it in errors).
pub(crate) fn keyring(place: &str, secret: &Secret) -> Result<Keyring, String> {
    let mut keys = Keyring::new();
    for (name, value) in secret.data.iter().flatten() {
        if !name.ends_with(AGE_KEY_SUFFIX) {
            continue;
        }
        let origin = format!("{place} key {name}");
        let text = std::str::from_utf8(&value.0).map_err(|_| format!("{origin}: is not UTF-8 text"))?;
        keys.add_identity_file(&origin, text).map_err(|e| with_causes(&e))?;
    }
    if keys.is_empty() {
        return Err(format!(
            "{place}: holds no *{AGE_KEY_SUFFIX} entry (age identities); applyset decrypts with age keys only"
        ));
    }
    Ok(keys)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use k8s_openapi::ByteString;

    use super::*;

    fn secret(entries: &[(&str, &str)]) -> Secret {
        let data = entries.iter().map(|(k, v)| (k.to_string(), ByteString(v.as_bytes().to_vec()))).collect();
        Secret { data: Some(data), ..Secret::default() }
    }

    #[test]
    fn agekey_entries_hold_the_identities() {
        let identity = "AGE-SECRET-KEY-15PENKN45KCM8Z5CQLGCKGLRN9F9KCRW6NN04HCAW0R992ZKNH8VQ8LCWMW";
        let keys = keyring("S", &secret(&[("age.agekey", identity), ("other", "ignored")])).unwrap();
        assert_eq!(keys.recipients(), ["age1fnk8u72n9qt55zqt3ulccpz3na2ppl8sak7dlwfhknynjv4sk46q5kwtmw".to_owned()]);
        let none = keyring("Secret ns/keys", &secret(&[("identity.asc", "pgp")])).unwrap_err();
        assert_eq!(
            none,
            "Secret ns/keys: holds no *.agekey entry (age identities); applyset decrypts with age keys only"
        );
        let bad = keyring("Secret ns/keys", &secret(&[("a.agekey", "AGE-SECRET-KEY-1BROKEN")])).unwrap_err();
        assert!(bad.starts_with("Secret ns/keys key a.agekey: line 1 is not an age X25519 identity"), "{bad}");
        assert!(!bad.contains("BROKEN"), "{bad}");
        assert!(keyring("S", &Secret { data: Some(BTreeMap::new()), ..Secret::default() }).is_err());
    }
}
