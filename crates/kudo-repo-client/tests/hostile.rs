//! Hostile repositories on loopback servers: each is refused with a clear
//! error and leaves no cache file and no package behind. (Part of the fault
//! suite; the figures are in RELIABILITY.md.)
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::Duration;

use common::*;
use kudo_repo::{Digest, Limits, Query};
use kudo_repo_client::test_support::{Reply, TestServer, file_reply};

fn small() -> Limits {
    Limits {
        max_index_bytes: 64 * 1024,
        max_package_bytes: 64 * 1024,
        connect_timeout: Duration::from_secs(2),
        read_timeout: Duration::from_millis(500),
        total_timeout: Duration::from_secs(2),
        ..Limits::default()
    }
}

async fn add_err(tmp: &std::path::Path, url: &str, limits: Limits) -> String {
    let mut repos = open(tmp, limits);
    let err = repos.add(config("r", url), None, false).await.unwrap_err();
    assert!(
        !repos.home().cache_file("r").exists(),
        "no cache file after: {err}"
    );
    assert!(repos.config().repositories.is_empty());
    err.to_string()
}

#[tokio::test]
async fn an_index_over_the_size_limit_is_stopped_whether_or_not_its_length_is_announced() {
    let tmp = tempfile::tempdir().unwrap();
    let announced = TestServer::start(|_| Reply::Sized(10 * 1024 * 1024));
    let err = add_err(tmp.path(), &announced.url(), small()).await;
    assert!(err.ends_with("index.yaml: the index is larger than 64 KiB, the size limit of a index; the download was stopped") || err.contains("larger than 64 KiB"), "{err}");
    let endless = TestServer::start(|_| Reply::Endless);
    let err = add_err(tmp.path(), &endless.url(), small()).await;
    assert!(err.contains("larger than 64 KiB"), "{err}");
}

#[tokio::test]
async fn a_trickling_server_ends_on_the_total_deadline_and_a_silent_one_on_the_read_timeout() {
    let tmp = tempfile::tempdir().unwrap();
    let body = b"apiVersion: v1\nentries: {}\n".repeat(20);
    let trickle =
        TestServer::start(move |_| Reply::Trickle(body.clone(), Duration::from_millis(100)));
    let err = add_err(tmp.path(), &trickle.url(), small()).await;
    assert!(err.contains("did not arrive within 2 s"), "{err}");
    let silent = TestServer::start(|_| Reply::Trickle(b"ab".to_vec(), Duration::from_secs(5)));
    let err = add_err(tmp.path(), &silent.url(), small()).await;
    assert!(err.contains("index.yaml"), "{err}");
}

#[tokio::test]
async fn redirects_are_bounded_and_never_downgrade_or_leave_http() {
    let tmp = tempfile::tempdir().unwrap();
    let looping = TestServer::start(|seen| Reply::Redirect(format!("{}x", seen.path)));
    let err = add_err(tmp.path(), &looping.url(), small()).await;
    assert!(
        err.contains("redirect refused: more than 5 redirects"),
        "{err}"
    );

    let to_file = TestServer::start(|_| Reply::Redirect("file:///etc/passwd".into()));
    let err = add_err(tmp.path(), &to_file.url(), small()).await;
    assert!(err.contains("redirect refused"), "{err}");

    let plain = TestServer::start(|_| Reply::Body(200, b"apiVersion: v1\nentries: {}\n".to_vec()));
    let target = format!("{}/index.yaml", plain.url());
    let (tls, ca) = TestServer::start_tls(move |_| Reply::Redirect(target.clone()));
    let ca_file = tmp.path().join("ca.pem");
    std::fs::write(&ca_file, ca).unwrap();
    let mut repos = open(tmp.path(), small());
    let mut cfg = config("r", &tls.url());
    cfg.ca_file = Some(ca_file.display().to_string());
    let err = repos.add(cfg, None, false).await.unwrap_err().to_string();
    assert!(err.contains("a redirect from https to plain http"), "{err}");
    assert!(plain.seen().is_empty(), "the http server was never asked");
}

