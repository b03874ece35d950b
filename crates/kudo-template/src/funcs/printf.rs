//! A Go `fmt.Sprintf` subset: flags `-+# 0`, width, precision and the verbs
//! templates use (`v s d q t f e g x X o b c %`), with Go's `%!` error forms.
//! Widths and precisions above 10^6 end the format as in Go
//! (`%!(NOVERB)`); smaller ones are checked against the value budget before
//! padding or digits are written.

use super::{FuncError, FuncResult, SizedEntry, arg_str};
use crate::limits::Meter;
use crate::value::{Value, format_float_g};
use crate::walk::go_text;

pub const SIZED: &[SizedEntry] = &[("printf", 1, None, printf)];

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

pub fn printf<'a>(args: &[Value<'a>], meter: &mut Meter) -> FuncResult<'a> {
    let format = arg_str(args, 0)?;
    Ok(Value::string(sprintf(format, &args[1..], meter)?))
}

/// Digits a float written with `%f`/`%e` may have before its precision
/// (`f64::MAX` has 309), plus sign, point and exponent.
const FLOAT_DIGITS: usize = 330;

/// Formats like Go's `fmt.Sprintf`, refusing output the meter cannot hold.
pub fn sprintf(format: &str, args: &[Value<'_>], meter: &Meter) -> Result<String, FuncError> {
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
        // What width and precision alone make, known before formatting.
        let digits = match (verb, value) {
            ('f' | 'F' | 'e', Value::Float(_)) => spec.prec.unwrap_or(6) + FLOAT_DIGITS,
            _ => 0,
        };
        let planned = out.len() as u128 + spec.width.unwrap_or(0).max(digits) as u128;
        meter.check(planned)?;
        let left = meter.left().saturating_sub(out.len());
        let body = format_one(verb, value, &spec, left)?;
        out.push_str(&pad(
            body,
            &spec,
            matches!(value, Value::Int(_) | Value::Float(_)),
        ));
        meter.check(out.len() as u128)?;
    }
    if next < args.len() {
        out.push_str("%!(EXTRA ");
        for (i, v) in args[next..].iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            out.push_str(v.type_name());
            out.push('=');
            let text = go_text(v, meter.left().saturating_sub(out.len()))?;
            out.push_str(&text);
        }
        out.push(')');
        meter.check(out.len() as u128)?;
    }
    Ok(out)
}

/// Go fmt's `parsenum`: a number that has passed 10^6 before its next digit
/// is "crazy long": the rest of the format is consumed and no number is
/// read, so the directive ends as `%!(NOVERB)`.
fn digits(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) -> Option<usize> {
    const TOO_LARGE: usize = 1_000_000;
    let mut n: Option<usize> = None;
    while let Some(d) = chars.peek().and_then(|c| c.to_digit(10)) {
        if n.is_some_and(|n| n > TOO_LARGE) {
            chars.by_ref().for_each(drop);
            return None;
        }
        n = Some(n.unwrap_or(0) * 10 + d as usize);
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

fn bad(verb: char, v: &Value<'_>, left: usize) -> Result<String, FuncError> {
    Ok(match v {
        Value::Nil => format!("%!{verb}(<nil>)"),
        _ => format!("%!{verb}({}={})", v.type_name(), go_text(v, left)?),
    })
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

/// One directive's text; values written as text are refused past `left` bytes.
fn format_one(verb: char, v: &Value<'_>, spec: &Spec, left: usize) -> Result<String, FuncError> {
    Ok(match (verb, v) {
        ('v', Value::Float(f)) => signed(format_float_g(*f), *f < 0.0, spec),
        ('v', Value::Int(i)) => signed(i.to_string(), *i < 0, spec),
        ('v', _) => go_text(v, left)?,
        ('s', Value::Str(s)) => truncate(s, spec.prec),
        ('s', Value::Int(_) | Value::Float(_) | Value::Bool(_)) => bad(verb, v, left)?,
        ('s', _) => go_text(v, left)?,
        ('q', Value::Str(s)) => go_quote(s),
        ('q', Value::Int(i)) => match char::from_u32(*i as u32) {
            Some(c) => format!("'{c}'"),
            None => bad(verb, v, left)?,
        },
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
            signed(fixed_form(*f, spec.prec.unwrap_or(6)), *f < 0.0, spec)
        }
        ('e', Value::Float(f)) => signed(exp_form(*f, spec.prec.unwrap_or(6)), *f < 0.0, spec),
        ('g', Value::Float(f)) => signed(format_float_g(*f), *f < 0.0, spec),
        _ => bad(verb, v, left)?,
    })
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

/// Digits after the point past which an f64's exact decimal expansion is
/// all zeros (it ends within 1,074 fractional and 767 significant digits).
/// Rust's formatter panics on a precision above `u16::MAX`, which Go's
/// `%.100000f` asks for: the digits past this are written as zeros instead.
const EXACT_DIGITS: usize = 1100;

/// `mantissa` (which has `EXACT_DIGITS` digits after its point when
/// `prec` is more) with zeros up to `prec` digits.
fn zero_extend(mut mantissa: String, prec: usize) -> String {
    if prec > EXACT_DIGITS && mantissa.contains('.') {
        mantissa.extend(std::iter::repeat_n('0', prec - EXACT_DIGITS));
    }
    mantissa
}

fn fixed_form(f: f64, prec: usize) -> String {
    zero_extend(format!("{:.*}", prec.min(EXACT_DIGITS), f), prec)
}

fn exp_form(f: f64, prec: usize) -> String {
    let s = format!("{:.*e}", prec.min(EXACT_DIGITS), f);
    match s.split_once('e') {
        Some((m, e)) => {
            let (sign, digits) = match e.strip_prefix('-') {
                Some(d) => ('-', d),
                None => ('+', e),
            };
            let m = zero_extend(m.to_string(), prec);
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
