//! The executor: a port of `text/template/exec.go` over [`GoValue`]s.

use applyset_merge::Value;
use applyset_merge::value::deeper;

use super::error::{ExecError, TemplateError};
use super::funcs;
use super::node::{Arg, At, Branch, Command, List, Node, Number, Pipe, TemplateCall, Variable};
use super::parse::Trees;
use super::value::{GoValue, Kind};

/// Go's `maxExecDepth` for nested `{{template}}` calls.
pub(super) const MAX_EXEC_DEPTH: usize = 100_000;

/// Why a walk stopped early: `{{break}}`, `{{continue}}`, or an error (Go's panics), boxed so
/// that what every frame returns stays small.
pub(super) enum Flow {
    Break,
    Continue,
    Error(Box<TemplateError>),
}

pub(super) type R<T> = Result<T, Flow>;

pub(super) struct State<'t, 'd> {
    pub trees: &'t Trees,
    pub text: &'t str,
    /// The template being executed (named in error messages).
    pub name: &'t str,
    pub missing_key_error: bool,
    pub vars: Vec<(&'t str, GoValue<'d>)>,
    pub at: Option<At<'t>>,
    pub out: String,
    pub depth: usize,
}

impl<'t, 'd> State<'t, 'd> {
    pub fn run(&mut self, root: &'t List, data: &'d Value) -> Result<(), TemplateError> {
        let dot = GoValue::root(data);
        self.vars = vec![("$", dot.clone())];
        match self.walk_list(&dot, root) {
            Ok(()) => Ok(()),
            Err(Flow::Error(error)) => Err(*error),
            // The parser rejects break/continue outside range.
            Err(Flow::Break | Flow::Continue) => Ok(()),
        }
    }

    fn at(&mut self, at: At<'t>) {
        self.at = Some(at);
    }

    /// Go's `state.errorf`: the error with the location and context of the current node.
    pub fn error<T>(&self, error: ExecError) -> R<T> {
        let template = self.name.to_owned();
        let error = match self.at {
            None => TemplateError::ExecStart { template, error },
            Some(at) => {
                let pos = at.pos().min(self.text.len());
                let before = &self.text[..pos];
                let line = 1 + before.matches('\n').count();
                let column = before.rfind('\n').map_or(pos, |nl| pos - nl - 1);
                TemplateError::Exec { template, line, column, node: at.to_string(), error }
            }
        };
        Err(Flow::Error(Box::new(error)))
    }

    fn walk_list(&mut self, dot: &GoValue<'d>, list: &'t List) -> R<()> {
        for node in list {
            self.walk(dot, node)?;
        }
        Ok(())
    }

    fn walk(&mut self, dot: &GoValue<'d>, node: &'t Node) -> R<()> {
        match node {
            Node::Text(text) => self.out.push_str(text),
            Node::Action(action) => {
                self.at(At::Action(action));
                let value = self.eval_pipeline(dot, Some(&action.pipe))?;
                if action.pipe.decl.is_empty() {
                    self.at(At::Action(action));
                    if !value.is_valid() {
                        self.out.push_str("<no value>");
                    } else {
                        let text = self.sprint(&[value.kind])?;
                        self.out.push_str(&text);
                    }
                }
            }
            Node::If(branch) => deeper(|| self.walk_if_or_with(false, dot, branch))?,
            Node::With(branch) => deeper(|| self.walk_if_or_with(true, dot, branch))?,
            Node::Range(branch) => deeper(|| self.walk_range(dot, branch))?,
            Node::Template(call) => deeper(|| self.walk_template(dot, call))?,
            Node::Break => return Err(Flow::Break),
            Node::Continue => return Err(Flow::Continue),
        }
        Ok(())
    }

    /// `fmt.Sprint`, with unsupported verbs reported at the current node.
    pub fn sprint(&self, args: &[Kind]) -> R<String> {
        super::fmt::sprint(args).or_else(|e| self.error(ExecError::Unsupported(e.0)))
    }

