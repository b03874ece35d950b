use std::collections::BTreeMap;

use kudo_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kudo_api::{
    ObjectReference, OperatorVersionSpec, Parameter, ParameterType, Phase, PipeSpec, Plan, Step,
    Task, TaskSpec,
};
use serde_json::json;

use super::*;

fn task(name: &str, kind: &str, spec: TaskSpec) -> Task {
    Task {
        name: name.into(),
        kind: kind.into(),
        spec,
    }
}

fn resources(names: &[&str]) -> TaskSpec {
    TaskSpec {
        resources: names.iter().map(|s| s.to_string()).collect(),
        ..Default::default()
    }
}

fn ov(tasks: Vec<Task>, templates: &[(&str, &str)]) -> OperatorVersion {
    OperatorVersion {
        metadata: ObjectMeta {
            name: Some("op-0.1.0".into()),
            ..Default::default()
        },
        spec: OperatorVersionSpec {
            operator: Some(ObjectReference {
                name: Some("op".into()),
                kind: Some("Operator".into()),
                ..Default::default()
            }),
            version: Some("0.1.0".into()),
            templates: templates
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            tasks,
            parameters: vec![Parameter {
                name: "ENABLED".into(),
                value_type: Some(ParameterType::Boolean),
                default: Some("true".into()),
                ..Default::default()
            }],
            plans: BTreeMap::from([(
                "deploy".to_string(),
                Plan {
                    strategy: None,
                    phases: vec![Phase {
                        name: "main".into(),
                        strategy: None,
                        steps: vec![Step {
                            name: "gen".into(),
                            tasks: vec!["pipe".into()],
                        }],
                    }],
                    downtime: None,
                },
            )]),
            ..Default::default()
        },
        status: None,
    }
}

fn ctx(enabled: &str) -> RenderContext {
    RenderContext {
        instance_name: "inst".into(),
        namespace: "ns".into(),
        instance_uid: Some("uid".into()),
        operator_name: "op".into(),
        operator_version: "0.1.0".into(),
        plan: "deploy".into(),
        phase: "main".into(),
        step: "gen".into(),
        plan_uid: "p".into(),
        params: serde_json::Map::from_iter([("ENABLED".to_string(), json!(enabled))]),
        ..Default::default()
    }
}

const CM: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }}-cm\n";
const CRD: &str = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n\
                   metadata:\n  name: widgets.example.com\n";

fn objects(rendered: RenderedTask) -> Vec<Value> {
    match rendered {
        RenderedTask::Apply { objects } | RenderedTask::Delete { objects } => objects,
        other => panic!("expected objects, got {other:?}"),
    }
}

fn names(objs: &[Value]) -> Vec<String> {
    objs.iter()
        .map(|o| o["metadata"]["name"].as_str().unwrap_or("").to_string())
        .collect()
}

#[test]
fn apply_renders_templates_in_order_with_crds_first() {
    let ov = ov(
        vec![task("app", "Apply", resources(&["cm.yaml", "crd.yaml"]))],
        &[("cm.yaml", CM), ("crd.yaml", CRD)],
    );
    let out = render_task(&ov, "app", &ctx("true"), &StaticDiscovery::default()).unwrap();
    let objs = objects(out);
    assert_eq!(names(&objs), vec!["widgets.example.com", "inst-cm"]);
    assert!(objs[0]["metadata"].get("namespace").is_none());
    assert_eq!(objs[1]["metadata"]["namespace"], "ns");
}

#[test]
fn a_task_template_never_renders_a_namespace_whatever_the_values() {
    // Placeholder values (package verify) take the else branch; the values
    // of a real Instance may take the other one.
    let sometimes = "{{ if eq .Params.ENABLED \"true\" }}apiVersion: v1\nkind: Namespace\n\
                     metadata:\n  name: tenant-b\n{{ else }}apiVersion: v1\nkind: ConfigMap\n\
                     metadata:\n  name: c\n{{ end }}";
    let d = StaticDiscovery::default();
    for kind in ["Apply", "Delete"] {
        let ov = ov(
            vec![task("app", kind, resources(&["cm.yaml", "ns.yaml"]))],
            &[("cm.yaml", CM), ("ns.yaml", sometimes)],
        );
        assert!(render_task(&ov, "app", &ctx("false"), &d).is_ok(), "{kind}");
        let err = render_task(&ov, "app", &ctx("true"), &d).unwrap_err();
        assert!(err.is_fatal());
        assert_eq!(
            err.to_string(),
            "task app: template ns.yaml renders Namespace tenant-b; a plan does not create or \
             delete namespaces (`kubectl kudo install --create-namespace` makes the Instance's, \
             from the package's namespaceManifest)",
            "{kind}"
        );
    }
    // Another group's kind of the same name is not a Namespace.
    let other = "apiVersion: example.com/v1\nkind: Namespace\nmetadata:\n  name: custom\n";
    let ov = ov(
        vec![task("app", "Apply", resources(&["x.yaml"]))],
        &[("x.yaml", other)],
    );
    let mut d = StaticDiscovery::default();
    d.add_kind("example.com/v1", "Namespace", true);
    let rendered = render_task(&ov, "app", &ctx("true"), &d);
    assert!(rendered.is_ok(), "{rendered:?}");
}

