use proptest::prelude::*;
use serde_json::{Value, json};

use super::parse;

fn full(text: &str) -> Result<Value, String> {
    serde_saphyr::from_str_with_options::<Value>(text, crate::yaml::parse_options())
        .map_err(|e| e.to_string())
}

/// The fast path took the document and agrees with the full parser.
fn fast_and_equal(text: &str) -> Value {
    let fast = parse(text).unwrap_or_else(|| panic!("left to the full parser:\n{text}"));
    assert_eq!(Ok(fast.clone()), full(text), "{text}");
    fast
}

#[test]
fn a_typical_manifest_takes_the_fast_path_and_reads_as_the_full_parser_reads_it() {
    let text = r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: zk-web   # rendered name
  labels:
    app.kubernetes.io/name: zk
    "quoted-key": 'single'
spec:
  replicas: 3
  selector:
    matchLabels: {}
  template:
    spec:
      containers:
      - name: web
        image: nginx:1.7.9
        args:
          - --port=8080
          - "--verbose"
        ports:
        - containerPort: 80
          protocol: TCP
        env: []
      volumes:
        -
          name: data
        - - nested
          - -12
"#;
    let value = fast_and_equal(text);
    assert_eq!(value["spec"]["replicas"], json!(3));
    assert_eq!(
        value["spec"]["template"]["spec"]["containers"][0]["ports"][0],
        json!({"containerPort": 80, "protocol": "TCP"})
    );
    assert_eq!(
        value["spec"]["template"]["spec"]["volumes"][1],
        json!(["nested", -12])
    );
}

#[test]
fn the_bench_configmap_takes_the_fast_path() {
    fast_and_equal(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: h-cm7\ndata:\n  step: \"7\"\n",
    );
}

#[test]
fn anything_outside_the_subset_is_left_to_the_full_parser() {
    for text in [
        "a: yes\n",
        "a: Off\n",
        "a: ~\n",
        "a: null\n",
        "a: 0755\n",
        "a: 1.5\n",
        "a: 0x1F\n",
        "a: 1_000\n",
        "a: .inf\n",
        "a: 2001-12-14\n",
        "a: &x b\nc: *x\n",
        "a: !!str 5\n",
        "a: |\n  text\n",
        "a: >-\n  folded\n",
        "a: [1, 2]\n",
        "a: {b: 1}\n",
        "a: \"line\\nbreak\"\n",
        "a: 'it''s'\n",
        "a: b\n  continued\n",
        "a: 1\na: 2\n",
        "a:\tb\n",
        "\ta: b\n",
        "a: b\r\n",
        "plain scalar\n",
        "? complex\n: key\n",
        "a: b: c\n",
        "1: one\n",
    ] {
        assert_eq!(parse(text), None, "{text:?}");
    }
}

/// A document tree written in YAML with varied layout.
#[derive(Debug, Clone)]
enum Node {
    Scalar(String),
    Map(Vec<(String, Node)>),
    Seq(Vec<Node>),
}

const TRICKY: &[&str] = &[
    "yes",
    "No",
    "ON",
    "off",
    "y",
    "N",
    "true",
    "False",
    "null",
    "Null",
    "~",
    "0755",
    "0x1F",
    "0o17",
    "1_000",
    "1.5",
    "-3",
    "0",
    "-0",
    "+5",
    "1e3",
    ".inf",
    ".NaN",
    "nan",
    "inf",
    "Infinity",
    "2001-12-14",
    "12:30",
    "a: b",
    "a #b",
    "a#b",
    "'q'",
    "\"d\"",
    "\"a\\nb\"",
    "'it''s'",
    "{}",
    "[]",
    "{a: 1}",
    "[1, 2]",
    "&x a",
    "*x",
    "!!str 5",
    "a:b",
    "http://x.y/z",
    "nginx:1.7.9",
    "hello world",
    "-",
    "?",
    "@x",
    "%x",
    "`x`",
    "ümlaut",
    "a,b",
    "a[0]",
    "''",
    "\"\"",
    "' spaced '",
    "x # comment",
    "e5",
    "E",
    "NO",
    "Yes",
    "TRUE",
    "nULL",
    "123456789012345678",
    "9999999999999999999",
    "-12",
    "a: ",
    "a:",
    "--flag=1",
    "-x",
    "-.5",
    "-.inf",
    "/var/lib",
    "//x",
    "/",
    "=",
    "(x)",
    "x.y/z-1_2",
];

const KEYS: &[&str] = &[
    "name",
    "a",
    "b-c",
    "app.kubernetes.io/name",
    "\"quoted\"",
    "'single'",
    "yes",
    "1",
    "x y",
    "k:v",
    "~",
    "on",
    "\"a b\"",
    "k.8",
];

