//! One YAML document to a JSON [`Value`], as `sigs.k8s.io/yaml.Unmarshal` (go-yaml v2 +
//! YAML-to-JSON conversion) does it for kubectl.
//!
//! Events come from libyaml (the `unsafe-libyaml` translation): go-yaml v2 is itself a Go port
//! of libyaml, so the two accept the same syntax and report the same problems ("mapping values
//! are not allowed in this context"). On top of the events this module rebuilds go-yaml v2's
//! node tree and decoder: YAML 1.1 scalar resolution ([`super::resolve`]), anchors and aliases
//! (with go-yaml's alias-expansion ratio limit), `<<` merge keys, non-string keys turned into
//! strings, duplicate keys (last wins). Numbers then go through the JSON text Go would write
//! and are read back with kubectl's "preserve ints" rule, so `1.0` becomes the integer 1.
//!
//! Nesting is bounded by [`MAX_DEPTH`]: the tree is built without recursion, and the decoder
//! only recurses over a tree it has checked.
//!
//! The only module with unsafe code besides two small fences in `source/`: libyaml's parser is
//! driven through its C-style API, each call on a parser this module initialised and owns.
#![allow(unsafe_code)]

use std::collections::{HashMap, HashSet};
use std::ffi::CStr;
use std::mem::MaybeUninit;

use applyset_merge::value::{MAX_DEPTH, go_json_float};
use applyset_merge::{Map, Value};

use super::limits::LimitExceeded;
use super::resolve::{self, BINARY_TAG, MERGE_TAG, Scalar};

/// A problem in one YAML document; `line`/`column` are 1-based and relative to the text given
/// to [`parse_document`].
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct YamlError {
    pub line: Option<usize>,
    pub column: Option<usize>,
    pub message: String,
    /// Set when aliases expand past the budget (not a syntax error).
    pub too_large: Option<LimitExceeded>,
}

impl YamlError {
    fn at(mark: Mark, message: impl Into<String>) -> Self {
        YamlError { line: Some(mark.line + 1), column: Some(mark.column + 1), message: message.into(), too_large: None }
    }
}

#[derive(Debug, Clone, Copy, Default)]
struct Mark {
    line: usize,
    column: usize,
}

impl From<unsafe_libyaml::yaml_mark_t> for Mark {
    fn from(m: unsafe_libyaml::yaml_mark_t) -> Self {
        Mark { line: m.line as usize, column: m.column as usize }
    }
}

// ---------------------------------------------------------------------------------------------
// libyaml events

enum Event {
    StreamStart,
    StreamEnd,
    DocumentStart,
    DocumentEnd,
    Alias { anchor: String },
    Scalar { anchor: Option<String>, tag: String, value: String, implicit: bool },
    SequenceStart { anchor: Option<String> },
    SequenceEnd,
    MappingStart { anchor: Option<String> },
    MappingEnd,
}

/// An owned libyaml parser over a borrowed input. The parser struct points to itself (its read
/// handler data), so it lives in a box and never moves.
struct Parser<'input> {
    raw: Box<MaybeUninit<unsafe_libyaml::yaml_parser_t>>,
    _input: std::marker::PhantomData<&'input [u8]>,
}

impl<'input> Parser<'input> {
    fn new(input: &'input [u8]) -> Self {
        let mut raw = Box::new(MaybeUninit::<unsafe_libyaml::yaml_parser_t>::uninit());
        // SAFETY: `yaml_parser_initialize` fully initialises the struct it is given (it only
        // fails on allocation failure, which aborts in Rust anyway). The input slice outlives
        // the parser ('input), and the boxed parser is never moved, so the pointers libyaml keeps
        // (to the input and to the parser itself) stay valid until `Drop`.
        unsafe {
            let parser = raw.as_mut_ptr();
            assert!(unsafe_libyaml::yaml_parser_initialize(parser).ok, "libyaml: out of memory");
            unsafe_libyaml::yaml_parser_set_encoding(parser, unsafe_libyaml::YAML_UTF8_ENCODING);
            unsafe_libyaml::yaml_parser_set_input_string(parser, input.as_ptr(), input.len() as u64);
        }
        Parser { raw, _input: std::marker::PhantomData }
    }

