//! The "struct-tag" schemas of the upstream tests (`PatchMetaFromStruct` over the Go test
//! structs), built from `struct-schemas.json`: field lookup follows Go's `encoding/json` name
//! matching (exact JSON name first, then case-insensitive), pointers are unwrapped, and the
//! errors carry upstream's texts.

use std::collections::HashMap;
use std::sync::Arc;

use applyset_merge::{Error, PatchMeta, Result, Schema, SchemaRef, Value};

/// A Go type as far as patch metadata lookups can tell types apart.
#[derive(Debug, Clone, PartialEq)]
pub enum GoType {
    /// A named struct of the registry (`MergeItem`).
    Struct(String),
    /// A struct whose JSON-visible fields are listed inline (`struct{ Raw []byte }`,
    /// `runtime.RawExtension` with none); `name` is Go's `Type.Name()`.
    Inline {
        name: String,
        fields: Vec<Field>,
    },
    Slice(Box<GoType>),
    Ptr(Box<GoType>),
    Map,
    /// A basic type; the text is its `reflect.Kind` name.
    Basic(String),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    pub json_name: String,
    pub ty: GoType,
    pub strategy: String,
    pub merge_key: String,
}

impl GoType {
    /// Parses the `goType` texts used in `struct-schemas.json`.
    pub fn parse(text: &str) -> GoType {
        let text = text.trim();
        if let Some(elem) = text.strip_prefix("[]") {
            return GoType::Slice(Box::new(GoType::parse(elem)));
        }
        if let Some(elem) = text.strip_prefix('*') {
            return GoType::Ptr(Box::new(GoType::parse(elem)));
        }
        if text.starts_with("map[") {
            return GoType::Map;
        }
        if text == "runtime.RawExtension" {
            // Its fields Raw and Object are tagged `json:"-"`: nothing is visible to JSON.
            return GoType::Inline { name: "RawExtension".into(), fields: Vec::new() };
        }
        if let Some(body) = text.strip_prefix("struct{").and_then(|b| b.strip_suffix('}')) {
            let fields = body
                .split(';')
                .filter(|f| !f.trim().is_empty())
                .map(|f| {
                    let (name, ty) = f.trim().split_once(' ').expect("field name and type");
                    // No json tag: the JSON name is the Go field name.
                    Field {
                        json_name: name.into(),
                        ty: GoType::parse(ty),
                        strategy: String::new(),
                        merge_key: String::new(),
                    }
                })
                .collect();
            return GoType::Inline { name: String::new(), fields };
        }
        match text {
            "byte" => GoType::Basic("uint8".into()),
            "string" | "bool" | "int" | "int8" | "int16" | "int32" | "int64" | "uint" | "uint8" | "uint16"
            | "uint32" | "uint64" | "float32" | "float64" => GoType::Basic(text.into()),
            name => GoType::Struct(name.into()),
        }
    }

    /// Go's `reflect.Kind` name.
    pub fn kind(&self) -> &str {
        match self {
            GoType::Struct(_) | GoType::Inline { .. } => "struct",
            GoType::Slice(_) => "slice",
            GoType::Ptr(_) => "ptr",
            GoType::Map => "map",
            GoType::Basic(kind) => kind,
        }
    }
}

/// The named structs of `struct-schemas.json`.
#[derive(Debug, Default)]
pub struct Registry {
    structs: HashMap<String, Vec<Field>>,
}

impl Registry {
    pub fn from_document(doc: &Value) -> Registry {
        let structs = doc.as_object().and_then(|d| d.get("structs")).and_then(Value::as_object).expect("structs");
        let structs = structs
            .iter()
            .map(|(name, fields)| {
                let fields = fields
                    .as_array()
                    .expect("field list")
                    .iter()
                    .map(|f| {
                        let f = f.as_object().expect("field");
                        let text = |k: &str| f.get(k).and_then(Value::as_str).unwrap_or_default().to_owned();
                        let json = text("json");
                        Field {
                            json_name: if json.is_empty() { text("goName") } else { json },
                            ty: GoType::parse(&text("goType")),
                            strategy: text("patchStrategy"),
                            merge_key: text("patchMergeKey"),
                        }
                    })
                    .collect();
                (name.clone(), fields)
            })
            .collect();
        Registry { structs }
    }
}

