//! The reviewer: errors are answers, never allows; what is read and when.

use super::*;
use crate::webhook::ov_source::{FnSource, OperatorVersionReadError, StaticOperatorVersions};

#[path = "review_tenancy_tests.rs"]
mod tenancy;

fn review_json(operation: &str, object: serde_json::Value) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "u-1",
            "kind": {"group": "kudo.dev", "version": "v1beta1", "kind": "Instance"},
            "resource": {"group": "kudo.dev", "version": "v1beta1", "resource": "instances"},
            "name": "zk", "namespace": "ns",
            "operation": operation,
            "userInfo": {"username": "me"},
            "object": object,
            "oldObject": null,
        }
    }))
    .unwrap()
}

fn zk(ov: &str) -> serde_json::Value {
    serde_json::json!({
        "apiVersion": "kudo.dev/v1beta1", "kind": "Instance",
        "metadata": {"name": "zk", "namespace": "ns"},
        "spec": {"operatorVersion": {"name": ov}}
    })
}

fn response(review: &AdmissionReview<DynamicObject>) -> &kube::core::admission::AdmissionResponse {
    review.response.as_ref().unwrap()
}

/// The message of a review refused with `code` (checked).
fn refusal(review: &AdmissionReview<DynamicObject>, code: u16) -> &str {
    let response = response(review);
    assert!(!response.allowed, "{response:?}");
    assert_eq!(response.result.code, code);
    &response.result.message
}

#[tokio::test]
async fn read_error_is_an_error_answer_never_an_allow() {
    let source = FnSource(|_: &str, _: &str| {
        Err(OperatorVersionReadError("forbidden: no RBAC".to_string()))
    });
    let reviewer = Reviewer::new(source, Duration::from_secs(1));
    let review = reviewer
        .review_bytes(&review_json("CREATE", zk("zk-1")))
        .await;
    let message = refusal(&review, 500);
    assert_eq!(response(&review).uid, "u-1");
    assert!(message.contains("ns/zk-1"), "{message}");
    assert!(message.contains("forbidden: no RBAC"));
}

/// A source whose every read takes this long and finds nothing.
struct Sleeps(Duration);

impl OperatorVersionSource for Sleeps {
    async fn get(
        &self,
        _: &str,
        _: &str,
    ) -> Result<Option<Arc<OperatorVersion>>, OperatorVersionReadError> {
        tokio::time::sleep(self.0).await;
        Ok(None)
    }
}

#[tokio::test]
async fn a_slow_read_times_out_with_an_error_answer() {
    let reviewer = Reviewer::new(Sleeps(Duration::from_secs(60)), Duration::from_millis(20));
    let review = reviewer
        .review_bytes(&review_json("CREATE", zk("zk-1")))
        .await;
    let message = refusal(&review, 500);
    assert!(message.contains("took longer"), "{message}");
}

/// A reviewer whose source finds nothing and records each `namespace/name`
/// it is asked for.
fn recording_reviewer() -> (
    Reviewer<impl OperatorVersionSource>,
    Arc<std::sync::Mutex<Vec<String>>>,
) {
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let record = seen.clone();
    let source = FnSource(move |ns: &str, name: &str| {
        record.lock().unwrap().push(format!("{ns}/{name}"));
        Ok(None)
    });
    (Reviewer::new(source, Duration::from_secs(1)), seen)
}

#[tokio::test]
async fn ov_namespace_defaults_to_the_instance_namespace() {
    let (reviewer, seen) = recording_reviewer();
    reviewer
        .review_bytes(&review_json("CREATE", zk("zk-1")))
        .await;
    assert_eq!(*seen.lock().unwrap(), ["ns/zk-1".to_string()]);
}

#[tokio::test]
async fn the_operator_version_is_read_once_unless_the_update_changes_it() {
    let reads_for = |old_ov: &str, new_ov: &str| {
        let (reviewer, seen) = recording_reviewer();
        let mut old = zk(old_ov);
        old["spec"]["parameters"] = serde_json::json!({"A": "1"});
        let mut body: serde_json::Value =
            serde_json::from_slice(&review_json("UPDATE", zk(new_ov))).unwrap();
        body["request"]["oldObject"] = old;
        (reviewer, body, seen)
    };
    let (reviewer, body, seen) = reads_for("zk-1", "zk-1");
    reviewer
        .review_bytes(&serde_json::to_vec(&body).unwrap())
        .await;
    assert_eq!(*seen.lock().unwrap(), ["ns/zk-1".to_string()]);
    let (reviewer, body, seen) = reads_for("zk-1", "zk-2");
    reviewer
        .review_bytes(&serde_json::to_vec(&body).unwrap())
        .await;
    assert_eq!(
        *seen.lock().unwrap(),
        ["ns/zk-2".to_string(), "ns/zk-1".to_string()]
    );
}

