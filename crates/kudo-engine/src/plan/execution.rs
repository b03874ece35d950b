//! Plan parameters: values given to one manual execution in
//! `spec.planExecution.parameters`. They are checked against the
//! OperatorVersion's declared parameters like the Instance's own, laid over
//! the Instance's values for that execution's renders only, and never
//! become the Instance's parameters.

use kudo_api::OperatorVersionSpec;
use kudo_api::message::listed;

use crate::plan::params::{self, Values};

/// The values an execution's templates see: the Instance's, with the
/// execution's own over them.
pub fn overlay(instance: &Values, execution: Option<&Values>) -> Values {
    let mut values = instance.clone();
    if let Some(execution) = execution {
        values.extend(execution.iter().map(|(k, v)| (k.clone(), v.clone())));
    }
    values
}

/// The values as a history entry keeps them: a long value as its preview
/// (first characters and length), so twenty runs of large values do not
/// grow the status towards the API server's object size limit. The plan
/// status keeps them whole for the renders.
pub fn for_history(values: &Values) -> Values {
    values
        .iter()
        .map(|(k, v)| {
            let shown = if v
                .chars()
                .nth(kudo_api::param_value::PREVIEW_MAX_CHARS)
                .is_some()
            {
                kudo_api::preview(v).to_string()
            } else {
                v.clone()
            };
            (k.clone(), shown)
        })
        .collect()
}

/// Why `execution` cannot be given to a run of `plan`: a name the
/// OperatorVersion does not declare, or a value that is not valid for its
/// parameter (type, enum; required ones must not be emptied). `instance`
/// is the Instance's values the execution's are laid over.
pub fn check(
    ov: &OperatorVersionSpec,
    plan: &str,
    instance: &Values,
    execution: &Values,
) -> Result<(), String> {
    if execution.is_empty() {
        return Ok(());
    }
    let unknown = params::unknown(ov, execution.keys().map(String::as_str));
    if !unknown.is_empty() {
        let declared: Vec<&str> = ov.parameters.iter().map(|p| p.name.as_str()).collect();
        return Err(format!(
            "parameter{} {} of the run of plan {plan:?} {} not declared by the OperatorVersion \
             (its parameters: {})",
            if unknown.len() > 1 { "s" } else { "" },
            listed(&unknown),
            if unknown.len() > 1 { "are" } else { "is" },
            if declared.is_empty() {
                "none".to_string()
            } else {
                listed(&declared).to_string()
            }
        ));
    }
    let merged = overlay(instance, Some(execution));
    // Only problems of the names given here: the Instance's own values
    // were checked when they were set.
    let problems: Vec<String> = params::invalid_values(ov, &merged)
        .into_iter()
        .filter(|e| execution.contains_key(e.name()))
        .map(|e| e.to_string())
        .collect();
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "invalid parameters for the run of plan {plan:?}: {}",
            kudo_api::message::listed_problems(&problems, "; ")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kudo_api::{Parameter, ParameterType};

    fn values(kv: &[(&str, &str)]) -> Values {
        kv.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn spec() -> OperatorVersionSpec {
        OperatorVersionSpec {
            parameters: vec![
                Parameter {
                    name: "BUCKET".into(),
                    ..Default::default()
                },
                Parameter {
                    name: "COPIES".into(),
                    value_type: Some(ParameterType::Integer),
                    ..Default::default()
                },
            ],
            ..Default::default()
        }
    }

    #[test]
    fn the_executions_values_are_laid_over_the_instances() {
        let merged = overlay(
            &values(&[("BUCKET", "main"), ("COPIES", "2")]),
            Some(&values(&[("BUCKET", "x")])),
        );
        assert_eq!(merged, values(&[("BUCKET", "x"), ("COPIES", "2")]));
        assert_eq!(
            overlay(&values(&[("BUCKET", "main")]), None),
            values(&[("BUCKET", "main")])
        );
    }

    #[test]
    fn only_the_problems_of_the_given_values_are_reported() {
        // The Instance's own bad value is not this run's to answer for.
        let instance = values(&[("COPIES", "many")]);
        assert_eq!(
            check(&spec(), "backup", &instance, &values(&[("BUCKET", "x")])),
            Ok(())
        );
        let err = check(&spec(), "backup", &instance, &values(&[("COPIES", "two")])).unwrap_err();
        assert!(err.contains("COPIES") && err.contains("backup"), "{err}");
    }

    #[test]
    fn history_keeps_short_values_whole_and_long_ones_as_a_preview() {
        let long = "a".repeat(5000);
        let kept = for_history(&values(&[("S", "short"), ("L", &long)]));
        assert_eq!(kept["S"], "short");
        assert!(
            kept["L"].len() < 100 && kept["L"].contains("5000"),
            "{}",
            kept["L"]
        );
    }

    #[test]
    fn undeclared_names_are_refused_with_the_declared_ones() {
        let err = check(
            &spec(),
            "backup",
            &Values::new(),
            &values(&[("X", "1"), ("Y", "2")]),
        )
        .unwrap_err();
        assert!(
            err.starts_with("parameters X, Y of the run of plan \"backup\" are not declared"),
            "{err}"
        );
        assert!(err.contains("BUCKET, COPIES"), "{err}");
    }
}
