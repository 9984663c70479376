//! The member record as stored (pure): compact JSON, gzip-compressed and in base64, kept in the
//! status while small, otherwise cut into parts; either way named by its SHA-256.

use std::io::{Read, Write};

use base64::Engine;

use crate::operator::api::{ApplySetRecordSpec, InventoryMember, InventoryStatus, MemberRecordRef};

/// The largest record (compressed, in base64) kept in the status itself, about 340 members
/// (what a UID's randomness leaves to compress): larger ones go to `ApplySetRecord` parts, so
/// that the status stays under 64 KiB whatever the set's size (with 50 failed objects listed
/// with their longest messages beside it: `status_size` below).
pub const INLINE_LIMIT: usize = 12 * 1024;

/// Compressed bytes per part: 683 KiB once in base64, well within etcd's request limit.
pub const PART_BYTES: usize = 512 * 1024;

/// The most a record may take uncompressed: about 600,000 members. What is read back is cut
/// there too, so that a forged part cannot make the controller inflate without end.
pub const RECORD_LIMIT: usize = 64 << 20;

/// Why parts could not be read as the record the status names.
#[derive(Debug, thiserror::Error)]
pub enum CorruptRecord {
    #[error(
        "{name} is part {found} of {parts} of record {digest}, not part {expected} of {expected_parts} of {expected_digest}"
    )]
    WrongPart {
        name: String,
        found: u32,
        parts: u32,
        digest: String,
        expected: usize,
        expected_parts: usize,
        expected_digest: String,
    },
    #[error("{name} is not base64")]
    Base64 { name: String, source: base64::DecodeError },
    #[error("the record does not inflate")]
    Inflate(#[source] std::io::Error),
    #[error("the record inflates past {RECORD_LIMIT} bytes")]
    TooLarge,
    #[error("the record's SHA-256 is {found}, not {expected}")]
    Digest { expected: String, found: String },
    #[error("the record is not a JSON list of members")]
    Json(#[source] serde_json::Error),
}

/// The record as compact JSON.
pub fn json(members: &[InventoryMember]) -> Vec<u8> {
    serde_json::to_vec(members).expect("members serialize")
}

/// The SHA-256 (hex) of a record's JSON.
pub fn digest_of(json: &[u8]) -> String {
    use sha2::Digest;
    crate::digest::hex(&sha2::Sha256::digest(json))
}

/// A record ready to be written as parts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Encoded {
    pub digest: String,
    pub count: u64,
    /// Each part's data (base64 of a slice of the gzip stream).
    pub parts: Vec<String>,
}

/// Compresses the record (its JSON and that JSON's digest) and cuts it into parts.
pub fn encode(json: &[u8], digest: String, count: u64) -> Encoded {
    let mut gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gzip.write_all(json).expect("writing to memory");
    let compressed = gzip.finish().expect("writing to memory");
    let engine = base64::engine::general_purpose::STANDARD;
    let parts = compressed.chunks(PART_BYTES).map(|slice| engine.encode(slice)).collect();
    Encoded { digest, count, parts }
}

/// The name of a record's part: the ApplySet's name (or, when that is too long for a name,
/// its hash), the record's digest, the part's position.
pub fn part_name(applyset: &str, digest: &str, part: usize) -> String {
    let suffix = format!("{}-{part}", &digest[..digest.len().min(12)]);
    // A DNS subdomain name is at most 253 characters.
    if applyset.len() + suffix.len() + 9 <= 253 {
        format!("{applyset}.members-{suffix}")
    } else {
        format!("{}.members-{suffix}", crate::digest::short_sha256(applyset))
    }
}

/// What the status says of a record written as `encoded` for `applyset`.
pub fn reference(applyset: &str, encoded: &Encoded) -> MemberRecordRef {
    MemberRecordRef {
        digest: encoded.digest.clone(),
        count: encoded.count,
        parts: (0..encoded.parts.len()).map(|i| part_name(applyset, &encoded.digest, i)).collect(),
        inline: None,
    }
}

/// The record kept in the status itself, when `encoded` is small enough (one part of at most
/// [`INLINE_LIMIT`] bytes).
pub fn inline_reference(encoded: &Encoded) -> Option<MemberRecordRef> {
    match encoded.parts.as_slice() {
        [data] if data.len() <= INLINE_LIMIT => Some(MemberRecordRef {
            digest: encoded.digest.clone(),
            count: encoded.count,
            parts: Vec::new(),
            inline: Some(data.clone()),
        }),
        _ => None,
    }
}

