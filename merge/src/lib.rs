//! `applyset-merge`: the patch computations of `kubectl apply` (client-side), as pure functions.
//!
//! * [`create_two_way_merge_patch`], [`create_three_way_merge_patch`] and
//!   [`strategic_merge_patch`]: kubectl's strategic merge patch for built-in kinds.
//! * [`json_merge`]: the three-way JSON merge patch kubectl uses for custom resources, and
//!   RFC 7386 application.
//! * [`meta::Schema`]: where strategies and merge keys come from; [`openapi`] reads them from
//!   OpenAPI v2 and v3 documents.
//!
//! No I/O happens here. The behaviour follows the team's specification of kubectl's
//! client-side apply (`shared/docs/client-side-apply.md`).

pub mod error;
pub mod json_merge;
pub mod meta;
pub mod openapi;
mod strategic;
pub mod value;

pub use error::{Error, Result};
pub use meta::{PatchMeta, Schema, SchemaRef, Untyped};
/// Go's `sort.Sort`, exposed for test helpers that must order lists exactly as upstream.
#[doc(hidden)]
pub use strategic::gosort;
pub use strategic::{
    apply_strategic_merge_patch, create_three_way_merge_patch, create_two_way_merge_patch, strategic_merge_patch,
};
pub use value::{Map, Packed, Value};
