//! Replays the AdmissionReview fixtures (tests/fixtures/admission, one file
//! per rule, written by generate.py there) against the webhook handler and
//! snapshots the answers.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use kudo_manager::webhook::{FnSource, OperatorVersionReadError, Reviewer, StaticOperatorVersions};
use serde_json::Value;
use support::admission::operator_versions;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/admission")
}

/// A fixed "now" (a Saturday noon UTC) so time-dependent warnings are stable.
fn noon() -> jiff::Timestamp {
    "2026-11-21T12:00:00Z".parse().unwrap()
}

fn reviewer() -> Reviewer<StaticOperatorVersions> {
    Reviewer::new(operator_versions(), Duration::from_secs(1)).with_clock(noon)
}

/// The fixture's request uid, when it has one.
fn request_uid(body: &[u8]) -> String {
    serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|v| v["request"]["uid"].as_str().map(str::to_string))
        .unwrap_or_default()
}

async fn answer(body: &[u8]) -> Value {
    let json = reviewer().review_to_json(body).await;
    serde_json::from_slice(&json).unwrap()
}

fn files(folder: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(fixtures().join(folder))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no fixtures in {folder}");
    files
}

fn snapshot_name(folder: &str, path: &Path) -> String {
    format!("{folder}-{}", path.file_stem().unwrap().to_string_lossy())
}

async fn replay(folder: &str, check: impl Fn(&Path, &Value)) {
    for path in files(folder) {
        let body = std::fs::read(&path).unwrap();
        let review = answer(&body).await;
        assert_eq!(
            review["apiVersion"],
            "admission.k8s.io/v1",
            "{}",
            path.display()
        );
        assert_eq!(review["kind"], "AdmissionReview", "{}", path.display());
        let response = &review["response"];
        assert_eq!(
            response["uid"].as_str().unwrap(),
            request_uid(&body),
            "{}: the uid must be echoed",
            path.display()
        );
        check(&path, response);
        insta::assert_json_snapshot!(snapshot_name(folder, &path), response);
    }
}

#[tokio::test]
async fn allow_fixtures_are_admitted() {
    replay("allow", |path, response| {
        assert_eq!(response["allowed"], true, "{}: {response}", path.display());
    })
    .await;
}

#[tokio::test]
async fn deny_fixtures_are_refused_with_a_403_and_a_message() {
    replay("deny", |path, response| {
        assert_eq!(response["allowed"], false, "{}: {response}", path.display());
        assert_eq!(
            response["status"]["code"],
            403,
            "{}: {response}",
            path.display()
        );
        let message = response["status"]["message"].as_str().unwrap();
        assert!(
            message.len() > 20,
            "{}: message too thin: {message}",
            path.display()
        );
    })
    .await;
}

#[tokio::test]
async fn malformed_and_foreign_reviews_get_a_clean_error() {
    replay("error", |path, response| {
        assert_eq!(response["allowed"], false, "{}: {response}", path.display());
        assert_eq!(
            response["status"]["code"],
            400,
            "{}: {response}",
            path.display()
        );
        assert!(!response["status"]["message"].as_str().unwrap().is_empty());
    })
    .await;
}

#[tokio::test]
async fn the_running_plan_conflict_names_plan_phase_step_and_the_way_out() {
    let body = std::fs::read(fixtures().join("deny/param-update-while-plan-runs.json")).unwrap();
    let review = answer(&body).await;
    let message = review["response"]["status"]["message"].as_str().unwrap();
    for part in [
        "\"deploy\"",
        "IN_PROGRESS",
        "\"nodes\"",
        "\"node-2\"",
        "kubectl kudo plan cancel",
    ] {
        assert!(message.contains(part), "{part} missing from: {message}");
    }
}

#[tokio::test]
async fn a_failed_operator_version_read_is_a_500_never_an_allow() {
    let source = FnSource(|ns: &str, name: &str| {
        Err(OperatorVersionReadError(format!(
            "operatorversions.kudo.dev \"{name}\" is forbidden: User \"system:serviceaccount:kudo-system:kudo-manager\" cannot get resource in namespace \"{ns}\""
        )))
    });
    let reviewer = Reviewer::new(source, Duration::from_secs(1));
    for path in files("allow") {
        let body = std::fs::read(&path).unwrap();
        let review: Value = serde_json::from_slice(&reviewer.review_to_json(&body).await).unwrap();
        let response = &review["response"];
        // Reviews that need no OperatorVersion (status writes, deletions) stay allowed.
        if response["allowed"] == true {
            let needs_ov = !path.to_string_lossy().contains("status-subresource")
                && !path.to_string_lossy().contains("delete-while")
                && !path.to_string_lossy().contains("metadata-only")
                && !path.to_string_lossy().contains("finalizer-removal");
            assert!(
                !needs_ov,
                "{} was allowed without its OperatorVersion",
                path.display()
            );
            continue;
        }
        assert_eq!(response["status"]["code"], 500, "{}", path.display());
        assert!(
            response["status"]["message"]
                .as_str()
                .unwrap()
                .contains("forbidden"),
            "{}: {response}",
            path.display()
        );
    }
}