    fn next(&mut self) -> Result<(Event, Mark), YamlError> {
        let mut event = MaybeUninit::<unsafe_libyaml::yaml_event_t>::uninit();
        // SAFETY: the parser was initialised in `new`. After a successful `yaml_parser_parse`
        // the event is initialised and its union member matches `type_`; strings it points to
        // are NUL-terminated (anchors, tags) or `length` bytes long (scalar values), and are
        // copied before `yaml_event_delete` frees them.
        unsafe {
            let parser = self.raw.as_mut_ptr();
            if (&*parser).error != unsafe_libyaml::YAML_NO_ERROR
                || unsafe_libyaml::yaml_parser_parse(parser, event.as_mut_ptr()).fail
            {
                return Err(parse_error(&*parser));
            }
            let event = event.as_mut_ptr();
            let mark = Mark::from((*event).start_mark);
            let converted = match (*event).type_ {
                unsafe_libyaml::YAML_STREAM_START_EVENT => Event::StreamStart,
                unsafe_libyaml::YAML_STREAM_END_EVENT => Event::StreamEnd,
                unsafe_libyaml::YAML_DOCUMENT_START_EVENT => Event::DocumentStart,
                unsafe_libyaml::YAML_DOCUMENT_END_EVENT => Event::DocumentEnd,
                unsafe_libyaml::YAML_ALIAS_EVENT => {
                    Event::Alias { anchor: c_string((*event).data.alias.anchor).unwrap_or_default() }
                }
                unsafe_libyaml::YAML_SCALAR_EVENT => {
                    let s = (*event).data.scalar;
                    let bytes = std::slice::from_raw_parts(s.value, s.length as usize);
                    Event::Scalar {
                        anchor: c_string(s.anchor),
                        tag: c_string(s.tag).unwrap_or_default(),
                        value: String::from_utf8_lossy(bytes).into_owned(),
                        implicit: s.plain_implicit,
                    }
                }
                unsafe_libyaml::YAML_SEQUENCE_START_EVENT => {
                    Event::SequenceStart { anchor: c_string((*event).data.sequence_start.anchor) }
                }
                unsafe_libyaml::YAML_SEQUENCE_END_EVENT => Event::SequenceEnd,
                unsafe_libyaml::YAML_MAPPING_START_EVENT => {
                    Event::MappingStart { anchor: c_string((*event).data.mapping_start.anchor) }
                }
                unsafe_libyaml::YAML_MAPPING_END_EVENT => Event::MappingEnd,
                _ => {
                    unsafe_libyaml::yaml_event_delete(event);
                    return Err(YamlError::at(mark, "unexpected YAML event"));
                }
            };
            unsafe_libyaml::yaml_event_delete(event);
            Ok((converted, mark))
        }
    }
}

impl Drop for Parser<'_> {
    fn drop(&mut self) {
        // SAFETY: initialised in `new`; deleted exactly once.
        unsafe { unsafe_libyaml::yaml_parser_delete(self.raw.as_mut_ptr()) }
    }
}

/// SAFETY: `ptr` is null or a NUL-terminated string owned by libyaml.
unsafe fn c_string(ptr: *const u8) -> Option<String> {
    if ptr.is_null() {
        return None;
    }
    // SAFETY: per the function contract.
    let s = unsafe { CStr::from_ptr(ptr.cast()) };
    Some(s.to_string_lossy().into_owned())
}

/// SAFETY: `parser` is an initialised libyaml parser in an error state.
unsafe fn parse_error(parser: &unsafe_libyaml::yaml_parser_t) -> YamlError {
    // SAFETY: `problem` is null or a static NUL-terminated string.
    let problem =
        unsafe { c_string(parser.problem.cast()) }.unwrap_or_else(|| "unknown problem parsing YAML content".to_owned());
    let mark = Mark::from(parser.problem_mark);
    YamlError::at(mark, problem)
}

