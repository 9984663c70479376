//! SOPS-encrypted files among what a build reads ([`crate::sops`]): the controller with
//! `spec.decryption`, and the CLI with `--decryption-key`, decrypt them; the controller without
//! `spec.decryption` refuses them, so that ciphertext is never applied.
//!
//! Manifests are decrypted in memory as they are read ([`Decryption::file`]). A kustomization
//! reads its files itself, so the encrypted ones among them (resources, patches, generator
//! files and env files) are decrypted into a private copy of the checkout that kustomize then
//! builds ([`PrivateCopy`]): files are hard links to the checkout's (copies across file
//! systems), the decrypted ones new files readable by their owner only, and the copy is removed
//! when the build is done. Nothing clear is ever written into the checkout itself.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::sops::{self, Format, Keyring, SopsError};

/// A value SOPS writes for each encrypted leaf; a file holding one that no reader recognises
/// as SOPS-encrypted is refused rather than applied as it is.
const ENCRYPTED_MARKER: &[u8] = b"ENC[AES256_GCM,data:";

/// How a build treats SOPS-encrypted files.
#[derive(Clone)]
pub struct Decryption {
    /// `None`: refuse them.
    keys: Option<Arc<Keyring>>,
    /// What to do to decrypt (in a refusal).
    how: &'static str,
    revealed: Arc<Mutex<Revealed>>,
}

/// What decryption revealed, for the caller to keep out of its messages.
#[derive(Default)]
struct Revealed {
    cleartexts: Vec<String>,
    files: Vec<PathBuf>,
}

impl fmt::Debug for Decryption {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.keys {
            Some(keys) => write!(f, "Decryption({:?})", keys.recipients()),
            None => f.write_str("Decryption(refused)"),
        }
    }
}

/// Two decryptions are the same when they share their keys (so that `LoadOptions` compares).
impl PartialEq for Decryption {
    fn eq(&self, other: &Decryption) -> bool {
        match (&self.keys, &other.keys) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            (None, None) => self.how == other.how,
            _ => false,
        }
    }
}

impl Eq for Decryption {}

/// Why a file could not be read as a build needs it.
#[derive(Debug, thiserror::Error)]
pub enum DecryptionError {
    #[error(
        "it is encrypted with SOPS (age recipients: {recipients}) and decryption is not configured ({how}); ciphertext is never applied"
    )]
    NotConfigured { recipients: String, how: &'static str },
    #[error(
        "it holds SOPS-encrypted values (ENC[AES256_GCM,…]) but no sops metadata that can be read; ciphertext is never applied"
    )]
    Unrecognized,
    #[error("cannot be decrypted with SOPS")]
    Sops(#[from] SopsError),
}

impl Decryption {
    /// Decrypts with `keys`.
    pub fn with_keys(keys: Keyring) -> Decryption {
        Decryption { keys: Some(Arc::new(keys)), how: "", revealed: Arc::default() }
    }

    /// Refuses encrypted files, saying `how` to configure decryption.
    pub fn refusing(how: &'static str) -> Decryption {
        Decryption { keys: None, how, revealed: Arc::default() }
    }

    /// Whether files are decrypted (not refused).
    pub fn decrypts(&self) -> bool {
        self.keys.is_some()
    }

    /// The keys, when files are decrypted.
    pub fn keys(&self) -> Option<&Keyring> {
        self.keys.as_deref()
    }

    /// Every string decrypted so far.
    pub fn cleartexts(&self) -> Vec<String> {
        self.revealed.lock().unwrap_or_else(|p| p.into_inner()).cleartexts.clone()
    }

    /// The files decrypted so far, as their callers named them.
    pub fn decrypted_files(&self) -> Vec<PathBuf> {
        self.revealed.lock().unwrap_or_else(|p| p.into_inner()).files.clone()
    }

    /// `bytes` of the file `path` (read as `format`), decrypted when it is SOPS-encrypted.
    pub fn file(&self, path: &Path, bytes: Vec<u8>, format: Format) -> Result<Vec<u8>, DecryptionError> {
        let Some(envelope) = sops::open(&bytes, format)? else {
            if contains(&bytes, ENCRYPTED_MARKER) {
                return Err(DecryptionError::Unrecognized);
            }
            return Ok(bytes);
        };
        let Some(keys) = &self.keys else {
            let recipients = envelope.recipients();
            let recipients = if recipients.is_empty() { "none".to_owned() } else { recipients.join(", ") };
            return Err(DecryptionError::NotConfigured { recipients, how: self.how });
        };
        let decrypted = envelope.decrypt(keys)?;
        let mut revealed = self.revealed.lock().unwrap_or_else(|p| p.into_inner());
        revealed.cleartexts.extend(decrypted.cleartexts);
        revealed.files.push(path.to_path_buf());
        Ok(decrypted.text)
    }

