//! The `kudo-manager` binary: `run` against a cluster, `dev` on the
//! embedded sandbox.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use kudo_manager::controller::ControllerConfig;
use kudo_manager::identity::WriteAs;
use kudo_manager::leader::{LeaderConfig, LeaderFlags};
use kudo_manager::logging::{self, LogFormat};
use kudo_manager::manager::{self, ManagerOptions, WebhookMode};
use kudo_manager::settings::{EngineFlags, RenderFlags};

/// mimalloc: the webhook and the controller allocate many small, short-lived
/// objects across worker threads, where glibc malloc is slow.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Where the mounted webhook Secret is read in a cluster (`deploy/manager.yaml`).
const IN_CLUSTER_CERT_DIR: &str = "/tmp/cert";

/// kudo-rs manager: runs the plans of KUDO operator packages.
#[derive(Parser, Debug)]
#[command(name = "kudo-manager", version, about)]
struct Cli {
    /// Log format.
    #[arg(long, value_enum, default_value_t = LogFormat::Text, global = true)]
    log_format: LogFormat,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run the controller (and webhook) against the cluster of --kubeconfig/--context, KUBECONFIG or the in-cluster config.
    Run(RunArgs),
    /// Start the embedded sandbox API server, the controller and the webhook in one process.
    Dev(DevArgs),
}

#[derive(clap::Args, Debug)]
struct RunArgs {
    /// Kubeconfig file (default: KUBECONFIG, ~/.kube/config, else the in-cluster config).
    #[arg(long, value_name = "PATH")]
    kubeconfig: Option<PathBuf>,
    /// Kubeconfig context (default: the file's current context).
    #[arg(long, value_name = "NAME")]
    context: Option<String>,
    /// Admin server address (/healthz, /readyz, /metrics).
    #[arg(long, default_value = "0.0.0.0:8080")]
    admin_addr: SocketAddr,
    /// Serve the webhook on 127.0.0.1 with a self-made certificate, registered by URL.
    #[arg(long)]
    local_webhook: bool,
    /// Do not serve the admission webhook.
    #[arg(long, conflicts_with = "local_webhook")]
    no_webhook: bool,
    /// Webhook port.
    #[arg(long, default_value_t = 9443)]
    webhook_port: u16,
    /// Directory with tls.crt and tls.key for the webhook [default: /tmp/cert]. With
    /// --local-webhook: where the process makes its own private certificate directory
    /// [default: the system temp dir].
    #[arg(long, env = "KUDO_CERT_DIR", value_name = "DIR")]
    webhook_cert_dir: Option<PathBuf>,
    /// Webhook connections open at once (TLS handshakes included); a connection beyond
    /// them is closed right after it is accepted. In-cluster webhook only.
    #[arg(long, value_name = "N", default_value_t = 512, value_parser = clap::value_parser!(u32).range(1..))]
    webhook_max_connections: u32,
    /// Serve only webhook clients presenting a certificate signed by the CA in FILE (PEM):
    /// the API server, given a client certificate through its AdmissionConfiguration.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["local_webhook", "no_webhook"])]
    webhook_client_ca: Option<PathBuf>,
    /// Namespace of the leader-election Lease and of the render book key.
    #[arg(long, env = "POD_NAMESPACE", default_value = "kudo-system")]
    leader_election_namespace: String,
    /// Secret (in the manager's namespace) with the key that signs render
    /// books; made on first start.
    #[arg(long, value_name = "NAME", default_value = "kudo-manager-render-key")]
    render_book_key_secret: String,
    /// Skip leader election (only safe with a single replica).
    #[arg(long)]
    no_leader_election: bool,
    #[command(flatten)]
    leader: LeaderFlags,
    /// Reconciles run at the same time (0 = unbounded).
    #[arg(long, default_value_t = 16)]
    concurrency: u16,
    #[command(flatten)]
    write_as: WriteAsFlags,
    #[command(flatten)]
    engine: EngineFlags,
    #[command(flatten)]
    render: RenderFlags,
}

/// Whom Instances that name no ServiceAccount write their objects as.
#[derive(clap::Args, Debug)]
struct WriteAsFlags {
    /// Apply the objects of Instances without spec.serviceAccountName as this
    /// ServiceAccount of their namespace, which an administrator makes and grants
    /// [default: kudo-instance, made by the manager and bound to the kudo-instance
    /// ClusterRole in each namespace]
    #[arg(long, value_name = "NAME", conflicts_with = "manager_writes_as_itself")]
    default_service_account: Option<String>,
    /// Apply the objects of Instances without spec.serviceAccountName as the manager
    /// itself: anyone who may write an Instance or OperatorVersion can then create
    /// whatever the manager may (KUDO's behaviour)
    #[arg(long)]
    manager_writes_as_itself: bool,
}

