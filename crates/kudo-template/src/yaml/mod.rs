//! KUDO's `toYaml`: output shaped like gopkg.in/yaml.v2 `Marshal` — block
//! style, yaml.v2's natural key order, sequences not indented under keys,
//! plain scalars where yaml.v2 allows them, literal `|` blocks for multi-line
//! strings, folding of long lines at 80 columns, trailing newline.

use std::cmp::Ordering;

use crate::value::{Value, format_float_g};

mod resolve;
use resolve::resolves_to_non_string;

const BEST_WIDTH: usize = 80;
const INDENT: usize = 2;

/// Marshals `v` like yaml.v2.
pub fn to_yaml(v: &Value<'_>) -> String {
    let mut out = String::new();
    if v.is_map() && v.len() != Some(0) {
        write_map(&mut out, v, 0, false);
    } else if v.is_list() && v.len() != Some(0) {
        write_seq(&mut out, v, 0, false);
    } else {
        write_scalar(&mut out, v, INDENT, false);
        out.push('\n');
    }
    out
}

fn is_collection(v: &Value<'_>) -> bool {
    (v.is_map() || v.is_list()) && v.len() != Some(0)
}

fn sorted_entries<'a>(v: &Value<'a>) -> Vec<(String, Value<'a>)> {
    let mut entries = v.map_entries().unwrap_or_default();
    entries.sort_by(|a, b| key_order(&a.0, &b.0));
    entries
}

/// `inline` = the first line's indentation was already written (after `- `).
fn write_map(out: &mut String, v: &Value<'_>, indent: usize, inline: bool) {
    for (i, (key, value)) in sorted_entries(v).iter().enumerate() {
        if i > 0 || !inline {
            push_indent(out, indent);
        }
        write_str(out, key, indent + INDENT, true);
        out.push(':');
        if is_collection(value) {
            out.push('\n');
            if value.is_map() {
                write_map(out, value, indent + INDENT, false);
            } else {
                write_seq(out, value, indent, false);
            }
        } else {
            out.push(' ');
            write_scalar(out, value, indent + INDENT, false);
            out.push('\n');
        }
    }
}

fn write_seq(out: &mut String, v: &Value<'_>, indent: usize, inline: bool) {
    for (i, item) in v.list_items().unwrap_or_default().iter().enumerate() {
        if i > 0 || !inline {
            push_indent(out, indent);
        }
        out.push_str("- ");
        if item.is_map() && is_collection(item) {
            write_map(out, item, indent + INDENT, true);
        } else if item.is_list() && is_collection(item) {
            write_seq(out, item, indent + INDENT, true);
        } else {
            write_scalar(out, item, indent + INDENT, false);
            out.push('\n');
        }
    }
}

fn push_indent(out: &mut String, n: usize) {
    for _ in 0..n {
        out.push(' ');
    }
}

