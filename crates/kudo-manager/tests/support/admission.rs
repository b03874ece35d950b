//! The admission fixtures (`tests/fixtures/admission`), shared by the
//! webhook tests and bench (each includes this file as a module).
#![allow(dead_code, clippy::unwrap_used)]

use std::path::Path;

use kudo_api::OperatorVersion;
use kudo_manager::webhook::StaticOperatorVersions;

/// The bytes of one fixture, e.g. `deny/param-update-while-plan-runs.json`.
pub fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/admission")
            .join(name),
    )
    .unwrap()
}

/// The OperatorVersions the fixtures refer to.
pub fn operator_version_list() -> Vec<OperatorVersion> {
    serde_json::from_slice(&fixture("operatorversions.json")).unwrap()
}

/// The same, as the in-memory source the reviewer reads.
pub fn operator_versions() -> StaticOperatorVersions {
    operator_version_list().into_iter().collect()
}
