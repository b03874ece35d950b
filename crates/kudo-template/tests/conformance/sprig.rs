//! The sprig functions KUDO adds, toYaml and semverCompare, and error wording.

use crate::Want::{self, Err as E, Out as O};

/// (template, optional JSON context overriding the default, expectation)
pub(crate) const CASES: &[(&str, Option<&str>, Want)] = &[
    // --- sprig: conversions and math ---------------------------------------------------
    (r#"{{ int "42" }}"#, None, O("42")),
    (r#"{{ int "abc" }}"#, None, O("0")),
    ("{{ int 3.9 }}", None, O("3")),
    (r#"{{ int "3.5" }}"#, None, O("0")),
    (r#"{{ int64 "7" }}"#, None, O("7")),
    (r#"{{ float64 "1.5" }}"#, None, O("1.5")),
    (r#"{{ float64 "2" }}"#, None, O("2")),
    (r#"{{ atoi "12" }} {{ atoi "x" }}"#, None, O("12 0")),
    (
        "{{ atoi .i }}",
        None,
        E("wrong type for value; expected string; got int"),
    ),
    ("{{ add 1 2 3 }}", None, O("6")),
    (r#"{{ add "2" 3 }}"#, None, O("5")),
    (r#"{{ add1 "4" }}"#, None, O("5")),
    (r#"{{ sub 10 "3" }}"#, None, O("7")),
    (r#"{{ mul 2 "3" 4 }}"#, None, O("24")),
    ("{{ div 7 2 }}", None, O("3")),
    (
        "{{ div 1 0 }}",
        None,
        E("error calling div: runtime error: integer divide by zero"),
    ),
    ("{{ mod 7 3 }}", None, O("1")),
    ("{{ min 3 1 2 }}", None, O("1")),
    (r#"{{ max "3" 10 }}"#, None, O("10")),
    ("{{ min 3 .Params.NODE_COUNT }}", None, O("3")),
    ("{{ div .fmil 1000 }}", None, O("1000")),
    ("{{ until 3 }}", None, O("[0 1 2]")),
    (
        r#"{{ until .s }}"#,
        None,
        E("wrong type for value; expected int; got string"),
    ),
    (
        "{{ until .Params.NODE_COUNT }}",
        None,
        E("expected int; got string"),
    ),
    ("{{ untilStep 0 10 3 }}", None, O("[0 3 6 9]")),
    ("{{ untilStep 5 0 -2 }}", None, O("[5 3 1]")),
    ("{{ until 0 }}", None, O("[]")),
    (
        "{{ until 1 2 }}",
        None,
        E("wrong number of args for until: want 1 got 2"),
    ),
    // --- sprig: strings ---------------------------------------------------------------
    (r#"{{ trim "  a b  " }}"#, None, O("a b")),
    (r#"{{ trimAll "$" "$$a$" }}"#, None, O("a")),
    (
        r#"{{ trimSuffix "-x" "a-x" }} {{ trimPrefix "a-" "a-x" }}"#,
        None,
        O("a x"),
    ),
    (r#"{{ upper "ab" }} {{ lower "AB" }}"#, None, O("AB ab")),
    (
        r#"{{ title "hello world-foo bar_baz" }}"#,
        None,
        O("Hello World-Foo Bar_baz"),
    ),
    (r#"{{ replace " " "-" "a b c" }}"#, None, O("a-b-c")),
    (r#"{{ repeat 3 "ab" }}"#, None, O("ababab")),
    (
        r#"{{ contains "b" "abc" }} {{ hasPrefix "a" "abc" }} {{ hasSuffix "b" "abc" }}"#,
        None,
        O("true true false"),
    ),
    (r#"{{ split "," "a,b" }}"#, None, O("map[_0:a _1:b]")),
    (r#"{{ (split "," "a,b")._1 }}"#, None, O("b")),
    (r#"{{ splitList "," "a,b,c" }}"#, None, O("[a b c]")),
    (r#"{{ splitn "," 2 "a,b,c" }}"#, None, O("map[_0:a _1:b,c]")),
    (r#"{{ join "-" (list 1 2 3) }}"#, None, O("1-2-3")),
    (r#"{{ join "," .Params.LIST }}"#, None, O("x,y")),
    (r#"{{ quote "a" 1 nil }}"#, None, O(r#""a" "1""#)),
    (r#"{{ squote "a" }}"#, None, O("'a'")),
    (r#"{{ quote "say \"hi\"" }}"#, None, O(r#""say \"hi\"""#)),
    (r#"{{ indent 2 "a\nb" }}"#, None, O("  a\n  b")),
    (r#"{{ nindent 2 "a" }}"#, None, O("\n  a")),
    ("{{ toString 5 }} {{ toString .nil }}", None, O("5 <nil>")),
    (
        "{{ trim .i }}",
        None,
        E("wrong type for value; expected string; got int"),
    ),
    (
        "{{ upper .nil }}",
        None,
        E("invalid value; expected string"),
    ),
    (r#"{{ cat "a" 1 nil "b" }}"#, None, O("a 1 b")),
    (r#"{{ trunc 3 "abcdef" }}"#, None, O("abc")),
    // --- sprig: lists and dicts ---------------------------------------------------------
    (r#"{{ list 1 "a" }}"#, None, O("[1 a]")),
    (r#"{{ dict "b" 2 "a" 1 }}"#, None, O("map[a:1 b:2]")),
    (r#"{{ dict "a" }}"#, None, O("map[a:]")),
    (r#"{{ get (dict "a" 1) "a" }}"#, None, O("1")),
    (r#"{{ get (dict "a" 1) "zz" }}"#, None, O("")),
    (
        r#"{{ $d := dict }}{{ $_ := set $d "k" "v" }}{{ $d.k }}"#,
        None,
        O("v"),
    ),
    (
        r#"{{ hasKey .m "a" }} {{ hasKey .m "z" }}"#,
        None,
        O("true false"),
    ),
    (r#"{{ keys (dict "b" 1 "a" 2) }}"#, None, O("[a b]")),
    ("{{ first .l }} {{ last .l }}", None, O("a true")),
    (
        "{{ rest (list 1 2 3) }} {{ initial (list 1 2 3) }}",
        None,
        O("[2 3] [1 2]"),
    ),
    ("{{ first .el }}", None, O("<no value>")),
    (
        "{{ has 2 (list 1 2) }} {{ has 5 (list 1 2) }}",
        None,
        O("true false"),
    ),
    ("{{ uniq (list 1 1 2 1) }}", None, O("[1 2]")),
    (r#"{{ sortAlpha (list "b" "a" "c") }}"#, None, O("[a b c]")),
    (
        r#"{{ first "abc" }}"#,
        None,
        E("Cannot find first on type string"),
    ),
    (
        r#"{{ get .s "a" }}"#,
        None,
        E("wrong type for value; expected map[string]interface {}; got string"),
    ),
    ("{{ (index .Params.TOPOLOGY 0).nodes }}", None, O("3")),
    // --- sprig: defaults and flow control --------------------------------------------------
    (
        r#"{{ default "x" "" }} {{ default "x" "y" }}"#,
        None,
        O("x y"),
    ),
    (r#"{{ .Params.EMPTY | default "d" }}"#, None, O("d")),
    (
        r#"{{ .Params.NOPE | default "d" }}"#,
        None,
        E("map has no entry for key \"NOPE\""),
    ),
    ("{{ default 5 0 }}", None, O("5")),
    (
        r#"{{ empty "" }} {{ empty .el }} {{ empty 0 }} {{ empty "a" }} {{ empty .nil }}"#,
        None,
        O("true true true false true"),
    ),
    (r#"{{ coalesce "" 0 "x" }}"#, None, O("x")),
    (
        r#"{{ ternary "a" "b" true }} {{ ternary "a" "b" false }}"#,
        None,
        O("a b"),
    ),
    (
        r#"{{ ternary "a" "b" .Params.FLAG }}"#,
        None,
        E("wrong type for value; expected bool; got string"),
    ),
    (
        r#"{{ required "NODE_COUNT is required" .Params.EMPTY }}"#,
        None,
        E("error calling required: NODE_COUNT is required"),
    ),
    (r#"{{ required "need" "v" }}"#, None, O("v")),
    (
        r#"{{ fail "stop here" }}"#,
        None,
        E("error calling fail: stop here"),
    ),
    // --- sprig: encoding ---------------------------------------------------------------------
    (r#"{{ b64enc "hello" }}"#, None, O("aGVsbG8=")),
    (
        r#"{{ b64dec "!!" }}"#,
        None,
        O("illegal base64 data at input byte 0"),
    ),
    (
        r#"{{ sha256sum "abc" }}"#,
        None,
        O("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
    ),
    (
        r#"{{ toJson (dict "b" 1 "a" (list 1 "x")) }}"#,
        None,
        O(r#"{"a":[1,"x"],"b":1}"#),
    ),
    (r#"{{ toJson "<&>" }}"#, None, O(r#""\u003c\u0026\u003e""#)),
    (
        "{{ toJson .fmil }} {{ toJson .nil }}",
        None,
        O("1000000 null"),
    ),
    (
        r#"{{ toPrettyJson (dict "a" 1 "b" (list 2)) }}"#,
        None,
        O("{\n  \"a\": 1,\n  \"b\": [\n    2\n  ]\n}"),
    ),
    // --- toYaml (yaml.v2 reads y/n as booleans, so such keys get quoted) ---------------------------------------------------------------------------------
    ("{{ toYaml .m }}", None, O("a: 1\nb: x\n")),
    (
        "{{ toYaml .Params.TOPOLOGY }}",
        None,
        O("- datacenter: dc1\n  nodes: 3\n- datacenter: dc2\n  nodes: 2\n"),
    ),
    (
        r#"{{ toYaml (dict "k" (list "a" "b")) }}"#,
        None,
        O("k:\n- a\n- b\n"),
    ),
    (
        r#"{{ toYaml (dict "a" (dict "b" (dict "c" 1))) }}"#,
        None,
        O("a:\n  b:\n    c: 1\n"),
    ),
    (
        r##"{{ toYaml (dict "t" "true" "n" "123" "e" "" "c" "a: b" "d" "- x" "h" "#x") }}"##,
        None,
        O("c: 'a: b'\nd: '- x'\ne: \"\"\nh: '#x'\n\"n\": \"123\"\nt: \"true\"\n"),
    ),
    (
        r#"{{ toYaml (dict "s" "line1\nline2") }}"#,
        None,
        O("s: |-\n  line1\n  line2\n"),
    ),
    (
        r#"{{ toYaml (dict "s" "line1\n") }}"#,
        None,
        O("s: |\n  line1\n"),
    ),
    (
        r#"{{ toYaml (dict "n" nil "f" 1000000.0 "b" false) }}"#,
        None,
        O("b: false\nf: 1e+06\n\"n\": null\n"),
    ),
    (
        r#"{{ toYaml (dict "m" (dict) "l" (list)) }}"#,
        None,
        O("l: []\nm: {}\n"),
    ),
    (r#"{{ toYaml "abc" }}"#, None, O("abc\n")),
    (
        r#"{{ toYaml (dict "a10" 1 "a2" 2 "B" 3 "a" 4) }}"#,
        None,
        O("B: 3\na: 4\na2: 2\na10: 1\n"),
    ),
    (
        "{{ toYaml .Params.TOPOLOGY | trim | indent 4 }}",
        None,
        O("    - datacenter: dc1\n      nodes: 3\n    - datacenter: dc2\n      nodes: 2"),
    ),
    (
        r#"{{ toYaml (list (list 1 2) "x") }}"#,
        None,
        O("- - 1\n  - 2\n- x\n"),
    ),
    (
        r#"{{ toYaml (dict "v" "2020-01-02" "w" "yes" "x" "1.5" "y" "0x1F" "z" "x y") }}"#,
        None,
        O("v: \"2020-01-02\"\nw: \"yes\"\nx: \"1.5\"\n\"y\": \"0x1F\"\nz: x y\n"),
    ),
    (
        r#"{{ toYaml (dict "tab" "a\tb" "lead" " a") }}"#,
        None,
        O("lead: ' a'\ntab: \"a\\tb\"\n"),
    ),
    // yaml.v2 folds plain scalars at the first space past column 80.
    (
        r#"{{ toYaml (dict "k" "word word word word word word word word word word word word word word word word word word word word") }}"#,
        None,
        O(
            "k: word word word word word word word word word word word word word word word word\n  word word word word\n",
        ),
    ),
    // --- literal arguments of the wrong type use Go's literal wording ---
    ("{{ trim 5 }}", None, E("at <5>: expected string; found 5")),
    (
        r#"{{ until "3" }}"#,
        None,
        E(r#"at <"3">: expected integer; found "3""#),
    ),
    (
        r#"{{ ternary 1 2 "yes" }}"#,
        None,
        E(r#"expected bool; found "yes""#),
    ),
    (
        r#"{{ get "x" "a" }}"#,
        None,
        E(r#"can't handle "x" for arg of type map[string]interface {}"#),
    ),
    ("{{ upper nil }}", None, E("cannot assign nil to string")),
    (
        "{{ until .s }}",
        None,
        E("at <.s>: wrong type for value; expected int; got string"),
    ),
    (
        "{{ .i | trim }}",
        None,
        E("wrong type for value; expected string; got int"),
    ),
    // --- semverCompare (Masterminds constraints) ---
    (r#"{{ semverCompare ">=1.2.0" "1.3.0" }}"#, None, O("true")),
    (
        r#"{{ semverCompare ">= 1.2, < 2.0" "v2.1.0" }}"#,
        None,
        O("false"),
    ),
    (
        r#"{{ semverCompare "^1.2" "1.9.3" }} {{ semverCompare "~1.2" "1.3.0" }}"#,
        None,
        O("true false"),
    ),
    (
        r#"{{ semverCompare "<1.0 || >=3" "3.1" }} {{ semverCompare "!=1.2.3" "1.2.3" }}"#,
        None,
        O("true false"),
    ),
    (
        r#"{{ semverCompare "1.0 - 2.0" "1.5.0" }}"#,
        None,
        O("true"),
    ),
    (
        r#"{{ semverCompare ">=1.0" "not-a-version" }}"#,
        None,
        E("Invalid Semantic Version"),
    ),
    // --- errors, positions and removed functions ------------------------------------------------
    (
        "{{ env \"HOME\" }}",
        None,
        E("function \"env\" not defined"),
    ),
    (
        "{{ expandenv \"x\" }}",
        None,
        E("function \"expandenv\" not defined"),
    ),
    (
        "{{ base \"/a/b\" }}",
        None,
        E("function \"base\" not defined"),
    ),
    (
        "{{ isAbs \"/a\" }}",
        None,
        E("function \"isAbs\" not defined"),
    ),
    (
        "{{ include \"x\" . }}",
        None,
        E("function \"include\" not defined"),
    ),
    (
        "{{ if eq .Params.NODE_COUNT 3 }}x{{ end }}",
        None,
        E("error calling eq: incompatible types for comparison"),
    ),
    (
        "{{ 3 4 }}",
        None,
        E("can't give argument to non-function 3"),
    ),
    ("{{ else }}", None, E("unexpected {{else}}")),
];
