#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! Fuzzing parameter values (proptest): random strings and numbers for
//! typed parameter definitions, through kudo-api's shared validator
//! (`kudo_package::params::validate_values`), the `.Params` map templates
//! see (`template_values`), the parameter table and `KEY=VALUE` parsing.
//!
//! Properties:
//! - nothing panics, whatever the definitions and values;
//! - a message never repeats a long value whole (it shows a prefix and
//!   the length), so a 1 MB value cannot fill a webhook answer or a status;
//! - what validation accepts, templates can use: `template_values`
//!   succeeds, an array parameter becomes a list and a map parameter a map,
//!   every other type the string as given;
//! - `KEY=VALUE` parsing splits at the first `=` and loses nothing;
//! - the example packages' plans, rendered with random values for their
//!   parameters (huge counts, long strings, odd YAML) within random
//!   budgets, give objects no larger than `MAX_OBJECT_BYTES` or fail with
//!   a render error, never a panic.
//!
//! CI runs a bounded number of cases (`make test`); `make fuzz` raises them
//! through `PROPTEST_CASES`.

use std::collections::BTreeMap;

use kudo_api::{OperatorVersionSpec, Parameter, ParameterType};
use kudo_package::params::{params_table, parse_assignment, template_values, validate_values};
use kudo_package::render::{
    MAX_OBJECT_BYTES, PlanRenderOptions, RenderLimits, RenderedTask, StaticDiscovery, json_size,
    render_plan_with,
};
use proptest::prelude::*;
use proptest::sample::select;
use proptest::test_runner::FileFailurePersistence;
use serde_json::Value;

/// `ci` cases; `PROPTEST_CASES`, when set (`make fuzz`), replaces it (the
/// `proptest!` macro reads it). A failing case is saved beside this file
/// (`fuzz_params.proptest-regressions`) and tried first on the next run.
fn config(ci: u32) -> ProptestConfig {
    ProptestConfig {
        cases: ci,
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource(
            "proptest-regressions",
        ))),
        ..ProptestConfig::default()
    }
}

/// A value a user or a package might give: numbers of every shape, Go's
/// boolean forms and near misses, YAML lists and maps (well-formed,
/// broken, alias bombs, deep nesting), long and unusual text.
fn value() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => select(&[
            // integers
            "0", "3", "-7", "+1", "-0", " 1", "1 ", "1_000", "0x10", "010", "08", "1e3",
            "9223372036854775807", "-9223372036854775808", "9223372036854775808",
            "99999999999999999999999",
            // numbers
            "1.5", ".5", "5.", "-2.5e-3", "1e999", "-1e999", "NaN", "nan", "inf", "-inf",
            "Infinity", "1,5", "0x1p-2", "1e", "e1", "",
            // booleans
            "true", "false", "True", "FALSE", "t", "F", "1", "yes", "no", "on", "tRuE",
            // arrays
            "[a, b]", "[]", "- a\n- b\n", "[1, 2.5, null, true]", "[0755, 08, 0x10]",
            "[[[[]]]]", "[a, [b, {c: d}]]", "[", "[a, b", "- a\n b", "!!seq [a]",
            "&x [a, *x]", "[*undefined]",
            // maps
            "{a: 1}", "{}", "a: 1\nb: [x]\n", "{1: a}", "{? [a]: b}", "{a: 1, a: 2}", "{",
            "a: &x {b: 1}\nc: *x\n", "<<: {a: 1}\nb: 2\n", "{a: 1} trailing", "!!map {a: 1}",
            "key: |\n  block\n  text\n", "a:\n  - 1\n  - 2\n", "{\"a\": \"\\u0000\"}",
            // documents and oddities
            "---\na: 1\n---\nb: 2\n", "~", "null", "# only a comment", "\u{feff}a: 1",
            "\t[a]", "a: 1\r\nb: 2\r\n", "é", "\u{0}", "%YAML 1.2\n---\n[a]",
        ][..])
        .prop_map(str::to_string),
        2 => any::<i64>().prop_map(|n| n.to_string()),
        2 => any::<f64>().prop_map(|f| f.to_string()),
        2 => "\\PC{0,16}",
        1 => "[-+0-9.eExX_ ]{1,12}",
        // Up to 4^7 nodes: serde-saphyr's budget (250,000 nodes) stops
        // bigger ones, after ~1 s each in a debug build.
        1 => (1usize..8, 1usize..5).prop_map(|(levels, width)| alias_bomb(levels, width)),
        1 => (1usize..300).prop_map(|n| format!("{}{}", "[".repeat(n), "]".repeat(n))),
        1 => (1usize..300).prop_map(|n| "{a: ".repeat(n) + &"}".repeat(n)),
        1 => (70_000usize..150_000, select(&["x", "é", "[a]", "a: 1\n", " "][..]))
            .prop_map(|(n, s)| s.repeat(n / s.len())),
    ]
}

