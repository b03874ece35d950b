#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! Fuzzing the template engine (proptest): templates built from a grammar
//! of actions, pipelines and the sprig/Go functions, weighted towards the
//! functions that size memory from an argument (`indent`, `nindent`,
//! `repeat`, `printf` widths and precisions, `trunc`, `until`, `untilStep`,
//! `append`/`list` growth, `join`, `replace`, ...), rendered with random
//! parameter values within random [`Limits`].
//!
//! Whatever the template and the values, a render must
//! - not panic (proptest fails the case on a panic);
//! - succeed with at most `max_output` bytes, or fail with a clean error:
//!   the template's name, a line and column inside the text, a message,
//!   and a kind that matches the stage (`Parse` only from parsing);
//! - give the same result when repeated (errors are fatal, not transient);
//! - take no more steps than the step budget: nested ranges over huge
//!   counts and recursion that doubles at every level stop with a
//!   step-budget error, so a render's time is bounded by the budget;
//! - at the default limits, keep the process's peak memory within a small
//!   multiple of the budgets (Linux).
//!
//! CI runs a few hundred cases per property (`make test`); `make fuzz`
//! raises them through `PROPTEST_CASES`.

use kudo_template::{DEFAULT_MAX_OUTPUT, DEFAULT_MAX_VALUES, Error, ErrorKind, Limits, Template};
use proptest::prelude::*;
use proptest::sample::select;
use proptest::test_runner::FileFailurePersistence;
use serde_json::{Value, json};

const NAME: &str = "templates/fuzz.yaml";

/// `ci` cases; `PROPTEST_CASES`, when set (`make fuzz`), replaces it (the
/// `proptest!` macro reads it). A failing case is saved beside this file
/// (`fuzz_templates.proptest-regressions`) and tried first on the next run.
fn config(ci: u32) -> ProptestConfig {
    ProptestConfig {
        cases: ci,
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource(
            "proptest-regressions",
        ))),
        ..ProptestConfig::default()
    }
}

// ---------------------------------------------------------------------------
// Values: what `.Params` holds (strings, as KUDO passes them, plus the
// parsed lists and maps of array/map parameters).
// ---------------------------------------------------------------------------

/// A parameter value as KUDO passes it: always a string, often a number
/// (small, huge, negative, malformed), sometimes long.
fn param_string() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => select(&[
            "0", "1", "3", "-1", "-3", "100", "4096", "1000000", "2000000000000",
            "9223372036854775807", "-9223372036854775808", "9223372036854775808",
            "1e12", "1.5", "0x7fffffffffffffff", "010", "08", " 5", "NaN", "inf",
            "true", "false", "", "%d", "{{", "a\nb", "é",
        ][..])
        .prop_map(str::to_string),
        3 => "[ -~]{0,16}",
        1 => "\\PC{0,8}",
        1 => (1usize..100_000, select(&["x", "é", "\n", "ab ", "{{"][..]))
            .prop_map(|(n, s)| s.repeat(n)),
    ]
}

