//! Comparing list elements the two ways kubectl does.
//!
//! * Applying a patch compares merge-key values (and scalar elements) with Go's `==` on
//!   `interface{}` values: typed, so `Int(80) != String("80")` and `Int(1) != Float(1.0)`.
//!   [`TypedKey`] is a hashable form of exactly that equality, so lookups are O(1).
//! * Diffing compares the `%v` strings ([`Value::go_v_string`]), so `80` and `"80"` match.

use std::borrow::Cow;
use std::collections::HashMap;
use std::hash::{BuildHasher, BuildHasherDefault, Hasher, RandomState};
use std::sync::OnceLock;

use crate::value::{Map, Value};

/// A hashable key with Go's typed `==` semantics for scalars, borrowing strings from the
/// value it describes. Go panics when comparing two maps or slices; we compare those
/// structurally instead (their JSON text), which only matters for malformed input such as an
/// object used as a merge-key value.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum TypedKey<'a> {
    Null,
    Bool(bool),
    Int(i64),
    /// Bits of the float, with -0.0 folded into 0.0 (Go: `-0.0 == 0.0`).
    Float(u64),
    Str(Cow<'a, str>),
    Composite(String),
}

impl<'a> TypedKey<'a> {
    pub(crate) fn of(v: &'a Value) -> TypedKey<'a> {
        match v {
            Value::Null => TypedKey::Null,
            Value::Bool(b) => TypedKey::Bool(*b),
            Value::Int(i) => TypedKey::Int(*i),
            Value::Float(f) => TypedKey::Float(if *f == 0.0 { 0 } else { f.to_bits() }),
            Value::String(s) => TypedKey::Str(Cow::Borrowed(s)),
            Value::Array(_) | Value::Object(_) => TypedKey::Composite(v.to_json_string()),
        }
    }

    /// The key of a list element: its merge-key value for maps (absent → `nil`, as Go's
    /// `map[key]` yields), the element itself otherwise.
    pub(crate) fn of_element(v: &'a Value, merge_key: &str) -> TypedKey<'a> {
        if merge_key.is_empty() {
            return TypedKey::of(v);
        }
        match v {
            Value::Object(m) => m.get(merge_key).map_or(TypedKey::Null, TypedKey::of),
            _ => TypedKey::Null,
        }
    }

    pub(crate) fn into_owned(self) -> TypedKey<'static> {
        match self {
            TypedKey::Null => TypedKey::Null,
            TypedKey::Bool(b) => TypedKey::Bool(b),
            TypedKey::Int(i) => TypedKey::Int(i),
            TypedKey::Float(f) => TypedKey::Float(f),
            TypedKey::Str(s) => TypedKey::Str(Cow::Owned(s.into_owned())),
            TypedKey::Composite(s) => TypedKey::Composite(s),
        }
    }

    /// The same key borrowing from `self`.
    pub(crate) fn reborrow(&self) -> TypedKey<'_> {
        match self {
            TypedKey::Str(s) => TypedKey::Str(Cow::Borrowed(s)),
            other => other.clone(),
        }
    }
}

/// Index of the first element with each key: Go's linear `index()` lookup, precomputed.
pub(crate) struct FirstIndex<'a>(KeyMap<TypedKey<'a>, usize>);

impl<'a> FirstIndex<'a> {
    pub(crate) fn new(keys: impl IntoIterator<Item = TypedKey<'a>>) -> FirstIndex<'a> {
        let keys = keys.into_iter();
        let mut map = KeyMap::with_capacity_and_hasher(keys.size_hint().0, KeyHashState::default());
        for (i, k) in keys.enumerate() {
            map.entry(k).or_insert(i);
        }
        FirstIndex(map)
    }

    pub(crate) fn of_list(list: &'a [Value], merge_key: &str) -> FirstIndex<'a> {
        FirstIndex::new(list.iter().map(|v| TypedKey::of_element(v, merge_key)))
    }

    pub(crate) fn of_keys(keys: &'a [TypedKey<'_>]) -> FirstIndex<'a> {
        FirstIndex::new(keys.iter().map(TypedKey::reborrow))
    }

    pub(crate) fn get(&self, key: &TypedKey<'_>) -> Option<usize> {
        // The map's keys may live longer than `key`; look up at the shorter lifetime.
        let map: &KeyMap<TypedKey<'_>, usize> = &self.0;
        map.get(key).copied()
    }
}

/// Go's `fmt.Sprintf("%s", v)`: strings as they are, everything else in Go's bad-verb form.
/// Used where kubectl renders values with `%s` (merge-key indexes of the conflict check,
/// `$patch` values in messages).
pub(crate) fn go_s_string(v: &Value) -> String {
    // One level of a walk over the document: see `value::deeper`.
    crate::value::deeper(move || match v {
        Value::String(s) => s.clone(),
        Value::Null => "%!s(<nil>)".to_owned(),
        Value::Bool(b) => format!("%!s(bool={b})"),
        Value::Int(i) => format!("%!s(int64={i})"),
        Value::Float(_) => format!("%!s(float64={})", v.go_v_string()),
        Value::Array(items) => {
            let parts: Vec<String> = items.iter().map(go_s_string).collect();
            format!("[{}]", parts.join(" "))
        }
        Value::Object(map) => {
            let parts: Vec<String> = map.iter().map(|(k, v)| format!("{k}:{}", go_s_string(v))).collect();
            format!("map[{}]", parts.join(" "))
        }
    })
}