// ---------------------------------------------------------------------------------------------
// The node tree (go-yaml v2's parser.go)

enum Kind {
    Scalar {
        value: String,
        tag: String,
        implicit: bool,
    },
    Alias {
        target: usize,
        name: String,
    },
    Sequence(Vec<usize>),
    /// Keys and values alternate.
    Mapping(Vec<usize>),
}

struct Node {
    kind: Kind,
    mark: Mark,
}

/// Parses the first YAML document of `text` (go-yaml's `Unmarshal` reads only the first; the
/// caller has already split the stream on `---` lines). An empty stream is `Null`.
#[cfg(test)]
pub(crate) fn parse_document(text: &str) -> Result<Value, YamlError> {
    parse_document_limited(text, None)
}

/// [`parse_document`] where what aliases add (string bytes, plus one per node) may not exceed
/// `alias_budget`. go-yaml's ratio check only stops deep "billion laughs" trees, and only once
/// a document has 1,000 nodes: a long string aliased a few hundred times passes it, and each
/// alias is a copy here.
pub(crate) fn parse_document_limited(text: &str, alias_budget: Option<u64>) -> Result<Value, YamlError> {
    let mut parser = Parser::new(text.as_bytes());
    let (first, mark) = parser.next()?;
    if !matches!(first, Event::StreamStart) {
        return Err(YamlError::at(mark, "expected the start of a YAML stream"));
    }
    match parser.next()? {
        (Event::StreamEnd, _) => return Ok(Value::Null),
        (Event::DocumentStart, _) => {}
        (_, mark) => return Err(YamlError::at(mark, "expected a YAML document")),
    }
    let mut nodes: Vec<Node> = Vec::new();
    let mut anchors: HashMap<String, usize> = HashMap::new();
    let mut stack: Vec<usize> = Vec::new();
    let root = loop {
        let (event, mark) = parser.next()?;
        let (kind, anchor, opens) = match event {
            Event::Scalar { anchor, tag, value, implicit } => (Kind::Scalar { value, tag, implicit }, anchor, false),
            Event::Alias { anchor } => match anchors.get(&anchor) {
                Some(&target) => (Kind::Alias { target, name: anchor }, None, false),
                None => {
                    return Err(YamlError::at(mark, format!("unknown anchor '{anchor}' referenced")));
                }
            },
            Event::SequenceStart { anchor } => (Kind::Sequence(Vec::new()), anchor, true),
            Event::MappingStart { anchor } => (Kind::Mapping(Vec::new()), anchor, true),
            Event::SequenceEnd | Event::MappingEnd => {
                let done = stack.pop().expect("libyaml balances collection events");
                if stack.is_empty() {
                    break done;
                }
                continue;
            }
            _ => return Err(YamlError::at(mark, "unexpected YAML event")),
        };
        let id = nodes.len();
        nodes.push(Node { kind, mark });
        if let Some(anchor) = anchor {
            // Registered before the children are read, as go-yaml does: an alias inside the
            // anchored node refers to it (and decoding then reports the cycle).
            anchors.insert(anchor, id);
        }
        if let Some(&parent) = stack.last() {
            match &mut nodes[parent].kind {
                Kind::Sequence(children) | Kind::Mapping(children) => children.push(id),
                _ => unreachable!("only collections are pushed"),
            }
        }
        if opens {
            if stack.len() >= MAX_DEPTH {
                return Err(YamlError::at(mark, format!("document is nested deeper than {MAX_DEPTH} levels")));
            }
            stack.push(id);
        } else if stack.is_empty() {
            break id;
        }
    };
    // go-yaml expects the document end event: reading it surfaces errors right after the root
    // node (e.g. a second root value), but nothing after it is looked at.
    match parser.next()? {
        (Event::DocumentEnd, _) => {}
        (_, mark) => return Err(YamlError::at(mark, "expected the end of the YAML document")),
    }
    Decoder::new(&nodes, alias_budget).value(root, 1)
}

