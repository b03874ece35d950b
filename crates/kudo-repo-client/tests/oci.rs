//! Packages in an OCI registry: Debian's docker-registry (the
//! distribution registry) on loopback, started for each test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::*;
use kudo_repo::packages::create;
use kudo_repo_client::test_support::DockerRegistry;
use kudo_repo_client::{OciRef, Registry};

fn registry() -> Registry {
    Registry {
        plain_http: true,
        ..Registry::default()
    }
}

async fn push_versions(
    reg: &DockerRegistry,
    tmp: &std::path::Path,
) -> Vec<(OciRef, kudo_repo::Digest)> {
    let mut pushed = Vec::new();
    for version in ["0.2.0", "0.3.0", "0.4.0-rc.1"] {
        let created = create(&first_operator_at(version, tmp)).unwrap();
        pushed.push(
            registry()
                .push(&created.bytes, &created.file_name, &reg.namespace("ops"))
                .await
                .unwrap(),
        );
    }
    pushed
}

#[tokio::test]
async fn pushed_packages_are_pulled_by_version_range_newest_and_digest() {
    let reg = DockerRegistry::start();
    let tmp = tempfile::tempdir().unwrap();
    let pushed = push_versions(&reg, tmp.path()).await;
    assert_eq!(
        pushed[0].0.to_string(),
        format!("oci://{}/ops/first-operator:0.2.0", reg.addr)
    );

    let base = OciRef::parse(&format!("oci://{}/ops/first-operator", reg.addr)).unwrap();
    let version = |v: Option<&'static str>, devel: bool| {
        let base = base.clone();
        async move {
            let (_, got) = registry().pull(&base, v, devel).await.unwrap();
            got.located.package.operator.operator_version
        }
    };
    assert_eq!(version(Some("0.2.0"), false).await, "0.2.0");
    assert_eq!(version(Some("^0.2"), false).await, "0.2.0");
    assert_eq!(version(Some(">=0.2 <1"), false).await, "0.3.0");
    assert_eq!(version(None, false).await, "0.3.0", "newest stable");
    assert_eq!(version(None, true).await, "0.4.0-rc.1", "--devel");

    let (pinned, got) = registry().pull(&base, Some("0.3.0"), false).await.unwrap();
    assert_eq!(
        pinned.digest.as_deref(),
        Some(pushed[1].1.oci().as_str()),
        "the manifest digest"
    );
    let by_digest = OciRef {
        tag: None,
        ..pinned.clone()
    };
    let (_, again) = registry().pull(&by_digest, None, false).await.unwrap();
    assert_eq!(again.digest, got.digest);

    let err = registry()
        .pull(&base, Some("2.x"), false)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("2.x: no such version in the registry; newest is 0.3.0"),
        "{err}"
    );
}

#[tokio::test]
async fn a_tampered_blob_in_the_registry_is_refused() {
    let reg = DockerRegistry::start();
    let tmp = tempfile::tempdir().unwrap();
    let created = create(&first_operator_at("0.2.0", tmp.path())).unwrap();
    registry()
        .push(&created.bytes, &created.file_name, &reg.namespace("ops"))
        .await
        .unwrap();
    let layer = kudo_repo::Digest::of(&created.bytes).to_string();
    let blob = reg
        .blob_files()
        .into_iter()
        .find(|p| p.to_string_lossy().contains(&layer))
        .unwrap();
    let mut bytes = std::fs::read(&blob).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    std::fs::write(&blob, &bytes).unwrap();
    let reference = OciRef::parse(&format!("oci://{}/ops/first-operator:0.2.0", reg.addr)).unwrap();
    let err = registry()
        .pull(&reference, None, false)
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains(&format!("does not match {layer}")), "{err}");
}

#[tokio::test]
async fn a_wrong_digest_or_a_missing_repository_is_an_error() {
    let reg = DockerRegistry::start();
    let missing = OciRef::parse(&format!("oci://{}/ops/nothing:1.0.0", reg.addr)).unwrap();
    let err = registry()
        .pull(&missing, None, false)
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("404"), "{err}");
    let bad = OciRef::parse(&format!(
        "oci://{}/ops/nothing@sha256:{}",
        reg.addr,
        "0".repeat(64)
    ))
    .unwrap();
    assert!(registry().pull(&bad, None, false).await.is_err());
}
