//! # kudo-e2e
//!
//! End-to-end tests of kudo-rs: they start the sandbox (or use the cluster
//! named by `KUDO_E2E_KUBECONFIG`), run the real `kudo-manager` and
//! `kubectl-kudo` binaries and check what happens to Instances and objects.
