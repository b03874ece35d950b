#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! Parameter values cannot add objects or keys: values built from the
//! pieces of YAML syntax (newlines, `---`, `...`, `{`, `[`, `#`, `:`,
//! `- `, anchors, aliases, tags, quotes, block indicators, whole
//! documents) are rendered into templates that place a value in every way
//! packages do. Whatever the value:
//! - the render fails (an injection error naming the parameter, or a YAML
//!   error the template's own shape allows, e.g. an empty key), or
//! - the objects have the same documents, kinds, names and namespaces as
//!   with a harmless value, and a raw value's place holds one scalar: the
//!   keys of every object are the same.
//!
//! CI runs a bounded number of cases (`make test`); `make fuzz` raises them
//! through `PROPTEST_CASES`.

use std::collections::BTreeMap;

use kudo_package::RenderError;
use kudo_package::render::{PlanRenderOptions, RenderedTask, StaticDiscovery, render_plan};
use proptest::prelude::*;
use proptest::sample::select;
use proptest::test_runner::FileFailurePersistence;
use serde_json::Value;

fn config(ci: u32) -> ProptestConfig {
    ProptestConfig {
        cases: ci,
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource(
            "proptest-regressions",
        ))),
        ..ProptestConfig::default()
    }
}

/// How templates place a value (`V` stands for the action), and whether
/// the template made it a YAML fragment on purpose.
const PLACES: &[(&str, bool)] = &[
    ("  greeting: V\n", false),
    ("  greeting: \"V\"\n", false),
    ("  greeting: 'V'\n", false),
    ("  greeting: x-V-y\n", false),
    ("  V: fixed\n", false),
    ("  list: [a, V]\n", false),
    ("  map: {a: V}\n", false),
    ("  conf: |\n    V\n", false),
    ("  # note: V\n  greeting: x\n", false),
    ("  greeting: {{ .Params.V | quote }}\n", false),
    ("  conf: |\n{{ .Params.V | indent 4 }}\n", true),
    ("  conf: |-{{ .Params.V | nindent 4 }}\n", true),
    ("  conf: {{ .Params.V | toYaml | nindent 4 }}\n", true),
];

/// Pieces of YAML syntax a value is made of.
fn value() -> impl Strategy<Value = String> {
    let piece = select(
        &[
            "\n",
            "\n  ",
            "\n    ",
            "---",
            "...",
            "{",
            "}",
            "[",
            "]",
            "#",
            " #",
            ":",
            ": ",
            "- ",
            "&a ",
            "*a",
            "!!str ",
            "!!binary ",
            "'",
            "\"",
            "\\",
            "|",
            ">",
            "  ",
            ",",
            "%YAML 1.1",
            "<<: ",
            "kind: Secret",
            "namespace: kube-system",
            "apiVersion: v1",
            "metadata:",
            "name: x",
            "hi",
            "true",
            "1",
            "é",
            "\t",
            "\r\n",
            "?",
            "@",
            "`",
        ][..],
    );
    prop::collection::vec(piece, 0..8).prop_map(|pieces| pieces.concat())
}

fn package(place: &str) -> kudo_api::OperatorVersion {
    let action = if place.contains("{{") {
        place.to_string()
    } else {
        place.replace('V', "{{ .Params.V }}")
    };
    let template = format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{{{ .Name }}}}-cm\n  namespace: {{{{ .Namespace }}}}\ndata:\n{action}"
    );
    let operator = "apiVersion: kudo.dev/v1beta1\nname: inj\noperatorVersion: 0.1.0\ntasks:\n  - name: app\n    kind: Apply\n    spec:\n      resources: [cm.yaml]\nplans:\n  deploy:\n    strategy: serial\n    phases:\n      - name: main\n        strategy: serial\n        steps:\n          - name: app\n            tasks: [app]\n";
    let params = "apiVersion: kudo.dev/v1beta1\nparameters:\n  - name: V\n    default: x\n";
    let files: BTreeMap<String, Vec<u8>> = [
        ("operator.yaml", operator.to_string()),
        ("params.yaml", params.to_string()),
        ("templates/cm.yaml", template),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.into_bytes()))
    .collect();
    kudo_package::load_from_files(files, "inj")
        .unwrap()
        .to_operator_version("ns")
}

