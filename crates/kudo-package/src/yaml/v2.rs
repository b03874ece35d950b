//! A YAML writer that produces the same bytes as Go's `gopkg.in/yaml.v2`
//! `Marshal` for JSON-like values. KUDO hashes this text (dependencies hash,
//! reference §3.10), so byte equality matters: keys in yaml.v2's "natural"
//! order, two-space indentation, sequences not indented inside mappings,
//! `{}`/`[]` for empty collections, strings quoted only when a plain scalar
//! would read back as something else or is not allowed, literal blocks for
//! multi-line strings, and plain/quoted scalars folded after column 80.

use std::cmp::Ordering;
use std::sync::LazyLock;

use regex::Regex;
use serde_json::{Map, Value};

use crate::gofmt::format_float_g;

const BEST_WIDTH: usize = 80;

/// Serializes `value` as yaml.v2 would.
pub fn to_string(value: &Value) -> String {
    let mut w = Writer::default();
    match value {
        Value::Object(m) if !m.is_empty() => emit_map(&mut w, m, 0, false),
        Value::Array(a) if !a.is_empty() => emit_seq(&mut w, a, 0, false),
        Value::Object(_) => w.write("{}"),
        Value::Array(_) => w.write("[]"),
        scalar => emit_scalar(&mut w, scalar, 2, false),
    }
    if w.column > 0 {
        w.out.push('\n');
    }
    w.out
}

#[derive(Default)]
struct Writer {
    out: String,
    column: usize,
}

impl Writer {
    fn write(&mut self, s: &str) {
        for c in s.chars() {
            self.out.push(c);
            if c == '\n' {
                self.column = 0;
            } else {
                self.column += 1;
            }
        }
    }

    fn push(&mut self, c: char) {
        self.out.push(c);
        if c == '\n' {
            self.column = 0;
        } else {
            self.column += 1;
        }
    }

    /// Starts a new line at `indent` unless already at its beginning.
    fn line(&mut self, indent: usize) {
        if self.column > 0 {
            self.push('\n');
        }
        while self.column < indent {
            self.push(' ');
        }
    }

    /// A line break and indentation inside a folded scalar.
    fn fold(&mut self, indent: usize) {
        self.push('\n');
        while self.column < indent {
            self.push(' ');
        }
    }
}

/// yaml.v2's map key order: runs of digits compare numerically, letters
/// compare by code point, and non-letters sort before letters.
pub fn key_order(a: &str, b: &str) -> Ordering {
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
            return ar[i].cmp(&br[i]);
        }
        if al || bl {
            return if bl {
                Ordering::Less
            } else {
                Ordering::Greater
            };
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
            return an.cmp(&bn);
        }
        if ai != bi {
            return ai.cmp(&bi);
        }
        return ar[i].cmp(&br[i]);
    }
    ar.len().cmp(&br.len())
}

fn sorted_entries(map: &Map<String, Value>) -> Vec<(&String, &Value)> {
    let mut entries: Vec<(&String, &Value)> = map.iter().collect();
    entries.sort_by(|a, b| key_order(a.0, b.0));
    entries
}

fn emit_map(w: &mut Writer, map: &Map<String, Value>, indent: usize, inline_first: bool) {
    for (i, (key, value)) in sorted_entries(map).into_iter().enumerate() {
        if !(i == 0 && inline_first) {
            w.line(indent);
        }
        emit_string(w, key, indent + 2, true);
        w.push(':');
        match value {
            Value::Object(m) if !m.is_empty() => emit_map(w, m, indent + 2, false),
            // Sequences inside mappings are not indented.
            Value::Array(a) if !a.is_empty() => emit_seq(w, a, indent, false),
            Value::Object(_) => w.write(" {}"),
            Value::Array(_) => w.write(" []"),
            scalar => {
                w.push(' ');
                emit_scalar(w, scalar, indent + 2, false);
            }
        }
    }
}