/// The OperatorVersions a parameter update of an Instance that runs
/// `zk-2` by a channel move (spec still names `spec_ov`, status recorded
/// the move from `moved_from`) makes the reviewer read; `rolled_back`:
/// the update also says the Instance is rolled back from 0.2.0.
async fn reads_of_a_tracking_update(
    moved_from: &str,
    spec_ov: &str,
    rolled_back: bool,
) -> Vec<String> {
    let (reviewer, seen) = recording_reviewer();
    let mut old = zk(moved_from);
    old["status"] = serde_json::json!({"upgrades": {
        "installed": "0.2.0", "operatorVersion": "zk-2", "specOperatorVersion": moved_from,
    }});
    let mut new = zk(spec_ov);
    new["spec"]["parameters"] = serde_json::json!({"A": "2"});
    if rolled_back {
        new["spec"]["upgrades"] =
            serde_json::json!({"repository": "main", "rolledBackFrom": "0.2.0"});
    }
    let mut body: serde_json::Value = serde_json::from_slice(&review_json("UPDATE", new)).unwrap();
    body["request"]["oldObject"] = old;
    reviewer
        .review_bytes(&serde_json::to_vec(&body).unwrap())
        .await;
    seen.lock().unwrap().clone()
}

#[tokio::test]
async fn a_tracking_instance_is_judged_by_the_operator_version_it_runs() {
    // Parameters change, spec.operatorVersion does not: the version the
    // channel installed is the one read, once.
    assert_eq!(
        reads_of_a_tracking_update("zk-1", "zk-1", false).await,
        ["ns/zk-2"]
    );
    // A person sets spec.operatorVersion (a rollback): judged as a move
    // from what runs to what spec names.
    assert_eq!(
        reads_of_a_tracking_update("zk-1", "zk-0", false).await,
        ["ns/zk-0", "ns/zk-2"]
    );
    // `kubectl kudo rollback` of a channel move: spec names what it named,
    // and says which version it leaves.
    assert_eq!(
        reads_of_a_tracking_update("zk-1", "zk-1", true).await,
        ["ns/zk-1", "ns/zk-2"]
    );
}

#[tokio::test(start_paused = true)]
async fn an_upgrade_reads_both_operator_versions_at_once() {
    let mut old = zk("zk-1");
    old["spec"]["parameters"] = serde_json::json!({"A": "1"});
    let mut body: serde_json::Value =
        serde_json::from_slice(&review_json("UPDATE", zk("zk-2"))).unwrap();
    body["request"]["oldObject"] = old;
    // Each read takes two seconds of the paused clock.
    let reviewer = Reviewer::new(Sleeps(Duration::from_secs(2)), Duration::from_secs(3));
    let started = tokio::time::Instant::now();
    let review = reviewer
        .review_bytes(&serde_json::to_vec(&body).unwrap())
        .await;
    // One read's time, not two; and neither read ran out of its budget.
    assert_eq!(started.elapsed(), Duration::from_secs(2));
    let message = refusal(&review, 403);
    assert!(message.contains("zk-2"), "{message}");
}

#[tokio::test]
async fn the_new_operator_versions_read_error_is_reported_first() {
    let source = FnSource(|_: &str, name: &str| {
        Err(OperatorVersionReadError(format!("cannot read {name}")))
    });
    let mut body: serde_json::Value =
        serde_json::from_slice(&review_json("UPDATE", zk("zk-2"))).unwrap();
    body["request"]["oldObject"] = zk("zk-1");
    body["request"]["oldObject"]["spec"]["parameters"] = serde_json::json!({"A": "1"});
    let reviewer = Reviewer::new(source, Duration::from_secs(1));
    let review = reviewer
        .review_bytes(&serde_json::to_vec(&body).unwrap())
        .await;
    let message = refusal(&review, 500);
    assert!(message.contains("cannot read zk-2"), "{message}");
}

#[tokio::test]
async fn a_status_write_is_judged_without_reading_operator_versions() {
    // Only who writes a status is judged (no writer check is set up here).
    let source = FnSource(|_: &str, _: &str| Err(OperatorVersionReadError("boom".into())));
    let mut body: serde_json::Value =
        serde_json::from_slice(&review_json("UPDATE", zk("zk-1"))).unwrap();
    body["request"]["oldObject"] = zk("zk-1");
    body["request"]["subResource"] = "status".into();
    let reviewer = Reviewer::new(source, Duration::from_secs(1));
    let review = reviewer
        .review_bytes(&serde_json::to_vec(&body).unwrap())
        .await;
    assert!(response(&review).allowed);
}

