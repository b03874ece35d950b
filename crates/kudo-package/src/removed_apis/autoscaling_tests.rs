//! autoscaling/v2beta1 and v2beta2 HorizontalPodAutoscaler → autoscaling/v2.

use super::test_support::{Case, run};

#[test]
fn v2beta1_metrics_become_metric_and_target_pairs() {
    run(&[Case {
        name: "every v2beta1 metric source",
        input: "
apiVersion: autoscaling/v2beta1
kind: HorizontalPodAutoscaler
metadata: {name: web}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 2
  maxReplicas: 10
  metrics:
  - type: Resource
    resource: {name: cpu, targetAverageUtilization: 60}
  - type: Resource
    resource: {name: memory, targetAverageValue: 500Mi}
  - type: ContainerResource
    containerResource: {name: cpu, container: app, targetAverageUtilization: 70}
  - type: Pods
    pods:
      metricName: packets-per-second
      selector: {matchLabels: {verb: GET}}
      targetAverageValue: 1k
  - type: Object
    object:
      target: {apiVersion: networking.k8s.io/v1, kind: Ingress, name: main}
      metricName: requests-per-second
      targetValue: 10k
  - type: Object
    object:
      target: {apiVersion: v1, kind: Service, name: queue}
      metricName: depth
      targetValue: 100
      averageValue: 30
  - type: External
    external:
      metricName: queue_messages_ready
      metricSelector: {matchLabels: {queue: worker_tasks}}
      targetAverageValue: 30
  - type: External
    external:
      metricName: backlog
      targetValue: 500
",
        expected: "
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 2
  maxReplicas: 10
  metrics:
  - type: Resource
    resource:
      name: cpu
      target: {type: Utilization, averageUtilization: 60}
  - type: Resource
    resource:
      name: memory
      target: {type: AverageValue, averageValue: 500Mi}
  - type: ContainerResource
    containerResource:
      name: cpu
      container: app
      target: {type: Utilization, averageUtilization: 70}
  - type: Pods
    pods:
      metric:
        name: packets-per-second
        selector: {matchLabels: {verb: GET}}
      target: {type: AverageValue, averageValue: 1k}
  - type: Object
    object:
      describedObject: {apiVersion: networking.k8s.io/v1, kind: Ingress, name: main}
      metric: {name: requests-per-second}
      target: {type: Value, value: 10k}
  - type: Object
    object:
      describedObject: {apiVersion: v1, kind: Service, name: queue}
      metric: {name: depth}
      target: {type: AverageValue, averageValue: 30}
  - type: External
    external:
      metric:
        name: queue_messages_ready
        selector: {matchLabels: {queue: worker_tasks}}
      target: {type: AverageValue, averageValue: 30}
  - type: External
    external:
      metric: {name: backlog}
      target: {type: Value, value: 500}
",
        notes: &["8 metrics rewritten to v2's metric/target form"],
    }]);
}

#[test]
fn v2beta2_and_a_v2beta1_without_metrics_move_unchanged() {
    run(&[
        Case {
            name: "v2beta2 has v2's fields",
            input: "
apiVersion: autoscaling/v2beta2
kind: HorizontalPodAutoscaler
metadata: {name: web}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  maxReplicas: 5
  metrics:
  - type: Resource
    resource: {name: cpu, target: {type: Utilization, averageUtilization: 50}}
  behavior:
    scaleDown: {stabilizationWindowSeconds: 300}
",
            expected: "
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  maxReplicas: 5
  metrics:
  - type: Resource
    resource: {name: cpu, target: {type: Utilization, averageUtilization: 50}}
  behavior:
    scaleDown: {stabilizationWindowSeconds: 300}
",
            notes: &[],
        },
        Case {
            name: "v2beta1 with the default metric",
            input: "
apiVersion: autoscaling/v2beta1
kind: HorizontalPodAutoscaler
metadata: {name: web}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  maxReplicas: 5
",
            expected: "
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  maxReplicas: 5
",
            notes: &[],
        },
    ]);
}
