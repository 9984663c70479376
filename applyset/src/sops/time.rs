//! The two time formats SOPS relies on, as Go's `time` package reads and writes them:
//! `lastmodified` (RFC 3339, reformatted without fractional seconds as the MAC's additional
//! data), and YAML timestamps (yaml.v3 reads a plain `2024-01-02` as a `time.Time`, which
//! enters the MAC, and is encrypted, as its RFC 3339 text with nanoseconds).

/// A point in time as written, with its offset from UTC in minutes (`Z` is 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Instant {
    year: u32,
    month: u32,
    day: u32,
    hour: u32,
    minute: u32,
    second: u32,
    nanos: u32,
    offset_minutes: i32,
}

impl Instant {
    /// Go's `Format(time.RFC3339)`: no fractional seconds, `Z` for UTC.
    pub(crate) fn rfc3339(&self) -> String {
        format!("{}{}", self.date_time(), self.zone())
    }

    /// Go's `MarshalText` (`time.RFC3339Nano`): fractional seconds without trailing zeros.
    pub(crate) fn rfc3339_nano(&self) -> String {
        let mut fraction = String::new();
        if self.nanos != 0 {
            fraction = format!(".{:09}", self.nanos).trim_end_matches('0').to_owned();
        }
        format!("{}{fraction}{}", self.date_time(), self.zone())
    }

    fn date_time(&self) -> String {
        format!(
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}",
            self.year, self.month, self.day, self.hour, self.minute, self.second
        )
    }

    fn zone(&self) -> String {
        if self.offset_minutes == 0 {
            return "Z".to_owned();
        }
        let sign = if self.offset_minutes < 0 { '-' } else { '+' };
        let minutes = self.offset_minutes.unsigned_abs();
        format!("{sign}{:02}:{:02}", minutes / 60, minutes % 60)
    }
}

/// Go's `time.Parse(time.RFC3339, s)`: `2006-01-02T15:04:05[.frac](Z|±07:00)`.
pub(crate) fn rfc3339(s: &str) -> Option<Instant> {
    let mut reader = Reader(s.as_bytes());
    let (year, month, day) = reader.date(true)?;
    reader.expect(b'T')?;
    let (hour, minute, second, nanos) = reader.clock(true)?;
    let offset_minutes = reader.zone()?;
    reader.end()?;
    checked(Instant { year, month, day, hour, minute, second, nanos, offset_minutes })
}

/// yaml.v3's timestamp resolution (`parseTimestamp`): one of `2006-1-2T15:4:5.999999999Z07:00`
/// (or with a lower-case `t`), `2006-1-2 15:4:5.999999999` (UTC), `2006-1-2` (midnight UTC).
/// Returns Go's `MarshalText` of it, the text SOPS hashes and encrypts.
pub(crate) fn yaml_timestamp(s: &str) -> Option<String> {
    let mut reader = Reader(s.as_bytes());
    let (year, month, day) = reader.date(false)?;
    let mut instant = Instant { year, month, day, hour: 0, minute: 0, second: 0, nanos: 0, offset_minutes: 0 };
    if !reader.0.is_empty() {
        let zoned = match reader.0[0] {
            b'T' | b't' => true,
            b' ' => false,
            _ => return None,
        };
        reader.0 = &reader.0[1..];
        (instant.hour, instant.minute, instant.second, instant.nanos) = reader.clock(false)?;
        if zoned {
            instant.offset_minutes = reader.zone()?;
        }
        reader.end()?;
    }
    checked(instant).map(|i| i.rfc3339_nano())
}

fn checked(instant: Instant) -> Option<Instant> {
    let year = instant.year;
    let leap = year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400));
    let days = match instant.month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return None,
    };
    let valid = (1..=days).contains(&instant.day) && instant.hour < 24 && instant.minute < 60 && instant.second < 60;
    valid.then_some(instant)
}

struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    /// `fixed` digits, or (not fixed) one or two.
    fn number(&mut self, fixed: usize, flexible: bool) -> Option<u32> {
        let available = self.0.iter().take_while(|b| b.is_ascii_digit()).count();
        let take = if flexible { available.min(2) } else { fixed };
        if take == 0 || available < take || (!flexible && available > fixed && fixed != 4) {
            return None;
        }
        let (digits, rest) = self.0.split_at(take);
        self.0 = rest;
        std::str::from_utf8(digits).ok()?.parse().ok()
    }

    fn expect(&mut self, byte: u8) -> Option<()> {
        let (&first, rest) = self.0.split_first()?;
        (first == byte).then(|| self.0 = rest)
    }

    fn end(&self) -> Option<()> {
        self.0.is_empty().then_some(())
    }

    /// `YYYY-MM-DD` (strict) or `YYYY-M-D` (flexible).
    fn date(&mut self, strict: bool) -> Option<(u32, u32, u32)> {
        let year = self.number(4, false)?;
        if self.0.first().is_some_and(u8::is_ascii_digit) {
            return None;
        }
        self.expect(b'-')?;
        let month = self.number(2, !strict)?;
        self.expect(b'-')?;
        let day = self.number(2, !strict)?;
        Some((year, month, day))
    }

    /// `hh:mm:ss[.fraction]`, the fraction up to nanoseconds.
    fn clock(&mut self, strict: bool) -> Option<(u32, u32, u32, u32)> {
        let hour = self.number(2, !strict)?;
        self.expect(b':')?;
        let minute = self.number(2, !strict)?;
        self.expect(b':')?;
        let second = self.number(2, !strict)?;
        let mut nanos = 0;
        if self.0.first() == Some(&b'.') {
            self.0 = &self.0[1..];
            let digits = self.0.iter().take_while(|b| b.is_ascii_digit()).count();
            if digits == 0 || digits > 9 {
                return None;
            }
            let text = std::str::from_utf8(&self.0[..digits]).ok()?;
            nanos = text.parse::<u32>().ok()? * 10u32.pow(9 - digits as u32);
            self.0 = &self.0[digits..];
        }
        Some((hour, minute, second, nanos))
    }

    /// `Z` or `±hh:mm`, in minutes east of UTC.
    fn zone(&mut self) -> Option<i32> {
        match self.0.first()? {
            b'Z' => {
                self.0 = &self.0[1..];
                Some(0)
            }
            sign @ (b'+' | b'-') => {
                let negative = *sign == b'-';
                self.0 = &self.0[1..];
                let hours = self.number(2, false)?;
                self.expect(b':')?;
                let minutes = self.number(2, false)?;
                if hours > 23 || minutes > 59 {
                    return None;
                }
                let total = (hours * 60 + minutes) as i32;
                Some(if negative { -total } else { total })
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn last_modified_reformatted_as_go_does() {
        assert_eq!(rfc3339("2026-11-27T05:34:38Z").unwrap().rfc3339(), "2026-11-27T05:34:38Z");
        assert_eq!(rfc3339("2026-11-27T05:34:38.5+01:00").unwrap().rfc3339(), "2026-11-27T05:34:38+01:00");
        assert_eq!(rfc3339("2026-11-27T05:34:38+00:00").unwrap().rfc3339(), "2026-11-27T05:34:38Z");
        for bad in ["2026-11-27", "2026-11-27T05:34:38", "2026-1-27T05:34:38Z", "2026-02-30T00:00:00Z", "x"] {
            assert_eq!(rfc3339(bad), None, "{bad}");
        }
    }

    #[test]
    fn yaml_timestamps_as_yaml_v3_resolves_them() {
        assert_eq!(yaml_timestamp("2024-01-02").as_deref(), Some("2024-01-02T00:00:00Z"));
        assert_eq!(yaml_timestamp("2024-1-2").as_deref(), Some("2024-01-02T00:00:00Z"));
        assert_eq!(yaml_timestamp("2024-01-02 3:04:05.120").as_deref(), Some("2024-01-02T03:04:05.12Z"));
        assert_eq!(yaml_timestamp("2024-01-02t03:04:05-07:30").as_deref(), Some("2024-01-02T03:04:05-07:30"));
        for not in ["2024", "20240-01-02", "2024-01-02x", "2024-13-01", "2024-01-02T03:04:05", "1.5"] {
            assert_eq!(yaml_timestamp(not), None, "{not}");
        }
    }
}
