//! kubectl's JSONPath template syntax (`k8s.io/client-go/util/jsonpath`'s parser), rebuilt rule
//! for rule, quirks included: `['a.b']` is read as the path `.a.b`, a union splits on every
//! comma, a filter's operator is the first run of `!<>=` characters.

use std::cell::Cell;

use super::JsonPathError;

/// One bound of an array subscript `[start:end:step]`.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(super) struct Param {
    pub value: i64,
    pub known: bool,
    /// The end of a plain index (`[2]` is `[2:3]`).
    pub derived: bool,
}

#[derive(Debug)]
pub(super) enum Node {
    /// An action (`{…}`), or a nested path (union member, filter side).
    List(Vec<Node>),
    Text(String),
    Field(String),
    /// The bounds live in cells because client-go writes the resolved (non-negative) bounds
    /// back into the node while evaluating, and later evaluations see them.
    Array(Cell<[Param; 3]>),
    Filter {
        left: Vec<Node>,
        right: Vec<Node>,
        operator: String,
    },
    Int(i64),
    Float(f64),
    Bool(bool),
    Wildcard,
    Recursive,
    Union(Vec<Vec<Node>>),
    Identifier(String),
}

/// A template: text and actions, in order.
pub(super) fn parse(text: &str) -> Result<Vec<Node>, JsonPathError> {
    let mut parser = Parser { input: text, pos: 0, start: 0, width: 0, root: Vec::new() };
    parser.parse_text()?;
    Ok(parser.root)
}

/// `parseAction`: one action's contents, parsed as `{text}`.
fn parse_action(text: &str) -> Result<Vec<Node>, JsonPathError> {
    let mut nodes = parse(&format!("{{{text}}}"))?;
    match nodes.drain(..).next() {
        Some(Node::List(nodes)) => Ok(nodes),
        _ => Ok(Vec::new()),
    }
}

const EOF: Option<char> = None;

struct Parser<'a> {
    input: &'a str,
    pos: usize,
    start: usize,
    width: usize,
    root: Vec<Node>,
}

