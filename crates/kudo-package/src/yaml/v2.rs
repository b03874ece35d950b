//! YAML with the same bytes as Go's `gopkg.in/yaml.v2` `Marshal`, which
//! KUDO hashes (the dependencies hash) and uses to wrap map and
//! array parameter values. The emitter lives in `kudo-template` (KUDO's
//! `toYaml` needs the same bytes); this module names it for this crate.

pub use kudo_template::yaml::key_order;

/// Serializes `value` as yaml.v2 would.
pub fn to_string(value: &serde_json::Value) -> String {
    kudo_template::yaml::to_yaml_v2(value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn writes_nested_maps_sorted_with_empty_collections_inline() {
        let v = json!({"object": {"kind": "", "metadata": {"name": "x", "finalizers": [], "annotations": {}}, "apiVersion": ""}});
        assert_eq!(
            to_string(&v),
            "object:\n  apiVersion: \"\"\n  kind: \"\"\n  metadata:\n    annotations: {}\n    finalizers: []\n    name: x\n"
        );
    }

    #[test]
    fn sequences_in_maps_are_not_indented() {
        let v = json!({"a": ["x", {"b": 1, "c": [true]}], "d": [[1, 2]]});
        assert_eq!(
            to_string(&v),
            "a:\n- x\n- b: 1\n  c:\n  - true\nd:\n- - 1\n  - 2\n"
        );
    }

    #[test]
    fn strings_that_read_back_as_other_types_are_double_quoted() {
        for s in [
            "true",
            "yes",
            "on",
            "null",
            "~",
            "12",
            "0755",
            "1e3",
            "1_000",
            "0x1F",
            ".5",
            "2001-12-14",
            "1:20",
            "",
        ] {
            assert_eq!(
                to_string(&json!({ "k": s })),
                format!("k: \"{s}\"\n"),
                "{s}"
            );
        }
        for s in [
            "hello",
            "1.2.3",
            "v1",
            "a-b",
            "FancyValue",
            "8080/TCP",
            "-x",
        ] {
            assert_eq!(to_string(&json!({ "k": s })), format!("k: {s}\n"), "{s}");
        }
    }

    #[test]
    fn indicators_and_edge_spaces_use_single_quotes() {
        assert_eq!(to_string(&json!({"k": "a: b"})), "k: 'a: b'\n");
        assert_eq!(to_string(&json!({"k": " lead"})), "k: ' lead'\n");
        assert_eq!(to_string(&json!({"k": "*star"})), "k: '*star'\n");
        assert_eq!(to_string(&json!({"k": "it's #1"})), "k: 'it''s #1'\n");
        assert_eq!(to_string(&json!({"k": "- x"})), "k: '- x'\n");
    }

    #[test]
    fn control_characters_are_escaped_in_double_quotes() {
        assert_eq!(to_string(&json!({"k": "a\tb"})), "k: \"a\\tb\"\n");
    }

    #[test]
    fn multi_line_strings_are_literal_blocks_with_chomping() {
        let v = json!({"a": "x\ny", "b": "x\n", "c": "x\n\n"});
        assert_eq!(to_string(&v), "a: |-\n  x\n  y\nb: |\n  x\nc: |+\n  x\n\n");
        assert_eq!(to_string(&json!({"a": " x\ny"})), "a: |2-\n   x\n  y\n");
        assert_eq!(to_string(&json!({"a": "x \ny"})), "a: \"x \\ny\"\n");
    }

    #[test]
    fn long_plain_strings_fold_after_column_80() {
        let words = vec!["word"; 30].join(" ");
        let out = to_string(&json!({ "key": words }));
        let lines: Vec<&str> = out.lines().collect();
        assert!(lines.len() > 1, "{out}");
        assert!(lines[1].starts_with("  word"), "{out}");
        let back: serde_json::Value = crate::yaml::parse_value(&out).unwrap();
        assert_eq!(back["key"], json!(words));
    }

    #[test]
    fn long_quoted_strings_fold_and_read_back() {
        let words = vec!["word"; 30].join(" ");
        for text in [
            format!("*{words}"),
            format!("tab\t{words}  two  spaces  {words}"),
        ] {
            let out = to_string(&json!({ "key": text }));
            assert!(out.lines().count() > 1, "{out}");
            let back = crate::yaml::parse_value(&out).unwrap();
            assert_eq!(back["key"], json!(text), "{out}");
        }
    }

    #[test]
    fn floats_and_integers_print_like_go() {
        let v = json!({"f": 1.5, "big": 1000000.0, "i": 42});
        assert_eq!(to_string(&v), "big: 1e+06\nf: 1.5\ni: 42\n");
    }

    #[test]
    fn key_order_is_natural_and_puts_non_letters_first() {
        let mut keys = vec!["a10", "a2", "b", "_x", "A", "a"];
        keys.sort_by(|a, b| key_order(a, b));
        assert_eq!(keys, vec!["_x", "A", "a", "a2", "a10", "b"]);
    }
}
