//! `applyset patch`: the merge engine on local files, for people and for external checks.
//!
//! Contract: output is one JSON object on stdout (`{"patch":P,"result":R}` for two-way and
//! three-way, `{"result":R}` for apply); errors go to stderr with exit code 1, a conflict under
//! `--no-overwrite` exits with 3.

use std::fmt;
use std::path::Path;

use applyset_merge::openapi::OpenApi;
use applyset_merge::{Map, SchemaRef, Value, json_merge};

use crate::causes::{Chain, with_causes};
use crate::cli::{PatchCommand, SchemaArgs};
use crate::document::read_object;

/// A failed command: its message and the process exit code it maps to.
#[derive(Debug)]
pub struct CommandError {
    message: String,
    conflict: bool,
}

impl CommandError {
    fn new(message: impl Into<String>) -> Self {
        CommandError { message: message.into(), conflict: false }
    }

    pub fn exit_code(&self) -> u8 {
        if self.conflict { 3 } else { 1 }
    }
}

impl fmt::Display for CommandError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl From<crate::document::DocumentError> for CommandError {
    fn from(err: crate::document::DocumentError) -> Self {
        CommandError::new(with_causes(&err))
    }
}

/// Which patch format the documents get.
enum Engine {
    Strategic(SchemaRef),
    JsonMerge,
}

impl Engine {
    fn from_args(args: &SchemaArgs) -> Result<Engine, CommandError> {
        let (Some(path), Some(name)) = (&args.openapi, &args.definition) else {
            return Ok(Engine::JsonMerge);
        };
        let document = read_object(path)?;
        let openapi = OpenApi::from_document(document)
            .map_err(|e| CommandError::new(format!("{}: {e}", path.display(), e = Chain(&e))))?;
        let schema =
            openapi.schema(name).map_err(|e| CommandError::new(format!("{}: {e}", path.display(), e = Chain(&e))))?;
        Ok(Engine::Strategic(schema))
    }
}

pub fn run(command: PatchCommand) -> Result<(), CommandError> {
    let output = match command {
        PatchCommand::TwoWay { original, modified, schema } => {
            let engine = Engine::from_args(&schema)?;
            let (o, m) = (read_object(&original)?, read_object(&modified)?);
            let context = || format!("two-way patch from {} to {}", original.display(), modified.display());
            let patch = match &engine {
                Engine::Strategic(s) => applyset_merge::create_two_way_merge_patch(&o, &m, s.as_ref()),
                Engine::JsonMerge => json_merge::create_merge_patch(&o, &m),
            }
            .map_err(|e| engine_error(context(), e))?
            .as_sent();
            let result = apply(&engine, &o, &patch).map_err(|e| engine_error(context(), e))?;
            patch_and_result(patch, result)
        }
        PatchCommand::ThreeWay { original, modified, current, no_overwrite, schema } => {
            let engine = Engine::from_args(&schema)?;
            let (o, m, c) = (read_object(&original)?, read_object(&modified)?, read_object(&current)?);
            let context = || {
                format!(
                    "three-way patch (original {}, modified {}, current {})",
                    original.display(),
                    modified.display(),
                    current.display()
                )
            };
            let patch = match &engine {
                Engine::Strategic(s) => {
                    applyset_merge::create_three_way_merge_patch(&o, &m, &c, s.as_ref(), !no_overwrite)
                }
                // The JSON merge path has no overwrite switch: kubectl never checks conflicts there.
                Engine::JsonMerge => json_merge::create_three_way(&o, &m, &c),
            }
            .map_err(|e| engine_error(context(), e))?
            .as_sent();
            let result = apply(&engine, &c, &patch).map_err(|e| engine_error(context(), e))?;
            patch_and_result(patch, result)
        }
        PatchCommand::Apply { current, patch, schema } => {
            let engine = Engine::from_args(&schema)?;
            let (c, p) = (read_object(&current)?, read_object(&patch)?);
            let result = apply(&engine, &c, &p)
                .map_err(|e| engine_error(format!("applying {} to {}", show(&patch), show(&current)), e))?;
            let mut out = Map::new();
            out.insert("result".into(), result);
            Value::Object(out)
        }
    };
    println!("{}", output.to_json_string());
    Ok(())
}

fn apply(engine: &Engine, doc: &Value, patch: &Value) -> applyset_merge::Result<Value> {
    match engine {
        Engine::Strategic(schema) => applyset_merge::strategic_merge_patch(doc, patch, schema.as_ref()),
        Engine::JsonMerge => json_merge::merge_patch(doc, patch),
    }
}

fn patch_and_result(patch: Value, result: Value) -> Value {
    let mut out = Map::new();
    out.insert("patch".into(), patch);
    out.insert("result".into(), result);
    Value::Object(out)
}

fn engine_error(context: String, err: applyset_merge::Error) -> CommandError {
    if err.is_conflict() {
        CommandError { message: format!("conflict: {context}: {err}", err = Chain(&err)), conflict: true }
    } else {
        CommandError::new(format!("{context}: {err}", err = Chain(&err)))
    }
}

fn show(path: &Path) -> String {
    path.display().to_string()
}