#[tokio::test]
async fn tls_trusts_the_system_roots_a_repositorys_ca_file_or_nothing_when_asked() {
    let tmp = tempfile::tempdir().unwrap();
    let (tls, ca) =
        TestServer::start_tls(|_| Reply::Body(200, b"apiVersion: v1\nentries: {}\n".to_vec()));
    let err = add_err(tmp.path(), &tls.url(), small()).await;
    assert!(err.to_lowercase().contains("certificate"), "{err}");
    let ca_file = tmp.path().join("ca.pem");
    std::fs::write(&ca_file, ca).unwrap();
    let mut repos = open(tmp.path(), small());
    let mut with_ca = config("with-ca", &tls.url());
    with_ca.ca_file = Some(ca_file.display().to_string());
    assert_eq!(repos.add(with_ca, None, false).await.unwrap(), Some(0));
    let mut insecure = config("insecure", &tls.url());
    insecure.insecure_skip_tls_verify = true;
    assert_eq!(repos.add(insecure, None, false).await.unwrap(), Some(0));
    let mut bad_ca = config("bad-ca", &tls.url());
    std::fs::write(tmp.path().join("junk.pem"), "not a certificate").unwrap();
    bad_ca.ca_file = Some(tmp.path().join("junk.pem").display().to_string());
    let err = repos
        .add(bad_ca, None, false)
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("junk.pem holds no"), "{err}");
}

/// A repository folder served by one server, with its index rewritten by `edit`.
fn served_repo(tmp: &std::path::Path, edit: impl Fn(String) -> String) -> TestServer {
    let repo = repository(tmp, None);
    let index = std::fs::read_to_string(repo.join("index.yaml")).unwrap();
    std::fs::write(repo.join("index.yaml"), edit(index)).unwrap();
    TestServer::serve_dir(&repo)
}

async fn download_err(tmp: &std::path::Path, server: &TestServer, version: &str) -> String {
    let mut repos = open(tmp, small());
    repos
        .add(config("r", &server.url()), None, false)
        .await
        .unwrap();
    let query = Query {
        name: "first-operator",
        operator_version: Some(version),
        ..Query::default()
    };
    let found = repos.resolve(None, &query).await.unwrap();
    repos.download(&found).await.unwrap_err().to_string()
}

#[tokio::test]
async fn a_tampered_archive_is_refused_naming_both_digests_and_the_url() {
    let tmp = tempfile::tempdir().unwrap();
    let server = served_repo(tmp.path(), |i| i);
    let repo = tmp.path().join("repo");
    let archive = repo.join("first-operator-1.27.0_0.2.0.tgz");
    let original = Digest::of(&std::fs::read(&archive).unwrap());
    let other = std::fs::read(repo.join("first-operator-1.27.0_0.3.0.tgz")).unwrap();
    std::fs::write(&archive, &other).unwrap();
    let err = download_err(tmp.path(), &server, "0.2.0").await;
    assert!(err.contains(&original.to_string()), "{err}");
    assert!(err.contains(&Digest::of(&other).to_string()), "{err}");
    assert!(
        err.contains("/first-operator-1.27.0_0.2.0.tgz: sha256 digest"),
        "{err}"
    );
    assert!(err.ends_with("the package was refused"), "{err}");
}

#[tokio::test]
async fn an_index_pointing_at_another_host_or_without_digests_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let elsewhere = served_repo(tmp.path(), |i| {
        i.replace(
            "- first-operator-1.27.0_0.2.0.tgz",
            "- http://evil.invalid/first-operator-1.27.0_0.2.0.tgz",
        )
    });
    let err = download_err(tmp.path(), &elsewhere, "0.2.0").await;
    assert!(
        err.contains("points at another host (evil.invalid)"),
        "{err}"
    );

    let tmp = tempfile::tempdir().unwrap();
    let local = served_repo(tmp.path(), |i| {
        i.replace("- first-operator-1.27.0_0.2.0.tgz", "- file:///etc/passwd")
    });
    let err = download_err(tmp.path(), &local, "0.2.0").await;
    assert!(err.contains("may not point at local files"), "{err}");

    let tmp = tempfile::tempdir().unwrap();
    let undigested = served_repo(tmp.path(), |i| {
        i.lines()
            .filter(|l| !l.trim_start().starts_with("digest:"))
            .collect::<Vec<_>>()
            .join("\n")
    });
    let err = download_err(tmp.path(), &undigested, "0.2.0").await;
    assert!(err.contains("has no digest in the index"), "{err}");
}

