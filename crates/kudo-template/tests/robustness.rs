#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! Bad input must produce errors, never panics: random mixes of template
//! syntax are parsed and rendered against a KUDO-like context.

use proptest::prelude::*;
use serde_json::json;

const PIECES: &[&str] = &[
    "{{",
    "}}",
    "{{-",
    "-}}",
    " ",
    "\n",
    "x",
    "é",
    ".",
    ".Params",
    ".Params.N",
    ".m",
    "$",
    "$x",
    ":=",
    "=",
    "|",
    "(",
    ")",
    ",",
    "\"s\"",
    "`r`",
    "'c'",
    "1",
    "-2",
    "1.5e3",
    "0x",
    "if",
    "else",
    "end",
    "range",
    "with",
    "define",
    "template",
    "block",
    "break",
    "continue",
    "nil",
    "true",
    "eq",
    "index",
    "len",
    "slice",
    "printf",
    "\"%d %s %q\"",
    "until",
    "int",
    "add",
    "div",
    "toYaml",
    "indent",
    "b64dec",
    "trunc",
    "/*",
    "*/",
    "dict",
    "list",
    "set",
    "split",
];

fn template_strategy() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(PIECES), 0..40).prop_map(|parts| parts.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn random_templates_never_panic(text in template_strategy()) {
        let data = json!({"Params": {"N": "3"}, "m": {"a": [1, "b", null, 2.5]}, "Name": "zk"});
        if let Ok(t) = kudo_template::Template::parse("t", &text) {
            let _ = t.render(&data);
            let _ = t.param_references();
        }
    }

    #[test]
    fn arbitrary_text_never_panics(text in "\\PC{0,60}") {
        let _ = kudo_template::render("t", &text, &json!({}));
    }
}

#[test]
fn errors_for_bad_input_name_the_template() {
    let err = kudo_template::render("templates/x.yaml", "{{ if }}", &json!({})).unwrap_err();
    assert!(err.to_string().starts_with("templates/x.yaml:1:"), "{err}");
}
