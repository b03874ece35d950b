//! apiextensions.k8s.io/v1beta1 CustomResourceDefinition → v1.

use super::crd::is_protected_group;
use super::test_support::{Case, run};

#[test]
fn a_single_version_crd_with_top_level_fields_becomes_a_structural_v1_crd() {
    run(&[Case {
        name: "version, validation, subresources, printer columns, default preserveUnknownFields",
        input: "
apiVersion: apiextensions.k8s.io/v1beta1
kind: CustomResourceDefinition
metadata: {name: backups.example.com}
spec:
  group: example.com
  version: v1alpha1
  names: {kind: Backup, plural: backups}
  subresources: {status: {}}
  additionalPrinterColumns:
  - {name: Phase, type: string, JSONPath: .status.phase}
  validation:
    openAPIV3Schema:
      properties:
        spec:
          properties:
            schedule: {type: string}
            retain: {type: integer, minimum: 1}
            port:
              anyOf: [{type: integer}, {type: string}]
            labels:
              additionalProperties: {type: string}
            targets:
              items:
                properties:
                  name: {type: string}
            config:
              description: free-form
",
        expected: "
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: backups.example.com}
spec:
  group: example.com
  names: {kind: Backup, plural: backups}
  scope: Namespaced
  versions:
  - name: v1alpha1
    served: true
    storage: true
    subresources: {status: {}}
    additionalPrinterColumns:
    - {name: Phase, type: string, jsonPath: .status.phase}
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
        properties:
          spec:
            type: object
            x-kubernetes-preserve-unknown-fields: true
            properties:
              schedule: {type: string}
              retain: {type: integer, minimum: 1}
              port: {x-kubernetes-int-or-string: true}
              labels:
                type: object
                additionalProperties: {type: string}
              targets:
                type: array
                items:
                  type: object
                  x-kubernetes-preserve-unknown-fields: true
                  properties:
                    name: {type: string}
              config:
                description: free-form
                x-kubernetes-preserve-unknown-fields: true
",
        notes: &[
            "spec.version v1alpha1 became spec.versions [v1alpha1, served, storage]",
            "top-level validation, subresources, additionalPrinterColumns moved into each version",
            "spec.scope set to Namespaced",
            "preserveUnknownFields removed and x-kubernetes-preserve-unknown-fields: true set on every object",
            "type added at v1alpha1:<root>, v1alpha1:.spec, v1alpha1:.spec.labels, v1alpha1:.spec.targets, v1alpha1:.spec.targets[]",
            "x-kubernetes-int-or-string set where anyOf/oneOf allowed an integer or a string: v1alpha1:.spec.port",
            "fields without a type accept any value (x-kubernetes-preserve-unknown-fields): v1alpha1:.spec.config",
        ],
    }]);
}

#[test]
fn a_pruning_multi_version_crd_keeps_its_schemas_and_moves_its_conversion_webhook() {
    run(&[Case {
        name: "versions, preserveUnknownFields false, webhook conversion",
        input: "
apiVersion: apiextensions.k8s.io/v1beta1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Cluster
  preserveUnknownFields: false
  names: {kind: Widget, plural: widgets}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          metadata: {type: object}
          size: {type: integer}
    additionalPrinterColumns:
    - {name: Size, type: integer, JSONPath: .size, priority: 1}
  - name: v1beta1
    served: true
    storage: false
  conversion:
    strategy: Webhook
    webhookClientConfig:
      service: {namespace: system, name: webhook, path: /convert}
",
        expected: "
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Cluster
  names: {kind: Widget, plural: widgets}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          metadata: {type: object}
          size: {type: integer}
    additionalPrinterColumns:
    - {name: Size, type: integer, jsonPath: .size, priority: 1}
  - name: v1beta1
    served: true
    storage: false
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
  conversion:
    strategy: Webhook
    webhook:
      clientConfig:
        service: {namespace: system, name: webhook, path: /convert}
      conversionReviewVersions: [v1beta1]
",
        notes: &[
            "version v1beta1 has no schema; it accepts any object",
            "preserveUnknownFields: false removed",
            "conversion webhookClientConfig and conversionReviewVersions moved under conversion.webhook",
        ],
    }]);
}

