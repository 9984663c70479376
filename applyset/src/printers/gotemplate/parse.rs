//! The parser: a port of `text/template/parse/parse.go`. Errors display as Go's `err.Error()`.

use std::collections::HashMap;

use super::error::{SyntaxError, TemplateError};
use super::lex::{Item, Tok, lex};
use super::literal;
use super::node::{Action, Arg, Branch, Command, List, Node, Number, Pipe, TemplateCall, Variable};

/// The template name kubectl gives its template (`template.New("output")`).
pub(super) const TEMPLATE_NAME: &str = "output";

/// Go's `maxStackDepth` for nested parentheses.
const MAX_PAREN_DEPTH: usize = 10_000;

/// Functions a template may call: Go's builtins plus kubectl's `exists` and `base64decode`.
pub(super) const FUNCTIONS: &[&str] = &[
    "and",
    "call",
    "html",
    "index",
    "slice",
    "js",
    "len",
    "not",
    "or",
    "print",
    "printf",
    "println",
    "urlquery",
    "eq",
    "ge",
    "gt",
    "le",
    "lt",
    "ne",
    "exists",
    "base64decode",
];

/// Every named template (`output` plus each `define`/`block`), by name.
pub(super) type Trees = HashMap<String, List>;

/// A parse error: [`TemplateError::Parse`].
type Result<T> = std::result::Result<T, TemplateError>;

/// Parses `text` into its named trees.
pub(super) fn parse(text: &str) -> Result<Trees> {
    let mut parser = Parser {
        items: lex(text),
        next: 0,
        lexed: 0,
        vars: Vec::new(),
        range_depth: 0,
        paren_depth: 0,
        action_line: 0,
        trees: Trees::new(),
    };
    let root = parser.parse_top()?;
    parser.add_tree(TEMPLATE_NAME.to_string(), root)?;
    Ok(parser.trees)
}

/// Go's `IsEmptyTree`: only whitespace text.
fn is_empty_tree(list: &List) -> bool {
    list.iter().all(|n| matches!(n, Node::Text(t) if t.trim_matches(|c: char| c.is_whitespace()).is_empty()))
}

struct Parser {
    items: Vec<Item>,
    /// Index of the next item `next()` returns.
    next: usize,
    /// The furthest item read so far: Go reports parse errors at its line (`t.token[0].line`).
    lexed: usize,
    vars: Vec<String>,
    range_depth: usize,
    paren_depth: usize,
    action_line: usize,
    trees: Trees,
}

impl Parser {
    /// Go's `Tree.add`: a name may be defined twice only if one definition is empty.
    fn add_tree(&mut self, name: String, list: List) -> Result<()> {
        match self.trees.get(&name) {
            Some(existing) if !is_empty_tree(existing) => {
                if !is_empty_tree(&list) {
                    return self.errorf(SyntaxError::MultipleDefinition(name));
                }
            }
            _ => {
                self.trees.insert(name, list);
            }
        }
        Ok(())
    }

    fn item(&mut self, i: usize) -> Item {
        let i = i.min(self.items.len() - 1);
        self.lexed = self.lexed.max(i);
        self.items[i].clone()
    }

    fn next_item(&mut self) -> Item {
        let item = self.item(self.next);
        self.next = (self.next + 1).min(self.items.len());
        item
    }

    fn backup(&mut self) {
        self.next -= 1;
    }

    fn peek(&mut self) -> Item {
        self.item(self.next)
    }

    fn next_non_space(&mut self) -> Item {
        loop {
            let item = self.next_item();
            if item.typ != Tok::Space {
                return item;
            }
        }
    }

    fn peek_non_space(&mut self) -> Item {
        let item = self.next_non_space();
        self.backup();
        item
    }

    /// Go's `Tree.errorf`: the error at the line of the furthest item read.
    fn errorf<T>(&self, error: SyntaxError) -> Result<T> {
        Err(TemplateError::Parse { line: self.items[self.lexed.min(self.items.len() - 1)].line, error })
    }

    fn unquote(&self, quoted: &str) -> Result<String> {
        literal::unquote(quoted).or_else(|error| self.errorf(error))
    }

    fn number(&self, text: &str, typ: Tok) -> Result<Number> {
        literal::number(text, typ == Tok::CharConstant).or_else(|error| self.errorf(error))
    }

