//! How yaml.v2 writes one string: which style its emitter picks (plain,
//! single-quoted, double-quoted, literal block) and how each style escapes,
//! folds long lines and continues after line breaks.

use super::resolve::needs_quotes;
use super::{INDENT, Writer};

/// yaml.v2's `best_width`: plain and quoted scalars fold after this column.
const BEST_WIDTH: usize = 80;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Style {
    Plain,
    Single,
    Double,
    Literal,
}

/// Writes `s` at `indent` (where folded and continued lines start).
/// `simple_key`: `s` is a mapping key, which never folds or spans lines.
pub(super) fn write_str(w: &mut Writer, s: &str, indent: usize, simple_key: bool) {
    match style(s, simple_key) {
        Style::Plain => write_plain(w, s, indent, !simple_key),
        Style::Single => write_single(w, s, indent, !simple_key),
        Style::Double => write_double(w, s, indent, !simple_key),
        Style::Literal => write_literal(w, s, indent),
    }
}

/// yaml.v2's `stringv` request followed by the emitter's
/// `select_scalar_style` downgrades.
fn style(s: &str, simple_key: bool) -> Style {
    let requested = if s.contains('\n') {
        Style::Literal
    } else if needs_quotes(s) {
        Style::Double
    } else {
        Style::Plain
    };
    let a = analyze(s);
    let mut style = requested;
    if simple_key && a.multiline {
        style = Style::Double;
    }
    if style == Style::Plain && (!a.plain || (s.is_empty() && simple_key)) {
        style = Style::Single;
    }
    if style == Style::Single && !a.single {
        style = Style::Double;
    }
    if style == Style::Literal && (!a.block || simple_key) {
        style = Style::Double;
    }
    style
}

/// Which styles can carry the text unchanged (block context).
#[derive(Debug)]
struct Analysis {
    multiline: bool,
    plain: bool,
    single: bool,
    block: bool,
}

/// yaml.v2's `is_printable`: no C0/C1 controls except LF, no surrogates,
/// BOM, U+FFFE/U+FFFF, and nothing outside the Basic Multilingual Plane.
fn is_printable(c: char) -> bool {
    matches!(c as u32, 0x0A | 0x20..=0x7E | 0xA0..=0xD7FF | 0xE000..=0xFFFD) && c != '\u{FEFF}'
}

fn is_break(c: char) -> bool {
    matches!(c, '\r' | '\n' | '\u{85}' | '\u{2028}' | '\u{2029}')
}

fn is_blank(c: char) -> bool {
    c == ' ' || c == '\t'
}

/// yaml.v2's `analyze_scalar` for a block-context scalar.
fn analyze(s: &str) -> Analysis {
    if s.is_empty() {
        return Analysis {
            multiline: false,
            plain: true,
            single: true,
            block: false,
        };
    }
    let chars: Vec<char> = s.chars().collect();
    let mut indicators = s.starts_with("---") || s.starts_with("...");
    let (mut leading_space, mut leading_break) = (false, false);
    let (mut trailing_space, mut trailing_break) = (false, false);
    let (mut break_space, mut space_break) = (false, false);
    let (mut line_breaks, mut special) = (false, false);
    let (mut previous_space, mut previous_break) = (false, false);
    let mut preceded_by_whitespace = true;
    for (i, &c) in chars.iter().enumerate() {
        let first = i == 0;
        let last = i + 1 == chars.len();
        let followed_by_whitespace = chars.get(i + 1).is_none_or(|&n| is_blank(n));
        let indicator = if first {
            "#,[]{}&*!|>'\"%@`".contains(c)
                || (matches!(c, '?' | ':' | '-') && followed_by_whitespace)
        } else {
            (c == ':' && followed_by_whitespace) || (c == '#' && preceded_by_whitespace)
        };
        indicators |= indicator;
        special |= !is_printable(c);
        if c == ' ' {
            leading_space |= first;
            trailing_space |= last;
            break_space |= previous_break;
            (previous_space, previous_break) = (true, false);
        } else if is_break(c) {
            line_breaks = true;
            leading_break |= first;
            trailing_break |= last;
            space_break |= previous_space;
            (previous_space, previous_break) = (false, true);
        } else {
            (previous_space, previous_break) = (false, false);
        }
        preceded_by_whitespace = is_blank(c) || is_break(c) || c == '\0';
    }
    let edge_whitespace = leading_space || leading_break || trailing_space || trailing_break;
    Analysis {
        multiline: line_breaks,
        plain: !(edge_whitespace
            || break_space
            || space_break
            || special
            || line_breaks
            || indicators),
        single: !(break_space || space_break || special),
        block: !(trailing_space || space_break || special),
    }
}

