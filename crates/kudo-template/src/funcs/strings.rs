//! Sprig string functions (v2.22 argument order: the subject comes last so
//! it can be piped in).

use std::collections::BTreeMap;

use super::printf::go_quote;
use super::{Entry, FuncError, FuncResult, arg, arg_int, arg_str, strval};
use crate::value::Value;

pub const TABLE: &[Entry] = &[
    ("trim", 1, Some(1), trim),
    ("trimAll", 2, Some(2), trim_all),
    ("trimSuffix", 2, Some(2), trim_suffix),
    ("trimPrefix", 2, Some(2), trim_prefix),
    ("upper", 1, Some(1), upper),
    ("lower", 1, Some(1), lower),
    ("title", 1, Some(1), title),
    ("replace", 3, Some(3), replace),
    ("repeat", 2, Some(2), repeat),
    ("contains", 2, Some(2), contains),
    ("hasPrefix", 2, Some(2), has_prefix),
    ("hasSuffix", 2, Some(2), has_suffix),
    ("split", 2, Some(2), split),
    ("splitList", 2, Some(2), split_list),
    ("splitn", 3, Some(3), splitn),
    ("join", 2, Some(2), join),
    ("quote", 0, None, quote),
    ("squote", 0, None, squote),
    ("indent", 2, Some(2), indent),
    ("nindent", 2, Some(2), nindent),
    ("toString", 1, Some(1), to_string),
    ("cat", 0, None, cat),
    ("nospace", 1, Some(1), nospace),
    ("trunc", 2, Some(2), trunc),
];

fn s<'a>(v: impl Into<String>) -> FuncResult<'a> {
    Ok(Value::string(v))
}

fn trim<'a>(args: &[Value<'a>]) -> FuncResult<'a> {
    s(arg_str(args, 0)?.trim())
}

fn trim_all<'a>(args: &[Value<'a>]) -> FuncResult<'a> {
    let cutset = arg_str(args, 0)?;
    let subject = arg_str(args, 1)?;
    s(subject.trim_matches(|c| cutset.contains(c)))
}

fn trim_suffix<'a>(args: &[Value<'a>]) -> FuncResult<'a> {
    let suffix = arg_str(args, 0)?;
    let subject = arg_str(args, 1)?;
    s(subject.strip_suffix(suffix).unwrap_or(subject))
}

fn trim_prefix<'a>(args: &[Value<'a>]) -> FuncResult<'a> {
    let prefix = arg_str(args, 0)?;
    let subject = arg_str(args, 1)?;
    s(subject.strip_prefix(prefix).unwrap_or(subject))
}

fn upper<'a>(args: &[Value<'a>]) -> FuncResult<'a> {
    s(arg_str(args, 0)?.to_uppercase())
}

fn lower<'a>(args: &[Value<'a>]) -> FuncResult<'a> {
    s(arg_str(args, 0)?.to_lowercase())
}

/// Go `strings.Title`: upper-cases letters that follow a separator.
fn title<'a>(args: &[Value<'a>]) -> FuncResult<'a> {
    let is_separator = |c: char| {
        if c.is_ascii() {
            !(c.is_ascii_alphanumeric() || c == '_')
        } else if c.is_alphanumeric() {
            false
        } else {
            c.is_whitespace()
        }
    };
    let mut prev = ' ';
    let mut out = String::new();
    for c in arg_str(args, 0)?.chars() {
        if is_separator(prev) {
            out.extend(c.to_uppercase());
        } else {
            out.push(c);
        }
        prev = c;
    }
    s(out)
}

fn replace<'a>(args: &[Value<'a>]) -> FuncResult<'a> {
    let old = arg_str(args, 0)?;
    let new = arg_str(args, 1)?;
    let subject = arg_str(args, 2)?;
    if old.is_empty() {
        // Go inserts `new` before every rune and at the end.
        let mut out = String::from(new);
        for c in subject.chars() {
            out.push(c);
            out.push_str(new);
        }
        return s(out);
    }
    s(subject.replace(old, new))
}

fn repeat<'a>(args: &[Value<'a>]) -> FuncResult<'a> {
    let count = arg_int(args, 0)?;
    let subject = arg_str(args, 1)?;
    if count < 0 {
        return Err(FuncError::Call("strings: negative Repeat count".into()));
    }
    if (count as u128) * (subject.len() as u128) > 64 * 1024 * 1024 {
        return Err(FuncError::Call("strings: Repeat output too large".into()));
    }
    s(subject.repeat(count as usize))
}

fn contains<'a>(args: &[Value<'a>]) -> FuncResult<'a> {
    Ok(Value::Bool(arg_str(args, 1)?.contains(arg_str(args, 0)?)))
}

fn has_prefix<'a>(args: &[Value<'a>]) -> FuncResult<'a> {
    Ok(Value::Bool(
        arg_str(args, 1)?.starts_with(arg_str(args, 0)?),
    ))
}

