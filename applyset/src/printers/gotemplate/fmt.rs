//! Go's `fmt` for the values a template sees: `Sprint`, `Sprintln`, `Sprintf` (print.go and
//! format.go), including Go's error forms such as `%!d(float64=3)`.

use applyset_merge::Value;

use super::value::Kind;

mod number;

/// A verb or flag this port does not implement; the caller turns it into an exec error.
#[derive(Debug)]
pub(super) struct Unsupported(pub String);

type Result<T> = std::result::Result<T, Unsupported>;

/// Go's `unicode.IsPrint`, approximated: graphic characters and the ASCII space.
pub(super) fn is_print(c: char) -> bool {
    c == ' ' || !(c.is_control() || c.is_whitespace() || ('\u{e000}'..='\u{f8ff}').contains(&c))
}

/// `fmt.Sprint`: spaces between operands when neither side is a string.
pub(super) fn sprint(args: &[Kind]) -> Result<String> {
    let mut p = Printer::default();
    let mut prev_string = false;
    for (i, arg) in args.iter().enumerate() {
        let is_string = matches!(arg, Kind::Str(_));
        if i > 0 && !is_string && !prev_string {
            p.buf.push(' ');
        }
        p.print_arg(arg, 'v')?;
        prev_string = is_string;
    }
    Ok(p.buf)
}

/// `fmt.Sprintln`: spaces between all operands and a final newline.
pub(super) fn sprintln(args: &[Kind]) -> Result<String> {
    let mut p = Printer::default();
    for (i, arg) in args.iter().enumerate() {
        if i > 0 {
            p.buf.push(' ');
        }
        p.print_arg(arg, 'v')?;
    }
    p.buf.push('\n');
    Ok(p.buf)
}

#[derive(Default, Clone, Copy)]
struct Flags {
    plus: bool,
    minus: bool,
    sharp: bool,
    space: bool,
    zero: bool,
    plus_v: bool,
    sharp_v: bool,
    width: Option<usize>,
    precision: Option<usize>,
}

#[derive(Default)]
struct Printer {
    buf: String,
    flags: Flags,
}

/// Go's `tooLarge`: widths and precisions above 1e6 are rejected.
const MAX_NUM: usize = 1_000_000;

/// `parsenum`: digits at `i`, returning the number and the index after them.
fn parse_num(format: &[u8], mut i: usize, end: usize) -> (Option<usize>, usize) {
    let start = i;
    let mut num = 0usize;
    while i < end && format[i].is_ascii_digit() {
        num = num.saturating_mul(10).saturating_add(usize::from(format[i] - b'0'));
        if num > MAX_NUM {
            return (None, end);
        }
        i += 1;
    }
    (if i > start { Some(num) } else { None }, i)
}

/// `intFromArg`: a `*` width or precision must be a Go integer.
fn int_from_arg(args: &[Kind], arg_num: usize) -> (Option<i64>, usize) {
    let Some(arg) = args.get(arg_num) else { return (None, arg_num) };
    let n = match arg {
        Kind::Int(i) | Kind::Int64(i) => Some(*i),
        Kind::Byte(b) => Some(i64::from(*b)),
        _ => None,
    };
    (n.filter(|n| n.unsigned_abs() <= MAX_NUM as u64), arg_num + 1)
}