// ---------------------------------------------------------------------------------------------
// Decoding (go-yaml v2's decode.go into interface{}, then sigs.k8s.io/yaml's JSON conversion)

const ALIAS_RATIO_RANGE_LOW: usize = 400_000;
const ALIAS_RATIO_RANGE_HIGH: usize = 4_000_000;

fn allowed_alias_ratio(decode_count: usize) -> f64 {
    if decode_count <= ALIAS_RATIO_RANGE_LOW {
        0.99
    } else if decode_count >= ALIAS_RATIO_RANGE_HIGH {
        0.10
    } else {
        let range = (ALIAS_RATIO_RANGE_HIGH - ALIAS_RATIO_RANGE_LOW) as f64;
        0.99 - 0.89 * ((decode_count - ALIAS_RATIO_RANGE_LOW) as f64 / range)
    }
}

struct Decoder<'a> {
    nodes: &'a [Node],
    decode_count: usize,
    alias_count: usize,
    alias_depth: usize,
    /// Alias nodes being expanded (go-yaml's `d.aliases`), to report self-references.
    expanding: HashSet<usize>,
    /// What aliases added so far, and how much they may add.
    alias_bytes: u64,
    alias_budget: Option<u64>,
}

impl<'a> Decoder<'a> {
    fn new(nodes: &'a [Node], alias_budget: Option<u64>) -> Self {
        Decoder {
            nodes,
            decode_count: 0,
            alias_count: 0,
            alias_depth: 0,
            expanding: HashSet::new(),
            alias_bytes: 0,
            alias_budget,
        }
    }

    /// go-yaml's per-node accounting that stops "billion laughs" documents, and the alias
    /// budget.
    fn count(&mut self, id: usize) -> Result<(), YamlError> {
        self.decode_count += 1;
        if self.alias_depth > 0 {
            self.alias_count += 1;
            if let Some(limit) = self.alias_budget {
                let text = match &self.nodes[id].kind {
                    Kind::Scalar { value, .. } => value.len() as u64,
                    _ => 0,
                };
                self.alias_bytes += 1 + text;
                if self.alias_bytes > limit {
                    let exceeded = LimitExceeded::Aliases { limit };
                    let mut error = YamlError::at(self.nodes[id].mark, exceeded.to_string());
                    error.too_large = Some(exceeded);
                    return Err(error);
                }
            }
        }
        if self.alias_count > 100
            && self.decode_count > 1000
            && self.alias_count as f64 / self.decode_count as f64 > allowed_alias_ratio(self.decode_count)
        {
            return Err(YamlError::at(self.nodes[id].mark, "document contains excessive aliasing"));
        }
        Ok(())
    }

    fn enter_alias(&mut self, id: usize, name: &str) -> Result<(), YamlError> {
        if !self.expanding.insert(id) {
            return Err(YamlError::at(self.nodes[id].mark, format!("anchor '{name}' value contains itself")));
        }
        self.alias_depth += 1;
        if self.alias_depth > MAX_DEPTH {
            return Err(YamlError::at(
                self.nodes[id].mark,
                format!("aliases are nested deeper than {MAX_DEPTH} levels"),
            ));
        }
        Ok(())
    }

    fn leave_alias(&mut self, id: usize) {
        self.expanding.remove(&id);
        self.alias_depth -= 1;
    }

    fn too_deep(&self, id: usize) -> YamlError {
        YamlError::at(self.nodes[id].mark, format!("document is nested deeper than {MAX_DEPTH} levels"))
    }

