//! extensions/v1beta1, apps/v1beta1 and apps/v1beta2 workloads → apps/v1.

use super::test_support::{Case, run};

#[test]
fn extensions_v1beta1_deployment_gets_a_selector_and_its_old_rollout_defaults() {
    run(&[
        Case {
            name: "no selector, no strategy, rollbackTo",
            input: "
apiVersion: extensions/v1beta1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  rollbackTo: {revision: 3}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers: [{name: web, image: nginx}]
",
            expected: "
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  strategy:
    rollingUpdate: {maxUnavailable: 1, maxSurge: 1}
  progressDeadlineSeconds: 2147483647
  template:
    metadata:
      labels: {app: web}
    spec:
      containers: [{name: web, image: nginx}]
",
            notes: &[
                "spec.selector set to the pod template's labels, as extensions/v1beta1",
                "spec.rollbackTo dropped",
                "maxUnavailable and maxSurge set to 1",
                "progressDeadlineSeconds set to 2147483647",
            ],
        },
        Case {
            name: "explicit selector, Recreate strategy and deadline are kept",
            input: "
apiVersion: extensions/v1beta1
kind: Deployment
metadata: {name: db}
spec:
  selector:
    matchLabels: {app: db, tier: data}
  strategy: {type: Recreate}
  progressDeadlineSeconds: 300
  template:
    metadata:
      labels: {app: db, tier: data, extra: x}
",
            expected: "
apiVersion: apps/v1
kind: Deployment
metadata: {name: db}
spec:
  selector:
    matchLabels: {app: db, tier: data}
  strategy: {type: Recreate}
  progressDeadlineSeconds: 300
  template:
    metadata:
      labels: {app: db, tier: data, extra: x}
",
            notes: &[],
        },
        Case {
            name: "one rolling update field given, the other defaulted",
            input: "
apiVersion: extensions/v1beta1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  strategy:
    rollingUpdate: {maxSurge: 50%}
  progressDeadlineSeconds: 600
  template: {metadata: {labels: {app: web}}}
",
            expected: "
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  strategy:
    rollingUpdate: {maxSurge: 50%, maxUnavailable: 1}
  progressDeadlineSeconds: 600
  template: {metadata: {labels: {app: web}}}
",
            notes: &["spec.strategy.rollingUpdate maxUnavailable set to 1"],
        },
    ]);
}

#[test]
fn extensions_v1beta1_daemon_set_keeps_on_delete_and_drops_template_generation() {
    run(&[
        Case {
            name: "no update strategy",
            input: "
apiVersion: extensions/v1beta1
kind: DaemonSet
metadata: {name: agent}
spec:
  templateGeneration: 4
  template:
    metadata: {labels: {app: agent}}
",
            expected: "
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
spec:
  selector: {matchLabels: {app: agent}}
  updateStrategy: {type: OnDelete}
  template:
    metadata: {labels: {app: agent}}
",
            notes: &[
                "spec.selector set",
                "spec.templateGeneration dropped",
                "spec.updateStrategy.type set to OnDelete, the extensions/v1beta1 default",
            ],
        },
        Case {
            name: "rollingUpdate settings without a type mean a rolling update",
            input: "
apiVersion: extensions/v1beta1
kind: DaemonSet
metadata: {name: agent}
spec:
  selector: {matchLabels: {app: agent}}
  updateStrategy:
    rollingUpdate: {maxUnavailable: 2}
  template: {metadata: {labels: {app: agent}}}
",
            expected: "
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
spec:
  selector: {matchLabels: {app: agent}}
  updateStrategy:
    type: RollingUpdate
    rollingUpdate: {maxUnavailable: 2}
  template: {metadata: {labels: {app: agent}}}
",
            notes: &[],
        },
    ]);
}

#[test]
fn extensions_v1beta1_replica_set_gets_a_selector() {
    run(&[Case {
        name: "replica set",
        input: "
apiVersion: extensions/v1beta1
kind: ReplicaSet
metadata: {name: rs}
spec:
  replicas: 1
  template: {metadata: {labels: {app: rs}}}
",
        expected: "
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: rs}
spec:
  replicas: 1
  selector: {matchLabels: {app: rs}}
  template: {metadata: {labels: {app: rs}}}
",
        notes: &["spec.selector set"],
    }]);
}

#[test]
fn apps_v1beta1_deployment_and_stateful_set_convert_with_their_defaults() {
    run(&[
        Case {
            name: "apps/v1beta1 Deployment keeps apps/v1's rollout defaults",
            input: "
apiVersion: apps/v1beta1
kind: Deployment
metadata: {name: web}
spec:
  rollbackTo: {revision: 0}
  template: {metadata: {labels: {app: web}}}
",
            expected: "
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template: {metadata: {labels: {app: web}}}
",
            notes: &["as apps/v1beta1 defaulted it", "spec.rollbackTo dropped"],
        },
        Case {
            name: "apps/v1beta1 StatefulSet keeps OnDelete",
            input: "
apiVersion: apps/v1beta1
kind: StatefulSet
metadata: {name: zk}
spec:
  serviceName: zk-hs
  replicas: 3
  template: {metadata: {labels: {app: zk}}}
",
            expected: "
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: zk}
spec:
  serviceName: zk-hs
  replicas: 3
  selector: {matchLabels: {app: zk}}
  updateStrategy: {type: OnDelete}
  template: {metadata: {labels: {app: zk}}}
",
            notes: &["spec.selector set", "OnDelete, the apps/v1beta1 default"],
        },
        Case {
            name: "apps/v1beta1 StatefulSet with an explicit strategy",
            input: "
apiVersion: apps/v1beta1
kind: StatefulSet
metadata: {name: zk}
spec:
  selector: {matchLabels: {app: zk}}
  updateStrategy: {type: RollingUpdate}
  template: {metadata: {labels: {app: zk}}}
",
            expected: "
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: zk}
spec:
  selector: {matchLabels: {app: zk}}
  updateStrategy: {type: RollingUpdate}
  template: {metadata: {labels: {app: zk}}}
",
            notes: &[],
        },
    ]);
}

#[test]
fn apps_v1beta2_workloads_move_unchanged() {
    for kind in ["Deployment", "StatefulSet", "DaemonSet", "ReplicaSet"] {
        let input = format!(
            "apiVersion: apps/v1beta2\nkind: {kind}\nmetadata: {{name: x}}\nspec:\n  selector: {{matchLabels: {{app: x}}}}\n  template: {{metadata: {{labels: {{app: x}}}}}}\n"
        );
        let expected = input.replace("apps/v1beta2", "apps/v1");
        run(&[Case {
            name: kind,
            input: &input,
            expected: &expected,
            notes: &[],
        }]);
    }
}
