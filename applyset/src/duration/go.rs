//! Go's `time.ParseDuration` and `Duration.String`, exactly: every duration flag kubectl reads
//! (`--timeout`, `--request-timeout`, `--log-flush-frequency`) is read with the first, and the
//! `timeout` query parameter kubectl sends is written with the second.

/// Text Go's `time.ParseDuration` refuses, worded as Go words it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    #[error("time: invalid duration {0:?}")]
    Invalid(String),
    #[error("time: missing unit in duration {0:?}")]
    MissingUnit(String),
    #[error("time: unknown unit {unit:?} in duration {text:?}")]
    UnknownUnit { unit: String, text: String },
}

const NANOS_PER_MICRO: u64 = 1_000;
const NANOS_PER_MILLI: u64 = 1_000_000;
const NANOS_PER_SECOND: u64 = 1_000_000_000;

fn unit_nanos(unit: &str) -> Option<u64> {
    Some(match unit {
        "ns" => 1,
        "us" | "µs" | "μs" => NANOS_PER_MICRO,
        "ms" => NANOS_PER_MILLI,
        "s" => NANOS_PER_SECOND,
        "m" => 60 * NANOS_PER_SECOND,
        "h" => 3600 * NANOS_PER_SECOND,
        _ => return None,
    })
}

/// Nanoseconds, signed, as Go's `time.Duration` (an `int64`).
pub fn parse(text: &str) -> Result<i64, DurationError> {
    let invalid = || DurationError::Invalid(text.to_owned());
    let (negative, mut rest) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    if rest == "0" {
        return Ok(0);
    }
    if rest.is_empty() {
        return Err(invalid());
    }
    let mut total: u64 = 0;
    while !rest.is_empty() {
        if !rest.starts_with(|c: char| c == '.' || c.is_ascii_digit()) {
            return Err(invalid());
        }
        // The integer part (overflow is an error, as in Go).
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        let mut whole: u64 = 0;
        for digit in rest[..digits].bytes() {
            whole = whole.checked_mul(10).and_then(|w| w.checked_add(u64::from(digit - b'0'))).ok_or_else(invalid)?;
        }
        rest = &rest[digits..];
        // The fraction: digits past what fits are dropped, as Go's leadingFraction does.
        let (mut fraction, mut scale, mut fraction_digits) = (0u64, 1f64, 0usize);
        if let Some(after) = rest.strip_prefix('.') {
            fraction_digits = after.bytes().take_while(u8::is_ascii_digit).count();
            let mut overflowed = false;
            for digit in after[..fraction_digits].bytes() {
                if overflowed {
                    continue;
                }
                match fraction.checked_mul(10).and_then(|f| f.checked_add(u64::from(digit - b'0'))) {
                    Some(next) if next <= 1 << 63 => {
                        fraction = next;
                        scale *= 10.0;
                    }
                    _ => overflowed = true,
                }
            }
            rest = &after[fraction_digits..];
        }
        if digits == 0 && fraction_digits == 0 {
            return Err(invalid());
        }
        let unit_len = rest.find(|c: char| c == '.' || c.is_ascii_digit()).unwrap_or(rest.len());
        if unit_len == 0 {
            return Err(DurationError::MissingUnit(text.to_owned()));
        }
        let unit = &rest[..unit_len];
        rest = &rest[unit_len..];
        let nanos = unit_nanos(unit)
            .ok_or_else(|| DurationError::UnknownUnit { unit: unit.to_owned(), text: text.to_owned() })?;
        let mut value = whole.checked_mul(nanos).filter(|v| *v <= 1 << 63).ok_or_else(invalid)?;
        if fraction > 0 {
            value += (fraction as f64 * (nanos as f64 / scale)) as u64;
            if value > 1 << 63 {
                return Err(invalid());
            }
        }
        total = total.checked_add(value).filter(|t| *t <= 1 << 63).ok_or_else(invalid)?;
    }
    if negative {
        return Ok((total as i128).wrapping_neg() as i64);
    }
    i64::try_from(total).map_err(|_| invalid())
}