impl Parser<'_> {
    fn consume_text(&mut self) -> String {
        let value = self.input[self.start..self.pos].to_owned();
        self.start = self.pos;
        value
    }

    fn next(&mut self) -> Option<char> {
        let Some(c) = self.input[self.pos..].chars().next() else {
            self.width = 0;
            return EOF;
        };
        self.width = c.len_utf8();
        self.pos += self.width;
        Some(c)
    }

    fn peek(&mut self) -> Option<char> {
        let c = self.next();
        self.backup();
        c
    }

    fn backup(&mut self) {
        self.pos -= self.width;
    }

    fn rest(&self) -> &str {
        &self.input[self.pos..]
    }

    /// The byte before the character just read (client-go's `input[pos-2]` escape test).
    fn escaped(&self) -> bool {
        self.pos >= 2 && self.input.as_bytes()[self.pos - 2] == b'\\'
    }

    /// Text up to the next `{`, then the action it opens; repeated until the input ends.
    fn parse_text(&mut self) -> Result<(), JsonPathError> {
        loop {
            if self.rest().starts_with('{') {
                if self.pos > self.start {
                    let text = self.consume_text();
                    self.root.push(Node::Text(text));
                }
                self.pos += 1;
                self.consume_text();
                let mut action = Vec::new();
                let result = self.parse_inside_action(&mut action);
                self.root.push(Node::List(action));
                result?;
                continue;
            }
            if self.next() == EOF {
                break;
            }
        }
        if self.pos > self.start {
            let text = self.consume_text();
            self.root.push(Node::Text(text));
        }
        Ok(())
    }

    /// An action's contents up to its `}`.
    fn parse_inside_action(&mut self, cur: &mut Vec<Node>) -> Result<(), JsonPathError> {
        loop {
            if self.rest().starts_with('}') {
                self.pos += 1;
                self.consume_text();
                return Ok(());
            }
            if self.rest().starts_with("[?(") {
                self.parse_filter(cur)?;
                continue;
            }
            if self.rest().starts_with("..") {
                self.parse_recursive(cur)?;
                continue;
            }
            match self.next() {
                None | Some('\r' | '\n') => return Err(JsonPathError::UnclosedAction),
                Some(' ' | '@' | '$') => {
                    self.consume_text();
                }
                Some('[') => self.parse_array(cur)?,
                Some(quote @ ('"' | '\'')) => self.parse_quote(cur, quote)?,
                Some('.') => self.parse_field(cur),
                Some(c) if c == '+' || c == '-' || c.is_ascii_digit() => {
                    self.backup();
                    self.parse_number(cur)?;
                }
                Some(c) if is_alphanumeric(c) => {
                    self.backup();
                    self.parse_identifier(cur);
                }
                Some(c) => return Err(JsonPathError::UnrecognizedCharacter(c)),
            }
        }
    }

    fn parse_identifier(&mut self, cur: &mut Vec<Node>) {
        loop {
            let c = self.next();
            if is_terminator(c) {
                self.backup();
                break;
            }
        }
        let value = self.consume_text();
        cur.push(match value.as_str() {
            "true" => Node::Bool(true),
            "false" => Node::Bool(false),
            _ => Node::Identifier(value),
        });
    }

    fn parse_recursive(&mut self, cur: &mut Vec<Node>) -> Result<(), JsonPathError> {
        if matches!(cur.last(), Some(Node::Recursive)) {
            return Err(JsonPathError::MultipleRecursiveDescent);
        }
        self.pos += 2;
        self.consume_text();
        cur.push(Node::Recursive);
        if self.peek().is_some_and(is_alphanumeric) {
            self.parse_field(cur);
        }
        Ok(())
    }

    fn parse_number(&mut self, cur: &mut Vec<Node>) -> Result<(), JsonPathError> {
        if matches!(self.peek(), Some('+' | '-')) {
            self.next();
        }
        loop {
            match self.next() {
                Some(c) if c == '.' || c.is_ascii_digit() => {}
                _ => {
                    self.backup();
                    break;
                }
            }
        }
        let value = self.consume_text();
        if let Some(i) = go_atoi(&value) {
            cur.push(Node::Int(i));
        } else if let Some(f) = go_parse_float(&value) {
            cur.push(Node::Float(f));
        } else {
            return Err(JsonPathError::InvalidNumber(value));
        }
        Ok(())
    }

    fn parse_array(&mut self, cur: &mut Vec<Node>) -> Result<(), JsonPathError> {
        loop {
            match self.next() {
                None | Some('\n') => return Err(JsonPathError::UnterminatedArray),
                Some(']') => break,
                Some(_) => {}
            }
        }
        let consumed = self.consume_text();
        let mut text = &consumed[1..consumed.len() - 1];
        if text == "*" {
            text = ":";
        }
        let parts: Vec<&str> = text.split(',').collect();
        if parts.len() > 1 {
            let union = parts
                .iter()
                .map(|part| parse_action(&format!("[{}]", part.trim_matches(' '))))
                .collect::<Result<Vec<_>, _>>()?;
            cur.push(Node::Union(union));
            return Ok(());
        }
        if let Some(key) = text.strip_prefix('\'').and_then(|t| t.strip_suffix('\'')).filter(|k| !k.contains('\''))
            && text.len() >= 2
        {
            cur.extend(parse_action(&format!(".{key}"))?);
            return Ok(());
        }
        let groups = slice_groups(text).ok_or_else(|| JsonPathError::InvalidArrayIndex(text.to_owned()))?;
        let mut params = [Param::default(); 3];
        for i in 0..3 {
            let mut value = groups[i];
            if !value.is_empty() {
                if i > 0 {
                    value = &value[1..];
                }
                if i > 0 && value.is_empty() {
                    params[i].known = false;
                } else {
                    params[i].known = true;
                    params[i].value = go_atoi(value).ok_or_else(|| JsonPathError::IndexNotANumber(value.to_owned()))?;
                }
            } else if i == 1 {
                params[i] = Param { value: params[0].value + 1, known: true, derived: true };
            }
        }
        cur.push(Node::Array(Cell::new(params)));
        Ok(())
    }

    fn parse_filter(&mut self, cur: &mut Vec<Node>) -> Result<(), JsonPathError> {
        self.pos += 3;
        self.consume_text();
        let (mut begin, mut end, mut pair) = (false, false, '\0');
        loop {
            match self.next() {
                None | Some('\n') => return Err(JsonPathError::UnterminatedFilter),
                Some(quote @ ('"' | '\'')) => {
                    if !begin {
                        begin = true;
                        pair = quote;
                        continue;
                    }
                    if !self.escaped() && quote == pair {
                        end = true;
                    }
                }
                Some(')') if begin == end => break,
                Some(_) => {}
            }
        }
        if self.next() != Some(']') {
            return Err(JsonPathError::UnclosedFilter);
        }
        let consumed = self.consume_text();
        let text = &consumed[..consumed.len() - 2];
        match split_comparison(text) {
            None => cur.push(Node::Filter { left: parse_action(text)?, right: Vec::new(), operator: "exists".into() }),
            Some((left, operator, right)) => cur.push(Node::Filter {
                left: parse_action(left)?,
                right: parse_action(right)?,
                operator: operator.to_owned(),
            }),
        }
        Ok(())
    }

    fn parse_quote(&mut self, cur: &mut Vec<Node>, quote: char) -> Result<(), JsonPathError> {
        loop {
            match self.next() {
                None | Some('\n') => return Err(JsonPathError::UnterminatedQuote),
                Some(c) if c == quote && !self.escaped() => break,
                Some(_) => {}
            }
        }
        let value = self.consume_text();
        let Some(text) = unquote(&value) else { return Err(JsonPathError::InvalidQuotedString(value)) };
        cur.push(Node::Text(text));
        Ok(())
    }

    fn parse_field(&mut self, cur: &mut Vec<Node>) {
        self.consume_text();
        loop {
            match self.next() {
                Some('\\') => {
                    self.next();
                }
                c if is_terminator(c) => {
                    self.backup();
                    break;
                }
                _ => {}
            }
        }
        let value = self.consume_text();
        cur.push(if value == "*" { Node::Wildcard } else { Node::Field(value.replace('\\', "")) });
    }
}

