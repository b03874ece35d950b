//! What gets translated when, the messages, and the offline release table.

use pretty_assertions::assert_eq;
use serde_json::json;

use super::test_support::{Case, run_on, yaml};
use super::*;

const PDB: &str = "
apiVersion: policy/v1beta1
kind: PodDisruptionBudget
metadata: {name: flink-pdb, namespace: ns}
spec:
  maxUnavailable: 1
  selector: {matchLabels: {app: flink}}
";

const PSP: &str = "
apiVersion: policy/v1beta1
kind: PodSecurityPolicy
metadata: {name: restricted}
spec:
  privileged: false
  runAsUser: {rule: MustRunAsNonRoot}
";

#[test]
fn a_served_version_is_left_untouched() {
    let pdb = yaml(PDB);
    assert_eq!(
        translate(&pdb, &KubernetesRelease::new(24)),
        Translation::Untouched
    );
    let everything = |_: &str, _: &str| true;
    assert_eq!(translate(&pdb, &everything), Translation::Untouched);
    let ingress = json!({"apiVersion": "extensions/v1beta1", "kind": "Ingress",
                         "spec": {"backend": {"serviceName": "s", "servicePort": 80}}});
    assert_eq!(
        translate(&ingress, &KubernetesRelease::new(21)),
        Translation::Untouched
    );
}

#[test]
fn current_versions_core_kinds_and_custom_resources_are_left_untouched() {
    for object in [
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}}),
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}),
        json!({"apiVersion": "example.com/v1beta1", "kind": "Widget", "metadata": {"name": "w"}}),
        json!({"kind": "ConfigMap"}),
    ] {
        assert_eq!(
            translate(&object, &KubernetesRelease::CURRENT),
            Translation::Untouched,
            "{object}"
        );
    }
}

#[test]
fn an_unserved_version_is_applied_as_its_successor_with_a_message_naming_the_release() {
    let (object, change) = object_to_apply(yaml(PDB), &KubernetesRelease::CURRENT).unwrap();
    assert_eq!(object["apiVersion"], "policy/v1");
    assert_eq!(object["metadata"]["name"], "flink-pdb");
    let change = change.unwrap();
    assert_eq!(
        change.message(),
        "applied policy/v1beta1 PodDisruptionBudget as policy/v1: policy/v1beta1 was removed in Kubernetes 1.25"
    );
    assert_eq!(change.to_string(), change.message());
    assert_eq!(
        change.future_message(),
        "policy/v1beta1 PodDisruptionBudget is applied as policy/v1: policy/v1beta1 was removed in Kubernetes 1.25"
    );
}

#[test]
fn notes_follow_the_message() {
    let change = Change {
        kind: "Deployment".into(),
        from: "extensions/v1beta1".into(),
        to: "apps/v1".into(),
        removed_in: "1.16",
        notes: vec!["a".into(), "b".into()],
    };
    assert_eq!(
        change.message(),
        "applied extensions/v1beta1 Deployment as apps/v1: extensions/v1beta1 was removed in Kubernetes 1.16; a; b"
    );
}

#[test]
fn translation_asks_only_about_what_the_predicate_answers() {
    // A server that serves only policy/v1 for PodDisruptionBudget.
    let served = |v: &str, k: &str| k != "PodDisruptionBudget" || v == "policy/v1";
    let Translation::Translated(t) = translate(&yaml(PDB), &served) else {
        panic!("not translated");
    };
    assert_eq!(t.change.to, "policy/v1");
}

#[test]
fn without_a_served_successor_the_object_is_left_for_the_server_to_refuse() {
    let nothing = |_: &str, _: &str| false;
    assert_eq!(translate(&yaml(PDB), &nothing), Translation::Untouched);
}

#[test]
fn a_kind_removed_without_successor_says_when_and_what_replaces_it() {
    let Translation::Removed(removed) = translate(&yaml(PSP), &KubernetesRelease::CURRENT) else {
        panic!("PodSecurityPolicy was not refused");
    };
    assert_eq!(removed.removed_in, "1.25");
    let text = removed.to_string();
    assert!(
        text.starts_with(
            "policy/v1beta1 PodSecurityPolicy cannot be applied: PodSecurityPolicy was removed in \
             Kubernetes 1.25 without a successor; use Pod Security Admission"
        ),
        "{text}"
    );
    assert_eq!(
        object_to_apply(yaml(PSP), &KubernetesRelease::CURRENT),
        Err(removed)
    );
}

#[test]
fn extensions_pod_security_policy_moves_to_policy_while_that_is_served_then_is_refused() {
    let psp = yaml(&PSP.replace("policy/v1beta1", "extensions/v1beta1"));
    let Translation::Translated(t) = translate(&psp, &KubernetesRelease::new(20)) else {
        panic!("not translated on 1.20");
    };
    assert_eq!(t.object["apiVersion"], "policy/v1beta1");
    assert_eq!(t.change.removed_in, "1.16");
    let Translation::Removed(removed) = translate(&psp, &KubernetesRelease::new(25)) else {
        panic!("not refused on 1.25");
    };
    assert_eq!(removed.removed_in, "1.25");
    assert_eq!(removed.api_version, "extensions/v1beta1");
}

#[test]
fn pod_preset_is_refused_naming_1_20() {
    let preset = json!({"apiVersion": "settings.k8s.io/v1alpha1", "kind": "PodPreset",
                        "metadata": {"name": "tz"}, "spec": {}});
    let Translation::Removed(removed) = translate(&preset, &KubernetesRelease::new(19)) else {
        panic!("PodPreset was not refused");
    };
    assert!(
        removed
            .to_string()
            .contains("removed in Kubernetes 1.20 without a successor")
    );
}