    /// The value of node `id`, which sits at nesting `depth` (the document root is 1).
    fn value(&mut self, id: usize, depth: usize) -> Result<Value, YamlError> {
        self.count(id)?;
        let node = &self.nodes[id];
        match &node.kind {
            Kind::Alias { target, name } => {
                self.enter_alias(id, name)?;
                let v = self.value(*target, depth);
                self.leave_alias(id);
                v
            }
            Kind::Scalar { .. } => {
                let scalar = self.scalar(id)?;
                scalar_value(scalar).map_err(|m| YamlError::at(node.mark, m))
            }
            Kind::Sequence(children) => {
                if depth > MAX_DEPTH {
                    return Err(self.too_deep(id));
                }
                let mut items = Vec::with_capacity(children.len());
                for &child in children {
                    items.push(self.value(child, depth + 1)?);
                }
                Ok(Value::Array(items))
            }
            Kind::Mapping(_) => {
                if depth > MAX_DEPTH {
                    return Err(self.too_deep(id));
                }
                let mut map = Map::new();
                self.fill_map(id, &mut map, depth)?;
                Ok(Value::Object(map))
            }
        }
    }

    /// Decodes mapping node `id` into `map` (also used by merges, which add to an existing map).
    fn fill_map(&mut self, id: usize, map: &mut Map, depth: usize) -> Result<(), YamlError> {
        let Kind::Mapping(children) = &self.nodes[id].kind else { unreachable!("fill_map is only called on mappings") };
        for pair in children.chunks(2) {
            let (k, v) = (pair[0], pair[1]);
            if self.is_merge(k) {
                self.merge(v, map, depth)?;
                continue;
            }
            let key = self.key(k)?;
            let value = self.value(v, depth + 1)?;
            map.insert(key, value);
        }
        Ok(())
    }

    fn is_merge(&self, id: usize) -> bool {
        matches!(&self.nodes[id].kind, Kind::Scalar { value, tag, implicit }
            if value == "<<" && (*implicit || tag == MERGE_TAG))
    }

    fn want_map(&self, id: usize) -> YamlError {
        YamlError::at(self.nodes[id].mark, "map merge requires map or sequence of maps as the value")
    }

    fn is_mapping_or_alias_of_one(&self, id: usize) -> bool {
        match &self.nodes[id].kind {
            Kind::Mapping(_) => true,
            Kind::Alias { target, .. } => matches!(self.nodes[*target].kind, Kind::Mapping(_)),
            _ => false,
        }
    }

    /// go-yaml v2's merge: keys are written in order, so a merged map overrides keys before the
    /// `<<` and keys after it override the merged ones; in a sequence, earlier maps win.
    fn merge(&mut self, id: usize, map: &mut Map, depth: usize) -> Result<(), YamlError> {
        match &self.nodes[id].kind {
            Kind::Mapping(_) | Kind::Alias { .. } => {
                if !self.is_mapping_or_alias_of_one(id) {
                    return Err(self.want_map(id));
                }
                self.merge_one(id, map, depth)
            }
            Kind::Sequence(children) => {
                for &child in children.iter().rev() {
                    if !self.is_mapping_or_alias_of_one(child) {
                        return Err(self.want_map(child));
                    }
                    self.merge_one(child, map, depth)?;
                }
                Ok(())
            }
            Kind::Scalar { .. } => Err(self.want_map(id)),
        }
    }

    fn merge_one(&mut self, id: usize, map: &mut Map, depth: usize) -> Result<(), YamlError> {
        self.count(id)?;
        match &self.nodes[id].kind {
            Kind::Alias { target, name } => {
                self.enter_alias(id, name)?;
                let r = self.merge_one(*target, map, depth);
                self.leave_alias(id);
                r
            }
            Kind::Mapping(_) => self.fill_map(id, map, depth),
            _ => Err(self.want_map(id)),
        }
    }

