//! YAML written the way Go's `gopkg.in/yaml.v2` `Marshal` writes it: block
//! style, yaml.v2's natural key order, two-space indentation, sequences not
//! indented under keys, `{}`/`[]` for empty collections, plain scalars where
//! yaml.v2 allows them, literal `|` blocks for multi-line strings, folding
//! after column 80 and a trailing newline.
//!
//! Two callers need these exact bytes: KUDO's `toYaml` template function
//! ([`to_yaml`]) and the KudoOperator dependencies hash and parameter
//! wrapping in `kudo-package` ([`to_yaml_v2`]), which md5 the text.
//!
//! Not reproduced: keys longer than 128 bytes or spanning lines, which
//! yaml.v2 writes as `? key` complex keys (written here as ordinary keys).

mod order;
mod resolve;
mod scalar;
#[cfg(test)]
mod tests;

pub use order::key_order;

use std::borrow::Cow;

use crate::value::{Value, format_float_g};

/// yaml.v2's indentation step.
const INDENT: usize = 2;

/// Marshals a template value like yaml.v2 (what KUDO's `toYaml` returns).
pub fn to_yaml(v: &Value<'_>) -> String {
    let mut w = Writer::default();
    if is_collection(v) {
        if v.is_map() {
            write_map(&mut w, v, 0, false);
        } else {
            write_seq(&mut w, v, 0, false);
        }
    } else {
        // A lone scalar is indented like a mapping value if it folds.
        write_scalar(&mut w, v, INDENT);
    }
    if w.column > 0 {
        w.out.push('\n');
    }
    w.out
}

/// Marshals JSON like yaml.v2 marshals the `interface{}` Go decodes it into:
/// integers that fit `int64` print as integers, every other number as a
/// float64 (`1e+06`, `1.8446744073709552e+19`).
pub fn to_yaml_v2(json: &serde_json::Value) -> String {
    to_yaml(&Value::from_json(json))
}

/// Output plus the current column, which folding and line starts depend on.
#[derive(Default)]
struct Writer {
    out: String,
    column: usize,
}

impl Writer {
    fn push(&mut self, c: char) {
        self.out.push(c);
        if c == '\n' {
            self.column = 0;
        } else {
            self.column += 1;
        }
    }

    fn write(&mut self, s: &str) {
        s.chars().for_each(|c| self.push(c));
    }

    /// A line break character from the text: it ends the line whatever it is.
    fn write_break(&mut self, c: char) {
        self.out.push(c);
        self.column = 0;
    }

    /// Pads to `indent`, starting a new line first unless already at the
    /// start of one (yaml.v2's `write_indent`).
    fn line(&mut self, indent: usize) {
        if self.column > 0 {
            self.push('\n');
        }
        self.pad(indent);
    }

    fn pad(&mut self, indent: usize) {
        while self.column < indent {
            self.push(' ');
        }
    }
}

/// A non-empty map or list; empty ones are written inline as `{}`/`[]`.
fn is_collection(v: &Value<'_>) -> bool {
    (v.is_map() || v.is_list()) && v.len() != Some(0)
}

/// Map entries in yaml.v2's key order; keys of input JSON stay borrowed.
fn sorted_entries<'a>(v: &Value<'a>) -> Vec<(Cow<'a, str>, Value<'a>)> {
    let mut entries: Vec<(Cow<'a, str>, Value<'a>)> = match v {
        Value::Json(serde_json::Value::Object(o)) => o
            .iter()
            .map(|(k, v)| (Cow::Borrowed(k.as_str()), Value::from_json(v)))
            .collect(),
        _ => v
            .map_entries()
            .unwrap_or_default()
            .into_iter()
            .map(|(k, v)| (Cow::Owned(k), v))
            .collect(),
    };
    entries.sort_by(|a, b| key_order(&a.0, &b.0));
    entries
}

/// `inline_first`: the first entry goes on the current line (after `- `).
fn write_map(w: &mut Writer, v: &Value<'_>, indent: usize, inline_first: bool) {
    for (i, (key, value)) in sorted_entries(v).iter().enumerate() {
        if i > 0 || !inline_first {
            w.line(indent);
        }
        scalar::write_str(w, key, indent + INDENT, true);
        w.push(':');
        if !is_collection(value) {
            w.push(' ');
            write_scalar(w, value, indent + INDENT);
        } else if value.is_map() {
            write_map(w, value, indent + INDENT, false);
        } else {
            // Sequences inside mappings are not indented.
            write_seq(w, value, indent, false);
        }
    }
}

fn write_seq(w: &mut Writer, v: &Value<'_>, indent: usize, inline_first: bool) {
    for (i, item) in v.list_items().unwrap_or_default().iter().enumerate() {
        if i > 0 || !inline_first {
            w.line(indent);
        }
        w.write("- ");
        if !is_collection(item) {
            write_scalar(w, item, indent + INDENT);
        } else if item.is_map() {
            write_map(w, item, indent + INDENT, true);
        } else {
            write_seq(w, item, indent + INDENT, true);
        }
    }
}

/// Scalars and empty collections.
fn write_scalar(w: &mut Writer, v: &Value<'_>, indent: usize) {
    match v {
        Value::Nil => w.write("null"),
        Value::Bool(b) => w.write(if *b { "true" } else { "false" }),
        Value::Int(i) => w.write(&i.to_string()),
        Value::Float(f) => {
            let text = format_float_g(*f);
            w.write(match text.as_str() {
                "+Inf" => ".inf",
                "-Inf" => "-.inf",
                "NaN" => ".nan",
                finite => finite,
            });
        }
        Value::Str(s) => scalar::write_str(w, s, indent, false),
        empty if empty.is_map() => w.write("{}"),
        _ => w.write("[]"),
    }
}
