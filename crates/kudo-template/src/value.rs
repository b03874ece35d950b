//! Runtime values: the Go types a KUDO template can see, borrowed from the
//! input JSON where possible so that rendering does not copy the context.

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::ops::{Deref, DerefMut};
use std::rc::Rc;

use serde_json::Value as Json;

/// A map built during rendering (`dict`, `split`); shared so `set` mutates
/// every reference, as a Go map would.
pub type MapRef<'a> = Rc<RefCell<Entries<'a>>>;

/// The items of a list built during rendering. Dropped without recursion,
/// so a list nested a million levels deep cannot overflow the stack.
#[derive(Debug, Clone, Default)]
pub struct Items<'a>(Vec<Value<'a>>);

/// The entries of a map built during rendering, dropped like [`Items`].
#[derive(Debug, Default)]
pub struct Entries<'a>(BTreeMap<String, Value<'a>>);

impl<'a> Deref for Items<'a> {
    type Target = Vec<Value<'a>>;
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl<'a> Deref for Entries<'a> {
    type Target = BTreeMap<String, Value<'a>>;
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl DerefMut for Entries<'_> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.0
    }
}

impl<'a> From<BTreeMap<String, Value<'a>>> for Entries<'a> {
    fn from(entries: BTreeMap<String, Value<'a>>) -> Self {
        Self(entries)
    }
}

impl Drop for Items<'_> {
    fn drop(&mut self) {
        tear_down(std::mem::take(&mut self.0));
    }
}

impl Drop for Entries<'_> {
    fn drop(&mut self) {
        tear_down(std::mem::take(&mut self.0).into_values().collect());
    }
}

/// Drops values with an explicit stack: a container nobody else holds
/// gives its children to the stack before it goes, so it drops empty.
fn tear_down(mut stack: Vec<Value<'_>>) {
    while let Some(value) = stack.pop() {
        match value {
            Value::List(rc) => {
                if let Ok(mut items) = Rc::try_unwrap(rc) {
                    stack.append(&mut items.0);
                }
            }
            Value::Map(rc) => {
                if let Ok(cell) = Rc::try_unwrap(rc) {
                    let mut entries = cell.into_inner();
                    stack.extend(std::mem::take(&mut entries.0).into_values());
                }
            }
            _ => {}
        }
    }
}