/// A node of the struct-tag schema: a Go type plus the registry to resolve named structs.
#[derive(Debug, Clone)]
pub struct StructSchema {
    ty: GoType,
    registry: Arc<Registry>,
}

impl StructSchema {
    /// Upstream `NewPatchMetaFromStruct(dataStruct)`: the value must be a struct (or a
    /// pointer to one). `go_kind` is the kind of a non-struct value passed instead; `None`
    /// stands for a nil interface.
    pub fn for_value(registry: Arc<Registry>, type_name: Option<&str>, go_kind: Option<&str>) -> Result<StructSchema> {
        match (type_name, go_kind) {
            (Some(name), _) => {
                let ty = GoType::parse(name);
                let unwrapped = match &ty {
                    GoType::Ptr(inner) => inner.as_ref(),
                    other => other,
                };
                if unwrapped.kind() != "struct" {
                    return Err(bad_arg_kind(unwrapped.kind()));
                }
                Ok(StructSchema { ty: unwrapped.clone(), registry })
            }
            (None, Some(kind)) => Err(bad_arg_kind(kind)),
            (None, None) => Err(bad_arg_kind("nil")),
        }
    }

    fn child(&self, ty: GoType) -> SchemaRef {
        Arc::new(StructSchema { ty, registry: self.registry.clone() })
    }

    fn fields(&self, ty: &GoType) -> Vec<Field> {
        match ty {
            GoType::Struct(name) => self.registry.structs.get(name).cloned().unwrap_or_default(),
            GoType::Inline { fields, .. } => fields.clone(),
            _ => Vec::new(),
        }
    }
}

fn bad_arg_kind(kind: &str) -> Error {
    Error::BadArgType { expected: "struct".into(), received: kind.into() }
}

fn type_name(ty: &GoType) -> &str {
    match ty {
        GoType::Struct(name) => name,
        GoType::Inline { name, .. } => name,
        _ => "",
    }
}

/// Go's `bytes.EqualFold`-style comparison, including the two non-ASCII folds of `k` and `s`.
fn equal_fold(a: &str, b: &str) -> bool {
    let fold = |c: char| match c {
        '\u{212a}' => 'k',
        '\u{17f}' => 's',
        c => c.to_lowercase().next().unwrap_or(c),
    };
    a.chars().map(fold).eq(b.chars().map(fold))
}

impl StructSchema {
    /// Upstream `LookupPatchMetadataForStruct`: the field's Go type and tags.
    fn lookup_field(&self, key: &str) -> Result<(GoType, PatchMeta)> {
        let ty = match &self.ty {
            GoType::Ptr(inner) => inner.as_ref(),
            other => other,
        };
        if ty.kind() != "struct" {
            return Err(Error::Lookup(format!(
                "merging an object in json but data type is not struct, instead is: {}",
                ty.kind()
            )));
        }
        let fields = self.fields(ty);
        let found = fields
            .iter()
            .find(|f| f.json_name == key)
            .or_else(|| fields.iter().find(|f| equal_fold(&f.json_name, key)));
        match found {
            Some(f) => Ok((f.ty.clone(), PatchMeta::new(&f.strategy, &f.merge_key))),
            None => Err(Error::Lookup(format!(
                "unable to find api field in struct {} for the json field {key:?}",
                type_name(ty)
            ))),
        }
    }
}

impl Schema for StructSchema {
    fn lookup_struct(&self, key: &str) -> Result<(SchemaRef, PatchMeta)> {
        let (ty, meta) = self.lookup_field(key)?;
        Ok((self.child(ty), meta))
    }

    fn lookup_slice(&self, key: &str) -> Result<(SchemaRef, PatchMeta)> {
        let (field_ty, meta) = self.lookup_field(key)?;
        let element = match &field_ty {
            GoType::Slice(elem) => {
                if matches!(elem.as_ref(), GoType::Slice(_)) {
                    return Err(Error::Lookup("unexpected slice of slice".into()));
                }
                elem.as_ref().clone()
            }
            // A pointer to a struct is used as the element type (tests put lists there).
            GoType::Ptr(inner) => match inner.as_ref() {
                GoType::Slice(elem) => elem.as_ref().clone(),
                other => other.clone(),
            },
            _ => {
                return Err(Error::Lookup(format!("expected slice or array type, but got: {}", self.ty.kind())));
            }
        };
        Ok((self.child(element), meta))
    }

    fn name(&self) -> String {
        self.ty.kind().to_owned()
    }
}