/// Go's `reflect.TypeOf(v)` text, as printed in `expected a <T>, but received a <U>`.
pub(crate) fn go_type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "<nil>",
        other => other.kind_name(),
    }
}

/// `%v` of a Go `[]interface{}` made of several lists: `[[a 1] [a]]`.
pub(crate) fn go_v_lists(lists: &[&[Value]]) -> String {
    let parts: Vec<String> = lists.iter().map(|l| Value::Array(l.to_vec()).go_v_string()).collect();
    format!("[{}]", parts.join(" "))
}

/// The merge-key value of an element, if the element is an object that has it.
pub(crate) fn merge_key_value<'a>(v: &'a Value, merge_key: &str) -> Option<&'a Value> {
    v.as_object().and_then(|m: &Map| m.get(merge_key))
}

/// First position of each key in a list, without borrowing the list: entries are stored by
/// the key's hash and confirmed against the list on lookup (the caller passes it again). This
/// lets a list be modified in place (elements merged) while it is indexed, as long as the
/// keys themselves do not change.
pub(crate) struct PositionIndex {
    hasher: KeyHashState,
    first: HashMap<u64, usize, BuildHasherDefault<PassThrough>>,
    /// Distinct keys whose hash equals an earlier key's (practically never).
    collisions: Vec<(TypedKey<'static>, usize)>,
}

impl PositionIndex {
    pub(crate) fn new() -> PositionIndex {
        PositionIndex { hasher: KeyHashState::default(), first: HashMap::default(), collisions: Vec::new() }
    }

    fn hash(&self, key: &TypedKey<'_>) -> u64 {
        self.hasher.hash_one(key)
    }

    /// Records that `list[at]` has `key`, unless an earlier position has it.
    pub(crate) fn insert(&mut self, key: &TypedKey<'_>, at: usize, list: &[Value], merge_key: &str) {
        let h = self.hash(key);
        match self.first.get(&h) {
            None => {
                self.first.insert(h, at);
            }
            Some(&i) if TypedKey::of_element(&list[i], merge_key) == *key => {}
            Some(_) => {
                if !self.collisions.iter().any(|(k, _)| k == key) {
                    self.collisions.push((key.clone().into_owned(), at));
                }
            }
        }
    }

    pub(crate) fn get(&self, key: &TypedKey<'_>, list: &[Value], merge_key: &str) -> Option<usize> {
        let &i = self.first.get(&self.hash(key))?;
        if TypedKey::of_element(&list[i], merge_key) == *key {
            return Some(i);
        }
        self.collisions.iter().find(|(k, _)| k == key).map(|(_, at)| *at)
    }
}

/// A hasher for keys that already are hashes.
#[derive(Default)]
pub(crate) struct PassThrough(u64);

impl Hasher for PassThrough {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

/// Hash maps keyed by list keys. Keys come from documents, so the hash is seeded per process
/// (an attacker cannot precompute colliding merge keys), but it is a fast multiply-fold hash
/// rather than SipHash: keyed-list operations hash every element several times.
pub(crate) type KeyMap<K, V> = HashMap<K, V, KeyHashState>;
pub(crate) type KeySet<K> = std::collections::HashSet<K, KeyHashState>;

#[derive(Clone, Copy)]
pub(crate) struct KeyHashState {
    seed: u64,
}

impl Default for KeyHashState {
    fn default() -> KeyHashState {
        static SEED: OnceLock<u64> = OnceLock::new();
        KeyHashState { seed: *SEED.get_or_init(|| RandomState::new().hash_one(0x5eed_u64) | 1) }
    }
}

impl BuildHasher for KeyHashState {
    type Hasher = KeyHasher;
    fn build_hasher(&self) -> KeyHasher {
        KeyHasher { state: self.seed, seed: self.seed }
    }
}

pub(crate) struct KeyHasher {
    state: u64,
    seed: u64,
}

const MULTIPLIER: u64 = 0x9e37_79b9_7f4a_7c15;

fn folded_multiply(a: u64, b: u64) -> u64 {
    let full = u128::from(a) * u128::from(b);
    (full as u64) ^ ((full >> 64) as u64)
}

impl Hasher for KeyHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let word = u64::from_le_bytes(chunk.try_into().expect("8 bytes"));
            self.state = folded_multiply(self.state ^ word, MULTIPLIER);
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut buf = [0u8; 8];
            buf[..rest.len()].copy_from_slice(rest);
            self.state = folded_multiply(self.state ^ u64::from_le_bytes(buf), MULTIPLIER);
        }
        self.state = self.state.rotate_left(29) ^ bytes.len() as u64;
    }
    fn write_u8(&mut self, n: u8) {
        self.write_u64(u64::from(n));
    }
    fn write_u64(&mut self, n: u64) {
        self.state = folded_multiply(self.state ^ n, MULTIPLIER);
    }
    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }
    fn finish(&self) -> u64 {
        folded_multiply(self.state, self.seed)
    }
}
