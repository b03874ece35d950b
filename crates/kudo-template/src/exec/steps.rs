//! The step budget: every node executed, range iteration, function call
//! (and the elements it walks) and template call is a step, so a template
//! that loops or recurses without bound fails instead of running for hours.

use crate::ErrorKind;
use crate::ast::Span;

use super::{Exec, ExecError, Res};

impl Exec<'_> {
    /// Counts one step.
    pub(super) fn step(&mut self, span: Span) -> Res<()> {
        self.charge_steps(1, span)
    }

    /// Counts `n` steps, failing once the budget is spent.
    pub(super) fn charge_steps(&mut self, n: u64, span: Span) -> Res<()> {
        self.steps = self.steps.saturating_add(n);
        if self.steps > self.limits.max_steps {
            let max = self.limits.max_steps;
            return Err(ExecError {
                span,
                message: format!(
                    "step budget exceeded: the render took more than {max} steps (actions, \
                     range iterations, function calls and the elements they walk, template \
                     calls); a loop or recursion is too deep for this render"
                ),
                arg_type: None,
                kind: ErrorKind::StepBudget,
            });
        }
        Ok(())
    }

    /// Steps taken so far.
    pub fn steps(&self) -> u64 {
        self.steps
    }
}
