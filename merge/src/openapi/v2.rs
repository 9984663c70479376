//! OpenAPI v2 provider: kube-openapi's "proto" model of `definitions` and the lookups of
//! apimachinery's `PatchMetaFromOpenAPI` (spec §2.2.2).
//!
//! Every schema is classified as upstream's `ParseSchema` does:
//! `$ref` → Reference; no `type`: `properties` → Kind, else Arbitrary; `type: object`:
//! `properties` → Kind, else Map; `type: array` → Array; other types → Primitive.
//!
//! Lookups then walk that model with upstream's visitors:
//! * struct lookup (`kindItem`): follow References to a Kind and take its field; a Map,
//!   Primitive or Array fails with `expected kind, but got map|primitive|slice`; a missing
//!   field fails with `unable to find api field "k" in <path>`; an Arbitrary node answers
//!   "nothing known" and everything below it is permissive.
//! * slice lookup (`sliceItem`): the same walk to the field, then the field itself is visited:
//!   an Array yields its items, a Reference its definition, an Arbitrary nothing; a Map or
//!   Primitive fails with `expected slice, but got …`. An *inline* Kind field is visited again
//!   for the same key, an upstream quirk that is reproduced (Kubernetes never emits one).

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use super::{Gvk, STRATEGIC_MERGE_PATCH, go_quote, read_patch_meta, strategic_merge_index};
use crate::meta::{PatchMeta, Schema, SchemaRef, Untyped};
use crate::{Error, Map, Result, Value};

const DEFINITION_REF_PREFIX: &str = "#/definitions/";

/// How many references a lookup follows before it gives up (upstream would recurse forever on
/// a cycle of definitions that are nothing but references).
const MAX_REFERENCE_HOPS: usize = 64;

pub(super) struct Document {
    definitions: Vec<Arc<Node>>,
    index_by_name: HashMap<String, usize>,
    root_by_gvk: HashMap<Gvk, usize>,
    pub(super) strategic_merge: HashMap<Gvk, bool>,
}

/// A node of kube-openapi's proto model. Names are upstream's `GetName()` texts, used in
/// messages such as `cannot merge lists without merge key for <name>`.
enum Node {
    Kind { path: String, fields: HashMap<String, Field>, name: String },
    Map { name: String },
    Primitive { name: String },
    Array { items: Arc<Node>, name: String },
    Arbitrary,
    Reference { target: usize, name: String },
}

struct Field {
    meta: Result<PatchMeta>,
    schema: Arc<Node>,
}

impl Node {
    fn name(&self) -> String {
        match self {
            Node::Kind { name, .. }
            | Node::Map { name }
            | Node::Primitive { name }
            | Node::Array { name, .. }
            | Node::Reference { name, .. } => name.clone(),
            Node::Arbitrary => ARBITRARY_NAME.to_owned(),
        }
    }
}

const ARBITRARY_NAME: &str = "Arbitrary value (primitive, object or array)";

impl Document {
    pub(super) fn compile(root: &Map) -> Result<Document> {
        let empty = Map::new();
        let definitions = root.get("definitions").and_then(Value::as_object).unwrap_or(&empty);
        let index_by_name: HashMap<String, usize> =
            definitions.keys().enumerate().map(|(i, name)| (name.clone(), i)).collect();
        let parser = Parser { index_by_name: &index_by_name };
        let compiled =
            definitions.iter().map(|(name, schema)| parser.parse(schema, name)).collect::<Result<Vec<_>>>()?;

        // kubectl indexes models in sorted name order and lets a later one overwrite an
        // earlier one claiming the same GVK; `definitions` iterates in that order.
        let mut root_by_gvk = HashMap::new();
        for (i, schema) in definitions.values().enumerate() {
            for gvk in schema.as_object().map(Gvk::list_of).unwrap_or_default() {
                root_by_gvk.insert(gvk, i);
            }
        }
        let strategic_merge = strategic_merge_index(root, consumes_strategic_merge);
        Ok(Document { definitions: compiled, index_by_name, root_by_gvk, strategic_merge })
    }

    pub(super) fn len(&self) -> usize {
        self.definitions.len()
    }

    pub(super) fn schema(doc: &Arc<Document>, name: &str) -> Option<SchemaRef> {
        let index = *doc.index_by_name.get(name)?;
        Some(handle(doc, doc.definitions[index].clone()))
    }