/// A JSON value of an array or map parameter (numbers are floats, as KUDO
/// parses them).
fn param_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        param_string().prop_map(Value::String),
        prop_oneof![
            Just(0.0),
            Just(3.0),
            Just(-1.0),
            Just(1e6),
            Just(2e12),
            Just(1.5),
            Just(1e308),
        ]
        .prop_map(|f| json!(f)),
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
    ];
    leaf.prop_recursive(3, 24, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map("[a-z]{1,4}", inner, 0..5)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// A KUDO render context with random parameter values.
fn data() -> impl Strategy<Value = Value> {
    (
        param_string(),
        param_string(),
        param_string(),
        prop::collection::vec(param_json(), 0..8),
        prop::collection::btree_map("[a-zA-Z]{1,6}", param_json(), 0..5),
    )
        .prop_map(|(n, s, b, l, m)| {
            json!({
                "Name": "zk", "Namespace": "ns", "OperatorName": "zookeeper",
                "OperatorVersion": "0.3.0", "AppVersion": "3.9.2",
                "PlanName": "deploy", "PhaseName": "main", "StepName": "one",
                "Params": {"N": n, "S": s, "B": b, "E": "", "L": l, "M": m},
                "Pipes": {},
            })
        })
}

/// Small and medium budgets (budgets are hit often and renders stay fast).
fn limits() -> impl Strategy<Value = Limits> {
    (
        select(&[0usize, 64, 4 << 10, 64 << 10, 1 << 20][..]),
        select(&[512usize, 4 << 10, 64 << 10, 256 << 10][..]),
        select(&[0u64, 100, 10_000, 100_000][..]),
    )
        .prop_map(|(max_output, max_values, max_steps)| Limits {
            max_output,
            max_values,
            max_steps,
        })
}

// ---------------------------------------------------------------------------
// The template grammar.
// ---------------------------------------------------------------------------

/// Declares the variables the grammar uses, a `define` that recurses
/// without end (the 200-deep limit) and one that renders its argument.
const PRELUDE: &str = concat!(
    r#"{{- define "loop" }}{{ template "loop" . }}{{ end -}}"#,
    r#"{{- define "echo" }}[{{ . }}]{{ end -}}"#,
    r#"{{- $a := 3 }}{{- $l := list 1 "x" }}{{- $d := dict "k" "v" }}{{- $s := "ab" -}}"#,
);

fn int_lit() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => (-3i64..12).prop_map(|n| n.to_string()),
        2 => select(&[
            "100", "4096", "65536", "999999", "1000000", "1000001", "16777216",
            "2000000000000", "9223372036854775807", "-9223372036854775807",
            "-1000000", "0x7fffffff", "0o777", "1_000", "0b1010",
        ][..])
        .prop_map(str::to_string),
        1 => any::<i64>().prop_map(|n| n.to_string()),
    ]
}

fn float_lit() -> impl Strategy<Value = String> {
    select(&["1.5", "0.0", "-2.5", "1e6", "1e308", "1e-9", "3.0"][..]).prop_map(str::to_string)
}

fn str_lit() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => prop::collection::vec(
            select(&["a", "b", " ", "%", "\\n", "\\t", "é", "\\\\", "{", "}", "-", ":", "x"][..]),
            0..6,
        )
        .prop_map(|parts| format!("\"{}\"", parts.concat())),
        1 => select(&["`raw`", "`a\nb`", "``", "'c'", "'\\n'"][..]).prop_map(str::to_string),
    ]
}

/// A printf format: text, `%%` and directives with flags, widths and
/// precisions that run from nothing to past Go's 10^6 cut-off.
fn printf_format() -> impl Strategy<Value = String> {
    let width = prop_oneof![
        3 => Just(String::new()),
        3 => (0u32..40).prop_map(|n| n.to_string()),
        1 => select(&["999999", "1000000", "1000001", "4194304", "16777216",
                      "0900000000000", "99999999999999999999999"][..])
            .prop_map(str::to_string),
    ];
    let precision = prop_oneof![
        3 => Just(String::new()),
        1 => Just(".".to_string()),
        2 => (0u32..20).prop_map(|n| format!(".{n}")),
        1 => select(&["999999", "1000000", "4194304", "100000000000"][..])
            .prop_map(|n| format!(".{n}")),
    ];
    let directive = (
        select(&["", "-", "+", "#", " ", "0", "-0", "+#"][..]),
        width,
        precision,
        select(
            &[
                "v", "s", "d", "q", "t", "f", "F", "e", "g", "x", "X", "o", "b", "c", "%", "*",
                "z", "",
            ][..],
        ),
    )
        .prop_map(|(flags, w, p, verb)| format!("%{flags}{w}{p}{verb}"));
    prop::collection::vec(prop_oneof![3 => directive, 1 => "[a-z :]{0,3}"], 0..4)
        .prop_map(|parts| format!("\"{}\"", parts.concat()))
}

/// Variables in scope: the prelude's, plus a range's `$i`/`$v` inside one.
fn var(in_range: bool) -> BoxedStrategy<String> {
    let outer = select(&["$a", "$l", "$d", "$s", "$"][..]).prop_map(str::to_string);
    if in_range {
        prop_oneof![2 => outer, 1 => select(&["$i", "$v"][..]).prop_map(str::to_string)].boxed()
    } else {
        outer.boxed()
    }
}

fn field() -> impl Strategy<Value = String> {
    select(
        &[
            ".",
            ".Name",
            ".Params",
            ".Params.N",
            ".Params.S",
            ".Params.B",
            ".Params.E",
            ".Params.L",
            ".Params.M",
            "$.Params.N",
            "$.Params.L",
            ".Pipes",
            ".AppVersion",
            "nil",
            "true",
            "false",
        ][..],
    )
    .prop_map(str::to_string)
}

