//! Evaluation of a parsed template over a JSON value, as client-go's `JSONPath.FindResults`
//! and `PrintResults` do it: the same `range`/`end` bookkeeping, the same printing (strings
//! raw, numbers with `%v`, objects and arrays as compact JSON), the same errors.
//!
//! One deliberate difference: client-go walks map entries (`*`, `..`) in Go's random map
//! order; here they come in key order, so the output is stable.

use std::borrow::Cow;

use applyset_merge::Value;
use applyset_merge::value::go_v_float;

use super::JsonPathError;
use super::parse::{Node, Param};

/// One result: a value, or Go's invalid `reflect.Value` (the input of a `range` body run for a
/// null member), which prints as `<no value>`.
#[derive(Clone, Debug)]
pub(super) enum Item<'a> {
    NoValue,
    Value(Cow<'a, Value>),
}

impl Item<'_> {
    /// `template.Indirect`: the value, unless it is a JSON null.
    fn indirect(&self) -> Option<&Value> {
        match self {
            Item::Value(v) if !matches!(**v, Value::Null) => Some(v),
            _ => None,
        }
    }
}

pub(super) struct Evaluator {
    pub allow_missing_keys: bool,
    begin_range: usize,
    in_range: usize,
    end_range: usize,
    /// The root node (by index) where the innermost finished `range` ended.
    last_end_node: Option<usize>,
}

type Results<'a> = Vec<Item<'a>>;

impl Evaluator {
    pub(super) fn new(allow_missing_keys: bool) -> Evaluator {
        Evaluator { allow_missing_keys, begin_range: 0, in_range: 0, end_range: 0, last_end_node: None }
    }

    /// `FindResults` over `root[offset..]`.
    pub(super) fn find_results<'a>(
        &mut self,
        root: &[Node],
        offset: usize,
        data: Item<'a>,
    ) -> Result<Vec<Results<'a>>, JsonPathError> {
        let current = vec![data];
        let mut full = Vec::new();
        let mut i = offset;
        while i < root.len() {
            let results = self.walk(current.clone(), &root[i])?;
            if self.end_range > 0 && self.end_range <= self.in_range {
                self.end_range -= 1;
                self.last_end_node = Some(i);
                break;
            }
            if self.begin_range > 0 {
                self.begin_range -= 1;
                self.in_range += 1;
                if results.is_empty() {
                    self.find_results(root, i + 1, Item::NoValue)?;
                } else {
                    for value in results {
                        let data = match value {
                            Item::Value(v) if matches!(*v, Value::Null) => Item::NoValue,
                            other => other,
                        };
                        full.extend(self.find_results(root, i + 1, data)?);
                    }
                }
                self.in_range -= 1;
                if let Some(end) = self.last_end_node.filter(|&end| end > i) {
                    i = end;
                }
                i += 1;
                continue;
            }
            full.push(results);
            i += 1;
        }
        Ok(full)
    }

    fn walk<'a>(&mut self, input: Results<'a>, node: &Node) -> Result<Results<'a>, JsonPathError> {
        match node {
            Node::List(nodes) => self.eval_list(input, nodes),
            Node::Text(text) => Ok(vec![Item::Value(Cow::Owned(Value::String(text.clone())))]),
            Node::Field(name) => self.eval_field(input, name),
            Node::Array(params) => eval_array(input, params),
            Node::Filter { left, right, operator } => self.eval_filter(input, left, right, operator),
            Node::Int(i) => Ok(literal(&input, Value::Int(*i))),
            Node::Float(f) => Ok(literal(&input, Value::Float(*f))),
            Node::Bool(b) => Ok(literal(&input, Value::Bool(*b))),
            Node::Wildcard => Ok(input.iter().flat_map(children).collect()),
            Node::Recursive => Ok(recursive(&input)),
            Node::Union(members) => {
                let mut out = Vec::new();
                for member in members {
                    out.extend(self.eval_list(input.clone(), member)?);
                }
                Ok(out)
            }
            Node::Identifier(name) => match name.as_str() {
                "range" => {
                    self.begin_range += 1;
                    Ok(input)
                }
                "end" if self.in_range > 0 => {
                    self.end_range += 1;
                    Ok(Vec::new())
                }
                "end" => Err(JsonPathError::EndOutsideRange),
                other => Err(JsonPathError::UnrecognizedIdentifier(other.to_owned())),
            },
        }
    }

    fn eval_list<'a>(&mut self, input: Results<'a>, nodes: &[Node]) -> Result<Results<'a>, JsonPathError> {
        let mut current = input;
        for node in nodes {
            current = self.walk(current, node)?;
        }
        Ok(current)
    }

    fn eval_field<'a>(&self, input: Results<'a>, name: &str) -> Result<Results<'a>, JsonPathError> {
        if input.is_empty() {
            return Ok(Vec::new());
        }
        let mut results = Vec::new();
        for item in &input {
            results.extend(project(item, |value| match value {
                Value::Object(map) => map.get(name).into_iter().collect(),
                _ => Vec::new(),
            }));
        }
        if results.is_empty() && !self.allow_missing_keys {
            return Err(JsonPathError::MissingKey(name.to_owned()));
        }
        Ok(results)
    }

    fn eval_filter<'a>(
        &mut self,
        input: Results<'a>,
        left: &[Node],
        right: &[Node],
        operator: &str,
    ) -> Result<Results<'a>, JsonPathError> {
        let mut results = Vec::new();
        for item in &input {
            let members = match item.indirect() {
                Some(Value::Array(_)) => project(item, |value| match value {
                    Value::Array(items) => items.iter().collect(),
                    _ => Vec::new(),
                }),
                Some(other) => {
                    return Err(JsonPathError::NotFilterable(other.go_v_string()));
                }
                None => return Err(JsonPathError::NotFilterable("<nil>".to_owned())),
            };
            for member in members {
                let lefts = self.eval_list(vec![member.clone()], left);
                if operator == "exists" {
                    if lefts.is_ok_and(|l| !l.is_empty()) {
                        results.push(member);
                    }
                    continue;
                }
                let lefts = lefts?;
                let left_value = match lefts.as_slice() {
                    [] => continue,
                    [one] => one.clone(),
                    _ => return Err(JsonPathError::CompareSeveral),
                };
                let rights = self.eval_list(vec![member.clone()], right)?;
                let right_value = match rights.as_slice() {
                    [] => continue,
                    [one] => one.clone(),
                    _ => return Err(JsonPathError::CompareSeveral),
                };
                if compare(&left_value, &right_value, operator)? {
                    results.push(member);
                }
            }
        }
        Ok(results)
    }
}

