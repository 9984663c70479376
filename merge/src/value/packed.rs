//! [`Packed`]: a [`Value`] as one compact byte string, for documents held a while before they
//! are used (a run's planned objects wait for their turn to be applied).
//!
//! A tree of small maps costs an allocation per map and per string (an object of a few
//! fields takes kilobytes); packed it is about the size of its JSON text. Unlike JSON text it
//! keeps the value exactly: an `Int` stays an `Int` and a `Float` with an integral value stays a
//! `Float`, which the merge algorithms tell apart as Go's do.

use super::{Map, Value, deeper};

const NULL: u8 = 0;
const FALSE: u8 = 1;
const TRUE: u8 = 2;
const INT: u8 = 3;
const FLOAT: u8 = 4;
const STRING: u8 = 5;
const ARRAY: u8 = 6;
const OBJECT: u8 = 7;

/// A [`Value`] packed into bytes ([`Packed::new`]); [`Packed::unpack`] gives it back equal.
#[derive(Clone, PartialEq, Eq)]
pub struct Packed(Box<[u8]>);

impl std::fmt::Debug for Packed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Packed({} bytes)", self.0.len())
    }
}

impl Packed {
    pub fn new(value: &Value) -> Packed {
        let mut out = Vec::new();
        write(value, &mut out);
        Packed(out.into_boxed_slice())
    }

    /// The value, equal to the one packed.
    pub fn unpack(&self) -> Value {
        let mut reader = Reader { bytes: &self.0 };
        // Only `Packed::new` makes these bytes, so they always read back whole.
        reader.value().expect("bytes written by Packed::new")
    }

    /// Bytes held.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

fn write_len(mut n: usize, out: &mut Vec<u8>) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

fn write_str(s: &str, out: &mut Vec<u8>) {
    write_len(s.len(), out);
    out.extend_from_slice(s.as_bytes());
}

fn write(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Null => out.push(NULL),
        Value::Bool(false) => out.push(FALSE),
        Value::Bool(true) => out.push(TRUE),
        Value::Int(i) => {
            out.push(INT);
            out.extend_from_slice(&i.to_le_bytes());
        }
        Value::Float(f) => {
            out.push(FLOAT);
            out.extend_from_slice(&f.to_bits().to_le_bytes());
        }
        Value::String(s) => {
            out.push(STRING);
            write_str(s, out);
        }
        Value::Array(items) => {
            out.push(ARRAY);
            write_len(items.len(), out);
            for item in items {
                deeper(|| write(item, out));
            }
        }
        Value::Object(map) => {
            out.push(OBJECT);
            write_len(map.len(), out);
            for (key, item) in map {
                write_str(key, out);
                deeper(|| write(item, out));
            }
        }
    }
}

struct Reader<'a> {
    bytes: &'a [u8],
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Option<&[u8]> {
        let (head, rest) = self.bytes.split_at_checked(n)?;
        self.bytes = rest;
        Some(head)
    }

    fn byte(&mut self) -> Option<u8> {
        self.take(1).map(|b| b[0])
    }

    fn len(&mut self) -> Option<usize> {
        let mut n = 0usize;
        for shift in (0..usize::BITS).step_by(7) {
            let b = self.byte()?;
            n |= usize::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Some(n);
            }
        }
        None
    }

    fn eight(&mut self) -> Option<[u8; 8]> {
        self.take(8)?.try_into().ok()
    }

    fn string(&mut self) -> Option<String> {
        let n = self.len()?;
        String::from_utf8(self.take(n)?.to_vec()).ok()
    }

    fn value(&mut self) -> Option<Value> {
        Some(match self.byte()? {
            NULL => Value::Null,
            FALSE => Value::Bool(false),
            TRUE => Value::Bool(true),
            INT => Value::Int(i64::from_le_bytes(self.eight()?)),
            FLOAT => Value::Float(f64::from_bits(u64::from_le_bytes(self.eight()?))),
            STRING => Value::String(self.string()?),
            ARRAY => {
                let n = self.len()?;
                let mut items = Vec::with_capacity(n.min(self.bytes.len()));
                for _ in 0..n {
                    items.push(deeper(|| self.value())?);
                }
                Value::Array(items)
            }
            OBJECT => {
                let n = self.len()?;
                let mut map = Map::new();
                for _ in 0..n {
                    let key = self.string()?;
                    map.insert(key, deeper(|| self.value())?);
                }
                Value::Object(map)
            }
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::Int),
            any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(Value::Float),
            ".{0,200}".prop_map(Value::String),
        ];
        leaf.prop_recursive(6, 256, 12, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..12).prop_map(Value::Array),
                prop::collection::btree_map(".{0,20}", inner, 0..12).prop_map(Value::Object),
            ]
        })
    }

    proptest! {
        #[test]
        fn unpacks_to_the_value_packed(v in value()) {
            prop_assert_eq!(Packed::new(&v).unpack(), v);
        }
    }

    #[test]
    fn keeps_what_json_text_would_lose_and_stays_small() {
        let doc = Value::from_json_str(r#"{"a":1,"b":1.5,"c":[true,null,"x"],"metadata":{"name":"c1"}}"#).unwrap();
        let mut with_float = doc.clone();
        if let Value::Object(map) = &mut with_float {
            map.insert("f".into(), Value::Float(1.0));
        }
        let packed = Packed::new(&with_float);
        assert_eq!(packed.unpack(), with_float);
        assert!(matches!(packed.unpack().as_object().unwrap()["f"], Value::Float(_)));
        assert!(Packed::new(&doc).len() <= doc.to_json_string().len() + 8, "{packed:?}");
        // Nesting as deep as parsing allows packs and unpacks without overflowing the stack.
        let mut deep = Value::Null;
        for _ in 0..super::super::MAX_DEPTH {
            deep = Value::Array(vec![deep]);
        }
        let packed = Packed::new(&deep);
        assert_eq!(packed.unpack(), deep);
    }
}