/// The expression strategies of one nesting depth, built once from the
/// depth below (built per use, their number grows exponentially with the
/// depth, and so did the time and memory to build them).
#[derive(Clone)]
struct Exprs {
    /// Any operand.
    operand: BoxedStrategy<String>,
    /// An operand meant as a string.
    text: BoxedStrategy<String>,
    /// An operand meant as a size or count.
    number: BoxedStrategy<String>,
    /// An operand meant as a list.
    list: BoxedStrategy<String>,
    /// A call of a function that sizes its result from an argument, or
    /// that writes values out as text.
    sized: BoxedStrategy<String>,
    /// What can follow `|`.
    piped: BoxedStrategy<String>,
    /// A whole pipeline.
    pipeline: BoxedStrategy<String>,
}

fn exprs(depth: u32, in_range: bool) -> Exprs {
    let below = (depth > 0).then(|| exprs(depth - 1, in_range));
    let operand = operand(below.as_ref(), in_range);
    let text = text(below.as_ref());
    let number = number(below.as_ref(), in_range);
    let list = list_operand(below.as_ref(), in_range);
    let sized = sized_call(&operand, &text, &number, &list);
    let any = any_call(&operand);
    let piped = piped(&operand, &text, &number);
    let head = prop_oneof![5 => sized.clone(), 2 => any, 2 => operand.clone()];
    let pipeline = (head, prop::collection::vec(piped.clone(), 0..3))
        .prop_map(|(head, rest)| {
            std::iter::once(head)
                .chain(rest)
                .collect::<Vec<_>>()
                .join(" | ")
        })
        .boxed();
    Exprs {
        operand,
        text,
        number,
        list,
        sized,
        piped,
        pipeline,
    }
}

fn operand(below: Option<&Exprs>, in_range: bool) -> BoxedStrategy<String> {
    let leaf = prop_oneof![
        3 => int_lit(),
        1 => float_lit(),
        3 => str_lit(),
        3 => field(),
        2 => var(in_range),
    ];
    match below {
        None => leaf.boxed(),
        Some(below) => prop_oneof![
            4 => leaf,
            1 => below.pipeline.clone().prop_map(|p| format!("({p})")),
        ]
        .boxed(),
    }
}

/// Strings: literals, string parameters and values turned into text.
fn text(below: Option<&Exprs>) -> BoxedStrategy<String> {
    let leaf = prop_oneof![
        3 => str_lit(),
        2 => select(&[".Params.S", ".Params.N", ".Params.B", ".Params.E", "$s", ".Name",
                      "$.Params.S"][..])
            .prop_map(str::to_string),
    ];
    let Some(below) = below else {
        return leaf.boxed();
    };
    prop_oneof![
        4 => leaf,
        1 => (select(&["toString", "toYaml", "toJson", "quote"][..]), below.operand.clone())
            .prop_map(|(f, x)| format!("({f} {x})")),
        1 => below.sized.clone().prop_map(|c| format!("({c} | toString)")),
    ]
    .boxed()
}

/// Literals from 0 to past i64, and the ways packages turn parameters into
/// numbers.
fn number(below: Option<&Exprs>, in_range: bool) -> BoxedStrategy<String> {
    let leaf = prop_oneof![
        12 => int_lit(),
        6 => select(&["(int .Params.N)", "(int64 .Params.S)", "(atoi .Params.N)",
                      "(len $l)", "(len .Params.S)", "(int .Params.B)", "$a"][..])
            .prop_map(str::to_string),
        1 => select(&[".Params.N", "(float64 .Params.N)"][..]).prop_map(str::to_string),
        1 => var(in_range),
    ];
    let Some(below) = below else {
        return leaf.boxed();
    };
    let inner = below.number.clone();
    prop_oneof![
        5 => leaf,
        1 => (select(&["add", "mul", "sub", "max", "min", "div", "mod"][..]), inner.clone(), inner.clone())
            .prop_map(|(f, a, b)| format!("({f} {a} {b})")),
        1 => inner.prop_map(|a| format!("(add1 {a})")),
    ]
    .boxed()
}

