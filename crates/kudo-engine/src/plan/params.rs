//! Parameter rules shared by the webhook and the controller: what changed,
//! which plan a change triggers, and whether values are acceptable.
//!
//! Value validation itself (KUDO's `ValidateValue`: integer = base-10
//! `ParseInt`, number = `ParseFloat`, boolean = Go `ParseBool` forms, array
//! and map = YAML list/map, enum = exact match, required without default)
//! lives in [`kudo_api::param_value`] so the CLI and package verifier use the
//! very same code; this module adds the rules that need two versions of an
//! Instance or OperatorVersion.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};

use kudo_api::names::{DEPLOY_PLAN, UPDATE_PLAN};
use kudo_api::{OperatorVersionSpec, ParameterValueError};
use smallvec::SmallVec;

use crate::model::error::EngineError;

pub use kudo_api::param_value::parse_go_bool;

/// Parameter values by name, as spec and status hold them.
pub type Values = BTreeMap<String, String>;

/// Names whose value differs between `old` and `new`: added, changed or
/// removed, sorted, with room for a few names inline (the webhook asks
/// this on every update).
pub fn changed_names<'p>(old: &'p Values, new: &'p Values) -> ChangedNames<'p> {
    // Both are sorted: one merge pass.
    let mut out = ChangedNames::new();
    let (mut old, mut new) = (old.iter().peekable(), new.iter().peekable());
    loop {
        match (old.peek().copied(), new.peek().copied()) {
            (Some((a, va)), Some((b, vb))) => match a.cmp(b) {
                Ordering::Less => {
                    out.push(a);
                    old.next();
                }
                Ordering::Greater => {
                    out.push(b);
                    new.next();
                }
                Ordering::Equal => {
                    if va != vb {
                        out.push(a);
                    }
                    old.next();
                    new.next();
                }
            },
            (Some((a, _)), None) => {
                out.push(a);
                old.next();
            }
            (None, Some((b, _))) => {
                out.push(b);
                new.next();
            }
            (None, None) => return out,
        }
    }
}

/// Names of changed parameters, sorted.
pub type ChangedNames<'p> = SmallVec<[&'p str; 8]>;

/// The plan a change of `changed` parameters triggers in `ov`.
///
/// Parameters the OperatorVersion does not define are ignored (the webhook
/// refuses them before). Without any explicit trigger the fallback is
/// `update`, then `deploy`. `Ok(None)`: none of the changed parameters is
/// defined, nothing to run.
pub fn triggered_plan(
    ov: &OperatorVersionSpec,
    changed: &[impl AsRef<str>],
) -> Result<Option<String>, EngineError> {
    let mut any_defined = false;
    let mut plan: Option<&str> = None;
    let mut conflict = false;
    for def in changed.iter().filter_map(|n| ov.parameter(n.as_ref())) {
        any_defined = true;
        let Some(trigger) = def.trigger.as_deref().filter(|t| !t.is_empty()) else {
            continue;
        };
        if ov.plan(trigger).is_none() {
            return Err(EngineError::UnknownTriggerPlan {
                param: def.name.clone(),
                plan: trigger.to_string(),
            });
        }
        conflict |= plan.is_some_and(|p| p != trigger);
        plan.get_or_insert(trigger);
    }
    if conflict {
        // Rare: only now collect what the message lists.
        let defined: Vec<_> = changed
            .iter()
            .filter_map(|n| ov.parameter(n.as_ref()))
            .collect();
        let plans: BTreeSet<String> = defined
            .iter()
            .filter_map(|d| d.trigger.clone().filter(|t| !t.is_empty()))
            .collect();
        return Err(EngineError::MultipleTriggers {
            params: defined.iter().map(|d| d.name.clone()).collect(),
            plans: plans.into_iter().collect(),
        });
    }
    match plan {
        Some(plan) => Ok(Some(plan.to_string())),
        None if any_defined => first_existing(ov, &[UPDATE_PLAN, DEPLOY_PLAN]).map(Some),
        None => Ok(None),
    }
}

/// The first of `candidates` that `ov` defines.
pub fn first_existing(
    ov: &OperatorVersionSpec,
    candidates: &[&str],
) -> Result<String, EngineError> {
    candidates
        .iter()
        .find(|c| ov.plan(c).is_some())
        .map(|c| c.to_string())
        .ok_or_else(|| EngineError::NoPlanFor {
            candidates: candidates.iter().map(|c| c.to_string()).collect(),
        })
}

