//! Sprig math, list, dict and flow-control functions.

use std::collections::BTreeMap;
use std::rc::Rc;

use super::strings::strslice;
use super::{
    Entry, FuncError, FuncResult, SizedEntry, arg, arg_bool, arg_int, arg_map, arg_str, kind_name,
    strval, to_f64, to_i64,
};
use crate::limits::{ELEMENT, ENTRY, Meter, copied_bytes};
use crate::value::{MapRef, Value};
use crate::walk::{deep_equal, each_item};

pub const TABLE: &[Entry] = &[
    ("int", 1, Some(1), int),
    ("int64", 1, Some(1), int),
    ("float64", 1, Some(1), float64),
    ("atoi", 1, Some(1), atoi),
    ("add", 0, None, add),
    ("add1", 1, Some(1), add1),
    ("sub", 2, Some(2), sub),
    ("mul", 1, None, mul),
    ("div", 2, Some(2), div),
    ("mod", 2, Some(2), modulo),
    ("min", 1, None, min),
    ("max", 1, None, max),
    ("list", 0, None, list),
    ("get", 2, Some(2), get),
    ("hasKey", 2, Some(2), has_key),
    ("keys", 0, None, keys),
    ("first", 1, Some(1), first),
    ("last", 1, Some(1), last),
    ("rest", 1, Some(1), rest),
    ("initial", 1, Some(1), initial),
    ("has", 2, Some(2), has),
    ("uniq", 1, Some(1), uniq),
    ("reverse", 1, Some(1), reverse),
    ("compact", 1, Some(1), compact),
    ("default", 1, None, default),
    ("empty", 1, Some(1), empty),
    ("coalesce", 0, None, coalesce),
    ("ternary", 3, Some(3), ternary),
    ("required", 2, Some(2), required),
    ("fail", 1, Some(1), fail),
];

/// Functions whose result size comes from an argument (`until 1e12`) or
/// that copy a list: they check the size against the value budget first.
pub const SIZED: &[SizedEntry] = &[
    ("until", 1, Some(1), until),
    ("untilStep", 3, Some(3), until_step),
    ("dict", 0, None, dict),
    ("set", 3, Some(3), set),
    ("sortAlpha", 1, Some(1), sort_alpha),
    ("append", 2, Some(2), append),
    ("prepend", 2, Some(2), prepend),
];

fn int<'a>(args: &[Value<'a>]) -> FuncResult<'a> {
    Ok(Value::Int(to_i64(&arg(args, 0))))
}

fn float64<'a>(args: &[Value<'a>]) -> FuncResult<'a> {
    Ok(Value::Float(to_f64(&arg(args, 0))))
}

fn atoi<'a>(args: &[Value<'a>]) -> FuncResult<'a> {
    let text = arg_str(args, 0)?;
    let trimmed = text.strip_prefix('+').unwrap_or(text);
    let valid = !trimmed.is_empty()
        && trimmed
            .strip_prefix('-')
            .unwrap_or(trimmed)
            .bytes()
            .all(|b| b.is_ascii_digit());
    Ok(Value::Int(if valid {
        trimmed.parse().unwrap_or(0)
    } else {
        0
    }))
}

fn add<'a>(args: &[Value<'a>]) -> FuncResult<'a> {
    Ok(Value::Int(
        args.iter().map(to_i64).fold(0i64, i64::wrapping_add),
    ))
}

fn add1<'a>(args: &[Value<'a>]) -> FuncResult<'a> {
    Ok(Value::Int(to_i64(&arg(args, 0)).wrapping_add(1)))
}

fn sub<'a>(args: &[Value<'a>]) -> FuncResult<'a> {
    Ok(Value::Int(
        to_i64(&arg(args, 0)).wrapping_sub(to_i64(&arg(args, 1))),
    ))
}

fn mul<'a>(args: &[Value<'a>]) -> FuncResult<'a> {
    Ok(Value::Int(
        args.iter().map(to_i64).fold(1i64, i64::wrapping_mul),
    ))
}

const DIVIDE_BY_ZERO: &str = "runtime error: integer divide by zero";