/// `fmt.Sprintf`.
pub(super) fn sprintf(format: &str, args: &[Kind]) -> Result<String> {
    let mut p = Printer::default();
    let bytes = format.as_bytes();
    let end = bytes.len();
    let mut arg_num = 0;
    let mut reordered = false;
    let mut i = 0;
    while i < end {
        let mut good_arg_num = true;
        let last = i;
        while i < end && bytes[i] != b'%' {
            i += 1;
        }
        p.buf.push_str(&format[last..i]);
        if i >= end {
            break;
        }
        i += 1;
        p.flags = Flags::default();
        while i < end {
            match bytes[i] {
                b'#' => p.flags.sharp = true,
                b'0' => p.flags.zero = !p.flags.minus,
                b'+' => p.flags.plus = true,
                b'-' => {
                    p.flags.minus = true;
                    p.flags.zero = false;
                }
                b' ' => p.flags.space = true,
                _ => break,
            }
            i += 1;
        }
        // `[n]` argument indexes.
        let mut arg_index = |i: usize, arg_num: usize, good: &mut bool| -> (usize, usize, bool) {
            if i >= end || bytes[i] != b'[' {
                return (arg_num, i, false);
            }
            reordered = true;
            let rest = &bytes[i..];
            let mut parsed = (0usize, 1usize, false);
            if rest.len() >= 3
                && let Some(close) = rest.iter().position(|&b| b == b']')
            {
                let (n, after) = parse_num(rest, 1, close);
                parsed = match n {
                    Some(n) if after == close && n >= 1 => (n - 1, close + 1, true),
                    _ => (0, close + 1, false),
                };
            }
            let (index, width, ok) = parsed;
            if ok && index < args.len() {
                return (index, i + width, true);
            }
            *good = false;
            (arg_num, i + width, ok)
        };
        let mut after_index;
        (arg_num, i, after_index) = arg_index(i, arg_num, &mut good_arg_num);
        if i < end && bytes[i] == b'*' {
            i += 1;
            let (n, next) = int_from_arg(args, arg_num);
            arg_num = next;
            match n {
                Some(n) => {
                    p.flags.width = Some(n.unsigned_abs() as usize);
                    if n < 0 {
                        p.flags.minus = true;
                        p.flags.zero = false;
                    }
                }
                None => p.buf.push_str("%!(BADWIDTH)"),
            }
            after_index = false;
        } else {
            let (w, next) = parse_num(bytes, i, end);
            p.flags.width = w;
            i = next;
            if after_index && w.is_some() {
                good_arg_num = false;
            }
        }
        if i + 1 < end && bytes[i] == b'.' {
            i += 1;
            if after_index {
                good_arg_num = false;
            }
            (arg_num, i, after_index) = arg_index(i, arg_num, &mut good_arg_num);
            if i < end && bytes[i] == b'*' {
                i += 1;
                let (n, next) = int_from_arg(args, arg_num);
                arg_num = next;
                match n {
                    Some(n) if n >= 0 => p.flags.precision = Some(n as usize),
                    Some(_) => {}
                    None => p.buf.push_str("%!(BADPREC)"),
                }
                after_index = false;
            } else {
                let (prec, next) = parse_num(bytes, i, end);
                p.flags.precision = Some(prec.unwrap_or(0));
                i = next;
            }
        }
        if !after_index {
            (arg_num, i, _) = arg_index(i, arg_num, &mut good_arg_num);
        }
        if i >= end {
            p.buf.push_str("%!(NOVERB)");
            break;
        }
        let verb = format[i..].chars().next().unwrap_or('?');
        i += verb.len_utf8();
        match verb {
            '%' => p.buf.push('%'),
            _ if !good_arg_num => p.buf.push_str(&format!("%!{verb}(BADINDEX)")),
            _ if arg_num >= args.len() => p.buf.push_str(&format!("%!{verb}(MISSING)")),
            _ => {
                if verb == 'v' {
                    p.flags.sharp_v = std::mem::take(&mut p.flags.sharp);
                    p.flags.plus_v = std::mem::take(&mut p.flags.plus);
                }
                p.print_arg(&args[arg_num], verb)?;
                arg_num += 1;
            }
        }
    }
    if !reordered && arg_num < args.len() {
        p.flags = Flags::default();
        p.buf.push_str("%!(EXTRA ");
        for (i, arg) in args[arg_num..].iter().enumerate() {
            if i > 0 {
                p.buf.push_str(", ");
            }
            if matches!(arg, Kind::Invalid | Kind::Nil) {
                p.buf.push_str("<nil>");
            } else {
                p.buf.push_str(arg.type_name());
                p.buf.push('=');
                p.print_arg(arg, 'v')?;
            }
        }
        p.buf.push(')');
    }
    Ok(p.buf)
}

impl Printer {
    fn print_arg(&mut self, arg: &Kind, verb: char) -> Result<()> {
        match arg {
            Kind::Invalid | Kind::Nil => match verb {
                'T' | 'v' => self.pad("<nil>"),
                _ => self.bad_verb(verb, None)?,
            },
            _ if verb == 'T' => self.fmt_s(arg.type_name()),
            _ if verb == 'p' => return Err(Unsupported("the %p verb".into())),
            _ => self.print_value(arg, verb, 0)?,
        }
        Ok(())
    }

    /// `badVerb`: `%!d(float64=3)`.
    fn bad_verb(&mut self, verb: char, value: Option<&Kind>) -> Result<()> {
        self.buf.push_str("%!");
        self.buf.push(verb);
        self.buf.push('(');
        match value {
            Some(v) => {
                self.buf.push_str(v.type_name());
                self.buf.push('=');
                self.print_arg(v, 'v')?;
            }
            None => self.buf.push_str("<nil>"),
        }
        self.buf.push(')');
        Ok(())
    }

    fn print_value(&mut self, value: &Kind, verb: char, depth: usize) -> Result<()> {
        match value {
            Kind::Invalid | Kind::Nil => {
                // A nil element of a map or slice.
                if self.flags.sharp_v {
                    self.buf.push_str("interface {}(nil)");
                } else {
                    self.buf.push_str("<nil>");
                }
            }
            Kind::Bool(b) => match verb {
                't' | 'v' => self.pad(if *b { "true" } else { "false" }),
                _ => self.bad_verb(verb, Some(value))?,
            },
            Kind::Int(i) | Kind::Int64(i) => self.fmt_integer(i128::from(*i), true, verb, value)?,
            Kind::Byte(b) => self.fmt_integer(i128::from(*b), false, verb, value)?,
            Kind::Float(f) => self.fmt_float(*f, verb, value)?,
            Kind::Str(s) => self.fmt_string(s, verb, value)?,
            Kind::Map(map) => {
                self.buf.push_str(if self.flags.sharp_v { "map[string]interface {}{" } else { "map[" });
                for (i, (key, element)) in map.iter().enumerate() {
                    if i > 0 {
                        self.buf.push_str(if self.flags.sharp_v { ", " } else { " " });
                    }
                    self.print_value(&Kind::Str(key.as_str().into()), verb, depth + 1)?;
                    self.buf.push(':');
                    self.print_element(element, verb, depth)?;
                }
                self.buf.push(if self.flags.sharp_v { '}' } else { ']' });
            }
            Kind::List(items) => {
                self.buf.push_str(if self.flags.sharp_v { "[]interface {}{" } else { "[" });
                for (i, element) in items.iter().enumerate() {
                    if i > 0 {
                        self.buf.push_str(if self.flags.sharp_v { ", " } else { " " });
                    }
                    self.print_element(element, verb, depth)?;
                }
                self.buf.push(if self.flags.sharp_v { '}' } else { ']' });
            }
        }
        Ok(())
    }

