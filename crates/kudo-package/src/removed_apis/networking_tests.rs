//! Ingress, IngressClass and NetworkPolicy → networking.k8s.io/v1.

use super::test_support::{Case, run};

const V1BETA1_INGRESS: &str = "
apiVersion: networking.k8s.io/v1beta1
kind: Ingress
metadata:
  name: web
  annotations: {kubernetes.io/ingress.class: nginx}
spec:
  backend: {serviceName: fallback, servicePort: 80}
  tls:
  - hosts: [web.example.com]
    secretName: web-tls
  rules:
  - host: web.example.com
    http:
      paths:
      - path: /
        backend: {serviceName: web, servicePort: http}
      - path: /api
        pathType: Prefix
        backend: {serviceName: api, servicePort: '8080'}
";

const V1_INGRESS: &str = "
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: web
  annotations: {kubernetes.io/ingress.class: nginx}
spec:
  defaultBackend:
    service: {name: fallback, port: {number: 80}}
  tls:
  - hosts: [web.example.com]
    secretName: web-tls
  rules:
  - host: web.example.com
    http:
      paths:
      - path: /
        pathType: ImplementationSpecific
        backend:
          service: {name: web, port: {name: http}}
      - path: /api
        pathType: Prefix
        backend:
          service: {name: api, port: {number: 8080}}
";

#[test]
fn beta_ingresses_get_service_backends_and_path_types() {
    let extensions = V1BETA1_INGRESS.replace("networking.k8s.io/v1beta1", "extensions/v1beta1");
    let notes = &[
        "spec.backend is now spec.defaultBackend",
        "3 backends serviceName/servicePort rewritten as service.name/service.port",
        "1 servicePort written as a string of digits taken as a port number",
        "pathType ImplementationSpecific set on 1 path without one",
    ];
    run(&[
        Case {
            name: "networking.k8s.io/v1beta1",
            input: V1BETA1_INGRESS,
            expected: V1_INGRESS,
            notes,
        },
        Case {
            name: "extensions/v1beta1",
            input: &extensions,
            expected: V1_INGRESS,
            notes,
        },
        Case {
            name: "resource backend and ingressClassName are the same in v1",
            input: "
apiVersion: networking.k8s.io/v1beta1
kind: Ingress
metadata: {name: static}
spec:
  ingressClassName: external
  rules:
  - http:
      paths:
      - path: /icons
        pathType: Exact
        backend:
          resource: {apiGroup: k8s.example.com, kind: StorageBucket, name: icons}
",
            expected: "
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: static}
spec:
  ingressClassName: external
  rules:
  - http:
      paths:
      - path: /icons
        pathType: Exact
        backend:
          resource: {apiGroup: k8s.example.com, kind: StorageBucket, name: icons}
",
            notes: &[],
        },
    ]);
}

#[test]
fn ingress_class_and_network_policy_move_unchanged() {
    run(&[
        Case {
            name: "IngressClass",
            input: "
apiVersion: networking.k8s.io/v1beta1
kind: IngressClass
metadata: {name: external}
spec:
  controller: example.com/ingress-controller
  parameters: {apiGroup: k8s.example.com, kind: IngressParameters, name: external}
",
            expected: "
apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: {name: external}
spec:
  controller: example.com/ingress-controller
  parameters: {apiGroup: k8s.example.com, kind: IngressParameters, name: external}
",
            notes: &[],
        },
        Case {
            name: "NetworkPolicy",
            input: "
apiVersion: extensions/v1beta1
kind: NetworkPolicy
metadata: {name: db}
spec:
  podSelector: {matchLabels: {app: db}}
  ingress:
  - from: [{podSelector: {matchLabels: {app: web}}}]
    ports: [{port: 5432, protocol: TCP}]
",
            expected: "
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: db}
spec:
  podSelector: {matchLabels: {app: db}}
  ingress:
  - from: [{podSelector: {matchLabels: {app: web}}}]
    ports: [{port: 5432, protocol: TCP}]
",
            notes: &[],
        },
    ]);
}
