//! OperatorRepositories through the manager: an index served on loopback
//! (kudo-repo-client's test server) is followed, summed up in status, and
//! an unchanged index costs its one request and no status write; a broken
//! index leaves the last good one in place with a reason; a package too
//! big to become an OperatorVersion is refused before the manager holds it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::time::Duration;

use anyhow::{Result, anyhow};
use kube::api::PostParams;
use kube::runtime::wait::await_condition;
use kudo_api::{OperatorRepository, OperatorRepositorySpec};
use kudo_e2e::{Env, operator};
use kudo_repo_client::test_support::TestServer;

/// A repository folder holding first-operator, indexed.
fn repository(dir: &Path) {
    let created = kudo_repo::packages::create(&operator("first-operator")).unwrap();
    std::fs::write(dir.join(&created.file_name), &created.bytes).unwrap();
    let (index, _) = kudo_repo::packages::index_folder(dir, None, None).unwrap();
    std::fs::write(dir.join("index.yaml"), index.to_yaml().unwrap()).unwrap();
}

fn ready(repo: &OperatorRepository) -> Option<(String, String, String)> {
    repo.status.as_ref().and_then(|s| {
        s.conditions
            .iter()
            .find(|c| c.type_ == "Ready")
            .map(|c| (c.status.clone(), c.reason.clone(), c.message.clone()))
    })
}

async fn wait_repo(
    env: &Env,
    name: &str,
    what: &str,
    cond: impl Fn(&OperatorRepository) -> bool,
) -> Result<OperatorRepository> {
    let api = env.api_all::<OperatorRepository>();
    let waited = tokio::time::timeout(
        Duration::from_secs(60),
        await_condition(api.clone(), name, move |r: Option<&OperatorRepository>| {
            r.is_some_and(&cond)
        }),
    )
    .await;
    match waited {
        Ok(Ok(Some(repo))) => Ok(repo),
        _ => Err(anyhow!(
            "timed out waiting for {what} on OperatorRepository {name}: {:?}",
            api.get_opt(name)
                .await
                .ok()
                .flatten()
                .and_then(|r| r.status)
        )),
    }
}

fn index_requests(server: &TestServer) -> usize {
    server
        .seen()
        .iter()
        .filter(|s| s.path == "/index.yaml")
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_followed_repository_reports_its_index_and_an_unchanged_index_writes_nothing()
-> Result<()> {
    let env = Env::start().await?;
    let dir = tempfile::tempdir()?;
    repository(dir.path());
    let server = TestServer::serve_dir(dir.path());
    let name = format!("local-{}", env.ns);
    let repo = OperatorRepository::new(
        &name,
        OperatorRepositorySpec {
            url: server.url(),
            interval: Some("10s".into()),
            ..OperatorRepositorySpec::default()
        },
    );
    env.api_all::<OperatorRepository>()
        .create(&PostParams::default(), &repo)
        .await?;
    let synced = wait_repo(&env, &name, "Ready", |r| {
        ready(r).is_some_and(|(s, _, _)| s == "True")
    })
    .await?;
    let status = synced.status.clone().unwrap();
    assert_eq!(status.packages, Some(1));
    assert_eq!(status.versions, Some(1));
    let digest = status.index_digest.clone().unwrap();
    assert!(digest.starts_with("sha256:"), "{digest}");
    assert_eq!(
        ready(&synced).unwrap().2,
        "1 operators, 1 versions",
        "the Ready message"
    );
    let written = synced.metadata.resource_version.clone();
    // Two more syncs of the same index: each one request, no write (the
    // third has started only once the second is done).
    let before = index_requests(&server);
    let api = env.api_all::<OperatorRepository>();
    tokio::time::timeout(Duration::from_secs(60), async {
        while index_requests(&server) < before + 2 {
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    })
    .await
    .map_err(|_| anyhow!("the repository was not fetched again on its interval"))?;
    let again = api.get(&name).await?;
    assert_eq!(
        again.metadata.resource_version, written,
        "an unchanged index writes no status"
    );

    // A broken index: not Ready, with the reason; the last good index stays.
    std::fs::write(
        dir.path().join("index.yaml"),
        "apiVersion: v2\nentries: {}\n",
    )?;
    let broken = wait_repo(&env, &name, "InvalidIndex", |r| {
        ready(r).is_some_and(|(s, reason, _)| s == "False" && reason == "InvalidIndex")
    })
    .await?;
    let (_, _, message) = ready(&broken).unwrap();
    assert!(
        message.contains("apiVersion \"v2\" is not supported"),
        "{message}"
    );
    assert_eq!(broken.status.unwrap().index_digest, Some(digest));
    api.delete(&name, &Default::default()).await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_package_unpacking_past_what_an_operator_version_holds_is_refused() {
    use kudo_e2e::channel_repo::{NEW_OV, Repo, deployed, reason, runs, t};
    let env = Env::start().await.unwrap();
    let repo = Repo::new();
    repo.publish("0.2.0");
    // Zeros compress to a few KiB; unpacked they are more than four
    // objects of the API server's largest size.
    repo.publish_padded("0.3.0", 8 << 20);
    let name = format!("padded-{}", env.ns);
    repo.follow(&env, &name).await;
    deployed(&env, "web", serde_json::json!({"repository": name})).await;
    let refused = env
        .wait_for("web", "the download refused", t(), |i| {
            reason(i).contains("unpacks to more than")
        })
        .await
        .unwrap();
    assert!(
        reason(&refused).contains("unpacks to more than 6 MiB, the size limit of a package"),
        "{}",
        reason(&refused)
    );
    assert!(!runs(&refused, NEW_OV));
}
