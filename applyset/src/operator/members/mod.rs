//! Where each ApplySet's record of its members is kept: compressed, in the status while it is
//! small (`status.inventory.record.inline`), in `ApplySetRecord` parts once it is not (see
//! [`crate::operator::api::ApplySetRecord`]).
//!
//! The run works on the whole record in `status.inventory.members`: the record is read into it
//! ([`MemberRecords::read_into`]) when a run begins, and moved out of it ([`MemberRecords::store_from`])
//! just before each status write. Parts are named by the record's digest and written before
//! the status that names them, so a status always names a complete record; those of an earlier
//! record are deleted once the status no longer names them. The last record read or written is
//! remembered (by digest), so a run that changes nothing reads and writes nothing.
//!
//! A status written by an earlier version holds the record as a plain list in
//! `status.inventory.members`: it is read as it is, and written compressed at the next write.

pub mod codec;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use kube::Api;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams};

use self::codec::CorruptRecord;
use super::api::{ApplySet, ApplySetRecord, ApplySetRecordSpec, ApplySetStatus, InventoryMember, MemberRecordRef};
use crate::causes::Chain;
use crate::keys::RECORD_OF_LABEL;

/// The field manager of the parts.
const MANAGER: &str = "applyset-controller";

/// Why an ApplySet's member record could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// A part the status names is gone (deleted by hand).
    #[error("part {name} of the member record is missing")]
    Missing { name: String },
    /// The parts do not make the record the status names (edited by hand).
    #[error("the member record's parts are unusable")]
    Corrupt(#[source] CorruptRecord),
    #[error("{action} the member record part {name}")]
    Api {
        action: &'static str,
        name: String,
        #[source]
        source: kube::Error,
    },
}

impl RecordError {
    /// The error with its causes, `: `-separated (for an Event).
    pub fn describe(&self) -> String {
        crate::causes::with_causes(self)
    }

    /// The record is lost for good (retrying cannot help): the run goes on without it, and
    /// prunes nothing it would have named.
    pub fn is_lost(&self) -> bool {
        matches!(self, RecordError::Missing { .. } | RecordError::Corrupt(_))
    }
}

/// A record as read or written: its digest and its members.
type Known = (String, Arc<Vec<InventoryMember>>);

/// The last record each ApplySet read or wrote, by `namespace/name`.
#[derive(Default)]
pub struct MemberRecords {
    known: Mutex<HashMap<String, Known>>,
}

impl MemberRecords {
    fn remembered(&self, key: &str, digest: &str) -> Option<Arc<Vec<InventoryMember>>> {
        let known = self.known.lock().unwrap_or_else(|p| p.into_inner());
        known.get(key).filter(|(known, _)| known == digest).map(|(_, members)| members.clone())
    }

    fn remember(&self, key: &str, digest: String, members: Arc<Vec<InventoryMember>>) {
        self.known.lock().unwrap_or_else(|p| p.into_inner()).insert(key.to_owned(), (digest, members));
    }

    pub fn forget(&self, key: &str) {
        self.known.lock().unwrap_or_else(|p| p.into_inner()).remove(key);
    }

    /// Reads the record that `status.inventory.record` holds or names into
    /// `status.inventory.members` (nothing to do when the status holds the plain list).
    pub async fn read_into(
        &self,
        client: &kube::Client,
        applyset: &ApplySet,
        status: &mut ApplySetStatus,
    ) -> Result<(), RecordError> {
        let Some(inventory) = status.inventory.as_mut() else { return Ok(()) };
        let Some(reference) = inventory.record.clone() else { return Ok(()) };
        if inventory.members.is_some() {
            return Ok(());
        }
        let key = applyset.key();
        let members = match self.remembered(&key, &reference.digest) {
            Some(members) => members,
            None => {
                let members = match codec::decode_inline(&reference) {
                    Some(decoded) => decoded.map_err(RecordError::Corrupt)?,
                    None => read_parts(client, applyset, &reference).await?,
                };
                let members = Arc::new(members);
                self.remember(&key, reference.digest.clone(), members.clone());
                members
            }
        };
        inventory.members = Some(members.as_ref().clone());
        Ok(())
    }

