//! Go duration strings (`30s`, `5m`, `1h30m`, `1.5h`, `250ms`), as the CRD's pattern admits them.

use std::time::Duration;

/// Text that is not a Go duration.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid duration {0:?}: expected Go syntax such as 30s, 5m or 1h30m")]
pub struct InvalidDuration(pub String);

/// Parses a Go-style duration with the units `ms`, `s`, `m`, `h`.
pub fn parse(text: &str) -> Result<Duration, InvalidDuration> {
    let invalid = || InvalidDuration(text.to_owned());
    if text.is_empty() {
        return Err(invalid());
    }
    let mut total = 0f64;
    let mut rest = text;
    while !rest.is_empty() {
        let number_len = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(rest.len());
        let (number, after) = rest.split_at(number_len);
        if number.is_empty() || number.starts_with('.') || number.ends_with('.') || number.matches('.').count() > 1 {
            return Err(invalid());
        }
        let value: f64 = number.parse().map_err(|_| invalid())?;
        let (seconds, after) = if let Some(after) = after.strip_prefix("ms") {
            (value / 1000.0, after)
        } else if let Some(after) = after.strip_prefix('s') {
            (value, after)
        } else if let Some(after) = after.strip_prefix('m') {
            (value * 60.0, after)
        } else if let Some(after) = after.strip_prefix('h') {
            (value * 3600.0, after)
        } else {
            return Err(invalid());
        };
        total += seconds;
        rest = after;
    }
    if !total.is_finite() || total > 365.0 * 24.0 * 3600.0 {
        return Err(invalid());
    }
    Ok(Duration::from_secs_f64(total))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations() {
        assert_eq!(parse("30s").unwrap(), Duration::from_secs(30));
        assert_eq!(parse("5m").unwrap(), Duration::from_secs(300));
        assert_eq!(parse("1h30m").unwrap(), Duration::from_secs(5400));
        assert_eq!(parse("1.5h").unwrap(), Duration::from_secs(5400));
        assert_eq!(parse("250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(parse("1m1ms").unwrap(), Duration::from_millis(60_001));
    }

    #[test]
    fn rejects_what_the_crd_pattern_rejects() {
        for bad in ["", "5", "five", "5 m", "-1m", "1d", "m", ".5s", "1.s", "1..5s", "5mm"] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }
}
