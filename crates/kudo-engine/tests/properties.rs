//! Property tests over random plan trees and random event sequences.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::cell::Cell;
use std::time::Duration;

use kudo_api::{ExecutionStatus as S, PlanAction, PlanStatus, Strategy as PlanStrategy};
use kudo_engine::{Action, Decision, Observed, TaskOutcome};
use proptest::prelude::*;
use support::*;

const STRATEGIES: [Option<&str>; 5] = [
    Some("serial"),
    Some("parallel"),
    None,
    Some("serial-canary"),
    Some("parallel-canary"),
];

#[derive(Debug, Clone)]
struct Tree {
    plan_serial: bool,
    phases: Vec<(usize, usize)>, // (strategy index, steps)
}

fn tree() -> impl Strategy<Value = Tree> {
    (
        any::<bool>(),
        prop::collection::vec((0..STRATEGIES.len(), 1usize..5), 1..4),
    )
        .prop_map(|(plan_serial, phases)| Tree {
            plan_serial,
            phases,
        })
}

fn build(t: &Tree) -> Sim {
    let names: Vec<String> = (0..t.phases.len()).map(|i| format!("p{i}")).collect();
    let defs: Vec<_> = t
        .phases
        .iter()
        .zip(&names)
        .map(|((s, n), name)| phase(name, STRATEGIES[*s], *n))
        .collect();
    let strategy = if t.plan_serial { Some("serial") } else { None };
    let mut sim = Sim::new(
        instance("a"),
        ov(
            "a",
            vec![
                ("deploy", plan(strategy, &defs)),
                ("update", simple_plan(1)),
            ],
            vec![support::param("v", None)],
        ),
    );
    sim.config.auto_suppress_on_failure = false;
    sim
}

/// An event: outcomes of this reconcile's tasks (by choice codes), a clock
/// advance, and maybe a plan operation.
#[derive(Debug, Clone)]
struct Event {
    outcomes: Vec<u8>,
    advance_secs: u64,
    op: Option<(u8, u8, u8)>,
}

fn events() -> impl Strategy<Value = Vec<Event>> {
    prop::collection::vec(
        (
            prop::collection::vec(0u8..10, 1..8),
            0u64..20,
            prop::option::weighted(0.3, (0u8..6, 0u8..4, 0u8..5)),
        )
            .prop_map(|(outcomes, advance_secs, op)| Event {
                outcomes,
                advance_secs,
                op,
            }),
        1..25,
    )
}

fn outcome(code: u8) -> TaskOutcome {
    match code {
        0..=4 => TaskOutcome::Done,
        5..=6 => TaskOutcome::InProgress {
            message: "waiting".into(),
        },
        7..=8 => TaskOutcome::Transient {
            message: "flaky".into(),
        },
        _ => TaskOutcome::Fatal {
            message: "broken".into(),
        },
    }
}

fn op_for(sim: &Sim, id: usize, (a, p, s): (u8, u8, u8)) -> kudo_api::PlanOperation {
    let action = [
        PlanAction::Continue,
        PlanAction::Continue,
        PlanAction::ForceComplete,
        PlanAction::Restart,
        PlanAction::Pause,
        PlanAction::Resume,
    ][a as usize % 6];
    let plan = &sim.ov.spec.plans["deploy"];
    let phase = &plan.phases[p as usize % plan.phases.len()];
    let step = (s < 4).then(|| phase.steps[s as usize % phase.steps.len()].name.as_str());
    let step = if action == PlanAction::Continue {
        None
    } else {
        step
    };
    op(&format!("op{id}"), action, Some(&phase.name), step)
}

/// Runs a reconcile, checking invariants after every pass.
fn reconcile_checked(sim: &mut Sim, codes: &[u8]) -> Decision {
    let before = sim.inst.status.clone().unwrap_or_default();
    let i = Cell::new(0usize);
    let d = sim.reconcile(|_| {
        let c = codes[i.get() % codes.len()];
        i.set(i.get() + 1);
        outcome(c)
    });
    check_invariants(sim, &before, &d);
    d
}

fn started(s: &kudo_api::StepStatus) -> bool {
    matches!(s.status(), S::InProgress | S::Error | S::FatalError)
        || (s.status() == S::Complete && s.forced.is_none())
}

