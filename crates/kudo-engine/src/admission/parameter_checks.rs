//! Rule 4: parameters must be defined, valid, and keep their value when
//! immutable (with KEP-30's rules on upgrades).

use kudo_api::OperatorVersion;
use kudo_api::message::{listed, listed_problems};

use super::InstanceName;
use crate::plan::params;
use crate::plan::params::Values;

/// Parameters: defined, valid, immutability. The pair is the
/// OperatorVersion before (if found) and after the change.
pub(super) fn check_parameters(
    old_params: &Values,
    new_params: &Values,
    changed: &[&str],
    (old_ov, ov): (Option<&OperatorVersion>, &OperatorVersion),
    upgrade: bool,
    (name, ov_name): (InstanceName<'_>, &str),
    warnings: &mut Vec<String>,
) -> Result<(), String> {
    let unknown = params::unknown(
        &ov.spec,
        changed
            .iter()
            .copied()
            .filter(|n| new_params.contains_key(*n)),
    );
    if !unknown.is_empty() {
        let defined: Vec<&str> = ov.spec.parameters.iter().map(|p| p.name.as_str()).collect();
        return Err(format!(
            "Instance {name}: parameter{} {} not defined by OperatorVersion {ov_name}; \
             check the spelling (its parameters: {}) or remove {}",
            if unknown.len() > 1 { "s" } else { "" },
            listed(&unknown),
            if defined.is_empty() {
                "none".to_string()
            } else {
                listed(&defined).to_string()
            },
            if unknown.len() > 1 { "them" } else { "it" }
        ));
    }
    if upgrade {
        let stale = params::unknown(
            &ov.spec,
            new_params
                .keys()
                .map(String::as_str)
                .filter(|k| !changed.contains(k)),
        );
        if !stale.is_empty() {
            warnings.push(format!(
                "parameters {} are not defined by OperatorVersion {ov_name} and are ignored; remove them from spec.parameters",
                listed(&stale)
            ));
        }
    }
    if let Some(invalid) = params::invalid_values_message(&ov.spec, new_params) {
        return Err(format!("Instance {name}: invalid parameters: {invalid}"));
    }
    let before_ov = if upgrade { old_ov } else { Some(ov) };
    let Some(before_ov) = before_ov else {
        warnings.push(
            "the OperatorVersion being upgraded from was not found; immutable-parameter rules of the upgrade were not checked"
                .to_string(),
        );
        return Ok(());
    };
    let violations = params::immutable_violations(
        &before_ov.spec,
        &ov.spec,
        ov_name,
        old_params,
        new_params,
        changed,
        upgrade,
    );
    if violations.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "Instance {name}: {}",
            listed_problems(&violations, "; ")
        ))
    }
}
