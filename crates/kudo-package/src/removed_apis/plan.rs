//! A rendered plan as a given API server would get it (`package render
//! --kubernetes-version`): Apply objects translated, Delete objects named in
//! the version that is served.

use std::fmt;

use super::{Change, Removed, ServedApis, Translation, translate};
use crate::render::{RenderedStep, RenderedTask, describe_object};

/// What happened to one object of a rendered plan.
#[derive(Clone, Debug, PartialEq)]
pub struct PlanTranslation {
    /// `plan/phase/step/task`.
    pub task: String,
    /// `Kind namespace/name` as rendered.
    pub object: String,
    /// The translation, or why the object cannot be applied.
    pub outcome: Result<Change, Removed>,
}

impl fmt::Display for PlanTranslation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.outcome {
            Ok(change) => write!(
                f,
                "{}: {}: {}",
                self.task,
                self.object,
                change.future_message()
            ),
            Err(removed) => write!(f, "{}: {}: {removed}", self.task, self.object),
        }
    }
}

/// Rewrites the objects of `steps` for an API server serving what `served`
/// says, and lists what changed. An object that cannot be applied is left
/// as rendered (the step would fail on it) and listed with the reason.
pub fn translate_plan(steps: &mut [RenderedStep], served: &dyn ServedApis) -> Vec<PlanTranslation> {
    let mut found = Vec::new();
    for step in steps {
        let task = format!("{}/{}/{}/{}", step.plan, step.phase, step.step, step.task);
        let (objects, deleting) = match &mut step.rendered {
            RenderedTask::Apply { objects } => (objects, false),
            RenderedTask::Delete { objects } => (objects, true),
            _ => continue,
        };
        for object in objects.iter_mut() {
            match translate(object, served) {
                Translation::Untouched => {}
                Translation::Translated(t) => {
                    found.push(PlanTranslation {
                        task: task.clone(),
                        object: describe_object(object),
                        outcome: Ok(t.change),
                    });
                    if deleting {
                        // Only the version matters to a delete.
                        object["apiVersion"] = t.object["apiVersion"].clone();
                    } else {
                        *object = t.object;
                    }
                }
                Translation::Removed(removed) if !deleting => found.push(PlanTranslation {
                    task: task.clone(),
                    object: describe_object(object),
                    outcome: Err(removed),
                }),
                Translation::Removed(_) => {}
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::removed_apis::KubernetesRelease;

    fn step(task: &str, rendered: RenderedTask) -> RenderedStep {
        RenderedStep {
            plan: "deploy".into(),
            phase: "p".into(),
            step: "s".into(),
            task: task.into(),
            kind: "Apply".into(),
            rendered,
        }
    }

    #[test]
    fn apply_objects_are_translated_and_removed_kinds_listed() {
        let pdb = json!({"apiVersion": "policy/v1beta1", "kind": "PodDisruptionBudget",
                         "metadata": {"name": "pdb", "namespace": "ns"}, "spec": {"selector": {}}});
        let psp = json!({"apiVersion": "policy/v1beta1", "kind": "PodSecurityPolicy",
                         "metadata": {"name": "psp"}});
        let mut steps = vec![
            step(
                "app",
                RenderedTask::Apply {
                    objects: vec![pdb.clone(), psp.clone()],
                },
            ),
            step(
                "rm",
                RenderedTask::Delete {
                    objects: vec![pdb, psp.clone()],
                },
            ),
        ];
        let found = translate_plan(&mut steps, &KubernetesRelease::CURRENT);
        let RenderedTask::Apply { objects } = &steps[0].rendered else {
            panic!("not an apply");
        };
        assert_eq!(
            objects[0],
            json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                   "metadata": {"name": "pdb", "namespace": "ns"}, "spec": {}})
        );
        assert_eq!(objects[1], psp);
        let RenderedTask::Delete { objects } = &steps[1].rendered else {
            panic!("not a delete");
        };
        assert_eq!(objects[0]["apiVersion"], "policy/v1");
        assert_eq!(objects[0]["spec"]["selector"], json!({}));
        let lines: Vec<String> = found.iter().map(ToString::to_string).collect();
        assert_eq!(lines.len(), 3, "{lines:#?}");
        assert!(lines[0].starts_with(
            "deploy/p/s/app: PodDisruptionBudget ns/pdb: policy/v1beta1 PodDisruptionBudget is \
             applied as policy/v1: policy/v1beta1 was removed in Kubernetes 1.25; the empty"
        ));
        assert!(lines[1].starts_with(
            "deploy/p/s/app: PodSecurityPolicy psp: policy/v1beta1 PodSecurityPolicy cannot be applied"
        ));
        assert!(lines[2].starts_with("deploy/p/s/rm: PodDisruptionBudget ns/pdb: policy/v1beta1"));
    }
}