fn div<'a>(args: &[Value<'a>]) -> FuncResult<'a> {
    let b = to_i64(&arg(args, 1));
    if b == 0 {
        return Err(FuncError::Call(DIVIDE_BY_ZERO.into()));
    }
    Ok(Value::Int(to_i64(&arg(args, 0)).wrapping_div(b)))
}

fn modulo<'a>(args: &[Value<'a>]) -> FuncResult<'a> {
    let b = to_i64(&arg(args, 1));
    if b == 0 {
        return Err(FuncError::Call(DIVIDE_BY_ZERO.into()));
    }
    Ok(Value::Int(to_i64(&arg(args, 0)).wrapping_rem(b)))
}

fn min<'a>(args: &[Value<'a>]) -> FuncResult<'a> {
    Ok(Value::Int(args.iter().map(to_i64).min().unwrap_or(0)))
}

fn max<'a>(args: &[Value<'a>]) -> FuncResult<'a> {
    Ok(Value::Int(args.iter().map(to_i64).max().unwrap_or(0)))
}

/// Sprig `untilStep`: from `start` towards `stop` (excluded) by `step`;
/// empty when `step` does not lead there. The length is computed first and
/// checked against the value budget.
fn step_list<'a>(start: i64, stop: i64, step: i64, meter: &Meter) -> FuncResult<'a> {
    if (stop < start && step >= 0) || (stop >= start && step <= 0) {
        return Ok(Value::list(Vec::new()));
    }
    let count = stop.abs_diff(start).div_ceil(step.unsigned_abs());
    meter.check(u128::from(count) * ELEMENT as u128)?;
    // Every element lies between start and stop, so it fits an i64.
    let out = (0..count)
        .map(|k| Value::Int((i128::from(start) + i128::from(k) * i128::from(step)) as i64))
        .collect();
    Ok(Value::list(out))
}

fn until<'a>(args: &[Value<'a>], meter: &mut Meter) -> FuncResult<'a> {
    let n = arg_int(args, 0)?;
    step_list(0, n, if n < 0 { -1 } else { 1 }, meter)
}

fn until_step<'a>(args: &[Value<'a>], meter: &mut Meter) -> FuncResult<'a> {
    step_list(
        arg_int(args, 0)?,
        arg_int(args, 1)?,
        arg_int(args, 2)?,
        meter,
    )
}

fn list<'a>(args: &[Value<'a>]) -> FuncResult<'a> {
    Ok(Value::list(args.to_vec()))
}

fn dict<'a>(args: &[Value<'a>], meter: &mut Meter) -> FuncResult<'a> {
    let mut map = BTreeMap::new();
    for pair in args.chunks(2) {
        let value = pair.get(1).cloned().unwrap_or_else(|| Value::string(""));
        map.insert(strval(&pair[0], meter)?, value);
    }
    Ok(Value::map(map))
}

fn get<'a>(args: &[Value<'a>]) -> FuncResult<'a> {
    let map = arg_map(args, 0)?;
    let key = arg_str(args, 1)?;
    Ok(map.map_get(key).unwrap_or_else(|| Value::string("")))
}

/// Bytes of the value budget one container costs when [`reaches`] walks it.
const VISIT: usize = 8;

/// Whether `value` holds the map `target`, at any depth: setting it into
/// `target` would make a cycle that outlives the render (its values are
/// counted, so nothing would free it). Walked with an explicit stack, each
/// container once, each visit charged to the value budget.
fn reaches<'a>(
    value: &Value<'a>,
    target: &MapRef<'a>,
    meter: &mut Meter,
) -> Result<bool, FuncError> {
    let container = |c: &&Value<'a>| matches!(c, Value::List(_) | Value::Map(_));
    let mut seen = std::collections::HashSet::new();
    let mut stack = vec![value.clone()];
    while let Some(v) = stack.pop() {
        // Only containers are cloned (a reference count each): strings stay.
        let (walked, children): (usize, Vec<Value<'a>>) = match &v {
            Value::Map(m) if Rc::ptr_eq(m, target) => return Ok(true),
            Value::Map(m) if seen.insert(Rc::as_ptr(m).cast::<u8>()) => {
                let m = m.borrow();
                (m.len(), m.values().filter(container).cloned().collect())
            }
            Value::List(l) if seen.insert(Rc::as_ptr(l).cast::<u8>()) => {
                (l.len(), l.iter().filter(container).cloned().collect())
            }
            _ => continue,
        };
        meter.charge(VISIT.saturating_mul(walked.max(1)))?;
        stack.extend(children);
    }
    Ok(false)
}