fn emit_seq(w: &mut Writer, items: &[Value], indent: usize, inline_first: bool) {
    for (i, item) in items.iter().enumerate() {
        if !(i == 0 && inline_first) {
            w.line(indent);
        }
        w.write("- ");
        match item {
            Value::Object(m) if !m.is_empty() => emit_map(w, m, indent + 2, true),
            Value::Array(a) if !a.is_empty() => emit_seq(w, a, indent + 2, true),
            Value::Object(_) => w.write("{}"),
            Value::Array(_) => w.write("[]"),
            scalar => emit_scalar(w, scalar, indent + 2, false),
        }
    }
}

fn emit_scalar(w: &mut Writer, value: &Value, indent: usize, simple_key: bool) {
    match value {
        Value::Null => w.write("null"),
        Value::Bool(b) => w.write(if *b { "true" } else { "false" }),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                w.write(&i.to_string());
            } else if let Some(u) = n.as_u64() {
                w.write(&u.to_string());
            } else {
                let f = n.as_f64().unwrap_or(0.0);
                let text = match format_float_g(f).as_str() {
                    "+Inf" => ".inf".to_string(),
                    "-Inf" => "-.inf".to_string(),
                    "NaN" => ".nan".to_string(),
                    other => other.to_string(),
                };
                w.write(&text);
            }
        }
        Value::String(s) => emit_string(w, s, indent, simple_key),
        // Collections are handled by the callers.
        Value::Array(_) | Value::Object(_) => {}
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Style {
    Plain,
    SingleQuoted,
    DoubleQuoted,
    Literal,
}

fn emit_string(w: &mut Writer, s: &str, indent: usize, simple_key: bool) {
    let mut style = if s.contains('\n') {
        Style::Literal
    } else if resolves_to_non_string(s) || is_base60_float(s) {
        Style::DoubleQuoted
    } else {
        Style::Plain
    };
    let a = analyze(s);
    if style == Style::Plain && (!a.block_plain_allowed || (s.is_empty() && simple_key)) {
        style = Style::SingleQuoted;
    }
    if style == Style::SingleQuoted && !a.single_quoted_allowed {
        style = Style::DoubleQuoted;
    }
    if style == Style::Literal && (!a.block_allowed || simple_key) {
        style = Style::DoubleQuoted;
    }
    let allow_breaks = !simple_key;
    match style {
        Style::Plain => write_plain(w, s, indent, allow_breaks),
        Style::SingleQuoted => write_single(w, s, indent, allow_breaks),
        Style::DoubleQuoted => write_double(w, s, indent, allow_breaks),
        Style::Literal => write_literal(w, s, indent),
    }
}

fn is_space(c: Option<&char>) -> bool {
    c == Some(&' ')
}

fn is_break(c: char) -> bool {
    matches!(c, '\r' | '\n' | '\u{85}' | '\u{2028}' | '\u{2029}')
}

fn is_printable(c: char) -> bool {
    let v = c as u32;
    v == 0x0A
        || (0x20..=0x7E).contains(&v)
        || (0xA0..=0xD7FF).contains(&v)
        || ((0xE000..=0xFFFD).contains(&v) && v != 0xFEFF)
}

fn write_plain(w: &mut Writer, s: &str, indent: usize, allow_breaks: bool) {
    let chars: Vec<char> = s.chars().collect();
    let mut spaces = false;
    for (i, &c) in chars.iter().enumerate() {
        if c == ' ' {
            if allow_breaks && !spaces && w.column > BEST_WIDTH && !is_space(chars.get(i + 1)) {
                w.fold(indent);
            } else {
                w.push(c);
            }
            spaces = true;
        } else {
            w.push(c);
            spaces = false;
        }
    }
}

fn write_single(w: &mut Writer, s: &str, indent: usize, allow_breaks: bool) {
    let chars: Vec<char> = s.chars().collect();
    w.push('\'');
    let mut spaces = false;
    for (i, &c) in chars.iter().enumerate() {
        if c == ' ' {
            if allow_breaks
                && !spaces
                && w.column > BEST_WIDTH
                && i != 0
                && i != chars.len() - 1
                && !is_space(chars.get(i + 1))
            {
                w.fold(indent);
            } else {
                w.push(c);
            }
            spaces = true;
        } else {
            if c == '\'' {
                w.push('\'');
            }
            w.push(c);
            spaces = false;
        }
    }
    w.push('\'');
}

