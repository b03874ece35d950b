//! Validation of parameter values against their definitions, shared by the
//! webhook, the controller, the package verifier and the CLI so that all of
//! them accept and refuse exactly the same values (KUDO's `ValidateValue`).

use std::collections::BTreeMap;

use crate::operator_version::{Parameter, ParameterType};

/// Why a parameter value is not acceptable.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ParameterValueError {
    /// Required, no default, no value.
    #[error("parameter {name} is required but has no value set")]
    Missing {
        /// Parameter name.
        name: String,
    },
    /// The value does not parse as the declared type.
    #[error(
        "parameter {name} has value {}, which is not a valid {expected}: {detail}",
        preview(value)
    )]
    WrongType {
        /// Parameter name.
        name: String,
        /// The value given.
        value: String,
        /// The declared type.
        expected: ParameterType,
        /// What was expected, e.g. `a base-10 integer such as 3`.
        detail: String,
    },
    /// The value is not one of the declared enum values.
    #[error(
        "parameter {name} has value {}, but only allowed values are [{}]",
        preview(value),
        crate::message::listed(allowed)
    )]
    NotInEnum {
        /// Parameter name.
        name: String,
        /// The value given.
        value: String,
        /// The allowed values.
        allowed: Vec<String>,
    },
}

impl ParameterValueError {
    /// The parameter it is about.
    pub fn name(&self) -> &str {
        match self {
            Self::Missing { name }
            | Self::WrongType { name, .. }
            | Self::NotInEnum { name, .. } => name,
        }
    }
}

/// Values longer than this many characters are shown in messages as a
/// prefix of [`PREVIEW_PREFIX_CHARS`] characters and their total length.
pub const PREVIEW_MAX_CHARS: usize = 80;
/// How many characters of a long value a message shows.
pub const PREVIEW_PREFIX_CHARS: usize = 40;

/// A value as a message shows it: quoted in full when short, else its
/// first characters and its total length, e.g. `"aaaa"… (5242880 bytes)`,
/// so a 5 MB parameter value never fills a terminal or an API response.
pub fn preview(value: &str) -> Preview<'_> {
    Preview(value)
}

/// See [`preview`].
#[derive(Clone, Copy, Debug)]
pub struct Preview<'a>(&'a str);

impl std::fmt::Display for Preview<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let value = self.0;
        match value.char_indices().nth(PREVIEW_MAX_CHARS) {
            None => write!(f, "{value:?}"),
            Some(_) => {
                let cut = value
                    .char_indices()
                    .nth(PREVIEW_PREFIX_CHARS)
                    .map_or(value.len(), |(at, _)| at);
                write!(f, "{:?}… ({} bytes)", &value[..cut], value.len())
            }
        }
    }
}

