#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::unwrap_in_result
)]
//! Which output carries parameter values: followed through variables,
//! `range`, `with`, `template` calls and functions, so a caller can tell a
//! value from the template's own text.

use kudo_template::{Limits, Rendered, Template, ValueText};
use serde_json::{Value, json};

fn data() -> Value {
    json!({
        "Name": "inst",
        "Namespace": "ns",
        "Params": {"GREETING": "hi", "OTHER": "x", "LIST": ["a", "b"], "MAP": {"k": "v"}},
    })
}

/// The traced pieces as (text, params, fragment, line).
fn traced(text: &str) -> Vec<(String, Vec<String>, bool, usize)> {
    let template = Template::parse("t.yaml", text).unwrap();
    let data = data();
    let r: Rendered<'_> = template.render_traced(&data, &Limits::default()).unwrap();
    r.values
        .iter()
        .map(|v: &ValueText<'_>| {
            (
                r.text[v.start..v.end].to_string(),
                v.params().into_iter().map(String::from).collect(),
                v.fragment(),
                v.line,
            )
        })
        .collect()
}

/// The traced pieces as (text, params, fragment).
fn pieces(text: &str) -> Vec<(String, Vec<String>, bool)> {
    traced(text)
        .into_iter()
        .map(|(text, params, fragment, _)| (text, params, fragment))
        .collect()
}

fn one(s: &str, params: &[&str], fragment: bool) -> Vec<(String, Vec<String>, bool)> {
    vec![(
        s.to_string(),
        params.iter().map(|p| p.to_string()).collect(),
        fragment,
    )]
}

#[test]
fn template_text_and_non_parameter_fields_carry_nothing() {
    assert!(pieces("name: {{ .Name }}-{{ .Namespace }}\nkind: {{ \"ConfigMap\" }}\n").is_empty());
    assert!(pieces("{{ range until 3 }}---\n{{ end }}").is_empty());
}

#[test]
fn a_parameter_is_traced_with_its_name_and_place() {
    let r = traced("a: b\ngreeting: {{ .Params.GREETING }}\n");
    assert_eq!(
        r,
        vec![("hi".to_string(), vec!["GREETING".to_string()], false, 2)]
    );
}

#[test]
fn values_are_followed_through_variables_dot_and_functions() {
    assert_eq!(
        pieces("{{ $g := .Params.GREETING }}{{ $g }}"),
        one("hi", &["GREETING"], false)
    );
    assert_eq!(
        pieces("{{ with .Params.GREETING }}{{ . }}{{ end }}"),
        one("hi", &["GREETING"], false)
    );
    assert_eq!(
        pieces("{{ .Params.GREETING | upper | printf \"%s!\" }}"),
        one("HI!", &["GREETING"], false)
    );
    assert_eq!(
        pieces("{{ $.Params.GREETING }}"),
        one("hi", &["GREETING"], false)
    );
    assert_eq!(
        pieces("{{ $p := .Params }}{{ $p.OTHER }}"),
        one("x", &["OTHER"], false)
    );
    assert_eq!(
        pieces("{{ index .Params \"OTHER\" }}"),
        one("x", &["OTHER"], false)
    );
    assert_eq!(
        pieces("{{ printf \"%s%s\" .Params.GREETING .Params.OTHER }}"),
        one("hix", &["GREETING", "OTHER"], false)
    );
}

#[test]
fn range_items_carry_the_list_and_params_entries_their_own_name() {
    assert_eq!(
        pieces("{{ range .Params.LIST }}{{ . }}{{ end }}"),
        vec![
            ("a".to_string(), vec!["LIST".to_string()], false),
            ("b".to_string(), vec!["LIST".to_string()], false)
        ]
    );
    let p =
        pieces("{{ range $k, $v := .Params }}{{ if eq $k \"OTHER\" }}{{ $v }}{{ end }}{{ end }}");
    assert_eq!(p, one("x", &["OTHER"], false));
}

#[test]
fn template_calls_and_built_maps_carry_what_they_were_given() {
    assert_eq!(
        pieces("{{ define \"f\" }}<{{ . }}>{{ end }}{{ template \"f\" .Params.GREETING }}"),
        one("hi", &["GREETING"], false)
    );
    assert_eq!(
        pieces("{{ $m := dict \"a\" .Params.OTHER }}{{ $m.a }}"),
        one("x", &["OTHER"], false)
    );
    // `set` changes a shared map: a read through another name still carries it.
    assert_eq!(
        pieces("{{ $m := dict }}{{ $n := $m }}{{ $_ := set $m \"a\" .Params.OTHER }}{{ $n.a }}"),
        one("x", &["OTHER"], false)
    );
}

#[test]
fn to_yaml_and_indent_make_a_fragment_and_quote_does_not() {
    assert_eq!(
        pieces("{{ toYaml .Params.MAP }}"),
        one("k: v\n", &["MAP"], true)
    );
    assert_eq!(
        pieces("{{ .Params.GREETING | indent 2 }}"),
        one("  hi", &["GREETING"], true)
    );
    assert_eq!(
        pieces("{{ .Params.GREETING | quote }}"),
        one("\"hi\"", &["GREETING"], false)
    );
    // Mixed with a raw value, the result is no longer only a fragment.
    assert_eq!(
        pieces("{{ printf \"%s%s\" (toYaml .Params.MAP) .Params.OTHER }}"),
        one("k: v\nx", &["MAP", "OTHER"], false)
    );
}

#[test]
fn the_whole_params_map_names_no_single_parameter() {
    let p = pieces("{{ toJson .Params }}");
    assert_eq!(p.len(), 1);
    assert!(p[0].1.is_empty() && p[0].2);
}