/// Mutates maps built during rendering (Go maps are references); a map from
/// the input data is copied instead, so the caller's data stays untouched.
fn set<'a>(args: &[Value<'a>], meter: &mut Meter) -> FuncResult<'a> {
    let map = arg_map(args, 0)?;
    let key = arg_str(args, 1)?.to_string();
    let value = arg(args, 2);
    match map {
        Value::Map(m) => {
            if reaches(&value, m, meter)? {
                return Err(FuncError::Call(
                    "the value holds the map it would be set into; a map cannot hold itself".into(),
                ));
            }
            // The map is shared, so the entry is counted here.
            meter.charge(ENTRY + key.len() + copied_bytes(&value))?;
            m.borrow_mut().insert(key, value);
            Ok(map.clone())
        }
        other => {
            let mut copy: BTreeMap<String, Value<'a>> = other
                .map_entries()
                .unwrap_or_default()
                .into_iter()
                .collect();
            copy.insert(key, value);
            Ok(Value::map(copy))
        }
    }
}

fn has_key<'a>(args: &[Value<'a>]) -> FuncResult<'a> {
    let map = arg_map(args, 0)?;
    Ok(Value::Bool(map.map_get(arg_str(args, 1)?).is_some()))
}

/// Keys of all given maps. Go returns them in random order; we sort them.
fn keys<'a>(args: &[Value<'a>]) -> FuncResult<'a> {
    let mut out = Vec::new();
    for i in 0..args.len() {
        let map = arg_map(args, i)?;
        out.extend(
            map.map_entries()
                .unwrap_or_default()
                .into_iter()
                .map(|(k, _)| k),
        );
    }
    out.sort();
    Ok(Value::list(out.into_iter().map(Value::string).collect()))
}

fn list_arg<'a>(name: &str, v: &Value<'a>) -> Result<Vec<Value<'a>>, FuncError> {
    v.list_items()
        .ok_or_else(|| FuncError::Call(format!("Cannot find {name} on type {}", kind_name(v))))
}

fn first<'a>(args: &[Value<'a>]) -> FuncResult<'a> {
    let items = list_arg("first", &arg(args, 0))?;
    Ok(items.first().cloned().unwrap_or(Value::Nil))
}

fn last<'a>(args: &[Value<'a>]) -> FuncResult<'a> {
    let items = list_arg("last", &arg(args, 0))?;
    Ok(items.last().cloned().unwrap_or(Value::Nil))
}

fn rest<'a>(args: &[Value<'a>]) -> FuncResult<'a> {
    let items = list_arg("rest", &arg(args, 0))?;
    if items.is_empty() {
        return Ok(Value::Nil);
    }
    Ok(Value::list(items[1..].to_vec()))
}

fn initial<'a>(args: &[Value<'a>]) -> FuncResult<'a> {
    let items = list_arg("initial", &arg(args, 0))?;
    if items.is_empty() {
        return Ok(Value::Nil);
    }
    Ok(Value::list(items[..items.len() - 1].to_vec()))
}

fn has<'a>(args: &[Value<'a>]) -> FuncResult<'a> {
    let needle = arg(args, 0);
    let haystack = arg(args, 1);
    if matches!(haystack, Value::Nil) {
        return Ok(Value::Bool(false));
    }
    let items = list_arg("has", &haystack)?;
    for item in &items {
        if deep_equal(item, &needle)? {
            return Ok(Value::Bool(true));
        }
    }
    Ok(Value::Bool(false))
}

