//! `spec.decryption`: Flux's field names and conventions for SOPS-encrypted files in git.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Decrypt the source's SOPS-encrypted files before the apply (Flux's `spec.decryption`):
/// manifests, and the files a kustomization's generators read. Decrypted Secrets are applied
/// with hashed last-applied annotations whatever `spec.secrets` says, and no decrypted value is
/// written to the status, Events, logs or metrics. Without this field an encrypted file fails
/// the build: ciphertext is never applied.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Decryption {
    /// The decryption provider: `sops` (the only one, as in Flux).
    pub provider: DecryptionProvider,
    /// A Secret of the ApplySet's namespace, read with the identity the ApplySet applies with,
    /// whose `*.agekey` entries each hold age X25519 identities (`age-keygen` output), as in
    /// Flux. Required here: applyset decrypts with age keys only (no cloud KMS, PGP or Vault).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<crate::source::SecretRef>,
}

#[derive(Deserialize, Serialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum DecryptionProvider {
    Sops,
}
