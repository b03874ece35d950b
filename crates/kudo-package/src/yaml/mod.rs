//! YAML in and out: rendered templates are split into documents the way
//! KUDO splits them and parsed with YAML 1.1 integer rules (legacy octal,
//! as Kubernetes tooling does); [`v2`] writes YAML exactly as Go's
//! `gopkg.in/yaml.v2` does, which the dependencies hash needs.

pub mod v2;

use serde_json::Value;

/// Parser options used for everything this crate reads: `0755` is octal
/// (493), as in Kubernetes' YAML 1.1 decoding.
pub fn parse_options() -> serde_saphyr::Options {
    serde_saphyr::options! { legacy_octal_numbers: true }
}

/// Parses one YAML document into a JSON value.
pub fn parse_value(text: &str) -> Result<Value, String> {
    if is_blank_document(text) {
        return Ok(Value::Null);
    }
    serde_saphyr::from_str_with_options::<Value>(text, parse_options()).map_err(|e| e.to_string())
}

/// Whether a document holds only whitespace and comments (KUDO skips those).
pub fn is_blank_document(text: &str) -> bool {
    text.lines().all(|line| {
        let t = line.trim();
        t.is_empty() || t.starts_with('#')
    })
}

/// Splits a multi-document text at `---` separator lines, keeping each
/// document's text. Blank and comment-only documents are dropped.
pub fn split_documents(text: &str) -> Vec<String> {
    let mut docs = Vec::new();
    let mut current = String::new();
    for line in text.split_inclusive('\n') {
        if is_separator(line) {
            docs.push(std::mem::take(&mut current));
            // Content after `--- ` on the same line belongs to the next document.
            let rest = line.trim_end().get(3..).unwrap_or("").trim_start();
            if !rest.is_empty() && !rest.starts_with('#') {
                current.push_str(rest);
                current.push('\n');
            }
            continue;
        }
        current.push_str(line);
    }
    docs.push(current);
    docs.retain(|d| !is_blank_document(d));
    docs
}

fn is_separator(line: &str) -> bool {
    let line = line.trim_end_matches(['\n', '\r']);
    match line.strip_prefix("---") {
        Some(rest) => rest.is_empty() || rest.starts_with([' ', '\t']),
        None => false,
    }
}

/// Parses a rendered template into its non-empty documents, in order.
/// Errors name the 1-based document number.
pub fn parse_documents(text: &str) -> Result<Vec<Value>, String> {
    let mut out = Vec::new();
    for (i, doc) in split_documents(text).iter().enumerate() {
        let value = parse_value(doc).map_err(|e| format!("document {}: {e}", i + 1))?;
        if !value.is_null() {
            out.push(value);
        }
    }
    Ok(out)
}

/// Writes objects as a multi-document YAML stream.
pub fn to_yaml(value: &Value) -> String {
    serde_saphyr::to_string(value).unwrap_or_else(|e| format!("# cannot print object: {e}\n"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn splits_at_separator_lines_and_skips_comment_only_documents() {
        let text = "---\na: 1\n---\n# only a comment\n\n--- # trailing\nb: 2\n---\n\n";
        let docs = parse_documents(text).unwrap();
        assert_eq!(docs, vec![json!({"a": 1}), json!({"b": 2})]);
    }

    #[test]
    fn legacy_octal_numbers_are_octal() {
        let v = parse_value("mode: 0755\nname: '0755'\n").unwrap();
        assert_eq!(v, json!({"mode": 493, "name": "0755"}));
    }

    #[test]
    fn parse_errors_name_the_document() {
        let err = parse_documents("a: 1\n---\nb: [\n").unwrap_err();
        assert!(err.starts_with("document 2:"), "{err}");
    }
}
