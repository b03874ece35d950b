//! `package verify --kubernetes-version`: which objects of the templates,
//! rendered with default parameter values, a given Kubernetes release
//! applies in another API version (warnings) or cannot apply at all
//! (errors), using the same translation as the manager; and a v1
//! CustomResourceDefinition the API server refuses for want of its API
//! approval annotation.

use serde_json::Value;

use super::Report;
use super::templates::{Use, placeholder_data, template_uses};
use crate::Package;
use crate::removed_apis::{
    API_APPROVED, ServedApis, Translation, UNAPPROVED, introduced_in, is_protected_group, translate,
};
use crate::render::describe_object;

/// The findings for an API server that serves what `served` says; `target`
/// names it in messages (`Kubernetes 1.32`).
pub fn verify_api_versions(pkg: &Package, served: &dyn ServedApis, target: &str) -> Report {
    let mut report = Report::default();
    let Some(data) = placeholder_data(pkg) else {
        report.warning(
            super::PARAMS_FILE,
            format!(
                "templates were not rendered (the parameter defaults are invalid), so their API \
                 versions were not checked against {target}"
            ),
        );
        return report;
    };
    let uses = template_uses(pkg);
    for (name, text) in &pkg.templates {
        if uses.get(name) != Some(&Use::Objects) {
            continue;
        }
        // Templates that do not parse or render are reported by verify.
        let Ok(template) = kudo_template::Template::parse(name, text) else {
            continue;
        };
        let Ok(rendered) = template.render(&data) else {
            continue;
        };
        let Ok(objects) = crate::render::parse_objects("verify", name, &rendered) else {
            continue;
        };
        let file = format!("templates/{name}");
        for object in &objects {
            check_object(object, served, target, &file, &mut report);
        }
    }
    report
}

fn check_object(object: &Value, served: &dyn ServedApis, target: &str, file: &str, r: &mut Report) {
    let what = describe_object(object);
    match translate(object, served) {
        Translation::Translated(t) => {
            r.warning(
                file,
                format!("{what}: on {target}, {}", t.change.future_message()),
            );
        }
        Translation::Removed(removed) => {
            r.error(file, format!("{what}: on {target}, {removed}"));
        }
        Translation::Untouched => {
            let text = |f: &str| object.get(f).and_then(Value::as_str).unwrap_or("");
            let (api_version, kind) = (text("apiVersion"), text("kind"));
            if served.serves(api_version, kind) {
                unapproved_crd(object, api_version, kind, target, file, r);
                return;
            }
            if let Some(since) = introduced_in(api_version, kind) {
                r.error(
                    file,
                    format!(
                        "{what}: {api_version} {kind} is served from Kubernetes {since} on; \
                         {target} cannot apply it"
                    ),
                );
            }
        }
    }
}

