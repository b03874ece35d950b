//! PodDisruptionBudget, CronJob, RBAC, scheduling, storage, coordination,
//! certificates, events, discovery, node, flowcontrol and apiregistration.

use super::test_support::{Case, run};

/// Kinds whose successor has the same fields: (from, to, body after the
/// apiVersion line).
const UNCHANGED: &[(&str, &str, &str)] = &[
    (
        "batch/v1beta1",
        "batch/v1",
        "kind: CronJob\nmetadata: {name: backup}\nspec:\n  schedule: '0 3 * * *'\n  concurrencyPolicy: Forbid\n  jobTemplate:\n    spec:\n      template:\n        spec:\n          restartPolicy: OnFailure\n          containers: [{name: b, image: busybox}]\n",
    ),
    (
        "batch/v2alpha1",
        "batch/v1",
        "kind: CronJob\nmetadata: {name: backup}\nspec:\n  schedule: '*/5 * * * *'\n  jobTemplate: {spec: {template: {spec: {restartPolicy: Never, containers: [{name: b, image: busybox}]}}}}\n",
    ),
    (
        "rbac.authorization.k8s.io/v1beta1",
        "rbac.authorization.k8s.io/v1",
        "kind: Role\nmetadata: {name: r}\nrules:\n- {apiGroups: [''], resources: [configmaps], verbs: [get, list]}\n",
    ),
    (
        "rbac.authorization.k8s.io/v1beta1",
        "rbac.authorization.k8s.io/v1",
        "kind: ClusterRole\nmetadata: {name: r}\naggregationRule:\n  clusterRoleSelectors: [{matchLabels: {aggregate: 'true'}}]\nrules: []\n",
    ),
    (
        "rbac.authorization.k8s.io/v1beta1",
        "rbac.authorization.k8s.io/v1",
        "kind: RoleBinding\nmetadata: {name: rb}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: r}\nsubjects:\n- {kind: ServiceAccount, name: op, namespace: ns}\n",
    ),
    (
        "rbac.authorization.k8s.io/v1beta1",
        "rbac.authorization.k8s.io/v1",
        "kind: ClusterRoleBinding\nmetadata: {name: crb}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: r}\nsubjects:\n- {kind: Group, apiGroup: rbac.authorization.k8s.io, name: admins}\n",
    ),
    (
        "rbac.authorization.k8s.io/v1alpha1",
        "rbac.authorization.k8s.io/v1",
        "kind: ClusterRole\nmetadata: {name: r}\nrules:\n- {apiGroups: [apps], resources: [deployments], verbs: ['*']}\n",
    ),
    (
        "scheduling.k8s.io/v1beta1",
        "scheduling.k8s.io/v1",
        "kind: PriorityClass\nmetadata: {name: high}\nvalue: 1000000\nglobalDefault: false\ndescription: critical pods\n",
    ),
    (
        "storage.k8s.io/v1beta1",
        "storage.k8s.io/v1",
        "kind: StorageClass\nmetadata: {name: fast}\nprovisioner: kubernetes.io/aws-ebs\nparameters: {type: io1}\nreclaimPolicy: Retain\nvolumeBindingMode: WaitForFirstConsumer\nallowVolumeExpansion: true\n",
    ),
    (
        "storage.k8s.io/v1beta1",
        "storage.k8s.io/v1",
        "kind: VolumeAttachment\nmetadata: {name: va}\nspec:\n  attacher: csi.example.com\n  nodeName: node-1\n  source: {persistentVolumeName: pv-1}\n",
    ),
    (
        "storage.k8s.io/v1beta1",
        "storage.k8s.io/v1",
        "kind: CSIDriver\nmetadata: {name: csi.example.com}\nspec:\n  attachRequired: false\n  podInfoOnMount: true\n  volumeLifecycleModes: [Persistent, Ephemeral]\n",
    ),
    (
        "storage.k8s.io/v1beta1",
        "storage.k8s.io/v1",
        "kind: CSINode\nmetadata: {name: node-1}\nspec:\n  drivers:\n  - {name: csi.example.com, nodeID: n1, topologyKeys: [zone]}\n",
    ),
    (
        "storage.k8s.io/v1beta1",
        "storage.k8s.io/v1",
        "kind: CSIStorageCapacity\nmetadata: {name: cap}\nstorageClassName: fast\ncapacity: 100Gi\nnodeTopology: {matchLabels: {zone: a}}\n",
    ),
    (
        "coordination.k8s.io/v1beta1",
        "coordination.k8s.io/v1",
        "kind: Lease\nmetadata: {name: leader}\nspec:\n  holderIdentity: pod-0\n  leaseDurationSeconds: 15\n",
    ),
    (
        "events.k8s.io/v1beta1",
        "events.k8s.io/v1",
        "kind: Event\nmetadata: {name: e}\neventTime: '2020-05-01T10:00:00.000000Z'\nreportingController: example.com/op\nreportingInstance: op-0\naction: Backup\nreason: Started\nregarding: {kind: Pod, name: db-0, namespace: ns}\nnote: backup started\ntype: Normal\n",
    ),
    (
        "node.k8s.io/v1beta1",
        "node.k8s.io/v1",
        "kind: RuntimeClass\nmetadata: {name: gvisor}\nhandler: runsc\noverhead: {podFixed: {memory: 120Mi}}\nscheduling: {nodeSelector: {sandbox: 'true'}}\n",
    ),
    (
        "apiregistration.k8s.io/v1beta1",
        "apiregistration.k8s.io/v1",
        "kind: APIService\nmetadata: {name: v1beta1.metrics.k8s.io}\nspec:\n  group: metrics.k8s.io\n  version: v1beta1\n  service: {namespace: kube-system, name: metrics-server}\n  groupPriorityMinimum: 100\n  versionPriority: 100\n  insecureSkipTLSVerify: true\n",
    ),
    (
        "flowcontrol.apiserver.k8s.io/v1beta1",
        "flowcontrol.apiserver.k8s.io/v1",
        "kind: FlowSchema\nmetadata: {name: op}\nspec:\n  priorityLevelConfiguration: {name: workload-low}\n  matchingPrecedence: 1000\n  rules:\n  - subjects: [{kind: ServiceAccount, serviceAccount: {name: op, namespace: ns}}]\n    resourceRules: [{verbs: ['*'], apiGroups: ['*'], resources: ['*'], namespaces: ['*']}]\n",
    ),
    (
        "flowcontrol.apiserver.k8s.io/v1beta3",
        "flowcontrol.apiserver.k8s.io/v1",
        "kind: FlowSchema\nmetadata: {name: op}\nspec:\n  priorityLevelConfiguration: {name: workload-low}\n",
    ),
    (
        "autoscaling/v2beta2",
        "autoscaling/v2",
        "kind: HorizontalPodAutoscaler\nmetadata: {name: h}\nspec:\n  scaleTargetRef: {apiVersion: apps/v1, kind: StatefulSet, name: s}\n  maxReplicas: 3\n",
    ),
];