/// Go's `Duration.String()`: `1h2m3.5s`, `2m0s`, `1.5ms`, `0s`.
pub fn format(nanos: i64) -> String {
    let negative = nanos < 0;
    let mut value = nanos.unsigned_abs();
    let mut text = String::new();
    if value < NANOS_PER_SECOND {
        let (precision, unit) = match value {
            0 => return "0s".into(),
            v if v < NANOS_PER_MICRO => (0, "ns"),
            v if v < NANOS_PER_MILLI => (3, "µs"),
            _ => (6, "ms"),
        };
        let (whole, fraction) = split_fraction(value, precision);
        text = format!("{whole}{fraction}{unit}");
    } else {
        let (seconds, fraction) = split_fraction(value, 9);
        value = seconds;
        text.push_str(&format!("{}{fraction}s", value % 60));
        value /= 60;
        if value > 0 {
            text = format!("{}m{text}", value % 60);
            value /= 60;
            if value > 0 {
                text = format!("{value}h{text}");
            }
        }
    }
    if negative { format!("-{text}") } else { text }
}

/// `value / 10^precision` and its fraction as Go prints it: `.5`, `.25`, nothing when zero.
fn split_fraction(value: u64, precision: u32) -> (u64, String) {
    let divisor = 10u64.pow(precision);
    let fraction = value % divisor;
    if fraction == 0 {
        return (value / divisor, String::new());
    }
    let digits = format!("{fraction:0width$}", width = precision as usize);
    (value / divisor, format!(".{}", digits.trim_end_matches('0')))
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: i64 = 1_000_000_000;

    #[test]
    fn parses_as_go_does() {
        let cases: [(&str, i64); 14] = [
            ("0", 0),
            ("5s", 5 * S),
            ("+5s", 5 * S),
            ("-5s", -5 * S),
            ("1h30m", 5400 * S),
            ("1.5h", 5400 * S),
            ("250ms", 250_000_000),
            ("1us", 1_000),
            ("1µs", 1_000),
            ("1μs", 1_000),
            ("3ns", 3),
            (".5s", S / 2),
            ("1.s", S),
            ("2m0.25s", 120 * S + S / 4),
        ];
        for (text, nanos) in cases {
            assert_eq!(parse(text), Ok(nanos), "{text}");
        }
    }

    #[test]
    fn refuses_with_gos_messages() {
        assert_eq!(parse("").unwrap_err().to_string(), r#"time: invalid duration """#);
        assert_eq!(parse("x").unwrap_err().to_string(), r#"time: invalid duration "x""#);
        assert_eq!(parse(".s").unwrap_err().to_string(), r#"time: invalid duration ".s""#);
        assert_eq!(parse("5").unwrap_err().to_string(), r#"time: missing unit in duration "5""#);
        assert_eq!(parse("-1").unwrap_err().to_string(), r#"time: missing unit in duration "-1""#);
        assert_eq!(parse("5d").unwrap_err().to_string(), r#"time: unknown unit "d" in duration "5d""#);
        assert_eq!(parse("9999999999h").unwrap_err().to_string(), r#"time: invalid duration "9999999999h""#);
    }

    #[test]
    fn formats_as_go_does() {
        let cases: [(i64, &str); 11] = [
            (0, "0s"),
            (5 * S, "5s"),
            (120 * S, "2m0s"),
            (3600 * S, "1h0m0s"),
            (3723 * S + S / 2, "1h2m3.5s"),
            (1_500_000, "1.5ms"),
            (1_000, "1µs"),
            (7, "7ns"),
            (-5 * S, "-5s"),
            (S / 4, "250ms"),
            (32 * S, "32s"),
        ];
        for (nanos, text) in cases {
            assert_eq!(format(nanos), text, "{nanos}");
        }
    }
}
