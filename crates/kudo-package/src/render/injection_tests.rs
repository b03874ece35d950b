use kudo_template::{Limits, Rendered, Template};
use serde_json::json;

use super::*;

fn parsed(text: &str) -> Template {
    Template::parse("templates/configmap.yaml", text).unwrap()
}

/// Renders `text` with `.Params` = `params` and checks it; the rendered text.
fn run_shape(text: &str, params: serde_json::Value, shape: Shape) -> Result<String, Injection> {
    let data = json!({"Name": "inj", "Namespace": "ns", "Params": params});
    let template = parsed(text);
    let rendered = rendered(&template, &data);
    check(&rendered, shape, "ns").map(|()| rendered.text.clone())
}

fn rendered<'a>(template: &'a Template, data: &'a serde_json::Value) -> Rendered<'a> {
    template.render_traced(data, &Limits::default()).unwrap()
}

fn run(text: &str, params: serde_json::Value) -> Result<String, Injection> {
    run_shape(text, params, Shape::Objects)
}

const CONFIGMAP: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }}-greeting\ndata:\n  greeting: {{ .Params.GREETING }}\n";

const BINDING: &str = "hi\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  name: pwn\nroleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: ClusterRole\n  name: cluster-admin\nsubjects:\n- kind: ServiceAccount\n  name: default\n  namespace: default";

#[test]
fn a_value_that_starts_a_document_is_refused_naming_parameter_template_and_line() {
    let err = run(CONFIGMAP, json!({"GREETING": BINDING})).unwrap_err();
    assert_eq!(
        err.describe("templates/configmap.yaml"),
        "parameter GREETING starts a new YAML document in templates/configmap.yaml:6; quote it or use toYaml"
    );
}

#[test]
fn a_value_that_adds_keys_to_the_object_is_refused() {
    for value in [
        "hi\nkind: Secret",
        "hi\n  extra: key",
        "hi\nimmutable: true",
        "{a: b}",
        "[1, 2]",
        "- a",
        "hi # hidden",
        "&anchor hi",
        "*alias",
        "!!binary aGk=",
    ] {
        let err = run(CONFIGMAP, json!({"GREETING": value}));
        assert!(err.is_err(), "{value:?} was accepted");
        let err = err.unwrap_err();
        assert_eq!(
            (err.params.clone(), err.line),
            (vec!["GREETING".to_string()], 6),
            "{value:?}"
        );
    }
}

#[test]
fn a_quote_in_a_value_cannot_close_the_template_s_quotes() {
    let text = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  a: \"{{ .Params.A }}\"\n  b: \"fixed\"\n";
    for value in ["\\", "x\", \"c\": \"d", "x\"\n  c: \"d"] {
        assert!(
            run(text, json!({"A": value})).is_err(),
            "{value:?} was accepted"
        );
    }
    let single = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  a: '{{ .Params.A | squote }}'\n";
    assert!(run(single, json!({"A": "x'\n  c: 'd"})).is_err());
    // Quoting functions keep values whole.
    let quoted = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  a: {{ .Params.A | quote }}\n";
    run(quoted, json!({"A": "x\"\n---\nkind: Secret"})).unwrap();
}

