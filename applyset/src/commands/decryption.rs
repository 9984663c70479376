//! `--decryption-key FILE` (`apply`, `diff`, `build`, `plan`): SOPS-encrypted files are
//! decrypted with the age identities of FILE, and Secrets are applied with hashed
//! last-applied annotations under a key derived from those identities, so that no decrypted
//! value is recorded in clear. Without the flag, `apply` and `diff` read files as kubectl
//! does.

use std::path::PathBuf;
use std::sync::Arc;

use super::error::CliError;
use crate::apply::last_applied::{HashedSecrets, LastAppliedCodecRef};
use crate::manifest::LoadedObject;
use crate::manifest::decryption::Decryption;
use crate::sops::Keyring;

/// The decryption of `--decryption-key FILE…`, or `None` without the flag.
pub fn from_key_files(files: &[PathBuf]) -> Result<Option<Decryption>, CliError> {
    if files.is_empty() {
        return Ok(None);
    }
    let mut keys = Keyring::new();
    for file in files {
        let text = std::fs::read_to_string(file)
            .map_err(|source| CliError::DecryptionKeyRead { file: file.clone(), source })?;
        keys.add_identity_file(&file.display().to_string(), &text)
            .map_err(|error| CliError::DecryptionKey { error })?;
    }
    Ok(Some(Decryption::with_keys(keys)))
}

/// With decryption: Secrets' `stringData` folded into `data` and their annotation recorded as
/// hashes (the controller's `spec.secrets: Hashed`), under a key derived from the identities.
pub fn hashed_annotations(
    decryption: Option<&Decryption>,
    objects: &mut [LoadedObject],
) -> Option<LastAppliedCodecRef> {
    let keys = decryption?.keys()?;
    let codec = HashedSecrets::new(&keys.annotation_key()[..]).ok()?;
    for object in objects {
        crate::apply::last_applied::fold_string_data(&mut object.object);
    }
    Some(LastAppliedCodecRef(Arc::new(codec)))
}