/// A value during template execution, modelled on the Go types KUDO passes.
#[derive(Debug, Clone)]
pub enum Value<'a> {
    /// Go untyped nil / nil interface.
    Nil,
    /// Go bool.
    Bool(bool),
    /// Go int.
    Int(i64),
    /// Go float64.
    Float(f64),
    /// Go string.
    Str(Cow<'a, str>),
    /// A list built during rendering (`[]interface{}`).
    List(Rc<Items<'a>>),
    /// A map built during rendering (`map[string]interface{}`).
    Map(MapRef<'a>),
    /// An array or object borrowed from the input data.
    Json(&'a Json),
}

impl<'a> Value<'a> {
    /// Wraps input JSON; scalars become Go scalars, containers stay borrowed.
    pub fn from_json(json: &'a Json) -> Self {
        match json {
            Json::Null => Value::Nil,
            Json::Bool(b) => Value::Bool(*b),
            Json::Number(n) => {
                if n.is_f64() {
                    Value::Float(n.as_f64().unwrap_or(0.0))
                } else if let Some(i) = n.as_i64() {
                    Value::Int(i)
                } else {
                    Value::Float(n.as_f64().unwrap_or(0.0))
                }
            }
            Json::String(s) => Value::Str(Cow::Borrowed(s)),
            Json::Array(_) | Json::Object(_) => Value::Json(json),
        }
    }

    /// Builds a string value.
    pub fn string(s: impl Into<String>) -> Self {
        Value::Str(Cow::Owned(s.into()))
    }

    /// Builds a list value.
    pub fn list(items: Vec<Value<'a>>) -> Self {
        Value::List(Rc::new(Items(items)))
    }

    /// Builds a map value.
    pub fn map(entries: BTreeMap<String, Value<'a>>) -> Self {
        Value::Map(Rc::new(RefCell::new(Entries(entries))))
    }

    /// The Go type name used in error messages.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Nil => "<nil>",
            Value::Bool(_) => "bool",
            Value::Int(_) => "int",
            Value::Float(_) => "float64",
            Value::Str(_) => "string",
            Value::List(_) => "[]interface {}",
            Value::Map(_) => "map[string]interface {}",
            Value::Json(Json::Array(_)) => "[]interface {}",
            Value::Json(_) => "map[string]interface {}",
        }
    }

    /// True for lists (built or borrowed).
    pub fn is_list(&self) -> bool {
        matches!(self, Value::List(_) | Value::Json(Json::Array(_)))
    }

    /// True for maps (built or borrowed).
    pub fn is_map(&self) -> bool {
        matches!(self, Value::Map(_) | Value::Json(Json::Object(_)))
    }

    /// Go truthiness: false, 0, nil and empty string/list/map are false.
    pub fn truthy(&self) -> bool {
        match self {
            Value::Nil => false,
            Value::Bool(b) => *b,
            Value::Int(i) => *i != 0,
            Value::Float(f) => *f != 0.0,
            Value::Str(s) => !s.is_empty(),
            Value::List(l) => !l.is_empty(),
            Value::Map(m) => !m.borrow().is_empty(),
            Value::Json(Json::Array(a)) => !a.is_empty(),
            Value::Json(Json::Object(o)) => !o.is_empty(),
            Value::Json(_) => true,
        }
    }

    /// The elements of a list, or `None` if this is not a list.
    pub fn list_items(&self) -> Option<Vec<Value<'a>>> {
        match self {
            Value::List(l) => Some(l.to_vec()),
            Value::Json(Json::Array(a)) => Some(a.iter().map(Value::from_json).collect()),
            _ => None,
        }
    }

    /// True when `len` is `Some(0)`.
    pub fn is_empty(&self) -> bool {
        self.len() == Some(0)
    }

    /// Number of list elements, map entries or string bytes.
    pub fn len(&self) -> Option<usize> {
        match self {
            Value::Str(s) => Some(s.len()),
            Value::List(l) => Some(l.len()),
            Value::Map(m) => Some(m.borrow().len()),
            Value::Json(Json::Array(a)) => Some(a.len()),
            Value::Json(Json::Object(o)) => Some(o.len()),
            _ => None,
        }
    }

    /// The list element at `i`, if this is a list.
    pub fn list_get(&self, i: usize) -> Option<Value<'a>> {
        match self {
            Value::List(l) => l.get(i).cloned(),
            Value::Json(Json::Array(a)) => a.get(i).map(Value::from_json),
            _ => None,
        }
    }

    /// Map entries sorted by key (Go sorts map keys when ranging and printing).
    pub fn map_entries(&self) -> Option<Vec<(String, Value<'a>)>> {
        match self {
            Value::Map(m) => Some(
                m.borrow()
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect(),
            ),
            Value::Json(Json::Object(o)) => {
                let mut entries: Vec<(String, Value<'a>)> = o
                    .iter()
                    .map(|(k, v)| (k.clone(), Value::from_json(v)))
                    .collect();
                entries.sort_by(|a, b| a.0.cmp(&b.0));
                Some(entries)
            }
            _ => None,
        }
    }

    /// Looks up a map key; `None` if absent or not a map.
    pub fn map_get(&self, key: &str) -> Option<Value<'a>> {
        match self {
            Value::Map(m) => m.borrow().get(key).cloned(),
            Value::Json(Json::Object(o)) => o.get(key).map(Value::from_json),
            _ => None,
        }
    }

    /// The string, if this is one.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }
}

