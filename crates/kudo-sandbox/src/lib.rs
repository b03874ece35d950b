//! # kudo-sandbox
//!
//! An in-process Kubernetes API server speaking the real REST protocol on
//! 127.0.0.1, so kube-rs clients, kube-runtime controllers and `kubectl` use
//! it unchanged: discovery, CRUD on built-in and CRD-defined kinds, watch,
//! optimistic concurrency, status subresource, patches including server-side
//! apply, finalizers and garbage collection, validating webhooks, simulated
//! workload readiness and fault injection.
//!
//! It is a development and test tool; production runs on real Kubernetes.