fn write_double(w: &mut Writer, s: &str, indent: usize, allow_breaks: bool) {
    let chars: Vec<char> = s.chars().collect();
    w.push('"');
    let mut spaces = false;
    for (i, &c) in chars.iter().enumerate() {
        if !is_printable(c) || c == '\u{FEFF}' || is_break(c) || c == '"' || c == '\\' {
            w.push('\\');
            match c {
                '\0' => w.push('0'),
                '\u{7}' => w.push('a'),
                '\u{8}' => w.push('b'),
                '\t' => w.push('t'),
                '\n' => w.push('n'),
                '\u{B}' => w.push('v'),
                '\u{C}' => w.push('f'),
                '\r' => w.push('r'),
                '\u{1B}' => w.push('e'),
                '"' => w.push('"'),
                '\\' => w.push('\\'),
                '\u{85}' => w.push('N'),
                '\u{A0}' => w.push('_'),
                '\u{2028}' => w.push('L'),
                '\u{2029}' => w.push('P'),
                other => {
                    let v = other as u32;
                    if v <= 0xFF {
                        w.write(&format!("x{v:02X}"));
                    } else if v <= 0xFFFF {
                        w.write(&format!("u{v:04X}"));
                    } else {
                        w.write(&format!("U{v:08X}"));
                    }
                }
            }
            spaces = false;
        } else if c == ' ' {
            if allow_breaks && !spaces && w.column > BEST_WIDTH && i != 0 && i != chars.len() - 1 {
                w.fold(indent);
                if is_space(chars.get(i + 1)) {
                    w.push('\\');
                }
            } else {
                w.push(c);
            }
            spaces = true;
        } else {
            w.push(c);
            spaces = false;
        }
    }
    w.push('"');
}

fn write_literal(w: &mut Writer, s: &str, indent: usize) {
    w.push('|');
    let chars: Vec<char> = s.chars().collect();
    if chars.first().is_some_and(|&c| c == ' ' || is_break(c)) {
        w.push('2');
    }
    match chars.last() {
        None => w.push('-'),
        Some(&last) if !is_break(last) => w.push('-'),
        Some(_) => {
            let before_last = chars.len().checked_sub(2).map(|i| chars[i]);
            if chars.len() == 1 || before_last.is_some_and(is_break) {
                w.push('+');
            }
        }
    }
    w.push('\n');
    let mut at_line_start = true;
    for &c in &chars {
        if is_break(c) {
            w.push('\n');
            at_line_start = true;
        } else {
            if at_line_start {
                while w.column < indent {
                    w.push(' ');
                }
                at_line_start = false;
            }
            w.push(c);
        }
    }
}

#[derive(Debug)]
struct Analysis {
    block_plain_allowed: bool,
    single_quoted_allowed: bool,
    block_allowed: bool,
}

fn analyze(s: &str) -> Analysis {
    if s.is_empty() {
        return Analysis {
            block_plain_allowed: true,
            single_quoted_allowed: true,
            block_allowed: false,
        };
    }
    let chars: Vec<char> = s.chars().collect();
    let mut block_indicators = s.starts_with("---") || s.starts_with("...");
    let (mut leading_space, mut leading_break, mut trailing_space, mut trailing_break) =
        (false, false, false, false);
    let (mut break_space, mut space_break, mut previous_space, mut previous_break) =
        (false, false, false, false);
    let (mut line_breaks, mut special) = (false, false);
    let mut preceded_by_whitespace = true;
    for (i, &c) in chars.iter().enumerate() {
        let followed_by_whitespace = chars.get(i + 1).is_none_or(|&n| n == ' ' || n == '\t');
        if i == 0 {
            match c {
                '#' | ',' | '[' | ']' | '{' | '}' | '&' | '*' | '!' | '|' | '>' | '\'' | '"'
                | '%' | '@' | '`' => block_indicators = true,
                '?' | ':' if followed_by_whitespace => block_indicators = true,
                '-' if followed_by_whitespace => block_indicators = true,
                _ => {}
            }
        } else {
            match c {
                ':' if followed_by_whitespace => block_indicators = true,
                '#' if preceded_by_whitespace => block_indicators = true,
                _ => {}
            }
        }
        if !is_printable(c) {
            special = true;
        }
        if c == ' ' {
            if i == 0 {
                leading_space = true;
            }
            if i + 1 == chars.len() {
                trailing_space = true;
            }
            if previous_break {
                break_space = true;
            }
            previous_space = true;
            previous_break = false;
        } else if is_break(c) {
            line_breaks = true;
            if i == 0 {
                leading_break = true;
            }
            if i + 1 == chars.len() {
                trailing_break = true;
            }
            if previous_space {
                space_break = true;
            }
            previous_space = false;
            previous_break = true;
        } else {
            previous_space = false;
            previous_break = false;
        }
        preceded_by_whitespace = c == ' ' || c == '\t' || is_break(c);
    }
    let mut a = Analysis {
        block_plain_allowed: true,
        single_quoted_allowed: true,
        block_allowed: true,
    };
    if leading_space || leading_break || trailing_space || trailing_break {
        a.block_plain_allowed = false;
    }
    if trailing_space {
        a.block_allowed = false;
    }
    if break_space {
        a.block_plain_allowed = false;
        a.single_quoted_allowed = false;
    }
    if space_break || special {
        a.block_plain_allowed = false;
        a.single_quoted_allowed = false;
        a.block_allowed = false;
    }
    if line_breaks || block_indicators {
        a.block_plain_allowed = false;
    }
    a
}

