//! Repositories on a loopback HTTP server: add, resolve from the cache,
//! refresh on a miss, download with the digest checked, remove.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::*;
use kudo_repo::{Limits, Query};
use kudo_repo_client::Repositories;
use kudo_repo_client::test_support::TestServer;

fn query(version: Option<&str>) -> Query<'_> {
    Query {
        name: "first-operator",
        operator_version: version,
        ..Query::default()
    }
}

/// A served repository folder, added as `local` (its index fetched once).
async fn added_local() -> (
    tempfile::TempDir,
    std::path::PathBuf,
    TestServer,
    Repositories,
) {
    let tmp = tempfile::tempdir().unwrap();
    let repo = repository(tmp.path(), None);
    let server = TestServer::serve_dir(&repo);
    let mut repos = open(tmp.path(), Limits::default());
    repos
        .add(config("local", &server.url()), None, false)
        .await
        .unwrap();
    (tmp, repo, server, repos)
}

#[tokio::test]
async fn an_added_repository_resolves_from_its_cache_even_when_the_server_is_gone() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = repository(tmp.path(), None);
    let server = TestServer::serve_dir(&repo);
    let mut repos = open(tmp.path(), Limits::default());
    let count = repos
        .add(config("local", &server.url()), None, false)
        .await
        .unwrap();
    assert_eq!(count, Some(2));
    assert!(repos.home().cache_file("local").exists());

    let newest = repos.resolve(None, &query(None)).await.unwrap();
    assert_eq!(newest.entry.operator_version, "0.3.0");
    let pinned = repos.resolve(None, &query(Some("~0.2"))).await.unwrap();
    assert_eq!(pinned.entry.operator_version, "0.2.0");
    let downloaded = repos.download(&pinned).await.unwrap();
    assert_eq!(
        downloaded.located.package.operator.operator_version,
        "0.2.0"
    );
    assert!(
        downloaded.url.ends_with("/first-operator-1.27.0_0.2.0.tgz"),
        "{}",
        downloaded.url
    );
    let requests = server.seen().len();
    drop(server);

    // Cached: no server needed to resolve.
    let again = open(tmp.path(), Limits::default());
    assert_eq!(
        again
            .resolve(None, &query(None))
            .await
            .unwrap()
            .entry
            .operator_version,
        "0.3.0"
    );
    assert_eq!(requests, 2, "one index and one package request");
}

#[tokio::test]
async fn a_version_missing_from_the_cache_fetches_the_index_once_more() {
    let (tmp, repo, _server, repos) = added_local().await;

    // The repository publishes 0.4.0 after the cache was made.
    let created = kudo_repo::packages::create(&first_operator_at("0.4.0", tmp.path())).unwrap();
    std::fs::write(repo.join(&created.file_name), &created.bytes).unwrap();
    write_index(&repo, None);
    assert_eq!(
        repos
            .resolve(None, &query(None))
            .await
            .unwrap()
            .entry
            .operator_version,
        "0.3.0",
        "the cache is used until a miss"
    );
    let found = repos.resolve(None, &query(Some("0.4.0"))).await.unwrap();
    assert_eq!(found.entry.operator_version, "0.4.0");
    assert_eq!(
        repos
            .resolve(None, &query(None))
            .await
            .unwrap()
            .entry
            .operator_version,
        "0.4.0",
        "the refreshed cache"
    );

    let err = repos
        .resolve(None, &query(Some("0.9.x")))
        .await
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "first-operator 0.9.x: no such version in repository local; newest is 0.4.0 (app 1.27.0) (it has 0.4.0 (app 1.27.0), 0.3.0 (app 1.27.0), 0.2.0 (app 1.27.0))"
    );
    let err = repos
        .resolve(
            None,
            &Query {
                name: "kafka",
                ..Query::default()
            },
        )
        .await
        .unwrap_err()
        .to_string();
    assert_eq!(err, "kafka: no package of that name in repository local");
}

#[tokio::test]
async fn misses_of_one_command_fetch_each_index_once() {
    let (tmp, _repo, server, repos) = added_local().await;
    let index_requests = || {
        server
            .seen()
            .iter()
            .filter(|s| s.path.ends_with("index.yaml"))
            .count()
    };
    let after_add = index_requests();
    // Dependencies the cache does not have: the first miss fetches.
    for name in ["zookeeper", "kafka", "cassandra"] {
        let query = Query {
            name,
            ..Query::default()
        };
        assert!(repos.resolve(None, &query).await.is_err());
    }
    assert_eq!(index_requests(), after_add + 1);
    // Another command (a new value) fetches again on a miss.
    let again = open(tmp.path(), Limits::default());
    let query = Query {
        name: "kafka",
        ..Query::default()
    };
    assert!(again.resolve(None, &query).await.is_err());
    assert_eq!(index_requests(), after_add + 2);
}

#[tokio::test]
async fn a_repository_whose_index_cannot_be_read_is_not_added() {
    let tmp = tempfile::tempdir().unwrap();
    let server =
        TestServer::start(|_| kudo_repo_client::test_support::Reply::Body(404, Vec::new()));
    let mut repos = open(tmp.path(), Limits::default());
    let err = repos
        .add(config("r", &server.url()), None, false)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains(
            "index.yaml: the server answered 404 Not Found; is this the URL of a repository"
        ),
        "{err}"
    );
    assert!(repos.config().repositories.is_empty());
    assert!(!repos.home().repositories_file().exists());
    // --force adds it unchecked.
    assert_eq!(
        repos
            .add(config("r", &server.url()), None, true)
            .await
            .unwrap(),
        None
    );
    assert_eq!(open(tmp.path(), Limits::default()).config().context, "r");
}

#[tokio::test]
async fn removing_a_repository_removes_its_cache_and_credentials() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = repository(tmp.path(), None);
    let server = TestServer::serve_dir(&repo);
    let mut repos = open(tmp.path(), Limits::default());
    let creds = kudo_repo::config::Credentials::Bearer {
        token: "secret-token".into(),
    };
    repos
        .add(config("local", &server.url()), Some(creds), false)
        .await
        .unwrap();
    assert!(repos.has_credentials("local"));
    assert_eq!(
        server.seen()[0].header("authorization"),
        Some("Bearer secret-token")
    );
    repos.remove(&["local".to_string()]).unwrap();
    assert!(!repos.home().cache_file("local").exists());
    let stored = std::fs::read_to_string(repos.home().credentials_file()).unwrap();
    assert!(!stored.contains("secret-token"), "{stored}");
}

#[tokio::test]
async fn a_failed_update_keeps_the_cached_index() {
    let (_tmp, repo, _server, repos) = added_local().await;
    let before = std::fs::read(repos.home().cache_file("local")).unwrap();
    std::fs::write(
        repo.join("index.yaml"),
        "apiVersion: v1\nentries: [broken\n",
    )
    .unwrap();
    let results = repos.update(&[]).await.unwrap();
    let err = results[0].1.as_ref().unwrap_err().to_string();
    assert!(err.contains("cannot be read"), "{err}");
    assert_eq!(
        std::fs::read(repos.home().cache_file("local")).unwrap(),
        before
    );
}