    pub(super) fn schema_for_gvk(doc: &Arc<Document>, gvk: &Gvk) -> Option<SchemaRef> {
        let index = *doc.root_by_gvk.get(gvk)?;
        Some(handle(doc, doc.definitions[index].clone()))
    }
}

/// Whether a PATCH operation's `consumes` lists the strategic merge patch content type.
fn consumes_strategic_merge(operation: &Map) -> bool {
    operation
        .get("consumes")
        .and_then(Value::as_array)
        .is_some_and(|types| types.iter().any(|t| t.as_str() == Some(STRATEGIC_MERGE_PATCH)))
}

/// Upstream's `SchemaError(<path>): <message>`, which fails the whole document.
fn schema_error(path: &str, message: String) -> Error {
    if path.is_empty() {
        Error::OpenApi(format!("SchemaError: {message}"))
    } else {
        Error::OpenApi(format!("SchemaError({path}): {message}"))
    }
}

/// The `type` of a schema as a list (it may be a string or a list of strings).
fn types_of(schema: &Map) -> Vec<&str> {
    match schema.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(types)) => types.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

struct Parser<'a> {
    index_by_name: &'a HashMap<String, usize>,
}

impl Parser<'_> {
    /// Upstream `ParseSchema`; `path` is the proto path (`def.field.field`).
    fn parse(&self, schema: &Value, path: &str) -> Result<Arc<Node>> {
        let Some(schema) = schema.as_object() else {
            return Err(schema_error(path, format!("schema is not an object: {}", schema.go_v_string())));
        };
        if let Some(reference) = schema.get("$ref").and_then(Value::as_str).filter(|r| !r.is_empty()) {
            return self.reference(schema, reference, path);
        }
        let types = types_of(schema);
        let properties = schema.get("properties");
        let node = match types.as_slice() {
            [] if properties.is_some() => self.kind(schema, path)?,
            [] => Node::Arbitrary,
            ["object"] if properties.is_some() => self.kind(schema, path)?,
            ["object"] => self.map(schema, path)?,
            ["array"] => self.array(schema, path)?,
            [primitive] => match *primitive {
                "string" | "number" | "integer" | "boolean" => {
                    let name = match schema.get("format").and_then(Value::as_str) {
                        Some(format) if !format.is_empty() => format!("{primitive} ({format})"),
                        _ => (*primitive).to_owned(),
                    };
                    Node::Primitive { name }
                }
                other => {
                    return Err(schema_error(path, format!("Unknown primitive type: {}", go_quote(other))));
                }
            },
            _ => return Err(schema_error(path, "definitions with multiple types aren't supported".into())),
        };
        Ok(Arc::new(node))
    }

    fn reference(&self, schema: &Map, reference: &str, path: &str) -> Result<Arc<Node>> {
        if schema.get("properties").and_then(Value::as_object).is_some_and(|p| !p.is_empty()) {
            return Err(schema_error(path, "unallowed embedded type definition".into()));
        }
        if !types_of(schema).is_empty() {
            return Err(schema_error(path, "definition reference can't have a type".into()));
        }
        let Some(name) = reference.strip_prefix(DEFINITION_REF_PREFIX) else {
            return Err(schema_error(path, format!("unallowed reference to non-definition {}", go_quote(reference))));
        };
        let Some(&target) = self.index_by_name.get(name) else {
            return Err(schema_error(path, format!("unknown model in reference: {}", go_quote(name))));
        };
        Ok(Arc::new(Node::Reference { target, name: format!("Reference to {}", go_quote(name)) }))
    }

    fn kind(&self, schema: &Map, path: &str) -> Result<Node> {
        let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
            return Err(schema_error(path, "object doesn't have properties".into()));
        };
        let mut fields = HashMap::with_capacity(properties.len());
        for (key, property) in properties {
            let field_path = format!("{path}.{key}");
            let schema = self.parse(property, &field_path)?;
            let meta = read_patch_meta(property.as_object().expect("parse accepted only objects"));
            fields.insert(key.clone(), Field { meta, schema });
        }
        // Upstream lists the field names in map order; sorted is the deterministic choice.
        let name = format!("Kind([{}])", properties.keys().cloned().collect::<Vec<_>>().join(" "));
        Ok(Node::Kind { path: path.to_owned(), fields, name })
    }

    fn map(&self, schema: &Map, path: &str) -> Result<Node> {
        // A non-schema `additionalProperties` (absent, a boolean, or the string "object" of
        // the upstream testdata) leaves an Arbitrary value type, as gnostic does.
        let value_name = match schema.get("additionalProperties") {
            Some(sub @ Value::Object(_)) => self.parse(sub, path)?.name(),
            _ => ARBITRARY_NAME.to_owned(),
        };
        Ok(Node::Map { name: format!("Map of {value_name}") })
    }

    fn array(&self, schema: &Map, path: &str) -> Result<Node> {
        let item = match schema.get("items") {
            Some(item @ Value::Object(_)) => item,
            Some(Value::Array(items)) if items.len() == 1 => &items[0],
            _ => return Err(schema_error(path, "array should have exactly one sub-item".into())),
        };
        let items = self.parse(item, path)?;
        let name = format!("Array of {}", items.name());
        Ok(Node::Array { items, name })
    }
}

