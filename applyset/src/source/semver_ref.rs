//! Semver ranges over tags.
//!
//! Ranges are written as Flux users write them: comparators separated by
//! spaces or commas (`>=1.2.0 <2`, `>=1.2.0, <2`, `~1.4`, `^2`, `1.x`), and
//! alternatives separated by `||`. Each alternative is parsed by the `semver`
//! crate (Cargo's rules, including its treatment of pre-releases: a
//! pre-release only matches a comparator naming the same major.minor.patch
//! with a pre-release).

use semver::{Version, VersionReq};

use super::error::SourceError;

use crate::causes::Chain;

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Range {
    alternatives: Vec<VersionReq>,
}

impl Range {
    pub(crate) fn parse(range: &str) -> Result<Range, SourceError> {
        let mut alternatives = Vec::new();
        for alt in range.split("||") {
            let normalised = normalise(alt);
            if normalised.is_empty() {
                return Err(SourceError::invalid(format!("ref.semver {range:?}: empty alternative")));
            }
            let req = VersionReq::parse(&normalised).map_err(|e| {
                SourceError::invalid(format!("ref.semver {range:?} is not a semver range: {e}", e = Chain(&e)))
            })?;
            alternatives.push(req);
        }
        Ok(Range { alternatives })
    }

    pub(crate) fn matches(&self, v: &Version) -> bool {
        self.alternatives.iter().any(|r| r.matches(v))
    }
}

/// `>=1.2.0 <2` → `>=1.2.0, <2`; `>= 1.2` → `>=1.2`.
fn normalise(alt: &str) -> String {
    let mut comparators: Vec<String> = Vec::new();
    let mut pending_op = String::new();
    for token in alt.split([' ', ',', '\t']).filter(|t| !t.is_empty()) {
        if token.chars().all(|c| "<>=~^".contains(c)) {
            pending_op.push_str(token);
            continue;
        }
        comparators.push(format!("{pending_op}{token}"));
        pending_op.clear();
    }
    if !pending_op.is_empty() {
        comparators.push(pending_op);
    }
    comparators.join(", ")
}

/// Parse a tag name as a version: an optional leading `v`/`V`, then semver.
pub(crate) fn tag_version(tag: &str) -> Option<Version> {
    let t = tag.strip_prefix(['v', 'V']).unwrap_or(tag);
    Version::parse(t).ok()
}

/// The highest tag whose version is in `range`. Ties between equal versions
/// (`v1.0.0` and `1.0.0`, or differing only in build metadata) are broken by
/// the tag name, so the choice is deterministic.
pub(crate) fn pick<'a>(range: &Range, tags: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    tags.into_iter()
        .filter_map(|t| tag_version(t).map(|v| (v, t)))
        .filter(|(v, _)| range.matches(v))
        .max_by(|(va, ta), (vb, tb)| va.cmp(vb).then_with(|| ta.cmp(tb)))
        .map(|(_, t)| t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picks_highest_matching() {
        let tags = ["v1.0.0", "v1.2.0", "1.2.5", "v1.9.9", "v2.0.0", "v1.10.0-rc.1", "latest", "v1.3"];
        let r = Range::parse(">=1.2.0 <2").unwrap();
        assert_eq!(pick(&r, tags), Some("v1.9.9"));
        let r = Range::parse(">= 1.2.0, < 1.3").unwrap();
        assert_eq!(pick(&r, tags), Some("1.2.5"));
        let r = Range::parse("~1.2").unwrap();
        assert_eq!(pick(&r, tags), Some("1.2.5"));
        let r = Range::parse("<1.1 || >=2").unwrap();
        assert_eq!(pick(&r, tags), Some("v2.0.0"));
        let r = Range::parse(">=3").unwrap();
        assert_eq!(pick(&r, tags), None);
        let r = Range::parse("*").unwrap();
        assert_eq!(pick(&r, tags), Some("v2.0.0"));
        assert!(Range::parse("garbage range").is_err());
        assert!(Range::parse(">=1 ||").is_err());
    }
}