#[tokio::test]
async fn an_archive_that_is_not_what_the_index_says_or_escapes_its_folder_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    // The 0.2.0 entry's URL serves the 0.3.0 archive, with the matching digest.
    let repo = repository(tmp.path(), None);
    let newer = std::fs::read(repo.join("first-operator-1.27.0_0.3.0.tgz")).unwrap();
    std::fs::write(repo.join("first-operator-1.27.0_0.2.0.tgz"), &newer).unwrap();
    let index = std::fs::read_to_string(repo.join("index.yaml")).unwrap();
    let index = index.replace(
        &entry_digest(&index, "0.2.0"),
        &Digest::of(&newer).to_string(),
    );
    std::fs::write(repo.join("index.yaml"), index).unwrap();
    let server = TestServer::serve_dir(&repo);
    let err = download_err(tmp.path(), &server, "0.2.0").await;
    assert!(err.contains("the index promised first-operator 0.2.0 (app 1.27.0) but the archive holds first-operator 0.3.0 (app 1.27.0)"), "{err}");

    // An archive with an entry climbing out of the package.
    let tmp = tempfile::tempdir().unwrap();
    let repo = repository(tmp.path(), None);
    let evil = evil_archive();
    std::fs::write(repo.join("first-operator-1.27.0_0.2.0.tgz"), &evil).unwrap();
    let index = std::fs::read_to_string(repo.join("index.yaml")).unwrap();
    let index = index.replace(
        &entry_digest(&index, "0.2.0"),
        &Digest::of(&evil).to_string(),
    );
    std::fs::write(repo.join("index.yaml"), index).unwrap();
    let server = TestServer::serve_dir(&repo);
    let err = download_err(tmp.path(), &server, "0.2.0").await;
    assert!(err.contains("../../etc/cron.d/x"), "{err}");

    // The index lists a requirement on another operator that the archive
    // does not declare (a channel move is judged by the index's).
    let tmp = tempfile::tempdir().unwrap();
    let repo = repository(tmp.path(), None);
    let text = std::fs::read(repo.join("index.yaml")).unwrap();
    let mut index = kudo_repo::IndexFile::parse(&text, "index.yaml", &Limits::default()).unwrap();
    for version in index.entries.get_mut("first-operator").unwrap() {
        version.dependencies = vec![kudo_repo::requirements::IndexDependency {
            name: "zookeeper".into(),
            version: ">=3.6".into(),
            ..Default::default()
        }];
    }
    std::fs::write(repo.join("index.yaml"), index.to_yaml().unwrap()).unwrap();
    let server = TestServer::serve_dir(&repo);
    let err = download_err(tmp.path(), &server, "0.2.0").await;
    assert!(
        err.contains("the index lists the requirements [(\"zookeeper\", \">=3.6\")] for first-operator 0.2.0 (app 1.27.0) but the archive declares []"),
        "{err}"
    );
}

#[tokio::test]
async fn a_package_over_the_size_limit_is_stopped() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = repository(tmp.path(), None);
    let dir = repo.clone();
    let server = TestServer::start(move |seen| {
        if seen.path.ends_with(".tgz") {
            Reply::Endless
        } else {
            file_reply(&dir, &seen.path)
        }
    });
    let err = download_err(tmp.path(), &server, "0.2.0").await;
    assert!(err.contains("the package is larger than 64 KiB"), "{err}");
}

#[tokio::test]
async fn urls_are_tried_in_order_and_credentials_go_only_to_the_repositorys_host() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = repository(tmp.path(), None);
    let mirror = TestServer::serve_dir(&repo);
    let mirror_url = format!("{}/first-operator-1.27.0_0.2.0.tgz", mirror.url());
    let index = std::fs::read_to_string(repo.join("index.yaml")).unwrap();
    let index = index.replace(
        "- first-operator-1.27.0_0.2.0.tgz",
        &format!("- missing.tgz\n    - {mirror_url}"),
    );
    std::fs::write(repo.join("index.yaml"), index).unwrap();
    let main = TestServer::serve_dir(&repo);
    let mut repos = open(tmp.path(), small());
    let mut cfg = config("r", &main.url());
    cfg.allow_other_hosts = true;
    let creds = kudo_repo::config::Credentials::Basic {
        username: "me".into(),
        password: "pw".into(),
    };
    repos.add(cfg, Some(creds), false).await.unwrap();
    let found = repos
        .resolve(
            None,
            &Query {
                name: "first-operator",
                operator_version: Some("0.2.0"),
                ..Query::default()
            },
        )
        .await
        .unwrap();
    let got = repos.download(&found).await.unwrap();
    assert_eq!(got.url, mirror_url);
    assert!(
        main.seen()
            .iter()
            .all(|s| s.header("authorization").is_some()),
        "the repository's host gets them"
    );
    assert!(
        main.seen().iter().any(|s| s.path == "/missing.tgz"),
        "the first URL was tried"
    );
    assert!(
        mirror
            .seen()
            .iter()
            .all(|s| s.header("authorization").is_none()),
        "another host never does"
    );
}

