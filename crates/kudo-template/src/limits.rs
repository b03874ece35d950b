//! What one render may build. Two budgets, both checked before memory is
//! taken: the output (bytes the template writes, checked as each piece is
//! written) and the values functions build along the way (strings, lists
//! and maps, counted as they are built). Functions whose result size comes
//! from an argument (`repeat`, `indent`, `printf` widths, `until`, ...)
//! compute that size and fail before allocating.

use std::borrow::Cow;
use std::mem::size_of;
use std::rc::Rc;

use crate::funcs::FuncError;
use crate::value::Value;

/// Default output budget of one render: 4 MiB.
pub const DEFAULT_MAX_OUTPUT: usize = 4 << 20;

/// Default budget for values built during one render: 16 MiB.
pub const DEFAULT_MAX_VALUES: usize = 16 << 20;

/// Default step budget of one render: 1,000,000 steps (nodes executed, range
/// iterations, function calls and the list and map elements they are
/// given, template calls). The largest real packages take a few thousand.
pub const DEFAULT_MAX_STEPS: u64 = 1_000_000;

/// Bounds of one render ([`crate::Template::render_with`]).
///
/// Peak memory of a render stays within a small multiple of
/// `max_output + max_values` plus the input data: values are counted when
/// they are built and text is counted before it is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Most bytes the template may write. Default [`DEFAULT_MAX_OUTPUT`].
    pub max_output: usize,
    /// Most bytes of strings, lists and maps functions may build during the
    /// render, counted as they are built (a value built and dropped still
    /// counts). Default [`DEFAULT_MAX_VALUES`].
    pub max_values: usize,
    /// Most steps the render may take. Default [`DEFAULT_MAX_STEPS`].
    pub max_steps: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_output: DEFAULT_MAX_OUTPUT,
            max_values: DEFAULT_MAX_VALUES,
            max_steps: DEFAULT_MAX_STEPS,
        }
    }
}

/// Bytes one list element takes.
pub const ELEMENT: usize = size_of::<Value<'static>>();

/// Bytes one map entry takes beyond its key text and any string it holds.
pub const ENTRY: usize = size_of::<String>() + size_of::<Value<'static>>() + 16;

/// Bytes cloning `v` copies: owned strings are copied; lists and maps are
/// shared and input data is borrowed.
pub fn copied_bytes(v: &Value<'_>) -> usize {
    match v {
        Value::Str(Cow::Owned(s)) => s.len(),
        _ => 0,
    }
}

/// Bytes a function result holds that no other value shares: an owned
/// string, or a list or map nobody else refers to (a result that is one of
/// the arguments, such as `set`'s map, costs nothing again).
pub fn fresh_bytes(v: &Value<'_>) -> usize {
    match v {
        Value::List(items) if Rc::strong_count(items) == 1 => {
            items.iter().map(|item| ELEMENT + copied_bytes(item)).sum()
        }
        Value::Map(map) if Rc::strong_count(map) == 1 => map
            .borrow()
            .iter()
            .map(|(k, item)| ENTRY + k.len() + copied_bytes(item))
            .sum(),
        other => copied_bytes(other),
    }
}

/// What a function may still build in this render.
#[derive(Debug)]
pub struct Meter {
    left: usize,
    charged: usize,
}

impl Meter {
    /// A meter with `left` bytes of the value budget left.
    pub fn new(left: usize) -> Self {
        Self { left, charged: 0 }
    }

    /// Bytes still allowed.
    pub fn left(&self) -> usize {
        self.left.saturating_sub(self.charged)
    }

    /// Fails, naming the size, unless `bytes` more fit. Call it with the
    /// size a result will have before building it.
    pub fn check(&self, bytes: u128) -> Result<(), FuncError> {
        if bytes > self.left() as u128 {
            return Err(FuncError::TooLarge { bytes: Some(bytes) });
        }
        Ok(())
    }

    /// Counts `bytes` built that the result does not show as fresh (an entry
    /// `set` copies into a shared map).
    pub fn charge(&mut self, bytes: usize) -> Result<(), FuncError> {
        self.check(bytes as u128)?;
        self.charged += bytes;
        Ok(())
    }

    /// Bytes counted by [`Meter::charge`].
    pub fn charged(&self) -> usize {
        self.charged
    }
}
