//! serde: parsing through any serde format (YAML for other crates) with Go's number rules, and
//! serialising into any.

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};

use super::format::go_v_float;
use super::{Map, Value};

impl<'de> Deserialize<'de> for Value {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ValueVisitor)
    }
}

struct ValueVisitor;

impl<'de> Visitor<'de> for ValueVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        Deserialize::deserialize(d)
    }
    fn visit_bool<E>(self, b: bool) -> Result<Value, E> {
        Ok(Value::Bool(b))
    }
    fn visit_i64<E>(self, i: i64) -> Result<Value, E> {
        Ok(Value::Int(i))
    }
    fn visit_u64<E>(self, u: u64) -> Result<Value, E> {
        // Go keeps an integer only when it fits in int64; larger ones become float64.
        Ok(i64::try_from(u).map_or(Value::Float(u as f64), Value::Int))
    }
    fn visit_f64<E>(self, f: f64) -> Result<Value, E> {
        Ok(Value::Float(f))
    }
    fn visit_i128<E: de::Error>(self, i: i128) -> Result<Value, E> {
        Ok(i64::try_from(i).map_or(Value::Float(i as f64), Value::Int))
    }
    fn visit_str<E>(self, s: &str) -> Result<Value, E> {
        Ok(Value::String(s.to_owned()))
    }
    fn visit_string<E>(self, s: String) -> Result<Value, E> {
        Ok(Value::String(s))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        while let Some(item) = super::deeper(|| seq.next_element())? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Value, A::Error> {
        let mut map = Map::new();
        // A repeated key: the last one wins, as in Go.
        while let Some((k, v)) = super::deeper(|| access.next_entry::<MapKey, Value>())? {
            map.insert(k.0, v);
        }
        Ok(Value::Object(map))
    }
}

/// Object keys: YAML may have non-string keys (`1: a`, `true: b`); like sigs.k8s.io/yaml they
/// become their string form.
struct MapKey(String);

impl<'de> Deserialize<'de> for MapKey {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = MapKey;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object key")
            }
            fn visit_str<E>(self, s: &str) -> Result<MapKey, E> {
                Ok(MapKey(s.to_owned()))
            }
            fn visit_string<E>(self, s: String) -> Result<MapKey, E> {
                Ok(MapKey(s))
            }
            fn visit_bool<E>(self, b: bool) -> Result<MapKey, E> {
                Ok(MapKey(b.to_string()))
            }
            fn visit_i64<E>(self, i: i64) -> Result<MapKey, E> {
                Ok(MapKey(i.to_string()))
            }
            fn visit_u64<E>(self, u: u64) -> Result<MapKey, E> {
                Ok(MapKey(u.to_string()))
            }
            fn visit_f64<E>(self, f: f64) -> Result<MapKey, E> {
                Ok(MapKey(go_v_float(f)))
            }
            fn visit_unit<E: de::Error>(self) -> Result<MapKey, E> {
                Ok(MapKey("null".into()))
            }
        }
        d.deserialize_any(KeyVisitor)
    }
}

impl Serialize for Value {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Value::Null => s.serialize_unit(),
            Value::Bool(b) => s.serialize_bool(*b),
            Value::Int(i) => s.serialize_i64(*i),
            Value::Float(f) => s.serialize_f64(*f),
            Value::String(v) => s.serialize_str(v),
            Value::Array(items) => {
                let mut seq = s.serialize_seq(Some(items.len()))?;
                for item in items {
                    super::deeper(|| seq.serialize_element(item))?;
                }
                seq.end()
            }
            Value::Object(map) => {
                let mut m = s.serialize_map(Some(map.len()))?;
                for (k, v) in map {
                    super::deeper(|| m.serialize_entry(k, v))?;
                }
                m.end()
            }
        }
    }
}
