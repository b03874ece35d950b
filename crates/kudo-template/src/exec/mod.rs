//! Evaluator: walks the parse tree against the data with Go semantics
//! (`missingkey=error`, sorted map ranges, non-short-circuit and/or).

use std::borrow::Cow;
use std::collections::HashMap;

use crate::ast::{Arg, BranchKind, Cmd, List, Node, Pipe, Span};
use crate::funcs::{FuncDef, FuncError};
use crate::value::{Value, write_go};

/// Template invocations may nest this deep before we refuse (Go allows more,
/// but we must never overflow the stack).
const MAX_TEMPLATE_DEPTH: usize = 200;

/// An execution error: where, the failing node's text, and what happened.
#[derive(Debug)]
pub struct ExecError {
    pub span: Span,
    pub message: String,
    /// For argument type errors: which argument and the Go type it needed.
    pub arg_type: Option<(usize, &'static str)>,
}

type Res<T> = Result<T, ExecError>;

fn fail<T>(span: Span, message: impl Into<String>) -> Res<T> {
    Err(ExecError {
        span,
        message: message.into(),
        arg_type: None,
    })
}

enum Flow {
    Normal,
    Break,
    Continue,
}

/// Execution state for one render.
pub struct Exec<'a> {
    source: &'a str,
    defines: &'a HashMap<String, List>,
    vars: Vec<(&'a str, Value<'a>)>,
    depth: usize,
    pub out: String,
}

impl<'a> Exec<'a> {
    /// New state with `$` bound to the root data.
    pub fn new(
        source: &'a str,
        defines: &'a HashMap<String, List>,
        root: Value<'a>,
        capacity: usize,
    ) -> Self {
        Exec {
            source,
            defines,
            vars: vec![("$", root)],
            depth: 0,
            out: String::with_capacity(capacity),
        }
    }

    /// Executes a list of nodes with the given dot.
    pub fn run(&mut self, list: &'a List, dot: &Value<'a>) -> Res<()> {
        self.walk(list, dot).map(|_| ())
    }

    fn walk(&mut self, list: &'a List, dot: &Value<'a>) -> Res<Flow> {
        for node in list {
            match self.node(node, dot)? {
                Flow::Normal => {}
                other => return Ok(other),
            }
        }
        Ok(Flow::Normal)
    }

    fn node(&mut self, node: &'a Node, dot: &Value<'a>) -> Res<Flow> {
        match node {
            Node::Text(t) => self.out.push_str(t),
            Node::Action(pipe) => {
                let v = self.pipe(pipe, dot)?;
                if pipe.vars.is_empty() {
                    match v {
                        Value::Nil => self.out.push_str("<no value>"),
                        Value::Str(s) => self.out.push_str(&s),
                        other => write_go(&mut self.out, &other),
                    }
                }
            }
            Node::Branch {
                kind: BranchKind::Range,
                pipe,
                then,
                otherwise,
            } => return self.range(pipe, then, otherwise.as_ref(), dot),
            Node::Branch {
                kind,
                pipe,
                then,
                otherwise,
            } => {
                let mark = self.vars.len();
                let v = self.pipe(pipe, dot)?;
                let flow = if v.truthy() {
                    if *kind == BranchKind::With {
                        self.walk(then, &v)?
                    } else {
                        self.walk(then, dot)?
                    }
                } else if let Some(other) = otherwise {
                    self.walk(other, dot)?
                } else {
                    Flow::Normal
                };
                self.vars.truncate(mark);
                return Ok(flow);
            }
            Node::Template { span, name, pipe } => {
                let Some(body) = self.defines.get(name) else {
                    return fail(*span, format!("no such template {name:?}"));
                };
                let new_dot = match pipe {
                    Some(p) => self.pipe(p, dot)?,
                    None => Value::Nil,
                };
                if self.depth >= MAX_TEMPLATE_DEPTH {
                    return fail(
                        *span,
                        format!("exceeded maximum template depth ({MAX_TEMPLATE_DEPTH})"),
                    );
                }
                self.depth += 1;
                let saved = std::mem::replace(&mut self.vars, vec![("$", new_dot.clone())]);
                let r = self.walk(body, &new_dot);
                self.vars = saved;
                self.depth -= 1;
                r?;
            }
            Node::Break => return Ok(Flow::Break),
            Node::Continue => return Ok(Flow::Continue),
        }
        Ok(Flow::Normal)
    }

    fn range(
        &mut self,
        pipe: &'a Pipe,
        then: &'a List,
        otherwise: Option<&'a List>,
        dot: &Value<'a>,
    ) -> Res<Flow> {
        let mark = self.vars.len();
        let v = self.pipe_value(pipe, dot)?;
        let items: Vec<(Value<'a>, Value<'a>)> = if let Some(list) = v.list_items() {
            list.into_iter()
                .enumerate()
                .map(|(i, item)| (Value::Int(i as i64), item))
                .collect()
        } else if let Some(entries) = v.map_entries() {
            entries
                .into_iter()
                .map(|(k, item)| (Value::Str(Cow::Owned(k)), item))
                .collect()
        } else {
            match v {
                Value::Int(n) => {
                    if pipe.vars.len() > 1 {
                        return fail(
                            pipe.span,
                            format!("can't use {} to iterate over {n}", pipe.vars.join(", ")),
                        );
                    }
                    (0..n.max(0))
                        .map(|i| (Value::Int(i), Value::Int(i)))
                        .collect()
                }
                Value::Nil => Vec::new(),
                other => {
                    return fail(
                        pipe.span,
                        format!(
                            "range can't iterate over {}",
                            crate::value::go_string(&other)
                        ),
                    );
                }
            }
        };
        if items.is_empty() {
            let flow = match otherwise {
                Some(list) => self.walk(list, dot)?,
                None => Flow::Normal,
            };
            self.vars.truncate(mark);
            return Ok(if matches!(flow, Flow::Normal) {
                Flow::Normal
            } else {
                flow
            });
        }
        for (key, item) in items {
            match pipe.vars.as_slice() {
                [] => {}
                [one] => self.vars.push((one, item.clone())),
                [k, v, ..] => {
                    self.vars.push((k, key));
                    self.vars.push((v, item.clone()));
                }
            }
            let flow = self.walk(then, &item)?;
            self.vars.truncate(mark);
            if let Flow::Break = flow {
                break;
            }
        }
        Ok(Flow::Normal)
    }

