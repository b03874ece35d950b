//! Evaluator: walks the parse tree against the data with Go semantics
//! (`missingkey=error`, sorted map ranges, non-short-circuit and/or), within
//! the render's [`Limits`]: output is counted before it is written, values
//! built by functions as they are built, and every node, range iteration,
//! function call and template call is a step of the step budget. Each value
//! is carried with its [`Taint`], so the output knows which of its text
//! carries parameter values.

mod call;
mod range;
mod steps;

use std::borrow::Cow;
use std::collections::HashMap;

use crate::ErrorKind;
use crate::ast::{Arg, BranchKind, Cmd, List, Node, Pipe, Span};
use crate::limits::Limits;
use crate::trace::{TRACED_ROOT, Taint, ValueText};
use crate::value::Value;
use crate::walk::{Overflow, write_go};

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
    /// Which kind of failure (a budget, or Go's own errors).
    pub kind: ErrorKind,
}

type Res<T> = Result<T, ExecError>;

fn fail<T>(span: Span, message: impl Into<String>) -> Res<T> {
    Err(ExecError {
        span,
        message: message.into(),
        arg_type: None,
        kind: ErrorKind::Execute,
    })
}

enum Flow {
    Normal,
    Break,
    Continue,
}

/// A value and the parameters it carries.
#[derive(Clone)]
pub struct Traced<'a> {
    pub v: Value<'a>,
    pub t: Taint<'a>,
}

impl<'a> Traced<'a> {
    fn clean(v: Value<'a>) -> Self {
        Self {
            v,
            t: Taint::clean(),
        }
    }
}

/// Execution state for one render.
pub struct Exec<'a> {
    source: &'a str,
    defines: &'a HashMap<String, List>,
    vars: Vec<(&'a str, Traced<'a>)>,
    depth: usize,
    limits: Limits,
    /// Bytes of values functions built so far.
    built: usize,
    /// Steps taken so far (nodes, range iterations, calls).
    steps: u64,
    /// The root data and its `.Params`, recognised by address.
    root: Option<&'a serde_json::Value>,
    params: Option<&'a serde_json::Value>,
    /// What `set` stored into maps built during the render: maps are
    /// shared, so anything read from one may carry it.
    set_taint: Taint<'a>,
    pub out: String,
    /// Whether to record [`Exec::traced`].
    trace: bool,
    /// Output that carries parameter values, with the byte offset of the
    /// action that wrote it.
    pub traced: Vec<(ValueText<'a>, usize)>,
}

impl<'a> Exec<'a> {
    /// New state with `$` bound to the root data.
    pub fn new(
        source: &'a str,
        defines: &'a HashMap<String, List>,
        data: &'a serde_json::Value,
        limits: Limits,
        trace: bool,
    ) -> Self {
        Exec {
            source,
            defines,
            vars: vec![("$", Traced::clean(Value::from_json(data)))],
            depth: 0,
            limits,
            built: 0,
            steps: 0,
            root: Some(data),
            params: data.get(TRACED_ROOT),
            set_taint: Taint::clean(),
            out: String::with_capacity((source.len() + 64).min(limits.max_output)),
            trace,
            traced: Vec::new(),
        }
    }

    /// Executes the template body with dot bound to the root data.
    pub fn run(&mut self, list: &'a List) -> Res<()> {
        let dot = self.vars[0].1.clone();
        self.walk(list, &dot).map(|_| ())
    }

    fn walk(&mut self, list: &'a List, dot: &Traced<'a>) -> Res<Flow> {
        for node in list {
            match self.node(node, dot)? {
                Flow::Normal => {}
                other => return Ok(other),
            }
        }
        Ok(Flow::Normal)
    }

    /// The output budget error for writing `adding` more bytes at `span`.
    fn over_output(&self, span: Span, adding: Option<usize>) -> ExecError {
        let max = self.limits.max_output;
        let message = match adding {
            Some(n) => format!(
                "output budget exceeded: writing {n} more bytes would bring the output to {} bytes, \
                 over the limit of {max} bytes",
                self.out.len() as u128 + n as u128
            ),
            None => format!(
                "output budget exceeded: writing this value would bring the output over the limit \
                 of {max} bytes"
            ),
        };
        ExecError {
            span,
            message,
            arg_type: None,
            kind: ErrorKind::OutputBudget,
        }
    }

    /// Appends `text` unless it would pass the output budget. The buffer
    /// grows by doubling, but never past the budget.
    fn emit(&mut self, span: Span, text: &str) -> Res<()> {
        let needed = self.out.len() as u128 + text.len() as u128;
        if needed > self.limits.max_output as u128 {
            return Err(self.over_output(span, Some(text.len())));
        }
        let needed = needed as usize;
        if needed > self.out.capacity() {
            let target = (self.out.capacity() * 2)
                .max(needed)
                .min(self.limits.max_output);
            self.out.reserve_exact(target - self.out.len());
        }
        self.out.push_str(text);
        Ok(())
    }