    /// A map key as `sigs.k8s.io/yaml` turns it into a JSON object key.
    fn key(&mut self, id: usize) -> Result<String, YamlError> {
        self.count(id)?;
        let node = &self.nodes[id];
        match &node.kind {
            Kind::Alias { target, name } => {
                self.enter_alias(id, name)?;
                let k = self.key(*target);
                self.leave_alias(id);
                k
            }
            Kind::Scalar { .. } => {
                let at = |m: String| YamlError::at(node.mark, m);
                match self.scalar(id)? {
                    Scalar::Str(s) => Ok(s),
                    Scalar::Int(i) => Ok(i.to_string()),
                    Scalar::Bool(b) => Ok(b.to_string()),
                    Scalar::Float(f) => Ok(resolve::float_key(f)),
                    Scalar::Null => Err(at("unsupported map key of type: %!s(<nil>), key: <nil> (a null key cannot become a JSON object key)".into())),
                    Scalar::Uint(u) => Err(at(format!("unsupported map key of type: uint64, key: {u:#x}"))),
                    Scalar::Big(d) => Err(at(format!("unsupported map key of type: *big.Int, key: {d}"))),
                }
            }
            Kind::Sequence(_) | Kind::Mapping(_) => {
                Err(YamlError::at(node.mark, "invalid map key: a sequence or mapping cannot be a map key"))
            }
        }
    }

    /// go-yaml's `decoder.scalar` for an `interface{}` target.
    fn scalar(&self, id: usize) -> Result<Scalar, YamlError> {
        let node = &self.nodes[id];
        let Kind::Scalar { value, tag, implicit } = &node.kind else {
            unreachable!("scalar() is only called on scalars")
        };
        if tag.is_empty() && !implicit {
            // Quoted (or block) scalar without a tag: always a string.
            return Ok(Scalar::Str(value.clone()));
        }
        if tag == BINARY_TAG {
            return match resolve::decode_base64(value) {
                Some(bytes) => Ok(Scalar::Str(String::from_utf8_lossy(&bytes).into_owned())),
                None => Err(YamlError::at(node.mark, "!!binary value contains invalid base64 data")),
            };
        }
        resolve::resolve(tag, value).map_err(|m| YamlError::at(node.mark, m))
    }
}

/// The JSON value a resolved scalar becomes after Go's `json.Marshal` and kubectl's
/// "preserve ints" parse: a float with an integral value is written without a fraction and so
/// reads back as an integer; integers beyond `i64` read back as floats.
fn scalar_value(scalar: Scalar) -> Result<Value, String> {
    Ok(match scalar {
        Scalar::Null => Value::Null,
        Scalar::Bool(b) => Value::Bool(b),
        Scalar::Int(i) => Value::Int(i),
        Scalar::Uint(u) => Value::Float(u as f64),
        Scalar::Str(s) => Value::String(s),
        Scalar::Float(f) if f.is_nan() => return Err("json: unsupported value: NaN".into()),
        Scalar::Float(f) if f.is_infinite() => {
            return Err(format!("json: unsupported value: {}Inf", if f > 0.0 { '+' } else { '-' }));
        }
        Scalar::Float(f) => float_value(f),
        // Go writes the digits; reading them back, they never fit an int64.
        Scalar::Big(digits) => Value::Float(digits.parse().unwrap_or(f64::INFINITY)),
    })
}