impl WriteAsFlags {
    fn write_as(&self) -> kudo_manager::Result<WriteAs> {
        if self.manager_writes_as_itself {
            return Ok(WriteAs::Manager);
        }
        let Some(name) = &self.default_service_account else {
            return Ok(WriteAs::default());
        };
        kudo_manager::identity::service_account_of(None, Some(name))
            .map_err(|e| kudo_manager::Error::Config(format!("--default-service-account: {e}")))?;
        Ok(WriteAs::Account {
            name: name.clone(),
            create: false,
        })
    }
}

/// Read only by builds with the `dev` feature.
#[derive(clap::Args, Debug)]
#[cfg_attr(not(feature = "dev"), allow(dead_code))]
struct DevArgs {
    /// Where to write the kubeconfig for kubectl and kubectl-kudo.
    #[arg(long)]
    kubeconfig_out: Option<PathBuf>,
    /// Admin server address (port 0 picks a free one; the address is printed).
    #[arg(long, default_value = "127.0.0.1:0")]
    admin_addr: SocketAddr,
    /// Port of the sandbox API server (0 picks a free one).
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Do not serve the admission webhook.
    #[arg(long)]
    no_webhook: bool,
    /// Install this package directory (Operator, OperatorVersion and an Instance) at start.
    #[arg(long, hide = true)]
    install_package: Vec<PathBuf>,
    #[command(flatten)]
    write_as: WriteAsFlags,
    #[command(flatten)]
    engine: EngineFlags,
    #[command(flatten)]
    render: RenderFlags,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    logging::init(cli.log_format);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("kudo-manager: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async move {
        let shutdown = manager::shutdown_on_signals();
        match cli.command {
            Command::Run(args) => run(args, shutdown).await,
            Command::Dev(args) => dev(args, shutdown).await,
        }
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!(error = %e, "kudo-manager failed");
            eprintln!("kudo-manager: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(
    args: RunArgs,
    shutdown: tokio_util::sync::CancellationToken,
) -> kudo_manager::Result<()> {
    let engine = args.engine.engine_config()?;
    let timing = args.leader.timing()?;
    let write_as = args.write_as.write_as()?;
    let client =
        kudo_manager::kubeconfig::client(args.kubeconfig.as_deref(), args.context.as_deref())
            .await?;
    let webhook = if args.no_webhook {
        WebhookMode::Off
    } else if args.local_webhook {
        WebhookMode::Local {
            port: args.webhook_port,
            cert_dir: args.webhook_cert_dir.unwrap_or_else(std::env::temp_dir),
        }
    } else {
        WebhookMode::InCluster {
            addr: SocketAddr::from(([0, 0, 0, 0], args.webhook_port)),
            cert_dir: args
                .webhook_cert_dir
                .unwrap_or_else(|| PathBuf::from(IN_CLUSTER_CERT_DIR)),
            client_ca: args.webhook_client_ca,
            max_connections: usize::try_from(args.webhook_max_connections)
                .unwrap_or(kudo_manager::webhook::DEFAULT_MAX_CONNECTIONS),
        }
    };
    let key_namespace = args.leader_election_namespace.clone();
    let options = ManagerOptions {
        admin_addr: args.admin_addr,
        leader_election: (!args.no_leader_election).then(|| LeaderConfig {
            timing,
            ..LeaderConfig::new(args.leader_election_namespace)
        }),
        webhook,
        controller: ControllerConfig {
            engine,
            concurrency: args.concurrency,
            write_as,
            render_limits: args.render.limits(),
            render_deadline: Some(args.render.deadline()),
            book_key_secret: Some((key_namespace, args.render_book_key_secret)),
            clock: kudo_manager::clock::Clock::system(),
            secrets_namespace: None,
        },
    };
    manager::run(client, options, shutdown).await
}

#[cfg(feature = "dev")]
async fn dev(
    args: DevArgs,
    shutdown: tokio_util::sync::CancellationToken,
) -> kudo_manager::Result<()> {
    let engine = args.engine.engine_config()?;
    let kubeconfig_out = args
        .kubeconfig_out
        .unwrap_or_else(|| std::env::temp_dir().join("kudo-dev").join("kubeconfig"));
    let options = kudo_manager::dev::DevOptions {
        kubeconfig_out,
        admin_addr: args.admin_addr,
        port: args.port,
        install: args.install_package,
        webhook: !args.no_webhook,
        engine,
        render_limits: args.render.limits(),
        render_deadline: Some(args.render.deadline()),
        write_as: args.write_as.write_as()?,
    };
    kudo_manager::dev::run(options, shutdown).await
}

/// A production build (`--no-default-features`) has no API server of its own.
#[cfg(not(feature = "dev"))]
async fn dev(
    _args: DevArgs,
    _shutdown: tokio_util::sync::CancellationToken,
) -> kudo_manager::Result<()> {
    Err(kudo_manager::Error::Config(
        "this kudo-manager build has no dev server (it was built without the `dev` feature); \
         run `kudo-manager run` against a cluster, or build with the default features \
         (`cargo run -p kudo-manager -- dev`, `make run`)"
            .to_string(),
    ))
}
