//! Warnings for string parameters written into YAML as they are.
//!
//! `note: {{ .Params.NOTE }}` puts the parameter's text into the YAML
//! source: a value holding a newline, `: ` or `---` adds keys or whole
//! documents (a ClusterRoleBinding, say). `| quote` or `toYaml` keeps any
//! value a single scalar. Enum parameters are safe (the webhook allows
//! only the listed values), and so are typed ones (validated as numbers,
//! booleans, lists or maps).

use kudo_api::ParameterType;

use super::Report;
use crate::Package;

pub(super) fn verify_quoting(pkg: &Package, r: &mut Report) {
    let free_text: Vec<&str> = pkg
        .params
        .parameters
        .iter()
        .filter(|p| p.value_type.unwrap_or_default() == ParameterType::String)
        .filter(|p| p.enum_values.is_none())
        .map(|p| p.name.as_str())
        .collect();
    for (name, text) in &pkg.templates {
        for (line, param) in unquoted_uses(text) {
            if free_text.contains(&param) {
                r.warning(
                    format!("templates/{name}:{line}"),
                    format!(
                        "string parameter {param} is written into YAML unquoted; a value with a \
                         newline, \": \" or \"---\" changes the document (even adds objects): \
                         write {{{{ .Params.{param} | quote }}}}, or toYaml for structured values"
                    ),
                );
            }
        }
    }
}

/// `(line, parameter)` for every action that prints `.Params.X` bare (no
/// function, no pipe) where YAML reads it as a plain value.
fn unquoted_uses(text: &str) -> Vec<(usize, &str)> {
    let mut found = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let mut rest = line;
        let mut offset = 0;
        while let Some(start) = rest.find("{{") {
            let Some(len) = rest[start..].find("}}") else {
                break;
            };
            let before = &line[..offset + start];
            let action = &rest[start + 2..start + len];
            if let Some(param) = bare_param(action)
                && in_value_position(before)
            {
                found.push((index + 1, param));
            }
            offset += start + len + 2;
            rest = &rest[start + len + 2..];
        }
    }
    found
}

fn bare_param(action: &str) -> Option<&str> {
    let inner = action.trim_start_matches('-').trim_end_matches('-').trim();
    let name = inner
        .strip_prefix(".Params.")
        .or_else(|| inner.strip_prefix("$.Params."))?;
    let ident = !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    ident.then_some(name)
}

/// Whether the action stands where YAML reads a plain scalar: after a
/// key's colon, a list dash, or inside a flow list. Text inside quotes,
/// comments or running text (HTML in a block scalar, say) is not.
fn in_value_position(before: &str) -> bool {
    let trimmed = before.trim_end();
    if trimmed.trim_start().starts_with('#') {
        return false;
    }
    trimmed.is_empty() || trimmed.ends_with([':', '-', '[', ','])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bare_string_parameter_in_a_value_is_found_with_its_line() {
        let text =
            "kind: ConfigMap\ndata:\n  note: {{ .Params.NOTE }}\n  other: {{- $.Params.X -}}\n";
        assert_eq!(unquoted_uses(text), vec![(3, "NOTE"), (4, "X")]);
    }

    #[test]
    fn quoted_piped_and_commented_uses_are_not() {
        let text = "a: {{ .Params.A | quote }}\nb: \"{{ .Params.B }}\"\nc: '{{ .Params.C }}'\n# d: {{ .Params.D }}\ne: {{ toYaml .Params.E }}\n";
        assert!(unquoted_uses(text).is_empty(), "{:?}", unquoted_uses(text));
    }

    const OPERATOR: &str = "name: n\noperatorVersion: 0.1.0\nkubernetesVersion: 1.15.0\ntasks:\n  - name: app\n    kind: Apply\n    spec:\n      resources: [cm.yaml]\nplans:\n  deploy:\n    phases:\n      - name: p\n        steps:\n          - name: s\n            tasks: [app]\n";

    #[test]
    fn verify_warns_only_about_free_text_string_parameters() {
        let params = "parameters:\n  - name: NOTE\n  - name: MODE\n    enum: [a, b]\n  - name: PORT\n    type: integer\n    default: \"1\"\n";
        let cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  note: {{ .Params.NOTE }}\n  mode: {{ .Params.MODE }}\n  port: \"{{ .Params.PORT }}\"\n  p2: {{ .Params.PORT }}\n";
        let files = std::collections::BTreeMap::from([
            ("operator.yaml".to_string(), OPERATOR.as_bytes().to_vec()),
            ("params.yaml".to_string(), params.as_bytes().to_vec()),
            ("templates/cm.yaml".to_string(), cm.as_bytes().to_vec()),
        ]);
        let report = crate::load_from_files(files, "n").unwrap().verify();
        let text = report.to_string();
        assert_eq!(report.warnings.len(), 1, "{text}");
        assert!(
            text.contains(
                "templates/cm.yaml:6: string parameter NOTE is written into YAML unquoted"
            ) && text.contains("{{ .Params.NOTE | quote }}"),
            "{text}"
        );
        assert!(!report.has_errors(), "{text}");
    }

    #[test]
    fn running_text_in_a_block_scalar_is_not_a_yaml_value() {
        let text = "data:\n  index.html: |\n    <h1>{{ .Params.MESSAGE }}</h1>\n";
        assert!(unquoted_uses(text).is_empty());
    }

    #[test]
    fn several_actions_on_one_line_are_each_looked_at() {
        let text = "args: [\"{{ .Params.A }}\", {{ .Params.B }}]\n";
        assert_eq!(unquoted_uses(text), vec![(1, "B")]);
    }
}