/// The members of a record kept in the status (`inline`), checked against its digest; `None`
/// when it is kept in parts.
pub fn decode_inline(reference: &MemberRecordRef) -> Option<Result<Vec<InventoryMember>, CorruptRecord>> {
    let data = reference.inline.as_ref()?;
    let engine = base64::engine::general_purpose::STANDARD;
    let compressed = match engine.decode(data) {
        Ok(bytes) => bytes,
        Err(source) => {
            return Some(Err(CorruptRecord::Base64 { name: "status.inventory.record.inline".into(), source }));
        }
    };
    Some(inflate(&compressed, &reference.digest))
}

/// The members the status itself holds: the list of an earlier version's status, or the
/// record kept `inline` (`None` when the record is in parts, or unusable).
pub fn members_in_status(inventory: &InventoryStatus) -> Option<Vec<InventoryMember>> {
    match (&inventory.members, &inventory.record) {
        (Some(members), _) => Some(members.clone()),
        (None, Some(reference)) => decode_inline(reference)?.ok(),
        (None, None) => None,
    }
}

/// The members from the parts the status names (in its order), checked against its digest.
pub fn decode(
    reference: &MemberRecordRef,
    parts: &[(String, ApplySetRecordSpec)],
) -> Result<Vec<InventoryMember>, CorruptRecord> {
    let engine = base64::engine::general_purpose::STANDARD;
    let mut compressed = Vec::new();
    for (position, (name, part)) in parts.iter().enumerate() {
        if part.part as usize != position || part.parts as usize != parts.len() || part.digest != reference.digest {
            return Err(CorruptRecord::WrongPart {
                name: name.clone(),
                found: part.part,
                parts: part.parts,
                digest: part.digest.clone(),
                expected: position,
                expected_parts: parts.len(),
                expected_digest: reference.digest.clone(),
            });
        }
        let bytes = engine
            .decode(&part.data)
            .map_err(|source| CorruptRecord::Base64 { name: format!("part {name}"), source })?;
        compressed.extend_from_slice(&bytes);
    }
    inflate(&compressed, &reference.digest)
}

/// The members from a compressed record, checked against `digest`.
fn inflate(compressed: &[u8], digest: &str) -> Result<Vec<InventoryMember>, CorruptRecord> {
    let mut json = Vec::new();
    let mut inflating = flate2::read::GzDecoder::new(compressed).take(RECORD_LIMIT as u64 + 1);
    inflating.read_to_end(&mut json).map_err(CorruptRecord::Inflate)?;
    if json.len() > RECORD_LIMIT {
        return Err(CorruptRecord::TooLarge);
    }
    let found = digest_of(&json);
    if found != digest {
        return Err(CorruptRecord::Digest { expected: digest.to_owned(), found });
    }
    serde_json::from_slice(&json).map_err(CorruptRecord::Json)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn members(count: usize) -> Vec<InventoryMember> {
        (0..count)
            .map(|i| InventoryMember {
                kind: "ConfigMap".into(),
                namespace: Some("tenant-a".into()),
                name: format!("config-{i}"),
                uid: format!("{:08x}-1f2e-4d3c-8b7a-{:012x}", i * 7919, i * 104_729),
            })
            .collect()
    }

    fn stored(applyset: &str, encoded: &Encoded) -> Vec<(String, ApplySetRecordSpec)> {
        let reference = reference(applyset, encoded);
        reference
            .parts
            .iter()
            .zip(&encoded.parts)
            .enumerate()
            .map(|(i, (name, data))| {
                let spec = ApplySetRecordSpec {
                    apply_set: applyset.into(),
                    part: i as u32,
                    parts: encoded.parts.len() as u32,
                    digest: encoded.digest.clone(),
                    data: data.clone(),
                };
                (name.clone(), spec)
            })
            .collect()
    }

    #[test]
    fn a_record_comes_back_whole_from_its_parts() {
        let record = members(50_000);
        let json = json(&record);
        let encoded = encode(&json, digest_of(&json), record.len() as u64);
        assert!(encoded.parts.len() > 1, "{} part(s)", encoded.parts.len());
        assert!(encoded.parts.iter().all(|p| p.len() <= PART_BYTES.div_ceil(3) * 4));
        let reference = reference("web", &encoded);
        assert_eq!(reference.parts[1], format!("web.members-{}-1", &encoded.digest[..12]));
        assert_eq!(decode(&reference, &stored("web", &encoded)).unwrap(), record);
    }

    #[test]
    fn parts_out_of_place_or_altered_are_refused() {
        let record = members(50_000);
        let json = json(&record);
        let encoded = encode(&json, digest_of(&json), record.len() as u64);
        let reference = reference("web", &encoded);
        let mut parts = stored("web", &encoded);
        parts.swap(0, 1);
        assert!(matches!(decode(&reference, &parts), Err(CorruptRecord::WrongPart { .. })));
        parts.swap(0, 1);
        parts.pop();
        assert!(matches!(decode(&reference, &parts), Err(CorruptRecord::WrongPart { .. })));

        // A part rewritten by hand, with the record's digest copied: the digest check finds it.
        let other = members(3);
        let other_json = crate::operator::members::codec::json(&other);
        let forged = encode(&other_json, encoded.digest.clone(), 3);
        let forged_reference = MemberRecordRef { parts: vec!["web.members-x-0".into()], ..reference.clone() };
        let forged_parts = stored("web", &forged);
        assert!(matches!(decode(&forged_reference, &forged_parts), Err(CorruptRecord::Digest { .. })));
        let mut garbled = stored("web", &encoded);
        garbled[0].1.data = "not base64!".into();
        assert!(matches!(decode(&reference, &garbled), Err(CorruptRecord::Base64 { .. })));
    }

    #[test]
    fn long_applyset_names_still_make_valid_part_names() {
        let long = "a".repeat(253);
        let name = part_name(&long, &"f".repeat(64), 3);
        assert!(name.len() <= 253, "{}", name.len());
        assert!(name.ends_with(".members-ffffffffffff-3"), "{name}");
        assert_eq!(part_name("web", "0123456789abcdef", 0), "web.members-0123456789ab-0");
    }
}