fn has_suffix<'a>(args: &[Value<'a>]) -> FuncResult<'a> {
    Ok(Value::Bool(arg_str(args, 1)?.ends_with(arg_str(args, 0)?)))
}

/// Go `strings.SplitN` (n < 0 = all parts).
fn go_split(subject: &str, sep: &str, n: i64) -> Vec<String> {
    if n == 0 {
        return Vec::new();
    }
    if sep.is_empty() {
        let chars: Vec<String> = subject.chars().map(String::from).collect();
        if n > 0 && chars.len() > n as usize {
            let mut head: Vec<String> = chars[..n as usize - 1].to_vec();
            let used: usize = head.iter().map(String::len).sum();
            head.push(subject[used..].to_string());
            return head;
        }
        return chars;
    }
    if n < 0 {
        subject.split(sep).map(String::from).collect()
    } else {
        subject.splitn(n as usize, sep).map(String::from).collect()
    }
}

fn indexed_map<'a>(parts: Vec<String>) -> Value<'a> {
    let map: BTreeMap<String, Value<'a>> = parts
        .into_iter()
        .enumerate()
        .map(|(i, p)| (format!("_{i}"), Value::string(p)))
        .collect();
    Value::map(map)
}

fn split<'a>(args: &[Value<'a>]) -> FuncResult<'a> {
    Ok(indexed_map(go_split(
        arg_str(args, 1)?,
        arg_str(args, 0)?,
        -1,
    )))
}

fn split_list<'a>(args: &[Value<'a>]) -> FuncResult<'a> {
    let parts = go_split(arg_str(args, 1)?, arg_str(args, 0)?, -1);
    Ok(Value::list(parts.into_iter().map(Value::string).collect()))
}

fn splitn<'a>(args: &[Value<'a>]) -> FuncResult<'a> {
    let sep = arg_str(args, 0)?;
    let n = arg_int(args, 1)?;
    Ok(indexed_map(go_split(arg_str(args, 2)?, sep, n)))
}

/// Sprig `strslice`: lists become their non-nil elements as strings, a
/// single value a one-element list, nil an empty list.
pub fn strslice(v: &Value<'_>) -> Vec<String> {
    match v.list_items() {
        Some(items) => items
            .iter()
            .filter(|i| !matches!(i, Value::Nil))
            .map(strval)
            .collect(),
        None if matches!(v, Value::Nil) => Vec::new(),
        None => vec![strval(v)],
    }
}

fn join<'a>(args: &[Value<'a>]) -> FuncResult<'a> {
    let sep = arg_str(args, 0)?;
    s(strslice(&arg(args, 1)).join(sep))
}

fn quote<'a>(args: &[Value<'a>]) -> FuncResult<'a> {
    let parts: Vec<String> = args
        .iter()
        .filter(|v| !matches!(v, Value::Nil))
        .map(|v| go_quote(&strval(v)))
        .collect();
    s(parts.join(" "))
}

fn squote<'a>(args: &[Value<'a>]) -> FuncResult<'a> {
    let parts: Vec<String> = args
        .iter()
        .filter(|v| !matches!(v, Value::Nil))
        .map(|v| format!("'{}'", strval(v)))
        .collect();
    s(parts.join(" "))
}

fn indent_text(spaces: i64, text: &str) -> String {
    let pad = " ".repeat(spaces.max(0) as usize);
    format!("{pad}{}", text.replace('\n', &format!("\n{pad}")))
}

fn indent<'a>(args: &[Value<'a>]) -> FuncResult<'a> {
    s(indent_text(arg_int(args, 0)?, arg_str(args, 1)?))
}

fn nindent<'a>(args: &[Value<'a>]) -> FuncResult<'a> {
    s(format!(
        "\n{}",
        indent_text(arg_int(args, 0)?, arg_str(args, 1)?)
    ))
}

fn to_string<'a>(args: &[Value<'a>]) -> FuncResult<'a> {
    s(strval(&arg(args, 0)))
}

fn cat<'a>(args: &[Value<'a>]) -> FuncResult<'a> {
    let parts: Vec<String> = args
        .iter()
        .filter(|v| !matches!(v, Value::Nil))
        .map(strval)
        .collect();
    s(parts.join(" "))
}

fn nospace<'a>(args: &[Value<'a>]) -> FuncResult<'a> {
    s(arg_str(args, 0)?
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect::<String>())
}

fn trunc<'a>(args: &[Value<'a>]) -> FuncResult<'a> {
    let n = arg_int(args, 0)?;
    let subject = arg_str(args, 1)?;
    let len = subject.len() as i64;
    let out = if n < 0 && -n < len {
        subject.get((len + n) as usize..).unwrap_or(subject)
    } else if n >= 0 && len > n {
        subject.get(..n as usize).unwrap_or(subject)
    } else {
        subject
    };
    s(out)
}