/// `^(-?[\d]*)(:-?[\d]*)?(:-?[\d]*)?$`: the three groups (empty when absent).
fn slice_groups(text: &str) -> Option<[&str; 3]> {
    fn number(s: &str, from: usize) -> usize {
        let b = s.as_bytes();
        let mut i = from;
        if b.get(i) == Some(&b'-') {
            i += 1;
        }
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        i
    }
    let mut groups = [""; 3];
    let first = number(text, 0);
    groups[0] = &text[..first];
    let mut at = first;
    for group in groups.iter_mut().skip(1) {
        if text.as_bytes().get(at) == Some(&b':') {
            let end = number(text, at + 1);
            *group = &text[at..end];
            at = end;
        }
    }
    (at == text.len()).then_some(groups)
}

/// `^([^!<>=]+)([!<>=]+)(.+?)$`.
fn split_comparison(text: &str) -> Option<(&str, &str, &str)> {
    let is_op = |c: char| matches!(c, '!' | '<' | '>' | '=');
    let op_start = text.find(is_op)?;
    if op_start == 0 {
        return None;
    }
    let op_end = text[op_start..].find(|c: char| !is_op(c)).map_or(text.len(), |i| op_start + i);
    if op_end == text.len() {
        return None;
    }
    Some((&text[..op_start], &text[op_start..op_end], &text[op_end..]))
}

fn is_terminator(c: Option<char>) -> bool {
    match c {
        None => true,
        Some(c) => matches!(c, ' ' | '\t' | '\r' | '\n' | '.' | ',' | '[' | ']' | '$' | '@' | '{' | '}'),
    }
}

fn is_alphanumeric(c: char) -> bool {
    c == '_' || c.is_alphabetic() || c.is_ascii_digit()
}

/// Go's `%#U`: `U+0021 '!'`.
pub(super) fn go_unicode(c: char) -> String {
    if c.is_control() { format!("U+{:04X}", c as u32) } else { format!("U+{:04X} '{c}'", c as u32) }
}

/// `strconv.Atoi` (an optional sign, then decimal digits, fitting 64 bits).
fn go_atoi(s: &str) -> Option<i64> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// `strconv.ParseFloat` for what the number rule can collect: a sign, digits and dots.
fn go_parse_float(s: &str) -> Option<f64> {
    let body = s.strip_prefix(['+', '-']).unwrap_or(s);
    if body.is_empty() || body == "." || body.matches('.').count() > 1 {
        return None;
    }
    s.parse().ok()
}