    /// Before a status write: the record is compressed, kept in the status while small and
    /// moved to parts otherwise (written unless `written`, the status on the server, names the
    /// same record already). Returns the parts the write leaves unnamed, to delete once it
    /// succeeded.
    pub async fn store_from(
        &self,
        client: &kube::Client,
        applyset: &ApplySet,
        written: &ApplySetStatus,
        next: &mut ApplySetStatus,
    ) -> Result<Vec<String>, RecordError> {
        let before = written.inventory.as_ref().and_then(|i| i.record.as_ref());
        let Some(inventory) = next.inventory.as_mut() else {
            return Ok(before.map(|r| r.parts.clone()).unwrap_or_default());
        };
        let Some(members) = inventory.members.take() else {
            // Not read (a run that ended before it needed the record): as it was.
            let kept = inventory.record.as_ref();
            return Ok(stale_parts(before, kept));
        };
        let json = codec::json(&members);
        let digest = codec::digest_of(&json);
        let reference = match before.filter(|r| r.digest == digest) {
            Some(same) => same.clone(),
            None => {
                let encoded = codec::encode(&json, digest, members.len() as u64);
                match codec::inline_reference(&encoded) {
                    Some(inline) => inline,
                    None => {
                        write_parts(client, applyset, &encoded).await?;
                        codec::reference(&applyset.name(), &encoded)
                    }
                }
            }
        };
        self.remember(&applyset.key(), reference.digest.clone(), Arc::new(members));
        let stale = stale_parts(before, Some(&reference));
        inventory.record = Some(reference);
        Ok(stale)
    }

    /// Deletes parts the status no longer names (a failure is logged: the ApplySet's deletion
    /// removes every part left).
    pub async fn delete_parts(&self, client: &kube::Client, applyset: &ApplySet, names: &[String]) {
        let api: Api<ApplySetRecord> = Api::namespaced(client.clone(), &applyset.namespace_or_default());
        for name in names {
            if let Err(error) = api.delete(name, &DeleteParams::default()).await
                && !is_not_found(&error)
            {
                tracing::warn!(applyset = %applyset.key(), part = %name, error = %Chain(&error), "cannot delete a member record part");
            }
        }
    }

    /// The ApplySet is gone: deletes every part of its record (those of runs that failed to
    /// write their status too).
    pub async fn delete_all(&self, client: &kube::Client, applyset: &ApplySet) -> Result<(), RecordError> {
        self.forget(&applyset.key());
        let Some(uid) = applyset.metadata.uid.as_deref() else { return Ok(()) };
        let api: Api<ApplySetRecord> = Api::namespaced(client.clone(), &applyset.namespace_or_default());
        let selector = format!("{RECORD_OF_LABEL}={uid}");
        let listed = api
            .list_metadata(&ListParams::default().labels(&selector))
            .await
            .map_err(|source| RecordError::Api { action: "listing", name: format!("-l {selector}"), source })?;
        let names: Vec<String> = listed.items.into_iter().filter_map(|item| item.metadata.name).collect();
        self.delete_parts(client, applyset, &names).await;
        Ok(())
    }
}

/// The parts named `before` that `after` does not name.
fn stale_parts(before: Option<&MemberRecordRef>, after: Option<&MemberRecordRef>) -> Vec<String> {
    let Some(before) = before else { return Vec::new() };
    let kept = after.map(|r| r.parts.as_slice()).unwrap_or_default();
    before.parts.iter().filter(|name| !kept.contains(name)).cloned().collect()
}

fn is_not_found(error: &kube::Error) -> bool {
    matches!(error, kube::Error::Api(status) if status.code == 404)
}

async fn read_parts(
    client: &kube::Client,
    applyset: &ApplySet,
    reference: &MemberRecordRef,
) -> Result<Vec<InventoryMember>, RecordError> {
    let api: Api<ApplySetRecord> = Api::namespaced(client.clone(), &applyset.namespace_or_default());
    let mut parts = Vec::with_capacity(reference.parts.len());
    for name in &reference.parts {
        let part = match api.get(name).await {
            Ok(part) => part,
            Err(error) if is_not_found(&error) => return Err(RecordError::Missing { name: name.clone() }),
            Err(source) => return Err(RecordError::Api { action: "reading", name: name.clone(), source }),
        };
        parts.push((name.clone(), part.spec));
    }
    codec::decode(reference, &parts).map_err(RecordError::Corrupt)
}

/// Writes (server-side apply: creating, or rewriting one a failed write left) every part.
async fn write_parts(client: &kube::Client, applyset: &ApplySet, encoded: &codec::Encoded) -> Result<(), RecordError> {
    let api: Api<ApplySetRecord> = Api::namespaced(client.clone(), &applyset.namespace_or_default());
    let name = applyset.name();
    let labels: BTreeMap<String, String> =
        applyset.metadata.uid.iter().map(|uid| (RECORD_OF_LABEL.to_owned(), uid.clone())).collect();
    for (position, data) in encoded.parts.iter().enumerate() {
        let part_name = codec::part_name(&name, &encoded.digest, position);
        let mut part = ApplySetRecord::new(
            &part_name,
            ApplySetRecordSpec {
                apply_set: name.clone(),
                part: position as u32,
                parts: encoded.parts.len() as u32,
                digest: encoded.digest.clone(),
                data: data.clone(),
            },
        );
        part.metadata.labels = Some(labels.clone());
        let params = PatchParams::apply(MANAGER).force();
        api.patch(&part_name, &params, &Patch::Apply(&part)).await.map_err(|source| RecordError::Api {
            action: "writing",
            name: part_name.clone(),
            source,
        })?;
    }
    Ok(())
}