#[test]
fn kinds_whose_successor_has_the_same_fields_only_change_api_version() {
    for (from, to, body) in UNCHANGED {
        let input = format!("apiVersion: {from}\n{body}");
        let expected = format!("apiVersion: {to}\n{body}");
        run(&[Case {
            name: &input,
            input: &input,
            expected: &expected,
            notes: &[],
        }]);
    }
}

#[test]
fn pod_disruption_budgets_keep_selecting_the_same_pods() {
    run(&[
        Case {
            name: "label selector",
            input: "
apiVersion: policy/v1beta1
kind: PodDisruptionBudget
metadata: {name: zk-pdb}
spec:
  maxUnavailable: 1
  selector: {matchLabels: {app: zk}}
",
            expected: "
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: zk-pdb}
spec:
  maxUnavailable: 1
  selector: {matchLabels: {app: zk}}
",
            notes: &[],
        },
        Case {
            name: "empty selector selected nothing in v1beta1",
            input: "
apiVersion: policy/v1beta1
kind: PodDisruptionBudget
metadata: {name: none}
spec:
  minAvailable: 1
  selector: {matchLabels: {}}
",
            expected: "
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: none}
spec:
  minAvailable: 1
",
            notes: &["the empty spec.selector was removed: it selected no pods in policy/v1beta1"],
        },
    ]);
}

#[test]
fn rbac_v1alpha1_subjects_name_their_group_with_api_group() {
    run(&[Case {
        name: "v1alpha1 binding",
        input: "
apiVersion: rbac.authorization.k8s.io/v1alpha1
kind: RoleBinding
metadata: {name: rb}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: r}
subjects:
- {kind: User, apiVersion: rbac.authorization.k8s.io/v1alpha1, name: jane}
- {kind: ServiceAccount, apiVersion: v1, name: op, namespace: ns}
",
        expected: "
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: rb}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: r}
subjects:
- {kind: User, apiGroup: rbac.authorization.k8s.io, name: jane}
- {kind: ServiceAccount, name: op, namespace: ns}
",
        notes: &["subjects[].apiVersion replaced by apiGroup"],
    }]);
}

