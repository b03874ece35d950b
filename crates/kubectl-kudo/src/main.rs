//! # kubectl-kudo
//!
//! The `kubectl kudo` plugin: installs operator packages, updates parameters,
//! triggers, inspects and operates plans, and verifies and renders packages.

fn main() {
    println!("kubectl-kudo: commands are not implemented yet; see README.md");
}
