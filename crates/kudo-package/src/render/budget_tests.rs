//! Render budgets and the object size limit, through `render_task` and
//! `render_plan_with`.

use std::collections::BTreeMap;

use serde_json::json;

use super::*;

/// A package whose steps hold one Apply task per entry (the entry is the
/// task's `resources`, as the inside of a YAML flow list: `a.yaml, b.yaml`),
/// and a PAD parameter.
fn operator_version(steps: &[&[&str]], templates: &[(&str, &str)]) -> OperatorVersion {
    let mut tasks = String::new();
    let mut step_list = String::new();
    for (s, step) in steps.iter().enumerate() {
        let mut names = Vec::new();
        for (t, template) in step.iter().enumerate() {
            let name = format!("t{s}{t}");
            tasks.push_str(&format!(
                "  - name: {name}\n    kind: Apply\n    spec:\n      resources: [{template}]\n"
            ));
            names.push(name);
        }
        step_list.push_str(&format!(
            "          - name: s{s}\n            tasks: [{}]\n",
            names.join(", ")
        ));
    }
    let operator = format!(
        "name: op\noperatorVersion: 0.1.0\nkubernetesVersion: 1.15.0\ntasks:\n{tasks}\
         plans:\n  deploy:\n    phases:\n      - name: p\n        steps:\n{step_list}"
    );
    let mut files = BTreeMap::from([
        ("operator.yaml".to_string(), operator.into_bytes()),
        (
            "params.yaml".to_string(),
            b"parameters:\n  - name: PAD\n    default: \"2\"\n".to_vec(),
        ),
    ]);
    for (name, text) in templates {
        files.insert(format!("templates/{name}"), text.as_bytes().to_vec());
    }
    crate::load_from_files(files, "op")
        .unwrap()
        .to_operator_version("ns")
}

fn context(ov: &OperatorVersion, pad: &str, limits: RenderLimits) -> RenderContext {
    RenderContext {
        instance_name: "inst".into(),
        namespace: "ns".into(),
        params: serde_json::Map::from_iter([("PAD".to_string(), json!(pad))]),
        limits,
        ..RenderContext::for_operator_version(ov)
    }
}

/// A ConfigMap `name` whose data is `fill` bytes of text.
fn config_map(name: &str, fill: usize) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  \
         a: \"{{{{ repeat {fill} \"x\" }}}}\"\n"
    )
}

fn render(
    ov: &OperatorVersion,
    task: &str,
    ctx: &RenderContext,
) -> Result<RenderedTask, RenderError> {
    render_task(ov, task, ctx, &StaticDiscovery::default())
}

#[test]
fn indent_with_a_huge_parameter_fails_the_task_as_fatal_instead_of_allocating() {
    let template = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  \
                    a: \"{{ indent (int .Params.PAD) \"x\" }}\"\n";
    let ov = operator_version(&[&["cm.yaml"]], &[("cm.yaml", template)]);
    let ctx = context(&ov, "2000000000000", RenderLimits::default());
    let err = render(&ov, "t00", &ctx).unwrap_err();
    assert!(matches!(err, RenderError::Budget { .. }), "{err:?}");
    assert!(err.is_fatal());
    let text = err.to_string();
    assert!(
        text.starts_with("task t00: cm.yaml:6:") && text.contains("error calling indent"),
        "{text}"
    );
    // The same template with a sane width renders.
    assert!(render(&ov, "t00", &context(&ov, "2", RenderLimits::default())).is_ok());
}

#[test]
fn a_template_over_its_output_budget_fails_naming_the_template_and_line() {
    let ov = operator_version(&[&["cm.yaml"]], &[("cm.yaml", &config_map("c", 2000))]);
    let limits = RenderLimits {
        max_template_output: 1000,
        ..RenderLimits::default()
    };
    let err = render(&ov, "t00", &context(&ov, "2", limits)).unwrap_err();
    assert!(err.is_fatal());
    let text = err.to_string();
    assert!(
        text.starts_with("task t00: cm.yaml:6:") && text.contains("output budget exceeded"),
        "{text}"
    );
    assert!(
        text.ends_with("(a template may render 1000 bytes, a step 16777216)"),
        "{text}"
    );
}