    fn unexpected<T>(&self, token: &Item, context: &'static str) -> Result<T> {
        if token.typ == Tok::Error {
            let action_line = (self.action_line != 0 && self.action_line != token.line).then_some(self.action_line);
            return self.errorf(SyntaxError::Lex { message: token.val.clone(), action_line });
        }
        self.errorf(SyntaxError::Unexpected { token: token.describe(), context })
    }

    fn expect(&mut self, expected: Tok, context: &'static str) -> Result<Item> {
        let token = self.next_non_space();
        if token.typ != expected {
            return self.unexpected(&token, context);
        }
        Ok(token)
    }

    fn parse_top(&mut self) -> Result<List> {
        self.vars = vec!["$".to_string()];
        let mut root = List::new();
        while self.peek().typ != Tok::Eof {
            if self.peek().typ == Tok::LeftDelim {
                let delim_index = self.next;
                self.next_item();
                if self.next_non_space().typ == Tok::Define {
                    self.parse_definition()?;
                    continue;
                }
                self.next = delim_index;
            }
            match self.text_or_action()? {
                Parsed::Node(n) => root.push(n),
                end => return self.errorf(SyntaxError::Unmatched(end.describe())),
            }
        }
        Ok(root)
    }

    /// Parses a nested template body with fresh variables, as Go's new `Tree` does.
    fn sub_tree(&mut self, context: &'static str) -> Result<List> {
        let saved_vars = std::mem::replace(&mut self.vars, vec!["$".to_string()]);
        let saved_range = std::mem::replace(&mut self.range_depth, 0);
        let (list, end) = self.item_list()?;
        self.vars = saved_vars;
        self.range_depth = saved_range;
        if !matches!(end, Parsed::End) {
            return self.errorf(SyntaxError::Unexpected { token: end.describe().to_owned(), context });
        }
        Ok(list)
    }

    fn parse_definition(&mut self) -> Result<()> {
        const CONTEXT: &str = "define clause";
        let name = self.next_non_space();
        if name.typ != Tok::String && name.typ != Tok::RawString {
            return self.unexpected(&name, CONTEXT);
        }
        let name = self.unquote(&name.val)?;
        self.expect(Tok::RightDelim, CONTEXT)?;
        let list = self.sub_tree(CONTEXT)?;
        self.add_tree(name, list)
    }

    fn item_list(&mut self) -> Result<(List, Parsed)> {
        let mut list = List::new();
        while self.peek_non_space().typ != Tok::Eof {
            match self.text_or_action()? {
                Parsed::Node(n) => list.push(n),
                end => return Ok((list, end)),
            }
        }
        self.errorf(SyntaxError::UnexpectedEof)
    }

    fn text_or_action(&mut self) -> Result<Parsed> {
        let token = self.next_non_space();
        match token.typ {
            Tok::Text => Ok(Parsed::Node(Node::Text(token.val))),
            Tok::LeftDelim => {
                self.action_line = token.line;
                // Control structures nest as deep as the template text does.
                let result = applyset_merge::value::deeper(|| self.action());
                self.action_line = 0;
                result
            }
            _ => self.unexpected(&token, "input"),
        }
    }

    fn action(&mut self) -> Result<Parsed> {
        let token = self.next_non_space();
        let node = match token.typ {
            Tok::Block => self.block_control()?,
            Tok::Break | Tok::Continue => {
                let what = if token.typ == Tok::Break { "{{break}}" } else { "{{continue}}" };
                let next = self.next_non_space();
                if next.typ != Tok::RightDelim {
                    return self.unexpected(&next, what);
                }
                if self.range_depth == 0 {
                    return self.errorf(SyntaxError::OutsideRange(what));
                }
                if token.typ == Tok::Break { Node::Break } else { Node::Continue }
            }
            Tok::Else => {
                let peek = self.peek_non_space();
                if peek.typ != Tok::If && peek.typ != Tok::With {
                    self.expect(Tok::RightDelim, "else")?;
                }
                return Ok(Parsed::Else);
            }
            Tok::End => {
                self.expect(Tok::RightDelim, "end")?;
                return Ok(Parsed::End);
            }
            Tok::If => Node::If(self.parse_control("if")?),
            Tok::Range => Node::Range(self.parse_control("range")?),
            Tok::With => Node::With(self.parse_control("with")?),
            Tok::Template => self.template_control()?,
            _ => {
                self.backup();
                let pos = self.peek().pos;
                Node::Action(Action { pos, pipe: self.pipeline("command", Tok::RightDelim)? })
            }
        };
        Ok(Parsed::Node(node))
    }

    fn parse_control(&mut self, context: &'static str) -> Result<Branch> {
        let vars_len = self.vars.len();
        let result = self.parse_control_body(context);
        self.vars.truncate(vars_len);
        result
    }