/// A v1 CRD in a group the Kubernetes project owns needs [`API_APPROVED`]
/// (v1beta1 did not ask; the translation adds it).
fn unapproved_crd(
    object: &Value,
    api_version: &str,
    kind: &str,
    target: &str,
    file: &str,
    r: &mut Report,
) {
    if api_version != "apiextensions.k8s.io/v1" || kind != "CustomResourceDefinition" {
        return;
    }
    let group = object
        .pointer("/spec/group")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let annotated = object
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(API_APPROVED))
        .and_then(Value::as_str)
        .is_some_and(|v| !v.is_empty());
    if is_protected_group(group) && !annotated {
        r.error(
            file,
            format!(
                "{}: {target} refuses it: group {group} is protected (k8s.io, kubernetes.io and \
                 their subdomains) and needs the annotation {API_APPROVED}, a URL of the API \
                 review or a reason beginning with \"unapproved\" such as {UNAPPROVED:?}",
                describe_object(object)
            ),
        );
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::removed_apis::KubernetesRelease;

    const OPERATOR: &str = "name: op\noperatorVersion: 0.1.0\ntasks:\n  - name: app\n    kind: Apply\n    spec:\n      resources: [app.yaml]\nplans:\n  deploy:\n    phases:\n      - name: p\n        steps:\n          - name: s\n            tasks: [app]\n";
    const PARAMS: &str =
        "apiVersion: kudo.dev/v1beta1\nparameters:\n  - name: REPLICAS\n    default: \"3\"\n";
    const APP: &str = "apiVersion: policy/v1beta1\nkind: PodDisruptionBudget\nmetadata:\n  name: {{ .Name }}-pdb\nspec:\n  maxUnavailable: 1\n  selector:\n    matchLabels: {app: x}\n---\napiVersion: policy/v1beta1\nkind: PodSecurityPolicy\nmetadata:\n  name: {{ .Name }}-psp\nspec: {}\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Name }}\nspec:\n  replicas: {{ .Params.REPLICAS }}\n  selector: {matchLabels: {app: x}}\n  template: {metadata: {labels: {app: x}}}\n";

    fn package() -> Package {
        let files: BTreeMap<String, Vec<u8>> = [
            ("operator.yaml", OPERATOR),
            ("params.yaml", PARAMS),
            ("templates/app.yaml", APP),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.as_bytes().to_vec()))
        .collect();
        crate::load::load_from_files(files, "pkg").unwrap()
    }

    #[test]
    fn translated_objects_are_warnings_and_removed_kinds_errors_on_1_32() {
        let release = KubernetesRelease::new(32);
        let report = verify_api_versions(&package(), &release, &release.to_string());
        assert_eq!(
            report.to_string(),
            "error: templates/app.yaml: PodSecurityPolicy Name-psp: on Kubernetes 1.32, \
             policy/v1beta1 PodSecurityPolicy cannot be applied: PodSecurityPolicy was removed in \
             Kubernetes 1.25 without a successor; use Pod Security Admission instead (label the \
             namespace pod-security.kubernetes.io/enforce=baseline or restricted) or a policy \
             engine, and drop the PodSecurityPolicy and the RBAC rules that grant `use` of it\n\
             warning: templates/app.yaml: PodDisruptionBudget Name-pdb: on Kubernetes 1.32, \
             policy/v1beta1 PodDisruptionBudget is applied as policy/v1: policy/v1beta1 was \
             removed in Kubernetes 1.25\n"
        );
    }

    #[test]
    fn an_older_release_applies_everything_as_written() {
        let release = KubernetesRelease::new(20);
        let report = verify_api_versions(&package(), &release, &release.to_string());
        assert!(report.is_clean(), "{report}");
    }

    #[test]
    fn a_successor_newer_than_the_release_is_an_error() {
        let mut pkg = package();
        pkg.templates.insert(
            "app.yaml".into(),
            APP.replace(
                "policy/v1beta1\nkind: PodDisruptionBudget",
                "policy/v1\nkind: PodDisruptionBudget",
            ),
        );
        let release = KubernetesRelease::new(19);
        let report = verify_api_versions(&pkg, &release, &release.to_string());
        assert_eq!(
            report.to_string(),
            "error: templates/app.yaml: PodDisruptionBudget Name-pdb: policy/v1 \
             PodDisruptionBudget is served from Kubernetes 1.21 on; Kubernetes 1.19 cannot apply it\n"
        );
    }

    const CRDS: &str = "apiVersion: apiextensions.k8s.io/v1beta1\nkind: CustomResourceDefinition\nmetadata: {name: olds.old.k8s.io}\nspec:\n  group: old.k8s.io\n  scope: Cluster\n  preserveUnknownFields: false\n  names: {kind: Old, plural: olds}\n  versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}]\n---\napiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: news.new.k8s.io}\nspec:\n  group: new.k8s.io\n  scope: Cluster\n  names: {kind: New, plural: news}\n  versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}]\n---\napiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: oks.ok.k8s.io\n  annotations: {api-approved.kubernetes.io: 'unapproved, testing'}\nspec:\n  group: ok.k8s.io\n  scope: Cluster\n  names: {kind: Ok, plural: oks}\n  versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}]\n---\napiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: others.example.com}\nspec:\n  group: example.com\n  scope: Cluster\n  names: {kind: Other, plural: others}\n  versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}]\n";

    #[test]
    fn crds_in_protected_groups_are_reported_with_the_approval_annotation_they_need() {
        let mut pkg = package();
        pkg.templates.insert("app.yaml".into(), CRDS.into());
        let release = KubernetesRelease::new(32);
        let report = verify_api_versions(&pkg, &release, &release.to_string());
        assert_eq!(
            report.to_string(),
            "error: templates/app.yaml: CustomResourceDefinition news.new.k8s.io: Kubernetes \
             1.32 refuses it: group new.k8s.io is protected (k8s.io, kubernetes.io and their \
             subdomains) and needs the annotation api-approved.kubernetes.io, a URL of the API \
             review or a reason beginning with \"unapproved\" such as \"unapproved, \
             experimental-only\"\n\
             warning: templates/app.yaml: CustomResourceDefinition olds.old.k8s.io: on \
             Kubernetes 1.32, apiextensions.k8s.io/v1beta1 CustomResourceDefinition is applied as \
             apiextensions.k8s.io/v1: apiextensions.k8s.io/v1beta1 was removed in Kubernetes \
             1.22; annotation api-approved.kubernetes.io: \"unapproved, experimental-only\" \
             added: v1 refuses a CRD in the protected group old.k8s.io (k8s.io, kubernetes.io \
             and their subdomains) without it; preserveUnknownFields: false removed: v1 always \
             prunes unknown fields\n"
        );
    }
}
