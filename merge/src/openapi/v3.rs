//! OpenAPI v3 provider, with the lookup rules of apimachinery's `PatchMetaFromOpenAPIV3`
//! (spec §2.2.1):
//!
//! * a node without `properties`, or without the key, fails with `unable to find api field "k"`;
//! * the metadata comes from the property schema itself, before any resolution;
//! * the child is then resolved *once*: `allOf[0]` if `allOf` is non-empty, then `$ref` looked up
//!   in `components.schemas` (missing → `unable to resolve <ref> in OpenAPI V3`); for a slice
//!   lookup the property's `items` replaces it first. A resolved component is used as it is:
//!   its own `allOf`/`$ref` are not followed, exactly as upstream.
//! * a node that is unknown (`items` given as a list of schemas) is permissive below.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use super::{Gvk, STRATEGIC_MERGE_PATCH, read_patch_meta, strategic_merge_index};
use crate::meta::{PatchMeta, Schema, SchemaRef, Untyped};
use crate::{Error, Map, Result, Value};

const COMPONENT_REF_PREFIX: &str = "#/components/schemas/";

/// A compiled v3 document: the component schemas and the GVK indexes.
pub(super) struct Document {
    components: Vec<Arc<Node>>,
    index_by_name: HashMap<String, usize>,
    root_by_gvk: HashMap<Gvk, usize>,
    pub(super) strategic_merge: HashMap<Gvk, bool>,
}

/// A schema node. Only what lookups read is kept.
struct Node {
    /// The schema's `type` joined, or `Struct` when it has none (upstream `Name()`).
    name: String,
    /// `None` when the schema has no `properties` (or an empty map): every lookup fails.
    properties: Option<HashMap<String, Property>>,
}

struct Property {
    meta: Result<PatchMeta>,
    /// The child for `lookup_struct`: the property schema, resolved.
    as_object: Target,
    /// The child for `lookup_slice`: the property's `items` (or the property), resolved.
    as_list_element: Target,
}

/// Where a lookup leads, with references already turned into indexes.
#[derive(Clone)]
enum Target {
    /// Nothing is known: permissive below.
    Unknown,
    Inline(Arc<Node>),
    Component(usize),
    /// A `$ref` that names no component; the lookup fails with this reference text.
    Unresolvable(String),
}

impl Document {
    pub(super) fn compile(root: &Map) -> Document {
        let empty = Map::new();
        let schemas = root
            .get("components")
            .and_then(Value::as_object)
            .and_then(|c| c.get("schemas"))
            .and_then(Value::as_object)
            .unwrap_or(&empty);
        // Names are indexed first so that references (including cycles) compile to indexes.
        let index_by_name: HashMap<String, usize> =
            schemas.keys().enumerate().map(|(i, name)| (name.clone(), i)).collect();
        let compiler = Compiler { index_by_name: &index_by_name };
        let components = schemas.values().map(|schema| compiler.node(schema)).collect();

        // `schemas` iterates in name order, so a later insert is a greater name (see
        // `OpenApi::schema_for_gvk`).
        let mut root_by_gvk = HashMap::new();
        for (i, schema) in schemas.values().enumerate() {
            for gvk in schema.as_object().map(Gvk::list_of).unwrap_or_default() {
                root_by_gvk.insert(gvk, i);
            }
        }
        let strategic_merge = strategic_merge_index(root, accepts_strategic_merge);
        Document { components, index_by_name, root_by_gvk, strategic_merge }
    }

    pub(super) fn len(&self) -> usize {
        self.components.len()
    }

    pub(super) fn schema(doc: &Arc<Document>, name: &str) -> Option<SchemaRef> {
        let index = *doc.index_by_name.get(name)?;
        Some(handle(doc, doc.components[index].clone()))
    }

    pub(super) fn schema_for_gvk(doc: &Arc<Document>, gvk: &Gvk) -> Option<SchemaRef> {
        let index = *doc.root_by_gvk.get(gvk)?;
        Some(handle(doc, doc.components[index].clone()))
    }
}