#[tokio::test]
async fn a_refused_connection_is_a_transient_network_error() {
    let tmp = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut repos = open(tmp.path(), small());
    let err = repos
        .add(
            config("r", &format!("http://127.0.0.1:{port}")),
            None,
            false,
        )
        .await
        .unwrap_err();
    assert!(err.is_transient(), "{err}");
    assert!(
        err.to_string()
            .starts_with(&format!("http://127.0.0.1:{port}/index.yaml: ")),
        "{err}"
    );
}

fn entry_digest(index: &str, version: &str) -> String {
    let at = index
        .find(&format!("operatorVersion: \"{version}\""))
        .unwrap();
    let block_start = index[..at].rfind("- ").unwrap();
    let block = &index[block_start..];
    let line = block
        .lines()
        .find(|l| l.trim_start().starts_with("digest:"))
        .unwrap();
    line.trim_start()
        .trim_start_matches("digest:")
        .trim()
        .to_string()
}

fn evil_archive() -> Vec<u8> {
    let mut tar = tar::Builder::new(flate2::write::GzEncoder::new(
        Vec::new(),
        flate2::Compression::default(),
    ));
    let op = b"name: first-operator\noperatorVersion: 0.2.0\nappVersion: 1.27.0\n";
    let mut header = tar::Header::new_gnu();
    header.set_size(op.len() as u64);
    header.set_mode(0o644);
    header.set_cksum();
    tar.append_data(&mut header, "operator.yaml", &op[..])
        .unwrap();
    let mut header = tar::Header::new_gnu();
    let evil = b"* * * * * root sh\n";
    header.set_size(evil.len() as u64);
    header.set_mode(0o644);
    {
        let name = b"../../etc/cron.d/x";
        header.as_old_mut().name[..name.len()].copy_from_slice(name);
    }
    header.set_cksum();
    tar.append(&header, &evil[..]).unwrap();
    tar.into_inner().unwrap().finish().unwrap()
}

#[tokio::test]
async fn a_registry_trickling_its_token_ends_on_the_total_deadline() {
    let server = TestServer::start(|seen| {
        if seen.path.starts_with("/token") {
            return Reply::Trickle(vec![b' '; 200], Duration::from_millis(100));
        }
        let host = seen.header("host").unwrap_or_default().to_string();
        Reply::WithHeaders(
            401,
            vec![(
                "WWW-Authenticate".into(),
                format!("Bearer realm=\"http://{host}/token\",service=\"registry\""),
            )],
            Vec::new(),
        )
    });
    let registry = kudo_repo_client::Registry {
        transport: kudo_repo_client::http::Transport {
            limits: small(),
            ..Default::default()
        },
        plain_http: true,
        credentials: None,
    };
    let base =
        kudo_repo_client::OciRef::parse(&format!("oci://{}/ops/first-operator", server.addr))
            .unwrap();
    let err = registry
        .pull(&base, Some("0.2.0"), false)
        .await
        .unwrap_err()
        .to_string();
    // The token request gets what is left of the 2 s: whichever timer
    // speaks, the exchange ends on the deadline.
    assert!(
        err.contains("authentication took longer than 2s")
            || err.contains("the token did not arrive within"),
        "{err}"
    );
}

fn token_registry(
    limits: Limits,
    plain_http: bool,
    ca: Option<String>,
) -> kudo_repo_client::Registry {
    kudo_repo_client::Registry {
        transport: kudo_repo_client::http::Transport {
            limits,
            ca_pem: ca.map(String::into_bytes),
            ..Default::default()
        },
        plain_http,
        credentials: Some(kudo_repo::config::Credentials::Basic {
            username: "alice".into(),
            password: "s3cret".into(),
        }),
    }
}

