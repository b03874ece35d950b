//! Printing data (`-o yaml|json`) and kubectl-style tables, and writing
//! to stdout and stderr without a panic when the reader has gone
//! (`kubectl kudo completion bash | head`).

use comfy_table::{ContentArrangement, Table, presets};
use serde::Serialize;
use serde_json::Value;

use crate::error::{CliError, Result};

/// Writes to stdout (`out!`, `outln!`). When the reader has closed the
/// pipe, the command has nothing left to say: the process ends quietly
/// with 0, as a Go kubectl ended by SIGPIPE shows nothing.
pub fn write_stdout(args: std::fmt::Arguments<'_>) {
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_fmt(args).and_then(|()| out.flush()) {
        gone(&e);
    }
}

/// Writes to stderr (`errln!`); a closed stderr ends the process as a
/// closed stdout does.
pub fn write_stderr(args: std::fmt::Arguments<'_>) {
    use std::io::Write as _;
    let mut err = std::io::stderr().lock();
    if let Err(e) = err.write_fmt(args).and_then(|()| err.flush()) {
        gone(&e);
    }
}

fn gone(e: &std::io::Error) {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        std::process::exit(0);
    }
    // Nowhere left to report it: the exit code says something failed.
    std::process::exit(1);
}

/// The formats data is printed in (`-o yaml|json`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DataFormat {
    /// YAML
    Yaml,
    /// JSON
    Json,
}

/// Serialises `value` as YAML or JSON text (with a trailing newline).
/// `metadata.managedFields` is dropped everywhere, as kubectl hides it.
pub fn format_data<T: Serialize>(value: &T, format: DataFormat) -> Result<String> {
    let mut json = serde_json::to_value(value)
        .map_err(|e| CliError::Other(format!("cannot serialise output: {e}")))?;
    strip_managed_fields(&mut json);
    match format {
        DataFormat::Json => serde_json::to_string_pretty(&json)
            .map(|s| s + "\n")
            .map_err(|e| CliError::Other(format!("cannot write JSON: {e}"))),
        DataFormat::Yaml => serde_saphyr::to_string(&json)
            .map_err(|e| CliError::Other(format!("cannot write YAML: {e}"))),
    }
}

/// Wraps objects in a `v1` `List`, as `kubectl get -o yaml` prints several.
pub fn list_of<T: Serialize>(items: &[T]) -> Result<Value> {
    let items = items
        .iter()
        .map(serde_json::to_value)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| CliError::Other(format!("cannot serialise output: {e}")))?;
    Ok(serde_json::json!({"apiVersion": "v1", "kind": "List", "items": items}))
}

fn strip_managed_fields(value: &mut Value) {
    match value {
        Value::Object(map) => {
            if let Some(Value::Object(meta)) = map.get_mut("metadata") {
                meta.remove("managedFields");
            }
            for v in map.values_mut() {
                strip_managed_fields(v);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(strip_managed_fields),
        _ => {}
    }
}

/// A borderless table with upper-case headers, columns three spaces apart,
/// never wrapped (so output is the same on any terminal width).
pub fn table(headers: &[&str], rows: Vec<Vec<String>>) -> String {
    let mut table = Table::new();
    table
        .load_style(presets::NOTHING)
        .set_content_arrangement(ContentArrangement::Disabled)
        .force_no_tty()
        .set_header(headers.iter().map(|h| h.to_uppercase()).collect::<Vec<_>>());
    for row in rows {
        table.add_row(row);
    }
    for column in table.column_iter_mut() {
        column.set_padding((0, 3));
    }
    let mut text = table.trim_fmt();
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn tables_align_columns_without_borders_or_trailing_spaces() {
        let text = table(
            &["name", "default"],
            vec![
                vec!["REPLICAS".into(), "3".into()],
                vec!["A".into(), String::new()],
            ],
        );
        assert_eq!(text, "NAME       DEFAULT\nREPLICAS   3\nA\n");
    }

    #[test]
    fn data_output_drops_managed_fields() {
        let value = serde_json::json!({"metadata": {"name": "x", "managedFields": [{}]}});
        let yaml = format_data(&value, DataFormat::Yaml).unwrap();
        assert!(!yaml.contains("managedFields"), "{yaml}");
        let json = format_data(&value, DataFormat::Json).unwrap();
        assert_eq!(json, "{\n  \"metadata\": {\n    \"name\": \"x\"\n  }\n}\n");
    }
}
