//! Parameter values from `-p KEY=VALUE` flags and `-P` YAML files, parsed as
//! KUDO's CLI parses them.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

use kudo_api::preview;
use serde_json::Value;

use crate::cli::ParamArgs;
use crate::error::{CliError, Result};

/// Splits `KEY=VALUE` at the first `=`; empty keys and values are refused.
/// Messages show a long argument as a prefix and its length.
pub fn parse_flag(raw: &str) -> Result<(String, String)> {
    let Some((key, value)) = raw.split_once('=') else {
        return Err(CliError::Usage(format!(
            "parameter {} has no '='; write -p KEY=VALUE",
            preview(raw)
        )));
    };
    if key.trim().is_empty() {
        return Err(CliError::Usage(format!(
            "parameter {} has an empty name; write -p KEY=VALUE",
            preview(raw)
        )));
    }
    if value.is_empty() {
        let key = shown_name(key.trim());
        return Err(CliError::Usage(format!(
            "parameter {key} has an empty value; write -p {key}=VALUE"
        )));
    }
    Ok((key.trim().to_string(), value.to_string()))
}

/// A parameter name as messages show it: as is, or as a [`preview`] when
/// it is too long to be a name.
fn shown_name(name: &str) -> String {
    if name
        .chars()
        .nth(kudo_api::param_value::PREVIEW_MAX_CHARS)
        .is_some()
    {
        preview(name).to_string()
    } else {
        name.to_string()
    }
}

/// Parses the text of a `-P` file: a YAML map of names to values. Scalars
/// become their text, lists and maps become YAML text, null is refused.
pub fn parse_file_text(path: &Path, text: &str) -> Result<BTreeMap<String, String>> {
    let file_err = |message: String| CliError::File {
        path: path.to_path_buf(),
        message,
    };
    let doc = one_document(text).map_err(|e| file_err(yaml_problem(&e)))?;
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
                    "parameter {} has no value (null); give it a value or remove it",
                    shown_name(&key)
                )));
            }
            Value::String(s) => s,
            Value::Bool(b) => b.to_string(),
            Value::Number(n) => n.to_string(),
            nested @ (Value::Array(_) | Value::Object(_)) => serde_saphyr::to_string(&nested)
                .map_err(|e| {
                    file_err(format!(
                        "cannot write parameter {} as YAML: {e}",
                        shown_name(&key)
                    ))
                })?,
        };
        out.insert(key, text);
    }
    Ok(out)
}

/// The one YAML document of a file; empty documents around it (a trailing
/// `---`) are ignored, a second non-empty one is an error.
fn one_document(text: &str) -> std::result::Result<Value, serde_saphyr::Error> {
    match serde_saphyr::from_str(text) {
        Err(e)
            if matches!(
                e.without_snippet(),
                serde_saphyr::Error::MultipleDocuments { .. }
            ) =>
        {
            let mut docs = serde_saphyr::from_multiple::<Value>(text)?
                .into_iter()
                .filter(|doc| !doc.is_null());
            match (docs.next(), docs.next()) {
                (first, None) => Ok(first.unwrap_or(Value::Null)),
                _ => Err(e),
            }
        }
        parsed => parsed,
    }
}

/// What is wrong with a `-P` file that is not one YAML map, in our words:
/// the parser's own messages advise calls of its API (`from_str_multiple`,
/// `DuplicateKeyPolicy`) and quote source lines.
fn yaml_problem(e: &serde_saphyr::Error) -> String {
    use serde_saphyr::Error as E;
    let line = |location: &serde_saphyr::Location| match location.line() {
        0 => String::new(),
        n => format!(" (line {n})"),
    };
    match e.without_snippet() {
        E::DuplicateMappingKey {
            key: Some(key),
            location,
        } => format!(
            "key {} appears twice{}; keep one of them",
            shown_name(key),
            line(location)
        ),
        E::DuplicateMappingKey {
            key: None,
            location,
        } => {
            format!("a key appears twice{}; keep one of them", line(location))
        }
        E::MultipleDocuments { location, .. } => {
            let second = match location.line() {
                0 => String::new(),
                n => format!(" (the second starts at line {n})"),
            };
            format!(
                "the file holds more than one YAML document{second}; \
                 put all parameters into one map, without `---` lines"
            )
        }
        other => {
            let text = other.to_string();
            let detail = match text.char_indices().nth(MAX_DETAIL_CHARS) {
                Some((cut, _)) => format!("{}…", &text[..cut]),
                None => text,
            };
            format!("not valid YAML: {detail}")
        }
    }
}

/// Parser messages longer than this are cut.
const MAX_DETAIL_CHARS: usize = 200;

/// Most bytes read of one `-P` file: parameter values are small, and a
/// path such as `/dev/zero` or a pipe must not fill the memory.
pub const MAX_PARAMETER_FILE_BYTES: u64 = 4 * 1024 * 1024;