/// A finite float as it reads back from the text Go's `json.Marshal` writes for it: integral
/// values below 1e21 are written as integers (shortest digits padded with zeros), which become
/// `Int` when they fit an int64; everything else reads back as the same float.
fn float_value(f: f64) -> Value {
    let text = go_json_float(f);
    if !text.contains(['.', 'e', 'E'])
        && let Ok(i) = text.parse::<i64>()
    {
        return Value::Int(i);
    }
    Value::Float(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json(text: &str) -> String {
        parse_document(text).unwrap().to_json_string()
    }

    fn err(text: &str) -> String {
        parse_document(text).unwrap_err().message
    }

    #[test]
    fn scalars_follow_yaml_1_1() {
        assert_eq!(
            json(
                "a: yes\nb: on\nc: y\nd: \"yes\"\ne: 'on'\nf: 0755\ng: 0x1F\nh: 1_000\ni: ~\nj:\nk: 2001-12-14\nl: 1.0\nm: 1.5\nnn: 1e3\no: NO\nn: x\n"
            ),
            r#"{"a":true,"b":true,"c":true,"d":"yes","e":"on","f":493,"false":"x","g":31,"h":1000,"i":null,"j":null,"k":"2001-12-14","l":1,"m":1.5,"nn":1000,"o":false}"#
        );
    }

    #[test]
    fn keys_become_strings() {
        assert_eq!(
            json("y: 1\nno: 2\n3: 3\n1.5: 4\n0x10: 5\n\"on\": 6\n"),
            r#"{"1.5":4,"16":5,"3":3,"false":2,"on":6,"true":1}"#
        );
        assert!(err("~: 1\n").contains("unsupported map key"));
        assert!(err("? [a]\n: 1\n").contains("invalid map key"));
    }

    #[test]
    fn duplicate_keys_last_wins() {
        assert_eq!(json("a: 1\na: 2\nyes: x\ntrue: z\n"), r#"{"a":2,"true":"z"}"#);
    }

    #[test]
    fn anchors_aliases_and_merges() {
        let doc = "base: &b {x: 1, z: 2}\nlist: &l [1, 2]\nuse:\n  <<: *b\n  z: 3\nalias: *l\nmulti:\n  <<: [{p: 1}, {p: 2, q: 2}]\nbefore:\n  x: 9\n  <<: *b\nquoted:\n  \"<<\": *b\n";
        assert_eq!(
            json(doc),
            r#"{"alias":[1,2],"base":{"x":1,"z":2},"before":{"x":1,"z":2},"list":[1,2],"multi":{"p":1,"q":2},"quoted":{"\u003c\u003c":{"x":1,"z":2}},"use":{"x":1,"z":3}}"#
        );
        assert_eq!(err("a: *nope\n"), "unknown anchor 'nope' referenced");
        assert_eq!(err("a: &x [*x]\n"), "anchor 'x' value contains itself");
        assert_eq!(err("a: &s 1\nb:\n  <<: *s\n"), "map merge requires map or sequence of maps as the value");
    }

    #[test]
    fn tags() {
        assert_eq!(
            json(
                "a: !!str 123\nb: !!int \"12\"\nc: !!float 1\nd: !custom yes\ne: ! yes\nf: !!binary aGVsbG8=\ng: !!bool \"on\"\n"
            ),
            r#"{"a":"123","b":12,"c":1,"d":"yes","e":"yes","f":"hello","g":true}"#
        );
        assert_eq!(err("a: !!int abc\n"), "cannot decode !!str `abc` as a !!int");
    }

    #[test]
    fn json_cannot_hold_inf_or_nan() {
        assert_eq!(err("a: .inf\n"), "json: unsupported value: +Inf");
        assert_eq!(err("a: -.inf\n"), "json: unsupported value: -Inf");
        assert_eq!(err("a: .nan\n"), "json: unsupported value: NaN");
    }

    #[test]
    fn big_numbers() {
        assert_eq!(
            json("a: 9223372036854775807\nb: 9223372036854775808\nc: 1e21\nd: 123456789012345678901234\n"),
            r#"{"a":9223372036854775807,"b":9223372036854776000,"c":1e+21,"d":1.2345678901234569e+23}"#
        );
        assert!(matches!(parse_document("b: 9223372036854775808").unwrap().as_object().unwrap()["b"], Value::Float(_)));
        // Integral floats come back as Go's text reads: shortest digits padded with zeros.
        assert_eq!(
            json("a: 1152921504606846976.0\nb: -0.0\nc: 0x1FFFFFFFFFFFFFFFF\n"),
            r#"{"a":1152921504606847000,"b":0,"c":36893488147419103000}"#
        );
    }

    #[test]
    fn syntax_errors_have_positions() {
        let e = parse_document("a: 1\nb: c: d\n").unwrap_err();
        assert_eq!(e.message, "mapping values are not allowed in this context");
        assert_eq!((e.line, e.column), (Some(2), Some(5)));
        assert!(parse_document("a: [1, 2\n").is_err());
        assert!(parse_document("a:\n\t- b\n").is_err());
    }

    #[test]
    fn empty_and_null_documents() {
        assert_eq!(parse_document("").unwrap(), Value::Null);
        assert_eq!(parse_document("# only a comment\n").unwrap(), Value::Null);
        assert_eq!(parse_document("~\n").unwrap(), Value::Null);
        assert_eq!(parse_document("---\n").unwrap(), Value::Null);
        // Only the first document counts.
        assert_eq!(json("a: 1\n...\nb: 2\n"), r#"{"a":1}"#);
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_crash() {
        let deep = "[".repeat(10_000) + &"]".repeat(10_000);
        assert!(err(&deep).contains("nested deeper than 128"));
        let mut block = String::new();
        for i in 0..1_000 {
            block.push_str(&" ".repeat(i));
            block.push_str("a:\n");
        }
        assert!(err(&block).contains("nested deeper than 128"));
        // 128 levels are fine.
        let ok = "[".repeat(128) + &"]".repeat(128);
        assert!(parse_document(&ok).is_ok());
        assert!(err(&("[".repeat(129) + &"]".repeat(129))).contains("nested deeper"));
        // Aliases cannot be used to build deeper values either.
        let mut doc = String::from("a: &a ");
        doc.push_str(&"[".repeat(100));
        doc.push_str(&"]".repeat(100));
        doc.push_str("\nb: ");
        doc.push_str(&"[".repeat(100));
        doc.push_str("*a");
        doc.push_str(&"]".repeat(100));
        assert!(err(&doc).contains("nested deeper"));
    }

    #[test]
    fn alias_bombs_are_refused() {
        let mut doc =
            String::from("a0: &a0 [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n");
        for i in 1..10 {
            let prev = format!("*a{}", i - 1);
            doc.push_str(&format!("a{i}: &a{i} [{}]\n", vec![prev; 9].join(",")));
        }
        assert_eq!(err(&doc), "document contains excessive aliasing");
        // Long merge chains cannot overflow the stack.
        let mut chain = String::from("m0: &m0 {x: 1}\n");
        for i in 1..5000 {
            chain.push_str(&format!("m{i}: &m{i} {{<<: *m{}}}\n", i - 1));
        }
        assert!(parse_document(&chain).is_err());
    }

    #[test]
    fn long_strings_through_aliases_are_bounded_by_the_budget() {
        // go-yaml's ratio check stops nothing under 1,000 nodes: 500 aliases of a 10 KB string
        // make 5 MB from 13 KB of text.
        let doc = format!("a: &a \"{}\"\nb: [{}]\n", "x".repeat(10_000), vec!["*a"; 500].join(","));
        let value = parse_document(&doc).unwrap();
        assert_eq!(value.as_object().unwrap()["b"].as_array().unwrap().len(), 500);
        let e = parse_document_limited(&doc, Some(1 << 20)).unwrap_err();
        assert_eq!(e.too_large, Some(LimitExceeded::Aliases { limit: 1 << 20 }));
        assert_eq!(
            e.message,
            "the document's aliases expand to more than 1048576 bytes (1 MiB) (the limit per document)"
        );
        // Merges count too; a few aliases within the budget are fine.
        let merges = format!("a: &a {{k: \"{}\"}}\nb: {{<<: *a}}\nc: {{<<: *a}}\n", "x".repeat(1000));
        assert!(parse_document_limited(&merges, Some(1500)).is_err());
        assert!(parse_document_limited(&merges, Some(3000)).is_ok());
        // Without aliases the budget is not used, however large the document.
        assert!(parse_document_limited(&format!("a: \"{}\"\n", "x".repeat(10_000)), Some(1)).is_ok());
    }
}
