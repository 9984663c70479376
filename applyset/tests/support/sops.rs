//! The real sops and age-keygen (`scripts/build-sops`, built on first use and cached): a test
//! makes its own age key and encrypts its files with them, so that what applyset decrypts is
//! exactly what users commit.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use anyhow::{Context, Result, bail};

use super::{repo_root, run};

/// The tools `scripts/build-sops` built.
#[derive(Debug, Clone)]
pub struct SopsTools {
    pub sops: PathBuf,
    pub age: PathBuf,
    pub age_keygen: PathBuf,
}

/// sops, age and age-keygen, built by `scripts/build-sops` on first use (cached).
pub fn sops_tools() -> Result<SopsTools> {
    static TOOLS: OnceLock<std::result::Result<SopsTools, String>> = OnceLock::new();
    TOOLS
        .get_or_init(|| {
            let out = Command::new(repo_root().join("scripts/build-sops")).output().map_err(|e| e.to_string())?;
            if !out.status.success() {
                return Err(format!("scripts/build-sops failed:\n{}", String::from_utf8_lossy(&out.stderr)));
            }
            let stdout = String::from_utf8_lossy(&out.stdout);
            let paths: Vec<PathBuf> = stdout.lines().rev().take(3).map(|l| PathBuf::from(l.trim())).collect();
            match paths.as_slice() {
                [age_keygen, age, sops] => {
                    Ok(SopsTools { sops: sops.clone(), age: age.clone(), age_keygen: age_keygen.clone() })
                }
                _ => Err(format!("scripts/build-sops printed no paths:\n{stdout}")),
            }
        })
        .clone()
        .map_err(anyhow::Error::msg)
}

/// An age key made by the real age-keygen: the identity file and its public key.
#[derive(Debug, Clone)]
pub struct AgeKey {
    pub identity_file: PathBuf,
    pub recipient: String,
}

impl AgeKey {
    /// `age-keygen -o DIR/NAME`.
    pub fn generate(dir: &Path, name: &str) -> Result<AgeKey> {
        let tools = sops_tools()?;
        std::fs::create_dir_all(dir)?;
        let identity_file = dir.join(name);
        let _ = std::fs::remove_file(&identity_file);
        run(Command::new(&tools.age_keygen).arg("-o").arg(&identity_file), None)?.success_stdout()?;
        let recipient = run(Command::new(&tools.age_keygen).arg("-y").arg(&identity_file), None)?
            .success_stdout()?
            .trim()
            .to_owned();
        Ok(AgeKey { identity_file, recipient })
    }

    /// The identity file's text (`AGE-SECRET-KEY-1…` with age-keygen's comments).
    pub fn identity(&self) -> Result<String> {
        std::fs::read_to_string(&self.identity_file).context("reading the age identity")
    }
}

/// The clear text `text` (named `name`, whose extension picks the format as sops picks it),
/// encrypted by the real `sops encrypt --age RECIPIENT EXTRA…`.
pub fn sops_encrypt(name: &str, text: &str, key: &AgeKey, extra: &[&str]) -> Result<String> {
    let tools = sops_tools()?;
    let dir = super::scratch_dir("sops", &super::random_suffix());
    std::fs::create_dir_all(&dir)?;
    let file = dir.join(name);
    std::fs::write(&file, text)?;
    let mut command = Command::new(&tools.sops);
    // No user configuration or key may take part.
    command.env_remove("SOPS_AGE_KEY_FILE").env_remove("SOPS_AGE_KEY").current_dir(&dir);
    command.arg("encrypt").arg("--age").arg(&key.recipient).args(extra).arg(&file);
    let output = run(&mut command, None)?;
    if !output.success {
        bail!("sops encrypt {name} failed: {}", output.stderr);
    }
    if !output.stdout.contains("ENC[AES256_GCM") {
        bail!("sops encrypt {name} encrypted nothing:\n{}", output.stdout);
    }
    Ok(output.stdout)
}