/// The text of a `-P` file, refused past [`MAX_PARAMETER_FILE_BYTES`].
pub fn read_parameter_file(path: &Path) -> Result<String> {
    read_capped(
        path,
        MAX_PARAMETER_FILE_BYTES,
        "a parameter file must be a YAML map of parameter values; \
         give larger data to the operator in a ConfigMap or Secret",
    )
}

/// Reads at most `limit` bytes of UTF-8 text from `path`; a file (or
/// device, or pipe) that has more is refused without reading the rest.
fn read_capped(path: &Path, limit: u64, expected: &'static str) -> Result<String> {
    let file_err = |message: String| CliError::File {
        path: path.to_path_buf(),
        message,
    };
    let file = std::fs::File::open(path).map_err(|e| file_err(e.to_string()))?;
    let mut bytes = Vec::new();
    file.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| file_err(e.to_string()))?;
    if u64::try_from(bytes.len()).unwrap_or(u64::MAX) > limit {
        return Err(CliError::FileTooLarge {
            path: path.to_path_buf(),
            limit: format!("{} MiB", limit / (1024 * 1024)),
            expected,
        });
    }
    String::from_utf8(bytes).map_err(|e| {
        file_err(format!(
            "not UTF-8 text (invalid byte at offset {})",
            e.utf8_error().valid_up_to()
        ))
    })
}

/// All values given on the command line: files in order, then `-p` flags,
/// which win.
pub fn collect(args: &ParamArgs) -> Result<BTreeMap<String, String>> {
    let mut values = BTreeMap::new();
    for path in &args.parameter_files {
        let text = read_parameter_file(path)?;
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
    fn a_key_given_twice_is_named_in_our_words() {
        let err = parse_file_text(Path::new("params.yaml"), "A: 1\nREPLICAS: 2\nREPLICAS: 3\n")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("params.yaml: key REPLICAS appears twice (line 3)"),
            "{err}"
        );
        assert!(!err.contains("DuplicateKeyPolicy"), "{err}");
    }

    #[test]
    fn a_second_yaml_document_is_refused_in_our_words() {
        let err = parse_file_text(Path::new("params.yaml"), "A: 1\n---\nB: 2\n")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(
                "params.yaml: the file holds more than one YAML document \
                 (the second starts at line 3)"
            ),
            "{err}"
        );
        assert!(!err.contains("from_str_multiple"), "{err}");
    }

    #[test]
    fn empty_documents_around_the_map_are_ignored() {
        let values = parse_file_text(Path::new("p.yaml"), "---\nA: 1\n---\n").unwrap();
        assert_eq!(values["A"], "1");
    }

    #[test]
    fn yaml_syntax_errors_leave_out_the_quoted_source() {
        let huge = "x".repeat(5 * 1024 * 1024);
        let text = format!("A: [{huge}\n{huge}\n");
        let err = parse_file_text(Path::new("params.yaml"), &text)
            .unwrap_err()
            .to_string();
        assert!(err.len() < 400, "{} bytes: {}", err.len(), &err[..400]);
        assert!(err.contains("not valid YAML"), "{err}");
    }

    #[test]
    fn a_huge_flag_argument_is_echoed_as_a_prefix_with_its_length() {
        let huge = "x".repeat(5 * 1024 * 1024);
        for raw in [huge.clone(), format!("={huge}"), format!("{huge}=")] {
            let err = parse_flag(&raw).unwrap_err().to_string();
            assert!(err.len() < 300, "{} bytes", err.len());
            assert!(err.contains("bytes)"), "{err}");
        }
    }

    #[test]
    fn a_file_just_over_the_cap_is_refused_and_one_at_the_cap_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let cap = usize::try_from(MAX_PARAMETER_FILE_BYTES).unwrap();
        // A YAML comment line filling the file: valid text of any length.
        let at_cap = format!("A: 1\n#{}", "x".repeat(cap - 6));
        assert_eq!(at_cap.len(), cap);
        let file = dir.path().join("at-cap.yaml");
        std::fs::write(&file, &at_cap).unwrap();
        assert_eq!(read_parameter_file(&file).unwrap().len(), cap);

        let over = dir.path().join("over.yaml");
        std::fs::write(&over, format!("{at_cap}x")).unwrap();
        let err = read_parameter_file(&over).unwrap_err().to_string();
        assert_eq!(
            err,
            format!(
                "{} is larger than 4 MiB; a parameter file must be a YAML map of parameter \
                 values; give larger data to the operator in a ConfigMap or Secret",
                over.display()
            )
        );
    }

    #[test]
    fn a_file_that_is_not_utf8_is_refused_naming_the_offset() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("bin.yaml");
        std::fs::write(&file, b"A: \xff\n").unwrap();
        let err = read_parameter_file(&file).unwrap_err().to_string();
        assert!(
            err.contains("not UTF-8 text (invalid byte at offset 3)"),
            "{err}"
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