    /// Evaluates a pipeline and binds/assigns its variables.
    fn pipe(&mut self, pipe: &'a Pipe, dot: &Value<'a>) -> Res<Value<'a>> {
        let v = self.pipe_value(pipe, dot)?;
        if let Some(name) = pipe.vars.first() {
            if pipe.assign {
                if let Some(slot) = self.vars.iter_mut().rev().find(|(n, _)| n == name) {
                    slot.1 = v.clone();
                } else {
                    return fail(pipe.span, format!("undefined variable: {name}"));
                }
            } else {
                self.vars.push((name, v.clone()));
            }
        }
        Ok(v)
    }

    /// Evaluates the commands of a pipeline without touching variables.
    fn pipe_value(&mut self, pipe: &'a Pipe, dot: &Value<'a>) -> Res<Value<'a>> {
        let mut val: Option<Value<'a>> = None;
        for cmd in &pipe.cmds {
            val = Some(self.cmd(cmd, dot, val)?);
        }
        Ok(val.unwrap_or(Value::Nil))
    }

    fn cmd(&mut self, cmd: &'a Cmd, dot: &Value<'a>, piped: Option<Value<'a>>) -> Res<Value<'a>> {
        let Some(first) = cmd.args.first() else {
            return fail(cmd.span, "empty command");
        };
        if let Arg::Func(name, def, _) = first {
            let mut args = Vec::with_capacity(cmd.args.len());
            for a in &cmd.args[1..] {
                args.push(self.arg(a, dot)?);
            }
            if let Some(p) = piped {
                args.push(p);
            }
            return call(name, def, &args, cmd.span)
                .map_err(|e| self.locate_arg_error(e, &cmd.args[1..]));
        }
        if cmd.args.len() > 1 || piped.is_some() {
            let last_field = match first {
                Arg::Field(names, _) | Arg::Var(_, names, _) | Arg::Sub(_, names, _) => {
                    names.last()
                }
                _ => None,
            };
            if let Some(name) = last_field {
                return fail(
                    first.span(),
                    format!("{name} is not a method but has arguments"),
                );
            }
            return fail(
                first.span(),
                format!(
                    "can't give argument to non-function {}",
                    self.describe(first)
                ),
            );
        }
        if let Arg::Nil(span) = first {
            return fail(*span, "nil is not a command");
        }
        self.arg(first, dot)
    }

    /// Go reports a bad argument at the argument itself, and literals with
    /// their own wording (`expected string; found 5`).
    fn locate_arg_error(&self, mut e: ExecError, explicit: &[Arg]) -> ExecError {
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

    fn describe(&self, arg: &Arg) -> String {
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

    fn arg(&mut self, arg: &'a Arg, dot: &Value<'a>) -> Res<Value<'a>> {
        match arg {
            Arg::Dot(_) => Ok(dot.clone()),
            Arg::Nil(_) => Ok(Value::Nil),
            Arg::Bool(b, _) => Ok(Value::Bool(*b)),
            Arg::Int(i, _) => Ok(Value::Int(*i)),
            Arg::Float(f, _) => Ok(Value::Float(*f)),
            Arg::Str(s, _) => Ok(Value::Str(Cow::Borrowed(s))),
            Arg::Func(name, def, span) => call(name, def, &[], *span),
            Arg::Field(names, span) => fields(dot.clone(), names, *span),
            Arg::Var(name, names, span) => {
                let Some((_, v)) = self.vars.iter().rev().find(|(n, _)| n == name) else {
                    return fail(*span, format!("undefined variable: {name}"));
                };
                fields(v.clone(), names, *span)
            }
            Arg::Sub(pipe, names, span) => {
                let v = self.pipe_value(pipe, dot)?;
                fields(v, names, *span)
            }
        }
    }
}

/// Follows a field chain with `missingkey=error`.
fn fields<'a>(mut v: Value<'a>, names: &[String], span: Span) -> Res<Value<'a>> {
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

fn call<'a>(name: &str, def: &FuncDef, args: &[Value<'a>], span: Span) -> Res<Value<'a>> {
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
    (def.f)(args).map_err(|e| match e {
        FuncError::Arg(message) => ExecError {
            span,
            message,
            arg_type: None,
        },
        FuncError::Type {
            index,
            expected,
            message,
        } => ExecError {
            span,
            message,
            arg_type: Some((index, expected)),
        },
        FuncError::Call(m) => ExecError {
            span,
            message: format!("error calling {name}: {m}"),
            arg_type: None,
        },
    })
}