/// A YAML list that expands exponentially through aliases.
fn alias_bomb(levels: usize, width: usize) -> String {
    let mut out = String::from("- &a0 [lol]\n");
    for level in 1..=levels {
        let refs = vec![format!("*a{}", level - 1); width].join(", ");
        out.push_str(&format!("- &a{level} [{refs}]\n"));
    }
    out
}

fn kind() -> impl Strategy<Value = Option<ParameterType>> {
    prop::option::weighted(
        0.8,
        select(
            &[
                ParameterType::String,
                ParameterType::Integer,
                ParameterType::Number,
                ParameterType::Boolean,
                ParameterType::Array,
                ParameterType::Map,
            ][..],
        ),
    )
}

fn name() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => select(&["A", "B", "REPLICAS", "CONFIG", "LIST", "flag", "x;y", "a,b", ""][..])
            .prop_map(str::to_string),
        1 => "[A-Za-z_]{1,8}",
        1 => (70_000usize..100_000).prop_map(|n| "N".repeat(n)),
    ]
}

fn parameter() -> impl Strategy<Value = Parameter> {
    (
        name(),
        kind(),
        prop::option::weighted(0.6, value()),
        prop::option::of(any::<bool>()),
        prop::option::of(any::<bool>()),
        prop::option::weighted(0.2, prop::collection::vec(value(), 0..4)),
        prop::option::weighted(0.3, "[a-z]{0,6}"),
        prop::option::weighted(0.3, "\\PC{0,20}"),
    )
        .prop_map(
            |(
                name,
                value_type,
                default,
                required,
                immutable,
                enum_values,
                trigger,
                description,
            )| {
                Parameter {
                    name,
                    value_type,
                    default,
                    required,
                    immutable,
                    enum_values,
                    trigger,
                    description,
                    ..Parameter::default()
                }
            },
        )
}

/// Definitions (names made unique, as the verifier requires) and values
/// for some of them and for undeclared names.
fn case() -> impl Strategy<Value = (OperatorVersionSpec, BTreeMap<String, String>)> {
    (
        prop::collection::vec(parameter(), 0..6),
        prop::collection::vec((any::<prop::sample::Index>(), value()), 0..6),
        prop::collection::btree_map(name(), value(), 0..2),
    )
        .prop_map(|(mut parameters, given, undeclared)| {
            let mut seen = std::collections::BTreeSet::new();
            parameters.retain(|p| seen.insert(p.name.clone()));
            let mut values = undeclared;
            if !parameters.is_empty() {
                for (pick, v) in given {
                    values.insert(pick.get(&parameters).name.clone(), v);
                }
            }
            let spec = OperatorVersionSpec {
                parameters,
                ..OperatorVersionSpec::default()
            };
            (spec, values)
        })
}

/// A value meant for a parameter of some type: mostly of that type (so
/// rendering gets past validation), sizes and lengths large.
#[derive(Clone, Debug)]
enum TypedValue {
    /// An integer: counts and sizes, up to absurd.
    Integer(i64),
    /// Any of [`value`].
    Any(String),
    /// Long text.
    Long(usize),
}

