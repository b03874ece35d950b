//! Parameter values as templates see them (`.Params`, as KUDO builds it), validation of
//! user values, and the parameter table of `package params list`.
//!
//! For every declared parameter the value is the user's, else the default,
//! else `""`. Types `map` and `array` are parsed from YAML (numbers become
//! floats, as Go's JSON decoding makes them); every other type stays a
//! string, so templates compare booleans with `eq .Params.X "true"`.

use std::collections::BTreeMap;
use std::fmt;

use kudo_api::{OperatorVersionSpec, ParameterType};
use serde_json::{Map, Value};

use crate::ParamsError;

/// The `.Params` map for templates.
pub fn template_values(
    ov: &OperatorVersionSpec,
    values: &BTreeMap<String, String>,
) -> Result<Map<String, Value>, ParamsError> {
    let mut out = Map::new();
    for def in &ov.parameters {
        let raw = def.effective_value(values.get(&def.name).map(String::as_str));
        let value = match def.kind() {
            ParameterType::Map | ParameterType::Array => {
                let parsed =
                    crate::yaml::parse_value(raw).map_err(|detail| ParamsError::Unparsable {
                        name: def.name.clone(),
                        kind: def.kind(),
                        detail,
                    })?;
                crate::gofmt::numbers_as_floats(parsed)
            }
            _ => Value::String(raw.to_string()),
        };
        out.insert(def.name.clone(), value);
    }
    Ok(out)
}

/// All problems with a set of user values.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub struct ParamsErrors(pub Vec<ParamsError>);

/// One problem a line, at most [`kudo_api::message::MAX_LISTED`] of them.
impl fmt::Display for ParamsErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let shown = self.0.len().min(kudo_api::message::MAX_LISTED);
        for (i, e) in self.0[..shown].iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{e}")?;
        }
        match self.0.len() - shown {
            0 => Ok(()),
            rest => write!(
                f,
                "\nand {} more problems",
                kudo_api::message::grouped(rest)
            ),
        }
    }
}

/// Checks user values against the OperatorVersion: names must be declared;
/// types, enums and required values are checked by kudo-api's shared
/// validator (defaults included).
pub fn validate_values(
    ov: &OperatorVersionSpec,
    values: &BTreeMap<String, String>,
) -> Result<(), ParamsErrors> {
    let mut errors = Vec::new();
    let unknown: Vec<String> = values
        .keys()
        .filter(|name| ov.parameter(name).is_none())
        .cloned()
        .collect();
    if !unknown.is_empty() {
        errors.push(ParamsError::Unknown {
            names: unknown,
            declared: ov.parameters.iter().map(|p| p.name.clone()).collect(),
        });
    }
    errors.extend(
        kudo_api::validate_parameters(&ov.parameters, values)
            .into_iter()
            .map(ParamsError::Invalid),
    );
    if errors.is_empty() {
        Ok(())
    } else {
        Err(ParamsErrors(errors))
    }
}

/// Parses `KEY=VALUE` (first `=` splits; key and value must not be empty),
/// as `kubectl kudo install -p` does.
pub fn parse_assignment(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((k, v)) if !k.is_empty() && !v.is_empty() => Ok((k.to_string(), v.to_string())),
        _ => Err(format!(
            "parameter {text:?} is not of the form KEY=VALUE with a non-empty key and value"
        )),
    }
}

/// One row of the parameter table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamRow {
    /// Name.
    pub name: String,
    /// Declared type (`string` when unset).
    pub kind: String,
    /// Default as stored in the OperatorVersion (multi-line values joined).
    pub default: String,
    /// Required.
    pub required: bool,
    /// Immutable.
    pub immutable: bool,
    /// Plan triggered by a change (empty = the fallback).
    pub trigger: String,
    /// Description.
    pub description: String,
}

/// A default on one line: maps and arrays as compact JSON.
fn display_default(p: &kudo_api::Parameter) -> String {
    let raw = p.default.as_deref().unwrap_or("");
    if matches!(p.kind(), ParameterType::Map | ParameterType::Array)
        && let Ok(value) = crate::yaml::parse_value(raw)
        && !value.is_null()
    {
        return value.to_string();
    }
    raw.trim_end().replace('\n', "\\n")
}

/// The rows of `package params list`, in declaration order.
pub fn params_rows(ov: &OperatorVersionSpec) -> Vec<ParamRow> {
    ov.parameters
        .iter()
        .map(|p| ParamRow {
            name: p.name.clone(),
            kind: p.kind().to_string(),
            default: display_default(p),
            required: p.is_required(),
            immutable: p.is_immutable(),
            trigger: p.trigger.clone().unwrap_or_default(),
            description: p.description.clone().unwrap_or_default(),
        })
        .collect()
}

