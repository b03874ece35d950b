//! # kudo-manager
//!
//! The kudo-rs manager binary: a kube-runtime controller that runs plans
//! (observe → `kudo_engine::decide` → execute), the executor (server-side
//! apply, delete, health), the validating admission webhook over TLS,
//! metrics and health endpoints, leader election, and `dev` mode (sandbox +
//! controller + webhook in one process).

fn main() {
    println!("kudo-manager: the controller is not implemented yet; see README.md");
}