fn literal<'a>(input: &Results<'a>, value: Value) -> Results<'a> {
    input.iter().map(|_| Item::Value(Cow::Owned(value.clone()))).collect()
}

/// The values behind `item` that `select` picks, borrowed from the document when `item` is.
fn project<'a>(item: &Item<'a>, select: impl for<'v> Fn(&'v Value) -> Vec<&'v Value>) -> Vec<Item<'a>> {
    match item {
        Item::Value(Cow::Borrowed(value)) => {
            let value: &'a Value = value;
            select(value).into_iter().map(|m| Item::Value(Cow::Borrowed(m))).collect()
        }
        Item::Value(Cow::Owned(value)) => {
            select(value).into_iter().map(|m| Item::Value(Cow::Owned(m.clone()))).collect()
        }
        Item::NoValue => Vec::new(),
    }
}

/// The members of an object, array or string (a string's bytes, as Go indexes it).
fn children<'a>(item: &Item<'a>) -> Vec<Item<'a>> {
    match item.indirect() {
        Some(Value::String(s)) => s.bytes().map(|b| Item::Value(Cow::Owned(Value::Int(i64::from(b))))).collect(),
        Some(_) => project(item, |value| match value {
            Value::Object(map) => map.values().collect(),
            Value::Array(items) => items.iter().collect(),
            _ => Vec::new(),
        }),
        None => Vec::new(),
    }
}

/// `..`: every value with members, followed by what lies below it, depth first.
fn recursive<'a>(input: &Results<'a>) -> Results<'a> {
    let mut out = Vec::new();
    // A worklist, so deep documents cannot overflow the stack.
    let mut stack: Vec<Item<'a>> = input.iter().rev().cloned().collect();
    while let Some(item) = stack.pop() {
        let members = children(&item);
        if !members.is_empty() {
            out.push(item);
            stack.extend(members.into_iter().rev());
        }
    }
    out
}

fn owned(item: &Item<'_>) -> Value {
    match item {
        Item::Value(v) => v.as_ref().clone(),
        Item::NoValue => Value::Null,
    }
}