    fn parse_control_body(&mut self, context: &'static str) -> Result<Branch> {
        let pipe = self.pipeline(context, Tok::RightDelim)?;
        if context == "range" {
            self.range_depth += 1;
        }
        let (list, next) = self.item_list()?;
        if context == "range" {
            self.range_depth -= 1;
        }
        let mut else_list = None;
        if matches!(next, Parsed::Else) {
            let peek = self.peek().typ;
            if context == "if" && peek == Tok::If {
                self.next_item();
                else_list = Some(vec![Node::If(self.parse_control("if")?)]);
            } else if context == "with" && peek == Tok::With {
                self.next_item();
                else_list = Some(vec![Node::With(self.parse_control("with")?)]);
            } else {
                let (list, next) = self.item_list()?;
                if !matches!(next, Parsed::End) {
                    return self.errorf(SyntaxError::ExpectedEnd(next.describe()));
                }
                else_list = Some(list);
            }
        }
        Ok(Branch { pipe, list, else_list })
    }

    fn block_control(&mut self) -> Result<Node> {
        const CONTEXT: &str = "block clause";
        let token = self.next_non_space();
        let name = self.template_name(&token, CONTEXT)?;
        let pipe = self.pipeline(CONTEXT, Tok::RightDelim)?;
        let list = self.sub_tree(CONTEXT)?;
        self.add_tree(name.clone(), list)?;
        Ok(Node::Template(TemplateCall { pos: token.pos, name, pipe: Some(pipe) }))
    }

    fn template_control(&mut self) -> Result<Node> {
        const CONTEXT: &str = "template clause";
        let token = self.next_non_space();
        let name = self.template_name(&token, CONTEXT)?;
        let mut pipe = None;
        if self.next_non_space().typ != Tok::RightDelim {
            self.backup();
            pipe = Some(self.pipeline(CONTEXT, Tok::RightDelim)?);
        }
        Ok(Node::Template(TemplateCall { pos: token.pos, name, pipe }))
    }

    fn template_name(&mut self, token: &Item, context: &'static str) -> Result<String> {
        match token.typ {
            Tok::String | Tok::RawString => self.unquote(&token.val),
            _ => self.unexpected(token, context),
        }
    }