#[test]
fn two_values_cannot_move_template_text_into_a_scalar_between_them() {
    // A opens a quoted scalar that swallows the template's "--safe-mode"
    // up to the quote the template put before B, and B adds back the two
    // items lost: the tokens are the template's, but not where it put them.
    let text = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers:\n    - name: c\n      image: busybox\n      args: [{{ .Params.A }}, \"--safe-mode\", '{{ .Params.B }}']\n";
    let refused = run(text, json!({"A": "'x", "B": ", \"a\", '"})).unwrap_err();
    assert_eq!(refused.params, ["A"], "{refused:?}");
    assert_eq!(
        refused.what,
        "takes template text into a value (it closes a quote the template opened)"
    );
    // Values that stay values pass, quotes inside them included.
    run(text, json!({"A": "run", "B": "it''s"})).unwrap();
}

#[test]
fn plain_quoted_and_multi_word_values_are_accepted() {
    for value in [
        "hi",
        "hello world",
        "",
        "1",
        "true",
        "a:b",
        "x-y_z.1",
        "é",
        "a\n    b",
    ] {
        run(CONFIGMAP, json!({"GREETING": value})).unwrap_or_else(|e| panic!("{value:?}: {e:?}"));
    }
    let text = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  a: \"{{ .Params.A }}\"\n  b: 'x{{ .Params.B }}'\n";
    run(text, json!({"A": "hi: there # ok", "B": "- [x] {y} #"})).unwrap();
}

#[test]
fn block_scalars_with_indent_and_to_yaml_fragments_are_accepted() {
    let text = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  labels:\n{{ toYaml .Params.LABELS | indent 4 }}\ndata:\n  conf: |\n{{ .Params.CONF | indent 4 }}\n  more: {{ .Params.MORE | toJson }}\n";
    run(
        text,
        json!({"LABELS": {"a": "b", "c": "d"}, "CONF": "x=1\n---\nkind: Secret\n", "MORE": [1, 2]}),
    )
    .unwrap();
    let nindent = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  conf: |-{{ .Params.CONF | nindent 4 }}\n";
    run(nindent, json!({"CONF": "a\nb: c\n  - d"})).unwrap();
}

#[test]
fn a_block_scalar_without_indent_cannot_be_left_by_a_value() {
    let text = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  conf: |\n    {{ .Params.CONF }}\n";
    run(text, json!({"CONF": "one line"})).unwrap();
    assert!(run(text, json!({"CONF": "a\nkind: Secret"})).is_err());
}

#[test]
fn ranges_over_parameters_may_write_documents_from_template_text() {
    let text = "{{ range $i, $n := .Params.NAMES }}---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ $n }}\n{{ end }}";
    let rendered = run(text, json!({"NAMES": ["a", "b", "c"]})).unwrap();
    assert_eq!(rendered.matches("---").count(), 3);
}

#[test]
fn identity_fields_must_come_from_the_template() {
    let api = "apiVersion: {{ .Params.V }}\nkind: ConfigMap\nmetadata:\n  name: c\n";
    let err = run(api, json!({"V": "v1"})).unwrap_err();
    assert_eq!(err.what, "sets apiVersion");
    let kind = "apiVersion: v1\nkind: {{ .Params.K }}\nmetadata:\n  name: c\n";
    assert_eq!(
        run(kind, json!({"K": "Secret"})).unwrap_err().what,
        "sets kind"
    );
    let ns =
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  namespace: {{ .Params.NS }}\n";
    assert_eq!(
        run(ns, json!({"NS": "kube-system"})).unwrap_err().what,
        "sets metadata.namespace"
    );
    // Old packages take the namespace from a parameter; the Instance's own
    // is what the enhancer writes anyway.
    run(ns, json!({"NS": "ns"})).unwrap();
    // `.Namespace` is the Instance's, not a value.
    let own =
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  namespace: {{ .Namespace }}\n";
    run(own, json!({})).unwrap();
    // A fragment may add keys, but not these.
    let frag = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n{{ toYaml .Params.EXTRA }}";
    run(frag, json!({"EXTRA": {"data": {"a": "b"}}})).unwrap();
    let err = run(frag, json!({"EXTRA": {"kind": "Secret"}})).unwrap_err();
    assert_eq!(err.what, "writes the kind key");
    let meta = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n{{ toYaml .Params.EXTRA | indent 2 }}";
    assert!(run(meta, json!({"EXTRA": {"namespace": "kube-system"}})).is_err());
    // Nor when the value stands on the line below its key, in a flow
    // mapping, or spells the key in a JSON escape.
    let below = "apiVersion: v1\nkind:\n  {{ .Params.K }}\nmetadata:\n  name: c\n";
    assert_eq!(
        run(below, json!({"K": "Secret"})).unwrap_err().what,
        "sets kind"
    );
    let flow = "{apiVersion: v1, kind: {{ .Params.K }}, metadata: {name: c}}\n";
    assert_eq!(
        run(flow, json!({"K": "Secret"})).unwrap_err().what,
        "sets kind"
    );
    let escaped = "apiVersion: v1\nmetadata:\n  name: c\n{{ .Params.EXTRA | indent 0 }}\n";
    let err = run(escaped, json!({"EXTRA": "\"\\u006bind\": Secret"})).unwrap_err();
    assert_eq!(err.what, "writes the kind key");
}

#[test]
fn a_fragment_cannot_start_a_document() {
    let text = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n{{ .Params.X | nindent 0 }}\n";
    let err = run(
        text,
        json!({"X": "a: b\n---\nkind: Secret\nmetadata:\n  name: s"}),
    )
    .unwrap_err();
    assert_eq!(err.what, "starts a new YAML document");
}

#[test]
fn a_parameter_file_may_set_any_key_from_a_value_but_not_add_keys() {
    let text = "kind: {{ .Params.K }}\nreplicas: {{ .Params.N }}\n";
    run_shape(text, json!({"K": "x", "N": "3"}), Shape::Values).unwrap();
    assert!(run_shape(text, json!({"K": "x\nSECRET: y", "N": "3"}), Shape::Values).is_err());
}

#[test]
fn the_whole_params_map_is_named_as_a_parameter_value() {
    let text =
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  all: {{ .Params }}\n";
    let err = run(text, json!({"A": "x\ny: z"})).unwrap_err();
    assert!(err.params.is_empty());
    assert!(
        err.describe("t").starts_with("a parameter value "),
        "{}",
        err.describe("t")
    );
}

#[test]
fn words_numbers_and_quoted_words_pass_without_a_parse_and_commas_only_outside_flow() {
    let plain = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  a: {{ .Params.A }}\n  b: {{ .Params.B | quote }}\n";
    run(plain, json!({"A": "-1", "B": "512Mi"})).unwrap();
    run(plain, json!({"A": "zk-0:2181,zk-1:2181", "B": "a b"})).unwrap();
    // In a flow list a comma is an item separator.
    let flow =
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  a: [x, {{ .Params.A }}]\n";
    run(flow, json!({"A": "y"})).unwrap();
    assert!(run(flow, json!({"A": "y, z"})).is_err());
    // A quoted value that could end a template quote takes the full check.
    let inside = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  a: \"{{ .Params.A | quote }}\"\n";
    assert!(run(inside, json!({"A": " #"})).is_err());
}
