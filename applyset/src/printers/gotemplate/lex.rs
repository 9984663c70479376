//! The lexer: a port of `text/template/parse/lex.go`. It produces the whole token stream up
//! front (ending with EOF or the first error token), which is equivalent to Go's lazy lexer
//! because the parser stops at the first error either way.

/// Token kinds; the keyword kinds come last so `is_keyword` mirrors Go's `typ > itemKeyword`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Tok {
    Error,
    Bool,
    Char,
    CharConstant,
    Complex,
    Assign,
    Declare,
    Eof,
    Field,
    Identifier,
    LeftDelim,
    LeftParen,
    Number,
    Pipe,
    RawString,
    RightDelim,
    RightParen,
    Space,
    String,
    Text,
    Variable,
    // Keywords.
    Block,
    Break,
    Continue,
    Dot,
    Define,
    Else,
    End,
    If,
    Nil,
    Range,
    Template,
    With,
}

#[derive(Debug, Clone)]
pub(super) struct Item {
    pub typ: Tok,
    pub pos: usize,
    pub val: String,
    pub line: usize,
}

impl Item {
    /// Go's `item.String()`, used in parse error messages.
    pub fn describe(&self) -> String {
        match self.typ {
            Tok::Eof => "EOF".to_string(),
            Tok::Error => self.val.clone(),
            t if t >= Tok::Block => format!("<{}>", self.val),
            _ if self.val.chars().count() > 10 => {
                // `%.10q...`: quote the first ten runes.
                let head: String = self.val.chars().take(10).collect();
                format!("{}...", applyset_merge::value::go_quote(&head))
            }
            _ => applyset_merge::value::go_quote(&self.val),
        }
    }
}

fn keyword(word: &str) -> Option<Tok> {
    Some(match word {
        "block" => Tok::Block,
        "break" => Tok::Break,
        "continue" => Tok::Continue,
        "define" => Tok::Define,
        "else" => Tok::Else,
        "end" => Tok::End,
        "if" => Tok::If,
        "nil" => Tok::Nil,
        "range" => Tok::Range,
        "template" => Tok::Template,
        "with" => Tok::With,
        _ => return None,
    })
}

const LEFT_DELIM: &str = "{{";
const RIGHT_DELIM: &str = "}}";
const LEFT_COMMENT: &str = "/*";
const RIGHT_COMMENT: &str = "*/";

pub(super) fn is_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\r' | '\n')
}

pub(super) fn is_alphanumeric(c: char) -> bool {
    c == '_' || c.is_alphabetic() || c.is_numeric()
}

fn has_left_trim_marker(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 2 && b[0] == b'-' && is_space(b[1] as char)
}

fn has_right_trim_marker(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 2 && is_space(b[0] as char) && b[1] == b'-'
}

const SPACE_CHARS: &[char] = &[' ', '\t', '\r', '\n'];

struct Lexer<'a> {
    input: &'a str,
    start: usize,
    pos: usize,
    line: usize,
    start_line: usize,
    paren_depth: i32,
    items: Vec<Item>,
}

/// Lexes `input`; the last item is always `Eof` or `Error`.
pub(super) fn lex(input: &str) -> Vec<Item> {
    let mut l = Lexer { input, start: 0, pos: 0, line: 1, start_line: 1, paren_depth: 0, items: Vec::new() };
    let mut inside_action = false;
    loop {
        let done = if inside_action { l.inside_action() } else { l.text() };
        match l.items.last().map(|i| i.typ) {
            Some(Tok::Eof | Tok::Error) => return l.items,
            Some(Tok::LeftDelim) => inside_action = true,
            Some(Tok::RightDelim) => inside_action = false,
            _ => {}
        }
        if done {
            return l.items;
        }
    }
}

