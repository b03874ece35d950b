//! Cases where the two emitters this module replaced disagreed, settled by
//! what gopkg.in/yaml.v2 does (its `is_printable`, `is_break`, `resolve`
//! and `parseTimestamp`).

use super::to_yaml_v2;
use serde_json::json;

fn value_line(s: &str) -> String {
    to_yaml_v2(&json!({ "k": s }))
}

fn assert_double_quoted(texts: &[&str]) {
    for s in texts {
        assert_eq!(value_line(s), format!("k: \"{s}\"\n"), "{s}");
    }
}

fn assert_plain(texts: &[&str]) {
    for s in texts {
        assert_eq!(value_line(s), format!("k: {s}\n"), "{s}");
    }
}

#[test]
fn characters_outside_the_basic_plane_are_escaped() {
    assert_eq!(value_line("ok 😀"), "k: \"ok \\U0001F600\"\n");
}

#[test]
fn next_line_character_is_escaped_not_printed() {
    assert_eq!(value_line("a\u{85}b"), "k: \"a\\Nb\"\n");
}

#[test]
fn line_separator_breaks_a_single_quoted_scalar_and_indents_the_rest() {
    assert_eq!(value_line("a\u{2028}b"), "k: 'a\u{2028}  b'\n");
}

#[test]
fn literal_block_treats_line_separator_as_a_line_break() {
    let out = to_yaml_v2(&json!({"a": "x\u{2028}y\n", "b": 1}));
    assert_eq!(out, "a: |\n  x\u{2028}  y\nb: 1\n");
}

#[test]
fn merge_key_text_is_written_plain() {
    assert_plain(&["<<"]);
}

#[test]
fn text_starting_with_a_byte_order_mark_is_escaped_throughout() {
    assert_eq!(value_line("\u{FEFF}a b"), "k: \"\\uFEFF\\x61\\x20\\x62\"\n");
}

#[test]
fn timestamps_are_quoted_only_in_layouts_go_time_parse_accepts() {
    assert_double_quoted(&[
        "2001-12-14",
        "2001-1-2",
        "2000-02-29",
        "2001-12-14 21:59:43.10",
        "2001-12-14T21:59:43Z",
        "2001-12-14t21:59:43.5+01:00",
    ]);
    assert_plain(&[
        "2001-12-14T21:59:43",
        "2001-13-14",
        "2001-02-29",
        "2001-12-14 25:00:00",
        "2001-12-14T21:59:43+0100",
        "12001-12-14",
    ]);
}

#[test]
fn numbers_go_cannot_parse_stay_plain() {
    assert_plain(&["1e999", ".5e999", "-0xFFFFFFFFFFFFFFFF", "0x+5", "-+5"]);
    assert_double_quoted(&["1e99", "0xFFFFFFFFFFFFFFFF", "0B101", "-0b1"]);
}

#[test]
fn integers_beyond_int64_print_as_float64() {
    let out = to_yaml_v2(&json!({ "big": u64::MAX, "small": i64::MIN }));
    assert_eq!(
        out,
        "big: 1.8446744073709552e+19\nsmall: -9223372036854775808\n"
    );
}

#[test]
fn multi_line_keys_are_double_quoted() {
    assert_eq!(to_yaml_v2(&json!({"a\nb": 1})), "\"a\\nb\": 1\n");
}

#[test]
fn double_quoted_fold_escapes_a_space_that_would_start_the_next_line() {
    let text = format!("\t{}  b", "a".repeat(76));
    let expected = format!("k: \"\\t{}\n  \\ b\"\n", "a".repeat(76));
    assert_eq!(value_line(&text), expected);
}
