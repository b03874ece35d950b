//! Walks over nested values that stay bounded: Go's `%v` text with a byte
//! cap, and `reflect.DeepEqual`. Lists and maps built during rendering are
//! shared (`Rc`), so a small value can hold one big string many times, or
//! hold itself through `set`; every walk here stops at a byte cap or at
//! [`MAX_NESTING`] levels instead of allocating or recursing without end.

use std::collections::HashSet;
use std::rc::Rc;

use serde_json::Value as Json;

use crate::value::{Value, format_float_g};

/// Lists and maps nested deeper than this are refused by every walk (input
/// JSON nests at most 128 deep; deeper values come from `set` loops, and a
/// map that holds itself is infinitely deep).
pub const MAX_NESTING: usize = 1000;

/// Why a walk stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Overflow {
    /// The text would be longer than the cap.
    TooLong,
    /// Lists or maps nest deeper than [`MAX_NESTING`].
    TooDeep,
}

impl Overflow {
    /// What went wrong, for an error message.
    pub fn describe(self) -> &'static str {
        match self {
            Overflow::TooLong => "the text would be longer than the budget allows",
            Overflow::TooDeep => {
                "lists or maps nest more than 1000 deep (a map that contains itself through set?)"
            }
        }
    }
}

/// Calls `f` on each element of a list in order, without copying the list;
/// `None` when `v` is not a list.
pub fn each_item<'a, E>(
    v: &Value<'a>,
    mut f: impl FnMut(&Value<'a>) -> Result<(), E>,
) -> Option<Result<(), E>> {
    match v {
        Value::List(items) => Some(items.iter().try_for_each(f)),
        Value::Json(Json::Array(items)) => {
            Some(items.iter().try_for_each(|j| f(&Value::from_json(j))))
        }
        _ => None,
    }
}

/// Calls `f` on each map entry in key order (Go sorts map keys), without
/// copying the values; `None` when `v` is not a map.
pub fn each_entry<'a, E>(
    v: &Value<'a>,
    mut f: impl FnMut(&str, &Value<'a>) -> Result<(), E>,
) -> Option<Result<(), E>> {
    match v {
        Value::Map(map) => {
            let map = map.borrow();
            Some(map.iter().try_for_each(|(k, item)| f(k, item)))
        }
        Value::Json(Json::Object(object)) => {
            let mut entries: Vec<(&String, &Json)> = object.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            Some(
                entries
                    .into_iter()
                    .try_for_each(|(k, j)| f(k, &Value::from_json(j))),
            )
        }
        _ => None,
    }
}

/// Writes `v` as Go's `fmt` `%v` would (nil prints `<nil>`), failing once
/// `out` passes `cap` bytes (it may pass it by the last scalar written).
pub fn write_go(out: &mut String, v: &Value<'_>, cap: usize) -> Result<(), Overflow> {
    write_at(out, v, cap, 0)
}