impl Lexer<'_> {
    fn rest(&self) -> &str {
        &self.input[self.pos..]
    }

    fn next_char(&mut self) -> Option<char> {
        let c = self.rest().chars().next()?;
        self.pos += c.len_utf8();
        if c == '\n' {
            self.line += 1;
        }
        Some(c)
    }

    fn peek_char(&self) -> Option<char> {
        self.rest().chars().next()
    }

    fn backup(&mut self, c: char) {
        self.pos -= c.len_utf8();
        if c == '\n' {
            self.line -= 1;
        }
    }

    fn this_item(&mut self, typ: Tok) -> Item {
        let item =
            Item { typ, pos: self.start, val: self.input[self.start..self.pos].to_string(), line: self.start_line };
        self.start = self.pos;
        self.start_line = self.line;
        item
    }

    fn emit(&mut self, typ: Tok) {
        let item = self.this_item(typ);
        self.items.push(item);
    }

    fn ignore(&mut self) {
        self.line += self.input[self.start..self.pos].matches('\n').count();
        self.start = self.pos;
        self.start_line = self.line;
    }

    fn errorf(&mut self, msg: String) -> bool {
        self.items.push(Item { typ: Tok::Error, pos: self.start, val: msg, line: self.start_line });
        true
    }

    fn accept(&mut self, valid: &str) -> bool {
        match self.peek_char() {
            Some(c) if valid.contains(c) => {
                self.next_char();
                true
            }
            _ => false,
        }
    }

    fn accept_run(&mut self, valid: &str) {
        while self.accept(valid) {}
    }

    /// `lexText`; returns true when lexing is finished.
    fn text(&mut self) -> bool {
        if let Some(x) = self.rest().find(LEFT_DELIM) {
            if x > 0 {
                self.pos += x;
                let delim_end = self.pos + LEFT_DELIM.len();
                let mut trim = 0;
                if has_left_trim_marker(&self.input[delim_end..]) {
                    let text = &self.input[self.start..self.pos];
                    trim = text.len() - text.trim_end_matches(SPACE_CHARS).len();
                }
                self.pos -= trim;
                self.line += self.input[self.start..self.pos].matches('\n').count();
                let item = self.this_item(Tok::Text);
                self.pos += trim;
                self.ignore();
                if !item.val.is_empty() {
                    self.items.push(item);
                }
            }
            return self.left_delim();
        }
        self.pos = self.input.len();
        if self.pos > self.start {
            self.line += self.input[self.start..self.pos].matches('\n').count();
            self.emit(Tok::Text);
        }
        self.emit(Tok::Eof);
        true
    }

    fn at_right_delim(&self) -> (bool, bool) {
        let rest = self.rest();
        if has_right_trim_marker(rest) && rest[2..].starts_with(RIGHT_DELIM) {
            return (true, true);
        }
        (rest.starts_with(RIGHT_DELIM), false)
    }

    fn left_delim(&mut self) -> bool {
        self.pos += LEFT_DELIM.len();
        let trim = has_left_trim_marker(self.rest());
        let after_marker = if trim { 2 } else { 0 };
        if self.input[self.pos + after_marker..].starts_with(LEFT_COMMENT) {
            self.pos += after_marker;
            self.ignore();
            return self.comment();
        }
        let item = self.this_item(Tok::LeftDelim);
        self.pos += after_marker;
        self.ignore();
        self.paren_depth = 0;
        self.items.push(item);
        false
    }

    fn comment(&mut self) -> bool {
        self.pos += LEFT_COMMENT.len();
        let Some(x) = self.rest().find(RIGHT_COMMENT) else {
            return self.errorf("unclosed comment".into());
        };
        self.pos += x + RIGHT_COMMENT.len();
        let (delim, trim) = self.at_right_delim();
        if !delim {
            return self.errorf("comment ends before closing delimiter".into());
        }
        self.line += self.input[self.start..self.pos].matches('\n').count();
        self.start = self.pos;
        self.start_line = self.line;
        if trim {
            self.pos += 2;
        }
        self.pos += RIGHT_DELIM.len();
        if trim {
            let rest = self.rest();
            self.pos += rest.len() - rest.trim_start_matches(SPACE_CHARS).len();
        }
        self.ignore();
        false
    }

    fn right_delim(&mut self) -> bool {
        let (_, trim) = self.at_right_delim();
        if trim {
            self.pos += 2;
            self.ignore();
        }
        self.pos += RIGHT_DELIM.len();
        let item = self.this_item(Tok::RightDelim);
        if trim {
            let rest = self.rest();
            self.pos += rest.len() - rest.trim_start_matches(SPACE_CHARS).len();
            self.ignore();
        }
        self.items.push(item);
        false
    }

    fn inside_action(&mut self) -> bool {
        let (delim, _) = self.at_right_delim();
        if delim {
            if self.paren_depth == 0 {
                return self.right_delim();
            }
            return self.errorf("unclosed left paren".into());
        }
        let Some(c) = self.next_char() else {
            return self.errorf("unclosed action".into());
        };
        match c {
            c if is_space(c) => {
                self.backup(c);
                self.space();
            }
            '=' => self.emit(Tok::Assign),
            ':' => {
                if self.next_char() != Some('=') {
                    return self.errorf("expected :=".into());
                }
                self.emit(Tok::Declare);
            }
            '|' => self.emit(Tok::Pipe),
            '"' => return self.quote(),
            '`' => return self.raw_quote(),
            '$' => return self.variable(),
            '\'' => return self.char_constant(),
            '.' if !matches!(self.peek_char(), Some('0'..='9')) => return self.field_or_variable(Tok::Field),
            '.' | '+' | '-' | '0'..='9' => {
                self.backup(c);
                return self.number();
            }
            c if is_alphanumeric(c) => {
                self.backup(c);
                return self.identifier();
            }
            '(' => {
                self.paren_depth += 1;
                self.emit(Tok::LeftParen);
            }
            ')' => {
                self.paren_depth -= 1;
                if self.paren_depth < 0 {
                    return self.errorf("unexpected right paren".into());
                }
                self.emit(Tok::RightParen);
            }
            c if c.is_ascii() && !c.is_ascii_control() => self.emit(Tok::Char),
            c => return self.errorf(format!("unrecognized character in action: {}", sharp_u(c))),
        }
        false
    }

    fn space(&mut self) {
        let mut spaces = 0;
        while self.peek_char().is_some_and(is_space) {
            self.next_char();
            spaces += 1;
        }
        let before = &self.input[self.pos - 1..];
        if has_right_trim_marker(before) && before[2..].starts_with(RIGHT_DELIM) {
            let last = self.input[..self.pos].chars().next_back().unwrap_or(' ');
            self.backup(last);
            if spaces == 1 {
                self.right_delim();
                return;
            }
        }
        self.emit(Tok::Space);
    }

    fn at_terminator(&self) -> bool {
        match self.peek_char() {
            None => true,
            Some(c) if is_space(c) || matches!(c, '.' | ',' | '|' | ':' | ')' | '(') => true,
            _ => self.rest().starts_with(RIGHT_DELIM),
        }
    }

    fn identifier(&mut self) -> bool {
        while let Some(c) = self.peek_char().filter(|&c| is_alphanumeric(c)) {
            self.pos += c.len_utf8();
        }
        if !self.at_terminator() {
            let c = self.peek_char().unwrap_or('\u{0}');
            return self.errorf(format!("bad character {}", sharp_u(c)));
        }
        let word = &self.input[self.start..self.pos];
        let typ = match keyword(word) {
            Some(k) => k,
            None if word == "true" || word == "false" => Tok::Bool,
            None => Tok::Identifier,
        };
        self.emit(typ);
        false
    }

    fn variable(&mut self) -> bool {
        if self.at_terminator() {
            self.emit(Tok::Variable);
            return false;
        }
        self.field_or_variable(Tok::Variable)
    }

    fn field_or_variable(&mut self, typ: Tok) -> bool {
        if self.at_terminator() {
            self.emit(if typ == Tok::Variable { Tok::Variable } else { Tok::Dot });
            return false;
        }
        while let Some(c) = self.peek_char().filter(|&c| is_alphanumeric(c)) {
            self.pos += c.len_utf8();
        }
        if !self.at_terminator() {
            let c = self.peek_char().unwrap_or('\u{0}');
            return self.errorf(format!("bad character {}", sharp_u(c)));
        }
        self.emit(typ);
        false
    }

    fn char_constant(&mut self) -> bool {
        loop {
            match self.next_char() {
                Some('\\') => match self.next_char() {
                    Some(c) if c != '\n' => {}
                    _ => return self.errorf("unterminated character constant".into()),
                },
                None | Some('\n') => return self.errorf("unterminated character constant".into()),
                Some('\'') => break,
                _ => {}
            }
        }
        self.emit(Tok::CharConstant);
        false
    }

    fn number(&mut self) -> bool {
        if !self.scan_number() {
            return self.errorf(format!("bad number syntax: {}", go_quote_str(&self.input[self.start..self.pos])));
        }
        if matches!(self.peek_char(), Some('+' | '-')) {
            if !self.scan_number() || !self.input[..self.pos].ends_with('i') {
                return self.errorf(format!("bad number syntax: {}", go_quote_str(&self.input[self.start..self.pos])));
            }
            self.emit(Tok::Complex);
            return false;
        }
        self.emit(Tok::Number);
        false
    }

    fn scan_number(&mut self) -> bool {
        self.accept("+-");
        let mut digits = "0123456789_";
        if self.accept("0") {
            if self.accept("xX") {
                digits = "0123456789abcdefABCDEF_";
            } else if self.accept("oO") {
                digits = "01234567_";
            } else if self.accept("bB") {
                digits = "01_";
            }
        }
        self.accept_run(digits);
        if self.accept(".") {
            self.accept_run(digits);
        }
        if digits.len() == 11 && self.accept("eE") {
            self.accept("+-");
            self.accept_run("0123456789_");
        }
        if digits.len() == 23 && self.accept("pP") {
            self.accept("+-");
            self.accept_run("0123456789_");
        }
        self.accept("i");
        if self.peek_char().is_some_and(is_alphanumeric) {
            self.next_char();
            return false;
        }
        true
    }

    fn quote(&mut self) -> bool {
        loop {
            match self.next_char() {
                Some('\\') => match self.next_char() {
                    Some(c) if c != '\n' => {}
                    _ => return self.errorf("unterminated quoted string".into()),
                },
                None | Some('\n') => return self.errorf("unterminated quoted string".into()),
                Some('"') => break,
                _ => {}
            }
        }
        self.emit(Tok::String);
        false
    }

    fn raw_quote(&mut self) -> bool {
        loop {
            match self.next_char() {
                None => return self.errorf("unterminated raw quoted string".into()),
                Some('`') => break,
                _ => {}
            }
        }
        self.emit(Tok::RawString);
        false
    }
}

fn go_quote_str(s: &str) -> String {
    applyset_merge::value::go_quote(s)
}

/// Go's `%#U`: `U+0041 'A'` (the quoted form only for printable runes).
pub(super) fn sharp_u(c: char) -> String {
    let code = format!("U+{:04X}", c as u32);
    if super::fmt::is_print(c) { format!("{code} '{c}'") } else { code }
}
