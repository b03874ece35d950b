#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! Conformance table: each case is a template, an input context and either
//! Go's exact output or a substring of the error Go's text/template + sprig
//! v2.22 (as KUDO configured them) would report. Expected values come from the
//! documented semantics of Go `text/template`, `fmt` and sprig.

use serde_json::{Value, json};

/// The default context: KUDO-like root fields plus values of every Go type.
fn ctx() -> Value {
    json!({
        "Name": "zk", "Namespace": "ns", "OperatorName": "zookeeper",
        "Params": {
            "NODE_COUNT": "3", "FLAG": "false", "EMPTY": "", "SECRET": "aGVsbG8=",
            "CPU": "250m", "NUM": "7", "LIST": ["x", "y"],
            "TOPOLOGY": [{"datacenter": "dc1", "nodes": 3}, {"datacenter": "dc2", "nodes": 2}]
        },
        "f80": 80.0, "fmil": 1000000.0, "fhalf": 0.5, "fbig": 123456789.0,
        "i": 42, "imil": 1000000,
        "m": {"b": "x", "a": 1},
        "l": ["a", 1, true],
        "nil": null, "t": true, "f": false, "el": [], "em": {}, "s": "abc",
        "nl": ["a", null],
        "deep": {"a": {"b": {"c": "deep"}}}
    })
}