    fn pipeline(&mut self, context: &'static str, end: Tok) -> Result<Pipe> {
        let start = self.peek_non_space();
        let mut pipe = Pipe { pos: start.pos, is_assign: false, decl: Vec::new(), cmds: Vec::new() };
        'decls: loop {
            let v = self.peek_non_space();
            if v.typ != Tok::Variable {
                break;
            }
            let v_index = self.next;
            self.next_non_space();
            let next = self.peek_non_space();
            match next.typ {
                Tok::Assign | Tok::Declare => {
                    pipe.is_assign = next.typ == Tok::Assign;
                    self.next_non_space();
                    pipe.decl.push(new_variable(v.pos, &v.val));
                    self.vars.push(v.val);
                }
                Tok::Char if next.val == "," => {
                    self.next_non_space();
                    pipe.decl.push(new_variable(v.pos, &v.val));
                    self.vars.push(v.val);
                    if context == "range" && pipe.decl.len() < 2 {
                        match self.peek_non_space().typ {
                            Tok::Variable | Tok::RightDelim | Tok::RightParen => continue 'decls,
                            _ => return self.errorf(SyntaxError::RangeInitialization),
                        }
                    }
                    return self.errorf(SyntaxError::TooManyDeclarations(context));
                }
                _ => {
                    // Not a declaration: re-read the variable as an operand.
                    self.next = v_index;
                }
            }
            break;
        }
        loop {
            let token = self.next_non_space();
            match token.typ {
                t if t == end => {
                    self.check_pipeline(&pipe, context)?;
                    return Ok(pipe);
                }
                Tok::Bool
                | Tok::CharConstant
                | Tok::Complex
                | Tok::Dot
                | Tok::Field
                | Tok::Identifier
                | Tok::Number
                | Tok::Nil
                | Tok::RawString
                | Tok::String
                | Tok::Variable
                | Tok::LeftParen => {
                    self.backup();
                    let cmd = self.command()?;
                    pipe.cmds.push(cmd);
                }
                _ => return self.unexpected(&token, context),
            }
        }
    }

    fn check_pipeline(&self, pipe: &Pipe, context: &'static str) -> Result<()> {
        if pipe.cmds.is_empty() {
            return self.errorf(SyntaxError::MissingValue(context));
        }
        for (i, c) in pipe.cmds.iter().enumerate().skip(1) {
            if matches!(
                c.args[0],
                Arg::Bool { .. } | Arg::Dot { .. } | Arg::Nil { .. } | Arg::Number { .. } | Arg::String { .. }
            ) {
                return self.errorf(SyntaxError::NonExecutableCommand(i + 1));
            }
        }
        Ok(())
    }

    fn command(&mut self) -> Result<Command> {
        let pos = self.peek_non_space().pos;
        let mut cmd = Command { pos, args: Vec::new() };
        loop {
            self.peek_non_space();
            if let Some(operand) = self.operand()? {
                cmd.args.push(operand);
            }
            let token = self.next_item();
            match token.typ {
                Tok::Space => continue,
                Tok::RightDelim | Tok::RightParen => self.backup(),
                Tok::Pipe => {}
                _ => return self.unexpected(&token, "operand"),
            }
            break;
        }
        if cmd.args.is_empty() {
            return self.errorf(SyntaxError::EmptyCommand);
        }
        Ok(cmd)
    }

    fn operand(&mut self) -> Result<Option<Arg>> {
        let Some(node) = self.term()? else { return Ok(None) };
        if self.peek().typ != Tok::Field {
            return Ok(Some(node));
        }
        let pos = self.peek().pos;
        let mut fields = Vec::new();
        while self.peek().typ == Tok::Field {
            fields.push(self.next_item().val[1..].to_string());
        }
        Ok(Some(match node {
            Arg::Field { mut ident, .. } => {
                ident.extend(fields);
                Arg::Field { pos, ident }
            }
            Arg::Variable(mut v) => {
                v.ident.extend(fields);
                v.pos = pos;
                Arg::Variable(v)
            }
            Arg::Bool { .. } | Arg::String { .. } | Arg::Number { .. } | Arg::Nil { .. } | Arg::Dot { .. } => {
                return self.errorf(SyntaxError::FieldOfTerm(node.to_string()));
            }
            other => Arg::Chain { pos, node: Box::new(other), fields },
        }))
    }

    fn term(&mut self) -> Result<Option<Arg>> {
        let token = self.next_non_space();
        let pos = token.pos;
        Ok(Some(match token.typ {
            Tok::Identifier => {
                if !FUNCTIONS.contains(&token.val.as_str()) {
                    return self.errorf(SyntaxError::UndefinedFunction(token.val));
                }
                Arg::Identifier { pos, name: token.val }
            }
            Tok::Dot => Arg::Dot { pos },
            Tok::Nil => Arg::Nil { pos },
            Tok::Variable => {
                let v = new_variable(pos, &token.val);
                if !self.vars.contains(&v.ident[0]) {
                    return self.errorf(SyntaxError::UndefinedVariable(v.ident[0].clone()));
                }
                Arg::Variable(v)
            }
            Tok::Field => Arg::Field { pos, ident: vec![token.val[1..].to_string()] },
            Tok::Bool => Arg::Bool { pos, value: token.val == "true" },
            Tok::CharConstant | Tok::Complex | Tok::Number => {
                Arg::Number { pos, number: self.number(&token.val, token.typ)? }
            }
            Tok::LeftParen => {
                // Go's maxStackDepth; the recursion below is bounded by it.
                if self.paren_depth >= MAX_PAREN_DEPTH {
                    return self.errorf(SyntaxError::TooDeep);
                }
                self.paren_depth += 1;
                let pipe = applyset_merge::value::deeper(|| self.pipeline("parenthesized pipeline", Tok::RightParen));
                self.paren_depth -= 1;
                Arg::Pipe(Box::new(pipe?))
            }
            Tok::String | Tok::RawString => {
                let text = self.unquote(&token.val)?;
                Arg::String { pos, quoted: token.val, text }
            }
            _ => {
                self.backup();
                return Ok(None);
            }
        }))
    }
}

/// What `textOrAction` produced: a node, or an `{{end}}`/`{{else}}` that closes a list.
enum Parsed {
    Node(Node),
    End,
    Else,
}

impl Parsed {
    fn describe(&self) -> &'static str {
        match self {
            Parsed::End => "{{end}}",
            Parsed::Else => "{{else}}",
            Parsed::Node(_) => "node",
        }
    }
}

fn new_variable(pos: usize, text: &str) -> Variable {
    Variable { pos, ident: text.split('.').map(str::to_string).collect() }
}