#[test]
fn templates_of_one_step_share_the_step_budget() {
    let templates = [
        ("a.yaml", config_map("a", 600)),
        ("b.yaml", config_map("b", 600)),
    ];
    let templates: Vec<(&str, &str)> = templates.iter().map(|(n, t)| (*n, t.as_str())).collect();
    let limits = RenderLimits {
        max_template_output: 1000,
        max_step_output: 1000,
        ..RenderLimits::default()
    };
    // Two templates of one task.
    let one_task = operator_version(&[&["a.yaml, b.yaml"]], &templates);
    let err = render(&one_task, "t00", &context(&one_task, "2", limits)).unwrap_err();
    let text = err.to_string();
    assert!(
        text.starts_with("task t00: b.yaml:6:")
            && text.contains(
                "a step's templates may render 1000 bytes together; earlier \
                              templates of this step rendered 665"
            ),
        "{text}"
    );
    // Two tasks of one step in a plan; in two steps each has its own budget.
    let options = PlanRenderOptions::default();
    let plan = |ov: &OperatorVersion| {
        render_plan_with(
            ov,
            &options,
            &StaticDiscovery::default(),
            BTreeMap::new(),
            &limits,
        )
    };
    let one_step = operator_version(&[&["a.yaml", "b.yaml"]], &templates);
    let err = plan(&one_step).unwrap_err();
    assert!(err.to_string().starts_with("task t01: b.yaml:6:"), "{err}");
    let two_steps = operator_version(&[&["a.yaml"], &["b.yaml"]], &templates);
    assert_eq!(plan(&two_steps).unwrap().len(), 2);
}

#[test]
fn a_rendered_object_over_the_api_server_limit_is_refused_naming_it_and_its_size() {
    let ov = operator_version(
        &[&["cm.yaml"]],
        &[("cm.yaml", &config_map("big", MAX_OBJECT_BYTES))],
    );
    let err = render(&ov, "t00", &context(&ov, "2", RenderLimits::default())).unwrap_err();
    let RenderError::ObjectTooLarge { size, .. } = &err else {
        panic!("{err:?}");
    };
    assert!(*size > MAX_OBJECT_BYTES);
    assert!(err.is_fatal());
    assert_eq!(
        err.to_string(),
        format!(
            "task t00: ConfigMap ns/big is {size} bytes, over the {MAX_OBJECT_BYTES}-byte limit \
             of what an API server stores (etcd refuses bigger objects); make it smaller or \
             split it"
        )
    );
    // Just under the limit is fine.
    let ov = operator_version(&[&["cm.yaml"]], &[("cm.yaml", &config_map("ok", 1 << 20))]);
    assert!(render(&ov, "t00", &context(&ov, "2", RenderLimits::default())).is_ok());
}

#[test]
fn a_template_listed_many_times_shares_the_steps_of_its_step() {
    let busy =
        "{{ range until 3000 }}{{ end }}apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n";
    let limits = RenderLimits {
        max_template_steps: 10_000,
        max_step_steps: 25_000,
        ..RenderLimits::default()
    };
    let twice = operator_version(&[&["busy.yaml, busy.yaml"]], &[("busy.yaml", busy)]);
    render(&twice, "t00", &context(&twice, "2", limits)).unwrap();
    let many = operator_version(&[&[&["busy.yaml"; 20].join(", ")]], &[("busy.yaml", busy)]);
    let text = render(&many, "t00", &context(&many, "2", limits))
        .unwrap_err()
        .to_string();
    assert!(text.contains("step budget exceeded"), "{text}");
    assert!(
        text.contains(
            "(a step's templates may take 25000 steps together; earlier templates of this step took"
        ),
        "{text}"
    );
}
