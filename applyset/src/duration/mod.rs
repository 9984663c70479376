//! Go durations (`30s`, `5m`, `1h30m`, `1.5h`, `250ms`): read exactly as Go's
//! `time.ParseDuration` reads them ([`parse_go`], [`format_go`]), and as a [`Duration`] where a negative or
//! unbounded one has no meaning (intervals, timeouts).

mod go;

use std::time::Duration;

pub use go::{DurationError, format as format_go, parse as parse_go};

/// The longest duration accepted: a year (an interval longer than that is a typo).
const LONGEST: Duration = Duration::from_secs(365 * 24 * 3600);

/// A duration text that is not one, or is negative or longer than a year.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidDuration {
    /// Go's words for text it cannot read (kubectl prints them for its duration flags).
    #[error(transparent)]
    Syntax(#[from] DurationError),
    #[error("time: negative duration {0:?}")]
    Negative(String),
    #[error("time: duration {0:?} is longer than a year")]
    TooLong(String),
}

/// A Go duration that is neither negative nor longer than a year.
pub fn parse(text: &str) -> Result<Duration, InvalidDuration> {
    let nanos = go::parse(text)?;
    let nanos = u64::try_from(nanos).map_err(|_| InvalidDuration::Negative(text.to_owned()))?;
    let duration = Duration::from_nanos(nanos);
    if duration > LONGEST {
        return Err(InvalidDuration::TooLong(text.to_owned()));
    }
    Ok(duration)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations() {
        assert_eq!(parse("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse("5m"), Ok(Duration::from_secs(300)));
        assert_eq!(parse("1h30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse("1.5h"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse("1m1ms"), Ok(Duration::from_millis(60_001)));
        assert_eq!(parse("0"), Ok(Duration::ZERO));
    }

    #[test]
    fn refuses_what_go_refuses_and_what_has_no_meaning_here() {
        for bad in ["", "5", "five", "5 m", "1d", "m", "1..5s", "5mm"] {
            assert!(matches!(parse(bad), Err(InvalidDuration::Syntax(_))), "{bad}");
        }
        assert_eq!(parse("-1m"), Err(InvalidDuration::Negative("-1m".into())));
        assert_eq!(parse("9000h"), Err(InvalidDuration::TooLong("9000h".into())));
        assert_eq!(parse("x").unwrap_err().to_string(), r#"time: invalid duration "x""#);
    }
}