/// Writes a space, or instead breaks the line there (yaml.v2 folding) when
/// the style allows it here and the line is past the width. Says which.
fn space_or_fold(w: &mut Writer, indent: usize, may_fold: bool) -> bool {
    let fold = may_fold && w.column > BEST_WIDTH;
    if fold {
        w.line(indent);
    } else {
        w.push(' ');
    }
    fold
}

/// Plain scalar: folds at a single space once past the width.
fn write_plain(w: &mut Writer, s: &str, indent: usize, allow_breaks: bool) {
    let chars: Vec<char> = s.chars().collect();
    let mut spaces = false;
    for (i, &c) in chars.iter().enumerate() {
        if c == ' ' {
            let next_is_space = chars.get(i + 1) == Some(&' ');
            space_or_fold(w, indent, allow_breaks && !spaces && !next_is_space);
            spaces = true;
        } else {
            w.push(c);
            spaces = false;
        }
    }
}

/// Single-quoted scalar: `'` doubled; folds like plain but never at either end.
fn write_single(w: &mut Writer, s: &str, indent: usize, allow_breaks: bool) {
    let chars: Vec<char> = s.chars().collect();
    w.push('\'');
    let (mut spaces, mut breaks) = (false, false);
    for (i, &c) in chars.iter().enumerate() {
        if c == ' ' {
            let inner = i != 0 && i + 1 != chars.len();
            let next_is_space = chars.get(i + 1) == Some(&' ');
            space_or_fold(
                w,
                indent,
                allow_breaks && !spaces && inner && !next_is_space,
            );
            spaces = true;
        } else if is_break(c) {
            // Only U+2028/U+2029 get here: other breaks rule single quotes out.
            w.write_break(c);
            breaks = true;
        } else {
            if breaks {
                w.pad(indent);
            }
            if c == '\'' {
                w.push('\'');
            }
            w.push(c);
            (spaces, breaks) = (false, false);
        }
    }
    w.push('\'');
}

/// Double-quoted scalar with yaml.v2's escapes. A text that starts with a
/// byte order mark has every character escaped: yaml.v2 tests for the BOM at
/// the start of the text rather than at each character.
fn write_double(w: &mut Writer, s: &str, indent: usize, allow_breaks: bool) {
    let chars: Vec<char> = s.chars().collect();
    let starts_with_bom = s.starts_with('\u{FEFF}');
    w.push('"');
    let mut spaces = false;
    for (i, &c) in chars.iter().enumerate() {
        let escape = starts_with_bom || !is_printable(c) || is_break(c) || c == '"' || c == '\\';
        if escape {
            w.write(&escaped(c));
            spaces = false;
        } else if c == ' ' {
            let inner = i != 0 && i + 1 != chars.len();
            let folded = space_or_fold(w, indent, allow_breaks && !spaces && inner);
            // A space starting the next line would be lost: escape it.
            if folded && chars.get(i + 1) == Some(&' ') {
                w.push('\\');
            }
            spaces = true;
        } else {
            w.push(c);
            spaces = false;
        }
    }
    w.push('"');
}

fn escaped(c: char) -> String {
    let short = match c {
        '\0' => '0',
        '\x07' => 'a',
        '\x08' => 'b',
        '\t' => 't',
        '\n' => 'n',
        '\x0b' => 'v',
        '\x0c' => 'f',
        '\r' => 'r',
        '\x1b' => 'e',
        '"' => '"',
        '\\' => '\\',
        '\u{85}' => 'N',
        '\u{A0}' => '_',
        '\u{2028}' => 'L',
        '\u{2029}' => 'P',
        _ => {
            let v = c as u32;
            return if v <= 0xFF {
                format!("\\x{v:02X}")
            } else if v <= 0xFFFF {
                format!("\\u{v:04X}")
            } else {
                format!("\\U{v:08X}")
            };
        }
    };
    format!("\\{short}")
}

/// Literal block: `|`, an indentation indicator when the text starts with a
/// space or break, and `-` (no final break) or `+` (several) chomping.
fn write_literal(w: &mut Writer, s: &str, indent: usize) {
    let chars: Vec<char> = s.chars().collect();
    w.push('|');
    if chars.first().is_some_and(|&c| c == ' ' || is_break(c)) {
        w.write(&INDENT.to_string());
    }
    let last_is_break = chars.last().is_some_and(|&c| is_break(c));
    let before_last_is_break = chars.len() >= 2 && is_break(chars[chars.len() - 2]);
    if !last_is_break {
        w.push('-');
    } else if chars.len() == 1 || before_last_is_break {
        w.push('+');
    }
    w.push('\n');
    let mut breaks = true;
    for &c in &chars {
        if is_break(c) {
            w.write_break(c);
            breaks = true;
        } else {
            if breaks {
                w.pad(indent);
                breaks = false;
            }
            w.push(c);
        }
    }
}
