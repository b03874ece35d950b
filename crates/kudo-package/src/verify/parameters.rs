//! params.yaml: names, triggers, types, enums, defaults, groups.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::{PARAMS_FILE, Report};
use crate::Package;
use crate::convert::to_crd_parameter;

pub(super) fn verify_parameters(pkg: &Package, r: &mut Report) {
    let groups = verify_groups(pkg, r);
    let mut seen: BTreeMap<String, &str> = BTreeMap::new();
    for p in &pkg.params.parameters {
        let name = p.name.as_str();
        if name.trim().is_empty() {
            r.error(PARAMS_FILE, "a parameter has no name");
            continue;
        }
        if let Some(first) = seen.insert(name.to_lowercase(), name) {
            r.error(
                PARAMS_FILE,
                format!("parameter {name} is declared more than once (names are compared ignoring case; first: {first})"),
            );
        }
        if name.contains([';', ',']) {
            r.error(
                PARAMS_FILE,
                format!("parameter {name:?} contains ';' or ','; these are not allowed in names"),
            );
        }
        if let Some(plan) = p.trigger.as_deref().filter(|t| !t.is_empty())
            && !pkg.operator.plans.contains_key(plan)
        {
            r.error(
                PARAMS_FILE,
                format!(
                    "parameter {name} triggers plan {plan}, which is not defined in operator.yaml"
                ),
            );
        }
        if p.immutable && !p.required && p.default.is_none() {
            r.error(
                PARAMS_FILE,
                format!("parameter {name} is immutable but neither required nor defaulted; give it a default or make it required"),
            );
        }
        if p.advanced == Some(true) && p.required && p.default.is_none() {
            r.error(
                PARAMS_FILE,
                format!("parameter {name} is advanced and required but has no default; advanced parameters need a default"),
            );
        }
        if let Some(group) = p.group.as_deref().filter(|g| !g.is_empty())
            && !groups.contains(group)
        {
            r.error(
                PARAMS_FILE,
                format!("parameter {name} is in group {group}, which is not listed under groups"),
            );
        }
        verify_values(p, r);
    }
}

fn verify_groups<'a>(pkg: &'a Package, r: &mut Report) -> BTreeSet<&'a str> {
    let mut names = BTreeSet::new();
    for g in &pkg.params.groups {
        if g.name.trim().is_empty() {
            r.error(PARAMS_FILE, "a parameter group has no name");
        } else if !names.insert(g.name.as_str()) {
            r.error(
                PARAMS_FILE,
                format!("parameter group {} is declared more than once", g.name),
            );
        }
    }
    names
}

/// Enum and default against the declared type, using the same validator
/// as the webhook (on the values as KUDO stringifies them).
fn verify_values(p: &kudo_api::package::PackageParameter, r: &mut Report) {
    let name = &p.name;
    let crd = to_crd_parameter(p);
    let kind = crd.kind();
    if let Some(values) = &p.enum_values {
        if values.is_empty() {
            r.error(
                PARAMS_FILE,
                format!(
                    "parameter {name} has an empty enum; list the allowed values or remove enum"
                ),
            );
        }
        let untyped = kudo_api::Parameter {
            enum_values: None,
            ..crd.clone()
        };
        for v in crd.enum_values.iter().flatten() {
            if let Err(e) = untyped.validate_value(v) {
                r.error(PARAMS_FILE, format!("enum value of {e}"));
            }
        }
    }
    if let Some(default) = crd.default.as_deref() {
        if let Err(e) = crd.validate_value(default) {
            r.error(PARAMS_FILE, format!("default of {e}"));
        }
        if let Some(Value::Number(n)) = &p.default
            && default.contains('e')
            && !matches!(
                kind,
                kudo_api::ParameterType::Map | kudo_api::ParameterType::Array
            )
        {
            r.warning(
                PARAMS_FILE,
                format!(
                    "parameter {name}: default {n} is stored as {default:?} (Go number formatting); quote it to keep the digits"
                ),
            );
        }
    }
}
