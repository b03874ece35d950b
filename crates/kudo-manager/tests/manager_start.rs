//! The whole manager (`manager::run`) against kudo-sandbox at start-up:
//! leader election in a namespace that does not exist, and two managers
//! whose local webhooks are given the same certificate folder.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "support/tls_client.rs"]
mod tls_client;

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
use kube::Api;
use kudo_certs::LOCAL_WEBHOOK_CONFIGURATION_NAME;
use kudo_manager::controller::ControllerConfig;
use kudo_manager::leader::LeaderConfig;
use kudo_manager::manager::{self, ManagerOptions, WebhookMode};
use kudo_sandbox::Sandbox;
use rustls::pki_types::ServerName;
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_util::sync::CancellationToken;

fn options(leader_election: Option<LeaderConfig>, webhook: WebhookMode) -> ManagerOptions {
    ManagerOptions {
        admin_addr: "127.0.0.1:0".parse().unwrap(),
        leader_election,
        webhook,
        controller: ControllerConfig::default(),
    }
}

#[tokio::test]
async fn a_missing_leader_election_namespace_stops_the_manager_at_once_naming_it() {
    let sandbox = Sandbox::builder().start().await.unwrap();
    let client = sandbox.client().unwrap();
    kudo_manager::install::install_crds(&client).await.unwrap();
    let shutdown = CancellationToken::new();
    let run = manager::run(
        client,
        options(
            Some(LeaderConfig::new("no-such-namespace")),
            WebhookMode::Off,
        ),
        shutdown.clone(),
    );
    let ended = tokio::time::timeout(Duration::from_secs(20), run).await;
    shutdown.cancel();
    let err = ended
        .expect("the manager should stop instead of waiting for leadership")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("leader-election namespace no-such-namespace does not exist"),
        "{err}"
    );
    assert!(err.contains("--leader-election-namespace"), "{err}");
    sandbox.stop().await;
}

/// The URL port and caBundle the manager registered in `sandbox`.
async fn registered_webhook(client: &kube::Client) -> (SocketAddr, String) {
    let api: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
    for _ in 0..100 {
        if let Some(config) = api.get_opt(LOCAL_WEBHOOK_CONFIGURATION_NAME).await.unwrap() {
            let hook = &config.webhooks.unwrap()[0];
            let url = hook.client_config.url.clone().unwrap();
            let port: u16 = url
                .trim_start_matches("https://127.0.0.1:")
                .split('/')
                .next()
                .unwrap()
                .parse()
                .unwrap();
            let ca = hook.client_config.ca_bundle.clone().unwrap();
            let ca = String::from_utf8(ca.0).unwrap();
            return (SocketAddr::from(([127, 0, 0, 1], port)), ca);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the local webhook was not registered in time");
}

async fn handshake(addr: SocketAddr, ca_pem: &str) -> Result<(), String> {
    let tcp = TcpStream::connect(addr).await.map_err(|e| e.to_string())?;
    TlsConnector::from(tls_client::client_config(ca_pem, tls_client::ALL))
        .connect(ServerName::try_from("127.0.0.1").unwrap(), tcp)
        .await
        .map(drop)
        .map_err(|e| format!("handshake: {e}"))
}

struct Started {
    sandbox: Sandbox,
    client: kube::Client,
    shutdown: CancellationToken,
    task: tokio::task::JoinHandle<kudo_manager::Result<()>>,
}

async fn start_dev_like(cert_dir: &Path) -> Started {
    let sandbox = Sandbox::builder().start().await.unwrap();
    let client = sandbox.client().unwrap();
    kudo_manager::install::install_crds(&client).await.unwrap();
    let shutdown = CancellationToken::new();
    let task = tokio::spawn(manager::run(
        client.clone(),
        options(
            None,
            WebhookMode::Local {
                port: 0,
                cert_dir: cert_dir.to_path_buf(),
            },
        ),
        shutdown.clone(),
    ));
    Started {
        sandbox,
        client,
        shutdown,
        task,
    }
}

/// `kudo-manager dev` twice with kubeconfigs in one folder: both webhooks
/// keep serving the certificate their own registration trusts, and each
/// process's certificate directory is gone once it stopped.
#[tokio::test]
async fn two_managers_given_one_cert_folder_keep_their_own_certificates() {
    let shared = tempfile::tempdir().unwrap();
    let first = start_dev_like(shared.path()).await;
    let (first_addr, first_ca) = registered_webhook(&first.client).await;
    let second = start_dev_like(shared.path()).await;
    let (second_addr, second_ca) = registered_webhook(&second.client).await;
    assert_ne!(first_ca, second_ca);

    handshake(first_addr, &first_ca).await.unwrap();
    handshake(second_addr, &second_ca).await.unwrap();

    let dirs = std::fs::read_dir(shared.path()).unwrap().count();
    assert_eq!(dirs, 2, "one private directory per manager");
    for started in [first, second] {
        started.shutdown.cancel();
        started.task.await.unwrap().unwrap();
        started.sandbox.stop().await;
    }
    assert_eq!(
        std::fs::read_dir(shared.path()).unwrap().count(),
        0,
        "certificate directories are removed on shutdown"
    );
}

/// A `tls.key` symlink planted where the local webhook writes its key is
/// refused, not followed: the file it points to keeps its content.
#[cfg(unix)]
#[test]
fn a_planted_tls_key_symlink_is_refused_and_its_target_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let victim = dir.path().join("authorized_keys");
    std::fs::write(&victim, "ssh-ed25519 AAAA precious\n").unwrap();
    std::os::unix::fs::symlink(&victim, dir.path().join("tls.key")).unwrap();
    let err = kudo_manager::webhook::write_local_tls(dir.path()).unwrap_err();
    assert!(err.to_string().contains("tls.key"), "{err}");
    assert_eq!(
        std::fs::read_to_string(&victim).unwrap(),
        "ssh-ed25519 AAAA precious\n"
    );
}