fn list_operand(below: Option<&Exprs>, in_range: bool) -> BoxedStrategy<String> {
    let leaf = prop_oneof![
        6 => select(&["$l", ".Params.L", "(list)", "(list 1 2 3)", "(until 3)", "(keys $d)",
                      "(splitList \",\" .Params.S)"][..])
            .prop_map(str::to_string),
        1 => select(&[".Params.M", "$d"][..]).prop_map(str::to_string),
        1 => var(in_range),
    ];
    match below {
        None => leaf.boxed(),
        Some(below) => prop_oneof![
            3 => leaf,
            1 => below.pipeline.clone().prop_map(|p| format!("({p})")),
        ]
        .boxed(),
    }
}

fn sized_call(
    operand: &BoxedStrategy<String>,
    text: &BoxedStrategy<String>,
    number: &BoxedStrategy<String>,
    list: &BoxedStrategy<String>,
) -> BoxedStrategy<String> {
    let n = || number.clone();
    let s = || text.clone();
    let x = || operand.clone();
    let l = || list.clone();
    let known = prop_oneof![
        (
            select(&["indent", "nindent", "repeat", "trunc"][..]),
            n(),
            s()
        )
            .prop_map(|(f, n, s)| format!("{f} {n} {s}")),
        n().prop_map(|n| format!("until {n}")),
        (n(), n(), n()).prop_map(|(a, b, c)| format!("untilStep {a} {b} {c}")),
        (printf_format(), prop::collection::vec(x(), 0..3))
            .prop_map(|(f, args)| format!("printf {f} {}", args.join(" "))),
        (select(&["append", "prepend"][..]), l(), x()).prop_map(|(f, l, x)| format!("{f} {l} {x}")),
        prop::collection::vec(x(), 0..5).prop_map(|xs| format!("list {}", xs.join(" "))),
        (s(), l()).prop_map(|(sep, l)| format!("join {sep} {l}")),
        (s(), s(), s()).prop_map(|(a, b, c)| format!("replace {a} {b} {c}")),
        (select(&["split", "splitList"][..]), s(), s())
            .prop_map(|(f, a, b)| format!("{f} {a} {b}")),
        (s(), n(), s()).prop_map(|(a, b, c)| format!("splitn {a} {b} {c}")),
        (
            select(
                &[
                    "toJson",
                    "toPrettyJson",
                    "toYaml",
                    "toString",
                    "quote",
                    "squote",
                    "len",
                    "empty"
                ][..]
            ),
            x()
        )
            .prop_map(|(f, x)| format!("{f} {x}")),
        (
            select(
                &[
                    "b64enc",
                    "b64dec",
                    "sha256sum",
                    "upper",
                    "title",
                    "trim",
                    "nospace"
                ][..]
            ),
            s()
        )
            .prop_map(|(f, x)| format!("{f} {x}")),
        (
            select(
                &[
                    "cat", "print", "println", "dict", "coalesce", "html", "js", "urlquery"
                ][..]
            ),
            prop::collection::vec(x(), 0..4)
        )
            .prop_map(|(f, xs)| format!("{f} {}", xs.join(" "))),
        (s(), x()).prop_map(|(k, v)| format!("set $d {k} {v}")),
        (
            select(
                &[
                    "sortAlpha",
                    "uniq",
                    "reverse",
                    "compact",
                    "first",
                    "rest",
                    "initial"
                ][..]
            ),
            l()
        )
            .prop_map(|(f, l)| format!("{f} {l}")),
        (x(), l()).prop_map(|(x, l)| format!("has {x} {l}")),
        (s(), n(), n()).prop_map(|(x, a, b)| format!("slice {x} {a} {b}")),
        (l(), n()).prop_map(|(l, i)| format!("index {l} {i}")),
    ];
    // Sprig functions a package might try that are not provided: parse
    // errors (rare: one makes the whole template a parse error).
    let unknown = prop_oneof![
        (n(), n(), s()).prop_map(|(a, b, x)| format!("substr {a} {b} {x}")),
        n().prop_map(|n| format!("seq {n}")),
    ];
    prop_oneof![100 => known, 1 => unknown].boxed()
}

/// Any known function with any operands (mostly wrong types and counts).
fn any_call(operand: &BoxedStrategy<String>) -> BoxedStrategy<String> {
    (
        select(kudo_template::function_names()),
        prop::collection::vec(operand.clone(), 0..4),
    )
        .prop_map(|(f, args)| format!("{f} {}", args.join(" ")))
        .boxed()
}

