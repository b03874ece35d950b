//! `kudo-sandbox`: runs the sandbox API server until Ctrl-C and writes a
//! kubeconfig for kubectl.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;

/// An in-process Kubernetes API server for tests and kubectl walkthroughs.
#[derive(Debug, Parser)]
#[command(name = "kudo-sandbox", version)]
struct Args {
    /// Port on 127.0.0.1 (0 picks a free port).
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Where to write a kubeconfig pointing at the sandbox.
    #[arg(long)]
    kubeconfig_out: Option<PathBuf>,
    /// Keep the store in this JSON file across restarts.
    #[arg(long)]
    persist: Option<PathBuf>,
    /// Delay before simulated workloads become ready, in milliseconds.
    #[arg(long, default_value_t = 200)]
    ready_delay_ms: u64,
    /// Simulate pods for StatefulSets and Deployments (`--simulate-pods false` turns it off).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    simulate_pods: bool,
}

#[tokio::main]
async fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
    let args = Args::parse();
    let mut builder = kudo_sandbox::Sandbox::builder()
        .port(args.port)
        .ready_delay(Duration::from_millis(args.ready_delay_ms))
        .simulate_pods(args.simulate_pods);
    if let Some(p) = &args.persist {
        builder = builder.persist_to(p);
    }
    let sandbox = match builder.start().await {
        Ok(s) => s,
        Err(e) => {
            eprintln!("kudo-sandbox: {e}");
            return ExitCode::FAILURE;
        }
    };
    if let Some(path) = &args.kubeconfig_out {
        if let Err(e) = sandbox.write_kubeconfig(path) {
            eprintln!("kudo-sandbox: {e}");
            return ExitCode::FAILURE;
        }
        println!("kubeconfig written to {}", path.display());
    }
    println!("kudo-sandbox listening on {}", sandbox.url());
    sandbox.run_until_shutdown().await;
    ExitCode::SUCCESS
}
