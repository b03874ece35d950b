//! The checks that run after the OperatorVersions are read, when the
//! rules would admit the change: the pods that new pod operations name,
//! and new parameter values rendered into the templates.

use std::borrow::Cow;

use kudo_package::render::RenderContext;

use crate::ov_verify::Verification;

use super::super::acting_as::NotAllowed;
use super::super::answer::Answer;
use super::super::ov_source::{OperatorVersionSource, PodLookup};
use super::{Failure, Pending, Reviewer, Versions, instance_namespace};

impl<S: OperatorVersionSource> Reviewer<S> {
    /// A spec write by someone who may not act as the account the
    /// Instance runs as is refused, and so is turning on CRD deletion
    /// (other metadata writes and deletions do not get here).
    pub(super) async fn check_writer(&self, pending: &Pending<'_>) -> Result<(), Refusal> {
        let Some(acting_as) = &self.acting_as else {
            return Ok(());
        };
        let new = &pending.new;
        let namespace = instance_namespace(new, pending.context.namespace.as_deref());
        let name = new.metadata.name.as_deref().unwrap_or_default();
        let account = new.spec.service_account_name.as_deref();
        acting_as
            .check(&pending.user, namespace, name, account, self.read_timeout)
            .await
            .map_err(Refusal::from)
    }

    /// An Instance that starts using an OperatorVersion (created, or moved
    /// to another one) is refused when that OperatorVersion does not pass
    /// `package verify`: it may have been made with kubectl, skipping it.
    pub(super) async fn check_operator_version(
        &self,
        pending: &Pending<'_>,
        read: &Result<Versions, Failure>,
    ) -> Result<(), Refusal> {
        let Ok((_, Some(ov))) = read else {
            return Ok(());
        };
        let new = &pending.new;
        if (pending.old.is_some() && pending.same_ov) || new.metadata.deletion_timestamp.is_some() {
            return Ok(());
        }
        let namespace = instance_namespace(new, pending.context.namespace.as_deref());
        // The rules refuse an OperatorVersion that is not shared, alike
        // whether it exists: nothing more is said of it here.
        if kudo_engine::tenancy::check_ov_reference(namespace, &new.spec.operator_version, Some(ov))
            .is_err()
        {
            return Ok(());
        }
        match self.verified.check(&self.renders, ov).await {
            // Not verified in time: the manager does not use it until it is.
            Verification::Passed | Verification::Unfinished(_) => Ok(()),
            Verification::Failed(problem) => {
                let name = new.metadata.name.as_deref().unwrap_or_default();
                Err(Refusal::Denied(format!(
                    "Instance {namespace}/{name}: {problem}"
                )))
            }
        }
    }

    /// New parameter values (or a new OperatorVersion) are rendered into
    /// every template, as the steps will: a value that would add YAML to an
    /// object, or push a render over its budget, is refused now rather than
    /// failing a step later. The values of a new manual run
    /// (`spec.planExecution.parameters`) are rendered the same way, over
    /// the Instance's. A render that does not finish in time admits the
    /// change (the step checks it again).
    pub(super) async fn check_values(
        &self,
        pending: &Pending<'_>,
        read: &Result<Versions, Failure>,
    ) -> Result<(), Refusal> {
        let Ok((_, Some(ov))) = read else {
            return Ok(());
        };
        let new = &pending.new;
        let namespace = instance_namespace(new, pending.context.namespace.as_deref());
        let old_spec = pending.old.as_ref().map(|old| &old.spec);
        let execution = new_execution_values(old_spec, &new.spec);
        let unchanged = pending.same_ov
            && execution.is_none()
            && old_spec.is_some_and(|old| old.parameters == new.spec.parameters);
        // Nothing of an OperatorVersion the rules refuse to share is rendered.
        let foreign = kudo_engine::tenancy::check_ov_reference(
            namespace,
            &new.spec.operator_version,
            Some(ov),
        );
        if unchanged || foreign.is_err() || new.metadata.deletion_timestamp.is_some() {
            return Ok(());
        }
        let values =
            kudo_engine::execution::overlay(kudo_engine::select::spec_params(&new.spec), execution);
        // Invalid values are the rules' to refuse, with their own message.
        let Ok(params) = kudo_package::params::template_values(&ov.spec, &values) else {
            return Ok(());
        };
        let name = new.metadata.name.clone().unwrap_or_default();
        let ctx = RenderContext {
            instance_name: name.clone(),
            namespace: namespace.to_string(),
            params,
            limits: self.render_limits,
            ..RenderContext::for_operator_version(ov)
        };
        let ov = ov.clone();
        let checked = self
            .renders
            .run(move || kudo_package::render::check_parameter_values(&ov, &ctx))
            .await;
        match checked {
            Ok(Ok(())) => Ok(()),
            Ok(Err(refused)) => Err(Refusal::Denied(format!("Instance {name}: {refused}"))),
            Err(stalled) => {
                tracing::warn!(instance = %name, %stalled, "parameter values not checked in time");
                Ok(())
            }
        }
    }

