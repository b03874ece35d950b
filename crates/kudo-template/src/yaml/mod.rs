//! YAML written the way Go's `gopkg.in/yaml.v2` `Marshal` writes it: block
//! style, yaml.v2's natural key order, two-space indentation, sequences not
//! indented under keys, `{}`/`[]` for empty collections, plain scalars where
//! yaml.v2 allows them, literal `|` blocks for multi-line strings, folding
//! after column 80 and a trailing newline.
//!
//! Two callers need these exact bytes: KUDO's `toYaml` template function
//! (`to_yaml`) and the KudoOperator dependencies hash and parameter
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

use crate::value::{Value, format_float_g};
use crate::walk::{MAX_NESTING, Overflow};

/// yaml.v2's indentation step.
const INDENT: usize = 2;

/// Marshals a template value like yaml.v2 (what KUDO's `toYaml` returns),
/// refused once the text passes `cap` bytes or nests deeper than
/// [`MAX_NESTING`] (values built with `set` can hold themselves).
pub(crate) fn to_yaml(v: &Value<'_>, cap: usize) -> Result<String, Overflow> {
    marshal(v, cap, MAX_NESTING)
}

/// Marshals JSON like yaml.v2 marshals the `interface{}` Go decodes it into:
/// integers that fit `int64` print as integers, every other number as a
/// float64 (`1e+06`, `1.8446744073709552e+19`).
pub fn to_yaml_v2(json: &serde_json::Value) -> String {
    // Parsed JSON is a finite tree: neither bound can be reached.
    marshal(&Value::from_json(json), usize::MAX, usize::MAX).unwrap_or_default()
}

fn marshal(v: &Value<'_>, cap: usize, max_depth: usize) -> Result<String, Overflow> {
    let mut w = Writer {
        out: String::new(),
        column: 0,
        cap,
        max_depth,
        stop: None,
    };
    if is_collection(v) {
        if v.is_map() {
            write_map(&mut w, v, 0, false, 0);
        } else {
            write_seq(&mut w, v, 0, false, 0);
        }
    } else {
        // A lone scalar is indented like a mapping value if it folds.
        write_scalar(&mut w, v, INDENT);
    }
    if w.column > 0 {
        w.out.push('\n');
    }
    match w.stop {
        Some(overflow) => Err(overflow),
        None if w.out.len() > cap => Err(Overflow::TooLong),
        None => Ok(w.out),
    }
}

/// Output plus the current column, which folding and line starts depend
/// on, and the bounds of the walk.
struct Writer {
    out: String,
    column: usize,
    cap: usize,
    max_depth: usize,
    stop: Option<Overflow>,
}

impl Writer {
    /// Whether the walk must stop: a bound was passed.
    fn stopped(&mut self) -> bool {
        if self.stop.is_none() && self.out.len() > self.cap {
            self.stop = Some(Overflow::TooLong);
        }
        self.stop.is_some()
    }

    /// Whether a collection at `depth` may be written.
    fn enter(&mut self, depth: usize) -> bool {
        if depth >= self.max_depth {
            self.stop = Some(Overflow::TooDeep);
        }
        !self.stopped()
    }

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

/// `inline_first`: the first entry goes on the current line (after `- `).
/// Entries go in yaml.v2's key order; values are borrowed, not copied.
fn write_map(w: &mut Writer, v: &Value<'_>, indent: usize, inline_first: bool, depth: usize) {
    if !w.enter(depth) {
        return;
    }
    match v {
        Value::Map(map) => {
            let map = map.borrow();
            let entries: Vec<(&str, &Value<'_>)> =
                map.iter().map(|(k, item)| (k.as_str(), item)).collect();
            write_entries(w, entries, indent, inline_first, depth);
        }
        Value::Json(serde_json::Value::Object(object)) => {
            let values: Vec<(&str, Value<'_>)> = object
                .iter()
                .map(|(k, j)| (k.as_str(), Value::from_json(j)))
                .collect();
            let entries = values.iter().map(|(k, item)| (*k, item)).collect();
            write_entries(w, entries, indent, inline_first, depth);
        }
        _ => {}
    }
}

fn write_entries(
    w: &mut Writer,
    mut entries: Vec<(&str, &Value<'_>)>,
    indent: usize,
    inline_first: bool,
    depth: usize,
) {
    entries.sort_by(|a, b| key_order(a.0, b.0));
    for (i, (key, value)) in entries.into_iter().enumerate() {
        if w.stopped() {
            return;
        }
        if i > 0 || !inline_first {
            w.line(indent);
        }
        scalar::write_str(w, key, indent + INDENT, true);
        w.push(':');
        if !is_collection(value) {
            w.push(' ');
            write_scalar(w, value, indent + INDENT);
        } else if value.is_map() {
            write_map(w, value, indent + INDENT, false, depth + 1);
        } else {
            // Sequences inside mappings are not indented.
            write_seq(w, value, indent, false, depth + 1);
        }
    }
}

fn write_seq(w: &mut Writer, v: &Value<'_>, indent: usize, inline_first: bool, depth: usize) {
    if !w.enter(depth) {
        return;
    }
    for i in 0..v.len().unwrap_or(0) {
        let Some(item) = v.list_get(i) else { break };
        if w.stopped() {
            return;
        }
        if i > 0 || !inline_first {
            w.line(indent);
        }
        w.write("- ");
        if !is_collection(&item) {
            write_scalar(w, &item, indent + INDENT);
        } else if item.is_map() {
            write_map(w, &item, indent + INDENT, true, depth + 1);
        } else {
            write_seq(w, &item, indent + INDENT, true, depth + 1);
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