fn objects(ov: &kudo_api::OperatorVersion, value: &str) -> Result<Vec<Value>, RenderError> {
    let options = PlanRenderOptions {
        plan: "deploy".into(),
        instance_name: "inj".into(),
        namespace: "ns".into(),
        values: BTreeMap::from([("V".to_string(), value.to_string())]),
        ..PlanRenderOptions::default()
    };
    let steps = render_plan(ov, &options, &StaticDiscovery::default())?;
    Ok(steps
        .into_iter()
        .flat_map(|s| match s.rendered {
            RenderedTask::Apply { objects } => objects,
            _ => Vec::new(),
        })
        .collect())
}

/// Paths of every key of an object (leaf values left out); the keys
/// directly under `data` are counted, not named (a value may be a key).
fn keys(v: &Value, at: &str, out: &mut Vec<String>) {
    match v {
        Value::Object(map) => {
            for (k, child) in map {
                let k = if at == ".data" { "*" } else { k.as_str() };
                let path = format!("{at}.{k}");
                out.push(path.clone());
                keys(child, &path, out);
            }
        }
        Value::Array(items) => {
            for (i, child) in items.iter().enumerate() {
                keys(child, &format!("{at}[{i}]"), out);
            }
        }
        _ => {}
    }
}

fn identity(o: &Value) -> (Value, Value, Value, Value) {
    (
        o["apiVersion"].clone(),
        o["kind"].clone(),
        o["metadata"]["name"].clone(),
        o["metadata"]["namespace"].clone(),
    )
}

proptest! {
    #![proptest_config(config(512))]

    #[test]
    fn a_value_is_refused_or_stays_a_value(place in select(PLACES), value in value()) {
        let (place, fragment) = place;
        let ov = package(place);
        let harmless = objects(&ov, "x").unwrap();
        match objects(&ov, &value) {
            Err(RenderError::Injection { detail, .. }) => {
                prop_assert!(detail.contains("parameter V"), "{detail}");
                prop_assert!(detail.contains("cm.yaml:"), "{detail}");
            }
            // A value can make a document invalid in ways the template
            // allows (an empty key, a number where a key must be a string):
            // refused too, nothing is applied.
            Err(RenderError::Yaml { .. }) => {}
            Err(other) => prop_assert!(false, "{value:?} in {place:?}: {other}"),
            Ok(objects) => {
                prop_assert_eq!(objects.len(), harmless.len(), "{:?} in {:?}", value, place);
                for (got, want) in objects.iter().zip(&harmless) {
                    prop_assert_eq!(identity(got), identity(want), "{:?} in {:?}", value, place);
                    if !fragment {
                        let (mut a, mut b) = (Vec::new(), Vec::new());
                        keys(got, "", &mut a);
                        keys(want, "", &mut b);
                        a.sort();
                        b.sort();
                        prop_assert_eq!(a, b, "{:?} in {:?}", value, place);
                    }
                }
            }
        }
    }
}

/// The reproduction: a ConfigMap template and a value carrying a
/// ClusterRoleBinding.
#[test]
fn the_cluster_role_binding_in_a_greeting_is_refused() {
    let ov = package("  greeting: V\n");
    let value = "hi\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  name: pwn\nroleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: ClusterRole\n  name: cluster-admin\nsubjects:\n- kind: ServiceAccount\n  name: default\n  namespace: default";
    let err = objects(&ov, value).unwrap_err();
    assert_eq!(
        err.to_string(),
        "task app: parameter V starts a new YAML document in cm.yaml:7; quote it or use toYaml"
    );
}