#[test]
fn certificate_signing_requests_get_the_signer_and_usages_v1_requires() {
    run(&[
        Case {
            name: "client certificate without signer",
            input: "
apiVersion: certificates.k8s.io/v1beta1
kind: CertificateSigningRequest
metadata: {name: jane}
spec:
  request: LS0tLS1CRUdJTg==
  usages: [digital signature, key encipherment, client auth]
",
            expected: "
apiVersion: certificates.k8s.io/v1
kind: CertificateSigningRequest
metadata: {name: jane}
spec:
  request: LS0tLS1CRUdJTg==
  usages: [digital signature, key encipherment, client auth]
  signerName: kubernetes.io/kube-apiserver-client
",
            notes: &[
                "spec.signerName set to kubernetes.io/kube-apiserver-client: v1beta1 defaulted",
            ],
        },
        Case {
            name: "explicit signer, default usages",
            input: "
apiVersion: certificates.k8s.io/v1beta1
kind: CertificateSigningRequest
metadata: {name: svc}
spec:
  request: LS0tLS1CRUdJTg==
  signerName: example.com/serving
",
            expected: "
apiVersion: certificates.k8s.io/v1
kind: CertificateSigningRequest
metadata: {name: svc}
spec:
  request: LS0tLS1CRUdJTg==
  signerName: example.com/serving
  usages: [digital signature, key encipherment]
",
            notes: &[
                "spec.usages set to [digital signature, key encipherment], the v1beta1 default",
            ],
        },
    ]);
}

#[test]
fn endpoint_slice_topology_becomes_node_name_and_zone() {
    run(&[Case {
        name: "topology",
        input: "
apiVersion: discovery.k8s.io/v1beta1
kind: EndpointSlice
metadata: {name: ext-1, labels: {kubernetes.io/service-name: ext}}
addressType: IPv4
ports: [{name: http, port: 80, protocol: TCP}]
endpoints:
- addresses: [10.0.0.1]
  conditions: {ready: true}
  topology:
    kubernetes.io/hostname: node-1
    topology.kubernetes.io/zone: us-east-1a
    topology.kubernetes.io/region: us-east-1
- addresses: [10.0.0.2]
",
        expected: "
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: ext-1, labels: {kubernetes.io/service-name: ext}}
addressType: IPv4
ports: [{name: http, port: 80, protocol: TCP}]
endpoints:
- addresses: [10.0.0.1]
  conditions: {ready: true}
  nodeName: node-1
  zone: us-east-1a
- addresses: [10.0.0.2]
",
        notes: &[
            "moved to nodeName and zone",
            "endpoints[].topology keys dropped (v1 cannot store them): topology.kubernetes.io/region",
        ],
    }]);
}

#[test]
fn alpha_runtime_class_moves_its_handler_out_of_spec() {
    run(&[Case {
        name: "node.k8s.io/v1alpha1",
        input: "
apiVersion: node.k8s.io/v1alpha1
kind: RuntimeClass
metadata: {name: kata}
spec:
  runtimeHandler: kata
  overhead: {podFixed: {cpu: 250m}}
",
        expected: "
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata: {name: kata}
handler: kata
overhead: {podFixed: {cpu: 250m}}
",
        notes: &["spec.runtimeHandler is now handler"],
    }]);
}

#[test]
fn priority_levels_rename_assured_to_nominal_concurrency_shares() {
    run(&[
        Case {
            name: "v1beta2",
            input: "
apiVersion: flowcontrol.apiserver.k8s.io/v1beta2
kind: PriorityLevelConfiguration
metadata: {name: op}
spec:
  type: Limited
  limited:
    assuredConcurrencyShares: 20
    limitResponse: {type: Reject}
",
            expected: "
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: op}
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 20
    limitResponse: {type: Reject}
",
            notes: &["assuredConcurrencyShares is now nominalConcurrencyShares"],
        },
        Case {
            name: "v1beta3 zero meant the default",
            input: "
apiVersion: flowcontrol.apiserver.k8s.io/v1beta3
kind: PriorityLevelConfiguration
metadata: {name: op}
spec:
  type: Limited
  limited: {nominalConcurrencyShares: 0, lendablePercent: 10}
",
            expected: "
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: op}
spec:
  type: Limited
  limited: {lendablePercent: 10}
",
            notes: &["nominalConcurrencyShares 0 removed"],
        },
    ]);
}
