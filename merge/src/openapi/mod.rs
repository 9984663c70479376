//! Patch metadata from OpenAPI documents: v2 (`definitions`) and v3 (`components.schemas`).
//!
//! kubectl reads strategies and merge keys from two OpenAPI providers whose lookup rules differ
//! in observable ways (spec §2.2): v3 resolves `allOf[0]`/`$ref` one level and fails on any node
//! without `properties`; v2 goes through kube-openapi's "proto" model, where type-less fields
//! are *Arbitrary* and permissive below. Each provider lives in its own submodule and reproduces
//! its upstream error texts.
//!
//! A document is compiled once, when it is loaded, into a compact tree of nodes shared through
//! `Arc`s (references become indexes into the definition table), so a lookup is a hash probe
//! plus an `Arc` clone; nothing is re-parsed or cloned per lookup. The raw document is not kept.

mod v2;
mod v3;

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use crate::meta::PatchMeta;
use crate::value::go_quote;
use crate::{Error, Map, Result, SchemaRef, Value};

const PATCH_STRATEGY_KEY: &str = "x-kubernetes-patch-strategy";
const PATCH_MERGE_KEY_KEY: &str = "x-kubernetes-patch-merge-key";
const GVK_KEY: &str = "x-kubernetes-group-version-kind";
const STRATEGIC_MERGE_PATCH: &str = "application/strategic-merge-patch+json";

/// Which OpenAPI flavour a document is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenApiVersion {
    /// Swagger 2.0: `definitions`, read the way kube-openapi's proto model reads it.
    V2,
    /// OpenAPI 3: `components.schemas`, read the way apimachinery's `PatchMetaFromOpenAPIV3` does.
    V3,
}

/// A parsed OpenAPI document, v2 or v3, that hands out [`crate::Schema`] nodes.
///
/// Cloning is cheap (one `Arc`); the type is `Send + Sync` so one instance can serve every
/// apply of a process.
#[derive(Clone)]
pub struct OpenApi {
    inner: Inner,
}

#[derive(Clone)]
enum Inner {
    V2(Arc<v2::Document>),
    V3(Arc<v3::Document>),
}

impl fmt::Debug for OpenApi {
    // The compiled tree can hold thousands of nodes; a summary is what a log line wants.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenApi").field("version", &self.version()).field("schemas", &self.schema_count()).finish()
    }
}

impl OpenApi {
    /// Takes a whole OpenAPI document; v2 (`swagger`/`definitions`) or v3
    /// (`openapi`/`components.schemas`) is detected from its content.
    ///
    /// A v2 document is validated as kube-openapi validates it: a model that its proto parser
    /// rejects (e.g. a `$ref` to an unknown definition, an array without `items`) fails the
    /// whole document, which is what makes kubectl skip the v2 provider. v3 is read leniently,
    /// like the Go `spec.Schema` unmarshalling.
    pub fn from_document(doc: Value) -> Result<OpenApi> {
        let Ok(root) = doc.into_object() else {
            return Err(Error::OpenApi("the document is not a JSON object".into()));
        };
        let inner = match detect_version(&root)? {
            OpenApiVersion::V2 => Inner::V2(Arc::new(v2::Document::compile(&root)?)),
            OpenApiVersion::V3 => Inner::V3(Arc::new(v3::Document::compile(&root))),
        };
        Ok(OpenApi { inner })
    }

    pub fn version(&self) -> OpenApiVersion {
        match self.inner {
            Inner::V2(_) => OpenApiVersion::V2,
            Inner::V3(_) => OpenApiVersion::V3,
        }
    }

    /// The schema node of a named definition (the key under `definitions` or
    /// `components.schemas`).
    pub fn schema(&self, name: &str) -> Result<SchemaRef> {
        let found = match &self.inner {
            Inner::V2(doc) => v2::Document::schema(doc, name),
            Inner::V3(doc) => v3::Document::schema(doc, name),
        };
        found.ok_or_else(|| {
            let section = match self.version() {
                OpenApiVersion::V2 => "definitions",
                OpenApiVersion::V3 => "components.schemas",
            };
            Error::OpenApi(format!("no schema named {} under {section}", go_quote(name)))
        })
    }

    /// The root schema of the kind `group/version, Kind=kind`: the definition whose
    /// `x-kubernetes-group-version-kind` list contains it (the core group is `""`).
    ///
    /// When several definitions claim the same GVK, the one with the greatest name (byte
    /// order) wins. That is what kubectl's v2 index does (it walks the sorted model names and
    /// keeps the last); kubectl's v3 code takes whichever Go's map iteration yields first, so
    /// we apply the v2 rule to both to stay deterministic.
    pub fn schema_for_gvk(&self, group: &str, version: &str, kind: &str) -> Option<SchemaRef> {
        let gvk = Gvk::new(group, version, kind);
        match &self.inner {
            Inner::V2(doc) => v2::Document::schema_for_gvk(doc, &gvk),
            Inner::V3(doc) => v3::Document::schema_for_gvk(doc, &gvk),
        }
    }

    /// Whether the API offers strategic merge patch for the kind, i.e. whether kubectl would
    /// use this document's metadata at all (spec §2.2): v3 needs a PATCH operation tagged with
    /// the GVK whose requestBody accepts `application/strategic-merge-patch+json`; v2 needs the
    /// PATCH operation's `consumes` to list it. Custom resources never qualify.
    ///
    /// kubectl stops at the first PATCH operation tagged with the GVK (Go map order for v3,
    /// document order for v2); we take the first in path order, which gives the same answer
    /// whenever the operations of a kind agree, as they do in Kubernetes' own documents.
    pub fn supports_strategic_merge(&self, group: &str, version: &str, kind: &str) -> bool {
        let gvk = Gvk::new(group, version, kind);
        let index = match &self.inner {
            Inner::V2(doc) => &doc.strategic_merge,
            Inner::V3(doc) => &doc.strategic_merge,
        };
        index.get(&gvk).copied().unwrap_or(false)
    }