/// The piped value becomes the last argument.
fn piped(
    operand: &BoxedStrategy<String>,
    text: &BoxedStrategy<String>,
    number: &BoxedStrategy<String>,
) -> BoxedStrategy<String> {
    prop_oneof![
        (
            select(&["replace", "splitn"][..]),
            text.clone(),
            text.clone()
        )
            .prop_map(|(f, a, b)| format!("{f} {a} {b}")),
        (
            select(&["indent", "nindent", "repeat", "trunc"][..]),
            number.clone()
        )
            .prop_map(|(f, n)| format!("{f} {n}")),
        select(
            &[
                "quote", "toYaml", "toJson", "trim", "upper", "b64enc", "toString", "len"
            ][..]
        )
        .prop_map(str::to_string),
        printf_format().prop_map(|f| format!("printf {f}")),
        operand.clone().prop_map(|x| format!("default {x}")),
        (
            select(&["append", "list", "cat", "join \"-\""][..]),
            operand.clone()
        )
            .prop_map(|(f, x)| format!("{f} {x}")),
    ]
    .boxed()
}

/// `{{`, `{{- `, `}}` or ` -}}`.
fn delims() -> impl Strategy<Value = (&'static str, &'static str)> {
    (select(&["{{ ", "{{- "][..]), select(&[" }}", " -}}"][..]))
}

/// What a `range` walks. Outside a range anything goes (the value budget
/// bounds lists built by `until`); inside one, only short lists, so nested
/// loops stay quick (time is not budgeted: see the crate README).
fn range_source(e: &Exprs, in_range: bool) -> BoxedStrategy<String> {
    if in_range {
        return select(&["$l", ".Params.L", ".Params.M", "(list 1 2)", "$d"][..])
            .prop_map(str::to_string)
            .boxed();
    }
    let n = || e.number.clone();
    prop_oneof![
        2 => n().prop_map(|n| format!("until {n}")),
        1 => e.list.clone(),
        1 => (n(), n(), n()).prop_map(|(a, b, c)| format!("untilStep {a} {b} {c}")),
    ]
    .boxed()
}

/// A sequence of template nodes.
fn body(depth: u32, in_range: bool) -> BoxedStrategy<String> {
    prop::collection::vec(node(depth, in_range), 0..5)
        .prop_map(|nodes| nodes.concat())
        .boxed()
}

