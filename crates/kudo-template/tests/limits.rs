#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::unwrap_in_result
)]
//! Render budgets: functions that size memory from an argument fail before
//! allocating, output is counted as it is written, and values built along
//! the way count too. None of these tests allocates more than a few MiB:
//! without the budgets they would ask for gigabytes or terabytes.

use kudo_template::{Error, ErrorKind, Limits, Template};
use serde_json::{Value, json};

fn render_with(text: &str, data: &Value, limits: Limits) -> Result<String, Error> {
    Template::parse("templates/cm.yaml", text)
        .unwrap()
        .render_with(data, &limits)
}

fn render(text: &str, data: &Value) -> Result<String, Error> {
    render_with(text, data, Limits::default())
}

fn params(pairs: &[(&str, &str)]) -> Value {
    let params: serde_json::Map<String, Value> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), json!(v)))
        .collect();
    json!({ "Params": params })
}

fn value_budget_error(text: &str, data: &Value) -> Error {
    let err = render(text, data).unwrap_err();
    assert_eq!(err.kind, ErrorKind::ValueBudget, "{err}");
    err
}

#[test]
fn indent_with_a_huge_width_fails_naming_the_function_instead_of_allocating() {
    let data = params(&[("PAD", "2000000000000")]);
    let text = "kind: ConfigMap\ndata:\n  x: {{ indent (int .Params.PAD) \"x\" }}\n";
    let err = value_budget_error(text, &data);
    assert_eq!((err.template.as_str(), err.line), ("templates/cm.yaml", 3));
    assert!(
        err.message
            .contains("error calling indent: value budget exceeded")
            && err.message.contains("2000000000001 bytes"),
        "{err}"
    );
    let err = value_budget_error("{{ nindent (int .Params.PAD) \"a\\nb\" }}", &data);
    assert!(err.message.contains("error calling nindent"), "{err}");
}

#[test]
fn repeat_with_a_huge_count_fails_naming_the_function() {
    let data = params(&[("N", "2000000000000")]);
    let err = value_budget_error("{{ repeat (int .Params.N) \"ab\" }}", &data);
    assert!(
        err.message.contains(
            "error calling repeat: value budget exceeded: the result would take 4000000000000 bytes"
        ),
        "{err}"
    );
}