/// Pulls first-operator 0.2.0 from a plain-http `server` with basic
/// credentials; the error.
async fn pull_err(server: &TestServer) -> String {
    let base =
        kudo_repo_client::OciRef::parse(&format!("oci://{}/ops/first-operator", server.addr))
            .unwrap();
    token_registry(small(), true, None)
        .pull(&base, Some("0.2.0"), false)
        .await
        .unwrap_err()
        .to_string()
}

/// A registry whose `/v2/` asks for a Bearer token from `realm`.
fn challenge(realm: String) -> Reply {
    Reply::WithHeaders(
        401,
        vec![(
            "WWW-Authenticate".into(),
            format!("Bearer realm=\"{realm}\",service=\"registry\""),
        )],
        Vec::new(),
    )
}

#[tokio::test]
async fn an_https_registry_naming_a_plain_http_token_realm_gets_no_credentials() {
    let realm = TestServer::start(|_| Reply::Body(200, br#"{"token":"t"}"#.to_vec()));
    let realm_url = format!("{}/token", realm.url());
    let (registry, ca) = TestServer::start_tls(move |_| challenge(realm_url.clone()));
    let base =
        kudo_repo_client::OciRef::parse(&format!("oci://{}/ops/first-operator", registry.addr))
            .unwrap();
    let err = token_registry(small(), false, Some(ca))
        .pull(&base, Some("0.2.0"), false)
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("only https is followed"), "{err}");
    assert!(
        realm.seen().is_empty(),
        "the http realm was asked: {:?}",
        realm.seen()
    );
}

#[tokio::test]
async fn a_push_to_an_https_registry_naming_a_plain_http_token_realm_sends_no_credentials() {
    let tmp = tempfile::tempdir().unwrap();
    let created = kudo_repo::packages::create(&first_operator_at("0.2.0", tmp.path())).unwrap();
    let realm = TestServer::start(|_| Reply::Body(200, br#"{"token":"t"}"#.to_vec()));
    let realm_url = format!("{}/token", realm.url());
    let (registry, ca) = TestServer::start_tls(move |_| challenge(realm_url.clone()));
    let err = token_registry(small(), false, Some(ca))
        .push(
            &created.bytes,
            &created.file_name,
            &format!("oci://{}/ops", registry.addr),
        )
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("only https is followed"), "{err}");
    assert!(
        realm.seen().is_empty(),
        "the http realm was asked: {:?}",
        realm.seen()
    );
    // Nothing but the probe reached the registry: no blob, no manifest.
    let paths: Vec<String> = registry.seen().into_iter().map(|s| s.path).collect();
    assert_eq!(paths, ["/v2/"]);
}

#[tokio::test]
async fn a_token_answer_past_its_limit_is_refused() {
    let server = TestServer::start(|seen| {
        if seen.path.starts_with("/token") {
            return Reply::Endless;
        }
        let host = seen.header("host").unwrap_or_default().to_string();
        challenge(format!("http://{host}/token"))
    });
    let err = pull_err(&server).await;
    assert!(err.contains("token") && err.contains("64 KiB"), "{err}");
}

#[tokio::test]
async fn the_token_is_asked_for_with_the_credentials_and_sent_with_each_pull_request() {
    let server = TestServer::start(|seen| {
        if seen.path.starts_with("/token") {
            return Reply::Body(200, br#"{"access_token":"abc"}"#.to_vec());
        }
        if seen.path == "/v2/" {
            let host = seen.header("host").unwrap_or_default().to_string();
            return challenge(format!("http://{host}/token"));
        }
        Reply::Body(404, Vec::new())
    });
    let err = pull_err(&server).await;
    let seen = server.seen();
    let paths: Vec<&str> = seen.iter().map(|s| s.path.as_str()).collect();
    assert!(err.contains("404"), "{err} after {paths:?}");
    let token = seen.iter().find(|s| s.path.starts_with("/token")).unwrap();
    assert!(
        token
            .path
            .contains("scope=repository%3Aops%2Ffirst-operator%3Apull"),
        "{}",
        token.path
    );
    assert!(token.path.contains("service=registry"), "{}", token.path);
    assert!(
        token
            .header("authorization")
            .is_some_and(|a| a.starts_with("Basic "))
    );
    let manifest = seen
        .iter()
        .find(|s| s.path.contains("/manifests/"))
        .unwrap_or_else(|| panic!("{paths:?}: {err}"));
    assert_eq!(manifest.header("authorization"), Some("Bearer abc"));
}