#[tokio::test]
async fn update_without_old_object_is_a_bad_request() {
    let reviewer = Reviewer::new(StaticOperatorVersions::new(), Duration::from_secs(1));
    let review = reviewer
        .review_bytes(&review_json("UPDATE", zk("zk-1")))
        .await;
    assert!(refusal(&review, 400).contains("oldObject is missing"));
}

#[tokio::test]
async fn uid_is_echoed_even_when_the_review_does_not_decode() {
    let body = br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"abc","kind":42}}"#;
    let reviewer = Reviewer::new(StaticOperatorVersions::new(), Duration::from_secs(1));
    let review = reviewer.review_bytes(body).await;
    assert_eq!(response(&review).uid, "abc");
    refusal(&review, 400);
}

#[tokio::test]
async fn v1beta1_reviews_are_refused_with_a_hint() {
    let mut body: serde_json::Value =
        serde_json::from_slice(&review_json("CREATE", zk("zk-1"))).unwrap();
    body["apiVersion"] = "admission.k8s.io/v1beta1".into();
    let reviewer = Reviewer::new(StaticOperatorVersions::new(), Duration::from_secs(1));
    let review = reviewer
        .review_bytes(&serde_json::to_vec(&body).unwrap())
        .await;
    let response = response(&review);
    assert!(!response.allowed);
    assert_eq!(response.uid, "u-1");
    assert!(response.result.message.contains("admissionReviewVersions"));
}

/// A spec with every field set. Written without `..`, so a field added to
/// `InstanceSpec` fails to compile here until this test covers it.
fn spec_with_every_field() -> kudo_api::InstanceSpec {
    fn from<T: serde::de::DeserializeOwned>(json: serde_json::Value) -> T {
        serde_json::from_value(json).unwrap()
    }
    kudo_api::InstanceSpec {
        operator_version: from(serde_json::json!({"name": "zk-1"})),
        parameters: Some(from(serde_json::json!({"A": "1"}))),
        plan_execution: Some(from(serde_json::json!({"planName": "deploy", "uid": "x"}))),
        plan_operations: from(serde_json::json!([{"id": "p1", "action": "pause"}])),
        maintenance_windows: from(serde_json::json!([{"days": "Sat", "start": "02:00",
            "end": "04:00"}])),
        suppressions: from(serde_json::json!([{"reason": "freeze"}])),
        service_account_name: Some("deployer".to_string()),
        recovery: Some(kudo_api::RecoveryPolicy::Disabled),
        upgrades: Some(from(
            serde_json::json!({"repository": "community", "channel": "stable"}),
        )),
    }
}

#[tokio::test]
async fn a_change_of_any_single_spec_field_is_reviewed() {
    // No OperatorVersion exists: an update the review judges is refused
    // for that; one it takes for "spec unchanged" is allowed unread.
    let reviewer = Reviewer::new(StaticOperatorVersions::new(), Duration::from_secs(1));
    let spec = serde_json::to_value(spec_with_every_field()).unwrap();
    let fields = spec
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect::<Vec<_>>();
    assert_eq!(fields.len(), 9, "every field serialised: {fields:?}");
    let update = |new_spec: serde_json::Value| {
        let mut new = zk("zk-1");
        new["spec"] = new_spec;
        let mut body: serde_json::Value =
            serde_json::from_slice(&review_json("UPDATE", new)).unwrap();
        body["request"]["oldObject"] = zk("zk-1");
        body["request"]["oldObject"]["spec"] = spec.clone();
        serde_json::to_vec(&body).unwrap()
    };
    let unchanged = reviewer.review_bytes(&update(spec.clone())).await;
    assert!(response(&unchanged).allowed, "{:?}", response(&unchanged));
    for field in &fields {
        let mut changed = spec.clone();
        changed.as_object_mut().unwrap().remove(field);
        let review = reviewer.review_bytes(&update(changed)).await;
        let message = refusal(&review, 403);
        assert!(message.contains("not found"), "{field}: {message}");
    }
}

/// An OperatorVersion `inject-0.1.0` in `ns` whose ConfigMap template writes
/// `GREETING` as a plain value.
fn inject_ov() -> OperatorVersion {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "kudo.dev/v1beta1", "kind": "OperatorVersion",
        "metadata": {"name": "inject-0.1.0", "namespace": "ns"},
        "spec": {
            "operator": {"name": "inject"}, "version": "0.1.0",
            "parameters": [{"name": "GREETING", "default": "hi"}],
            "templates": {"configmap.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }}-greeting\ndata:\n  greeting: {{ .Params.GREETING }}\n"},
            "tasks": [{"name": "app", "kind": "Apply", "spec": {"resources": ["configmap.yaml"]}}],
            "plans": {"deploy": {"strategy": "serial", "phases": [
                {"name": "main", "strategy": "serial", "steps": [{"name": "app", "tasks": ["app"]}]}
            ]}}
        }
    }))
    .unwrap()
}