/// client-go's `UnquoteExtend`: a single- or double-quoted string with Go's escapes.
fn unquote(s: &str) -> Option<String> {
    let quote = s.chars().next()?;
    if s.len() < 2 || !s.ends_with(quote) || !matches!(quote, '"' | '\'') {
        return None;
    }
    let body = &s[1..s.len() - 1];
    if !body.contains(['\\', quote]) {
        return Some(body.to_owned());
    }
    let mut out = String::new();
    let mut bytes: Vec<u8> = Vec::new();
    let mut chars = body.chars().peekable();
    while let Some(c) = chars.next() {
        if c == quote {
            return None;
        }
        if c != '\\' {
            out.push(c);
            continue;
        }
        let escape = chars.next()?;
        let value = match escape {
            'a' => '\u{7}',
            'b' => '\u{8}',
            'f' => '\u{c}',
            'n' => '\n',
            'r' => '\r',
            't' => '\t',
            'v' => '\u{b}',
            '\\' => '\\',
            '\'' | '"' if escape == quote => escape,
            'x' | 'u' | 'U' => {
                let len = match escape {
                    'x' => 2,
                    'u' => 4,
                    _ => 8,
                };
                let hex: String = (0..len).map(|_| chars.next()).collect::<Option<String>>()?;
                let code = u32::from_str_radix(&hex, 16).ok()?;
                if escape == 'x' {
                    // A byte, not a character (Go keeps it raw).
                    bytes.clear();
                    bytes.push(code as u8);
                    out.push_str(&String::from_utf8_lossy(&bytes));
                    continue;
                }
                char::from_u32(code)?
            }
            '0'..='7' => {
                let rest: String = (0..2).map(|_| chars.next()).collect::<Option<String>>()?;
                let code = u32::from_str_radix(&format!("{escape}{rest}"), 8).ok().filter(|&c| c <= 255)?;
                bytes.clear();
                bytes.push(code as u8);
                out.push_str(&String::from_utf8_lossy(&bytes));
                continue;
            }
            _ => return None,
        };
        out.push(value);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(nodes: &[Node]) -> String {
        nodes
            .iter()
            .map(|node| match node {
                Node::List(inner) => format!("{{{}}}", shape(inner)),
                Node::Text(t) => format!("T({t})"),
                Node::Field(f) => format!("F({f})"),
                Node::Array(p) => {
                    let p = p.get();
                    format!("A({},{},{}:{},{})", p[0].value, p[1].value, p[1].derived, p[2].known, p[2].value)
                }
                Node::Filter { left, right, operator } => format!("?({} {operator} {})", shape(left), shape(right)),
                Node::Int(i) => format!("I({i})"),
                Node::Float(f) => format!("D({f})"),
                Node::Bool(b) => format!("B({b})"),
                Node::Wildcard => "*".into(),
                Node::Recursive => "..".into(),
                Node::Union(members) => {
                    format!("U({})", members.iter().map(|m| shape(m)).collect::<Vec<_>>().join("|"))
                }
                Node::Identifier(i) => format!("Id({i})"),
            })
            .collect::<Vec<_>>()
            .join(" ")
    }

    #[test]
    fn templates_parse_as_client_go_parses_them() {
        let cases = [
            ("hello {.a.b}", "T(hello ) {F(a) F(b)}"),
            ("{.items[*].metadata.name}", "{F(items) A(0,0,false:false,0) F(metadata) F(name)}"),
            ("{.a[-1]}", "{F(a) A(-1,0,true:false,0)}"),
            ("{.a[1:4:2]}", "{F(a) A(1,4,false:true,2)}"),
            ("{.a['x.y']}", "{F(a) F(x) F(y)}"),
            (r"{.a.b\.c}", "{F(a) F(b.c)}"),
            ("{.a[0,2]}", "{F(a) U(A(0,1,true:false,0)|A(2,3,true:false,0))}"),
            (
                "{range .items[*]}{.x}{\"\\n\"}{end}",
                "{Id(range) F(items) A(0,0,false:false,0)} {F(x)} {T(\n)} {Id(end)}",
            ),
            ("{.a[?(@.b==\"c\")].d}", "{F(a) ?(F(b) == T(c)) F(d)}"),
            ("{.a[?(@.b)]}", "{F(a) ?(F(b) exists )}"),
            ("{..name}", "{.. F(name)}"),
            ("{.a.*}", "{F(a) *}"),
            ("{1.5} {true} {-2}", "{D(1.5)} T( ) {B(true)} T( ) {I(-2)}"),
        ];
        for (template, want) in cases {
            assert_eq!(shape(&parse(template).unwrap()), want, "{template}");
        }
    }

    #[test]
    fn errors_are_client_go_s() {
        let cases = [
            ("{.a", "unclosed action"),
            ("{.a[1}", "unterminated array"),
            ("{.a[x]}", "invalid array index x"),
            ("{.a[?(@.b}", "unterminated filter"),
            ("{\"x}", "unterminated quoted string"),
            ("{....a}", "invalid multiple recursive descent"),
            ("{#}", "unrecognized character in action: U+0023 '#'"),
            ("{1.2.3}", "cannot parse number 1.2.3"),
            ("{.a[-]}", "array index - is not a number"),
        ];
        for (template, want) in cases {
            assert_eq!(parse(template).unwrap_err().to_string(), want, "{template}");
        }
    }

    #[test]
    fn quoted_strings_take_go_escapes() {
        assert_eq!(unquote(r#""a\tb\u00e9\x41""#).as_deref(), Some("a\tbéA"));
        assert_eq!(unquote(r"'it\'s'").as_deref(), Some("it's"));
        assert_eq!(unquote(r#""bad\q""#), None);
    }
}