#[cfg(test)]
mod status_size {
    use super::*;
    use crate::operator::api::{AppliedRevision, ApplySetStatus, InventoryObject};
    use crate::operator::status::{self, INVENTORY_LIMIT, MAX_MESSAGE, PRUNE_SKIPPED_LIMIT};

    /// The status of an ApplySet of `count` objects at its largest: every list at its limit,
    /// every message at its longest, the record in parts.
    fn largest_status(count: usize, inline: bool) -> ApplySetStatus {
        let long = |i: usize| format!("{i} {}", "m".repeat(MAX_MESSAGE));
        let objects: Vec<InventoryObject> = (0..count)
            .map(|i| InventoryObject {
                kind: "ConfigMap".into(),
                namespace: Some("tenant-a".into()),
                name: format!("config-{i:06}"),
                // Failed, with the longest message: each is listed (an object only applied is not).
                state: status::STATE_FAILED.into(),
                message: Some("m".repeat(status::MAX_OBJECT_MESSAGE)),
                ..InventoryObject::default()
            })
            .collect();
        let mut inventory = status::inventory(objects, INVENTORY_LIMIT);
        assert_eq!(inventory.objects.len(), INVENTORY_LIMIT.min(count));
        let members: Vec<InventoryMember> = (0..count)
            .map(|i| InventoryMember {
                kind: "ConfigMap".into(),
                namespace: Some("tenant-a".into()),
                name: format!("config-{i:06}"),
                uid: format!("{i:08x}-0000-4000-8000-000000000000"),
            })
            .collect();
        let record = json(&members);
        let encoded = encode(&record, digest_of(&record), count as u64);
        inventory.record = Some(match inline {
            // The largest record the status keeps itself, whatever the count.
            true => MemberRecordRef {
                parts: Vec::new(),
                inline: Some("A".repeat(INLINE_LIMIT)),
                ..reference("web", &encoded)
            },
            false => reference("web", &encoded),
        });
        let skipped = InventoryObject {
            kind: "ConfigMap".into(),
            namespace: Some("tenant-a".into()),
            name: "x".repeat(253),
            state: "NotInInventory".into(),
            message: Some("m".repeat(200)),
            ..InventoryObject::default()
        };
        let mut status = ApplySetStatus {
            inventory: Some(inventory),
            prune_skipped: vec![skipped; PRUNE_SKIPPED_LIMIT],
            prune_skipped_omitted: count as u64,
            applied_revisions: vec![
                AppliedRevision {
                    revision: format!("main@sha1:{}", "f".repeat(40)),
                    path: Some("apps/web".into()),
                    applied_at: Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                        k8s_openapi::jiff::Timestamp::now()
                    )),
                };
                crate::operator::history::HISTORY_LIMIT
            ],
            ..ApplySetStatus::default()
        };
        let failure = crate::operator::reconcile::StepError::new(crate::operator::reconcile::Stage::Apply, long(0));
        let now = k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(k8s_openapi::jiff::Timestamp::now());
        status::mark_failed(&mut status, &failure, Some(1), &now);
        status
    }

    #[test]
    fn the_status_stays_under_64_kib_at_3000_and_50000_objects() {
        for (count, inline) in [(3_000, false), (50_000, false), (3_000, true)] {
            let bytes = serde_json::to_vec(&largest_status(count, inline)).unwrap().len();
            assert!(bytes <= 64 * 1024, "{count} objects: {bytes} bytes");
            eprintln!("{count} objects: a status of at most {bytes} bytes");
        }
    }
}