impl TypedValue {
    fn for_type(&self, kind: ParameterType) -> String {
        match (self, kind) {
            (Self::Integer(n), ParameterType::Integer | ParameterType::Number) => n.to_string(),
            (Self::Integer(n), ParameterType::Boolean) => (n % 2 == 0).to_string(),
            (Self::Integer(n), ParameterType::Array) => format!("[{n}, {n}]"),
            (Self::Integer(n), ParameterType::Map) => format!("{{k{n}: {n}}}"),
            (Self::Integer(n), ParameterType::String) => n.to_string(),
            (Self::Long(n), ParameterType::Array) => format!("[{}]", "x".repeat(*n)),
            (Self::Long(n), ParameterType::Map) => format!("{{k: {}}}", "x".repeat(*n)),
            (Self::Long(n), _) => "x".repeat(*n),
            (Self::Any(s), _) => s.clone(),
        }
    }
}

fn typed_value() -> impl Strategy<Value = TypedValue> {
    prop_oneof![
        4 => prop_oneof![
            0i64..8,
            Just(100_000),
            Just(2_000_000),
            Just(2_000_000_000_000),
            Just(i64::MAX),
            Just(-1),
        ]
        .prop_map(TypedValue::Integer),
        2 => value().prop_map(TypedValue::Any),
        1 => prop_oneof![Just(100usize), Just(70_000), Just(1_600_000), Just(5_000_000)]
            .prop_map(TypedValue::Long),
    ]
}

/// The OperatorVersion of `operators/<name>`.
fn example(name: &str) -> kudo_api::OperatorVersion {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../operators")
        .join(name);
    kudo_package::load(&dir).unwrap().to_operator_version("ns")
}

/// Values longer than this must not appear whole in a message.
const LONG: usize = 200;

fn assert_no_long_value_echoed(message: &str, values: &[&str]) {
    for v in values.iter().filter(|v| v.len() > LONG) {
        assert!(
            !message.contains(*v),
            "a {}-byte value is repeated whole in the message",
            v.len()
        );
    }
}

