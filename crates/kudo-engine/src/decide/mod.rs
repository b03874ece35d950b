//! `decide_in_place`: one pure step of the reconcile loop, updating the
//! status where it is; `decide` is the same on a copy.
//!
//! A pass runs named stages in a fixed order (each in [`stages`]): the
//! order is part of the behaviour, since later stages see what earlier
//! ones changed in the working status and the actions come out in the
//! order the stages push them.

mod stages;

use kudo_api::InstanceStatus;

use crate::model::{Decision, Effects, Input};
use crate::plan::lifecycle::{AutoPlan, Before};
use crate::plan::operations;
use crate::plan::walk::WalkOutput;
use crate::plan::{namespace_hold, suppression, windows};
use stages::Pass;

/// See [`crate::decide`].
pub fn decide(input: Input<'_>) -> Decision {
    let mut status = input.instance.status.clone().unwrap_or_default();
    let effects = decide_in_place(input, &mut status);
    Decision {
        status,
        actions: effects.actions,
        requeue_after: effects.requeue_after,
    }
}

/// See [`crate::decide_in_place`].
pub fn decide_in_place(input: Input<'_>, st: &mut InstanceStatus) -> Effects {
    let before = Before::of(st);
    let mut out = WalkOutput::default();
    let Some(ov) = stages::usable_operator_version(&input, &mut out) else {
        return stages::without_operator_version(&input, st, out);
    };
    let inst = input.instance;
    let window = windows::Windows::at(
        &inst.spec.maintenance_windows,
        &input.config.default_maintenance_windows,
        input.now,
    );
    let pass = Pass::new(
        &input,
        AutoPlan {
            instance: inst,
            ov,
            config: input.config,
            manual_suppression: suppression::active_manual(&inst.spec.suppressions, input.now),
            namespace_hold: input
                .observed
                .namespace
                .as_ref()
                .and_then(|ns| namespace_hold::hold(ns, input.now)),
            windows: &window,
            now: input.now,
        },
    );
    let mut applied_ops = operations::Applied::default();

    let mut changed = pass.reshape(st);
    changed |= pass.clear_suppressions(st, &mut applied_ops);
    pass.ask_for_finalizer(&mut out);
    if let Some(why) = input
        .observed
        .namespace
        .as_ref()
        .and_then(namespace_hold::malformed)
    {
        out.push_blocker(why);
    }
    let picked = pass.pick_plan(st, &mut out);
    changed |= picked.changed;
    changed |= pass.automatic_plans(&picked, st, &mut out);
    changed |= pass.apply_operations(st, &mut applied_ops, &mut out);
    pass.walk(st, &mut out);
    changed |= out.changed;
    changed |= pass.finish(&before, &picked, &applied_ops, st, &mut out);
    changed |= pass.readiness(st);
    pass.release_on_deletion(st, &mut out);
    changed |= pass.record(st, &mut out);
    Effects {
        requeue_after: pass.requeue_after(&out),
        actions: out.actions,
        changed,
    }
}
