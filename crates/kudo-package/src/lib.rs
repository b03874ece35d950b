//! # kudo-package
//!
//! Operator packages in KUDO's format (`operator.yaml`, `params.yaml`,
//! `templates/**`): loading from a directory or `.tgz`, verification like
//! `kubectl kudo package verify`, conversion to Operator/OperatorVersion,
//! parameter values as templates see them, rendering a task into Kubernetes
//! objects and stamping them with KUDO's labels, annotations and owner
//! references.
//!
//! Pure apart from reading package files: namespaced-or-not is decided by a
//! discovery interface passed in.