fn node(depth: u32, in_range: bool) -> BoxedStrategy<String> {
    let e = exprs(depth, in_range);
    let text = select(&["x", "\n", "  ", "key: ", "- ", "}}", "é", "\n  value: "][..])
        .prop_map(str::to_string);
    let action =
        (delims(), e.pipeline.clone()).prop_map(|((open, close), p)| format!("{open}{p}{close}"));
    let assign = (
        delims(),
        select(&["$a = ", "$s = ", "$l = ", "$d = ", "$_ := ", "$n := "][..]),
        e.pipeline.clone(),
    )
        .prop_map(|((open, close), lhs, p)| format!("{open}{lhs}{p}{close}"));
    let shaped = (delims(), e.text.clone(), e.number.clone())
        .prop_map(|((open, close), t, n)| format!("{open}{t} | nindent {n}{close}"));
    let grow = (delims(), e.operand.clone()).prop_map(|((open, close), x)| {
        format!("{open}$l = append $l {x}{close}{open}$_ := set $d (toString (len $l)) $l{close}")
    });
    let mut others = vec![
        r#"{{ template "echo" .Params.N }}"#,
        r#"{{ template "echo" $l }}"#,
        r#"{{ template "echo" (toJson .) }}"#,
        "{{/* a comment */}}",
    ];
    if in_range {
        others.extend(["{{ break }}", "{{ continue }}"]);
    }
    let call_define = select(others).prop_map(str::to_string);
    let leaves = prop_oneof![
        30 => text,
        50 => action,
        20 => assign,
        10 => shaped,
        10 => grow,
        10 => call_define,
        // Recursion without end stops at the 200-deep limit; rare, as it
        // ends the render wherever it appears.
        1 => Just(r#"{{ template "loop" . }}"#.to_string()),
    ];
    if depth == 0 {
        return leaves.boxed();
    }
    let d = depth - 1;
    let inner = exprs(d, in_range);
    let same = body(d, in_range);
    let looped = body(d, true);
    let pipeline = inner.pipeline.clone();
    prop_oneof![
        60 => leaves,
        10 => (delims(), pipeline.clone(), same.clone(), same.clone())
            .prop_map(|((o, c), p, then, other)| format!("{o}if {p}{c}{then}{o}else{c}{other}{o}end{c}")),
        10 => (delims(), pipeline, same.clone())
            .prop_map(|((o, c), p, b)| format!("{o}with {p}{c}{b}{o}end{c}")),
        10 => (delims(), range_source(&inner, in_range), looped, same)
            .prop_map(|((o, c), src, b, other)| {
                format!("{o}range $i, $v := {src}{c}{b}{o}else{c}{other}{o}end{c}")
            }),
    ]
    .boxed()
}

fn template_text() -> impl Strategy<Value = String> {
    body(3, false).prop_map(|b| format!("{PRELUDE}{b}"))
}

/// Templates of one sizing call each (no loops), optionally piped on: each
/// asks one function for a result sized by its arguments.
fn sizing_templates() -> impl Strategy<Value = Vec<String>> {
    let e = exprs(1, false);
    prop::collection::vec(
        prop_oneof![
            3 => e.sized.clone(),
            1 => (e.sized.clone(), e.piped.clone()).prop_map(|(a, b)| format!("{a} | {b}")),
        ],
        1..6,
    )
    .prop_map(|calls| {
        calls
            .iter()
            .map(|c| format!("{PRELUDE}{{{{ {c} }}}}\n"))
            .collect()
    })
}

// ---------------------------------------------------------------------------
// What every result must look like.
// ---------------------------------------------------------------------------

/// An error names the template, a position inside the text and what failed.
fn assert_clean_error(err: &Error, text: &str, quoted: usize) {
    assert_eq!(err.template, NAME, "{err}");
    let lines = text.split('\n').count();
    assert!(
        err.line >= 1 && err.line <= lines,
        "line {} of {lines}: {err}",
        err.line
    );
    assert!(err.column >= 1, "{err}");
    assert!(!err.message.trim().is_empty(), "{err:?}");
    let shown = err.to_string();
    assert!(
        shown.starts_with(&format!("{NAME}:{}:{}: ", err.line, err.column)),
        "{shown}"
    );
    match err.kind {
        ErrorKind::OutputBudget => {
            assert!(err.message.contains("output budget exceeded"), "{err}")
        }
        ErrorKind::ValueBudget => {
            assert!(err.message.contains("value budget exceeded"), "{err}")
        }
        ErrorKind::StepBudget => {
            assert!(err.message.contains("step budget exceeded"), "{err}")
        }
        ErrorKind::Parse | ErrorKind::Execute => {}
    }
    // A message names the failing action; it carries at most one value,
    // from the input or built within the value budget (`fail .Params.X`
    // says X, as Go does).
    assert!(
        err.message.len() <= 4096 + 2 * quoted,
        "{} bytes: {}…",
        err.message.len(),
        err.message.chars().take(300).collect::<String>()
    );
}

/// The longest string in `data` (an error may quote one).
fn longest_string(data: &Value) -> usize {
    match data {
        Value::String(s) => s.len(),
        Value::Array(items) => items.iter().map(longest_string).max().unwrap_or(0),
        Value::Object(map) => map
            .iter()
            .map(|(k, v)| k.len().max(longest_string(v)))
            .max()
            .unwrap_or(0),
        _ => 0,
    }
}

/// Parses and renders `text`, checking every outcome; the render's result.
fn check(text: &str, data: &Value, limits: &Limits) -> Option<Result<String, Error>> {
    let template = match Template::parse(NAME, text) {
        Ok(template) => template,
        Err(err) => {
            assert_eq!(err.kind, ErrorKind::Parse, "{err}");
            assert_clean_error(&err, text, 0);
            return None;
        }
    };
    let _ = template.param_references();
    let _ = template.root_fields();
    let first = template.render_with(data, limits);
    match &first {
        Ok(out) => assert!(
            out.len() <= limits.max_output,
            "{} bytes rendered, limit {}",
            out.len(),
            limits.max_output
        ),
        Err(err) => {
            assert_ne!(err.kind, ErrorKind::Parse, "{err}");
            assert_clean_error(err, text, longest_string(data) + limits.max_values);
        }
    }
    let again = template.render_with(data, limits);
    assert_eq!(first, again, "a second render differs");
    Some(first)
}

/// Resident memory now and at its peak since the last reset (Linux).
fn resident() -> Option<(usize, usize)> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let field = |name: &str| -> Option<usize> {
        let line = status.lines().find(|l| l.starts_with(name))?;
        let kb: usize = line[name.len()..]
            .trim()
            .trim_end_matches("kB")
            .trim()
            .parse()
            .ok()?;
        Some(kb * 1024)
    };
    Some((field("VmRSS:")?, field("VmHWM:")?))
}

