//! The admission fixtures (`tests/fixtures/admission`), shared by the
//! webhook tests and bench (each includes this file as a module).
#![allow(dead_code, clippy::unwrap_used)]

use std::path::Path;

use bytes::Bytes;
use http_body_util::Full;
use kudo_api::OperatorVersion;
use kudo_api::names::WEBHOOK_PATH;
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

/// The POST of `body` to the webhook's path, as the API server sends a
/// review over HTTP/1.1.
pub fn review_request(body: impl Into<Bytes>) -> http::Request<Full<Bytes>> {
    http::Request::post(WEBHOOK_PATH)
        .header(http::header::HOST, "127.0.0.1")
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(Full::new(body.into()))
        .unwrap()
}
