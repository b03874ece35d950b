//! Calling functions within the value budget, and how their failures are
//! reported (at the argument for type errors, with Go's wording).

use crate::ErrorKind;
use crate::ast::{Arg, Span};
use crate::funcs::{FuncDef, FuncError, Imp};
use crate::limits::{Meter, fresh_bytes};
use crate::trace::Taint;
use crate::value::Value;

use super::{Exec, ExecError, Res, Traced, fail};

impl<'a> Exec<'a> {
    /// Calls a function with what is left of the value and step budgets,
    /// then counts what the result holds that nothing else shares. The
    /// result carries what every argument carried.
    pub(super) fn call(
        &mut self,
        name: &str,
        def: &FuncDef,
        args: Vec<Value<'a>>,
        taint: Taint<'a>,
        span: Span,
    ) -> Res<Traced<'a>> {
        let value = self.call_values(name, def, &args, span)?;
        if name == "set" {
            // `set` changes a shared map: whatever reads maps later may see it.
            self.set_taint = self.set_taint.union(&taint);
        }
        Ok(Traced {
            v: value,
            t: taint.through(name),
        })
    }

    fn call_values(
        &mut self,
        name: &str,
        def: &FuncDef,
        args: &[Value<'a>],
        span: Span,
    ) -> Res<Value<'a>> {
        if args.len() < def.min || def.max.is_some_and(|m| args.len() > m) {
            let message = match def.max {
                Some(m) if m == def.min => format!(
                    "wrong number of args for {name}: want {m} got {}",
                    args.len()
                ),
                Some(m) if args.len() > m => {
                    format!(
                        "wrong number of args for {name}: want at most {m} got {}",
                        args.len()
                    )
                }
                _ => format!(
                    "wrong number of args for {name}: want at least {} got {}",
                    def.min,
                    args.len()
                ),
            };
            return fail(span, message);
        }
        self.charge_steps(call_steps(name, args), span)?;
        let left = self.limits.max_values.saturating_sub(self.built);
        let mut meter = Meter::new(left);
        let result = match def.f {
            Imp::Plain(f) => f(args),
            Imp::Sized(f) => f(args, &mut meter),
        };
        let value = result.map_err(|e| self.func_error(name, e, span, left))?;
        let cost = meter.charged() + fresh_bytes(&value);
        if cost > left {
            let e = FuncError::TooLarge {
                bytes: Some(cost as u128),
            };
            return Err(self.func_error(name, e, span, left));
        }
        self.built += cost;
        Ok(value)
    }

    fn func_error(&self, name: &str, e: FuncError, span: Span, left: usize) -> ExecError {
        let (message, arg_type, kind) = match e {
            FuncError::Arg(message) => (message, None, ErrorKind::Execute),
            FuncError::Type {
                index,
                expected,
                message,
            } => (message, Some((index, expected)), ErrorKind::Execute),
            FuncError::Call(m) => (
                format!("error calling {name}: {m}"),
                None,
                ErrorKind::Execute,
            ),
            FuncError::TooLarge { bytes } => {
                let size = match bytes {
                    Some(b) => format!("{b} bytes"),
                    None => format!("more than {left} bytes"),
                };
                let max = self.limits.max_values;
                (
                    format!(
                        "error calling {name}: value budget exceeded: the result would take \
                         {size}, but only {left} bytes are left of the {max}-byte budget for \
                         values built during one render"
                    ),
                    None,
                    ErrorKind::ValueBudget,
                )
            }
        };
        ExecError {
            span,
            message,
            arg_type,
            kind,
        }
    }

    /// Go reports a bad argument at the argument itself, and literals with
    /// their own wording (`expected string; found 5`).
    pub(super) fn locate_arg_error(&self, mut e: ExecError, explicit: &[Arg]) -> ExecError {
        let Some((index, expected)) = e.arg_type else {
            return e;
        };
        let Some(node) = explicit.get(index) else {
            return e;
        };
        let span = node.span();
        e.span = span;
        let text = self.source.get(span.start..span.end).unwrap_or("");
        let literal = matches!(
            node,
            Arg::Str(..) | Arg::Int(..) | Arg::Float(..) | Arg::Bool(..) | Arg::Nil(..)
        );
        if literal {
            e.message = match (node, expected) {
                (Arg::Nil(_), _) => format!("cannot assign nil to {expected}"),
                (_, "string") => format!("expected string; found {text}"),
                (_, "int") => format!("expected integer; found {text}"),
                (_, "bool") => format!("expected bool; found {text}"),
                _ => format!("can't handle {text} for arg of type {expected}"),
            };
        }
        e
    }

    pub(super) fn describe(&self, arg: &Arg) -> String {
        match arg {
            Arg::Field(names, _) => format!(".{}", names.join(".")),
            Arg::Var(name, fields, _) => {
                let mut s = name.clone();
                for f in fields {
                    s.push('.');
                    s.push_str(f);
                }
                s
            }
            Arg::Str(s, _) => format!("{s:?}"),
            Arg::Int(i, _) => i.to_string(),
            Arg::Float(f, _) => crate::value::format_float_g(*f),
            Arg::Bool(b, _) => b.to_string(),
            Arg::Dot(_) => ".".into(),
            Arg::Nil(_) => "nil".into(),
            Arg::Func(n, _, _) => n.clone(),
            Arg::Sub(..) => "(pipeline)".into(),
        }
    }
}

/// Bytes of string arguments that cost one step (functions scan them:
/// `contains`, `eq`, `replace`, ...).
const STRING_BYTES_PER_STEP: usize = 1024;

/// Steps a call costs: one, plus the elements of the lists and maps it is
/// given (functions walk them) and one per KiB of its string arguments,
/// and the square for `uniq`, which compares every element with every
/// other.
fn call_steps(name: &str, args: &[Value<'_>]) -> u64 {
    let elements: u64 = args
        .iter()
        .map(|a| match a {
            Value::List(_) | Value::Map(_) | Value::Json(_) => a.len().unwrap_or(0) as u64,
            Value::Str(s) => (s.len() / STRING_BYTES_PER_STEP) as u64,
            _ => 0,
        })
        .sum();
    let walk = if name == "uniq" {
        elements.saturating_mul(elements)
    } else {
        elements
    };
    walk.saturating_add(1)
}

/// Follows a field chain with `missingkey=error`.
pub(super) fn fields<'a>(mut v: Value<'a>, names: &[String], span: Span) -> Res<Value<'a>> {
    for name in names {
        v = match &v {
            m if m.is_map() => match m.map_get(name) {
                Some(next) => next,
                None => return fail(span, format!("map has no entry for key {name:?}")),
            },
            Value::Nil => {
                return fail(
                    span,
                    format!("nil pointer evaluating interface {{}}.{name}"),
                );
            }
            other => {
                return fail(
                    span,
                    format!("can't evaluate field {name} in type {}", other.type_name()),
                );
            }
        };
    }
    Ok(v)
}
