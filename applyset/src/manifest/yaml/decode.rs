//! Decoding the node tree: go-yaml v2's decode.go into `interface{}`, then sigs.k8s.io/yaml's
//! conversion to JSON.

use std::collections::HashSet;

use applyset_merge::value::{MAX_DEPTH, go_json_float};
use applyset_merge::{Map, Value};

use super::YamlError;
use super::tree::{Kind, Node};
use crate::causes::with_causes;
use crate::manifest::limits::LimitExceeded;
use crate::manifest::resolve::{self, BINARY_TAG, MERGE_TAG, Scalar};

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

pub(super) struct Decoder<'a> {
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
    pub(super) fn new(nodes: &'a [Node], alias_budget: Option<u64>) -> Self {
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
    pub(super) fn value(&mut self, id: usize, depth: usize) -> Result<Value, YamlError> {
        // One level of the walk: the stack grows on the heap when it runs low.
        applyset_merge::value::deeper(|| self.value_at(id, depth))
    }

    fn value_at(&mut self, id: usize, depth: usize) -> Result<Value, YamlError> {
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
                scalar_value(scalar).map_err(|e| YamlError::at(node.mark, with_causes(&e)))
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
        resolve::resolve(tag, value).map_err(|e| YamlError::at(node.mark, with_causes(&e)))
    }
}

/// A float JSON cannot hold, refused as Go's `json.Marshal` refuses it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
enum UnsupportedFloat {
    #[error("json: unsupported value: NaN")]
    NaN,
    #[error("json: unsupported value: +Inf")]
    PositiveInfinity,
    #[error("json: unsupported value: -Inf")]
    NegativeInfinity,
}

/// The JSON value a resolved scalar becomes after Go's `json.Marshal` and kubectl's
/// "preserve ints" parse: a float with an integral value is written without a fraction and so
/// reads back as an integer; integers beyond `i64` read back as floats.
fn scalar_value(scalar: Scalar) -> Result<Value, UnsupportedFloat> {
    Ok(match scalar {
        Scalar::Null => Value::Null,
        Scalar::Bool(b) => Value::Bool(b),
        Scalar::Int(i) => Value::Int(i),
        Scalar::Uint(u) => Value::Float(u as f64),
        Scalar::Str(s) => Value::String(s),
        Scalar::Float(f) if f.is_nan() => return Err(UnsupportedFloat::NaN),
        Scalar::Float(f) if f.is_infinite() => {
            return Err(if f > 0.0 { UnsupportedFloat::PositiveInfinity } else { UnsupportedFloat::NegativeInfinity });
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
