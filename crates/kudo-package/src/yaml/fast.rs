//! A fast path for the YAML that rendered Kubernetes manifests almost
//! always are: block mappings and sequences of plain words, decimal
//! integers, simply quoted strings, `{}` and `[]`.
//!
//! It either returns exactly what the full parser would (tests compare the
//! two on generated documents) or `None` as soon as it meets anything it
//! does not handle (anchors, tags, flow collections, block or multi-line
//! scalars, escapes, tabs, duplicate keys, and every plain scalar whose
//! type YAML could read as something other than a word or an integer);
//! the caller then uses the full parser. Manifests are parsed once per
//! step run, so the full parser's per-document cost showed in the manager's
//! profile.

use serde_json::{Map, Value};

/// One content line: indentation and the text after it.
#[derive(Clone, Copy)]
struct Line<'a> {
    indent: usize,
    text: &'a str,
}

/// Parses one document, or `None` when it is outside the fast subset.
pub(super) fn parse(doc: &str) -> Option<Value> {
    let mut lines = Vec::new();
    for raw in doc.split('\n') {
        let trimmed = raw.trim_start_matches(' ');
        if trimmed.starts_with('\t') || trimmed.contains('\r') {
            return None;
        }
        let text = trimmed.trim_end_matches(' ');
        if text.is_empty() || text.starts_with('#') {
            continue;
        }
        lines.push(Line {
            indent: raw.len() - trimmed.len(),
            text,
        });
    }
    let first = *lines.first()?;
    let mut parser = Parser { lines, next: 0 };
    let value = parser.block(first.indent)?;
    (parser.next == parser.lines.len()).then_some(value)
}

struct Parser<'a> {
    lines: Vec<Line<'a>>,
    next: usize,
}

impl<'a> Parser<'a> {
    fn peek(&self) -> Option<Line<'a>> {
        self.lines.get(self.next).copied()
    }

    /// The block (mapping or sequence) whose first line is the next one,
    /// at `indent`.
    fn block(&mut self, indent: usize) -> Option<Value> {
        let line = self.peek()?;
        if line.indent != indent {
            return None;
        }
        if is_item(line.text) {
            self.sequence(indent)
        } else {
            self.mapping(indent)
        }
    }

    fn mapping(&mut self, indent: usize) -> Option<Value> {
        let mut map = Map::new();
        while let Some(line) = self.peek() {
            if line.indent < indent || (line.indent == indent && is_item(line.text)) {
                break;
            }
            if line.indent > indent {
                return None;
            }
            let (key, rest) = split_key(line.text)?;
            self.next += 1;
            let value = self.value_after(rest, indent, true)?;
            if map.insert(key.to_string(), value).is_some() {
                return None;
            }
        }
        Some(Value::Object(map))
    }

    fn sequence(&mut self, indent: usize) -> Option<Value> {
        let mut items = Vec::new();
        while let Some(line) = self.peek() {
            if line.indent < indent || (line.indent == indent && !is_item(line.text)) {
                break;
            }
            if line.indent > indent {
                return None;
            }
            let after_dash = &line.text[1..];
            let rest = after_dash.trim_start_matches(' ');
            if rest.is_empty() || rest.starts_with('#') {
                self.next += 1;
                items.push(self.value_after("", indent, false)?);
                continue;
            }
            // A compact nested block ("- key: v" or "- - x"): its lines
            // continue at the column where the item's content starts.
            let column = indent + 1 + (after_dash.len() - rest.len());
            if is_item(rest) || split_key(rest).is_some() {
                self.lines[self.next] = Line {
                    indent: column,
                    text: rest,
                };
                items.push(self.block(column)?);
            } else {
                self.next += 1;
                items.push(scalar(rest)?);
            }
        }
        Some(Value::Array(items))
    }

    /// The value after a key (`in_mapping`) or a dash, whose line held
    /// `rest` after the separator.
    fn value_after(&mut self, rest: &str, indent: usize, in_mapping: bool) -> Option<Value> {
        if !rest.is_empty() && !rest.starts_with('#') {
            return scalar(rest);
        }
        match self.peek() {
            Some(next) if next.indent > indent => self.block(next.indent),
            // A mapping's sequence value may sit at the key's own column.
            Some(next) if in_mapping && next.indent == indent && is_item(next.text) => {
                self.sequence(indent)
            }
            _ => Some(Value::Null),
        }
    }
}

