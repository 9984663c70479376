//! Integer and float verbs (`fmtInteger`, `fmtFloat` and the `strconv.FormatFloat` forms).

use super::super::value::Kind;
use super::{Printer, Result, Unsupported};

impl Printer {
    pub(super) fn fmt_integer(&mut self, v: i128, signed: bool, verb: char, value: &Kind) -> Result<()> {
        let (base, upper) = match verb {
            // `%#v` shows unsigned integers in hex.
            'v' if self.flags.sharp_v && !signed => {
                let sharp = std::mem::replace(&mut self.flags.sharp, true);
                self.integer(v, 16, false);
                self.flags.sharp = sharp;
                return Ok(());
            }
            'v' | 'd' => (10, false),
            'b' => (2, false),
            'o' | 'O' => (8, false),
            'x' => (16, false),
            'X' => (16, true),
            'c' => {
                let c = u32::try_from(v).ok().and_then(char::from_u32).unwrap_or('\u{fffd}');
                self.pad(c.encode_utf8(&mut [0; 4]));
                return Ok(());
            }
            'q' => {
                let c = u32::try_from(v).ok().and_then(char::from_u32).unwrap_or('\u{fffd}');
                let quoted = quote_rune(c);
                self.pad(&quoted);
                return Ok(());
            }
            'U' => {
                let digits = self.flags.precision.unwrap_or(4).max(4);
                let mut s = format!("U+{:0digits$X}", v.max(0));
                if self.flags.sharp
                    && let Some(c) = u32::try_from(v).ok().and_then(char::from_u32).filter(|&c| super::is_print(c))
                {
                    s.push_str(&format!(" '{c}'"));
                }
                let zero = std::mem::take(&mut self.flags.zero);
                self.pad(&s);
                self.flags.zero = zero;
                return Ok(());
            }
            _ => return self.bad_verb(verb, Some(value)),
        };
        let digits = match (base, upper) {
            (2, _) => format!("{:b}", v.unsigned_abs()),
            (8, _) => format!("{:o}", v.unsigned_abs()),
            (16, false) => format!("{:x}", v.unsigned_abs()),
            (16, true) => format!("{:X}", v.unsigned_abs()),
            _ => v.unsigned_abs().to_string(),
        };
        self.integer_digits(v < 0, digits, base, upper, verb == 'O');
        Ok(())
    }

    fn integer(&mut self, v: i128, base: u32, upper: bool) {
        let digits = if base == 16 { format!("{:x}", v.unsigned_abs()) } else { v.unsigned_abs().to_string() };
        self.integer_digits(v < 0, digits, base, upper, false);
    }

    /// The body of Go's `fmtInteger` once the digits are known.
    fn integer_digits(&mut self, negative: bool, mut digits: String, base: u32, upper: bool, o_prefix: bool) {
        let f = self.flags;
        let mut precision = 0;
        if let Some(p) = f.precision {
            precision = p;
            if p == 0 && digits == "0" {
                self.flags.zero = false;
                self.write_padding(f.width.unwrap_or(0));
                self.flags.zero = f.zero;
                return;
            }
        } else if f.zero && !f.minus && f.width.is_some() {
            precision = f.width.unwrap_or(0);
            if negative || f.plus || f.space {
                precision = precision.saturating_sub(1);
            }
        }
        if digits.len() < precision {
            digits = format!("{}{digits}", "0".repeat(precision - digits.len()));
        }
        let mut prefix = String::new();
        if f.sharp {
            match base {
                2 => prefix.push_str("0b"),
                8 if !digits.starts_with('0') => prefix.push('0'),
                16 => prefix.push_str(if upper { "0X" } else { "0x" }),
                _ => {}
            }
        }
        if o_prefix {
            prefix.insert_str(0, "0o");
        }
        let sign = if negative {
            "-"
        } else if f.plus {
            "+"
        } else if f.space {
            " "
        } else {
            ""
        };
        let text = format!("{sign}{prefix}{digits}");
        self.flags.zero = false;
        self.pad(&text);
        self.flags.zero = f.zero;
    }

    pub(super) fn fmt_float(&mut self, v: f64, verb: char, value: &Kind) -> Result<()> {
        let (fmt_char, default_precision) = match verb {
            'v' => ('g', None),
            'g' | 'G' => (verb, None),
            'e' | 'E' | 'f' => (verb, Some(6)),
            'F' => ('f', Some(6)),
            'b' | 'x' | 'X' => return Err(Unsupported(format!("the %{verb} verb for floats"))),
            _ => return self.bad_verb(verb, Some(value)),
        };
        if self.flags.sharp {
            return Err(Unsupported(format!("the # flag with %{verb} for floats")));
        }
        let precision = self.flags.precision.or(default_precision);
        let mut num = format_float(v, fmt_char, precision);
        if !num.starts_with(['-', '+']) {
            num.insert(0, '+');
        }
        if self.flags.space && num.starts_with('+') && !self.flags.plus {
            num.replace_range(0..1, " ");
        }
        if self.flags.plus || !num.starts_with('+') {
            let width = self.flags.width.unwrap_or(0);
            if self.flags.zero && !self.flags.minus && width > num.len() {
                self.buf.push_str(&num[..1]);
                self.write_padding(width - num.len());
                self.buf.push_str(&num[1..]);
                return Ok(());
            }
            self.pad(&num);
            return Ok(());
        }
        self.pad(&num[1..]);
        Ok(())
    }
}

