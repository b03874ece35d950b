//! Go `text/template` builtins, with Go 1.16 semantics for `and`/`or`
//! (every argument is evaluated; the result is an argument, not a bool).

use std::cmp::Ordering;

use super::{Entry, FuncError, FuncResult, SizedEntry, arg};
use crate::limits::Meter;
use crate::value::Value;
use crate::walk::{go_string, write_go};

pub const TABLE: &[Entry] = &[
    ("and", 1, None, and),
    ("or", 1, None, or),
    ("not", 1, Some(1), not),
    ("len", 1, Some(1), len),
    ("index", 1, None, index),
    ("slice", 1, None, slice),
    ("eq", 1, None, eq),
    ("ne", 2, Some(2), ne),
    ("lt", 2, Some(2), lt),
    ("le", 2, Some(2), le),
    ("gt", 2, Some(2), gt),
    ("ge", 2, Some(2), ge),
];

/// Functions that write values as text: the text is refused once it would
/// pass what is left of the value budget.
pub const SIZED: &[SizedEntry] = &[
    ("print", 0, None, print),
    ("println", 0, None, println),
    ("html", 0, None, html),
    ("js", 0, None, js),
    ("urlquery", 0, None, urlquery),
];

fn and<'a>(args: &[Value<'a>]) -> FuncResult<'a> {
    Ok(args
        .iter()
        .find(|v| !v.truthy())
        .or(args.last())
        .cloned()
        .unwrap_or(Value::Nil))
}

fn or<'a>(args: &[Value<'a>]) -> FuncResult<'a> {
    Ok(args
        .iter()
        .find(|v| v.truthy())
        .or(args.last())
        .cloned()
        .unwrap_or(Value::Nil))
}

fn not<'a>(args: &[Value<'a>]) -> FuncResult<'a> {
    Ok(Value::Bool(!arg(args, 0).truthy()))
}

fn len<'a>(args: &[Value<'a>]) -> FuncResult<'a> {
    let v = arg(args, 0);
    match v.len() {
        Some(n) => Ok(Value::Int(n as i64)),
        None if matches!(v, Value::Nil) => Err(FuncError::Call("len of nil pointer".into())),
        None => Err(FuncError::Call(format!("len of type {}", v.type_name()))),
    }
}

fn index_int(v: &Value<'_>) -> Result<i64, FuncError> {
    match v {
        Value::Int(i) => Ok(*i),
        Value::Nil => Err(FuncError::Call("cannot index slice/array with nil".into())),
        other => Err(FuncError::Call(format!(
            "cannot index slice/array with type {}",
            other.type_name()
        ))),
    }
}

fn index<'a>(args: &[Value<'a>]) -> FuncResult<'a> {
    let mut item = arg(args, 0);
    for key in &args[1..] {
        item = if item.is_list() || matches!(item, Value::Str(_)) {
            let i = index_int(key)?;
            let n = item.len().unwrap_or(0) as i64;
            if i < 0 || i >= n {
                return Err(FuncError::Call(format!("index out of range: {i}")));
            }
            match &item {
                Value::Str(s) => Value::Int(i64::from(s.as_bytes()[i as usize])),
                list => list.list_get(i as usize).unwrap_or(Value::Nil),
            }
        } else if item.is_map() {
            match key {
                Value::Str(k) => item.map_get(k).unwrap_or(Value::Nil),
                Value::Nil => {
                    return Err(FuncError::Call(
                        "value is nil; should be of type string".into(),
                    ));
                }
                other => {
                    return Err(FuncError::Call(format!(
                        "value has type {}; should be string",
                        other.type_name()
                    )));
                }
            }
        } else if matches!(item, Value::Nil) {
            return Err(FuncError::Call("index of untyped nil".into()));
        } else {
            return Err(FuncError::Call(format!(
                "can't index item of type {}",
                item.type_name()
            )));
        };
    }
    Ok(item)
}