/// A schema node handed out to the merge engine.
struct V2Schema {
    doc: Arc<Document>,
    node: Arc<Node>,
}

fn handle(doc: &Arc<Document>, node: Arc<Node>) -> SchemaRef {
    Arc::new(V2Schema { doc: doc.clone(), node })
}

impl fmt::Debug for V2Schema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("V2Schema").field("name", &self.node.name()).finish_non_exhaustive()
    }
}

fn field_not_found(key: &str, path: &str) -> Error {
    Error::Lookup(format!("unable to find api field {} in {path}", go_quote(key)))
}

fn reference_cycle() -> Error {
    Error::Lookup(format!("more than {MAX_REFERENCE_HOPS} nested references in OpenAPI v2 definitions"))
}

impl V2Schema {
    fn child(&self, node: &Arc<Node>) -> SchemaRef {
        handle(&self.doc, node.clone())
    }

    fn definition(&self, target: usize) -> &Arc<Node> {
        &self.doc.definitions[target]
    }
}

impl Schema for V2Schema {
    /// Upstream `kindItem`.
    fn lookup_struct(&self, key: &str) -> Result<(SchemaRef, PatchMeta)> {
        let mut node = &self.node;
        for _ in 0..MAX_REFERENCE_HOPS {
            match node.as_ref() {
                Node::Reference { target, .. } => node = self.definition(*target),
                Node::Kind { path, fields, .. } => {
                    let field = fields.get(key).ok_or_else(|| field_not_found(key, path))?;
                    return Ok((self.child(&field.schema), field.meta.clone()?));
                }
                Node::Map { .. } => return Err(Error::Lookup("expected kind, but got map".into())),
                Node::Primitive { .. } => {
                    return Err(Error::Lookup("expected kind, but got primitive".into()));
                }
                Node::Array { .. } => return Err(Error::Lookup("expected kind, but got slice".into())),
                Node::Arbitrary => return Ok((Arc::new(Untyped), PatchMeta::default())),
            }
        }
        Err(reference_cycle())
    }

    /// Upstream `sliceItem`: `found_field` plays the role of its `hasVisitKind`.
    fn lookup_slice(&self, key: &str) -> Result<(SchemaRef, PatchMeta)> {
        let mut node = &self.node;
        let mut meta = PatchMeta::default();
        let mut found_field = false;
        for _ in 0..MAX_REFERENCE_HOPS {
            match node.as_ref() {
                Node::Reference { target, .. } if found_field => {
                    return Ok((self.child(self.definition(*target)), meta));
                }
                Node::Reference { target, .. } => node = self.definition(*target),
                Node::Kind { path, fields, .. } => {
                    let field = fields.get(key).ok_or_else(|| field_not_found(key, path))?;
                    meta = field.meta.clone()?;
                    found_field = true;
                    node = &field.schema;
                }
                Node::Array { items, .. } if found_field => return Ok((self.child(items), meta)),
                Node::Array { .. } => {
                    return Err(Error::Lookup("expected visit kind first, then visit array".into()));
                }
                Node::Map { .. } => return Err(Error::Lookup("expected slice, but got map".into())),
                Node::Primitive { .. } => {
                    return Err(Error::Lookup("expected slice, but got primitive".into()));
                }
                Node::Arbitrary => return Ok((Arc::new(Untyped), meta)),
            }
        }
        Err(reference_cycle())
    }

    fn name(&self) -> String {
        self.node.name()
    }
}