/// Shortest decimal digits and decimal exponent of a finite, non-zero float:
/// value = 0.d1d2d3... × 10^point.
fn shortest_digits(f: f64) -> (String, i32) {
    // Rust's `{:e}` prints the shortest round-tripping digits, like Go's -1 precision.
    let s = format!("{:e}", f.abs());
    let (mantissa, exp) = s.split_once('e').unwrap_or((&s, "0"));
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let exp: i32 = exp.parse().unwrap_or(0);
    (digits, exp + 1)
}

fn special_float(f: f64) -> Option<&'static str> {
    if f.is_nan() {
        Some("NaN")
    } else if f.is_infinite() {
        Some(if f > 0.0 { "+Inf" } else { "-Inf" })
    } else {
        None
    }
}

/// Go `strconv.FormatFloat(f, 'g', -1, 64)`, which is also fmt's `%v`.
pub fn format_float_g(f: f64) -> String {
    if let Some(s) = special_float(f) {
        return s.to_string();
    }
    if f == 0.0 {
        return if f.is_sign_negative() { "-0" } else { "0" }.to_string();
    }
    let (digits, point) = shortest_digits(f);
    let exp = point - 1;
    let sign = if f < 0.0 { "-" } else { "" };
    // strconv's shortest 'g': exponent form when exp < -4 or exp >= 6.
    let use_exp = !(-4..6).contains(&exp);
    if use_exp {
        format_exp(sign, &digits, exp, 2)
    } else {
        format!("{sign}{}", fixed_from_digits(&digits, point))
    }
}

/// `d.ddde±XX` with at least `min_exp_digits` exponent digits.
fn format_exp(sign: &str, digits: &str, exp: i32, min_exp_digits: usize) -> String {
    let (first, rest) = digits.split_at(1);
    let mantissa = if rest.is_empty() {
        first.to_string()
    } else {
        format!("{first}.{rest}")
    };
    let esign = if exp < 0 { '-' } else { '+' };
    format!(
        "{sign}{mantissa}e{esign}{:0width$}",
        exp.abs(),
        width = min_exp_digits
    )
}

/// Plain decimal from digits and point position.
fn fixed_from_digits(digits: &str, point: i32) -> String {
    let n = digits.len() as i32;
    if point <= 0 {
        format!("0.{}{}", "0".repeat((-point) as usize), digits)
    } else if point >= n {
        format!("{}{}", digits, "0".repeat((point - n) as usize))
    } else {
        let (a, b) = digits.split_at(point as usize);
        format!("{a}.{b}")
    }
}

/// Go `encoding/json` float formatting.
pub fn format_float_json(f: f64) -> String {
    if f == 0.0 {
        return "0".to_string();
    }
    let (digits, point) = shortest_digits(f);
    let sign = if f < 0.0 { "-" } else { "" };
    let abs = f.abs();
    if !(1e-6..1e21).contains(&abs) {
        format_exp(sign, &digits, point - 1, 1)
    } else {
        format!("{sign}{}", fixed_from_digits(&digits, point))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_floats_like_go_percent_v() {
        for (f, want) in [
            (80.0, "80"),
            (1000000.0, "1e+06"),
            (100000.0, "100000"),
            (123456.0, "123456"),
            (1234567.0, "1.234567e+06"),
            (0.5, "0.5"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (-2.5, "-2.5"),
            (1e21, "1e+21"),
            (1.5e300, "1.5e+300"),
            (3.0, "3"),
            (12345678.9, "1.23456789e+07"),
        ] {
            assert_eq!(format_float_g(f), want, "{f}");
        }
    }

    #[test]
    fn formats_floats_like_go_json() {
        for (f, want) in [
            (80.0, "80"),
            (1000000.0, "1000000"),
            (0.5, "0.5"),
            (1e21, "1e+21"),
            (0.0000001, "1e-7"),
        ] {
            assert_eq!(format_float_json(f), want, "{f}");
        }
    }
}