#[test]
fn a_server_certificate_request_without_signer_cannot_be_expressed_in_v1() {
    let csr = json!({"apiVersion": "certificates.k8s.io/v1beta1", "kind": "CertificateSigningRequest",
                     "metadata": {"name": "db"},
                     "spec": {"request": "LS0t", "usages": ["digital signature", "key encipherment", "server auth"]}});
    let Err(removed) = object_to_apply(csr, &KubernetesRelease::CURRENT) else {
        panic!("translated");
    };
    assert_eq!(removed.removed_in, "1.22");
    let text = removed.to_string();
    assert!(
        text.contains("kubernetes.io/legacy-unknown, which certificates.k8s.io/v1 refuses"),
        "{text}"
    );
    assert!(text.contains("set spec.signerName"), "{text}");
}

#[test]
fn older_releases_translate_to_the_successor_they_serve() {
    // autoscaling/v2 arrived in 1.23; on 1.22 v2beta1 is still served, and
    // a server without v2beta1 but with v2beta2 gets v2beta2.
    let hpa = "
apiVersion: autoscaling/v2beta1
kind: HorizontalPodAutoscaler
metadata: {name: h}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: d}
  maxReplicas: 3
  metrics:
  - type: Resource
    resource: {name: cpu, targetAverageUtilization: 80}
";
    assert_eq!(
        translate(&yaml(hpa), &KubernetesRelease::new(22)),
        Translation::Untouched
    );
    let only_v2beta2 = |v: &str, _: &str| v == "autoscaling/v2beta2";
    let Translation::Translated(t) = translate(&yaml(hpa), &only_v2beta2) else {
        panic!("not translated");
    };
    assert_eq!(t.object["apiVersion"], "autoscaling/v2beta2");
    // batch/v2alpha1 was never served by default; before 1.21 it goes to v1beta1.
    run_on(
        &[Case {
            name: "v2alpha1 on 1.20",
            input: "apiVersion: batch/v2alpha1\nkind: CronJob\nmetadata: {name: c}\nspec: {schedule: '@daily'}\n",
            expected: "apiVersion: batch/v1beta1\nkind: CronJob\nmetadata: {name: c}\nspec: {schedule: '@daily'}\n",
            notes: &[],
        }],
        KubernetesRelease::new(20),
    );
}

#[test]
fn releases_serve_removed_versions_until_their_removal_and_successors_from_their_introduction() {
    let k = KubernetesRelease::new;
    assert!(k(24).serves("policy/v1beta1", "PodDisruptionBudget"));
    assert!(!k(25).serves("policy/v1beta1", "PodDisruptionBudget"));
    assert!(!k(20).serves("policy/v1", "PodDisruptionBudget"));
    assert!(k(21).serves("policy/v1", "PodDisruptionBudget"));
    assert!(!k(15).serves("apiextensions.k8s.io/v1", "CustomResourceDefinition"));
    assert!(k(15).serves("extensions/v1beta1", "Deployment"));
    assert!(!k(16).serves("extensions/v1beta1", "Deployment"));
    assert!(k(31).serves("flowcontrol.apiserver.k8s.io/v1beta3", "FlowSchema"));
    assert!(!k(32).serves("flowcontrol.apiserver.k8s.io/v1beta3", "FlowSchema"));
    assert!(
        !k(18).serves("rbac.authorization.k8s.io/v1alpha1", "Role"),
        "alpha is off by default"
    );
    assert!(k(32).serves("v1", "Pod"));
    assert!(k(32).serves("example.com/v1alpha1", "Widget"));
}

#[test]
fn every_version_removed_by_1_32_is_not_served_by_1_32_and_has_a_way_forward() {
    for removed in removed_versions() {
        assert!(
            !KubernetesRelease::CURRENT.serves(removed.api_version, removed.kind),
            "{} {}",
            removed.api_version,
            removed.kind
        );
        let forward = removed
            .successors
            .iter()
            .any(|s| KubernetesRelease::CURRENT.serves(s, removed.kind));
        assert!(
            forward || removed.kind_removed_in.is_some(),
            "{} {} has neither a served successor nor a removal message",
            removed.api_version,
            removed.kind
        );
    }
    assert_eq!(
        removed_version("policy/v1beta1", "PodDisruptionBudget").map(|r| r.removed_in),
        Some("1.25")
    );
    assert_eq!(removed_version("policy/v1", "PodDisruptionBudget"), None);
    assert_eq!(
        introduced_in("policy/v1", "PodDisruptionBudget").as_deref(),
        Some("1.21")
    );
}

#[test]
fn kubernetes_versions_are_read_as_major_minor() {
    for (text, minor) in [
        ("1.32", 32),
        ("v1.28.2+k3s1", 28),
        ("1.27+", 27),
        (" 1.16.0 ", 16),
    ] {
        assert_eq!(
            text.parse::<KubernetesRelease>(),
            Ok(KubernetesRelease::new(minor)),
            "{text}"
        );
    }
    assert_eq!(KubernetesRelease::new(32).to_string(), "Kubernetes 1.32");
    for bad in ["", "latest", "1", "2.1"] {
        let err = bad.parse::<KubernetesRelease>().unwrap_err();
        assert!(err.contains("Kubernetes version"), "{err}");
    }
}