/// `strconv.QuoteRune`.
fn quote_rune(c: char) -> String {
    let quoted = applyset_merge::value::go_quote(c.encode_utf8(&mut [0; 4]));
    let inner = &quoted[1..quoted.len() - 1];
    let inner = match inner {
        "\\\"" => "\"",
        "'" => "\\'",
        other => other,
    };
    format!("'{inner}'")
}

/// Decimal digits (no trailing zeros) and the decimal point position, like strconv's
/// `decimalSlice`; `significant` is the number of digits to round to, or shortest.
fn decimal(v: f64, significant: Option<usize>) -> (Vec<u8>, i32) {
    if v == 0.0 {
        return (Vec::new(), 0);
    }
    let sci = match significant {
        Some(n) => format!("{:.*e}", n.max(1) - 1, v.abs()),
        None => format!("{:e}", v.abs()),
    };
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let mut digits: Vec<u8> = mantissa.bytes().filter(u8::is_ascii_digit).collect();
    while digits.last() == Some(&b'0') {
        digits.pop();
    }
    (digits, exp.parse::<i32>().unwrap_or(0) + 1)
}

/// `strconv.FormatFloat(v, fmt, precision or -1, 64)` for `e`, `E`, `f`, `g`, `G`.
pub(crate) fn format_float(v: f64, fmt_char: char, precision: Option<usize>) -> String {
    if v.is_nan() {
        return "NaN".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "+Inf".into() } else { "-Inf".into() };
    }
    let neg = v.is_sign_negative();
    match fmt_char {
        'e' | 'E' => {
            let (digits, dp) = match precision {
                Some(p) => decimal(v, Some(p + 1)),
                None => decimal(v, None),
            };
            let p = precision.unwrap_or(digits.len().saturating_sub(1));
            fmt_e(neg, &digits, dp, p, fmt_char)
        }
        'f' => match precision {
            Some(p) => {
                let text = format!("{:.*}", p, v.abs());
                if neg { format!("-{text}") } else { text }
            }
            None => {
                let (digits, dp) = decimal(v, None);
                fmt_f(neg, &digits, dp, (digits.len() as i32 - dp).max(0) as usize)
            }
        },
        _ => {
            let shortest = precision.is_none();
            let (digits, dp) = decimal(v, precision.map(|p| p.max(1)));
            let nd = digits.len();
            let mut prec = precision.map_or(nd, |p| p.max(1));
            let mut eprec = prec;
            if eprec > nd && nd as i32 >= dp {
                eprec = nd;
            }
            if shortest {
                eprec = 6;
            }
            let exp = dp - 1;
            let e_char = if fmt_char == 'G' { 'E' } else { 'e' };
            if exp < -4 || exp >= eprec as i32 {
                prec = prec.min(nd);
                return fmt_e(neg, &digits, dp, prec.saturating_sub(1), e_char);
            }
            if prec as i32 > dp {
                prec = nd;
            }
            fmt_f(neg, &digits, dp, (prec as i32 - dp).max(0) as usize)
        }
    }
}

fn fmt_e(neg: bool, digits: &[u8], dp: i32, precision: usize, e_char: char) -> String {
    let mut s = String::new();
    if neg {
        s.push('-');
    }
    s.push(digits.first().map_or('0', |&d| d as char));
    if precision > 0 {
        s.push('.');
        for i in 1..=precision {
            s.push(digits.get(i).map_or('0', |&d| d as char));
        }
    }
    s.push(e_char);
    let exp = if digits.is_empty() { 0 } else { dp - 1 };
    s.push(if exp < 0 { '-' } else { '+' });
    s.push_str(&format!("{:02}", exp.unsigned_abs()));
    s
}

fn fmt_f(neg: bool, digits: &[u8], dp: i32, precision: usize) -> String {
    let mut s = String::new();
    if neg {
        s.push('-');
    }
    if dp > 0 {
        for i in 0..dp as usize {
            s.push(digits.get(i).map_or('0', |&d| d as char));
        }
    } else {
        s.push('0');
    }
    if precision > 0 {
        s.push('.');
        for i in 1..=precision as i32 {
            let j = dp + i - 1;
            s.push(if j >= 0 { digits.get(j as usize).map_or('0', |&d| d as char) } else { '0' });
        }
    }
    s
}