fn write_at(out: &mut String, v: &Value<'_>, cap: usize, depth: usize) -> Result<(), Overflow> {
    match v {
        Value::Nil => out.push_str("<nil>"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Int(i) => {
            use std::fmt::Write;
            let _ = write!(out, "{i}");
        }
        Value::Float(f) => out.push_str(&format_float_g(*f)),
        Value::Str(s) => out.push_str(s),
        Value::List(_) | Value::Json(Json::Array(_)) => {
            if depth >= MAX_NESTING {
                return Err(Overflow::TooDeep);
            }
            out.push('[');
            let mut first = true;
            each_item(v, |item| {
                if !first {
                    out.push(' ');
                }
                first = false;
                write_at(out, item, cap, depth + 1)
            })
            .unwrap_or(Ok(()))?;
            out.push(']');
        }
        Value::Map(_) | Value::Json(_) => {
            if depth >= MAX_NESTING {
                return Err(Overflow::TooDeep);
            }
            out.push_str("map[");
            let mut first = true;
            each_entry(v, |k, item| {
                if !first {
                    out.push(' ');
                }
                first = false;
                out.push_str(k);
                out.push(':');
                write_at(out, item, cap, depth + 1)
            })
            .unwrap_or(Ok(()))?;
            out.push(']');
        }
    }
    if out.len() > cap {
        return Err(Overflow::TooLong);
    }
    Ok(())
}

/// `fmt.Sprint(v)`, refused past `cap` bytes.
pub fn go_text(v: &Value<'_>, cap: usize) -> Result<String, Overflow> {
    match v {
        Value::Str(s) if s.len() <= cap => Ok(s.to_string()),
        Value::Str(_) => Err(Overflow::TooLong),
        _ => {
            let mut s = String::new();
            write_go(&mut s, v, cap)?;
            Ok(s)
        }
    }
}

/// Longest `%v` text quoted in an error message.
const MESSAGE_TEXT: usize = 200;

/// `fmt.Sprint(v)` for an error message: cut after 200 bytes with `...`.
pub fn go_string(v: &Value<'_>) -> String {
    let mut s = String::new();
    match write_go(&mut s, v, MESSAGE_TEXT) {
        Ok(()) => s,
        Err(_) => {
            let mut end = MESSAGE_TEXT.min(s.len());
            while !s.is_char_boundary(end) {
                end -= 1;
            }
            s.truncate(end);
            s.push_str("...");
            s
        }
    }
}

/// Go `reflect.DeepEqual` on the JSON-like model (used by `has`, `uniq`).
/// As in Go, a pair of shared lists or maps already being compared counts
/// as equal, so values that share parts (or hold themselves) are compared
/// once per pair instead of once per path.
pub fn deep_equal(a: &Value<'_>, b: &Value<'_>) -> Result<bool, Overflow> {
    let mut seen = HashSet::new();
    equal_at(a, b, 0, &mut seen)
}

/// Addresses of the shared list or map behind a value, if it is one.
fn shared_ptr(v: &Value<'_>) -> Option<usize> {
    match v {
        Value::List(l) => Some(Rc::as_ptr(l) as *const u8 as usize),
        Value::Map(m) => Some(Rc::as_ptr(m) as *const u8 as usize),
        _ => None,
    }
}

fn equal_at(
    a: &Value<'_>,
    b: &Value<'_>,
    depth: usize,
    seen: &mut HashSet<(usize, usize)>,
) -> Result<bool, Overflow> {
    let containers = (a.is_list() && b.is_list()) || (a.is_map() && b.is_map());
    if containers {
        if depth >= MAX_NESTING {
            return Err(Overflow::TooDeep);
        }
        if let (Some(p), Some(q)) = (shared_ptr(a), shared_ptr(b))
            && !seen.insert((p, q))
        {
            return Ok(true);
        }
    }
    Ok(match (a, b) {
        (Value::Nil, Value::Nil) => true,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Int(x), Value::Int(y)) => x == y,
        (Value::Float(x), Value::Float(y)) => x == y,
        (Value::Str(x), Value::Str(y)) => x == y,
        (x, y) if x.is_list() && y.is_list() => {
            if x.len() != y.len() {
                return Ok(false);
            }
            for i in 0..x.len().unwrap_or(0) {
                let (Some(p), Some(q)) = (x.list_get(i), y.list_get(i)) else {
                    return Ok(false);
                };
                if !equal_at(&p, &q, depth + 1, seen)? {
                    return Ok(false);
                }
            }
            true
        }
        (x, y) if x.is_map() && y.is_map() => {
            if x.len() != y.len() {
                return Ok(false);
            }
            let mut keys = Vec::new();
            each_entry(x, |k, _| {
                keys.push(k.to_string());
                Ok::<(), Overflow>(())
            });
            for k in keys {
                let (Some(p), Some(q)) = (x.map_get(&k), y.map_get(&k)) else {
                    return Ok(false);
                };
                if !equal_at(&p, &q, depth + 1, seen)? {
                    return Ok(false);
                }
            }
            true
        }
        _ => false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    fn self_holding_map<'a>() -> Value<'a> {
        let map = Rc::new(RefCell::new(crate::value::Entries::default()));
        let v = Value::Map(map.clone());
        map.borrow_mut().insert("self".to_string(), v.clone());
        v
    }

    #[test]
    fn a_map_that_holds_itself_is_too_deep_to_print_instead_of_overflowing_the_stack() {
        let v = self_holding_map();
        let mut out = String::new();
        assert_eq!(write_go(&mut out, &v, usize::MAX), Err(Overflow::TooDeep));
        assert!(go_string(&v).ends_with("..."));
        if let Value::Map(m) = &v {
            m.borrow_mut().clear(); // break the cycle so the test does not leak
        }
    }

    #[test]
    fn a_list_sharing_one_string_many_times_stops_at_the_cap() {
        let big = Value::list(vec![Value::string("x".repeat(1000))]);
        let mut doubled = big;
        for _ in 0..40 {
            doubled = Value::list(vec![doubled.clone(), doubled]);
        }
        // 2^40 copies of 1000 bytes if written out.
        let mut out = String::new();
        assert_eq!(write_go(&mut out, &doubled, 10_000), Err(Overflow::TooLong));
        assert!(out.len() < 12_000);
        // Shared halves are compared once per pair, not once per path.
        assert_eq!(deep_equal(&doubled, &doubled.clone()), Ok(true));
    }
}