/// Type, enum and required checks of all values against `ov`.
pub fn invalid_values(ov: &OperatorVersionSpec, values: &Values) -> Vec<ParameterValueError> {
    kudo_api::param_value::validate_parameter_values(&ov.parameters, |name| {
        values.get(name).map(String::as_str)
    })
}

/// [`invalid_values`] as one line for a message ("P has value ...; Q ..."),
/// at most [`kudo_api::message::MAX_LISTED`] of them, or `None` when all
/// values are valid.
pub fn invalid_values_message(ov: &OperatorVersionSpec, values: &Values) -> Option<String> {
    let invalid = invalid_values(ov, values);
    (!invalid.is_empty()).then(|| {
        let shown: Vec<String> = invalid
            .iter()
            .take(kudo_api::message::MAX_LISTED)
            .map(ToString::to_string)
            .collect();
        let rest = invalid.len() - shown.len();
        let mut message = shown.join("; ");
        if rest > 0 {
            message.push_str(&format!(
                " and {} more problems",
                kudo_api::message::grouped(rest)
            ));
        }
        message
    })
}

/// Of `names`, those `ov` does not define.
pub fn unknown<'a>(
    ov: &OperatorVersionSpec,
    names: impl IntoIterator<Item = &'a str>,
) -> Vec<&'a str> {
    let defined: std::collections::HashSet<&str> =
        ov.parameters.iter().map(|p| p.name.as_str()).collect();
    names.into_iter().filter(|n| !defined.contains(n)).collect()
}