fn with_greeting(greeting: &str) -> serde_json::Value {
    let mut inst = zk("inject-0.1.0");
    inst["spec"]["parameters"] = serde_json::json!({"GREETING": greeting});
    inst
}

#[tokio::test]
async fn a_parameter_value_that_would_add_an_object_is_refused_at_admission() {
    let reviewer = Reviewer::new(
        StaticOperatorVersions::from_iter([inject_ov()]),
        Duration::from_secs(1),
    );
    let evil = "hi\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  name: pwn";
    let review = reviewer
        .review_bytes(&review_json("CREATE", with_greeting(evil)))
        .await;
    let message = refusal(&review, 403);
    assert_eq!(
        message,
        "Instance zk: task app: parameter GREETING starts a new YAML document in configmap.yaml:6; quote it or use toYaml"
    );
    // The same value on update, and a harmless one admitted.
    let mut body: serde_json::Value =
        serde_json::from_slice(&review_json("UPDATE", with_greeting("x\nkind: Secret"))).unwrap();
    body["request"]["oldObject"] = with_greeting("hello");
    let review = reviewer
        .review_bytes(&serde_json::to_vec(&body).unwrap())
        .await;
    assert!(refusal(&review, 403).contains("parameter GREETING adds"));
    let review = reviewer
        .review_bytes(&review_json("CREATE", with_greeting("hello world")))
        .await;
    assert!(response(&review).allowed, "{:?}", response(&review));
}

#[tokio::test]
async fn a_parameter_value_that_runs_a_template_over_its_step_budget_is_refused() {
    let mut ov = inject_ov();
    ov.spec.templates.insert(
        "configmap.yaml".into(),
        "{{ range (int .Params.GREETING) }}{{ range (int $.Params.GREETING) }}{{ end }}{{ end }}"
            .into(),
    );
    let reviewer = Reviewer::new(
        StaticOperatorVersions::from_iter([ov]),
        Duration::from_secs(1),
    );
    let review = reviewer
        .review_bytes(&review_json("CREATE", with_greeting("100000")))
        .await;
    assert!(refusal(&review, 403).contains("step budget exceeded"));
}

#[tokio::test]
async fn an_instance_of_an_operator_version_that_fails_package_verify_is_refused() {
    let mut ov = inject_ov();
    ov.metadata.uid = Some("ov-1".into());
    ov.spec.templates.insert(
        "configmap.yaml".into(),
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: tenant-b\n".into(),
    );
    let reviewer = Reviewer::new(
        StaticOperatorVersions::from_iter([ov]),
        Duration::from_secs(1),
    );
    let review = reviewer
        .review_bytes(&review_json("CREATE", with_greeting("hi")))
        .await;
    let message = refusal(&review, 403);
    assert!(
        message.starts_with(
            "Instance ns/zk: OperatorVersion ns/inject-0.1.0 does not pass package verify: templates/configmap.yaml: template contains a Namespace"
        ),
        "{message}"
    );
}

/// An update of `inject_ov`'s Instance asking for a run of deploy with
/// `values` for that run only.
fn run_with(values: serde_json::Value) -> Vec<u8> {
    let mut new = with_greeting("hello");
    new["spec"]["planExecution"] =
        serde_json::json!({"planName": "deploy", "uid": "r1", "parameters": values});
    let mut body: serde_json::Value = serde_json::from_slice(&review_json("UPDATE", new)).unwrap();
    body["request"]["oldObject"] = with_greeting("hello");
    serde_json::to_vec(&body).unwrap()
}

#[tokio::test]
async fn a_plan_parameter_is_rendered_and_refused_like_an_instance_parameter() {
    let reviewer = Reviewer::new(
        StaticOperatorVersions::from_iter([inject_ov()]),
        Duration::from_secs(1),
    );
    let review = reviewer
        .review_bytes(&run_with(
            serde_json::json!({"GREETING": "x\nkind: Secret"}),
        ))
        .await;
    assert!(
        refusal(&review, 403).contains("parameter GREETING adds"),
        "{:?}",
        response(&review)
    );
    let review = reviewer
        .review_bytes(&run_with(serde_json::json!({"GREETING": "hello world"})))
        .await;
    assert!(response(&review).allowed, "{:?}", response(&review));
}

#[tokio::test]
async fn an_undeclared_plan_parameter_is_refused_at_admission() {
    let reviewer = Reviewer::new(
        StaticOperatorVersions::from_iter([inject_ov()]),
        Duration::from_secs(1),
    );
    let review = reviewer
        .review_bytes(&run_with(serde_json::json!({"GREETNG": "x"})))
        .await;
    let message = refusal(&review, 403);
    assert!(
        message.contains("GREETNG") && message.contains("not declared"),
        "{message}"
    );
}