fn write_scalar(out: &mut String, v: &Value<'_>, indent: usize, key: bool) {
    match v {
        Value::Nil => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Int(i) => out.push_str(&i.to_string()),
        Value::Float(f) => out.push_str(&match format_float_g(*f).as_str() {
            "+Inf" => ".inf".to_string(),
            "-Inf" => "-.inf".to_string(),
            "NaN" => ".nan".to_string(),
            s => s.to_string(),
        }),
        Value::Str(s) => write_str(out, s, indent, key),
        empty if empty.is_map() => out.push_str("{}"),
        _ => out.push_str("[]"),
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Style {
    Plain,
    Single,
    Double,
    Literal,
}

/// What yaml.v2's scalar analysis allows for this text (block context).
struct Analysis {
    plain: bool,
    single: bool,
    block: bool,
    multiline: bool,
}

fn printable(c: char) -> bool {
    matches!(c as u32, 0x0A | 0x20..=0x7E | 0x85 | 0xA0..=0xD7FF | 0xE000..=0xFFFD | 0x10000..=0x10FFFF)
        && c != '\u{FEFF}'
}

fn analyze(s: &str) -> Analysis {
    if s.is_empty() {
        return Analysis {
            plain: false,
            single: true,
            block: false,
            multiline: false,
        };
    }
    let chars: Vec<char> = s.chars().collect();
    let mut block_indicators = s.starts_with("---") || s.starts_with("...");
    let (mut leading_space, mut leading_break, mut trailing_space, mut trailing_break) =
        (false, false, false, false);
    let (mut break_space, mut space_break, mut special, mut line_breaks) =
        (false, false, false, false);
    let (mut prev_space, mut prev_break) = (false, false);
    let mut preceded_by_ws = true;
    let blankz = |c: Option<&char>| matches!(c, None | Some(' ' | '\t' | '\n' | '\r'));
    for (i, &c) in chars.iter().enumerate() {
        let followed_by_ws = blankz(chars.get(i + 1));
        let last = i + 1 == chars.len();
        if i == 0 {
            if "#,[]{}&*!|>'\"%@`".contains(c) || (matches!(c, '?' | ':' | '-') && followed_by_ws) {
                block_indicators = true;
            }
        } else if (c == ':' && followed_by_ws) || (c == '#' && preceded_by_ws) {
            block_indicators = true;
        }
        if !printable(c) || c == '\r' {
            special = true;
        }
        if c == '\n' {
            line_breaks = true;
        }
        if c == ' ' {
            leading_space |= i == 0;
            trailing_space |= last;
            break_space |= prev_break;
            prev_space = true;
            prev_break = false;
        } else if c == '\n' {
            leading_break |= i == 0;
            trailing_break |= last;
            space_break |= prev_space;
            prev_break = true;
            prev_space = false;
        } else {
            prev_space = false;
            prev_break = false;
        }
        preceded_by_ws = blankz(Some(&c));
    }
    let mut a = Analysis {
        plain: !block_indicators,
        single: true,
        block: true,
        multiline: line_breaks,
    };
    if leading_space || leading_break || trailing_space || trailing_break {
        a.plain = false;
    }
    if trailing_space {
        a.block = false;
    }
    if break_space {
        a.plain = false;
        a.single = false;
    }
    if space_break || special {
        a.plain = false;
        a.single = false;
        a.block = false;
    }
    if line_breaks {
        a.plain = false;
    }
    a
}

fn write_str(out: &mut String, s: &str, indent: usize, key: bool) {
    let requested = if !key && s.contains('\n') {
        Style::Literal
    } else if resolves_to_non_string(s) {
        Style::Double
    } else {
        Style::Plain
    };
    let a = analyze(s);
    let mut style = requested;
    if style == Style::Plain && (!a.plain || (key && a.multiline) || s.is_empty()) {
        style = Style::Single;
    }
    if style == Style::Single && (!a.single || (key && a.multiline)) {
        style = Style::Double;
    }
    if style == Style::Literal && (!a.block || key) {
        style = Style::Double;
    }
    match style {
        Style::Literal => write_literal(out, s, indent),
        Style::Double => write_double(out, s, indent, !key),
        Style::Single => write_flow(out, s, indent, !key, '\''),
        Style::Plain => write_flow(out, s, indent, !key, ' '),
    }
}

fn column(out: &str) -> usize {
    let line_start = out.rfind('\n').map(|p| p + 1).unwrap_or(0);
    out[line_start..].chars().count()
}

fn line_break(out: &mut String, indent: usize) {
    out.push('\n');
    push_indent(out, indent);
}

/// Plain (`quote == ' '`) or single-quoted scalar with yaml.v2's folding.
fn write_flow(out: &mut String, s: &str, indent: usize, allow_breaks: bool, quote: char) {
    let single = quote == '\'';
    if single {
        out.push('\'');
    }
    let chars: Vec<char> = s.chars().collect();
    let mut col = column(out);
    let mut spaces = false;
    for (i, &c) in chars.iter().enumerate() {
        if c == ' ' {
            let next_space = chars.get(i + 1) == Some(&' ');
            let edge_ok = !single || (i != 0 && i + 1 != chars.len());
            if allow_breaks && !spaces && col > BEST_WIDTH && !next_space && edge_ok {
                line_break(out, indent);
                col = indent;
            } else {
                out.push(' ');
                col += 1;
            }
            spaces = true;
        } else {
            if single && c == '\'' {
                out.push('\'');
                col += 1;
            }
            out.push(c);
            col += 1;
            spaces = false;
        }
    }
    if single {
        out.push('\'');
    }
}

fn write_double(out: &mut String, s: &str, indent: usize, allow_breaks: bool) {
    out.push('"');
    let chars: Vec<char> = s.chars().collect();
    let mut col = column(out);
    let mut spaces = false;
    for (i, &c) in chars.iter().enumerate() {
        if c == ' ' {
            if allow_breaks && !spaces && col > BEST_WIDTH && i != 0 && i + 1 != chars.len() {
                line_break(out, indent);
                col = indent;
                if chars.get(i + 1) == Some(&' ') {
                    out.push('\\');
                    col += 1;
                }
            } else {
                out.push(' ');
                col += 1;
            }
            spaces = true;
            continue;
        }
        spaces = false;
        let escaped: Option<String> = match c {
            '\0' => Some("\\0".into()),
            '\x07' => Some("\\a".into()),
            '\x08' => Some("\\b".into()),
            '\t' => Some("\\t".into()),
            '\n' => Some("\\n".into()),
            '\x0b' => Some("\\v".into()),
            '\x0c' => Some("\\f".into()),
            '\r' => Some("\\r".into()),
            '\x1b' => Some("\\e".into()),
            '"' => Some("\\\"".into()),
            '\\' => Some("\\\\".into()),
            '\u{85}' => Some("\\N".into()),
            '\u{A0}' => Some("\\_".into()),
            '\u{2028}' => Some("\\L".into()),
            '\u{2029}' => Some("\\P".into()),
            c if !printable(c) => Some(if (c as u32) <= 0xFF {
                format!("\\x{:02X}", c as u32)
            } else if (c as u32) <= 0xFFFF {
                format!("\\u{:04X}", c as u32)
            } else {
                format!("\\U{:08X}", c as u32)
            }),
            _ => None,
        };
        match escaped {
            Some(e) => {
                col += e.len();
                out.push_str(&e);
            }
            None => {
                out.push(c);
                col += 1;
            }
        }
    }
    out.push('"');
}

fn write_literal(out: &mut String, s: &str, indent: usize) {
    out.push('|');
    if s.starts_with([' ', '\n']) {
        out.push_str(&INDENT.to_string());
    }
    let trailing_breaks = s.len() - s.trim_end_matches('\n').len();
    match trailing_breaks {
        0 => out.push('-'),
        1 if s.len() > 1 => {}
        _ => out.push('+'),
    }
    let body = s.strip_suffix('\n').unwrap_or(s);
    for line in body.split('\n') {
        out.push('\n');
        if !line.is_empty() {
            push_indent(out, indent);
            out.push_str(line);
        }
    }
    // The caller adds the newline that ends the scalar's last line.
}

/// yaml.v2's `keyList.Less` for string keys: letters after non-letters, digit
/// runs compared as numbers.
pub fn key_order(a: &str, b: &str) -> Ordering {
    if less(a, b) {
        Ordering::Less
    } else if less(b, a) {
        Ordering::Greater
    } else {
        Ordering::Equal
    }
}

fn less(a: &str, b: &str) -> bool {
    let ar: Vec<char> = a.chars().collect();
    let br: Vec<char> = b.chars().collect();
    let mut i = 0;
    while i < ar.len() && i < br.len() {
        if ar[i] == br[i] {
            i += 1;
            continue;
        }
        let al = ar[i].is_alphabetic();
        let bl = br[i].is_alphabetic();
        if al && bl {
            return ar[i] < br[i];
        }
        if al || bl {
            return bl;
        }
        let (mut an, mut bn) = (0i64, 0i64);
        if ar[i] == '0' || br[i] == '0' {
            let mut j = i;
            while j > 0 && ar[j - 1].is_ascii_digit() {
                j -= 1;
                if ar[j] != '0' {
                    an = 1;
                    bn = 1;
                    break;
                }
            }
        }
        let mut ai = i;
        while ai < ar.len() && ar[ai].is_ascii_digit() {
            an = an
                .wrapping_mul(10)
                .wrapping_add(i64::from(ar[ai] as u8 - b'0'));
            ai += 1;
        }
        let mut bi = i;
        while bi < br.len() && br[bi].is_ascii_digit() {
            bn = bn
                .wrapping_mul(10)
                .wrapping_add(i64::from(br[bi] as u8 - b'0'));
            bi += 1;
        }
        if an != bn {
            return an < bn;
        }
        if ai != bi {
            return ai < bi;
        }
        return ar[i] < br[i];
    }
    ar.len() < br.len()
}