    fn walk_if_or_with(&mut self, is_with: bool, dot: &GoValue<'d>, branch: &'t Branch) -> R<()> {
        let mark = self.vars.len();
        let result = (|| {
            let value = self.eval_pipeline(dot, Some(&branch.pipe))?;
            if value.kind.truth() {
                let dot = if is_with { &value } else { dot };
                self.walk_list(dot, &branch.list)
            } else if let Some(else_list) = &branch.else_list {
                self.walk_list(dot, else_list)
            } else {
                Ok(())
            }
        })();
        self.vars.truncate(mark);
        result
    }

    fn walk_range(&mut self, dot: &GoValue<'d>, branch: &'t Branch) -> R<()> {
        let mark = self.vars.len();
        let result = self.walk_range_body(dot, branch);
        self.vars.truncate(mark);
        match result {
            Err(Flow::Break) => Ok(()),
            other => other,
        }
    }

    fn walk_range_body(&mut self, dot: &GoValue<'d>, branch: &'t Branch) -> R<()> {
        let value = self.eval_pipeline(dot, Some(&branch.pipe))?.unboxed();
        let pipe = &branch.pipe;
        let mut ran = false;
        match &value.kind {
            Kind::Int(_) | Kind::Int64(_) | Kind::Byte(_) => {
                if pipe.decl.len() > 1 {
                    let shown = self.sprint(std::slice::from_ref(&value.kind))?;
                    return self.error(ExecError::RangeVariables(shown));
                }
                let n = match value.kind {
                    Kind::Int(n) | Kind::Int64(n) => n,
                    Kind::Byte(b) => i64::from(b),
                    _ => 0,
                };
                for i in 0..n.max(0) {
                    ran = true;
                    let elem = match value.kind {
                        Kind::Byte(_) => Kind::Byte(i as u8),
                        Kind::Int64(_) => Kind::Int64(i),
                        _ => Kind::Int(i),
                    };
                    let mark = self.vars.len();
                    self.one_iteration(branch, mark, GoValue::INVALID, GoValue::new(elem))?;
                }
            }
            Kind::List(items) => {
                for (i, item) in items.iter().enumerate() {
                    ran = true;
                    let mark = self.vars.len();
                    self.one_iteration(branch, mark, GoValue::new(Kind::Int(i as i64)), GoValue::element(item))?;
                }
            }
            Kind::Map(map) => {
                for (key, item) in map.iter() {
                    ran = true;
                    let mark = self.vars.len();
                    let key = GoValue::new(Kind::Str(key.as_str().into()));
                    self.one_iteration(branch, mark, key, GoValue::element(item))?;
                }
            }
            Kind::Invalid => {}
            other => {
                let shown = self.sprint(std::slice::from_ref(other))?;
                return self.error(ExecError::RangeOver(shown));
            }
        }
        if !ran && let Some(else_list) = &branch.else_list {
            self.walk_list(dot, else_list)?;
        }
        Ok(())
    }

    fn one_iteration(&mut self, branch: &'t Branch, mark: usize, index: GoValue<'d>, elem: GoValue<'d>) -> R<()> {
        let decl = &branch.pipe.decl;
        if !decl.is_empty() {
            if branch.pipe.is_assign {
                let first = if decl.len() > 1 { index.clone() } else { elem.clone() };
                self.set_var(&decl[0].ident[0], first)?;
            } else {
                self.set_top_var(1, elem.clone());
            }
        }
        if decl.len() > 1 {
            if branch.pipe.is_assign {
                self.set_var(&decl[1].ident[0], elem.clone())?;
            } else {
                self.set_top_var(2, index);
            }
        }
        let result = self.walk_list(&elem, &branch.list);
        self.vars.truncate(mark);
        match result {
            Err(Flow::Continue) => Ok(()),
            other => other,
        }
    }

    fn set_top_var(&mut self, n: usize, value: GoValue<'d>) {
        let len = self.vars.len();
        self.vars[len - n].1 = value;
    }