#[test]
fn a_top_level_schema_goes_to_every_version_and_types_in_branches_are_reported() {
    run(&[Case {
        name: "two versions sharing the top-level schema",
        input: "
apiVersion: apiextensions.k8s.io/v1beta1
kind: CustomResourceDefinition
metadata: {name: gadgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  preserveUnknownFields: false
  names: {kind: Gadget, plural: gadgets}
  versions:
  - {name: v2, served: true, storage: true}
  - {name: v1, served: true, storage: false}
  validation:
    openAPIV3Schema:
      type: object
      properties:
        mode:
          oneOf: [{type: string}, {type: boolean}]
",
        expected: "
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {kind: Gadget, plural: gadgets}
  versions:
  - name: v2
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          mode:
            oneOf: [{type: string}, {type: boolean}]
            x-kubernetes-preserve-unknown-fields: true
  - name: v1
    served: true
    storage: false
    schema:
      openAPIV3Schema:
        type: object
        properties:
          mode:
            oneOf: [{type: string}, {type: boolean}]
            x-kubernetes-preserve-unknown-fields: true
",
        notes: &[
            "top-level validation moved into each version",
            "preserveUnknownFields: false removed",
            "accept any value (x-kubernetes-preserve-unknown-fields): v2:.mode, v1:.mode",
            "type inside allOf/anyOf/oneOf/not is not structural and may be refused by the API server: v2:.mode, v1:.mode",
        ],
    }]);
}

/// A v1beta1 CRD with nothing else to convert, in `group`, with `metadata`.
fn minimal(group: &str, metadata: &str) -> String {
    format!(
        "
apiVersion: apiextensions.k8s.io/v1beta1
kind: CustomResourceDefinition
metadata: {metadata}
spec:
  group: {group}
  scope: Cluster
  preserveUnknownFields: false
  names: {{kind: Job, plural: jobs}}
  versions:
  - {{name: v1, served: true, storage: true, schema: {{openAPIV3Schema: {{type: object}}}}}}
"
    )
}

#[test]
fn a_crd_in_a_protected_group_gets_the_unapproved_annotation_v1_requires() {
    for group in ["example.k8s.io", "k8s.io", "a.b.kubernetes.io"] {
        let input = minimal(group, &format!("{{name: jobs.{group}}}"));
        let expected = minimal(
            group,
            &format!(
                "{{name: jobs.{group}, annotations: \
                 {{api-approved.kubernetes.io: 'unapproved, experimental-only'}}}}"
            ),
        );
        let note = format!(
            "annotation api-approved.kubernetes.io: \"unapproved, experimental-only\" added: v1 \
             refuses a CRD in the protected group {group} (k8s.io, kubernetes.io and their \
             subdomains) without it"
        );
        run(&[Case {
            name: group,
            input: &input,
            expected: &v1(&expected),
            notes: &[&note, "preserveUnknownFields: false removed"],
        }]);
    }
}

#[test]
fn an_approval_annotation_the_package_set_is_kept() {
    for value in [
        "https://github.com/kubernetes/kubernetes/pull/78458",
        "unapproved, temporarily squatting",
    ] {
        let metadata = format!(
            "{{name: jobs.example.k8s.io, labels: {{a: b}}, annotations: \
             {{api-approved.kubernetes.io: '{value}', other: x}}}}"
        );
        let input = minimal("example.k8s.io", &metadata);
        run(&[Case {
            name: value,
            input: &input,
            expected: &v1(&input),
            notes: &["preserveUnknownFields: false removed"],
        }]);
    }
}

#[test]
fn an_empty_approval_annotation_counts_as_none() {
    let input = minimal(
        "example.k8s.io",
        "{name: jobs.example.k8s.io, annotations: {api-approved.kubernetes.io: ''}}",
    );
    let expected = minimal(
        "example.k8s.io",
        "{name: jobs.example.k8s.io, annotations: \
         {api-approved.kubernetes.io: 'unapproved, experimental-only'}}",
    );
    run(&[Case {
        name: "empty value",
        input: &input,
        expected: &v1(&expected),
        notes: &[
            "annotation api-approved.kubernetes.io",
            "preserveUnknownFields",
        ],
    }]);
}

#[test]
fn a_crd_outside_the_protected_groups_gets_no_approval_annotation() {
    for group in [
        "example.com",
        "notk8s.io",
        "k8s.io.example.com",
        "kubernetes.io.x",
    ] {
        let input = minimal(group, &format!("{{name: jobs.{group}}}"));
        run(&[Case {
            name: group,
            input: &input,
            expected: &v1(&input),
            notes: &["preserveUnknownFields: false removed"],
        }]);
    }
}

#[test]
fn protected_groups_are_k8s_io_and_kubernetes_io_and_their_subdomains() {
    for group in [
        "k8s.io",
        "kubernetes.io",
        "x.k8s.io",
        "sparkoperator.k8s.io",
        "a.b.kubernetes.io",
    ] {
        assert!(is_protected_group(group), "{group}");
    }
    for group in [
        "",
        "io",
        "xk8s.io",
        "k8s.io.evil.com",
        "kubernetes.io2",
        "example.com",
    ] {
        assert!(!is_protected_group(group), "{group}");
    }
}

/// `minimal` as v1 renders it: `preserveUnknownFields: false` dropped.
fn v1(v1beta1: &str) -> String {
    v1beta1
        .replace("apiextensions.k8s.io/v1beta1", "apiextensions.k8s.io/v1")
        .replace("  preserveUnknownFields: false\n", "")
}