/// Whether yaml.v2 would read the plain scalar `s` back as something other
/// than a string (bool, null, int, float, timestamp, merge key).
fn resolves_to_non_string(s: &str) -> bool {
    const SPECIAL: &[&str] = &[
        "", "~", "null", "Null", "NULL", "y", "Y", "yes", "Yes", "YES", "on", "On", "ON", "true",
        "True", "TRUE", "n", "N", "no", "No", "NO", "off", "Off", "OFF", "false", "False", "FALSE",
        ".nan", ".NaN", ".NAN", ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf",
        "-.Inf", "-.INF", "<<",
    ];
    if SPECIAL.contains(&s) {
        return true;
    }
    let Some(first) = s.chars().next() else {
        return true;
    };
    match first {
        '.' => parses_as_go_float(s),
        '0'..='9' | '+' | '-' => {
            if TIMESTAMP.is_match(s) {
                return true;
            }
            let plain = s.replace('_', "");
            parses_as_go_int(&plain)
                || (YAML_FLOAT.is_match(&plain) && plain.parse::<f64>().is_ok())
                || plain
                    .strip_prefix("0b")
                    .or_else(|| plain.strip_prefix("-0b"))
                    .is_some_and(|b| !b.is_empty() && b.chars().all(|c| c == '0' || c == '1'))
        }
        _ => false,
    }
}

static YAML_FLOAT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$").unwrap_or_else(|_| never())
});
static TIMESTAMP: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}([Tt ][0-9]{1,2}:[0-9]{1,2}:[0-9]{1,2}(\.[0-9]*)?(Z|[-+][0-9]{1,2}(:[0-9]{2})?)?)?$")
        .unwrap_or_else(|_| never())
});
static BASE60: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$").unwrap_or_else(|_| never())
});

/// A regex that matches nothing; the constant patterns above always compile.
fn never() -> Regex {
    Regex::new(r"[^\s\S]").unwrap_or_else(|_| never())
}

fn is_base60_float(s: &str) -> bool {
    BASE60.is_match(s)
}

/// Go `strconv.ParseFloat(s, 64)` succeeding, for strings starting with `.`.
fn parses_as_go_float(s: &str) -> bool {
    let lower = s.to_ascii_lowercase();
    s.parse::<f64>().is_ok() && !lower.contains("inf") && !lower.contains("nan")
}