fn eval_array<'a>(input: Results<'a>, node: &std::cell::Cell<[Param; 3]>) -> Result<Results<'a>, JsonPathError> {
    let mut result = Vec::new();
    for item in &input {
        let Some(value) = item.indirect() else { continue };
        let Value::Array(items) = value else {
            // Nulls were skipped above, so the Go type is the variant's.
            return Err(JsonPathError::NotAnArray(value.kind_name()));
        };
        let mut params = node.get();
        let len = items.len() as i64;
        if !params[0].known {
            params[0].value = 0;
        }
        if params[0].value < 0 {
            params[0].value += len;
        }
        if !params[1].known {
            params[1].value = len;
        }
        if params[1].value < 0 || (params[1].value == 0 && params[1].derived) {
            params[1].value += len;
        }
        // client-go writes the resolved bounds back into the node.
        node.set(params);
        let (start, end) = (params[0].value, params[1].value);
        if start == end {
            return Ok(result);
        }
        if start >= len || start < 0 {
            return Err(JsonPathError::IndexOutOfBounds { index: start, length: len });
        }
        if end > len || end < 0 {
            return Err(JsonPathError::IndexOutOfBounds { index: end - 1, length: len });
        }
        if start > end {
            return Err(JsonPathError::StartAfterEnd { start, end });
        }
        let step = if params[2].known {
            if params[2].value <= 0 {
                return Err(JsonPathError::StepNotPositive);
            }
            params[2].value as usize
        } else {
            1
        };
        let (start, end) = (start as usize, end as usize);
        result.extend(project(item, |value| match value {
            Value::Array(items) => items[start..end].iter().step_by(step).collect(),
            _ => Vec::new(),
        }));
    }
    Ok(result)
}

#[derive(PartialEq)]
enum Kind {
    Bool,
    Int,
    Float,
    String,
}

fn basic_kind(item: &Item<'_>) -> Result<Kind, JsonPathError> {
    match item {
        Item::Value(v) => match v.as_ref() {
            Value::Bool(_) => Ok(Kind::Bool),
            Value::Int(_) => Ok(Kind::Int),
            Value::Float(_) => Ok(Kind::Float),
            Value::String(_) => Ok(Kind::String),
            _ => Err(JsonPathError::InvalidComparisonType),
        },
        Item::NoValue => Err(JsonPathError::InvalidComparisonType),
    }
}

/// text/template's comparison functions (client-go's fork): both sides of one basic kind.
fn compare(left: &Item<'_>, right: &Item<'_>, operator: &str) -> Result<bool, JsonPathError> {
    let (kl, kr) = (basic_kind(left)?, basic_kind(right)?);
    let (Item::Value(l), Item::Value(r)) = (left, right) else { unreachable!("basic kinds are values") };
    let (l, r) = (l.as_ref(), r.as_ref());
    let equal = || -> Result<bool, JsonPathError> {
        if kl != kr {
            return Err(JsonPathError::IncompatibleTypes);
        }
        Ok(l == r)
    };
    let less = || -> Result<bool, JsonPathError> {
        if kl != kr {
            return Err(JsonPathError::IncompatibleTypes);
        }
        match (l, r) {
            (Value::Int(a), Value::Int(b)) => Ok(a < b),
            (Value::Float(a), Value::Float(b)) => Ok(a < b),
            (Value::String(a), Value::String(b)) => Ok(a < b),
            _ => Err(JsonPathError::InvalidComparisonType),
        }
    };
    match operator {
        "==" => equal(),
        "!=" => equal().map(|e| !e),
        "<" => less(),
        "<=" => match less()? {
            true => Ok(true),
            false => equal(),
        },
        ">" => Ok(!(less()? || equal()?)),
        ">=" => less().map(|l| !l),
        other => Err(JsonPathError::UnknownOperator(other.to_owned())),
    }
}

/// `PrintResults`: one result group, members separated by a space.
pub(super) fn print_results(results: &[Item<'_>], json_output: bool, out: &mut String) {
    if json_output {
        let array = Value::Array(results.iter().map(owned).collect());
        out.push_str(&array.to_json_indented("    ", 0));
        out.push('\n');
        return;
    }
    for (i, item) in results.iter().enumerate() {
        match item {
            Item::NoValue => out.push_str("<no value>"),
            Item::Value(v) => match v.as_ref() {
                value @ (Value::Object(_) | Value::Array(_)) => out.push_str(&value.to_json_string()),
                Value::Null => out.push_str("null"),
                Value::Float(f) => out.push_str(&go_v_float(*f)),
                Value::String(s) => out.push_str(s),
                other => out.push_str(&other.go_v_string()),
            },
        }
        if i + 1 != results.len() {
            out.push(' ');
        }
    }
}
