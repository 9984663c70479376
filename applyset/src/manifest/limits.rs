//! Caps on what loading may cost, for the controller: one commit must not be able to exhaust
//! its memory (a 100 MB YAML file compresses to 1 MB in git). `kubectl apply` has no such caps,
//! so the CLI loads with [`Limits::NONE`].

use std::fmt;

/// Byte caps; `None` is no cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Limits {
    /// One file (or standard input): checked on the file's metadata before it is read, and
    /// the read stops there.
    pub file: Option<u64>,
    /// One document's text, checked before it is parsed; aliases may add at most as much again
    /// when the document is converted to values.
    pub document: Option<u64>,
    /// All files of one load (a revision), summed in walk order before any file is read.
    pub total: Option<u64>,
}

impl Limits {
    pub const NONE: Limits = Limits { file: None, document: None, total: None };
}

/// Which cap a file or document exceeded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum LimitExceeded {
    #[error("the file is {}, over the limit of {} per manifest file; it was not read", Bytes(*size), Bytes(*limit))]
    File { size: u64, limit: u64 },
    #[error(
        "the manifest files add up to {} up to and including this one, over the limit of {} for all files together; no file was read",
        Bytes(*size),
        Bytes(*limit)
    )]
    Total { size: u64, limit: u64 },
    #[error("the document is {}, over the limit of {} per document; it was not parsed", Bytes(*size), Bytes(*limit))]
    Document { size: u64, limit: u64 },
    /// Aliases (`*name`) copy the anchored value: "billion laughs" with long strings.
    #[error("the document's aliases expand to more than {} (the limit per document)", Bytes(*limit))]
    Aliases { limit: u64 },
}

/// A byte count as `N bytes`, with MiB or KiB when that is easier to read.
struct Bytes(u64);

impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const KI: u64 = 1024;
        const MI: u64 = 1024 * 1024;
        let n = self.0;
        write!(f, "{n} bytes")?;
        match n {
            n if n >= MI && n % MI == 0 => write!(f, " ({} MiB)", n / MI),
            n if n >= MI => write!(f, " ({:.1} MiB)", n as f64 / MI as f64),
            n if n >= KI && n % KI == 0 => write!(f, " ({} KiB)", n / KI),
            _ => Ok(()),
        }
    }
}

/// A byte count as flags take it: a plain number, or with a binary (`Ki`, `Mi`, `Gi`) or
/// decimal (`k`, `M`, `G`) suffix as in Kubernetes quantities: `8388608`, `8Mi`, `500k`.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let split = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    let (digits, suffix) = text.split_at(split);
    let multiplier: u64 = match suffix {
        "" => 1,
        "k" => 1000,
        "M" => 1_000_000,
        "G" => 1_000_000_000,
        "Ki" => 1 << 10,
        "Mi" => 1 << 20,
        "Gi" => 1 << 30,
        _ => {
            return Err(format!(
                "{text:?} is not a size: use bytes, or a number with Ki, Mi, Gi, k, M or G (e.g. 8Mi)"
            ));
        }
    };
    let n: u64 =
        digits.parse().map_err(|_| format!("{text:?} is not a size: it must start with a number (e.g. 8Mi)"))?;
    let size = n.checked_mul(multiplier).ok_or_else(|| format!("{text:?} is too large"))?;
    if size == 0 {
        return Err("a size limit must be at least 1 byte".to_owned());
    }
    Ok(size)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("8388608"), Ok(8 << 20));
        assert_eq!(parse_size("8Mi"), Ok(8 << 20));
        assert_eq!(parse_size("64Mi"), Ok(64 << 20));
        assert_eq!(parse_size("1Gi"), Ok(1 << 30));
        assert_eq!(parse_size("512Ki"), Ok(512 << 10));
        assert_eq!(parse_size("5M"), Ok(5_000_000));
        assert_eq!(parse_size("3k"), Ok(3000));
        for bad in ["", "Mi", "8 Mi", "8MB", "8mi", "-1", "1.5Mi", "0", "0Mi", "99999999999Gi"] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn messages_give_bytes_and_a_readable_size() {
        let e = LimitExceeded::File { size: 100 * 1024 * 1024 + 7, limit: 8 << 20 };
        assert_eq!(
            e.to_string(),
            "the file is 104857607 bytes (100.0 MiB), over the limit of 8388608 bytes (8 MiB) per manifest file; it was not read"
        );
        assert_eq!(Bytes(2048).to_string(), "2048 bytes (2 KiB)");
        assert_eq!(Bytes(100).to_string(), "100 bytes");
    }
}