    /// A manifest as kubectl reads it: JSON by its name (or, from standard input, by its first
    /// character), else YAML.
    pub fn manifest(&self, path: &Path, bytes: Vec<u8>) -> Result<Vec<u8>, DecryptionError> {
        let format = if path == Path::new("-") {
            let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
            if first == Some(&b'{') { Format::Json } else { Format::Yaml }
        } else {
            Format::of_manifest(path)
        };
        self.file(path, bytes, format)
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// A copy of a checkout in which the encrypted files a kustomization reads are decrypted;
/// removed when dropped.
#[derive(Debug)]
pub struct PrivateCopy {
    dir: PathBuf,
}

impl PrivateCopy {
    /// The copy's root.
    pub fn root(&self) -> &Path {
        &self.dir
    }
}

impl Drop for PrivateCopy {
    fn drop(&mut self) {
        // Failing to remove it leaves a private directory behind (readable by its owner only).
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Why the private copy could not be made.
#[derive(Debug, thiserror::Error)]
pub enum CopyError {
    /// `file` (relative to the checkout) is encrypted and cannot be decrypted or is refused.
    #[error("{file}")]
    File { file: String, source: DecryptionError },
    #[error("{file}: cannot be read")]
    Read { file: String, source: std::io::Error },
    #[error("making a private copy of the checkout for decryption")]
    Copy(#[source] std::io::Error),
}

/// The files of `root` that need decrypting, each with its clear text (`files`: checkout
/// relative paths and the format each is read in); empty when none is encrypted.
pub fn decrypt_files(
    root: &Path,
    files: &[(PathBuf, Format)],
    decryption: &Decryption,
) -> Result<Vec<(PathBuf, Vec<u8>)>, CopyError> {
    let mut clear = Vec::new();
    for (file, format) in files {
        let shown = file.display().to_string();
        let bytes = std::fs::read(root.join(file)).map_err(|source| CopyError::Read { file: shown.clone(), source })?;
        if !contains(&bytes, b"sops") && !contains(&bytes, ENCRYPTED_MARKER) {
            continue;
        }
        let before = bytes.clone();
        let text = decryption.file(file, bytes, *format).map_err(|source| CopyError::File { file: shown, source })?;
        if text != before {
            clear.push((file.clone(), text));
        }
    }
    Ok(clear)
}

/// A private copy of `root` with `clear` written over the files it names.
pub fn private_copy(root: &Path, clear: &[(PathBuf, Vec<u8>)]) -> Result<PrivateCopy, CopyError> {
    let dir =
        std::env::temp_dir().join(format!("applyset-decrypted-{}-{:016x}", std::process::id(), fastrand::u64(..)));
    create_private_dir(&dir).map_err(CopyError::Copy)?;
    let copy = PrivateCopy { dir };
    mirror(root, copy.root()).map_err(CopyError::Copy)?;
    for (file, text) in clear {
        let target = copy.root().join(file);
        // A hard link shares the checkout's inode: unlink it rather than write through it.
        std::fs::remove_file(&target).map_err(CopyError::Copy)?;
        write_private(&target, text).map_err(CopyError::Copy)?;
    }
    Ok(copy)
}

#[cfg(unix)]
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new().mode(0o700).create(dir)
}

#[cfg(not(unix))]
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir(dir)
}

fn write_private(path: &Path, text: &[u8]) -> std::io::Result<()> {
    use std::io::Write as _;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path)?.write_all(text)
}

/// Mirrors the tree `from` into the existing directory `to` (without `.git`): directories
/// made, files hard-linked (copied when linking fails), symbolic links kept.
fn mirror(from: &Path, to: &Path) -> std::io::Result<()> {
    let mut pending = vec![PathBuf::new()];
    while let Some(relative) = pending.pop() {
        for entry in std::fs::read_dir(from.join(&relative))? {
            let entry = entry?;
            let name = entry.file_name();
            if relative.as_os_str().is_empty() && name == ".git" {
                continue;
            }
            let path = relative.join(&name);
            let (source, target) = (from.join(&path), to.join(&path));
            let kind = entry.file_type()?;
            if kind.is_dir() {
                create_private_dir(&target)?;
                pending.push(path);
            } else if kind.is_symlink() {
                #[cfg(unix)]
                std::os::unix::fs::symlink(std::fs::read_link(&source)?, &target)?;
            } else if std::fs::hard_link(&source, &target).is_err() {
                std::fs::copy(&source, &target)?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const TESTDATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/src/sops/testdata");

    fn keys() -> Keyring {
        let mut keys = Keyring::new();
        let text = std::fs::read_to_string(Path::new(TESTDATA).join("key.txt")).unwrap();
        keys.add_identity_file("key.txt", &text).unwrap();
        keys
    }

    #[test]
    fn manifests_are_decrypted_refused_or_passed_through() {
        let encrypted = std::fs::read(Path::new(TESTDATA).join("regex.enc.yaml")).unwrap();
        let decryption = Decryption::with_keys(keys());
        let clear = decryption.manifest(Path::new("s.yaml"), encrypted.clone()).unwrap();
        assert!(String::from_utf8(clear).unwrap().contains("password: hunter2-very-secret"));
        assert!(decryption.cleartexts().contains(&"hunter2-very-secret".to_owned()));
        assert_eq!(decryption.decrypted_files(), vec![PathBuf::from("s.yaml")]);
        let plain = b"apiVersion: v1\nkind: ConfigMap\n".to_vec();
        assert_eq!(decryption.manifest(Path::new("c.yaml"), plain.clone()).unwrap(), plain);

        let refusing = Decryption::refusing("set spec.decryption");
        let error = refusing.manifest(Path::new("s.yaml"), encrypted.clone()).unwrap_err().to_string();
        assert!(error.starts_with("it is encrypted with SOPS (age recipients: age1"), "{error}");
        assert!(error.contains("set spec.decryption"), "{error}");
        let stripped = String::from_utf8(encrypted).unwrap().split("sops:").next().unwrap().to_owned();
        let error = refusing.manifest(Path::new("s.yaml"), stripped.into_bytes()).unwrap_err();
        assert!(matches!(error, DecryptionError::Unrecognized), "{error}");
    }

    #[test]
    fn the_private_copy_holds_the_clear_files_and_leaves_the_checkout_alone() {
        let root = std::env::temp_dir().join(format!("applyset-decryption-test-{}", fastrand::u64(..)));
        std::fs::create_dir_all(root.join("app/.git")).unwrap();
        std::fs::create_dir_all(root.join(".git")).unwrap();
        let encrypted = std::fs::read(Path::new(TESTDATA).join("app.enc.env")).unwrap();
        std::fs::write(root.join("app/secret.env"), &encrypted).unwrap();
        std::fs::write(root.join("app/kustomization.yaml"), "secretGenerator: []\n").unwrap();
        let files = [
            (PathBuf::from("app/secret.env"), Format::Dotenv),
            (PathBuf::from("app/kustomization.yaml"), Format::Yaml),
        ];
        let decryption = Decryption::with_keys(keys());
        let clear = decrypt_files(&root, &files, &decryption).unwrap();
        assert_eq!(clear.len(), 1);
        let copy = private_copy(&root, &clear).unwrap();
        let text = std::fs::read_to_string(copy.root().join("app/secret.env")).unwrap();
        assert!(text.contains("DB_PASSWORD=s3cr3t-pass"), "{text}");
        assert_eq!(std::fs::read(root.join("app/secret.env")).unwrap(), encrypted, "the checkout is unchanged");
        assert!(copy.root().join("app/kustomization.yaml").is_file());
        assert!(!copy.root().join(".git").exists() && copy.root().join("app/.git").exists());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(copy.root().join("app/secret.env")).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let dir = copy.root().to_path_buf();
        drop(copy);
        assert!(!dir.exists(), "removed when dropped");
        let refused =
            crate::causes::with_causes(&decrypt_files(&root, &files, &Decryption::refusing("x")).unwrap_err());
        assert!(refused.starts_with("app/secret.env: it is encrypted with SOPS"), "{refused}");
        std::fs::remove_dir_all(root).unwrap();
    }
}