/// Resets the peak resident size to the current one; false where that is
/// not possible (not Linux, or /proc not writable).
fn reset_peak() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

proptest! {
    #![proptest_config(config(256))]

    /// The grammar's templates with random values and small budgets.
    #[test]
    fn grammar_templates_render_or_fail_cleanly(
        text in template_text(),
        data in data(),
        limits in limits(),
    ) {
        check(&text, &data, &limits);
    }

    /// Real package templates, mutated (a piece of template syntax spliced
    /// in, a range cut out or doubled), with random values.
    #[test]
    fn mutated_package_templates_render_or_fail_cleanly(
        file in select(&["configmap.yaml", "services.yaml", "statefulset.yaml"][..]),
        edits in prop::collection::vec(
            (any::<prop::sample::Index>(), any::<prop::sample::Index>(), 0u8..3,
             prop_oneof![exprs(1, false).sized.prop_map(|c| format!("{{{{ {c} }}}}")),
                         select(&["{{", "}}", "{{-", "-}}", "{{ end }}", "{{ else }}",
                                  "(", ")", "|", "$", "\"", "{{ range until (int .Params.NODE_COUNT) }}",
                                  "{{ if .Params.NODE_TOPOLOGY }}", "| indent 1000000 ",
                                  "| nindent (int .Params.MEMORY_MB) "][..])
                             .prop_map(str::to_string)]),
            1..4,
        ),
        values in prop::collection::vec(param_string(), 16),
        topology in param_json(),
    ) {
        let path = format!("{}/tests/packages/{file}", env!("CARGO_MANIFEST_DIR"));
        let mut text = std::fs::read_to_string(path).unwrap();
        for (at, to, op, piece) in &edits {
            let boundaries: Vec<usize> = (0..=text.len()).filter(|i| text.is_char_boundary(*i)).collect();
            let (a, b) = (*at.get(&boundaries), *to.get(&boundaries));
            let (from, until) = (a.min(b), a.max(b));
            match op {
                0 => text.insert_str(a, piece),
                1 => text.replace_range(from..until, ""),
                _ => {
                    let copy = text[from..until].to_string();
                    text.insert_str(until, &copy);
                }
            }
        }
        let names = ["NODE_COUNT", "IMAGE", "MEMORY", "MEMORY_MB", "CPUS", "METRICS_ENABLED",
                     "METRICS_PORT", "CLIENT_PORT", "POD_MANAGEMENT_POLICY", "STORAGE_CLASS",
                     "DISK_SIZE", "HEAP_SIZE", "JVM_OPTS", "PASSWORD", "EXTRA_PORTS", "N"];
        let mut params: serde_json::Map<String, Value> = names
            .iter()
            .zip(&values)
            .map(|(k, v)| (k.to_string(), json!(v)))
            .collect();
        params.insert("NODE_TOPOLOGY".into(), topology);
        let data = json!({
            "OperatorName": "zookeeper", "Name": "zk", "Namespace": "default",
            "AppVersion": "3.6.2", "OperatorVersion": "0.3.3",
            "PlanName": "deploy", "PhaseName": "zookeeper", "StepName": "deploy",
            "Params": params, "Pipes": {},
        });
        let limits = Limits { max_output: 256 << 10, max_values: 1 << 20, ..Limits::default() };
        check(&text, &data, &limits);
    }
}

proptest! {
    #![proptest_config(config(64))]

    /// Sizing calls at the default budgets: the output stays within 4 MiB
    /// and the process's peak memory within a small multiple of the
    /// budgets, whatever the sizes asked for.
    #[test]
    fn sizing_functions_at_default_limits_stay_within_the_budgets(
        texts in sizing_templates(),
        data in data(),
    ) {
        let limits = Limits::default();
        let input = serde_json::to_vec(&data).unwrap().len();
        for text in &texts {
            let measured = reset_peak();
            let before = resident();
            check(text, &data, &limits);
            if let (true, Some((rss, _)), Some((_, peak))) = (measured, before, resident()) {
                // Two renders ran (`check` repeats it); each may hold its
                // output and its built values, plus the data it was given.
                let bound = 3 * (DEFAULT_MAX_OUTPUT + DEFAULT_MAX_VALUES) + 8 * input + (16 << 20);
                let grown = peak.saturating_sub(rss);
                prop_assert!(grown <= bound, "peak memory grew by {grown} bytes (bound {bound}) for {text}");
            }
        }
    }
}