#[test]
fn toggle_applies_when_true_and_deletes_when_false() {
    let spec = TaskSpec {
        parameter: Some("ENABLED".into()),
        ..resources(&["cm.yaml"])
    };
    let ov = ov(vec![task("t", "Toggle", spec)], &[("cm.yaml", CM)]);
    let d = StaticDiscovery::default();
    assert!(matches!(
        render_task(&ov, "t", &ctx("true"), &d).unwrap(),
        RenderedTask::Apply { .. }
    ));
    let deleted = render_task(&ov, "t", &ctx("False"), &d).unwrap();
    let RenderedTask::Delete { objects } = deleted else {
        panic!("expected delete");
    };
    assert!(objects[0]["metadata"].get("labels").is_none());
    let err = render_task(&ov, "t", &ctx("maybe"), &d).unwrap_err();
    assert!(err.is_fatal());
    assert!(
        err.to_string().contains("\"maybe\" is not a boolean"),
        "{err}"
    );
}

#[test]
fn dummy_task_is_passed_through() {
    let spec = TaskSpec {
        want_err: Some(true),
        fatal: Some(true),
        ..Default::default()
    };
    let ov = ov(vec![task("d", "Dummy", spec)], &[]);
    let out = render_task(&ov, "d", &ctx("true"), &StaticDiscovery::default()).unwrap();
    assert!(matches!(
        out,
        RenderedTask::Dummy {
            want_err: true,
            fatal: true,
            done: false
        }
    ));
}

#[test]
fn task_errors_name_the_task_and_template() {
    let d = StaticDiscovery::default();
    let ov1 = ov(
        vec![
            task("empty", "Apply", resources(&[])),
            task("gone", "Apply", resources(&["nope.yaml"])),
            task("weird", "Patch", resources(&["cm.yaml"])),
            task("bad", "Apply", resources(&["bad.yaml"])),
            task("noname", "Apply", resources(&["noname.yaml"])),
        ],
        &[
            ("cm.yaml", CM),
            ("bad.yaml", "{{ .Params.MISSING }}"),
            ("noname.yaml", "apiVersion: v1\nkind: ConfigMap\n"),
        ],
    );
    let msg = |t: &str| {
        render_task(&ov1, t, &ctx("true"), &d)
            .unwrap_err()
            .to_string()
    };
    assert!(msg("missing").contains("task missing is not defined"));
    assert!(msg("empty").contains("empty resource list"));
    assert!(msg("gone").contains("template nope.yaml does not exist"));
    assert!(msg("weird").contains("unknown task kind \"Patch\""));
    assert!(msg("bad").starts_with("task bad: error rendering template: bad.yaml:1:"));
    assert!(msg("noname").contains("has no metadata.name"));
}

#[test]
fn pipe_task_builds_the_pod_and_names_artifacts() {
    // No metadata.name, as in KUDO's cowsay package: the pipe pod is named by KUDO.
    let pod = "apiVersion: v1\nkind: Pod\nspec:\n  volumes:\n  - name: out\n    emptyDir: {}\n  initContainers:\n  - name: g\n    image: busybox\n    volumeMounts:\n    - name: out\n      mountPath: /out\n";
    let spec = TaskSpec {
        pod: Some("pod.yaml".into()),
        pipe: vec![PipeSpec {
            file: Some("/out/index.html".into()),
            env_file: None,
            kind: "ConfigMap".into(),
            key: "indexHtml".into(),
        }],
        ..Default::default()
    };
    let ov = ov(vec![task("pipe", "Pipe", spec)], &[("pod.yaml", pod)]);
    let out = render_task(&ov, "pipe", &ctx("true"), &StaticDiscovery::default()).unwrap();
    let RenderedTask::Pipe { pod, files } = out else {
        panic!("expected pipe");
    };
    assert_eq!(pod["metadata"]["name"], "inst.deploy.main.gen.pipe.pipepod");
    assert_eq!(pod["metadata"]["annotations"]["kudo.dev/pipepod"], "true");
    assert_eq!(pod["spec"]["restartPolicy"], "OnFailure");
    assert_eq!(
        pod["spec"]["containers"][0]["volumeMounts"][0]["mountPath"],
        "/out"
    );
    assert_eq!(
        files[0].artifact_name,
        "inst.deploy.main.gen.pipe.indexhtml"
    );
    assert_eq!(
        pipe_artifact_names(&ov, "deploy", "inst"),
        BTreeMap::from([("indexHtml".to_string(), files[0].artifact_name.clone())])
    );
}

