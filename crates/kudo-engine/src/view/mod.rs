//! Borrowed views of an Instance: what the admission rules and plan
//! selection read, with text borrowed from wherever it was read.
//!
//! The webhook fills views straight from the request body, so a review
//! allocates almost nothing; the controller and tests make them from an
//! owned [`Instance`] with `From`, which borrows. Both then run the same
//! rules. A rule that needs a field the views lack must add it here, to
//! the `From` conversions, and to the webhook's decoder.

use std::borrow::Cow;
use std::fmt;
use std::ops::Range;

use kudo_api::{
    AutoSuppression, ExecutionStatus, Instance, InstanceSpec, InstanceStatus, MaintenanceWindow,
    ObjectReference, PlanExecution, PlanOperation, Suppression, Time,
};
use smallvec::SmallVec;

mod params;

pub use params::Params;

/// Text borrowed from the source, or owned when it had to be unescaped.
pub type Text<'a> = Cow<'a, str>;

/// An Instance as the rules read it.
#[derive(Clone, Debug, Default)]
pub struct InstanceView<'a> {
    /// `metadata.name`.
    pub name: Option<Text<'a>>,
    /// `metadata.namespace`.
    pub namespace: Option<Text<'a>>,
    /// `metadata.uid`.
    pub uid: Option<Text<'a>>,
    /// `metadata.generation`.
    pub generation: Option<i64>,
    /// `metadata.deletionTimestamp`.
    pub deletion_timestamp: Option<Time>,
    /// `spec`.
    pub spec: SpecView<'a>,
    /// `status` (the parts the rules read), if read.
    pub status: Option<StatusView<'a>>,
}

/// `spec`, all of it: two specs compare equal exactly when the owned ones do.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SpecView<'a> {
    /// `spec.operatorVersion`.
    pub operator_version: ReferenceView<'a>,
    /// `spec.parameters` (empty when absent or null).
    pub parameters: Params<'a>,
    /// Whether `spec.parameters` is there (an empty map is not absent).
    pub has_parameters: bool,
    /// `spec.planExecution` (rare: owned when read from JSON).
    pub plan_execution: Option<Cow<'a, PlanExecution>>,
    /// `spec.planOperations`.
    pub plan_operations: Cow<'a, [PlanOperation]>,
    /// `spec.maintenanceWindows`.
    pub maintenance_windows: Cow<'a, [MaintenanceWindow]>,
    /// `spec.suppressions`.
    pub suppressions: Cow<'a, [Suppression]>,
}

/// An `ObjectReference`, every field borrowed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReferenceView<'a> {
    /// `apiVersion`.
    pub api_version: Option<Text<'a>>,
    /// `fieldPath`.
    pub field_path: Option<Text<'a>>,
    /// `kind`.
    pub kind: Option<Text<'a>>,
    /// `name`.
    pub name: Option<Text<'a>>,
    /// `namespace`.
    pub namespace: Option<Text<'a>>,
    /// `resourceVersion`.
    pub resource_version: Option<Text<'a>>,
    /// `uid`.
    pub uid: Option<Text<'a>>,
}

/// The parts of `status` the rules read. Plans, phases and steps are kept
/// flat; a plan names the range of its phases, a phase that of its steps.
/// Its `Debug` shows them as a tree, plans sorted by key, so that two views
/// of the same status print alike however they were filled.
#[derive(Clone, Default)]
pub struct StatusView<'a> {
    /// `activePlan.name`.
    pub active_plan: Option<Text<'a>>,
    /// `planStatus`, by map key.
    pub plans: SmallVec<[PlanView<'a>; 4]>,
    /// Phases of all plans.
    pub phases: SmallVec<[PhaseView<'a>; 8]>,
    /// Steps of all phases.
    pub steps: SmallVec<[StepView<'a>; 16]>,
    /// `appliedParameters` (empty when absent).
    pub applied_parameters: Params<'a>,
    /// `appliedOperatorVersion`.
    pub applied_operator_version: Option<Text<'a>>,
    /// `lastPlanExecutionUid`.
    pub last_plan_execution_uid: Option<Text<'a>>,
    /// `lastSuccessful` (OperatorVersion and parameters).
    pub last_successful: Option<AppliedView<'a>>,
    /// `autoSuppression` (rare: owned when read from JSON).
    pub auto_suppression: Option<Cow<'a, AutoSuppression>>,
}

/// One `planStatus` entry.
#[derive(Clone, Debug, Default)]
pub struct PlanView<'a> {
    /// Its key in `planStatus`.
    pub key: Text<'a>,
    /// `status` (NEVER_RUN when absent).
    pub status: ExecutionStatus,
    /// `uid`.
    pub uid: Option<Text<'a>>,
    /// Its phases in [`StatusView::phases`].
    pub phases: Range<u32>,
}

/// One phase status.
#[derive(Clone, Debug, Default)]
pub struct PhaseView<'a> {
    /// `name`.
    pub name: Text<'a>,
    /// Its steps in [`StatusView::steps`].
    pub steps: Range<u32>,
}

