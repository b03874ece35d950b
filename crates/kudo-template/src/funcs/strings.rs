//! Sprig string functions (v2.22 argument order: the subject comes last so
//! it can be piped in).

use std::collections::BTreeMap;

use super::printf::go_quote;
use super::{Entry, FuncError, FuncResult, SizedEntry, arg, arg_int, arg_str, strval};
use crate::limits::{ELEMENT, ENTRY, Meter};
use crate::value::Value;
use crate::walk::each_item;

pub const TABLE: &[Entry] = &[
    ("trim", 1, Some(1), trim),
    ("trimAll", 2, Some(2), trim_all),
    ("trimSuffix", 2, Some(2), trim_suffix),
    ("trimPrefix", 2, Some(2), trim_prefix),
    ("upper", 1, Some(1), upper),
    ("lower", 1, Some(1), lower),
    ("title", 1, Some(1), title),
    ("contains", 2, Some(2), contains),
    ("hasPrefix", 2, Some(2), has_prefix),
    ("hasSuffix", 2, Some(2), has_suffix),
    ("nospace", 1, Some(1), nospace),
    ("trunc", 2, Some(2), trunc),
];

/// Functions whose result size comes from an argument or from values
/// written as text: they check it against the value budget first.
pub const SIZED: &[SizedEntry] = &[
    ("replace", 3, Some(3), replace),
    ("repeat", 2, Some(2), repeat),
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

/// Go `strings.Replace(subject, old, new, -1)`; the result size is known
/// from the number of matches before it is built.
fn replace<'a>(args: &[Value<'a>], meter: &mut Meter) -> FuncResult<'a> {
    let old = arg_str(args, 0)?;
    let new = arg_str(args, 1)?;
    let subject = arg_str(args, 2)?;
    if old.is_empty() {
        // Go inserts `new` before every rune and at the end.
        let slots = subject.chars().count() as u128 + 1;
        let size = slots * new.len() as u128 + subject.len() as u128;
        meter.check(size)?;
        let mut out = String::with_capacity(size as usize);
        out.push_str(new);
        for c in subject.chars() {
            out.push(c);
            out.push_str(new);
        }
        return s(out);
    }
    let matches = subject.matches(old).count() as u128;
    meter
        .check(subject.len() as u128 - matches * old.len() as u128 + matches * new.len() as u128)?;
    s(subject.replace(old, new))
}

fn repeat<'a>(args: &[Value<'a>], meter: &mut Meter) -> FuncResult<'a> {
    let count = arg_int(args, 0)?;
    let subject = arg_str(args, 1)?;
    if count < 0 {
        return Err(FuncError::Call("strings: negative Repeat count".into()));
    }
    meter.check(count as u128 * subject.len() as u128)?;
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

/// [`go_split`] after checking that its parts, each costing `per_part`
/// bytes besides its text, fit the meter (an empty separator makes one
/// part per character).
fn split_checked(
    subject: &str,
    sep: &str,
    n: i64,
    per_part: usize,
    meter: &Meter,
) -> Result<Vec<String>, FuncError> {
    let all = if n == 0 {
        0
    } else if sep.is_empty() {
        subject.chars().count()
    } else {
        subject.matches(sep).count() + 1
    };
    let parts = if n > 0 { all.min(n as usize) } else { all };
    // Each part is its own allocation of at least 16 bytes.
    meter.check(parts as u128 * (per_part as u128 + 16) + subject.len() as u128)?;
    Ok(go_split(subject, sep, n))
}

fn indexed_map<'a>(parts: Vec<String>) -> Value<'a> {
    let map: BTreeMap<String, Value<'a>> = parts
        .into_iter()
        .enumerate()
        .map(|(i, p)| (format!("_{i}"), Value::string(p)))
        .collect();
    Value::map(map)
}

fn split<'a>(args: &[Value<'a>], meter: &mut Meter) -> FuncResult<'a> {
    let parts = split_checked(arg_str(args, 1)?, arg_str(args, 0)?, -1, ENTRY + 8, meter)?;
    Ok(indexed_map(parts))
}

fn split_list<'a>(args: &[Value<'a>], meter: &mut Meter) -> FuncResult<'a> {
    let parts = split_checked(arg_str(args, 1)?, arg_str(args, 0)?, -1, ELEMENT, meter)?;
    Ok(Value::list(parts.into_iter().map(Value::string).collect()))
}

