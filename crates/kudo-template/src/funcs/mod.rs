//! Function registry: Go's builtins, the sprig v2.22 subset and KUDO's `toYaml`.
//! Sprig functions KUDO deleted (`env`, `expandenv`, `base`, `dir`, `clean`,
//! `ext`, `isAbs`) are absent, so using them is a parse error.

mod builtins;
mod cast;
mod collections;
mod encoding;
mod printf;
mod semver_cmp;
mod strings;

use std::collections::HashMap;
use std::sync::OnceLock;

use crate::limits::Meter;
use crate::value::Value;
use crate::walk::Overflow;

pub use cast::{parse_go_float as parse_float, parse_go_int as parse_int, strval, to_f64, to_i64};

/// Why a function call failed.
#[derive(Debug)]
pub enum FuncError {
    /// An argument had the wrong Go type (reported without "error calling").
    Arg(String),
    /// Argument `index` is not of the Go parameter type `expected`; `message`
    /// is Go's wording for a value (literals get their own wording).
    Type {
        /// Position among the call's arguments.
        index: usize,
        /// Go parameter type.
        expected: &'static str,
        /// Go's message for a non-literal argument.
        message: String,
    },
    /// The function itself returned an error or would have panicked in Go.
    Call(String),
    /// The result would not fit in what is left of the render's value
    /// budget; `bytes` is its size when known before building it.
    TooLarge {
        /// Size of the refused result.
        bytes: Option<u128>,
    },
}

impl From<Overflow> for FuncError {
    fn from(overflow: Overflow) -> Self {
        match overflow {
            Overflow::TooLong => FuncError::TooLarge { bytes: None },
            Overflow::TooDeep => FuncError::Call(overflow.describe().to_string()),
        }
    }
}

/// Result of a template function.
pub type FuncResult<'a> = Result<Value<'a>, FuncError>;

/// A function whose result is at most a small multiple of its arguments.
pub type PlainFn = for<'a> fn(&[Value<'a>]) -> FuncResult<'a>;

/// A function whose result size comes from an argument (`repeat 1e12`) or
/// from shared parts written out (`toJson`): it checks the size against the
/// meter before building.
pub type SizedFn = for<'a> fn(&[Value<'a>], &mut Meter) -> FuncResult<'a>;

/// How a function is called.
#[derive(Debug, Clone, Copy)]
pub enum Imp {
    /// Arguments only.
    Plain(PlainFn),
    /// Arguments and what is left of the value budget.
    Sized(SizedFn),
}

/// A template function: Go-typed arguments are checked inside `f`.
#[derive(Debug)]
pub struct FuncDef {
    /// Minimum number of arguments.
    pub min: usize,
    /// Maximum number of arguments (`None` = variadic).
    pub max: Option<usize>,
    /// Implementation.
    pub f: Imp,
}

type Entry = (&'static str, usize, Option<usize>, PlainFn);

type SizedEntry = (&'static str, usize, Option<usize>, SizedFn);

fn registry() -> &'static HashMap<&'static str, FuncDef> {
    static REGISTRY: OnceLock<HashMap<&'static str, FuncDef>> = OnceLock::new();
    REGISTRY.get_or_init(|| {
        let mut map = HashMap::new();
        for table in [
            builtins::TABLE,
            strings::TABLE,
            collections::TABLE,
            encoding::TABLE,
            semver_cmp::TABLE,
        ] {
            for &(name, min, max, f) in table {
                let f = Imp::Plain(f);
                map.insert(name, FuncDef { min, max, f });
            }
        }
        for table in [
            builtins::SIZED,
            strings::SIZED,
            collections::SIZED,
            encoding::SIZED,
            printf::SIZED,
        ] {
            for &(name, min, max, f) in table {
                let f = Imp::Sized(f);
                map.insert(name, FuncDef { min, max, f });
            }
        }
        map
    })
}

/// Looks a function up by name.
pub fn lookup(name: &str) -> Option<&'static FuncDef> {
    registry().get(name)
}

/// Names of every function the engine knows (sorted).
pub fn names() -> Vec<&'static str> {
    let mut v: Vec<&'static str> = registry().keys().copied().collect();
    v.sort_unstable();
    v
}

/// `wrong type for value; expected T; got U` for argument `index`.
pub fn wrong_type(expected: &'static str, got: &Value<'_>, index: usize) -> FuncError {
    let message = if matches!(got, Value::Nil) {
        format!("invalid value; expected {expected}")
    } else {
        format!(
            "wrong type for value; expected {expected}; got {}",
            got.type_name()
        )
    };
    FuncError::Type {
        index,
        expected,
        message,
    }
}

/// A Go `string` parameter.
pub fn arg_str<'v>(args: &'v [Value<'_>], i: usize) -> Result<&'v str, FuncError> {
    match args.get(i) {
        Some(Value::Str(s)) => Ok(s),
        Some(other) => Err(wrong_type("string", other, i)),
        None => Err(FuncError::Arg(format!("missing argument {i}"))),
    }
}

/// A Go `int` parameter (untyped integer constants and int values only).
pub fn arg_int(args: &[Value<'_>], i: usize) -> Result<i64, FuncError> {
    match args.get(i) {
        Some(Value::Int(n)) => Ok(*n),
        Some(other) => Err(wrong_type("int", other, i)),
        None => Err(FuncError::Arg(format!("missing argument {i}"))),
    }
}

/// A Go `bool` parameter.
pub fn arg_bool(args: &[Value<'_>], i: usize) -> Result<bool, FuncError> {
    match args.get(i) {
        Some(Value::Bool(b)) => Ok(*b),
        Some(other) => Err(wrong_type("bool", other, i)),
        None => Err(FuncError::Arg(format!("missing argument {i}"))),
    }
}

/// A Go `map[string]interface{}` parameter.
pub fn arg_map<'v, 'a>(args: &'v [Value<'a>], i: usize) -> Result<&'v Value<'a>, FuncError> {
    match args.get(i) {
        Some(v) if v.is_map() => Ok(v),
        Some(other) => Err(wrong_type("map[string]interface {}", other, i)),
        None => Err(FuncError::Arg(format!("missing argument {i}"))),
    }
}

/// Go `reflect.Kind` name of a value, as sprig's error messages print it.
pub fn kind_name(v: &Value<'_>) -> &'static str {
    match v {
        Value::Nil => "invalid",
        Value::Bool(_) => "bool",
        Value::Int(_) => "int",
        Value::Float(_) => "float64",
        Value::Str(_) => "string",
        v if v.is_list() => "slice",
        _ => "map",
    }
}

/// Argument `i` (always present after the arity check).
pub fn arg<'a>(args: &[Value<'a>], i: usize) -> Value<'a> {
    args.get(i).cloned().unwrap_or(Value::Nil)
}