/// Immutable-parameter violations of a change from `old` to `new` values;
/// `changed` is [`changed_names`] of the two.
///
/// Without an upgrade (`old_ov == new_ov`), an immutable parameter may not
/// change. With an upgrade (KEP-30): a parameter that becomes immutable, or
/// a new immutable parameter, needs an explicit value in `new`.
pub fn immutable_violations(
    old_ov: &OperatorVersionSpec,
    new_ov: &OperatorVersionSpec,
    new_ov_name: &str,
    old: &Values,
    new: &Values,
    changed: &[&str],
    upgrade: bool,
) -> Vec<String> {
    let mut out = Vec::new();
    if !upgrade {
        for &name in changed {
            if let Some(def) = new_ov.parameter(name).filter(|d| d.is_immutable()) {
                let before = old.get(name).map(String::as_str).or(def.default.as_deref());
                let after = new.get(name).map(String::as_str).or(def.default.as_deref());
                if before != after {
                    // Long values as a prefix and their length: a 1 MB value
                    // must not fill the webhook's answer (twice).
                    out.push(format!(
                        "parameter {name} is immutable but was changed from {} to {}; \
                         immutable parameters keep the value they were created with",
                        kudo_api::preview(before.unwrap_or("")),
                        kudo_api::preview(after.unwrap_or(""))
                    ));
                }
            }
        }
        return out;
    }
    for def in new_ov.parameters.iter().filter(|d| d.is_immutable()) {
        if new.contains_key(&def.name) {
            continue;
        }
        match old_ov.parameter(&def.name) {
            Some(old_def) if !old_def.is_immutable() => out.push(format!(
                "parameter {} becomes immutable in OperatorVersion {new_ov_name}; \
                 set its value explicitly in spec.parameters with the upgrade",
                def.name
            )),
            None => out.push(format!(
                "parameter {} is new and immutable in OperatorVersion {new_ov_name}; \
                 set its value explicitly in spec.parameters with the upgrade{}",
                def.name,
                def.default
                    .as_deref()
                    .map(|d| format!(" (the default would be {})", kudo_api::preview(d)))
                    .unwrap_or_default()
            )),
            Some(_) => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use kudo_api::{Parameter, Plan};

    fn ov(params: &[(&str, Option<&str>)], plans: &[&str]) -> OperatorVersionSpec {
        OperatorVersionSpec {
            parameters: params
                .iter()
                .map(|(n, t)| Parameter {
                    name: n.to_string(),
                    trigger: t.map(str::to_string),
                    ..Default::default()
                })
                .collect(),
            plans: plans
                .iter()
                .map(|p| (p.to_string(), Plan::default()))
                .collect(),
            ..Default::default()
        }
    }

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn changed_lists_added_changed_and_removed_keys() {
        let old = BTreeMap::from([("a".into(), "1".into()), ("b".into(), "2".into())]);
        let new = BTreeMap::from([("b".into(), "3".into()), ("c".into(), "4".into())]);
        assert_eq!(changed_names(&old, &new).to_vec(), ["a", "b", "c"]);
        assert!(changed_names(&old, &old).is_empty());
    }

    proptest::proptest! {
        #[test]
        fn changed_names_are_exactly_the_sorted_keys_whose_values_differ(
            old in proptest::collection::btree_map("[a-d]", "[xy]", 0..4),
            new in proptest::collection::btree_map("[a-d]", "[xy]", 0..4),
        ) {
            let expected: Vec<&str> = old
                .keys()
                .chain(new.keys())
                .collect::<BTreeSet<_>>()
                .into_iter()
                .filter(|k| old.get(*k) != new.get(*k))
                .map(String::as_str)
                .collect();
            proptest::prop_assert_eq!(changed_names(&old, &new).to_vec(), expected);
        }
    }

    #[test]
    fn no_change_triggers_nothing() {
        let ov = ov(&[("p", None)], &["deploy", "update"]);
        assert_eq!(triggered_plan(&ov, &[] as &[&str]).unwrap(), None);
    }

    #[test]
    fn param_without_trigger_falls_back_to_update_then_deploy() {
        let with_update = ov(&[("p", None)], &["deploy", "update"]);
        assert_eq!(
            triggered_plan(&with_update, &names(&["p"]))
                .unwrap()
                .as_deref(),
            Some("update")
        );
        let deploy_only = ov(&[("p", None)], &["deploy"]);
        assert_eq!(
            triggered_plan(&deploy_only, &names(&["p"]))
                .unwrap()
                .as_deref(),
            Some("deploy")
        );
    }

    #[test]
    fn explicit_trigger_wins_and_same_triggers_agree() {
        let ov = ov(
            &[("a", Some("backup")), ("b", Some("backup")), ("c", None)],
            &["deploy", "update", "backup"],
        );
        assert_eq!(
            triggered_plan(&ov, &names(&["a", "b", "c"]))
                .unwrap()
                .as_deref(),
            Some("backup")
        );
    }

    #[test]
    fn conflicting_triggers_are_an_error_naming_both_plans() {
        let ov = ov(
            &[("a", Some("deploy")), ("b", Some("update"))],
            &["deploy", "update"],
        );
        let err = triggered_plan(&ov, &names(&["a", "b"]))
            .unwrap_err()
            .to_string();
        assert!(err.contains("deploy, update"), "{err}");
    }

    #[test]
    fn trigger_of_a_missing_plan_is_an_error() {
        let ov = ov(&[("a", Some("fake"))], &["deploy"]);
        assert!(matches!(
            triggered_plan(&ov, &names(&["a"])),
            Err(EngineError::UnknownTriggerPlan { .. })
        ));
    }

    #[test]
    fn undefined_params_trigger_nothing() {
        let ov = ov(&[("a", None)], &["deploy"]);
        assert_eq!(triggered_plan(&ov, &names(&["zzz"])).unwrap(), None);
        assert_eq!(unknown(&ov, ["a", "zzz"]), ["zzz"]);
    }

    #[test]
    fn rejects_immutable_param_change() {
        let mut spec = ov(&[("size", None)], &["deploy"]);
        spec.parameters[0].immutable = Some(true);
        let old = BTreeMap::from([("size".into(), "1".into())]);
        let new = BTreeMap::from([("size".into(), "2".into())]);
        let v = immutable_violations(&spec, &spec, "ov", &old, &new, &["size"], false);
        assert_eq!(v.len(), 1);
        assert!(v[0].contains("from \"1\" to \"2\""), "{}", v[0]);
        assert!(immutable_violations(&spec, &spec, "ov", &old, &old, &[], false).is_empty());
    }

    #[test]
    fn upgrade_adding_an_immutable_param_needs_an_explicit_value() {
        let old_spec = ov(&[], &["deploy"]);
        let mut new_spec = ov(&[("size", None)], &["deploy"]);
        new_spec.parameters[0].immutable = Some(true);
        new_spec.parameters[0].default = Some("3".into());
        let empty = Values::new();
        let v = immutable_violations(&old_spec, &new_spec, "ov-2", &empty, &empty, &[], true);
        assert_eq!(v.len(), 1);
        assert!(v[0].contains("default would be \"3\""), "{}", v[0]);
        let given = BTreeMap::from([("size".into(), "3".into())]);
        assert!(
            immutable_violations(
                &old_spec,
                &new_spec,
                "ov-2",
                &empty,
                &given,
                &["size"],
                true
            )
            .is_empty()
        );
    }
}
