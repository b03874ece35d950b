//! Field-reference walker for the package verifier: which `.Params.X` and
//! which root fields (`.Name`, `$.Namespace`) a template uses.
//!
//! `.X` counts as a root field only where dot is still the root context
//! (outside `range`/`with` bodies and `define`s); `$.X` counts everywhere.

use std::collections::BTreeSet;

use crate::ast::{Arg, BranchKind, List, Node, Pipe};

/// Collected references.
#[derive(Default)]
pub struct Refs {
    pub params: BTreeSet<String>,
    pub roots: BTreeSet<String>,
}

impl Refs {
    fn record(&mut self, fields: &[String]) {
        if let Some(first) = fields.first() {
            self.roots.insert(first.clone());
            if first == "Params"
                && let Some(param) = fields.get(1)
            {
                self.params.insert(param.clone());
            }
        }
    }
}

/// Walks a list; `root_dot` says whether `.` is the root context here.
pub fn walk(list: &List, root_dot: bool, refs: &mut Refs) {
    for node in list {
        match node {
            Node::Text(..) | Node::Break | Node::Continue => {}
            Node::Action(pipe) => walk_pipe(pipe, root_dot, refs),
            Node::Template { pipe, .. } => {
                if let Some(p) = pipe {
                    walk_pipe(p, root_dot, refs);
                }
            }
            Node::Branch {
                kind,
                pipe,
                then,
                otherwise,
            } => {
                walk_pipe(pipe, root_dot, refs);
                let body_root = root_dot && *kind == BranchKind::If;
                walk(then, body_root, refs);
                if let Some(other) = otherwise {
                    walk(other, root_dot, refs);
                }
            }
        }
    }
}

fn walk_pipe(pipe: &Pipe, root_dot: bool, refs: &mut Refs) {
    for cmd in &pipe.cmds {
        for arg in &cmd.args {
            walk_arg(arg, root_dot, refs);
        }
    }
}

fn walk_arg(arg: &Arg, root_dot: bool, refs: &mut Refs) {
    match arg {
        Arg::Field(fields, _) if root_dot => refs.record(fields),
        Arg::Var(name, fields, _) if name == "$" => refs.record(fields),
        Arg::Sub(pipe, _, _) => walk_pipe(pipe, root_dot, refs),
        _ => {}
    }
}