fn is_item(text: &str) -> bool {
    text == "-" || text.starts_with("- ")
}

/// `key: rest` → the key and the text after the separator, or `None` when
/// the line is not a simple key.
fn split_key(text: &str) -> Option<(&str, &str)> {
    let (key, after) = if text.starts_with(['"', '\'']) {
        quoted(text)?
    } else {
        let colon = text.find(": ").or_else(|| {
            text.strip_suffix(':')
                .filter(|k| !k.contains(':'))
                .map(str::len)
        })?;
        let key = &text[..colon];
        if !is_word(key) {
            return None;
        }
        (key, &text[colon..])
    };
    let rest = after.strip_prefix(':')?;
    if !(rest.is_empty() || rest.starts_with(' ')) {
        return None;
    }
    Some((key, rest.trim_start_matches(' ')))
}

/// A scalar value written on one line, possibly followed by a comment.
fn scalar(text: &str) -> Option<Value> {
    if text.starts_with(['"', '\'']) {
        let (content, tail) = quoted(text)?;
        let rest = tail.trim_start_matches(' ');
        let commented = rest.starts_with('#') && rest.len() < tail.len();
        return (rest.is_empty() || commented).then(|| Value::String(content.to_string()));
    }
    let plain = match text.find(" #") {
        Some(i) => text[..i].trim_end_matches(' '),
        None => text,
    };
    match plain {
        "{}" => return Some(Value::Object(Map::new())),
        "[]" => return Some(Value::Array(Vec::new())),
        _ => {}
    }
    if let Some(n) = integer(plain) {
        return Some(Value::from(n));
    }
    is_word(plain).then(|| Value::String(plain.to_string()))
}

/// A one-line quoted scalar without escapes at the start of `text`: its
/// content and the text after the closing quote.
fn quoted(text: &str) -> Option<(&str, &str)> {
    let quote = text.chars().next()?;
    let end = text[1..].find(quote)? + 1;
    let (content, after) = (&text[1..end], &text[end + 1..]);
    // `\` escapes in double quotes and `''` in single quotes need the full parser.
    let escaped = if quote == '"' {
        content.contains('\\')
    } else {
        after.starts_with('\'')
    };
    (!escaped).then_some((content, after))
}

/// A decimal integer without sign tricks, leading zeros or separators.
fn integer(text: &str) -> Option<i64> {
    let digits = text.strip_prefix('-').unwrap_or(text);
    let plain_decimal = !digits.is_empty()
        && digits.len() <= 18
        && digits.bytes().all(|b| b.is_ascii_digit())
        && (digits == "0" || !digits.starts_with('0'));
    if !plain_decimal || text == "-0" {
        return None;
    }
    text.parse().ok()
}

/// Plain text every YAML reader takes as a string: starts with a letter,
/// a `/` or a `-` before a letter or dash (paths, flags), uses no character with a meaning in YAML, and is not a word YAML 1.1
/// or 1.2 reads as a boolean, null or special float.
fn is_word(text: &str) -> bool {
    const SPECIAL: &[&str] = &[
        "y", "n", "yes", "no", "on", "off", "true", "false", "null", "inf", "infinity", "nan",
    ];
    let starts_as_word = match text.as_bytes() {
        [b'-', second, ..] => second.is_ascii_alphabetic() || *second == b'-',
        [first, ..] => first.is_ascii_alphabetic() || *first == b'/',
        [] => false,
    };
    starts_as_word
        && text.bytes().all(|b| {
            b.is_ascii_alphanumeric()
                || matches!(
                    b,
                    b'-' | b'_' | b'.' | b'/' | b'=' | b'+' | b'@' | b'(' | b')' | b' '
                )
                || b == b':'
        })
        && !text.contains(": ")
        && !text.ends_with([':', ' '])
        && !SPECIAL.contains(&text.to_ascii_lowercase().as_str())
}

#[cfg(test)]
#[path = "fast_tests.rs"]
mod tests;
