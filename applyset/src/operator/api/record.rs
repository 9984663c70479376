//! `ApplySetRecord` (`applyset.dev/v1alpha1`): one part of a large ApplySet's record of its
//! members, written and read by the controller only.
//!
//! The record (every object the ApplySet applied, with its UID, for prune) grows with the set:
//! about 100 bytes an object. Kept in the ApplySet's status it would make every status write
//! of a 10,000-object set 1 MiB, and refuse the writes of a 20,000-object set (etcd's request
//! limit). A record over a few KiB is therefore gzip-compressed and kept in parts of its own
//! kind, in the ApplySet's namespace; the status names them ([`MemberRecordRef`]). A kind of its
//! own (not ConfigMaps) keeps the RBAC exact: the controller needs no rights on ConfigMaps,
//! and tenants, who usually may edit ConfigMaps, get none on these.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A part of an ApplySet's member record.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[kube(
    group = "applyset.dev",
    version = "v1alpha1",
    kind = "ApplySetRecord",
    plural = "applysetrecords",
    singular = "applysetrecord",
    namespaced,
    printcolumn = r#"{"name":"ApplySet","type":"string","jsonPath":".spec.applySet"}"#,
    printcolumn = r#"{"name":"Part","type":"integer","jsonPath":".spec.part"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct ApplySetRecordSpec {
    /// The ApplySet of this namespace whose members this part records.
    pub apply_set: String,
    /// Its position among the record's parts, from 0.
    pub part: u32,
    /// How many parts the record has.
    pub parts: u32,
    /// The SHA-256 (hex) of the whole record, uncompressed: a part of another record, or a
    /// record put together wrongly, is never read as this one.
    pub digest: String,
    /// This part's slice of the gzip-compressed JSON record, in base64.
    pub data: String,
}

/// `status.inventory.record`: the record of members, compressed: in the status itself while
/// small (`inline`), otherwise in `ApplySetRecord` parts (`parts`).
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MemberRecordRef {
    /// The SHA-256 (hex) of the record, uncompressed.
    pub digest: String,
    /// How many members it records.
    pub count: u64,
    /// The `ApplySetRecord` objects holding it, in order (in the ApplySet's namespace); empty
    /// when the record is `inline`.
    pub parts: Vec<String>,
    /// The record itself (its gzip-compressed JSON, in base64) while that is at most 12 KiB:
    /// one string costs the apiserver far less at each status write (decoding, validating,
    /// tracking managed fields) than a list of a few hundred members.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inline: Option<String>,
}