/// Whether a PATCH operation's requestBody lists the strategic merge patch content type.
fn accepts_strategic_merge(operation: &Map) -> bool {
    operation
        .get("requestBody")
        .and_then(Value::as_object)
        .and_then(|body| body.get("content"))
        .and_then(Value::as_object)
        .is_some_and(|content| content.contains_key(STRATEGIC_MERGE_PATCH))
}

struct Compiler<'a> {
    index_by_name: &'a HashMap<String, usize>,
}

impl Compiler<'_> {
    fn node(&self, schema: &Value) -> Arc<Node> {
        let empty = Map::new();
        let schema = schema.as_object().unwrap_or(&empty);
        let name = match schema.get("type") {
            Some(Value::String(t)) if !t.is_empty() => t.clone(),
            Some(Value::Array(types)) if !types.is_empty() => {
                types.iter().filter_map(Value::as_str).collect::<Vec<_>>().concat()
            }
            _ => "Struct".to_owned(),
        };
        let properties = schema
            .get("properties")
            .and_then(Value::as_object)
            .filter(|props| !props.is_empty())
            .map(|props| props.iter().map(|(key, prop)| (key.clone(), self.property(prop))).collect());
        Arc::new(Node { name, properties })
    }

    fn property(&self, schema: &Value) -> Property {
        let empty = Map::new();
        let fields = schema.as_object().unwrap_or(&empty);
        let as_object = self.resolve(Some(schema));
        let as_list_element = match fields.get("items") {
            None => as_object.clone(),
            // `items` as a list of schemas leaves Go with a nil schema.
            Some(items) if items.as_object().is_none() => self.resolve(None),
            Some(items) => self.resolve(Some(items)),
        };
        Property { meta: read_patch_meta(fields), as_object, as_list_element }
    }

    /// Upstream `resolve`: `allOf[0]` first, then one `$ref`.
    fn resolve(&self, schema: Option<&Value>) -> Target {
        let Some(mut schema) = schema else {
            return Target::Unknown;
        };
        if let Some(first) =
            schema.as_object().and_then(|s| s.get("allOf")).and_then(Value::as_array).and_then(|a| a.first())
        {
            schema = first;
        }
        match schema.as_object().and_then(|s| s.get("$ref")).and_then(Value::as_str) {
            Some(reference) if !reference.is_empty() => {
                let name = reference.strip_prefix(COMPONENT_REF_PREFIX).unwrap_or(reference);
                match self.index_by_name.get(name) {
                    Some(&index) => Target::Component(index),
                    None => Target::Unresolvable(reference.to_owned()),
                }
            }
            _ => Target::Inline(self.node(schema)),
        }
    }
}

/// A schema node handed out to the merge engine.
struct V3Schema {
    doc: Arc<Document>,
    node: Arc<Node>,
}

fn handle(doc: &Arc<Document>, node: Arc<Node>) -> SchemaRef {
    Arc::new(V3Schema { doc: doc.clone(), node })
}

impl fmt::Debug for V3Schema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("V3Schema").field("name", &self.node.name).finish_non_exhaustive()
    }
}

impl V3Schema {
    fn lookup(&self, key: &str, child: impl Fn(&Property) -> &Target) -> Result<(SchemaRef, PatchMeta)> {
        let property = self
            .node
            .properties
            .as_ref()
            .and_then(|props| props.get(key))
            .ok_or_else(|| Error::Lookup(format!("unable to find api field {}", super::go_quote(key))))?;
        let meta = property.meta.clone()?;
        let schema: SchemaRef = match child(property) {
            Target::Unknown => Arc::new(Untyped),
            Target::Inline(node) => handle(&self.doc, node.clone()),
            Target::Component(index) => handle(&self.doc, self.doc.components[*index].clone()),
            Target::Unresolvable(reference) => {
                return Err(Error::Lookup(format!("unable to resolve {reference} in OpenAPI V3")));
            }
        };
        Ok((schema, meta))
    }
}

impl Schema for V3Schema {
    fn lookup_struct(&self, key: &str) -> Result<(SchemaRef, PatchMeta)> {
        self.lookup(key, |p| &p.as_object)
    }

    fn lookup_slice(&self, key: &str) -> Result<(SchemaRef, PatchMeta)> {
        self.lookup(key, |p| &p.as_list_element)
    }

    fn name(&self) -> String {
        self.node.name.clone()
    }
}
