//! `{{range}}`: what it iterates, one pass of its body, the variables it
//! binds, and the taint each item carries.

use std::borrow::Cow;

use crate::ast::{List, Pipe};
use crate::trace::Taint;
use crate::value::Value;

use super::{Exec, Flow, Res, Traced, fail};

/// What a `range` walks over.
enum Items<'a> {
    /// A list, read element by element (not copied).
    List(Value<'a>),
    /// Map entries in key order.
    Map(Vec<(String, Value<'a>)>),
    /// `range N`: 0..N, never materialised.
    Count(i64),
}

impl<'a> Exec<'a> {
    /// `{{range}}` over a list, a map (sorted keys), a count or nil.
    pub(super) fn range(
        &mut self,
        pipe: &'a Pipe,
        then: &'a List,
        otherwise: Option<&'a List>,
        dot: &Traced<'a>,
    ) -> Res<Flow> {
        let mark = self.vars.len();
        let Traced { v, t } = self.pipe_value(pipe, dot)?;
        // The entries of `.Params` each carry their own parameter.
        let per_key = self.is_params(&v);
        let t = t.union(&self.built_taint(&v));
        let items = if v.is_list() {
            Items::List(v)
        } else if let Some(entries) = v.map_entries() {
            Items::Map(entries)
        } else {
            match v {
                Value::Int(n) => {
                    if pipe.vars.len() > 1 {
                        return fail(
                            pipe.span,
                            format!("can't use {} to iterate over {n}", pipe.vars.join(", ")),
                        );
                    }
                    Items::Count(n.max(0))
                }
                Value::Nil => Items::Count(0),
                other => {
                    return fail(
                        pipe.span,
                        format!(
                            "range can't iterate over {}",
                            crate::walk::go_string(&other)
                        ),
                    );
                }
            }
        };
        let empty = match &items {
            Items::List(list) => list.is_empty(),
            Items::Map(entries) => entries.is_empty(),
            Items::Count(n) => *n == 0,
        };
        if empty {
            let flow = match otherwise {
                Some(list) => self.walk(list, dot)?,
                None => Flow::Normal,
            };
            self.vars.truncate(mark);
            return Ok(flow);
        }
        match items {
            Items::List(list) => {
                for i in 0..list.len().unwrap_or(0) {
                    let Some(item) = list.list_get(i) else { break };
                    let key = Traced::clean(Value::Int(i as i64));
                    let item = Traced {
                        v: item,
                        t: t.clone(),
                    };
                    if self.iteration(pipe, then, key, item, mark)? {
                        break;
                    }
                }
            }
            Items::Map(entries) => {
                for (key, item) in entries {
                    let t = match per_key.then(|| self.param_name(&key)).flatten() {
                        Some(name) => Taint::param(name),
                        None => t.clone(),
                    };
                    let key = Traced {
                        v: Value::Str(Cow::Owned(key)),
                        t: t.clone(),
                    };
                    if self.iteration(pipe, then, key, Traced { v: item, t }, mark)? {
                        break;
                    }
                }
            }
            Items::Count(n) => {
                for i in 0..n {
                    let i = Traced::clean(Value::Int(i));
                    if self.iteration(pipe, then, i.clone(), i, mark)? {
                        break;
                    }
                }
            }
        }
        Ok(Flow::Normal)
    }

    /// One pass of a `range` body; true when it ends with `break`.
    fn iteration(
        &mut self,
        pipe: &'a Pipe,
        then: &'a List,
        key: Traced<'a>,
        item: Traced<'a>,
        mark: usize,
    ) -> Res<bool> {
        self.step(pipe.span)?;
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
        Ok(matches!(flow, Flow::Break))
    }
}
