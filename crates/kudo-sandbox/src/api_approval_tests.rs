//! The API approval rule for CRDs in Kubernetes-owned groups.

use serde_json::{Value, json};

use super::*;

fn crd(group: &str, approval: Option<&str>) -> Value {
    let mut crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("jobs.{group}")},
        "spec": {"group": group},
    });
    if let Some(value) = approval {
        crd["metadata"]["annotations"] = json!({ ANNOTATION: value });
    }
    crd
}

#[test]
fn a_crd_in_a_protected_group_without_the_annotation_is_refused_as_the_api_server_does() {
    let e = check(&crd("sparkoperator.k8s.io", None), None).unwrap_err();
    let s = e.to_status();
    assert_eq!(s["code"], 422);
    assert_eq!(s["reason"], "Invalid");
    assert_eq!(
        s["message"],
        "CustomResourceDefinition.apiextensions.k8s.io \"jobs.sparkoperator.k8s.io\" is invalid: \
         metadata.annotations[api-approved.kubernetes.io]: Required value: protected groups must \
         have approval annotation \"api-approved.kubernetes.io\", see \
         https://github.com/kubernetes/enhancements/pull/1111"
    );
    let cause = &s["details"]["causes"][0];
    assert_eq!(cause["reason"], "FieldValueRequired");
    assert_eq!(
        cause["field"],
        "metadata.annotations[api-approved.kubernetes.io]"
    );
    assert_eq!(s["details"]["group"], "apiextensions.k8s.io");
    assert_eq!(s["details"]["name"], "jobs.sparkoperator.k8s.io");
}

#[test]
fn an_empty_annotation_counts_as_missing() {
    let e = check(&crd("k8s.io", Some("")), None).unwrap_err();
    assert!(e.message.contains("Required value"), "{e}");
}

#[test]
fn a_reason_beginning_with_unapproved_or_a_url_is_accepted() {
    for value in [
        "unapproved, experimental-only",
        "unapproved",
        "https://github.com/kubernetes/kubernetes/pull/78458",
        "http://example.com:8080/x?y=1",
        "https://[::1]/review",
    ] {
        for group in ["x.k8s.io", "kubernetes.io", "a.b.kubernetes.io"] {
            assert_eq!(
                check(&crd(group, Some(value)), None),
                Ok(()),
                "{group} {value}"
            );
        }
    }
}

#[test]
fn any_other_value_is_refused_as_invalid() {
    let e = check(&crd("x.k8s.io", Some("approved")), None).unwrap_err();
    assert_eq!(
        e.message,
        "CustomResourceDefinition.apiextensions.k8s.io \"jobs.x.k8s.io\" is invalid: \
         metadata.annotations[api-approved.kubernetes.io]: Invalid value: \"approved\": protected \
         groups must have approval annotation \"api-approved.kubernetes.io\" with either a URL or \
         a reason starting with \"unapproved\", see https://github.com/kubernetes/enhancements/pull/1111"
    );
    let details = e.details.unwrap_or_default();
    assert_eq!(details["causes"][0]["reason"], "FieldValueInvalid");
    for value in [
        "Unapproved",
        "github.com/pull/1",
        "/pull/1",
        "https://",
        "mailto:a@b.c",
    ] {
        assert!(
            check(&crd("x.k8s.io", Some(value)), None).is_err(),
            "{value}"
        );
    }
}

#[test]
fn crds_outside_the_protected_groups_need_no_annotation() {
    for group in [
        "example.com",
        "notk8s.io",
        "k8s.io.example.com",
        "kubernetes.io.x",
    ] {
        assert_eq!(check(&crd(group, None), None), Ok(()), "{group}");
        assert_eq!(
            check(&crd(group, Some("anything")), None),
            Ok(()),
            "{group}"
        );
    }
}

#[test]
fn an_update_is_checked_only_when_the_approval_changes() {
    let missing = crd("x.k8s.io", None);
    let invalid = crd("x.k8s.io", Some("approved"));
    let url = crd("x.k8s.io", Some("https://example.com/review"));
    let unapproved = crd("x.k8s.io", Some("unapproved, experimental-only"));
    // Stored before the rule: updates that leave the annotation alone pass.
    assert_eq!(check(&missing, Some(&missing)), Ok(()));
    assert_eq!(check(&invalid, Some(&invalid)), Ok(()));
    assert_eq!(check(&unapproved, Some(&missing)), Ok(()));
    assert_eq!(check(&url, Some(&unapproved)), Ok(()));
    // Taking it away, or making it invalid, is refused.
    assert!(check(&missing, Some(&url)).is_err());
    assert!(check(&invalid, Some(&unapproved)).is_err());
}

#[test]
fn urls_need_a_scheme_and_a_host() {
    for good in [
        "https://github.com/kubernetes/enhancements/pull/1111",
        "http://user:pw@host.example",
        "h2+x://host:",
        "https://héllo.example/",
    ] {
        assert!(is_url(good), "{good}");
    }
    for bad in [
        "",
        "https://",
        "https:///path",
        "https:host/path",
        "1http://host",
        "https://host:port/",
        "https://ho st/",
        "https://host#frag",
        "https://[::1/",
        "https://host/\npath",
    ] {
        assert!(!is_url(bad), "{bad}");
    }
}