fn scalar() -> impl Strategy<Value = String> {
    prop_oneof![
        proptest::sample::select(TRICKY).prop_map(str::to_string),
        "[a-zA-Z/-][a-zA-Z0-9./-]{0,8}",
        any::<i32>().prop_map(|n| n.to_string()),
        "\"[a-z0-9 :#-]{0,6}\"",
        "'[a-z0-9 :#-]{0,6}'",
    ]
}

fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        proptest::sample::select(KEYS).prop_map(str::to_string),
        "[a-z][a-z0-9]{0,3}",
    ]
}

fn node() -> impl Strategy<Value = Node> {
    scalar()
        .prop_map(Node::Scalar)
        .prop_recursive(4, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec((key(), inner.clone()), 1..4).prop_map(Node::Map),
                prop::collection::vec(inner, 1..4).prop_map(Node::Seq),
            ]
        })
}

/// Layout choices, drawn once per document.
#[derive(Debug, Clone, Copy)]
struct Style {
    /// Sequences under a key at the key's column.
    seq_at_key_column: bool,
    /// `- key: v` rather than `-` and the mapping below.
    compact_items: bool,
    comments: bool,
    step: usize,
}

fn style() -> impl Strategy<Value = Style> {
    (any::<bool>(), any::<bool>(), any::<bool>(), 1usize..4).prop_map(
        |(seq_at_key_column, compact_items, comments, step)| Style {
            seq_at_key_column,
            compact_items,
            comments,
            step,
        },
    )
}

fn write_node(node: &Node, indent: usize, style: Style, out: &mut String) {
    let pad = " ".repeat(indent);
    match node {
        Node::Scalar(s) => {
            out.push_str(&pad);
            out.push_str(s);
            out.push('\n');
        }
        Node::Map(entries) => {
            for (k, v) in entries {
                if style.comments {
                    out.push_str(&format!("{pad}# about {k}\n"));
                }
                match v {
                    Node::Scalar(s) => out.push_str(&format!("{pad}{k}: {s}\n")),
                    Node::Seq(_) if style.seq_at_key_column => {
                        out.push_str(&format!("{pad}{k}:\n"));
                        write_node(v, indent, style, out);
                    }
                    _ => {
                        out.push_str(&format!(
                            "{pad}{k}:{}\n",
                            if style.comments { " # nested" } else { "" }
                        ));
                        write_node(v, indent + style.step + 1, style, out);
                    }
                }
            }
        }
        Node::Seq(items) => {
            for item in items {
                match item {
                    Node::Scalar(s) => out.push_str(&format!("{pad}- {s}\n")),
                    _ if style.compact_items => {
                        let mut inner = String::new();
                        write_node(item, indent + 2, style, &mut inner);
                        // The first line of the item goes after the dash.
                        let first = inner.trim_start_matches(' ');
                        out.push_str(&format!("{pad}- {first}"));
                    }
                    _ => {
                        out.push_str(&format!("{pad}-\n"));
                        write_node(item, indent + style.step + 1, style, out);
                    }
                }
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn whatever_the_fast_path_accepts_reads_as_the_full_parser_reads_it(node in node(), style in style()) {
        let mut text = String::new();
        write_node(&node, 0, style, &mut text);
        if let Some(fast) = parse(&text) {
            prop_assert_eq!(Ok(fast), full(&text), "{}", text);
        }
    }

    #[test]
    fn words_integers_and_simple_quotes_always_take_the_fast_path(
        words in prop::collection::btree_map(
            "[a-z][a-z0-9.-]{0,6}",
            "[a-z][a-z0-9/.-]{0,8}|[1-9][0-9]{0,5}|\"[a-z :]{0,5}\"",
            1..8,
        ),
        style in style(),
    ) {
        let reserved = ["y", "n", "yes", "no", "on", "off", "true", "false", "null", "inf", "nan", "infinity"];
        prop_assume!(words.iter().all(|(k, v)| !reserved.contains(&k.as_str()) && !reserved.contains(&v.as_str())));
        let node = Node::Map(vec![(
            "top".to_string(),
            Node::Seq(vec![Node::Map(
                words.into_iter().map(|(k, v)| (k, Node::Scalar(v))).collect(),
            )]),
        )]);
        let mut text = String::new();
        write_node(&node, 0, style, &mut text);
        let fast = parse(&text);
        prop_assert!(fast.is_some(), "left to the full parser:\n{}", text);
        prop_assert_eq!(Ok(fast.unwrap_or_default()), full(&text), "{}", text);
    }
}