    /// New pod operations must name a pod of this Instance (read live: they
    /// are rare). Checked only when the rules would admit the change.
    pub(super) async fn check_pods(&self, pending: &Pending<'_>) -> Result<(), Refusal> {
        let old_ids: Vec<&str> = pending
            .old
            .as_ref()
            .map(|o| {
                o.spec
                    .plan_operations
                    .iter()
                    .map(|op| op.id.as_str())
                    .collect()
            })
            .unwrap_or_default();
        let namespace = instance_namespace(&pending.new, pending.context.namespace.as_deref());
        let instance = pending.new.metadata.name.as_deref().unwrap_or_default();
        let new_ops = pending
            .new
            .spec
            .plan_operations
            .iter()
            .filter(|op| op.action.is_pod() && !old_ids.contains(&op.id.as_str()));
        for op in new_ops {
            let Some(pod) = op.pod.as_deref() else {
                continue; // the rules refuse it
            };
            // One answer for a missing pod and a pod of another Instance:
            // it tells the caller nothing about pods that are not theirs.
            let not_ours = || {
                Refusal::Denied(format!(
                    "pod {pod} in namespace {namespace} is not a pod of Instance {instance}"
                ))
            };
            let looked =
                tokio::time::timeout(self.read_timeout, self.source.pod(namespace, pod)).await;
            match looked {
                Ok(Ok(PodLookup::Unchecked)) => {}
                Ok(Ok(PodLookup::Missing)) => return Err(not_ours()),
                Ok(Ok(PodLookup::Found(found))) => {
                    kudo_engine::recovery_pods::check_belongs(&found, instance)
                        .map_err(|_| not_ours())?;
                }
                Ok(Err(err)) => {
                    return Err(Refusal::Failed(format!(
                        "cannot read pod {namespace}/{pod}: {err}; the change was not checked"
                    )));
                }
                Err(_) => {
                    return Err(Refusal::Failed(format!(
                        "reading pod {namespace}/{pod} took too long; the change was not checked"
                    )));
                }
            }
        }
        Ok(())
    }
}

/// The values of a manual run this change asks for: a new
/// `spec.planExecution.uid` with parameters. (The rules refuse values
/// changed without a new uid.)
fn new_execution_values<'s>(
    old: Option<&kudo_api::InstanceSpec>,
    new: &'s kudo_api::InstanceSpec,
) -> Option<&'s std::collections::BTreeMap<String, String>> {
    let pe = new.plan_execution.as_ref()?;
    let uid = pe.uid.as_deref().filter(|u| !u.is_empty())?;
    let old_uid = old
        .and_then(|o| o.plan_execution.as_ref())
        .and_then(|p| p.uid.as_deref());
    if old_uid == Some(uid) {
        return None;
    }
    pe.parameters.as_ref().filter(|v| !v.is_empty())
}

/// Why a change the rules admit is refused after a read or a render.
pub(super) enum Refusal {
    /// Not a pod of this Instance, or a value the templates refuse.
    Denied(String),
    /// The pod could not be read.
    Failed(String),
}

impl From<NotAllowed> for Refusal {
    fn from(refused: NotAllowed) -> Self {
        match refused {
            NotAllowed::Denied(message) => Self::Denied(message),
            NotAllowed::Unanswered(message) => Self::Failed(message),
        }
    }
}

impl Refusal {
    pub(super) fn into_answer(self, uid: Cow<'_, str>) -> Answer<'_> {
        match self {
            Self::Denied(message) => Answer::refused(uid, 403, "Forbidden", message),
            Self::Failed(message) => Answer::refused(uid, 500, "InternalError", message),
        }
    }
}