fn check_invariants(sim: &Sim, before: &kudo_api::InstanceStatus, d: &Decision) {
    let ps = &d.status.plan_status["deploy"];
    let plan = &sim.ov.spec.plans["deploy"];
    // A parent is COMPLETE iff all its children are.
    for phase in &ps.phases {
        let all = phase.steps.iter().all(|s| s.status() == S::Complete);
        if ps.status().is_running() || ps.status() == S::Complete {
            assert_eq!(
                phase.status() == S::Complete,
                all,
                "phase {} {:?}",
                phase.name,
                phase
            );
        }
    }
    let all_phases = ps.phases.iter().all(|p| p.status() == S::Complete);
    if ps.status() != S::FatalError {
        assert_eq!(ps.status() == S::Complete, all_phases, "plan {ps:?}");
    }
    // Serial phases never run step k+1 before step k is COMPLETE.
    for (def, phase) in plan.phases.iter().zip(&ps.phases) {
        let serial = PlanStrategy::parse(def.strategy.as_deref())
            .unwrap()
            .is_serial();
        if !serial {
            continue;
        }
        // Steps that started in this reconcile (were not started before)
        // have every earlier step COMPLETE.
        let was_started = |k: usize| {
            before
                .plan_status
                .get("deploy")
                .filter(|b| b.uid == ps.uid)
                .and_then(|b| b.phase(&phase.name))
                .and_then(|p| p.steps.get(k))
                .is_some_and(started)
        };
        for k in 1..phase.steps.len() {
            if started(&phase.steps[k]) && !was_started(k) {
                assert!(
                    phase.steps[..k].iter().all(|s| s.status() == S::Complete),
                    "serial phase {} started step {k} early: {phase:?}",
                    phase.name
                );
            }
        }
    }
}

fn fatal_snapshot(ps: &PlanStatus) -> (Option<String>, S) {
    (ps.uid.clone(), ps.status())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn invariants_hold_over_random_runs(t in tree(), evs in events()) {
        let mut sim = build(&t);
        for (n, ev) in evs.iter().enumerate() {
            if let Some(o) = ev.op {
                let op = op_for(&sim, n, o);
                sim.operate(op);
            }
            reconcile_checked(&mut sim, &ev.outcomes);
            sim.advance(Duration::from_secs(ev.advance_secs));
        }
    }

    #[test]
    fn fatal_error_is_absorbing_until_a_new_plan_starts(t in tree(), evs in events()) {
        let mut sim = build(&t);
        let mut fatal: Option<(Option<String>, S)> = None;
        for ev in &evs {
            let d = reconcile_checked(&mut sim, &ev.outcomes);
            let ps = &d.status.plan_status["deploy"];
            if let Some(f) = &fatal {
                prop_assert_eq!(&fatal_snapshot(ps), f);
                let runs = d.actions.iter().any(|a| matches!(a, Action::RunTask { .. }));
                prop_assert!(!runs, "a FATAL plan ran tasks");
            } else if ps.status() == S::FatalError {
                fatal = Some(fatal_snapshot(ps));
            }
            sim.advance(Duration::from_secs(ev.advance_secs));
        }
        if fatal.is_some() {
            // a new plan (parameter change -> update) starts normally
            sim.set_params(&[("v", "new")]);
            sim.all_done();
            prop_assert_eq!(sim.plan_status("update"), S::Complete);
        }
    }

    #[test]
    fn operations_apply_once_per_id(t in tree(), evs in events(), o in (0u8..6, 0u8..4, 0u8..5)) {
        let mut sim = build(&t);
        for ev in evs.iter().take(3) {
            reconcile_checked(&mut sim, &ev.outcomes);
        }
        let op = op_for(&sim, 999, o);
        sim.operate(op);
        let first = sim.decide_once(&Observed::default());
        // Store the result and decide again: the same id must not act twice.
        sim.inst.status = Some(first.status.clone());
        let second = sim.decide_once(&Observed::default());
        prop_assert_eq!(first.status.operations.len(), second.status.operations.len());
        let steps = |d: &Decision| -> Vec<(S, Option<bool>, Option<u32>)> {
            d.status.plan_status["deploy"].phases.iter().flat_map(|p| {
                p.steps.iter().map(|s| (s.status(), s.forced, p.canary_approvals))
            }).collect()
        };
        prop_assert_eq!(steps(&first), steps(&second));
    }

    #[test]
    fn decide_is_deterministic(t in tree(), evs in events()) {
        let mut sim = build(&t);
        for ev in &evs {
            reconcile_checked(&mut sim, &ev.outcomes);
            let a = sim.decide_once(&Observed::default());
            let b = sim.decide_once(&Observed::default());
            prop_assert_eq!(a, b);
            sim.advance(Duration::from_secs(ev.advance_secs));
        }
    }
}