    fn node(&mut self, node: &'a Node, dot: &Traced<'a>) -> Res<Flow> {
        self.step(node_span(node))?;
        match node {
            Node::Text(t, span) => self.emit(*span, t)?,
            Node::Action(pipe) => {
                let Traced { v, t } = self.pipe(pipe, dot)?;
                if pipe.vars.is_empty() {
                    let start = self.out.len();
                    match v {
                        Value::Nil => self.emit(pipe.span, "<no value>")?,
                        Value::Str(s) => self.emit(pipe.span, &s)?,
                        other => {
                            let start = self.out.len();
                            let written = write_go(&mut self.out, &other, self.limits.max_output);
                            if let Err(overflow) = written {
                                self.out.truncate(start);
                                return match overflow {
                                    Overflow::TooLong => Err(self.over_output(pipe.span, None)),
                                    Overflow::TooDeep => fail(pipe.span, overflow.describe()),
                                };
                            }
                        }
                    }
                    let end = self.out.len();
                    if self.trace
                        && end > start
                        && let Some(text) = t.text(start, end)
                    {
                        self.traced.push((text, pipe.span.start));
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
                let flow = if v.v.truthy() {
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
                    None => Traced::clean(Value::Nil),
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

    /// Evaluates a pipeline and binds/assigns its variables.
    fn pipe(&mut self, pipe: &'a Pipe, dot: &Traced<'a>) -> Res<Traced<'a>> {
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
    fn pipe_value(&mut self, pipe: &'a Pipe, dot: &Traced<'a>) -> Res<Traced<'a>> {
        let mut val: Option<Traced<'a>> = None;
        for cmd in &pipe.cmds {
            val = Some(self.cmd(cmd, dot, val)?);
        }
        Ok(val.unwrap_or(Traced::clean(Value::Nil)))
    }

    fn cmd(
        &mut self,
        cmd: &'a Cmd,
        dot: &Traced<'a>,
        piped: Option<Traced<'a>>,
    ) -> Res<Traced<'a>> {
        let Some(first) = cmd.args.first() else {
            return fail(cmd.span, "empty command");
        };
        if let Arg::Func(name, def, _) = first {
            let mut args = Vec::with_capacity(cmd.args.len());
            let mut taint = Taint::clean();
            for (i, a) in cmd.args[1..].iter().enumerate() {
                let traced = self.arg(a, dot)?;
                taint = taint.union(&self.arg_taint(name, i, &args, &traced));
                args.push(traced.v);
            }
            if let Some(p) = piped {
                taint = taint.union(&self.arg_taint(name, args.len(), &args, &p));
                args.push(p.v);
            }
            return self
                .call(name, def, args, taint, cmd.span)
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

    fn arg(&mut self, arg: &'a Arg, dot: &Traced<'a>) -> Res<Traced<'a>> {
        let clean = |v| Ok(Traced::clean(v));
        match arg {
            Arg::Dot(_) => Ok(dot.clone()),
            Arg::Nil(_) => clean(Value::Nil),
            Arg::Bool(b, _) => clean(Value::Bool(*b)),
            Arg::Int(i, _) => clean(Value::Int(*i)),
            Arg::Float(f, _) => clean(Value::Float(*f)),
            Arg::Str(s, _) => clean(Value::Str(Cow::Borrowed(s))),
            Arg::Func(name, def, span) => self.call(name, def, Vec::new(), Taint::clean(), *span),
            Arg::Field(names, span) => self.fields(dot.clone(), names, *span),
            Arg::Var(name, names, span) => {
                let Some((_, v)) = self.vars.iter().rev().find(|(n, _)| n == name) else {
                    return fail(*span, format!("undefined variable: {name}"));
                };
                self.fields(v.clone(), names, *span)
            }
            Arg::Sub(pipe, names, span) => {
                let v = self.pipe_value(pipe, dot)?;
                self.fields(v, names, *span)
            }
        }
    }

    /// Follows a field chain, working out what the result carries: a field
    /// of the root's `.Params` (or of `.Params` itself) carries that
    /// parameter; anything else carries what its container carried.
    fn fields(&self, container: Traced<'a>, names: &'a [String], span: Span) -> Res<Traced<'a>> {
        let t = match names.first() {
            None => container.t.clone(),
            Some(first) if self.is_root(&container.v) && first == TRACED_ROOT => {
                match names.get(1) {
                    Some(param) => Taint::param(param),
                    None => Taint::all_params(),
                }
            }
            Some(first) if self.is_params(&container.v) => Taint::param(first),
            Some(_) => container.t.union(&self.built_taint(&container.v)),
        };
        let v = call::fields(container.v, names, span)?;
        Ok(Traced { v, t })
    }

    fn is_root(&self, v: &Value<'a>) -> bool {
        matches!((v, self.root), (Value::Json(j), Some(r)) if std::ptr::eq(*j, r))
    }

    fn is_params(&self, v: &Value<'a>) -> bool {
        matches!((v, self.params), (Value::Json(j), Some(p)) if std::ptr::eq(*j, p))
    }

    /// A key of `.Params`, borrowed from the data.
    fn param_name(&self, key: &str) -> Option<&'a str> {
        let (name, _) = self.params?.as_object()?.get_key_value(key)?;
        Some(name.as_str())
    }

    /// What argument `i` of a call of `func` carries (`index .Params "X"`
    /// reads one parameter).
    fn arg_taint(&self, func: &str, i: usize, before: &[Value<'a>], arg: &Traced<'a>) -> Taint<'a> {
        match (func, i) {
            ("index", 0) if self.is_params(&arg.v) => Taint::clean(),
            ("index", 1) if before.first().is_some_and(|c| self.is_params(c)) => arg
                .v
                .as_str()
                .and_then(|key| self.param_name(key))
                .map_or_else(Taint::all_params, Taint::param),
            _ => arg.t.union(&self.built_taint(&arg.v)),
        }
    }

    /// What a list or map built during the render may carry through `set`.
    fn built_taint(&self, v: &Value<'a>) -> Taint<'a> {
        match v {
            Value::List(_) | Value::Map(_) => self.set_taint.clone(),
            _ => Taint::clean(),
        }
    }
}

/// Where a node is, for the step budget's error.
fn node_span(node: &Node) -> Span {
    match node {
        Node::Text(_, span) | Node::Template { span, .. } => *span,
        Node::Action(pipe) | Node::Branch { pipe, .. } => pipe.span,
        Node::Break | Node::Continue => Span { start: 0, end: 0 },
    }
}
