//! A Go `fmt.Sprintf` subset: flags `-+# 0`, width, precision and the verbs
//! templates use (`v s d q t f e g x X o b c %`), with Go's `%!` error forms.

use super::{FuncResult, arg_str};
use crate::value::{Value, format_float_g, go_string};

#[derive(Default)]
struct Spec {
    minus: bool,
    plus: bool,
    sharp: bool,
    space: bool,
    zero: bool,
    width: Option<usize>,
    prec: Option<usize>,
}

pub fn printf<'a>(args: &[Value<'a>]) -> FuncResult<'a> {
    let format = arg_str(args, 0)?;
    Ok(Value::string(sprintf(format, &args[1..])))
}

/// Formats like Go's `fmt.Sprintf`.
pub fn sprintf(format: &str, args: &[Value<'_>]) -> String {
    let mut out = String::new();
    let mut next = 0;
    let mut chars = format.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let mut spec = Spec::default();
        while let Some(&f) = chars.peek() {
            match f {
                '-' => spec.minus = true,
                '+' => spec.plus = true,
                '#' => spec.sharp = true,
                ' ' => spec.space = true,
                '0' => spec.zero = true,
                _ => break,
            }
            chars.next();
        }
        spec.width = digits(&mut chars);
        if chars.peek() == Some(&'.') {
            chars.next();
            spec.prec = Some(digits(&mut chars).unwrap_or(0));
        }
        let Some(verb) = chars.next() else {
            out.push_str("%!(NOVERB)");
            break;
        };
        if verb == '%' {
            out.push('%');
            continue;
        }
        let Some(value) = args.get(next) else {
            out.push_str(&format!("%!{verb}(MISSING)"));
            continue;
        };
        next += 1;
        let body = format_one(verb, value, &spec);
        out.push_str(&pad(
            body,
            &spec,
            matches!(value, Value::Int(_) | Value::Float(_)),
        ));
    }
    if next < args.len() {
        out.push_str("%!(EXTRA ");
        let extra: Vec<String> = args[next..]
            .iter()
            .map(|v| format!("{}={}", v.type_name(), go_string(v)))
            .collect();
        out.push_str(&extra.join(", "));
        out.push(')');
    }
    out
}

fn digits(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) -> Option<usize> {
    let mut n: Option<usize> = None;
    while let Some(d) = chars.peek().and_then(|c| c.to_digit(10)) {
        n = Some(n.unwrap_or(0).saturating_mul(10).saturating_add(d as usize));
        chars.next();
    }
    n
}

fn pad(body: String, spec: &Spec, numeric: bool) -> String {
    let Some(width) = spec.width else {
        return body;
    };
    let len = body.chars().count();
    if len >= width {
        return body;
    }
    let fill = width - len;
    if spec.minus {
        format!("{body}{}", " ".repeat(fill))
    } else if spec.zero && numeric {
        let (sign, digits) = match body.strip_prefix(['-', '+']) {
            Some(rest) => (&body[..1], rest),
            None => ("", body.as_str()),
        };
        format!("{sign}{}{digits}", "0".repeat(fill))
    } else {
        format!("{}{body}", " ".repeat(fill))
    }
}

fn bad(verb: char, v: &Value<'_>) -> String {
    match v {
        Value::Nil => format!("%!{verb}(<nil>)"),
        _ => format!("%!{verb}({}={})", v.type_name(), go_string(v)),
    }
}

fn signed(n: String, negative: bool, spec: &Spec) -> String {
    if negative {
        n
    } else if spec.plus {
        format!("+{n}")
    } else if spec.space {
        format!(" {n}")
    } else {
        n
    }
}

fn format_one(verb: char, v: &Value<'_>, spec: &Spec) -> String {
    match (verb, v) {
        ('v', Value::Float(f)) => signed(format_float_g(*f), *f < 0.0, spec),
        ('v', Value::Int(i)) => signed(i.to_string(), *i < 0, spec),
        ('v', _) => go_string(v),
        ('s', Value::Str(s)) => truncate(s, spec.prec),
        ('s', Value::Int(_) | Value::Float(_) | Value::Bool(_)) => bad(verb, v),
        ('s', _) => go_string(v),
        ('q', Value::Str(s)) => go_quote(s),
        ('q', Value::Int(i)) => char::from_u32(*i as u32)
            .map(|c| format!("'{c}'"))
            .unwrap_or_else(|| bad(verb, v)),
        ('t', Value::Bool(b)) => b.to_string(),
        ('d', Value::Int(i)) => signed(i.to_string(), *i < 0, spec),
        ('x', Value::Int(i)) => radix(*i, 16, spec.sharp.then_some("0x"), false),
        ('X', Value::Int(i)) => radix(*i, 16, spec.sharp.then_some("0X"), true),
        ('o', Value::Int(i)) => radix(*i, 8, spec.sharp.then_some("0"), false),
        ('b', Value::Int(i)) => radix(*i, 2, None, false),
        ('c', Value::Int(i)) => char::from_u32(*i as u32)
            .map(String::from)
            .unwrap_or_else(|| "\u{FFFD}".into()),
        ('x', Value::Str(s)) => s.bytes().map(|b| format!("{b:02x}")).collect(),
        ('X', Value::Str(s)) => s.bytes().map(|b| format!("{b:02X}")).collect(),
        ('f' | 'F', Value::Float(f)) => {
            signed(format!("{:.*}", spec.prec.unwrap_or(6), f), *f < 0.0, spec)
        }
        ('e', Value::Float(f)) => signed(exp_form(*f, spec.prec.unwrap_or(6)), *f < 0.0, spec),
        ('g', Value::Float(f)) => signed(format_float_g(*f), *f < 0.0, spec),
        _ => bad(verb, v),
    }
}

fn truncate(s: &str, prec: Option<usize>) -> String {
    match prec {
        Some(p) => s.chars().take(p).collect(),
        None => s.to_string(),
    }
}

fn radix(i: i64, base: u32, prefix: Option<&str>, upper: bool) -> String {
    let mag = i.unsigned_abs();
    let digits = match base {
        16 if upper => format!("{mag:X}"),
        16 => format!("{mag:x}"),
        8 => format!("{mag:o}"),
        _ => format!("{mag:b}"),
    };
    format!(
        "{}{}{}",
        if i < 0 { "-" } else { "" },
        prefix.unwrap_or(""),
        digits
    )
}

fn exp_form(f: f64, prec: usize) -> String {
    let s = format!("{:.*e}", prec, f);
    match s.split_once('e') {
        Some((m, e)) => {
            let (sign, digits) = match e.strip_prefix('-') {
                Some(d) => ('-', d),
                None => ('+', e),
            };
            format!("{m}e{sign}{digits:0>2}")
        }
        None => s,
    }
}

/// Go `strconv.Quote`.
pub fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\x07' => out.push_str("\\a"),
            '\x08' => out.push_str("\\b"),
            '\x0c' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\x0b' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32))
            }
            c if c.is_control() => {
                if (c as u32) < 0x10000 {
                    out.push_str(&format!("\\u{:04x}", c as u32));
                } else {
                    out.push_str(&format!("\\U{:08x}", c as u32));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}