fn slice<'a>(args: &[Value<'a>]) -> FuncResult<'a> {
    let item = arg(args, 0);
    if args.len() > 4 {
        return Err(FuncError::Call(format!(
            "too many slice indexes: {}",
            args.len() - 1
        )));
    }
    let n = match &item {
        Value::Str(s) => s.len(),
        v if v.is_list() => v.len().unwrap_or(0),
        Value::Nil => return Err(FuncError::Call("slice of untyped nil".into())),
        other => {
            return Err(FuncError::Call(format!(
                "can't slice item of type {}",
                other.type_name()
            )));
        }
    } as i64;
    if matches!(item, Value::Str(_)) && args.len() == 4 {
        return Err(FuncError::Call("cannot 3-index slice a string".into()));
    }
    let mut idx = [0, n, n];
    for (k, a) in args[1..].iter().enumerate() {
        let i = index_int(a)?;
        if i < 0 || i > n {
            return Err(FuncError::Call(format!("index out of range: {i}")));
        }
        idx[k] = i;
    }
    if idx[0] > idx[1] {
        return Err(FuncError::Call(format!(
            "invalid slice index: {} > {}",
            idx[0], idx[1]
        )));
    }
    let (lo, hi) = (idx[0] as usize, idx[1] as usize);
    match &item {
        Value::Str(s) => match s.get(lo..hi) {
            Some(sub) => Ok(Value::string(sub)),
            None => Ok(Value::string(
                String::from_utf8_lossy(&s.as_bytes()[lo..hi]).into_owned(),
            )),
        },
        list => Ok(Value::list(
            list.list_items().unwrap_or_default()[lo..hi].to_vec(),
        )),
    }
}

#[derive(PartialEq, Eq, Clone, Copy)]
enum Kind {
    Invalid,
    Bool,
    Int,
    Float,
    Str,
    Other,
}

fn basic_kind(v: &Value<'_>) -> Kind {
    match v {
        Value::Nil => Kind::Invalid,
        Value::Bool(_) => Kind::Bool,
        Value::Int(_) => Kind::Int,
        Value::Float(_) => Kind::Float,
        Value::Str(_) => Kind::Str,
        _ => Kind::Other,
    }
}

const BAD_COMPARISON: &str = "incompatible types for comparison";

fn uncomparable(v: &Value<'_>) -> FuncError {
    FuncError::Call(format!(
        "uncomparable type {}: {}",
        v.type_name(),
        go_string(v)
    ))
}

fn equal(a: &Value<'_>, b: &Value<'_>) -> Result<bool, FuncError> {
    let (ka, kb) = (basic_kind(a), basic_kind(b));
    if ka == Kind::Other {
        return Err(uncomparable(a));
    }
    if ka != kb {
        if ka == Kind::Invalid || kb == Kind::Invalid {
            return Ok(false);
        }
        if kb == Kind::Other {
            return Err(uncomparable(b));
        }
        return Err(FuncError::Call(BAD_COMPARISON.into()));
    }
    Ok(match (a, b) {
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Int(x), Value::Int(y)) => x == y,
        (Value::Float(x), Value::Float(y)) => x == y,
        (Value::Str(x), Value::Str(y)) => x == y,
        _ => true,
    })
}

fn eq<'a>(args: &[Value<'a>]) -> FuncResult<'a> {
    let first = arg(args, 0);
    if args.len() < 2 {
        return Err(FuncError::Call("missing argument for comparison".into()));
    }
    for other in &args[1..] {
        if equal(&first, other)? {
            return Ok(Value::Bool(true));
        }
    }
    Ok(Value::Bool(false))
}

fn ne<'a>(args: &[Value<'a>]) -> FuncResult<'a> {
    Ok(Value::Bool(!equal(&arg(args, 0), &arg(args, 1))?))
}