/// Go `strconv.ParseInt(s, 0, 64)` or `ParseUint(s, 0, 64)` succeeding.
fn parses_as_go_int(s: &str) -> bool {
    let body = s.strip_prefix(['+', '-']).unwrap_or(s);
    let (radix, digits) = if let Some(d) = body.strip_prefix("0x").or(body.strip_prefix("0X")) {
        (16, d)
    } else if let Some(d) = body.strip_prefix("0b").or(body.strip_prefix("0B")) {
        (2, d)
    } else if let Some(d) = body.strip_prefix("0o").or(body.strip_prefix("0O")) {
        (8, d)
    } else if body.len() > 1 && body.starts_with('0') {
        (8, &body[1..])
    } else {
        (10, body)
    };
    !digits.is_empty() && u64::from_str_radix(digits, radix).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn writes_nested_maps_sorted_with_empty_collections_inline() {
        let v = json!({"object": {"kind": "", "metadata": {"name": "x", "finalizers": [], "annotations": {}}, "apiVersion": ""}});
        assert_eq!(
            to_string(&v),
            "object:\n  apiVersion: \"\"\n  kind: \"\"\n  metadata:\n    annotations: {}\n    finalizers: []\n    name: x\n"
        );
    }

    #[test]
    fn sequences_in_maps_are_not_indented() {
        let v = json!({"a": ["x", {"b": 1, "c": [true]}], "d": [[1, 2]]});
        assert_eq!(
            to_string(&v),
            "a:\n- x\n- b: 1\n  c:\n  - true\nd:\n- - 1\n  - 2\n"
        );
    }

    #[test]
    fn strings_that_read_back_as_other_types_are_double_quoted() {
        for s in [
            "true",
            "yes",
            "on",
            "null",
            "~",
            "12",
            "0755",
            "1e3",
            "1_000",
            "0x1F",
            ".5",
            "2001-12-14",
            "1:20",
            "",
        ] {
            assert_eq!(
                to_string(&json!({ "k": s })),
                format!("k: \"{s}\"\n"),
                "{s}"
            );
        }
        for s in [
            "hello",
            "1.2.3",
            "v1",
            "a-b",
            "FancyValue",
            "8080/TCP",
            "-x",
        ] {
            assert_eq!(to_string(&json!({ "k": s })), format!("k: {s}\n"), "{s}");
        }
    }

    #[test]
    fn indicators_and_edge_spaces_use_single_quotes() {
        assert_eq!(to_string(&json!({"k": "a: b"})), "k: 'a: b'\n");
        assert_eq!(to_string(&json!({"k": " lead"})), "k: ' lead'\n");
        assert_eq!(to_string(&json!({"k": "*star"})), "k: '*star'\n");
        assert_eq!(to_string(&json!({"k": "it's #1"})), "k: 'it''s #1'\n");
        assert_eq!(to_string(&json!({"k": "- x"})), "k: '- x'\n");
    }

    #[test]
    fn control_characters_are_escaped_in_double_quotes() {
        assert_eq!(to_string(&json!({"k": "a\tb"})), "k: \"a\\tb\"\n");
    }

    #[test]
    fn multi_line_strings_are_literal_blocks_with_chomping() {
        let v = json!({"a": "x\ny", "b": "x\n", "c": "x\n\n"});
        assert_eq!(to_string(&v), "a: |-\n  x\n  y\nb: |\n  x\nc: |+\n  x\n\n");
        assert_eq!(to_string(&json!({"a": " x\ny"})), "a: |2-\n   x\n  y\n");
        assert_eq!(to_string(&json!({"a": "x \ny"})), "a: \"x \\ny\"\n");
    }

    #[test]
    fn long_plain_strings_fold_after_column_80() {
        let words = vec!["word"; 30].join(" ");
        let out = to_string(&json!({ "key": words }));
        let lines: Vec<&str> = out.lines().collect();
        assert!(lines.len() > 1, "{out}");
        assert!(lines[1].starts_with("  word"), "{out}");
        let back: serde_json::Value = crate::yaml::parse_value(&out).unwrap();
        assert_eq!(back["key"], json!(words));
    }

    #[test]
    fn floats_and_integers_print_like_go() {
        let v = json!({"f": 1.5, "big": 1000000.0, "i": 42});
        assert_eq!(to_string(&v), "big: 1e+06\nf: 1.5\ni: 42\n");
    }

    #[test]
    fn key_order_is_natural_and_puts_non_letters_first() {
        let mut keys = vec!["a10", "a2", "b", "_x", "A", "a"];
        keys.sort_by(|a, b| key_order(a, b));
        assert_eq!(keys, vec!["_x", "A", "a", "a2", "a10", "b"]);
    }
}
