//! admissionregistration.k8s.io/v1beta1 webhook configurations → v1.

use super::test_support::{Case, run};

#[test]
fn webhooks_keep_their_v1beta1_defaults_and_get_a_v1_side_effects_class() {
    run(&[
        Case {
            name: "validating webhook relying on every v1beta1 default",
            input: "
apiVersion: admissionregistration.k8s.io/v1beta1
kind: ValidatingWebhookConfiguration
metadata: {name: check}
webhooks:
- name: check.example.com
  clientConfig:
    service: {namespace: ops, name: checker, path: /validate}
    caBundle: Y2E=
  rules:
  - {apiGroups: [''], apiVersions: [v1], operations: [CREATE], resources: [pods]}
",
            expected: "
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: check}
webhooks:
- name: check.example.com
  clientConfig:
    service: {namespace: ops, name: checker, path: /validate}
    caBundle: Y2E=
  rules:
  - {apiGroups: [''], apiVersions: [v1], operations: [CREATE], resources: [pods]}
  failurePolicy: Ignore
  matchPolicy: Exact
  timeoutSeconds: 30
  admissionReviewVersions: [v1beta1]
  sideEffects: NoneOnDryRun
",
            notes: &[
                "v1beta1 defaults written out: failurePolicy Ignore, matchPolicy Exact, timeoutSeconds 30, admissionReviewVersions [v1beta1]",
                "sideEffects set to NoneOnDryRun for check.example.com (Unknown)",
            ],
        },
        Case {
            name: "mutating webhooks with explicit values keep them",
            input: "
apiVersion: admissionregistration.k8s.io/v1beta1
kind: MutatingWebhookConfiguration
metadata: {name: inject}
webhooks:
- name: a.example.com
  clientConfig: {url: 'https://a.example.com/mutate'}
  failurePolicy: Fail
  matchPolicy: Equivalent
  timeoutSeconds: 5
  admissionReviewVersions: [v1, v1beta1]
  sideEffects: None
  reinvocationPolicy: IfNeeded
- name: b.example.com
  clientConfig: {url: 'https://b.example.com/mutate'}
  failurePolicy: Fail
  matchPolicy: Equivalent
  timeoutSeconds: 5
  admissionReviewVersions: [v1]
  sideEffects: Some
",
            expected: "
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {name: inject}
webhooks:
- name: a.example.com
  clientConfig: {url: 'https://a.example.com/mutate'}
  failurePolicy: Fail
  matchPolicy: Equivalent
  timeoutSeconds: 5
  admissionReviewVersions: [v1, v1beta1]
  sideEffects: None
  reinvocationPolicy: IfNeeded
- name: b.example.com
  clientConfig: {url: 'https://b.example.com/mutate'}
  failurePolicy: Fail
  matchPolicy: Equivalent
  timeoutSeconds: 5
  admissionReviewVersions: [v1]
  sideEffects: NoneOnDryRun
",
            notes: &["sideEffects set to NoneOnDryRun for b.example.com (Some)"],
        },
    ]);
}