#[test]
fn printf_with_a_width_or_precision_past_a_million_ends_the_format_as_go_does() {
    // Go's fmt stops reading a number once it passes 10^6 and treats the
    // rest of the format as consumed: no verb, the argument left over.
    let out = render(r#"{{ printf "%0900000000000d" 1 }}"#, &json!({})).unwrap();
    assert_eq!(out, "%!(NOVERB)%!(EXTRA int=1)");
    let out = render(r#"{{ printf "%.900000000000f|" 1.5 }}"#, &json!({})).unwrap();
    assert_eq!(out, "%!(NOVERB)%!(EXTRA float64=1.5)");
}

#[test]
fn printf_with_a_huge_width_or_precision_fails_before_padding() {
    let small = Limits {
        max_values: 1 << 20,
        ..Limits::default()
    };
    for text in [
        r#"{{ printf "%09999999d" 1 }}"#,
        r#"{{ printf "%-9999999s|" "x" }}"#,
        r#"{{ printf "%.9999999f" 1.5 }}"#,
        r#"{{ printf "%.9999999e" 1.5 }}"#,
    ] {
        let err = render_with(text, &json!({}), small).unwrap_err();
        assert_eq!(err.kind, ErrorKind::ValueBudget, "{text}: {err}");
        assert!(err.message.contains("error calling printf"), "{err}");
    }
    // Normal widths keep Go's output.
    let out = render(
        r#"{{ printf "%05d|%-4s|%.2f" 42 "ab" 3.14159 }}"#,
        &json!({}),
    )
    .unwrap();
    assert_eq!(out, "00042|ab  |3.14");
}

#[test]
fn until_and_until_step_with_huge_counts_fail_naming_the_function() {
    let data = params(&[("N", "2000000000000")]);
    let err = value_budget_error("{{ range until (int .Params.N) }}x{{ end }}", &data);
    assert!(err.message.contains("error calling until"), "{err}");
    let err = value_budget_error("{{ untilStep 0 (int .Params.N) 1 }}", &data);
    assert!(err.message.contains("error calling untilStep"), "{err}");
}

#[test]
fn until_step_near_the_largest_int_stops_instead_of_wrapping_around() {
    let out = render(
        "{{ untilStep 9223372036854775800 9223372036854775807 5 }}",
        &json!({}),
    )
    .unwrap();
    assert_eq!(out, "[9223372036854775800 9223372036854775805]");
}

#[test]
fn trunc_with_the_smallest_int_returns_the_string_unchanged() {
    let out = render(
        r#"{{ trunc (int "-9223372036854775808") "abc" }}|{{ trunc -2 "abc" }}"#,
        &json!({}),
    )
    .unwrap();
    assert_eq!(out, "abc|bc");
}

#[test]
fn replace_and_join_whose_result_multiplies_their_arguments_fail_before_building_it() {
    let data = params(&[("BIG", &"y".repeat(100_000))]);
    let err = value_budget_error(r#"{{ replace "" .Params.BIG .Params.BIG }}"#, &data);
    assert!(err.message.contains("error calling replace"), "{err}");
    let err = value_budget_error(r#"{{ join .Params.BIG (until 1000) }}"#, &data);
    assert!(err.message.contains("error calling join"), "{err}");
}

#[test]
fn output_over_the_budget_fails_naming_the_template_and_line() {
    let limits = Limits {
        max_output: 1000,
        ..Limits::default()
    };
    let text = "kind: ConfigMap\ndata:\n  x: {{ range until 100 }}{{ repeat 50 \"x\" }}{{ end }}\n";
    let err = render_with(text, &json!({}), limits).unwrap_err();
    assert_eq!(err.kind, ErrorKind::OutputBudget, "{err}");
    assert_eq!(err.line, 3);
    assert!(
        err.to_string().starts_with(
            "templates/cm.yaml:3:30: executing \"templates/cm.yaml\" at <repeat 50 \"x\">: \
             output budget exceeded: writing 50 more bytes would bring the output to 1027 bytes, \
             over the limit of 1000 bytes"
        ),
        "{err}"
    );
    // Literal text counts too, at its own line.
    let err = render_with(&format!("a\n{}", "b".repeat(2000)), &json!({}), limits).unwrap_err();
    assert_eq!((err.kind, err.line), (ErrorKind::OutputBudget, 1));
}

#[test]
fn nested_range_with_repeat_stops_at_the_output_budget() {
    // 1000 × 1000 × 500 bytes = 500 MB of output if rendered.
    let text =
        "{{ range until 1000 }}{{ range until 1000 }}{{ repeat 500 \"x\" }}{{ end }}{{ end }}";
    let err = render(text, &json!({})).unwrap_err();
    assert_eq!(err.kind, ErrorKind::OutputBudget, "{err}");
    assert!(
        err.message.contains("over the limit of 4194304 bytes"),
        "{err}"
    );
}

#[test]
fn values_stored_in_variables_count_against_the_value_budget() {
    // Each repeat is 1 MB and is dropped at once; 100 of them pass 16 MiB.
    let text = "{{ range until 100 }}{{ $x := repeat 1000000 \"x\" }}{{ end }}";
    let err = value_budget_error(text, &json!({}));
    assert!(err.message.contains("error calling repeat"), "{err}");
}

#[test]
fn a_list_grown_by_append_in_a_loop_counts_each_copy() {
    let limits = Limits {
        max_values: 4 << 20,
        ..Limits::default()
    };
    // 100000 appends would copy 10^10 elements in all.
    let text =
        "{{ $l := list }}{{ range until 100000 }}{{ $l = append $l . }}{{ end }}{{ len $l }}";
    let err = render_with(text, &json!({}), limits).unwrap_err();
    assert_eq!(err.kind, ErrorKind::ValueBudget, "{err}");
    assert!(err.message.contains("error calling append"), "{err}");
    // A short list grows as in Go.
    let text = "{{ $l := list }}{{ range until 5 }}{{ $l = append $l . }}{{ end }}{{ $l }}";
    assert_eq!(render(text, &json!({})).unwrap(), "[0 1 2 3 4]");
}

#[test]
fn a_small_value_sharing_a_big_string_cannot_be_written_out_past_the_budgets() {
    // 20 doublings of a shared 100 kB list: 100 GB of text, 2 kB of lists.
    let setup = "{{ $l := list (list (repeat 100000 \"x\")) }}\
                 {{ range until 20 }}{{ $l = list $l $l }}{{ end }}";
    for (call, function) in [
        ("{{ toJson $l }}", "toJson"),
        ("{{ toPrettyJson $l }}", "toPrettyJson"),
        ("{{ toYaml $l }}", "toYaml"),
        ("{{ toString $l }}", "toString"),
        ("{{ print $l }}", "print"),
        ("{{ printf \"%v\" $l }}", "printf"),
        ("{{ join \",\" $l }}", "join"),
        ("{{ cat $l }}", "cat"),
        ("{{ quote $l }}", "quote"),
    ] {
        let err = value_budget_error(&format!("{setup}{call}"), &json!({}));
        assert!(
            err.message.contains(&format!("error calling {function}")),
            "{function}: {err}"
        );
    }
    let err = render(&format!("{setup}{{{{ $l }}}}"), &json!({})).unwrap_err();
    assert_eq!(err.kind, ErrorKind::OutputBudget, "{err}");
}

#[test]
fn a_map_cannot_be_set_into_itself_directly_or_through_what_it_holds() {
    for (name, text) in [
        ("itself", "{{ $d := dict }}{{ $_ := set $d \"self\" $d }}"),
        (
            "through a list and a map",
            "{{ $d := dict }}{{ $l := list 1 (dict \"in\" (list $d)) }}{{ $_ := set $d \"x\" $l }}",
        ),
    ] {
        let err = render(text, &json!({})).unwrap_err();
        assert!(
            err.message.contains("a map cannot hold itself"),
            "{name}: {err}"
        );
    }
    // Another map, or the same map's values, may be set as before.
    let out = render(
        "{{ $a := dict }}{{ $b := dict \"k\" 1 }}{{ $_ := set $a \"b\" $b }}\
         {{ $_ := set $a \"again\" (get $a \"b\") }}{{ toJson $a }}",
        &json!({}),
    )
    .unwrap();
    assert_eq!(out, r#"{"again":{"k":1},"b":{"k":1}}"#);
}

#[test]
fn a_list_nested_a_hundred_thousand_deep_is_dropped_without_overflowing_the_stack() {
    // Run on a thread with a small stack, as the manager's render threads:
    // dropping the chain recursively would need far more.
    let text = "{{ $l := list }}{{ range until 100000 }}{{ $l = list $l }}{{ end }}done";
    let out = std::thread::Builder::new()
        .stack_size(256 << 10)
        .spawn(move || render(text, &json!({})))
        .unwrap()
        .join()
        .expect("the render thread ends without a stack overflow");
    assert_eq!(out.unwrap(), "done");
}

#[test]
fn scanning_a_long_string_costs_a_step_per_kib() {
    let big = "a".repeat(1 << 20);
    let data = json!({"Params": {"BIG": big}});
    // 2,000 scans of 1 MiB: 2 GB of work for 2,000 calls.
    let text = "{{ range until 2000 }}{{ if contains \"b\" $.Params.BIG }}x{{ end }}{{ end }}";
    step_budget_error(text, &data);
}

#[test]
fn normal_templates_render_as_before_within_the_default_limits() {
    let data = json!({"Params": {"NODES": "3", "CONF": {"a": 1, "b": [1, 2]}}});
    let text = "{{ range $i := until (int .Params.NODES) }}node-{{ $i }} {{ end }}\n\
                {{ toYaml .Params.CONF | indent 2 }}";
    let out = render(text, &data).unwrap();
    assert_eq!(out, "node-0 node-1 node-2 \n  a: 1\n  b:\n  - 1\n  - 2\n  ");
}

fn step_budget_error(text: &str, data: &Value) -> Error {
    let err = render(text, data).unwrap_err();
    assert_eq!(err.kind, ErrorKind::StepBudget, "{err}");
    assert!(err.message.contains("step budget exceeded"), "{err}");
    err
}

#[test]
fn three_nested_ranges_over_two_thousand_stop_at_the_step_budget() {
    // 8·10⁹ iterations: without the budget this runs for minutes.
    let text = "{{ $l := until (int .Params.N) }}{{ range $l }}{{ range $l }}{{ range $l }}{{ end }}{{ end }}{{ end }}";
    let err = step_budget_error(text, &params(&[("N", "2000")]));
    assert_eq!(err.line, 1, "{err}");
    // The same template with a small N fits.
    assert!(render(text, &params(&[("N", "20")])).is_ok());
}

#[test]
fn recursion_that_doubles_at_every_level_stops_at_the_step_budget() {
    let text = r#"{{ define "f" }}{{ if lt . 40 }}{{ template "f" (add . 1) }}{{ template "f" (add . 1) }}{{ end }}{{ end }}{{ template "f" 0 }}"#;
    step_budget_error(text, &json!({}));
}

#[test]
fn uniq_of_a_long_list_counts_its_comparisons() {
    // 60,000 elements fit the value budget; comparing each with each is
    // 3.6·10⁹ steps.
    let text = "{{ until (int .Params.N) | uniq | len }}";
    step_budget_error(text, &params(&[("N", "60000")]));
}

#[test]
fn a_smaller_step_budget_is_honoured() {
    let limits = Limits {
        max_steps: 10,
        ..Limits::default()
    };
    let err = render_with("{{ range until 20 }}x{{ end }}", &json!({}), limits).unwrap_err();
    assert_eq!(err.kind, ErrorKind::StepBudget, "{err}");
    assert!(err.message.contains("more than 10 steps"), "{err}");
}