/// One step status.
#[derive(Clone, Debug, Default)]
pub struct StepView<'a> {
    /// `name`.
    pub name: Text<'a>,
    /// `status` (NEVER_RUN when absent).
    pub status: ExecutionStatus,
}

/// `status.lastSuccessful`: the configuration a rollback goes back to.
#[derive(Clone, Debug, Default)]
pub struct AppliedView<'a> {
    /// `operatorVersion`.
    pub operator_version: Text<'a>,
    /// `parameters`.
    pub parameters: Params<'a>,
}

impl<'a> InstanceView<'a> {
    /// The view of `instance` without its status (plan selection takes the
    /// status separately).
    pub fn without_status(instance: &'a Instance) -> Self {
        let meta = &instance.metadata;
        Self {
            name: borrow(&meta.name),
            namespace: borrow(&meta.namespace),
            uid: borrow(&meta.uid),
            generation: meta.generation,
            deletion_timestamp: meta.deletion_timestamp.clone(),
            spec: SpecView::from(&instance.spec),
            status: None,
        }
    }

    /// The OperatorVersion name spec asks for ("" when unset).
    pub fn ov_name(&self) -> &str {
        self.spec.operator_version.name.as_deref().unwrap_or("")
    }

    /// Spec parameters (empty when unset).
    pub fn params(&self) -> &Params<'a> {
        &self.spec.parameters
    }

    /// The same view, owning all its text.
    pub fn into_owned<'x>(self) -> InstanceView<'x> {
        InstanceView {
            name: self.name.map(own),
            namespace: self.namespace.map(own),
            uid: self.uid.map(own),
            generation: self.generation,
            deletion_timestamp: self.deletion_timestamp,
            spec: self.spec.into_owned(),
            status: self.status.map(StatusView::into_owned),
        }
    }
}

impl<'a> From<&'a Instance> for InstanceView<'a> {
    fn from(instance: &'a Instance) -> Self {
        Self {
            status: instance.status.as_ref().map(StatusView::from),
            ..Self::without_status(instance)
        }
    }
}

impl<'a> From<&'a InstanceSpec> for SpecView<'a> {
    fn from(spec: &'a InstanceSpec) -> Self {
        Self {
            operator_version: ReferenceView::from(&spec.operator_version),
            parameters: spec
                .parameters
                .as_ref()
                .map(Params::from)
                .unwrap_or_default(),
            has_parameters: spec.parameters.is_some(),
            plan_execution: spec.plan_execution.as_ref().map(Cow::Borrowed),
            plan_operations: Cow::Borrowed(&spec.plan_operations),
            maintenance_windows: Cow::Borrowed(&spec.maintenance_windows),
            suppressions: Cow::Borrowed(&spec.suppressions),
        }
    }
}

impl SpecView<'_> {
    fn into_owned<'x>(self) -> SpecView<'x> {
        SpecView {
            operator_version: self.operator_version.into_owned(),
            parameters: self.parameters.into_owned(),
            has_parameters: self.has_parameters,
            plan_execution: self.plan_execution.map(|p| Cow::Owned(p.into_owned())),
            plan_operations: Cow::Owned(self.plan_operations.into_owned()),
            maintenance_windows: Cow::Owned(self.maintenance_windows.into_owned()),
            suppressions: Cow::Owned(self.suppressions.into_owned()),
        }
    }
}

impl<'a> From<&'a ObjectReference> for ReferenceView<'a> {
    fn from(r: &'a ObjectReference) -> Self {
        Self {
            api_version: borrow(&r.api_version),
            field_path: borrow(&r.field_path),
            kind: borrow(&r.kind),
            name: borrow(&r.name),
            namespace: borrow(&r.namespace),
            resource_version: borrow(&r.resource_version),
            uid: borrow(&r.uid),
        }
    }
}

impl ReferenceView<'_> {
    fn into_owned<'x>(self) -> ReferenceView<'x> {
        ReferenceView {
            api_version: self.api_version.map(own),
            field_path: self.field_path.map(own),
            kind: self.kind.map(own),
            name: self.name.map(own),
            namespace: self.namespace.map(own),
            resource_version: self.resource_version.map(own),
            uid: self.uid.map(own),
        }
    }
}

