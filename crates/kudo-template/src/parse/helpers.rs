//! Token descriptions for parse errors and Go number-constant parsing.

use super::ParseError;
use crate::ast::{Arg, Span};
use crate::lex::Tok;

pub(super) fn describe_arg(a: &Arg) -> String {
    match a {
        Arg::Str(s, _) => format!("{s:?}"),
        Arg::Int(i, _) => i.to_string(),
        _ => "term".into(),
    }
}

pub(super) fn describe(t: &Tok) -> String {
    match t {
        Tok::Text(_) => "text".into(),
        Tok::LeftDelim => "\"{{\"".into(),
        Tok::RightDelim => "\"}}\"".into(),
        Tok::Ident(s) => format!("<{s}>"),
        Tok::Field(s) => format!("<.{s}>"),
        Tok::Variable(s) => format!("<{s}>"),
        Tok::Dot => "<.>".into(),
        Tok::Str(s) => format!("{s:?}"),
        Tok::Char(c) => format!("character {c}"),
        Tok::Number(n) => format!("number {n}"),
        Tok::Declare => "\":=\"".into(),
        Tok::Assign => "\"=\"".into(),
        Tok::Pipe => "\"|\"".into(),
        Tok::LeftParen => "\"(\"".into(),
        Tok::RightParen => "\")\"".into(),
        Tok::Comma => "\",\"".into(),
    }
}

/// Go number constants: ints (decimal, 0x, 0o, 0b, octal), floats when the
/// text has `.`, `e` or `p` (hex floats unsupported).
pub(super) fn number(text: &str, span: Span) -> Result<Arg, ParseError> {
    let bad = || ParseError {
        pos: span.start,
        message: format!("bad number syntax: {text:?}"),
    };
    let clean: String = text.chars().filter(|c| *c != '_').collect();
    let (neg, body) = match clean.strip_prefix('-') {
        Some(rest) => (true, rest.to_string()),
        None => (false, clean.trim_start_matches('+').to_string()),
    };
    let lower = body.to_ascii_lowercase();
    let radix_int = if let Some(h) = lower.strip_prefix("0x") {
        Some(i64::from_str_radix(h, 16))
    } else if let Some(o) = lower.strip_prefix("0o") {
        Some(i64::from_str_radix(o, 8))
    } else if let Some(b) = lower.strip_prefix("0b") {
        Some(i64::from_str_radix(b, 2))
    } else if lower.len() > 1 && lower.starts_with('0') && lower.bytes().all(|b| b.is_ascii_digit())
    {
        Some(i64::from_str_radix(&lower[1..], 8))
    } else {
        None
    };
    if let Some(r) = radix_int {
        let v = r.map_err(|_| bad())?;
        return Ok(Arg::Int(if neg { -v } else { v }, span));
    }
    if lower.contains(['.', 'e']) {
        let v: f64 = lower.parse().map_err(|_| bad())?;
        return Ok(Arg::Float(if neg { -v } else { v }, span));
    }
    if !lower.bytes().all(|b| b.is_ascii_digit()) || lower.is_empty() {
        return Err(bad());
    }
    let v: i64 = clean
        .trim_start_matches('+')
        .parse()
        .map_err(|_| ParseError {
            pos: span.start,
            message: format!("integer overflow: {text:?}"),
        })?;
    Ok(Arg::Int(v, span))
}
