//! `kudo-manager dev`: the sandbox API server, the CRDs, the controller and
//! the webhook in one process, with a kubeconfig for kubectl.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use kudo_sandbox::Sandbox;
use tokio_util::sync::CancellationToken;

use crate::admin::Readiness;
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

/// How long the manager may take to serve before `dev` gives up on it.
const START_TIMEOUT: Duration = Duration::from_secs(120);

/// Run until `shutdown`. The kubeconfig is written, and `ready` printed,
/// only once the admin server, the webhook and the controller serve; a
/// manager that fails before that (a port taken) ends `dev` with its error
/// and leaves no kubeconfig behind. The kubeconfig is removed on exit.
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

    let webhook = if options.webhook {
        // A private directory of this process inside the temp dir: two
        // dev managers never share (and overwrite) certificates.
        WebhookMode::Local {
            port: 0,
            cert_dir: std::env::temp_dir(),
        }
    } else {
        WebhookMode::Off
    };
    let ready = Readiness::new(options.webhook);
    let manager_options = ManagerOptions {
        admin_addr: options.admin_addr,
        leader_election: None,
        webhook,
        controller: ControllerConfig {
            engine: options.engine.clone(),
            render_limits: options.render_limits,
            render_deadline: options.render_deadline,
            write_as: options.write_as.clone(),
            ..ControllerConfig::default()
        },
    };
    let mut manager = tokio::spawn(manager::run_observed(
        client.clone(),
        manager_options,
        shutdown.clone(),
        ready.clone(),
    ));
    let started = tokio::time::Instant::now();
    let admin = loop {
        if let (true, Some(addr)) = (ready.all_serving(), ready.admin_addr()) {
            break addr;
        }
        tokio::select! {
            ended = &mut manager => {
                sandbox.stop().await;
                return match ended {
                    Ok(Err(e)) => Err(e),
                    Ok(Ok(())) => Err(Error::Server("the manager stopped before it served".into())),
                    Err(e) => Err(Error::Server(format!("manager task: {e}"))),
                };
            }
            () = tokio::time::sleep(Duration::from_millis(50)) => {}
        }
        if started.elapsed() > START_TIMEOUT {
            shutdown.cancel();
            let _ = manager.await;
            sandbox.stop().await;
            return Err(Error::Server(format!(
                "the manager did not serve within {}s",
                START_TIMEOUT.as_secs()
            )));
        }
    };

    sandbox
        .write_kubeconfig(&options.kubeconfig_out)
        .map_err(|e| Error::Server(format!("writing the kubeconfig: {e}")))?;
    println!("kudo-manager dev: API server at {}", sandbox.url());
    println!("admin server (/healthz, /readyz, /metrics): http://{admin}");
    println!("kubeconfig: {}", options.kubeconfig_out.display());
    println!("  export KUBECONFIG={}", options.kubeconfig_out.display());
    if let Some(dir) = plugin_dir_off_path() {
        println!(
            "  export PATH={}:$PATH    # kubectl-kudo, so that `kubectl kudo` works",
            dir.display()
        );
    }
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
        .map_err(|e| Error::Server(format!("manager task: {e}")));
    // The kubeconfig names a server that stops now.
    let _ = std::fs::remove_file(&options.kubeconfig_out);
    sandbox.stop().await;
    result?
}

/// The directory of this binary when `kubectl-kudo` lies beside it and is
/// not on `PATH` (a cargo build): `kubectl kudo` needs it there.
fn plugin_dir_off_path() -> Option<PathBuf> {
    let dir = std::env::current_exe().ok()?.parent()?.to_path_buf();
    if !dir.join("kubectl-kudo").is_file() {
        return None;
    }
    let on_path = std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|p| p.join("kubectl-kudo").is_file()));
    (!on_path).then_some(dir)
}