    fn set_var(&mut self, name: &str, value: GoValue<'d>) -> R<()> {
        match self.vars.iter_mut().rev().find(|(n, _)| *n == name) {
            Some(slot) => {
                slot.1 = value;
                Ok(())
            }
            None => self.error(ExecError::UndefinedVariable(name.to_owned())),
        }
    }

    fn walk_template(&mut self, dot: &GoValue<'d>, call: &'t TemplateCall) -> R<()> {
        self.at(At::Template(call));
        let Some(tree) = self.trees.get(&call.name) else {
            return self.error(ExecError::UndefinedTemplate(call.name.clone()));
        };
        if self.depth == MAX_EXEC_DEPTH {
            return self.error(ExecError::TooDeep);
        }
        let new_dot = self.eval_pipeline(dot, call.pipe.as_ref())?;
        let saved_vars = std::mem::replace(&mut self.vars, vec![("$", new_dot.clone())]);
        let saved_name = std::mem::replace(&mut self.name, &call.name);
        self.depth += 1;
        let result = self.walk_list(&new_dot, tree);
        self.depth -= 1;
        self.name = saved_name;
        self.vars = saved_vars;
        result
    }

    pub fn eval_pipeline(&mut self, dot: &GoValue<'d>, pipe: Option<&'t Pipe>) -> R<GoValue<'d>> {
        let Some(pipe) = pipe else { return Ok(GoValue::INVALID) };
        self.at(At::Pipe(pipe));
        let mut value: Option<GoValue<'d>> = None;
        for cmd in &pipe.cmds {
            value = Some(self.eval_command(dot, cmd, value)?.unboxed());
        }
        let value = value.unwrap_or(GoValue::INVALID);
        for var in &pipe.decl {
            if pipe.is_assign {
                self.set_var(&var.ident[0], value.clone())?;
            } else {
                self.vars.push((&var.ident[0], value.clone()));
            }
        }
        Ok(value)
    }

    fn not_a_function(&self, args: &[Arg], fin: &Option<GoValue<'d>>) -> R<()> {
        if args.len() > 1 || fin.is_some() {
            return self.error(ExecError::NotAFunction(args[0].to_string()));
        }
        Ok(())
    }

    fn eval_command(&mut self, dot: &GoValue<'d>, cmd: &'t Command, fin: Option<GoValue<'d>>) -> R<GoValue<'d>> {
        let first = &cmd.args[0];
        match first {
            Arg::Field { ident, .. } => return self.eval_field_node(dot, first, ident, &cmd.args, fin),
            Arg::Chain { .. } => return self.eval_chain_node(dot, first, &cmd.args, fin),
            Arg::Identifier { name, .. } => {
                self.at(At::Arg(first));
                return funcs::eval_call(self, dot, name, At::Command(cmd), &cmd.args[1..], fin);
            }
            Arg::Pipe(pipe) => {
                self.not_a_function(&cmd.args, &fin)?;
                // Parentheses nest up to Go's 10,000 levels.
                return deeper(|| self.eval_pipeline(dot, Some(pipe)));
            }
            Arg::Variable(var) => return self.eval_variable_node(dot, var, &cmd.args, fin),
            _ => {}
        }
        self.at(At::Arg(first));
        self.not_a_function(&cmd.args, &fin)?;
        match first {
            Arg::Bool { value, .. } => Ok(GoValue::new(Kind::Bool(*value))),
            Arg::Dot { .. } => Ok(dot.clone()),
            Arg::Nil { .. } => self.error(ExecError::NilCommand),
            Arg::Number { number, .. } => self.ideal_constant(number),
            Arg::String { text, .. } => Ok(GoValue::new(Kind::Str(text.clone().into()))),
            _ => self.error(ExecError::NotACommand(first.to_string())),
        }
    }

    pub fn ideal_constant(&self, number: &Number) -> R<GoValue<'d>> {
        let text = &number.text;
        let is_hex_int =
            text.len() > 2 && text.starts_with('0') && text[1..].starts_with(['x', 'X']) && !text.contains(['p', 'P']);
        let looks_float = !is_hex_int && !text.starts_with('\'') && text.contains(['.', 'e', 'E', 'p', 'P']);
        match (number.float, number.int, number.uint) {
            (Some(f), _, _) if looks_float => Ok(GoValue::new(Kind::Float(f))),
            (_, Some(i), _) => Ok(GoValue::new(Kind::Int(i))),
            (_, None, Some(_)) => self.error(ExecError::IntOverflow(text.clone())),
            _ => Ok(GoValue::INVALID),
        }
    }

    pub fn eval_field_node(
        &mut self,
        dot: &GoValue<'d>,
        node: &'t Arg,
        ident: &'t [String],
        args: &[Arg],
        fin: Option<GoValue<'d>>,
    ) -> R<GoValue<'d>> {
        self.at(At::Arg(node));
        self.eval_field_chain(dot.clone(), ident, args, fin)
    }

    pub fn eval_chain_node(
        &mut self,
        dot: &GoValue<'d>,
        chain: &'t Arg,
        args: &[Arg],
        fin: Option<GoValue<'d>>,
    ) -> R<GoValue<'d>> {
        self.at(At::Arg(chain));
        let Arg::Chain { node, fields, .. } = chain else { return self.error(ExecError::NotAChain) };
        if matches!(**node, Arg::Nil { .. }) {
            return self.error(ExecError::NilIndirection(chain.to_string()));
        }
        let receiver = funcs::eval_arg(self, dot, None, node)?;
        self.eval_field_chain(receiver, fields, args, fin)
    }

    pub fn eval_variable_node(
        &mut self,
        _dot: &GoValue<'d>,
        var: &'t Variable,
        args: &[Arg],
        fin: Option<GoValue<'d>>,
    ) -> R<GoValue<'d>> {
        self.at(At::Variable(var));
        let name = &var.ident[0];
        let Some((_, value)) = self.vars.iter().rev().find(|(n, _)| n == name) else {
            return self.error(ExecError::UndefinedVariable(name.clone()));
        };
        let value = value.clone();
        if var.ident.len() == 1 {
            if !args.is_empty() {
                self.not_a_function(args, &fin)?;
            } else if fin.is_some() {
                return self.error(ExecError::NotAFunction(var.to_string()));
            }
            return Ok(value);
        }
        self.eval_field_chain(value, &var.ident[1..], args, fin)
    }

    fn eval_field_chain(
        &mut self,
        mut receiver: GoValue<'d>,
        ident: &[String],
        args: &[Arg],
        fin: Option<GoValue<'d>>,
    ) -> R<GoValue<'d>> {
        let (last, init) = ident.split_last().expect("a field chain has a field");
        for name in init {
            receiver = self.eval_field(name, &[], false, receiver)?;
        }
        self.eval_field(last, args, fin.is_some(), receiver)
    }

    fn eval_field(&mut self, name: &str, args: &[Arg], has_final: bool, receiver: GoValue<'d>) -> R<GoValue<'d>> {
        if !receiver.is_valid() {
            if self.missing_key_error {
                return self.error(ExecError::NilData(name.to_owned()));
            }
            return Ok(GoValue::INVALID);
        }
        let typ = receiver.type_name();
        match receiver.kind {
            Kind::Nil => self.error(ExecError::NilPointer { type_name: typ, field: name.to_owned() }),
            Kind::Map(map) => {
                if args.len() > 1 || has_final {
                    return self.error(ExecError::NotAMethod(name.to_owned()));
                }
                match map.get(name) {
                    Some(v) => Ok(GoValue::element(v)),
                    None if self.missing_key_error => self.error(ExecError::MissingKey(name.to_owned())),
                    None => Ok(GoValue::INVALID),
                }
            }
            _ => self.error(ExecError::NoField { field: name.to_owned(), type_name: typ }),
        }
    }
}