/// Go `strconv.ParseBool` forms.
pub fn parse_go_bool(value: &str) -> Option<bool> {
    match value {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

fn type_detail(t: ParameterType) -> &'static str {
    match t {
        ParameterType::String => "any string",
        ParameterType::Integer => "a base-10 integer such as 3 or -12",
        ParameterType::Number => "a number such as 1.5 or 2e3",
        ParameterType::Boolean => "one of true, false, 1, 0, t, f (any case of true/false)",
        ParameterType::Array => "a YAML or JSON list such as [a, b]",
        ParameterType::Map => "a YAML or JSON map with string keys such as {a: 1}",
    }
}

fn matches_type(t: ParameterType, value: &str) -> bool {
    match t {
        ParameterType::String => true,
        ParameterType::Integer => value.parse::<i64>().is_ok(),
        ParameterType::Number => value.trim() == value && value.parse::<f64>().is_ok(),
        ParameterType::Boolean => parse_go_bool(value).is_some(),
        ParameterType::Array => {
            matches!(
                serde_saphyr::from_str::<serde_json::Value>(value),
                Ok(serde_json::Value::Array(_))
            )
        }
        ParameterType::Map => {
            matches!(
                serde_saphyr::from_str::<serde_json::Value>(value),
                Ok(serde_json::Value::Object(_))
            )
        }
    }
}

impl Parameter {
    /// Checks one non-empty value against the type and the enum.
    pub fn validate_value(&self, value: &str) -> Result<(), ParameterValueError> {
        let kind = self.kind();
        if !matches_type(kind, value) {
            return Err(ParameterValueError::WrongType {
                name: self.name.clone(),
                value: value.to_string(),
                expected: kind,
                detail: format!("expected {}", type_detail(kind)),
            });
        }
        if let Some(allowed) = &self.enum_values
            && !allowed.iter().any(|a| a == value)
        {
            return Err(ParameterValueError::NotInEnum {
                name: self.name.clone(),
                value: value.to_string(),
                allowed: allowed.clone(),
            });
        }
        Ok(())
    }

    /// The value templates see before type conversion: the user's value,
    /// else the default, else `""`.
    pub fn effective_value<'a>(&'a self, given: Option<&'a str>) -> &'a str {
        given.or(self.default.as_deref()).unwrap_or("")
    }
}

/// Validates user values against all definitions: required parameters
/// without default need a value; given and default values must match type
/// and enum (an empty value is accepted when not required, as in KUDO).
pub fn validate_parameters(
    definitions: &[Parameter],
    values: &BTreeMap<String, String>,
) -> Vec<ParameterValueError> {
    validate_parameter_values(definitions, |name| values.get(name).map(String::as_str))
}

/// [`validate_parameters`] with the values looked up by `value_of` (the
/// webhook keeps them in a sorted list, not a map).
pub fn validate_parameter_values<'v>(
    definitions: &[Parameter],
    value_of: impl Fn(&str) -> Option<&'v str>,
) -> Vec<ParameterValueError> {
    let mut errors = Vec::new();
    for def in definitions {
        let value = def.effective_value(value_of(&def.name));
        if value.is_empty() {
            if def.is_required() && def.default.is_none() {
                errors.push(ParameterValueError::Missing {
                    name: def.name.clone(),
                });
            }
            continue;
        }
        if let Err(e) = def.validate_value(value) {
            errors.push(e);
        }
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_values_are_shown_whole_and_long_ones_as_a_prefix_with_the_length() {
        assert_eq!(preview("abc").to_string(), "\"abc\"");
        let long = "é".repeat(3_000_000);
        let shown = preview(&long).to_string();
        assert_eq!(shown, format!("{:?}… (6000000 bytes)", "é".repeat(40)));
    }

    #[test]
    fn a_huge_wrong_value_is_not_echoed_whole() {
        let def = param(ParameterType::Integer);
        let huge = "x".repeat(5 * 1024 * 1024);
        let text = def.validate_value(&huge).unwrap_err().to_string();
        assert!(text.len() < 300, "{} bytes", text.len());
        assert!(text.contains("(5242880 bytes)"), "{text}");
    }

    fn param(kind: ParameterType) -> Parameter {
        Parameter {
            name: "P".into(),
            value_type: Some(kind),
            ..Default::default()
        }
    }

    #[test]
    fn integers_parse_base_10_only() {
        let p = param(ParameterType::Integer);
        assert!(p.validate_value("42").is_ok());
        assert!(p.validate_value("-7").is_ok());
        assert!(p.validate_value("3.0").is_err());
        assert!(p.validate_value("0x10").is_err());
        let err = p.validate_value("three").unwrap_err().to_string();
        assert!(
            err.contains("\"three\"") && err.contains("base-10 integer"),
            "{err}"
        );
    }

    #[test]
    fn booleans_accept_go_parse_bool_forms() {
        let p = param(ParameterType::Boolean);
        for ok in ["true", "False", "TRUE", "1", "0", "t", "F"] {
            assert!(p.validate_value(ok).is_ok(), "{ok}");
        }
        for bad in ["yes", "on", "tRuE", ""] {
            assert!(p.validate_value(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn numbers_accept_floats_and_exponents() {
        let p = param(ParameterType::Number);
        assert!(p.validate_value("1.5").is_ok());
        assert!(p.validate_value("2e3").is_ok());
        assert!(p.validate_value("1,5").is_err());
    }

    #[test]
    fn arrays_and_maps_must_parse_as_yaml_of_that_shape() {
        let a = param(ParameterType::Array);
        assert!(a.validate_value("[a, b]").is_ok());
        assert!(a.validate_value("- a\n- b\n").is_ok());
        assert!(a.validate_value("{a: 1}").is_err());
        let m = param(ParameterType::Map);
        assert!(m.validate_value("{a: 1}").is_ok());
        assert!(m.validate_value("a: 1\nb: [x]\n").is_ok());
        assert!(m.validate_value("[1]").is_err());
    }

    #[test]
    fn enum_values_must_match_exactly() {
        let p = Parameter {
            name: "LEVEL".into(),
            enum_values: Some(vec!["INFO".into(), "DEBUG".into()]),
            ..Default::default()
        };
        assert!(p.validate_value("INFO").is_ok());
        let err = p.validate_value("info").unwrap_err().to_string();
        assert_eq!(
            err,
            "parameter LEVEL has value \"info\", but only allowed values are [INFO, DEBUG]"
        );
    }

    #[test]
    fn required_without_default_or_value_is_missing() {
        let defs = vec![
            Parameter {
                name: "A".into(),
                required: Some(true),
                ..Default::default()
            },
            Parameter {
                name: "B".into(),
                required: Some(true),
                default: Some("x".into()),
                ..Default::default()
            },
            Parameter {
                name: "C".into(),
                ..Default::default()
            },
        ];
        let errs = validate_parameters(&defs, &BTreeMap::new());
        assert_eq!(
            errs,
            vec![ParameterValueError::Missing { name: "A".into() }]
        );
        let given = BTreeMap::from([("A".to_string(), "v".to_string())]);
        assert!(validate_parameters(&defs, &given).is_empty());
    }

    #[test]
    fn invalid_defaults_are_reported_too() {
        let defs = vec![Parameter {
            name: "N".into(),
            value_type: Some(ParameterType::Integer),
            default: Some("many".into()),
            ..Default::default()
        }];
        assert_eq!(validate_parameters(&defs, &BTreeMap::new()).len(), 1);
    }
}