/// The parameter table as aligned text: `NAME TYPE DEFAULT REQUIRED
/// IMMUTABLE TRIGGER`, one parameter per line. With `descriptions`, a
/// DESCRIPTION column is added.
pub fn params_table(ov: &OperatorVersionSpec, descriptions: bool) -> String {
    let mut rows: Vec<Vec<String>> = vec![
        [
            "NAME",
            "TYPE",
            "DEFAULT",
            "REQUIRED",
            "IMMUTABLE",
            "TRIGGER",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect(),
    ];
    if descriptions {
        rows[0].push("DESCRIPTION".into());
    }
    for r in params_rows(ov) {
        let mut row = vec![
            r.name,
            r.kind,
            r.default,
            r.required.to_string(),
            r.immutable.to_string(),
            r.trigger,
        ];
        if descriptions {
            row.push(r.description.replace('\n', " "));
        }
        rows.push(row);
    }
    let columns = rows[0].len();
    let widths: Vec<usize> = (0..columns)
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for row in rows {
        let mut line = String::new();
        for (c, cell) in row.iter().enumerate() {
            if c + 1 == columns {
                line.push_str(cell);
            } else {
                // Padded by hand: `format!("{cell:<width$}")` panics on
                // widths past 65,535 (a long default or name).
                let pad = widths[c].saturating_sub(cell.chars().count()) + 3;
                line.push_str(cell);
                line.extend(std::iter::repeat_n(' ', pad));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use kudo_api::Parameter;
    use serde_json::json;

    fn ov(params: Vec<Parameter>) -> OperatorVersionSpec {
        OperatorVersionSpec {
            parameters: params,
            ..Default::default()
        }
    }

    fn p(name: &str, kind: ParameterType, default: Option<&str>) -> Parameter {
        Parameter {
            name: name.into(),
            value_type: Some(kind),
            default: default.map(str::to_string),
            ..Default::default()
        }
    }

    #[test]
    fn scalars_stay_strings_and_collections_are_parsed() {
        let spec = ov(vec![
            p("REPLICAS", ParameterType::Integer, Some("3")),
            p("ENABLED", ParameterType::Boolean, Some("false")),
            p("PORTS", ParameterType::Array, Some("[80, 443]")),
            p("LABELS", ParameterType::Map, Some("team: a\n")),
            p("EMPTY", ParameterType::String, None),
        ]);
        let given = BTreeMap::from([("REPLICAS".to_string(), "5".to_string())]);
        let values = template_values(&spec, &given).unwrap();
        assert_eq!(values["REPLICAS"], json!("5"));
        assert_eq!(values["ENABLED"], json!("false"));
        assert_eq!(values["PORTS"], json!([80.0, 443.0]));
        assert!(values["PORTS"][0].is_f64());
        assert_eq!(values["LABELS"], json!({"team": "a"}));
        assert_eq!(values["EMPTY"], json!(""));
    }

    #[test]
    fn undeclared_values_are_invisible_to_templates_but_rejected_by_validation() {
        let spec = ov(vec![p("A", ParameterType::String, Some("x"))]);
        let given = BTreeMap::from([("B".to_string(), "y".to_string())]);
        assert!(!template_values(&spec, &given).unwrap().contains_key("B"));
        let err = validate_values(&spec, &given).unwrap_err().to_string();
        assert_eq!(
            err,
            "parameter B is not declared by the operator; declared parameters are: A"
        );
    }

    #[test]
    fn sixty_thousand_undeclared_values_make_one_short_problem() {
        let spec = ov(vec![p("A", ParameterType::String, Some("x"))]);
        let given: BTreeMap<String, String> = (0..60_000)
            .map(|i| (format!("U{i:05}"), "y".to_string()))
            .collect();
        let err = validate_values(&spec, &given).unwrap_err();
        assert_eq!(err.0.len(), 1);
        let text = err.to_string();
        assert!(text.len() < 500, "{} bytes", text.len());
        assert!(
            text.ends_with("U00019 and 59,980 more are not declared by the operator; declared parameters are: A"),
            "{text}"
        );
    }

    #[test]
    fn validation_says_what_value_was_expected() {
        let spec = ov(vec![p("REPLICAS", ParameterType::Integer, Some("3"))]);
        let given = BTreeMap::from([("REPLICAS".to_string(), "three".to_string())]);
        let err = validate_values(&spec, &given).unwrap_err().to_string();
        assert!(err.contains("REPLICAS") && err.contains("integer"), "{err}");
    }

    #[test]
    fn unparsable_map_value_is_an_error_naming_the_parameter() {
        let spec = ov(vec![p("LABELS", ParameterType::Map, None)]);
        let given = BTreeMap::from([("LABELS".to_string(), "a: [".to_string())]);
        let err = template_values(&spec, &given).unwrap_err().to_string();
        assert!(err.starts_with("parameter LABELS of type map"), "{err}");
    }

    #[test]
    fn assignments_split_at_the_first_equals_sign() {
        assert_eq!(
            parse_assignment("A=b=c").unwrap(),
            ("A".to_string(), "b=c".to_string())
        );
        assert!(parse_assignment("=x").is_err());
        assert!(parse_assignment("A=").is_err());
        assert!(parse_assignment("A").is_err());
    }

    #[test]
    fn table_lists_parameters_in_declaration_order() {
        let spec = ov(vec![
            p("ZETA", ParameterType::String, Some("z")),
            p("ALPHA", ParameterType::Integer, None),
        ]);
        let table = params_table(&spec, false);
        let lines: Vec<&str> = table.lines().collect();
        assert!(lines[0].starts_with("NAME"));
        assert!(lines[1].starts_with("ZETA "));
        assert!(lines[2].starts_with("ALPHA "));
        assert!(lines[2].contains("integer"));
    }
}