/// A template that nests `depth` ranges over `until N`, each iteration
/// writing one action; the number of iterations it asks for.
fn nested_ranges(depth: usize) -> (String, u32) {
    let mut text = String::new();
    for _ in 0..depth {
        text.push_str("{{ range until (int $.Params.N) }}");
    }
    text.push_str("{{ $.Params.N }}");
    for _ in 0..depth {
        text.push_str("{{ end }}");
    }
    (text, depth as u32)
}

/// A `define` that calls itself twice per level until `.` reaches `depth`:
/// 2^depth calls.
fn doubling_recursion(depth: u32) -> String {
    format!(
        "{{{{ define \"f\" }}}}{{{{ if lt . {depth} }}}}{{{{ template \"f\" (add . 1) }}}}\
         {{{{ template \"f\" (add . 1) }}}}{{{{ end }}}}{{{{ end }}}}{{{{ template \"f\" 0 }}}}"
    )
}

proptest! {
    #![proptest_config(config(64))]

    /// Loops and recursion whose work grows as N^depth or 2^depth end
    /// within the step budget: a render that succeeds took at most
    /// `max_steps` steps, and one asked for more iterations than the budget
    /// allows fails with a budget error (the budget bounds the time,
    /// without a clock).
    #[test]
    fn nested_loops_and_recursion_stop_at_the_step_budget(
        depth in 1usize..5,
        n in select(&[0i64, 1, 3, 10, 100, 2000, 1_000_000_000][..]),
        recursion in 0u32..64,
        max_steps in select(&[1_000u64, 50_000, 200_000][..]),
    ) {
        let limits = Limits { max_steps, ..Limits::default() };
        let data = json!({"Params": {"N": n.to_string()}});
        let (text, d) = nested_ranges(depth);
        let iterations = (n.max(0) as u128).saturating_pow(d);
        let loops = (text, iterations);
        let calls = (doubling_recursion(recursion), 1u128 << recursion);
        for (text, asked) in [loops, calls] {
            let template = Template::parse(NAME, &text).unwrap();
            match template.render_traced(&data, &limits) {
                Ok(rendered) => {
                    prop_assert!(rendered.steps <= max_steps, "{} steps: {text}", rendered.steps);
                    prop_assert!(asked <= u128::from(max_steps), "{asked} iterations ran: {text}");
                }
                Err(err) => {
                    // `until` of a huge count runs out of the value budget
                    // before it runs a step.
                    prop_assert!(err.kind.is_budget(), "{}", err);
                    assert_clean_error(&err, &text, 0);
                }
            }
        }
    }
}

/// Found by `sizing_functions_at_default_limits_stay_within_the_budgets`:
/// a precision above 65,535 (`u16::MAX`) made Rust's formatter panic
/// ("Formatting argument out of range"). Go writes the exact digits, all
/// zeros past the float's exact expansion.
#[test]
fn printf_with_a_precision_past_u16_max_writes_zeros_as_go_does() {
    let render = |text: &str| Template::parse(NAME, text).unwrap().render(&json!({}));
    let out = render(r#"{{ printf "%.70000f|" 1.5 }}"#).unwrap();
    assert_eq!(out, format!("1.5{}|", "0".repeat(69_999)));
    let out = render(r#"{{ printf "%.70000e|" -1.5 }}"#).unwrap();
    assert_eq!(out, format!("-1.5{}e+00|", "0".repeat(69_999)));
    // The smallest subnormal's 1,074 exact digits, then zeros.
    let out = render(r#"{{ printf "%.70000f" 5e-324 }}"#).unwrap();
    assert_eq!(out.len(), 70_002);
    assert!(
        out.starts_with("0.000") && out[2..1076].ends_with("625"),
        "{}",
        &out[..1080]
    );
    assert!(out[1076..].bytes().all(|b| b == b'0'));
    // A precision from a parameter (`printf .Params.FORMAT`) too.
    let data = json!({"Params": {"FORMAT": "%.999999F"}});
    let out = Template::parse(NAME, "{{ printf .Params.FORMAT 2.0 }}")
        .unwrap()
        .render(&data)
        .unwrap();
    assert_eq!(out.len(), 1_000_001);
}
