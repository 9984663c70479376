use super::*;

fn plain(s: &str) -> Scalar {
    resolve("", s).unwrap()
}

#[test]
fn yaml11_booleans_and_nulls() {
    for t in ["y", "Y", "yes", "Yes", "YES", "on", "On", "ON", "true", "True", "TRUE"] {
        assert_eq!(plain(t), Scalar::Bool(true), "{t}");
    }
    for f in ["n", "N", "no", "No", "NO", "off", "Off", "OFF", "false", "False", "FALSE"] {
        assert_eq!(plain(f), Scalar::Bool(false), "{f}");
    }
    for n in ["", "~", "null", "Null", "NULL"] {
        assert_eq!(plain(n), Scalar::Null, "{n:?}");
    }
    for s in ["yES", "tRUE", "nULL", "Nope", "onn", "y_"] {
        assert_eq!(plain(s), Scalar::Str(s.into()), "{s}");
    }
}

#[test]
fn go_integers() {
    assert_eq!(plain("0755"), Scalar::Int(493));
    assert_eq!(plain("0x1F"), Scalar::Int(31));
    assert_eq!(plain("0X1f"), Scalar::Int(31));
    assert_eq!(plain("0o17"), Scalar::Int(15));
    assert_eq!(plain("0b101"), Scalar::Int(5));
    assert_eq!(plain("-0b101"), Scalar::Int(-5));
    assert_eq!(plain("1_000"), Scalar::Int(1000));
    assert_eq!(plain("+12"), Scalar::Int(12));
    assert_eq!(plain("-0x1F"), Scalar::Int(-31));
    assert_eq!(plain("0"), Scalar::Int(0));
    assert_eq!(plain("-9223372036854775808"), Scalar::Int(i64::MIN));
    assert_eq!(plain("9223372036854775808"), Scalar::Uint(1 << 63));
    assert_eq!(plain("0xFFFFFFFFFFFFFFFF"), Scalar::Uint(u64::MAX));
    // Invalid octal falls through to ParseFloat.
    assert_eq!(plain("08"), Scalar::Float(8.0));
    assert_eq!(plain("0x"), Scalar::Str("0x".into()));
    assert_eq!(plain("-"), Scalar::Str("-".into()));
    assert_eq!(plain("1.2.3"), Scalar::Str("1.2.3".into()));
    assert_eq!(plain("12abc"), Scalar::Str("12abc".into()));
    assert_eq!(plain("_1"), Scalar::Str("_1".into()));
}

#[test]
fn big_integers() {
    // Decimal: ParseFloat takes it first.
    assert_eq!(plain("99999999999999999999"), Scalar::Float(1e20));
    assert_eq!(plain("0x1FFFFFFFFFFFFFFFF"), Scalar::Big("36893488147419103231".into()));
    // A sign makes ParseUint fail with a syntax error: it stays a string.
    assert_eq!(plain("-0x1FFFFFFFFFFFFFFFF"), Scalar::Str("-0x1FFFFFFFFFFFFFFFF".into()));
    assert_eq!(plain("1e400"), Scalar::Str("1e400".into()));
}

#[test]
fn floats() {
    assert_eq!(plain("1.5"), Scalar::Float(1.5));
    assert_eq!(plain("1e3"), Scalar::Float(1000.0));
    assert_eq!(plain(".5"), Scalar::Float(0.5));
    assert_eq!(plain("+.5"), Scalar::Float(0.5));
    assert_eq!(plain("1."), Scalar::Float(1.0));
    assert_eq!(plain("-1.5e-3"), Scalar::Float(-0.0015));
    assert_eq!(plain("1_0.5"), Scalar::Float(10.5));
    assert!(matches!(plain(".nan"), Scalar::Float(f) if f.is_nan()));
    assert_eq!(plain("-.Inf"), Scalar::Float(f64::NEG_INFINITY));
    assert_eq!(plain("."), Scalar::Str(".".into()));
    assert_eq!(plain(".e3"), Scalar::Str(".e3".into()));
    assert_eq!(plain("1e"), Scalar::Str("1e".into()));
    assert_eq!(plain("0x1p3"), Scalar::Str("0x1p3".into()));
    assert_eq!(plain("inf"), Scalar::Str("inf".into()));
}

#[test]
fn timestamps_and_tags() {
    assert_eq!(plain("2001-12-14"), Scalar::Str("2001-12-14".into()));
    assert_eq!(plain("2001-12-14t21:59:43.10-05:00"), Scalar::Str("2001-12-14t21:59:43.10-05:00".into()));
    assert_eq!(resolve(TIMESTAMP_TAG, "2001-12-14 21:59:43.10").unwrap(), Scalar::Str("2001-12-14 21:59:43.10".into()));
    assert_eq!(
        resolve(TIMESTAMP_TAG, "2001-13-14").unwrap_err().to_string(),
        "cannot decode !!str `2001-13-14` as a !!timestamp"
    );
    assert_eq!(resolve(STR_TAG, "yes").unwrap(), Scalar::Str("yes".into()));
    assert_eq!(resolve(INT_TAG, "12").unwrap(), Scalar::Int(12));
    assert_eq!(resolve(FLOAT_TAG, "12").unwrap(), Scalar::Float(12.0));
    assert_eq!(resolve(BOOL_TAG, "on").unwrap(), Scalar::Bool(true));
    assert_eq!(resolve(NULL_TAG, "~").unwrap(), Scalar::Null);
    assert_eq!(resolve(INT_TAG, "abc").unwrap_err().to_string(), "cannot decode !!str `abc` as a !!int");
    assert_eq!(resolve("!", "yes").unwrap(), Scalar::Str("yes".into()));
    assert_eq!(resolve("!custom", "12").unwrap(), Scalar::Str("12".into()));
}

#[test]
fn float_keys_use_float32_g_format() {
    assert_eq!(float_key(1.5), "1.5");
    assert_eq!(float_key(0.1), "0.1");
    assert_eq!(float_key(1.23456789), "1.2345679");
    assert_eq!(float_key(1e6), "1e+06");
    assert_eq!(float_key(123456.0), "123456");
    assert_eq!(float_key(0.00001), "1e-05");
    assert_eq!(float_key(1e39), ".inf");
    assert_eq!(float_key(f64::NEG_INFINITY), "-.inf");
    assert_eq!(float_key(f64::NAN), ".nan");
}

#[test]
fn base64() {
    assert_eq!(decode_base64("aGVsbG8=").unwrap(), b"hello");
    assert_eq!(decode_base64("aGVs\nbG8h").unwrap(), b"hello!");
    assert!(decode_base64("aGVsbG8").is_none());
    assert!(decode_base64("a*==").is_none());
}