fn order(a: &Value<'_>, b: &Value<'_>) -> Result<Ordering, FuncError> {
    let (ka, kb) = (basic_kind(a), basic_kind(b));
    let invalid = |k: Kind| matches!(k, Kind::Invalid | Kind::Bool | Kind::Other);
    if invalid(ka) || invalid(kb) {
        return Err(FuncError::Call("invalid type for comparison".into()));
    }
    if ka != kb {
        return Err(FuncError::Call(BAD_COMPARISON.into()));
    }
    Ok(match (a, b) {
        (Value::Int(x), Value::Int(y)) => x.cmp(y),
        (Value::Float(x), Value::Float(y)) => x.partial_cmp(y).unwrap_or(Ordering::Greater),
        (Value::Str(x), Value::Str(y)) => x.as_bytes().cmp(y.as_bytes()),
        _ => Ordering::Equal,
    })
}

fn lt<'a>(args: &[Value<'a>]) -> FuncResult<'a> {
    Ok(Value::Bool(
        order(&arg(args, 0), &arg(args, 1))? == Ordering::Less,
    ))
}

fn le<'a>(args: &[Value<'a>]) -> FuncResult<'a> {
    Ok(Value::Bool(
        order(&arg(args, 0), &arg(args, 1))? != Ordering::Greater,
    ))
}

fn gt<'a>(args: &[Value<'a>]) -> FuncResult<'a> {
    Ok(Value::Bool(
        order(&arg(args, 0), &arg(args, 1))? == Ordering::Greater,
    ))
}

fn ge<'a>(args: &[Value<'a>]) -> FuncResult<'a> {
    Ok(Value::Bool(
        order(&arg(args, 0), &arg(args, 1))? != Ordering::Less,
    ))
}

/// `fmt.Sprint`: a space between operands when neither is a string.
pub fn sprint(args: &[Value<'_>], meter: &Meter) -> Result<String, FuncError> {
    let mut out = String::new();
    for (i, v) in args.iter().enumerate() {
        if i > 0 && !matches!(v, Value::Str(_)) && !matches!(args[i - 1], Value::Str(_)) {
            out.push(' ');
        }
        write_go(&mut out, v, meter.left())?;
    }
    Ok(out)
}

fn print<'a>(args: &[Value<'a>], meter: &mut Meter) -> FuncResult<'a> {
    Ok(Value::string(sprint(args, meter)?))
}

fn println<'a>(args: &[Value<'a>], meter: &mut Meter) -> FuncResult<'a> {
    let mut out = String::new();
    for (i, v) in args.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        write_go(&mut out, v, meter.left())?;
    }
    out.push('\n');
    Ok(Value::string(out))
}

/// Go's evalArgs for html/js/urlquery: one string as is, else `fmt.Sprint`.
fn joined(args: &[Value<'_>], meter: &Meter) -> Result<String, FuncError> {
    match args {
        [Value::Str(s)] => Ok(s.to_string()),
        _ => sprint(args, meter),
    }
}

fn html<'a>(args: &[Value<'a>], meter: &mut Meter) -> FuncResult<'a> {
    let s = joined(args, meter)?;
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '"' => out.push_str("&#34;"),
            '\'' => out.push_str("&#39;"),
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '\0' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    Ok(Value::string(out))
}

fn js<'a>(args: &[Value<'a>], meter: &mut Meter) -> FuncResult<'a> {
    let s = joined(args, meter)?;
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            '"' => out.push_str("\\\""),
            '<' => out.push_str("\\u003C"),
            '>' => out.push_str("\\u003E"),
            '&' => out.push_str("\\u0026"),
            '=' => out.push_str("\\u003D"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04X}", c as u32)),
            c if (c as u32) >= 0x80 && c.is_control() => {
                out.push_str(&format!("\\u{:04X}", c as u32))
            }
            c => out.push(c),
        }
    }
    Ok(Value::string(out))
}

fn urlquery<'a>(args: &[Value<'a>], meter: &mut Meter) -> FuncResult<'a> {
    let s = joined(args, meter)?;
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            b' ' => out.push('+'),
            b => out.push_str(&format!("%{b:02X}")),
        }
    }
    Ok(Value::string(out))
}