    fn schema_count(&self) -> usize {
        match &self.inner {
            Inner::V2(doc) => doc.len(),
            Inner::V3(doc) => doc.len(),
        }
    }
}

fn detect_version(root: &Map) -> Result<OpenApiVersion> {
    match (root.contains_key("swagger"), root.contains_key("openapi")) {
        (true, false) => return Ok(OpenApiVersion::V2),
        (false, true) => return Ok(OpenApiVersion::V3),
        (true, true) => {
            return Err(Error::OpenApi("the document has both `swagger` and `openapi` version fields".into()));
        }
        (false, false) => {}
    }
    let has_components_schemas =
        root.get("components").and_then(Value::as_object).is_some_and(|c| c.contains_key("schemas"));
    match (root.contains_key("definitions"), has_components_schemas) {
        (true, false) => Ok(OpenApiVersion::V2),
        (false, true) => Ok(OpenApiVersion::V3),
        _ => Err(Error::OpenApi(
            "cannot tell the version: expected `swagger`/`definitions` (v2) or `openapi`/`components.schemas` (v3)"
                .into(),
        )),
    }
}

/// A group-version-kind; the core group is the empty string.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Gvk {
    group: String,
    version: String,
    kind: String,
}

impl Gvk {
    fn new(group: &str, version: &str, kind: &str) -> Gvk {
        Gvk { group: group.into(), version: version.into(), kind: kind.into() }
    }

    /// One `{group, version, kind}` entry of the extension. Every member must be a string
    /// (an absent group means the core group), as kubectl's decoding into `map[string]string`
    /// requires.
    fn from_entry(entry: &Value) -> Option<Gvk> {
        let entry = entry.as_object()?;
        let member = |name: &str| match entry.get(name) {
            None => Some(String::new()),
            Some(Value::String(s)) => Some(s.clone()),
            Some(_) => None,
        };
        let gvk = Gvk { group: member("group")?, version: member("version")?, kind: member("kind")? };
        (!gvk.kind.is_empty()).then_some(gvk)
    }

    /// The GVKs of a schema's extension, which is a list on definitions.
    fn list_of(schema: &Map) -> Vec<Gvk> {
        match schema.get(GVK_KEY) {
            Some(Value::Array(entries)) => entries.iter().filter_map(Gvk::from_entry).collect(),
            _ => Vec::new(),
        }
    }

    /// The GVK of a PATCH operation, where the extension is a single object.
    fn of_operation(operation: &Map) -> Option<Gvk> {
        operation.get(GVK_KEY).and_then(Gvk::from_entry)
    }
}

/// GVK → whether strategic merge patch is accepted, from the PATCH operations under `paths`.
/// `accepts` reads one operation; the first operation (in path order) tagged with a GVK decides.
fn strategic_merge_index(root: &Map, accepts: impl Fn(&Map) -> bool) -> HashMap<Gvk, bool> {
    let mut index = HashMap::new();
    let Some(paths) = root.get("paths").and_then(Value::as_object) else {
        return index;
    };
    for item in paths.values() {
        let Some(patch) = item.as_object().and_then(|i| i.get("patch")).and_then(Value::as_object) else {
            continue;
        };
        if let Some(gvk) = Gvk::of_operation(patch) {
            index.entry(gvk).or_insert_with(|| accepts(patch));
        }
    }
    index
}

/// The patch metadata declared on a property schema. A non-string extension is the error
/// kubectl's v2 reader reports (its v3 reader would panic on a failed type assertion).
fn read_patch_meta(schema: &Map) -> Result<PatchMeta> {
    let read = |key: &str| match schema.get(key) {
        None => Ok(""),
        Some(Value::String(s)) => Ok(s.as_str()),
        Some(other) => Err(Error::BadArgType { expected: "string".into(), received: other.kind_name().into() }),
    };
    let strategy = read(PATCH_STRATEGY_KEY)?;
    let merge_key = read(PATCH_MERGE_KEY_KEY)?;
    Ok(PatchMeta::new(strategy, merge_key))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_quote_escapes_like_percent_q() {
        assert_eq!(go_quote("nested"), r#""nested""#);
        assert_eq!(go_quote("a\"b\\c\n\u{1}é"), r#""a\"b\\c\n\x01é""#);
    }

    #[test]
    fn version_detection() {
        let doc = |text: &str| Value::from_json_str(text).unwrap();
        assert_eq!(OpenApi::from_document(doc(r#"{"swagger":"2.0"}"#)).unwrap().version(), OpenApiVersion::V2);
        assert_eq!(OpenApi::from_document(doc(r#"{"definitions":{}}"#)).unwrap().version(), OpenApiVersion::V2);
        assert_eq!(OpenApi::from_document(doc(r#"{"openapi":"3.0"}"#)).unwrap().version(), OpenApiVersion::V3);
        assert_eq!(
            OpenApi::from_document(doc(r#"{"components":{"schemas":{}}}"#)).unwrap().version(),
            OpenApiVersion::V3
        );
        let err = OpenApi::from_document(doc(r#"{"info":{}}"#)).unwrap_err();
        assert!(err.to_string().contains("cannot tell the version"), "{err}");
        assert!(OpenApi::from_document(Value::Array(vec![])).is_err());
    }
}
