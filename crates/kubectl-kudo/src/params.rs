//! Parameter values from `-p KEY=VALUE` flags and `-P` YAML files, parsed as
//! KUDO's CLI parses them.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use crate::cli::ParamArgs;
use crate::error::{CliError, Result};

/// Splits `KEY=VALUE` at the first `=`; empty keys and values are refused.
pub fn parse_flag(raw: &str) -> Result<(String, String)> {
    let Some((key, value)) = raw.split_once('=') else {
        return Err(CliError::Usage(format!(
            "parameter {raw:?} has no '='; write -p KEY=VALUE"
        )));
    };
    if key.trim().is_empty() {
        return Err(CliError::Usage(format!(
            "parameter {raw:?} has an empty name; write -p KEY=VALUE"
        )));
    }
    if value.is_empty() {
        return Err(CliError::Usage(format!(
            "parameter {key} has an empty value; write -p {key}=VALUE"
        )));
    }
    Ok((key.trim().to_string(), value.to_string()))
}

/// Parses the text of a `-P` file: a YAML map of names to values. Scalars
/// become their text, lists and maps become YAML text, null is refused.
pub fn parse_file_text(path: &Path, text: &str) -> Result<BTreeMap<String, String>> {
    let file_err = |message: String| CliError::File {
        path: path.to_path_buf(),
        message,
    };
    let doc: Value =
        serde_saphyr::from_str(text).map_err(|e| file_err(format!("not valid YAML: {e}")))?;
    let map = match doc {
        Value::Object(map) => map,
        Value::Null => return Ok(BTreeMap::new()),
        _ => {
            return Err(file_err(
                "expected a map of parameter names to values, e.g. `REPLICAS: 3`".into(),
            ));
        }
    };
    let mut out = BTreeMap::new();
    for (key, value) in map {
        let text = match value {
            Value::Null => {
                return Err(file_err(format!(
                    "parameter {key} has no value (null); give it a value or remove it"
                )));
            }
            Value::String(s) => s,
            Value::Bool(b) => b.to_string(),
            Value::Number(n) => n.to_string(),
            nested @ (Value::Array(_) | Value::Object(_)) => serde_saphyr::to_string(&nested)
                .map_err(|e| file_err(format!("cannot write parameter {key} as YAML: {e}")))?,
        };
        out.insert(key, text);
    }
    Ok(out)
}

/// All values given on the command line: files in order, then `-p` flags,
/// which win.
pub fn collect(args: &ParamArgs) -> Result<BTreeMap<String, String>> {
    let mut values = BTreeMap::new();
    for path in &args.parameter_files {
        let text = std::fs::read_to_string(path).map_err(|e| CliError::File {
            path: path.clone(),
            message: e.to_string(),
        })?;
        values.extend(parse_file_text(path, &text)?);
    }
    for raw in &args.parameters {
        let (key, value) = parse_flag(raw)?;
        values.insert(key, value);
    }
    Ok(values)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn flag_splits_at_the_first_equals_sign() {
        assert_eq!(
            parse_flag("URL=http://x?a=b").unwrap(),
            ("URL".to_string(), "http://x?a=b".to_string())
        );
    }

    #[test]
    fn flag_without_equals_or_with_empty_parts_is_a_usage_error() {
        for bad in ["REPLICAS", "=3", "REPLICAS="] {
            let err = parse_flag(bad).unwrap_err();
            assert_eq!(err.exit_code(), 2, "{bad}: {err}");
        }
    }

    #[test]
    fn file_scalars_become_text_and_collections_become_yaml() {
        let text = "REPLICAS: 3\nDEBUG: true\nNAME: web\nPORTS: [80, 443]\n";
        let values = parse_file_text(Path::new("p.yaml"), text).unwrap();
        assert_eq!(values["REPLICAS"], "3");
        assert_eq!(values["DEBUG"], "true");
        assert_eq!(values["NAME"], "web");
        let ports: Value = serde_saphyr::from_str(&values["PORTS"]).unwrap();
        assert_eq!(ports, serde_json::json!([80, 443]));
    }

    #[test]
    fn null_values_in_files_are_refused_naming_the_parameter() {
        let err = parse_file_text(Path::new("p.yaml"), "A: 1\nB:\n").unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("p.yaml") && text.contains("parameter B"),
            "{text}"
        );
    }

    #[test]
    fn flags_override_file_values() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("values.yaml");
        std::fs::write(&file, "A: from-file\nB: kept\n").unwrap();
        let args = ParamArgs {
            parameters: vec!["A=from-flag".into()],
            parameter_files: vec![PathBuf::from(&file)],
        };
        let values = collect(&args).unwrap();
        assert_eq!(values["A"], "from-flag");
        assert_eq!(values["B"], "kept");
    }
}
