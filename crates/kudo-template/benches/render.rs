//! Renders a 300-line package-style template containing 50 actions.
//! Target: under 50 µs per render.
#![allow(missing_docs)]

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use kudo_template::Template;
use serde_json::json;

/// Ten blocks of 30 lines with 5 actions each (a field, a pipeline, and
/// either range/`$`-access/end or if/field/end): 300 lines, 50 actions.
fn template_text() -> String {
    let mut text = String::new();
    for block in 0..10 {
        text.push_str(&format!(
            "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{{{ .Name }}}}-cm-{block}\n"
        ));
        text.push_str("  labels:\n    app.kubernetes.io/managed-by: kudo\n    tier: backend\n");
        text.push_str("data:\n  replicas: \"{{ .Params.NODE_COUNT | int | add 1 }}\"\n");
        if block % 2 == 0 {
            text.push_str("  servers: \"{{ range until 3 }}{{ $.Name }} {{ end }}\"\n");
        } else {
            text.push_str("  {{- if eq .Params.METRICS \"true\" }}\n  namespace: {{ .Namespace }}\n  {{- end }}\n");
        }
        let filler = if block % 2 == 0 { 19 } else { 17 };
        for line in 0..filler {
            text.push_str(&format!(
                "  static-key-{line}: some fixed configuration value number {line}\n"
            ));
        }
    }
    text
}

fn bench_render(c: &mut Criterion) {
    let text = template_text();
    assert_eq!(
        text.lines().count(),
        300,
        "bench template must have 300 lines"
    );
    assert_eq!(
        text.matches("{{").count(),
        50,
        "bench template must have 50 actions"
    );
    let template = Template::parse("templates/bench.yaml", &text).unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(1)
    });
    let data = json!({
        "Name": "zk", "Namespace": "default", "OperatorName": "zookeeper",
        "Params": {"NODE_COUNT": "3", "METRICS": "true"}
    });
    c.bench_function("render_300_lines_50_actions", |b| {
        b.iter(|| template.render(black_box(&data)))
    });
    c.bench_function("parse_300_lines_50_actions", |b| {
        b.iter(|| Template::parse("templates/bench.yaml", black_box(&text)))
    });
}

criterion_group!(benches, bench_render);
criterion_main!(benches);