proptest! {
    #![proptest_config(config(256))]

    /// Validation and the `.Params` map agree, and messages stay short.
    #[test]
    fn accepted_values_render_and_messages_stay_short((spec, values) in case()) {
        let mut shown: Vec<&str> = values.values().map(String::as_str).collect();
        shown.extend(spec.parameters.iter().filter_map(|p| p.default.as_deref()));
        match validate_values(&spec, &values) {
            Ok(()) => {
                let params = template_values(&spec, &values)
                    .unwrap_or_else(|e| panic!("validated values do not render: {e}"));
                for def in &spec.parameters {
                    let raw = def.effective_value(values.get(&def.name).map(String::as_str));
                    let seen = &params[&def.name];
                    match def.kind() {
                        ParameterType::Array if !raw.trim().is_empty() => {
                            prop_assert!(seen.is_array(), "{}: {raw:?} became {seen}", def.name)
                        }
                        ParameterType::Map if !raw.trim().is_empty() => {
                            prop_assert!(seen.is_object(), "{}: {raw:?} became {seen}", def.name)
                        }
                        ParameterType::Array | ParameterType::Map => {}
                        _ => prop_assert_eq!(seen, &Value::String(raw.to_string())),
                    }
                }
            }
            Err(errors) => {
                prop_assert!(!errors.0.is_empty());
                for e in &errors.0 {
                    let text = e.to_string();
                    prop_assert!(!text.trim().is_empty());
                    // Names and the package's own enum values are shown as
                    // they are; the values checked are what is previewed.
                    let checked = text.split(", but only allowed values are").next().unwrap_or("");
                    if !matches!(e, kudo_package::ParamsError::Unknown { .. }) {
                        assert_no_long_value_echoed(checked, &shown);
                    }
                }
                // Rendering with rejected values may fail, but cleanly.
                if let Err(e) = template_values(&spec, &values) {
                    prop_assert!(!e.to_string().trim().is_empty());
                }
            }
        }
        let table = params_table(&spec, true);
        prop_assert!(table.lines().count() > spec.parameters.len());
        let _ = params_table(&spec, false);
    }

    /// The example packages' plans rendered with random values: objects
    /// within the API server's size limit, or a render error.
    #[test]
    fn example_plans_render_random_values_within_the_object_limit(
        package in select(&["first-operator", "zookeeper", "canary-web"][..]),
        plan in any::<prop::sample::Index>(),
        values in prop::collection::vec(prop::option::weighted(0.4, typed_value()), 16),
        limits in prop_oneof![
            3 => Just(RenderLimits::default()),
            1 => (select(&[256usize, 4 << 10, 64 << 10][..]), select(&[1usize << 10, 64 << 10][..]))
                .prop_map(|(output, values)| RenderLimits {
                    max_template_output: output,
                    max_step_output: output * 2,
                    max_template_values: values,
                    ..RenderLimits::default()
                }),
        ],
    ) {
        let ov = example(package);
        let plans: Vec<&String> = ov.spec.plans.keys().collect();
        let mut given = BTreeMap::new();
        for (def, value) in ov.spec.parameters.iter().zip(&values) {
            if let Some(value) = value {
                given.insert(def.name.clone(), value.for_type(def.kind()));
            }
        }
        let options = PlanRenderOptions {
            plan: plan.get(&plans).to_string(),
            instance_name: "fuzz".into(),
            namespace: "ns".into(),
            instance_uid: Some("00000000-0000-0000-0000-000000000001".into()),
            plan_uid: "00000000-0000-0000-0000-0000000000aa".into(),
            values: given.clone(),
        };
        let result = render_plan_with(&ov, &options, &StaticDiscovery::default(), BTreeMap::new(), &limits);
        match result {
            Ok(steps) => {
                for step in &steps {
                    let sizes: Vec<usize> = match &step.rendered {
                        RenderedTask::Apply { objects } => objects.iter().map(json_size).collect(),
                        // A deletion sends only the object's identity (a Toggle
                        // that is off renders its objects for deletion).
                        RenderedTask::Delete { .. } => vec![],
                        RenderedTask::Pipe { pod, .. } => vec![json_size(pod)],
                        RenderedTask::KudoOperator { instance } => vec![json_size(instance)],
                        RenderedTask::Dummy { .. } => vec![],
                    };
                    for size in sizes {
                        prop_assert!(size <= MAX_OBJECT_BYTES, "{}/{}: {size} bytes", step.step, step.task);
                    }
                }
            }
            Err(err) => {
                let text = err.to_string();
                prop_assert!(!text.trim().is_empty());
                let long: Vec<&str> = given.values().map(String::as_str).collect();
                assert_no_long_value_echoed(&text, &long);
            }
        }
    }

    /// `KEY=VALUE` splits at the first `=`; nothing is lost or invented.
    #[test]
    fn assignments_split_at_the_first_equals_sign(text in "\\PC{0,12}(=\\PC{0,12}){0,2}") {
        match parse_assignment(&text) {
            Ok((key, value)) => {
                prop_assert!(!key.is_empty() && !value.is_empty());
                prop_assert!(!key.contains('='));
                prop_assert_eq!(format!("{key}={value}"), text);
            }
            Err(message) => {
                let (key, value) = text.split_once('=').unwrap_or((&text, ""));
                prop_assert!(key.is_empty() || value.is_empty(), "{message}");
            }
        }
    }
}

/// Found by `accepted_values_render_and_messages_stay_short`: the table
/// padded its columns with `format!("{cell:<width$}")`, which panics on a
/// width past 65,535 ("Formatting argument out of range"), so
/// `kubectl kudo package params list` crashed on a package with a long
/// default or parameter name.
#[test]
fn a_parameter_table_with_a_cell_wider_than_65535_characters_is_written() {
    let long = "x".repeat(70_000);
    let spec = OperatorVersionSpec {
        parameters: vec![
            Parameter {
                name: "CONFIG".into(),
                default: Some(long.clone()),
                ..Parameter::default()
            },
            Parameter {
                name: "N".repeat(70_000),
                default: Some("1".into()),
                ..Parameter::default()
            },
        ],
        ..OperatorVersionSpec::default()
    };
    let table = params_table(&spec, false);
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), 3, "{}", &table[..200]);
    assert!(lines[1].starts_with(&format!("CONFIG{}", " ".repeat(100))));
    assert!(lines[1].contains(&long));
    // Columns line up: the type column starts at the same place in every row.
    let at = |line: &str, word: &str| line.find(word).unwrap();
    assert_eq!(at(lines[0], "TYPE"), at(lines[2], "string"));
}
