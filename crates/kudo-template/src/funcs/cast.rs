//! Sprig's loose conversions (spf13/cast): bad input becomes 0, never an error.

use super::FuncError;
use crate::limits::Meter;
use crate::value::Value;
use crate::walk::go_text;

/// Go `strconv.ParseInt(s, 0, 64)`: sign, then 0x/0o/0b/leading-0 octal or decimal.
pub fn parse_go_int(s: &str) -> Option<i64> {
    // Fast path: plain decimal without a leading zero (the common parameter case).
    let unsigned = s.strip_prefix(['-', '+']).unwrap_or(s);
    if !unsigned.is_empty()
        && !unsigned.starts_with('0')
        && unsigned.bytes().all(|b| b.is_ascii_digit())
    {
        return s.strip_prefix('+').unwrap_or(s).parse().ok();
    }
    let (neg, body) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if body.is_empty() {
        return None;
    }
    let lower = body.to_ascii_lowercase();
    let (radix, digits, prefixed) = if let Some(h) = lower.strip_prefix("0x") {
        (16, h.to_string(), true)
    } else if let Some(o) = lower.strip_prefix("0o") {
        (8, o.to_string(), true)
    } else if let Some(b) = lower.strip_prefix("0b") {
        (2, b.to_string(), true)
    } else if lower.len() > 1 && lower.starts_with('0') {
        (8, lower[1..].to_string(), true)
    } else {
        (10, lower.clone(), false)
    };
    // Underscores are only legal with a base prefix (Go's base-0 rule), between digits.
    let digits = if prefixed && digits.contains('_') {
        if digits.ends_with('_') || digits.contains("__") {
            return None;
        }
        digits.replace('_', "")
    } else if digits.contains('_') {
        return None;
    } else {
        digits
    };
    if digits.is_empty() || digits.starts_with(['+', '-']) {
        return None;
    }
    let magnitude = u64::from_str_radix(&digits, radix).ok()?;
    if neg {
        if magnitude <= i64::MAX as u64 + 1 {
            Some((magnitude as i128).wrapping_neg() as i64)
        } else {
            None
        }
    } else {
        i64::try_from(magnitude).ok()
    }
}

/// `cast.ToInt64`: ints as is, floats truncated, strings parsed (failure 0), bools 1/0.
pub fn to_i64(v: &Value<'_>) -> i64 {
    match v {
        Value::Int(i) => *i,
        Value::Float(f) => *f as i64,
        Value::Bool(b) => i64::from(*b),
        Value::Str(s) => parse_go_int(s).unwrap_or(0),
        _ => 0,
    }
}

/// `cast.ToFloat64`.
pub fn to_f64(v: &Value<'_>) -> f64 {
    match v {
        Value::Int(i) => *i as f64,
        Value::Float(f) => *f,
        Value::Bool(b) => f64::from(u8::from(*b)),
        Value::Str(s) => parse_go_float(s).unwrap_or(0.0),
        _ => 0.0,
    }
}

/// Go `strconv.ParseFloat` for the forms templates meet (no hex floats).
pub fn parse_go_float(s: &str) -> Option<f64> {
    let t = s.trim_start_matches(['+', '-']);
    let lower = t.to_ascii_lowercase();
    if matches!(lower.as_str(), "inf" | "infinity") {
        return Some(if s.starts_with('-') {
            f64::NEG_INFINITY
        } else {
            f64::INFINITY
        });
    }
    if lower == "nan" {
        return Some(f64::NAN);
    }
    if t.is_empty()
        || !t
            .bytes()
            .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'+' | b'-'))
    {
        return None;
    }
    s.parse().ok()
}

/// Sprig `strval`: strings as is, everything else `fmt.Sprintf("%v")` (nil
/// is `<nil>`); refused when the text would not fit what `meter` has left.
pub fn strval(v: &Value<'_>, meter: &Meter) -> Result<String, FuncError> {
    Ok(go_text(v, meter.left())?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_ints_like_go_base_zero() {
        assert_eq!(parse_go_int("42"), Some(42));
        assert_eq!(parse_go_int("-7"), Some(-7));
        assert_eq!(parse_go_int("0x1F"), Some(31));
        assert_eq!(parse_go_int("010"), Some(8));
        assert_eq!(parse_go_int("08"), None);
        assert_eq!(parse_go_int("3.5"), None);
        assert_eq!(parse_go_int(""), None);
        assert_eq!(parse_go_int("1_000"), None);
        assert_eq!(parse_go_int("0x_1f"), Some(31));
    }
}
