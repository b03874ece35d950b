//! Whatever the yaml.v2 writer prints reads back as the same value: its
//! quoting decisions never turn a string into something else.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use proptest::prelude::*;
use serde_json::{Map, Value};

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        "[ -~\n]{0,24}".prop_map(Value::String),
        "(yes|no|on|off|true|null|~|[0-9._+-]{1,6}|0x[0-9a-f]{1,3}|[a-z]{1,3}:[0-9]{1,2}|- x|#x|x #y|'q'|\"d\")"
            .prop_map(Value::String),
        any::<i32>().prop_map(|i| Value::from(i64::from(i))),
        any::<bool>().prop_map(Value::Bool),
        Just(Value::Null),
    ]
}

fn value() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-zA-Z0-9._/-]{1,8}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

proptest! {
    #[test]
    fn written_yaml_reads_back_unchanged(v in value()) {
        let doc = serde_json::json!({ "root": v });
        let text = kudo_package::yaml::v2::to_string(&doc);
        let back = kudo_package::yaml::parse_value(&text)
            .unwrap_or_else(|e| panic!("cannot parse {text:?}: {e}"));
        prop_assert_eq!(back, doc, "text was:\n{}", text);
    }
}