fn splitn<'a>(args: &[Value<'a>], meter: &mut Meter) -> FuncResult<'a> {
    let sep = arg_str(args, 0)?;
    let n = arg_int(args, 1)?;
    let parts = split_checked(arg_str(args, 2)?, sep, n, ENTRY + 8, meter)?;
    Ok(indexed_map(parts))
}

/// Texts of `values` (nil skipped) while their total fits the meter.
fn texts(values: &[Value<'_>], meter: &Meter) -> Result<Vec<String>, FuncError> {
    let mut total: u128 = 0;
    let mut out = Vec::new();
    for v in values.iter().filter(|v| !matches!(v, Value::Nil)) {
        let left = meter.left().saturating_sub(total as usize);
        let text = strval(v, &Meter::new(left))?;
        total += text.len() as u128 + 1;
        meter.check(total)?;
        out.push(text);
    }
    Ok(out)
}

/// Sprig `strslice`: lists become their non-nil elements as strings, a
/// single value a one-element list, nil an empty list; refused when the
/// texts would not fit the meter.
pub fn strslice(v: &Value<'_>, meter: &Meter) -> Result<Vec<String>, FuncError> {
    let mut items = Vec::new();
    match each_item(v, |item| {
        items.push(item.clone());
        Ok::<(), FuncError>(())
    }) {
        Some(done) => done?,
        None => items.push(v.clone()),
    }
    texts(&items, meter)
}

fn join<'a>(args: &[Value<'a>], meter: &mut Meter) -> FuncResult<'a> {
    let sep = arg_str(args, 0)?;
    let parts = strslice(&arg(args, 1), meter)?;
    let text: u128 = parts.iter().map(|p| p.len() as u128).sum();
    let seps = parts.len().saturating_sub(1) as u128;
    meter.check(text + seps * sep.len() as u128)?;
    s(parts.join(sep))
}

fn quote<'a>(args: &[Value<'a>], meter: &mut Meter) -> FuncResult<'a> {
    let parts: Vec<String> = texts(args, meter)?.iter().map(|t| go_quote(t)).collect();
    s(parts.join(" "))
}

fn squote<'a>(args: &[Value<'a>], meter: &mut Meter) -> FuncResult<'a> {
    let parts: Vec<String> = texts(args, meter)?
        .iter()
        .map(|t| format!("'{t}'"))
        .collect();
    s(parts.join(" "))
}

/// Sprig `indent`: `spaces` blanks before every line. The size (padding
/// times lines, plus the text) is checked before anything is built.
fn indent_text(lead: &str, spaces: i64, text: &str, meter: &Meter) -> Result<String, FuncError> {
    let spaces = spaces.max(0) as u128;
    let lines = text.matches('\n').count() as u128 + 1;
    let size = lead.len() as u128 + spaces * lines + text.len() as u128;
    meter.check(size)?;
    let pad = " ".repeat(spaces as usize);
    let mut out = String::with_capacity(size as usize);
    out.push_str(lead);
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(&pad);
        out.push_str(line);
    }
    Ok(out)
}

fn indent<'a>(args: &[Value<'a>], meter: &mut Meter) -> FuncResult<'a> {
    s(indent_text(
        "",
        arg_int(args, 0)?,
        arg_str(args, 1)?,
        meter,
    )?)
}

fn nindent<'a>(args: &[Value<'a>], meter: &mut Meter) -> FuncResult<'a> {
    s(indent_text(
        "\n",
        arg_int(args, 0)?,
        arg_str(args, 1)?,
        meter,
    )?)
}

fn to_string<'a>(args: &[Value<'a>], meter: &mut Meter) -> FuncResult<'a> {
    s(strval(&arg(args, 0), meter)?)
}

fn cat<'a>(args: &[Value<'a>], meter: &mut Meter) -> FuncResult<'a> {
    s(texts(args, meter)?.join(" "))
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
    // Sprig compares `len + n > 0`; `-n` would overflow for the smallest int.
    let out = if n < 0 && len + n > 0 {
        subject.get((len + n) as usize..).unwrap_or(subject)
    } else if n >= 0 && len > n {
        subject.get(..n as usize).unwrap_or(subject)
    } else {
        subject
    };
    s(out)
}