fn uniq<'a>(args: &[Value<'a>]) -> FuncResult<'a> {
    let items = list_arg("uniq", &arg(args, 0))?;
    let mut out: Vec<Value<'a>> = Vec::new();
    for item in items {
        let mut seen = false;
        for o in &out {
            if deep_equal(o, &item)? {
                seen = true;
                break;
            }
        }
        if !seen {
            out.push(item);
        }
    }
    Ok(Value::list(out))
}

fn sort_alpha<'a>(args: &[Value<'a>], meter: &mut Meter) -> FuncResult<'a> {
    let v = arg(args, 0);
    let mut items = if v.is_list() {
        strslice(&v, meter)?
    } else {
        vec![strval(&v, meter)?]
    };
    items.sort();
    Ok(Value::list(items.into_iter().map(Value::string).collect()))
}

/// Bytes a copy of `list` with `extra` added takes (Go copies the list on
/// every `append`/`prepend`, so a list grown in a loop costs its square).
fn grown_copy(list: &Value<'_>, extra: &Value<'_>, meter: &Meter) -> Result<(), FuncError> {
    let mut bytes = (ELEMENT + copied_bytes(extra)) as u128;
    if let Some(done) = each_item(list, |item| {
        bytes += (ELEMENT + copied_bytes(item)) as u128;
        Ok::<(), FuncError>(())
    }) {
        done?;
    }
    meter.check(bytes)
}

fn append<'a>(args: &[Value<'a>], meter: &mut Meter) -> FuncResult<'a> {
    grown_copy(&arg(args, 0), &arg(args, 1), meter)?;
    let mut items = list_arg("append", &arg(args, 0))?;
    items.push(arg(args, 1));
    Ok(Value::list(items))
}

fn prepend<'a>(args: &[Value<'a>], meter: &mut Meter) -> FuncResult<'a> {
    grown_copy(&arg(args, 0), &arg(args, 1), meter)?;
    let mut items = list_arg("prepend", &arg(args, 0))?;
    items.insert(0, arg(args, 1));
    Ok(Value::list(items))
}

fn reverse<'a>(args: &[Value<'a>]) -> FuncResult<'a> {
    let mut items = list_arg("reverse", &arg(args, 0))?;
    items.reverse();
    Ok(Value::list(items))
}

fn compact<'a>(args: &[Value<'a>]) -> FuncResult<'a> {
    let items = list_arg("compact", &arg(args, 0))?;
    Ok(Value::list(
        items.into_iter().filter(|v| !is_empty(v)).collect(),
    ))
}

/// Sprig `empty`: nil, false, 0, and empty strings/lists/maps.
pub fn is_empty(v: &Value<'_>) -> bool {
    !v.truthy()
}

fn default<'a>(args: &[Value<'a>]) -> FuncResult<'a> {
    let fallback = arg(args, 0);
    match args.get(1) {
        Some(given) if !is_empty(given) => Ok(given.clone()),
        _ => Ok(fallback),
    }
}

fn empty<'a>(args: &[Value<'a>]) -> FuncResult<'a> {
    Ok(Value::Bool(is_empty(&arg(args, 0))))
}

fn coalesce<'a>(args: &[Value<'a>]) -> FuncResult<'a> {
    Ok(args
        .iter()
        .find(|v| !is_empty(v))
        .cloned()
        .unwrap_or(Value::Nil))
}

fn ternary<'a>(args: &[Value<'a>]) -> FuncResult<'a> {
    Ok(if arg_bool(args, 2)? {
        arg(args, 0)
    } else {
        arg(args, 1)
    })
}

fn required<'a>(args: &[Value<'a>]) -> FuncResult<'a> {
    let warning = arg_str(args, 0)?;
    match arg(args, 1) {
        Value::Nil => Err(FuncError::Call(warning.to_string())),
        Value::Str(s) if s.is_empty() => Err(FuncError::Call(warning.to_string())),
        v => Ok(v),
    }
}

fn fail<'a>(args: &[Value<'a>]) -> FuncResult<'a> {
    Err(FuncError::Call(arg_str(args, 0)?.to_string()))
}
