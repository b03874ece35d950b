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

/// `print!` that ends the process quietly when stdout's reader is gone.
macro_rules! out {
    ($($arg:tt)*) => { $crate::output::write_stdout(format_args!($($arg)*)) };
}

/// `println!` that ends the process quietly when stdout's reader is gone.
macro_rules! outln {
    () => { $crate::output::write_stdout(format_args!("\n")) };
    ($($arg:tt)*) => { $crate::output::write_stdout(format_args!("{}\n", format_args!($($arg)*))) };
}

/// `eprintln!` that ends the process quietly when stderr's reader is gone.
macro_rules! errln {
    ($($arg:tt)*) => { $crate::output::write_stderr(format_args!("{}\n", format_args!($($arg)*))) };
}

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
    let args: Vec<OsString> = args.into_iter().map(Into::into).collect();
    // kubectl's plugin completion protocol, read before any flag is parsed.
    if args
        .get(1)
        .is_some_and(|a| a == commands::completion::PROTOCOL_COMMAND)
    {
        let words: Vec<String> = args
            .iter()
            .skip(2)
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        commands::completion::complete(&words);
        return 0;
    }
    let args = compat::counted_verbosity(args);
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            // Help and version are not errors; clap exits usage errors with 2.
            let _ = e.print();
            return e.exit_code();
        }
    };
    init_logging(cli.global.verbosity);
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            errln!("Error: cannot start the async runtime: {e}");
            return 1;
        }
    };
    match runtime.block_on(commands::run(cli)) {
        Ok(()) => 0,
        Err(e) => {
            errln!("Error: {e}");
            e.exit_code()
        }
    }
}

/// The log filter of a kubectl `-v` level: without `-v` only kubectl-kudo's
/// own warnings (a failed request is reported as the command's error, not
/// as a library's log line), then more of it, then the client's requests.
fn log_filter(level: u8) -> &'static str {
    match level {
        0 => "off,kubectl_kudo=warn",
        1..=3 => "warn,kubectl_kudo=info",
        4..=5 => "info,kubectl_kudo=debug",
        6..=7 => "debug",
        _ => "trace",
    }
}

fn init_logging(level: u8) {
    let filter = tracing_subscriber::EnvFilter::try_from_env("KUDO_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(log_filter(level)));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(
            std::io::IsTerminal::is_terminal(&std::io::stderr())
                && std::env::var_os("NO_COLOR").is_none(),
        )
        .with_writer(std::io::stderr)
        .try_init();
}
