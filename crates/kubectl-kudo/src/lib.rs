//! # kubectl-kudo
//!
//! The `kubectl kudo` plugin: installs operator packages, updates,
//! upgrades and uninstalls Instances, shows and operates plans (status,
//! history, trigger, pause, resume, continue, force-complete, restart,
//! cancel), suppresses and rolls back, schedules node maintenance
//! (`maintenance schedule|status|down|up|cancel`), installs kudo-rs itself
//! (`init`), and verifies and renders packages without a cluster.
//!
//! The CLI writes only Instance spec, with JSON merge patches as KUDO's CLI
//! did, and the MaintenanceSchedule's spec (checked first as the webhook
//! checks it); the admission webhook decides, and its refusal is printed as
//! is.
//!
//! Layout: `cli` (clap tree), pure modules that decide or format
//! (`params`, `patch`, `plan_tree`, `history`, `wait::assess`,
//! `init::manifests`), and `commands` doing the IO.

mod cli;
mod commands;
mod compat;
mod context;
mod duration;
mod error;
pub mod history;
mod init;
mod manager_pods;
pub mod output;
mod params;
mod patch;
pub mod plan_tree;
mod style;
pub mod wait;

use std::ffi::OsString;

use clap::Parser;

pub use cli::Cli;
pub use error::CliError;

/// Parses `args` (program name first), runs the command and returns the
/// process exit code. Errors are printed on stderr.
pub fn main_with_args<I, T>(args: I) -> i32
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let args = compat::numeric_verbosity(args.into_iter().map(Into::into).collect());
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            // Help and version are not errors; clap exits usage errors with 2.
            let _ = e.print();
            return e.exit_code();
        }
    };
    init_logging(cli.global.verbose);
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("Error: cannot start the async runtime: {e}");
            return 1;
        }
    };
    match runtime.block_on(commands::run(cli)) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("Error: {e}");
            e.exit_code()
        }
    }
}

fn init_logging(verbosity: u8) {
    let level = match verbosity {
        0 => "warn",
        1 => "info",
        2 => "debug",
        _ => "trace",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("KUDO_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(level));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}
