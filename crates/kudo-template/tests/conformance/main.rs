#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! Conformance table: each case is a template, an input context and either
//! Go's exact output or a substring of the error Go's text/template + sprig
//! v2.22 (as KUDO configured them) would report. Expected values come from the
//! documented semantics of Go `text/template`, `fmt` and sprig.

use serde_json::{Value, json};

/// The default context: KUDO-like root fields plus values of every Go type.
fn ctx() -> Value {
    json!({
        "Name": "zk", "Namespace": "ns", "OperatorName": "zookeeper",
        "Params": {
            "NODE_COUNT": "3", "FLAG": "false", "EMPTY": "", "SECRET": "aGVsbG8=",
            "CPU": "250m", "NUM": "7", "LIST": ["x", "y"],
            "TOPOLOGY": [{"datacenter": "dc1", "nodes": 3}, {"datacenter": "dc2", "nodes": 2}]
        },
        "f80": 80.0, "fmil": 1000000.0, "fhalf": 0.5, "fbig": 123456789.0,
        "i": 42, "imil": 1000000,
        "m": {"b": "x", "a": 1},
        "l": ["a", 1, true],
        "nil": null, "t": true, "f": false, "el": [], "em": {}, "s": "abc",
        "nl": ["a", null],
        "deep": {"a": {"b": {"c": "deep"}}}
    })
}

mod sprig;
mod text_template;

pub(crate) enum Want {
    Out(&'static str),
    Err(&'static str),
}

#[test]
fn conformance_table_matches_go_semantics() {
    let tables = [
        ("text_template", text_template::CASES),
        ("sprig", sprig::CASES),
    ];
    let count: usize = tables.iter().map(|(_, cases)| cases.len()).sum();
    assert!(count >= 150, "only {count} cases");
    let default_ctx = ctx();
    let mut failures = Vec::new();
    let cases = tables
        .iter()
        .flat_map(|(table, cases)| cases.iter().enumerate().map(move |(i, c)| (*table, i, c)));
    for (table, i, (tmpl, data, want)) in cases {
        let data: Value = match data {
            Some(text) => serde_json::from_str(text).unwrap(),
            None => default_ctx.clone(),
        };
        let got = kudo_template::render("t", tmpl, &data);
        let ok = match (want, &got) {
            (Want::Out(expected), Ok(out)) => out == expected,
            (Want::Err(needle), Err(e)) => e.to_string().contains(needle),
            _ => false,
        };
        if !ok {
            let want_text = match want {
                Want::Out(s) => format!("output {s:?}"),
                Want::Err(s) => format!("error containing {s:?}"),
            };
            failures.push(format!(
                "{table} case {i}: {tmpl:?}\n  want {want_text}\n  got  {got:?}"
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn missing_key_error_names_template_line_column_and_action() {
    let text =
        "apiVersion: apps/v1\nkind: StatefulSet\nspec:\n  replicas: {{ .Params.NODE_COUNT }}\n";
    let err = kudo_template::render("templates/statefulset.yaml", text, &json!({"Params": {}}))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "templates/statefulset.yaml:4:16: executing \"templates/statefulset.yaml\" at <.Params.NODE_COUNT>: map has no entry for key \"NODE_COUNT\""
    );
    assert_eq!((err.line, err.column), (4, 16));
}

#[test]
fn parse_error_names_the_unknown_function_and_its_position() {
    let err = kudo_template::Template::parse("templates/cm.yaml", "a: 1\nb: {{ frobnicate .x }}")
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "templates/cm.yaml:2:7: function \"frobnicate\" not defined"
    );
}

#[test]
fn long_failing_actions_are_shortened_in_the_error() {
    let err = kudo_template::render("t", r#"{{ eq .Params.NODE_COUNT 3 }}"#, &ctx()).unwrap_err();
    assert!(
        err.message.contains("at <eq .Params.NODE_COUN...>"),
        "{}",
        err.message
    );
}