impl<'a> StatusView<'a> {
    /// The `planStatus` entry under `key`.
    pub fn plan(&self, key: &str) -> Option<&PlanView<'a>> {
        self.plans.iter().find(|p| p.key == key)
    }

    /// The phases of `plan`.
    pub fn phases_of(&self, plan: &PlanView<'_>) -> &[PhaseView<'a>] {
        self.phases.get(range(&plan.phases)).unwrap_or_default()
    }

    /// The steps of `phase`.
    pub fn steps_of(&self, phase: &PhaseView<'_>) -> &[StepView<'a>] {
        self.steps.get(range(&phase.steps)).unwrap_or_default()
    }

    /// Index the next pushed phase gets (a plan's phases range starts here).
    pub fn next_phase(&self) -> u32 {
        index(self.phases.len())
    }

    /// Index the next pushed step gets (a phase's steps range starts here).
    pub fn next_step(&self) -> u32 {
        index(self.steps.len())
    }

    /// The same view, owning all its text.
    pub fn into_owned<'x>(self) -> StatusView<'x> {
        StatusView {
            active_plan: self.active_plan.map(own),
            plans: self
                .plans
                .into_iter()
                .map(|p| PlanView {
                    key: own(p.key),
                    status: p.status,
                    uid: p.uid.map(own),
                    phases: p.phases,
                })
                .collect(),
            phases: self
                .phases
                .into_iter()
                .map(|p| PhaseView {
                    name: own(p.name),
                    steps: p.steps,
                })
                .collect(),
            steps: self
                .steps
                .into_iter()
                .map(|s| StepView {
                    name: own(s.name),
                    status: s.status,
                })
                .collect(),
            applied_parameters: self.applied_parameters.into_owned(),
            applied_operator_version: self.applied_operator_version.map(own),
            last_plan_execution_uid: self.last_plan_execution_uid.map(own),
            last_successful: self.last_successful.map(|a| AppliedView {
                operator_version: own(a.operator_version),
                parameters: a.parameters.into_owned(),
            }),
            auto_suppression: self.auto_suppression.map(|a| Cow::Owned(a.into_owned())),
        }
    }
}

impl<'a> From<&'a InstanceStatus> for StatusView<'a> {
    fn from(status: &'a InstanceStatus) -> Self {
        let mut view = Self::without_steps(status);
        let StatusView {
            plans,
            phases,
            steps,
            ..
        } = &mut view;
        // `without_steps` lists the plans in the map's order.
        for (plan_view, plan) in plans.iter_mut().zip(status.plan_status.values()) {
            let first_phase = index(phases.len());
            for phase in &plan.phases {
                let first_step = index(steps.len());
                steps.extend(phase.steps.iter().map(|s| StepView {
                    name: Cow::Borrowed(&s.name),
                    status: s.status(),
                }));
                phases.push(PhaseView {
                    name: Cow::Borrowed(&phase.name),
                    steps: first_step..index(steps.len()),
                });
            }
            plan_view.phases = first_phase..index(phases.len());
        }
        view
    }
}

impl<'a> StatusView<'a> {
    /// The view of `status` with its plans but none of their phases and
    /// steps: enough for plan selection, which reads plan uids only, and
    /// cheap for the controller's ten-thousand-step plans.
    pub fn without_steps(status: &'a InstanceStatus) -> Self {
        let mut view = StatusView {
            active_plan: status
                .active_plan
                .as_ref()
                .map(|a| Cow::Borrowed(a.name.as_str())),
            applied_parameters: status
                .applied_parameters
                .as_ref()
                .map(Params::from)
                .unwrap_or_default(),
            applied_operator_version: borrow(&status.applied_operator_version),
            last_plan_execution_uid: borrow(&status.last_plan_execution_uid),
            last_successful: status.last_successful.as_ref().map(|a| AppliedView {
                operator_version: Cow::Borrowed(&a.operator_version),
                parameters: Params::from(&a.parameters),
            }),
            auto_suppression: status.auto_suppression.as_ref().map(Cow::Borrowed),
            ..StatusView::default()
        };
        view.plans
            .extend(status.plan_status.iter().map(|(key, plan)| PlanView {
                key: Cow::Borrowed(key),
                status: plan.status(),
                uid: borrow(&plan.uid),
                phases: 0..0,
            }));
        view
    }
}

impl fmt::Debug for StatusView<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut plans: Vec<&PlanView<'_>> = self.plans.iter().collect();
        plans.sort_by(|a, b| a.key.cmp(&b.key));
        let plans: Vec<_> = plans
            .into_iter()
            .map(|plan| {
                let phases: Vec<_> = self
                    .phases_of(plan)
                    .iter()
                    .map(|phase| {
                        let steps: Vec<_> = self
                            .steps_of(phase)
                            .iter()
                            .map(|s| (&s.name, s.status))
                            .collect();
                        (&phase.name, steps)
                    })
                    .collect();
                (&plan.key, plan.status, &plan.uid, phases)
            })
            .collect();
        f.debug_struct("StatusView")
            .field("active_plan", &self.active_plan)
            .field("plans", &plans)
            .field("applied_parameters", &self.applied_parameters)
            .field("applied_operator_version", &self.applied_operator_version)
            .field("last_plan_execution_uid", &self.last_plan_execution_uid)
            .field("last_successful", &self.last_successful)
            .field("auto_suppression", &self.auto_suppression)
            .finish()
    }
}

fn borrow(text: &Option<String>) -> Option<Text<'_>> {
    text.as_deref().map(Cow::Borrowed)
}

fn own<'x>(text: Text<'_>) -> Text<'x> {
    Cow::Owned(text.into_owned())
}

fn range(r: &Range<u32>) -> Range<usize> {
    r.start as usize..r.end as usize
}

/// Arena indices are `u32`; a status with four billion steps is not read.
fn index(len: usize) -> u32 {
    u32::try_from(len).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests;