#[test]
fn kudo_operator_task_builds_a_child_instance() {
    let spec = TaskSpec {
        package: Some("zookeeper".into()),
        operator_version: Some("0.1.0".into()),
        app_version: Some("3.9.2".into()),
        parameter_file: Some("child.yaml".into()),
        ..Default::default()
    };
    let ov = ov(
        vec![task("child", "KudoOperator", spec)],
        &[(
            "child.yaml",
            "NODE_COUNT: 3\nLABELS: {a: 1}\nNAME: {{ .Name }}\n",
        )],
    );
    let out = render_task(&ov, "child", &ctx("true"), &StaticDiscovery::default()).unwrap();
    let RenderedTask::KudoOperator { instance } = out else {
        panic!("expected instance");
    };
    assert_eq!(instance.metadata.name.as_deref(), Some("inst-zookeeper"));
    assert_eq!(
        instance.spec.operator_version.name.as_deref(),
        Some("zookeeper-3.9.2-0.1.0")
    );
    let params = instance.spec.parameters.unwrap();
    assert_eq!(params["NODE_COUNT"], "3");
    assert_eq!(params["LABELS"], "a: 1\n");
    assert_eq!(params["NAME"], "inst");
    let owner = &instance.metadata.owner_references.unwrap()[0];
    assert_eq!(owner.controller, None);
    assert_eq!(owner.uid, "uid");
}

#[test]
fn template_data_has_every_root_field() {
    let data = ctx("true").template_data();
    for field in crate::verify::ROOT_FIELDS {
        assert!(data.get(field).is_some(), "{field}");
    }
}

const MAINTENANCE_CM: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }}-maintenance\ndata:\n  nodes: {{ join \",\" .Maintenance.Nodes | quote }}\n  count: {{ len .Maintenance.Nodes | quote }}\n  start: {{ .Maintenance.Start | quote }}\n  end: {{ .Maintenance.End | quote }}\n";

fn instance_maintenance() -> kudo_api::InstanceMaintenance {
    kudo_api::InstanceMaintenance {
        nodes: vec!["n1".into(), "n2".into()],
        start: serde_json::from_value(json!("2024-05-01T02:00:00Z")).unwrap(),
        end: serde_json::from_value(json!("2024-05-01T03:30:00Z")).unwrap(),
        response: kudo_api::MaintenanceResponse::Pending,
        message: String::new(),
        uid: None,
    }
}

fn render_maintenance_cm(ctx: &RenderContext) -> Value {
    let ov = ov(
        vec![task("note", "Apply", resources(&["cm.yaml"]))],
        &[("cm.yaml", MAINTENANCE_CM)],
    );
    let out = render_task(&ov, "note", ctx, &StaticDiscovery::default()).unwrap();
    objects(out).remove(0)["data"].clone()
}

#[test]
fn templates_read_the_maintenance_nodes_and_window() {
    let ctx = RenderContext {
        maintenance: MaintenanceContext::from_status(&instance_maintenance()),
        ..ctx("true")
    };
    assert_eq!(
        render_maintenance_cm(&ctx),
        json!({
            "nodes": "n1,n2",
            "count": "2",
            "start": "2024-05-01T02:00:00Z",
            "end": "2024-05-01T03:30:00Z",
        })
    );
}

#[test]
fn maintenance_is_empty_outside_maintenance() {
    assert_eq!(
        render_maintenance_cm(&ctx("true")),
        json!({"nodes": "", "count": "0", "start": "", "end": ""})
    );
    assert_eq!(
        ctx("true").template_data()["Maintenance"],
        json!({"Nodes": [], "Start": "", "End": ""})
    );
}

#[test]
fn maintenance_context_comes_from_the_instance_status() {
    let mut inst = kudo_api::Instance::new("inst", Default::default());
    assert_eq!(
        MaintenanceContext::of_instance(&inst),
        MaintenanceContext::default()
    );
    inst.status = Some(kudo_api::InstanceStatus {
        maintenance: Some(instance_maintenance()),
        ..Default::default()
    });
    assert_eq!(
        MaintenanceContext::of_instance(&inst),
        MaintenanceContext {
            nodes: vec!["n1".into(), "n2".into()],
            start: "2024-05-01T02:00:00Z".into(),
            end: "2024-05-01T03:30:00Z".into(),
        }
    );
}

#[test]
fn a_task_rendering_more_objects_than_a_task_may_apply_fails() {
    let many = "{{ range $i := until (int .Params.N) }}---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c{{ $i }}\n{{ end }}";
    let ov = ov(
        vec![task("app", "Apply", resources(&["many.yaml"]))],
        &[("many.yaml", many)],
    );
    let with_n = |n: usize| {
        let mut c = ctx("true");
        c.params.insert("N".into(), json!(n.to_string()));
        c
    };
    let d = StaticDiscovery::default();
    assert!(render_task(&ov, "app", &with_n(MAX_TASK_OBJECTS), &d).is_ok());
    let err = render_task(&ov, "app", &with_n(MAX_TASK_OBJECTS + 1), &d).unwrap_err();
    assert!(err.is_fatal());
    assert_eq!(
        err.to_string(),
        "task app: its templates render more than 1000 objects (template many.yaml passed the \
         limit); split the task or make the loop smaller"
    );
}
