//! `kudo-manager dev`: the sandbox API server, the CRDs, the controller and
//! the webhook in one process, with a kubeconfig for kubectl.

use std::net::SocketAddr;
use std::path::PathBuf;

use kudo_sandbox::Sandbox;
use tokio_util::sync::CancellationToken;

use crate::controller::ControllerConfig;
use crate::install::{InstanceRequest, install_crds, install_package};
use crate::manager::{self, ManagerOptions, WebhookMode};
use crate::{Error, Result};

/// Settings of [`run`].
#[derive(Debug, Clone)]
pub struct DevOptions {
    /// Where to write the kubeconfig.
    pub kubeconfig_out: PathBuf,
    /// Admin server address.
    pub admin_addr: SocketAddr,
    /// Sandbox port (0 picks one).
    pub port: u16,
    /// Packages to install (Operator + OperatorVersion + an Instance each).
    pub install: Vec<PathBuf>,
    /// Serve the admission webhook.
    pub webhook: bool,
    /// Engine settings (default maintenance windows, automatic suppression).
    pub engine: kudo_engine::EngineConfig,
    /// Render budgets.
    pub render_limits: kudo_package::render::RenderLimits,
    /// Longest a render may take (None: 10 s).
    pub render_deadline: Option<std::time::Duration>,
    /// Whom Instances that name no ServiceAccount write their objects as.
    pub write_as: crate::identity::WriteAs,
}

/// Run until `shutdown`.
pub async fn run(options: DevOptions, shutdown: CancellationToken) -> Result<()> {
    let sandbox = Sandbox::builder()
        .port(options.port)
        .start()
        .await
        .map_err(|e| Error::Server(format!("starting the sandbox API server: {e}")))?;
    let client = sandbox
        .client()
        .map_err(|e| Error::Server(format!("sandbox client: {e}")))?;
    install_crds(&client).await?;
    sandbox
        .write_kubeconfig(&options.kubeconfig_out)
        .map_err(|e| Error::Server(format!("writing the kubeconfig: {e}")))?;
    println!("kudo-manager dev: API server at {}", sandbox.url());
    println!("kubeconfig: {}", options.kubeconfig_out.display());
    println!("  export KUBECONFIG={}", options.kubeconfig_out.display());

    let manager_options = ManagerOptions {
        admin_addr: options.admin_addr,
        leader_election: None,
        webhook: if options.webhook {
            // A private directory of this process inside the temp dir: two
            // dev managers never share (and overwrite) certificates.
            WebhookMode::Local {
                port: 0,
                cert_dir: std::env::temp_dir(),
            }
        } else {
            WebhookMode::Off
        },
        controller: ControllerConfig {
            engine: options.engine.clone(),
            render_limits: options.render_limits,
            render_deadline: options.render_deadline,
            write_as: options.write_as.clone(),
            ..ControllerConfig::default()
        },
    };
    let manager = tokio::spawn(manager::run(
        client.clone(),
        manager_options,
        shutdown.clone(),
    ));
    for package in &options.install {
        let installed = install_package(
            &client,
            package,
            "default",
            Some(InstanceRequest::default()),
        )
        .await;
        match installed {
            Ok(i) => println!(
                "installed {} as Instance default/{}",
                i.operator_version, i.instance
            ),
            Err(e) => eprintln!("kudo-manager dev: {e}"),
        }
    }
    println!("ready; press Ctrl-C to stop");
    let result = manager
        .await
        .map_err(|e| Error::Server(format!("manager task: {e}")))?;
    sandbox.stop().await;
    result
}
