//! The parse tree (a port of `text/template/parse/node.go`), including Go's `String()` forms,
//! which appear verbatim in exec error messages (`executing "output" at <.a.b>`).

use std::fmt;

/// A sequence of nodes (Go's `ListNode`).
pub(super) type List = Vec<Node>;

#[derive(Debug)]
pub(super) enum Node {
    Text(String),
    Action(Action),
    If(Branch),
    Range(Branch),
    With(Branch),
    Template(TemplateCall),
    Break,
    Continue,
}

#[derive(Debug)]
pub(super) struct Action {
    pub pos: usize,
    pub pipe: Pipe,
}

/// `if`, `range` and `with`.
#[derive(Debug)]
pub(super) struct Branch {
    pub pipe: Pipe,
    pub list: List,
    pub else_list: Option<List>,
}

#[derive(Debug)]
pub(super) struct TemplateCall {
    pub pos: usize,
    pub name: String,
    pub pipe: Option<Pipe>,
}

#[derive(Debug)]
pub(super) struct Pipe {
    pub pos: usize,
    pub is_assign: bool,
    pub decl: Vec<Variable>,
    pub cmds: Vec<Command>,
}

#[derive(Debug)]
pub(super) struct Command {
    pub pos: usize,
    pub args: Vec<Arg>,
}

/// `$x` or `$x.a.b`: the variable name (with `$`) and the fields after it.
#[derive(Debug)]
pub(super) struct Variable {
    pub pos: usize,
    pub ident: Vec<String>,
}

/// A literal number with every interpretation Go's `NumberNode` records.
#[derive(Debug, Clone)]
pub(super) struct Number {
    pub text: String,
    pub int: Option<i64>,
    pub uint: Option<u64>,
    pub float: Option<f64>,
}

/// An operand of a command.
#[derive(Debug)]
pub(super) enum Arg {
    Field { pos: usize, ident: Vec<String> },
    Variable(Variable),
    Chain { pos: usize, node: Box<Arg>, fields: Vec<String> },
    Identifier { pos: usize, name: String },
    Dot { pos: usize },
    Nil { pos: usize },
    Bool { pos: usize, value: bool },
    Number { pos: usize, number: Number },
    String { pos: usize, quoted: String, text: String },
    Pipe(Box<Pipe>),
}

impl Arg {
    pub fn pos(&self) -> usize {
        match self {
            Arg::Field { pos, .. }
            | Arg::Chain { pos, .. }
            | Arg::Identifier { pos, .. }
            | Arg::Dot { pos }
            | Arg::Nil { pos }
            | Arg::Bool { pos, .. }
            | Arg::Number { pos, .. }
            | Arg::String { pos, .. } => *pos,
            Arg::Variable(v) => v.pos,
            Arg::Pipe(p) => p.pos,
        }
    }
}

/// The node an exec error is reported at (Go's `state.node`).
#[derive(Clone, Copy)]
pub(super) enum At<'t> {
    Action(&'t Action),
    Template(&'t TemplateCall),
    Pipe(&'t Pipe),
    Command(&'t Command),
    Arg(&'t Arg),
    Variable(&'t Variable),
}

impl At<'_> {
    pub fn pos(&self) -> usize {
        match self {
            At::Action(a) => a.pos,
            At::Template(t) => t.pos,
            At::Pipe(p) => p.pos,
            At::Command(c) => c.pos,
            At::Arg(a) => a.pos(),
            At::Variable(v) => v.pos,
        }
    }
}

impl fmt::Display for At<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            At::Action(a) => write!(f, "{{{{{}}}}}", a.pipe),
            At::Template(t) => write!(f, "{t}"),
            At::Pipe(p) => write!(f, "{p}"),
            At::Command(c) => write!(f, "{c}"),
            At::Arg(a) => write!(f, "{a}"),
            At::Variable(v) => write!(f, "{v}"),
        }
    }
}

impl fmt::Display for TemplateCall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = applyset_merge::value::go_quote(&self.name);
        match &self.pipe {
            Some(pipe) => write!(f, "{{{{template {name} {pipe}}}}}"),
            None => write!(f, "{{{{template {name}}}}}"),
        }
    }
}

impl fmt::Display for Pipe {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.decl.is_empty() {
            for (i, v) in self.decl.iter().enumerate() {
                if i > 0 {
                    f.write_str(", ")?;
                }
                write!(f, "{v}")?;
            }
            f.write_str(if self.is_assign { " = " } else { " := " })?;
        }
        for (i, c) in self.cmds.iter().enumerate() {
            if i > 0 {
                f.write_str(" | ")?;
            }
            write!(f, "{c}")?;
        }
        Ok(())
    }
}

impl fmt::Display for Command {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, arg) in self.args.iter().enumerate() {
            if i > 0 {
                f.write_str(" ")?;
            }
            match arg {
                Arg::Pipe(p) => write!(f, "({p})")?,
                other => write!(f, "{other}")?,
            }
        }
        Ok(())
    }
}

impl fmt::Display for Variable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.ident.join("."))
    }
}

impl fmt::Display for Arg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Arg::Field { ident, .. } => {
                for id in ident {
                    write!(f, ".{id}")?;
                }
                Ok(())
            }
            Arg::Variable(v) => write!(f, "{v}"),
            Arg::Chain { node, fields, .. } => {
                match &**node {
                    Arg::Pipe(p) => write!(f, "({p})")?,
                    other => write!(f, "{other}")?,
                }
                for field in fields {
                    write!(f, ".{field}")?;
                }
                Ok(())
            }
            Arg::Identifier { name, .. } => f.write_str(name),
            Arg::Dot { .. } => f.write_str("."),
            Arg::Nil { .. } => f.write_str("nil"),
            Arg::Bool { value, .. } => write!(f, "{value}"),
            Arg::Number { number, .. } => f.write_str(&number.text),
            Arg::String { quoted, .. } => f.write_str(quoted),
            Arg::Pipe(p) => write!(f, "{p}"),
        }
    }
}

/// Parenthesised pipelines nest up to 10,000 deep; drop them from a worklist rather than
/// recursing once per level.
impl Drop for Pipe {
    fn drop(&mut self) {
        let mut nested = Vec::new();
        take_nested_pipes(self, &mut nested);
        while let Some(mut pipe) = nested.pop() {
            take_nested_pipes(&mut pipe, &mut nested);
        }
    }
}

fn take_nested_pipes(pipe: &mut Pipe, out: &mut Vec<Pipe>) {
    for cmd in &mut pipe.cmds {
        for arg in &mut cmd.args {
            let slot = match arg {
                Arg::Chain { node, .. } => &mut **node,
                other => other,
            };
            if let Arg::Pipe(_) = slot
                && let Arg::Pipe(p) = std::mem::replace(slot, Arg::Dot { pos: 0 })
            {
                out.push(*p);
            }
        }
    }
}