enum Want {
    Out(&'static str),
    Err(&'static str),
}
use Want::{Err as E, Out as O};

/// (template, optional JSON context overriding the default, expectation)
const CASES: &[(&str, Option<&str>, Want)] = &[
    // --- text, trim markers, comments -------------------------------------
    ("hello", None, O("hello")),
    ("a  {{- 1 }}  b", None, O("a1  b")),
    ("a  {{ 1 -}}  \n b", None, O("a  1b")),
    ("a \n {{- 1 -}} \n b", None, O("a1b")),
    ("{{/* a comment */}}x", None, O("x")),
    ("a {{- /* c */ -}} b", None, O("ab")),
    ("{{-3}}", None, O("-3")),
    ("{{ /* bad */ }}", None, E("unexpected")),
    ("{{/* unclosed", None, E("unclosed comment")),
    ("{{ .Name", None, E("unclosed action")),
    ("a\n{{- if true }}\nb\n{{- end }}\n", None, O("a\nb\n")),
    ("{{ \"a\" }}{{ \"b\" }}", None, O("ab")),
    // --- literals ---------------------------------------------------------
    (r#"{{ "a\tb" }}"#, None, O("a\tb")),
    (r#"{{ "\x41\u00e9\101\\" }}"#, None, O("AéA\\")),
    ("{{ `raw\\n` }}", None, O("raw\\n")),
    ("{{ 'a' }}", None, O("97")),
    ("{{ 42 }}", None, O("42")),
    ("{{ -7 }}", None, O("-7")),
    ("{{ 0x1F }}", None, O("31")),
    ("{{ 0o17 }}", None, O("15")),
    ("{{ 017 }}", None, O("15")),
    ("{{ 1_000 }}", None, O("1000")),
    ("{{ 1.5 }}", None, O("1.5")),
    ("{{ 1e6 }}", None, O("1e+06")),
    ("{{ 1000000.0 }}", None, O("1e+06")),
    ("{{ 80.0 }}", None, O("80")),
    ("{{ 0.000001 }}", None, O("1e-06")),
    ("{{ true }} {{ false }}", None, O("true false")),
    ("{{ nil }}", None, E("nil is not a command")),
    ("{{ \"open }}", None, E("unterminated quoted string")),
    // --- printing values from data (Go %v) ---------------------------------
    ("{{ .f80 }}", None, O("80")),
    ("{{ .fmil }}", None, O("1e+06")),
    ("{{ .fhalf }}", None, O("0.5")),
    ("{{ .fbig }}", None, O("1.23456789e+08")),
    ("{{ .i }} {{ .imil }}", None, O("42 1000000")),
    ("{{ .m }}", None, O("map[a:1 b:x]")),
    ("{{ .l }}", None, O("[a 1 true]")),
    (
        "{{ .Params.TOPOLOGY }}",
        None,
        O("[map[datacenter:dc1 nodes:3] map[datacenter:dc2 nodes:2]]"),
    ),
    ("{{ .nil }}", None, O("<no value>")),
    ("{{ .f }}", None, O("false")),
    ("{{ .nl }}", None, O("[a <nil>]")),
    ("{{ .el }} {{ .em }}", None, O("[] map[]")),
    ("{{ . }}", Some(r#"{"x": [1.0, 2.5]}"#), O("map[x:[1 2.5]]")),
    // --- fields -------------------------------------------------------------
    ("{{ .Name }}", None, O("zk")),
    ("{{ .Params.NODE_COUNT }}", None, O("3")),
    ("{{ .deep.a.b.c }}", None, O("deep")),
    (
        "{{ .Params.NONE }}",
        None,
        E("map has no entry for key \"NONE\""),
    ),
    (
        "{{ .StepNumber }}",
        None,
        E("map has no entry for key \"StepNumber\""),
    ),
    (
        "{{ .s.x }}",
        None,
        E("can't evaluate field x in type string"),
    ),
    (
        "{{ .nil.b }}",
        None,
        E("nil pointer evaluating interface {}.b"),
    ),
    ("{{ range .l }}{{ $.Name }}{{ end }}", None, O("zkzkzk")),
    (
        "{{ $t := .Params.TOPOLOGY }}{{ range $t }}{{ .datacenter }}{{ end }}",
        None,
        O("dc1dc2"),
    ),
    (
        "{{ (index .Params.TOPOLOGY 1).datacenter }}",
        None,
        O("dc2"),
    ),
    ("{{ (.deep.a).b.c }}", None, O("deep")),
    ("{{ with .m }}{{ .b }}{{ end }}", None, O("x")),
    (
        "{{ .Name 1 }}",
        None,
        E("Name is not a method but has arguments"),
    ),
    ("{{ $v := .deep }}{{ $v.a.b.c }}", None, O("deep")),
    ("{{ \"s\".x }}", None, E("unexpected . after term")),
    // --- variables ----------------------------------------------------------
    ("{{ $x := 1 }}{{ $x }}", None, O("1")),
    (
        "{{ $x := 1 }}{{ if true }}{{ $x = 2 }}{{ end }}{{ $x }}",
        None,
        O("2"),
    ),
    (
        "{{ if true }}{{ $y := 1 }}{{ end }}{{ $y }}",
        None,
        E("undefined variable \"$y\""),
    ),
    ("{{ $nope }}", None, E("undefined variable \"$nope\"")),
    (
        "{{ if true }}{{ $a := 1 }}{{ else }}{{ $a }}{{ end }}",
        None,
        E("undefined variable \"$a\""),
    ),
    ("{{ $z = 1 }}", None, E("undefined variable \"$z\"")),
    (
        "{{ range $i, $v := .l }}{{ $i }}={{ $v }};{{ end }}",
        None,
        O("0=a;1=1;2=true;"),
    ),
    ("{{ range $v := .l }}{{ $v }}{{ end }}", None, O("a1true")),
    ("{{ $x := 5 }}", None, O("")),
    (
        "{{ $x := 1 }}{{ if true }}{{ $x := 2 }}{{ $x }}{{ end }}{{ $x }}",
        None,
        O("21"),
    ),
    ("{{ $a, $b := 1 }}", None, E("")),
    ("{{ $.Namespace }}", None, O("ns")),
    (
        "{{ $n := 0 }}{{ range until 3 }}{{ $n = add $n 1 }}{{ end }}{{ $n }}",
        None,
        O("3"),
    ),
    (
        r#"{{ $x := 1 }}{{ define "d" }}{{ $x }}{{ end }}"#,
        None,
        E("undefined variable \"$x\""),
    ),
    // --- pipelines ----------------------------------------------------------
    ("{{ .Params.SECRET | b64dec }}", None, O("hello")),
    ("{{ 3 | mul 2 }}", None, O("6")),
    (r#"{{ "a" | printf "%s-%s" "b" }}"#, None, O("b-a")),
    (
        "{{ .Name | .Namespace }}",
        None,
        E("Namespace is not a method but has arguments"),
    ),
    ("{{ 1 | }}", None, E("missing command")),
    (
        "{{ $x := 1 }}{{ $x 2 }}",
        None,
        E("can't give argument to non-function $x"),
    ),
    (r#"{{ "  hi  " | trim | upper }}"#, None, O("HI")),
    (
        "{{ until (int (min 3 .Params.NODE_COUNT)) }}",
        None,
        O("[0 1 2]"),
    ),
    ("{{ (1) }}", None, O("1")),
    ("{{ .Params.NUM | int | add 1 }}", None, O("8")),
    // --- if / else ----------------------------------------------------------
    ("{{ if true }}y{{ else }}n{{ end }}", None, O("y")),
    ("{{ if false }}y{{ else }}n{{ end }}", None, O("n")),
    ("{{ if .Params.EMPTY }}y{{ else }}n{{ end }}", None, O("n")),
    ("{{ if .Params.FLAG }}y{{ else }}n{{ end }}", None, O("y")),
    ("{{ if 0 }}y{{ else }}n{{ end }}", None, O("n")),
    ("{{ if 0.0 }}y{{ else }}n{{ end }}", None, O("n")),
    ("{{ if .el }}y{{ else }}n{{ end }}", None, O("n")),
    ("{{ if .l }}y{{ else }}n{{ end }}", None, O("y")),
    ("{{ if .em }}y{{ else }}n{{ end }}", None, O("n")),
    ("{{ if .nil }}y{{ else }}n{{ end }}", None, O("n")),
    (
        "{{ if eq .i 1 }}a{{ else if eq .i 42 }}b{{ else }}c{{ end }}",
        None,
        O("b"),
    ),
    (
        "{{ if false }}a{{ else if false }}b{{ else }}c{{ end }}",
        None,
        O("c"),
    ),
    ("{{ if true }}x", None, E("unexpected EOF")),
    ("x{{ end }}", None, E("unexpected {{end}}")),
    ("{{ if }}x{{ end }}", None, E("missing value for if")),
    (
        "{{ if true }}a{{ else }}b{{ else }}c{{ end }}",
        None,
        E("expected end"),
    ),
    // --- range --------------------------------------------------------------
    (
        "{{ range .Params.LIST }}[{{ . }}]{{ end }}",
        None,
        O("[x][y]"),
    ),
    (
        "{{ range $k, $v := .m }}{{ $k }}={{ $v }};{{ end }}",
        None,
        O("a=1;b=x;"),
    ),
    ("{{ range .m }}{{ . }};{{ end }}", None, O("1;x;")),
    ("{{ range 3 }}{{ . }}{{ end }}", None, O("012")),
    ("{{ range $i := 3 }}{{ $i }}{{ end }}", None, O("012")),
    (
        "{{ range $i, $v := 3 }}{{ $i }}{{ end }}",
        None,
        E("can't use"),
    ),
    (
        "{{ range $i, $e := until 3 }}{{ $i }}{{ $e }},{{ end }}",
        None,
        O("00,11,22,"),
    ),
    ("{{ range .el }}x{{ else }}empty{{ end }}", None, O("empty")),
    ("{{ range .nil }}x{{ else }}none{{ end }}", None, O("none")),
    (
        "{{ range .s }}x{{ end }}",
        None,
        E("range can't iterate over abc"),
    ),
    (
        "{{ range until 5 }}{{ if eq . 3 }}{{ break }}{{ end }}{{ . }}{{ end }}",
        None,
        O("012"),
    ),
    (
        "{{ range until 4 }}{{ if eq . 1 }}{{ continue }}{{ end }}{{ . }}{{ end }}",
        None,
        O("023"),
    ),
    ("{{ break }}", None, E("{{break}} outside {{range}}")),
    (
        "{{ range .Params.TOPOLOGY }}{{ $dc := . }}{{ range until (int $dc.nodes) }}{{ $dc.datacenter }}-{{ . }} {{ end }}{{ end }}",
        None,
        O("dc1-0 dc1-1 dc1-2 dc2-0 dc2-1 "),
    ),
    (
        "{{ range $i := until 2 }}---\nname: {{ $.Name }}-{{ $i }}\n{{ end }}",
        None,
        O("---\nname: zk-0\n---\nname: zk-1\n"),
    ),
    (
        "{{ range .em }}x{{ else }}{{ .Name }}{{ end }}",
        None,
        O("zk"),
    ),
    // --- with ---------------------------------------------------------------
    (
        "{{ with .Params.NODE_COUNT }}n={{ . }}{{ end }}",
        None,
        O("n=3"),
    ),
    (
        "{{ with .Params.EMPTY }}x{{ else }}none{{ end }}",
        None,
        O("none"),
    ),
    (
        "{{ with .el }}a{{ else with .s }}{{ . }}{{ end }}",
        None,
        O("abc"),
    ),
    ("{{ with $x := .i }}{{ $x }}{{ end }}", None, O("42")),
    ("{{ with .nil }}a{{ end }}b", None, O("b")),
    // --- define / template / block ------------------------------------------
    (
        r#"{{ define "x" }}[{{ . }}]{{ end }}{{ template "x" .Name }}"#,
        None,
        O("[zk]"),
    ),
    (
        r#"{{ define "x" }}{{ . }}{{ end }}{{ template "x" }}"#,
        None,
        O("<no value>"),
    ),
    (
        r#"{{ block "b" .Namespace }}<{{ . }}>{{ end }}"#,
        None,
        O("<ns>"),
    ),
    (
        r#"{{ template "missing" }}"#,
        None,
        E("no such template \"missing\""),
    ),
    (
        r#"{{ if true }}{{ define "x" }}{{ end }}{{ end }}"#,
        None,
        E(""),
    ),
    (
        r#"{{ define "r" }}{{ template "r" . }}{{ end }}{{ template "r" . }}"#,
        None,
        E("exceeded maximum template depth"),
    ),
    (
        r#"{{ define "x" }}{{ $.a }}{{ end }}{{ template "x" .deep }}"#,
        None,
        O("map[b:map[c:deep]]"),
    ),
    // --- comparisons ----------------------------------------------------------
    (r#"{{ eq .Params.FLAG "true" }}"#, None, O("false")),
    ("{{ eq .i 42 }}", None, O("true")),
    ("{{ eq 2 1 2 3 }}", None, O("true")),
    ("{{ eq 5 1 2 3 }}", None, O("false")),
    (
        r#"{{ eq .Params.NODE_COUNT 3 }}"#,
        None,
        E("incompatible types for comparison"),
    ),
    (r#"{{ ne "a" "b" }}"#, None, O("true")),
    ("{{ ne 1 1 }}", None, O("false")),
    ("{{ lt 1 2 }} {{ lt 2 1 }}", None, O("true false")),
    (r#"{{ lt "a" "b" }}"#, None, O("true")),
    (
        "{{ le 2 2 }} {{ gt 3 2 }} {{ ge 1 2 }}",
        None,
        O("true true false"),
    ),
    (
        "{{ lt true false }}",
        None,
        E("invalid type for comparison"),
    ),
    ("{{ eq .l .l }}", None, E("uncomparable type")),
    (
        "{{ eq 1 1.0 }}",
        None,
        E("incompatible types for comparison"),
    ),
    (
        "{{ lt 1 2.5 }}",
        None,
        E("incompatible types for comparison"),
    ),
    ("{{ eq 1.5 1.5 }}", None, O("true")),
    ("{{ eq .t true }}", None, O("true")),
    ("{{ eq 1 }}", None, E("missing argument for comparison")),
    ("{{ gt (len .l) 2 }}", None, O("true")),
    // --- and / or / not ----------------------------------------------------------
    ("{{ and 1 0 }}", None, O("0")),
    ("{{ and 1 2 }}", None, O("2")),
    (r#"{{ or 0 "" }}"#, None, O("")),
    (r#"{{ or 0 "x" }}"#, None, O("x")),
    ("{{ not 0 }} {{ not \"a\" }}", None, O("true false")),
    (
        r#"{{ and false (fail "evaluated") }}"#,
        None,
        E("evaluated"),
    ),
    (r#"{{ or true (fail "evaluated") }}"#, None, E("evaluated")),
    (
        r#"{{ if and (eq .Name "zk") (ne .Namespace "x") }}ok{{ end }}"#,
        None,
        O("ok"),
    ),
    (
        "{{ not }}",
        None,
        E("wrong number of args for not: want 1 got 0"),
    ),
    // --- len / index / slice ----------------------------------------------------
    (r#"{{ len "héllo" }}"#, None, O("6")),
    ("{{ len .l }} {{ len .m }}", None, O("3 2")),
    ("{{ len 3 }}", None, E("len of type int")),
    ("{{ index .l 1 }}", None, O("1")),
    (r#"{{ index .m "b" }}"#, None, O("x")),
    (r#"{{ index .m "zz" }}"#, None, O("<no value>")),
    (
        r#"{{ index .Params.TOPOLOGY 0 "datacenter" }}"#,
        None,
        O("dc1"),
    ),
    ("{{ index .l 5 }}", None, E("index out of range: 5")),
    ("{{ index .nil 0 }}", None, E("index of untyped nil")),
    (
        r#"{{ index .l "a" }}"#,
        None,
        E("cannot index slice/array with type string"),
    ),
    (r#"{{ slice "abcdef" 1 3 }}"#, None, O("bc")),
    ("{{ slice .l 1 }}", None, O("[1 true]")),
    (r#"{{ index "abc" 1 }}"#, None, O("98")),
    // --- print / printf / println ---------------------------------------------------
    ("{{ print 1 2 }}", None, O("1 2")),
    (r#"{{ print "a" "b" }}"#, None, O("ab")),
    (r#"{{ print "a" 1 }}"#, None, O("a1")),
    (r#"{{ println "a" 1 }}"#, None, O("a 1\n")),
    (r#"{{ printf "%d-%s" 1 "x" }}"#, None, O("1-x")),
    (r#"{{ printf "%v" .m }}"#, None, O("map[a:1 b:x]")),
    (
        r#"{{ printf "%5.2f|%-3d|%03d" 3.14159 7 5 }}"#,
        None,
        O(" 3.14|7  |005"),
    ),
    (r#"{{ printf "%q" "a\"b" }}"#, None, O(r#""a\"b""#)),
    (
        r#"{{ printf "%x %X %o %b" 255 255 8 5 }}"#,
        None,
        O("ff FF 10 101"),
    ),
    (r#"{{ printf "%d" "x" }}"#, None, O("%!d(string=x)")),
    (r#"{{ printf "%s %s" "a" }}"#, None, O("a %!s(MISSING)")),
    (
        r#"{{ printf "%t %v %%" true .fmil }}"#,
        None,
        O("true 1e+06 %"),
    ),
    (
        r#"{{ printf "%s" "a" "b" }}"#,
        None,
        O("a%!(EXTRA string=b)"),
    ),
    // --- html / js / urlquery -------------------------------------------------------
    (
        r#"{{ html "<a href='x'>&\"</a>" }}"#,
        None,
        O("&lt;a href=&#39;x&#39;&gt;&amp;&#34;&lt;/a&gt;"),
    ),
    (
        r#"{{ js "it's \"q\" <b>=&" }}"#,
        None,
        O(r#"it\'s \"q\" \u003Cb\u003E\u003D\u0026"#),
    ),
    (
        r#"{{ urlquery "a b&c=d/é" }}"#,
        None,
        O("a+b%26c%3Dd%2F%C3%A9"),
    ),
    (r#"{{ "<x>" | html }}"#, None, O("&lt;x&gt;")),
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

#[test]
fn conformance_table_matches_go_semantics() {
    assert!(CASES.len() >= 150, "only {} cases", CASES.len());
    let default_ctx = ctx();
    let mut failures = Vec::new();
    for (i, (tmpl, data, want)) in CASES.iter().enumerate() {
        let data: Value = match data {
            Some(text) => serde_json::from_str(text).unwrap(),
            None => default_ctx.clone(),
        };
        let got = kudo_template::render("t", tmpl, &data);
        let ok = match (want, &got) {
            (Want::Out(expected), Ok(out)) => out == expected,
            (Want::Err(needle), Err(e)) => e.to_string().contains(needle),
            _ => false,
        };
        if !ok {
            let want_text = match want {
                Want::Out(s) => format!("output {s:?}"),
                Want::Err(s) => format!("error containing {s:?}"),
            };
            failures.push(format!(
                "case {i}: {tmpl:?}\n  want {want_text}\n  got  {got:?}"
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn missing_key_error_names_template_line_column_and_action() {
    let text =
        "apiVersion: apps/v1\nkind: StatefulSet\nspec:\n  replicas: {{ .Params.NODE_COUNT }}\n";
    let err = kudo_template::render("templates/statefulset.yaml", text, &json!({"Params": {}}))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "templates/statefulset.yaml:4:16: executing \"templates/statefulset.yaml\" at <.Params.NODE_COUNT>: map has no entry for key \"NODE_COUNT\""
    );
    assert_eq!((err.line, err.column), (4, 16));
}

#[test]
fn parse_error_names_the_unknown_function_and_its_position() {
    let err = kudo_template::Template::parse("templates/cm.yaml", "a: 1\nb: {{ frobnicate .x }}")
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "templates/cm.yaml:2:7: function \"frobnicate\" not defined"
    );
}

#[test]
fn long_failing_actions_are_shortened_in_the_error() {
    let err = kudo_template::render("t", r#"{{ eq .Params.NODE_COUNT 3 }}"#, &ctx()).unwrap_err();
    assert!(
        err.message.contains("at <eq .Params.NODE_COUN...>"),
        "{}",
        err.message
    );
}