    /// An `interface{}` element of a document map or slice; documents nest up to 10,000 deep.
    fn print_element(&mut self, element: &Value, verb: char, depth: usize) -> Result<()> {
        applyset_merge::value::deeper(|| self.print_value(&Kind::of(element), verb, depth + 1))
    }

    fn write_padding(&mut self, n: usize) {
        let pad = if self.flags.zero && !self.flags.minus { '0' } else { ' ' };
        self.buf.extend(std::iter::repeat_n(pad, n));
    }

    /// `fmt.pad`: width counts runes.
    fn pad(&mut self, s: &str) {
        let Some(width) = self.flags.width else {
            self.buf.push_str(s);
            return;
        };
        let fill = width.saturating_sub(s.chars().count());
        if self.flags.minus {
            self.buf.push_str(s);
            self.write_padding(fill);
        } else {
            self.write_padding(fill);
            self.buf.push_str(s);
        }
    }

    fn truncate<'s>(&self, s: &'s str) -> &'s str {
        match self.flags.precision {
            Some(p) => s.char_indices().nth(p).map_or(s, |(i, _)| &s[..i]),
            None => s,
        }
    }

    fn fmt_s(&mut self, s: &str) {
        let s = self.truncate(s);
        self.pad(s);
    }

    fn fmt_string(&mut self, s: &str, verb: char, value: &Kind) -> Result<()> {
        match verb {
            'v' if self.flags.sharp_v => self.fmt_q(s),
            'v' | 's' => self.fmt_s(s),
            'x' => self.fmt_sx(s, b"0123456789abcdefx"),
            'X' => self.fmt_sx(s, b"0123456789ABCDEFX"),
            'q' => self.fmt_q(s),
            _ => self.bad_verb(verb, Some(value))?,
        }
        Ok(())
    }

    /// `fmtSbx`: hex of the bytes, with `#` and space flags.
    fn fmt_sx(&mut self, s: &str, digits: &[u8; 17]) {
        let bytes = s.as_bytes();
        let length = self.flags.precision.map_or(bytes.len(), |p| p.min(bytes.len()));
        let mut width = 2 * length;
        if width == 0 {
            if let Some(w) = self.flags.width {
                self.write_padding(w);
            }
            return;
        }
        if self.flags.space {
            if self.flags.sharp {
                width *= 2;
            }
            width += length - 1;
        } else if self.flags.sharp {
            width += 2;
        }
        let fill = self.flags.width.map_or(0, |w| w.saturating_sub(width));
        if !self.flags.minus {
            self.write_padding(fill);
        }
        let prefix = ['0', digits[16] as char];
        if self.flags.sharp {
            self.buf.extend(prefix);
        }
        for (i, b) in bytes[..length].iter().enumerate() {
            if self.flags.space && i > 0 {
                self.buf.push(' ');
                if self.flags.sharp {
                    self.buf.extend(prefix);
                }
            }
            self.buf.push(digits[usize::from(b >> 4)] as char);
            self.buf.push(digits[usize::from(b & 0xf)] as char);
        }
        if self.flags.minus {
            self.write_padding(fill);
        }
    }

    fn fmt_q(&mut self, s: &str) {
        let s = self.truncate(s);
        let quoted = if self.flags.sharp && can_backquote(s) {
            format!("`{s}`")
        } else if self.flags.plus {
            ascii_only(&applyset_merge::value::go_quote(s))
        } else {
            applyset_merge::value::go_quote(s)
        };
        self.pad(&quoted);
    }
}

/// `strconv.CanBackquote`.
fn can_backquote(s: &str) -> bool {
    s.chars().all(|c| c == '\t' || !(c == '`' || c == '\u{7f}' || c == '\u{feff}' || (c as u32) < 0x20))
}

/// `strconv.QuoteToASCII` from a `Quote` result: escape what is not ASCII.
fn ascii_only(quoted: &str) -> String {
    let mut out = String::with_capacity(quoted.len());
    for c in quoted.chars() {
        match c as u32 {
            0..0x80 => out.push(c),
            n if n < 0x10000 => out.push_str(&format!("\\u{n:04x}")),
            n => out.push_str(&format!("\\U{n:08x}")),
        }
    }
    out
}
