//! Property tests: whatever bytes or JSON reach the review path, the answer
//! is a well-formed AdmissionReview and nothing panics.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::time::Duration;

use kudo_manager::webhook::{Reviewer, StaticOperatorVersions};
use proptest::prelude::*;
use serde_json::Value;
use support::admission::{fixture, operator_versions};

fn reviewer() -> Reviewer<StaticOperatorVersions> {
    Reviewer::new(operator_versions(), Duration::from_secs(1))
}

/// Reviews `body` and checks the answer is an AdmissionReview v1 with a response.
fn review_is_well_formed(reviewer: &Reviewer<StaticOperatorVersions>, body: &[u8]) -> Value {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let json = runtime.block_on(reviewer.review_to_json(body));
    let review: Value = serde_json::from_slice(&json).unwrap();
    assert_eq!(review["apiVersion"], "admission.k8s.io/v1");
    assert!(review["response"]["allowed"].is_boolean(), "{review}");
    review
}

fn arbitrary_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        ".{0,12}".prop_map(Value::String),
        prop_oneof![
            Just("Instance"),
            Just("kudo.dev"),
            Just("v1beta1"),
            Just("CREATE"),
            Just("UPDATE"),
            Just("DELETE"),
            Just("status"),
            Just("deploy"),
            Just("IN_PROGRESS"),
            Just("zookeeper-0.3.0"),
        ]
        .prop_map(|s| Value::String(s.to_string())),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(
                prop_oneof![
                    Just("spec".to_string()),
                    Just("metadata".to_string()),
                    Just("status".to_string()),
                    Just("parameters".to_string()),
                    Just("planExecution".to_string()),
                    Just("operatorVersion".to_string()),
                    Just("name".to_string()),
                    "[a-zA-Z]{1,8}",
                ],
                inner,
                0..6,
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Every JSON path of `value`, as pointer strings.
fn pointers(value: &Value, at: String, out: &mut Vec<String>) {
    out.push(at.clone());
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                pointers(
                    v,
                    format!("{at}/{}", k.replace('~', "~0").replace('/', "~1")),
                    out,
                );
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                pointers(v, format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn arbitrary_bytes_get_an_answer(body in prop::collection::vec(any::<u8>(), 0..512)) {
        let review = review_is_well_formed(&reviewer(), &body);
        prop_assert_eq!(&review["response"]["allowed"], &Value::Bool(false));
    }

    #[test]
    fn arbitrary_json_gets_an_answer(value in arbitrary_json()) {
        review_is_well_formed(&reviewer(), &serde_json::to_vec(&value).unwrap());
    }

    #[test]
    fn arbitrary_json_inside_a_real_review_gets_an_answer(
        fixture_index in 0usize..4,
        pick in any::<prop::sample::Index>(),
        replacement in arbitrary_json(),
    ) {
        let name = [
            "deny/param-update-while-plan-runs.json",
            "allow/cancel-running-plan.json",
            "allow/create-valid.json",
            "deny/upgrade-while-plan-runs.json",
        ][fixture_index];
        let mut review: Value = serde_json::from_slice(&fixture(name)).unwrap();
        let mut paths = Vec::new();
        pointers(&review, String::new(), &mut paths);
        let path = pick.get(&paths).clone();
        if let Some(slot) = review.pointer_mut(&path) {
            *slot = replacement;
        }
        review_is_well_formed(&reviewer(), &serde_json::to_vec(&review).unwrap());
    }
}
