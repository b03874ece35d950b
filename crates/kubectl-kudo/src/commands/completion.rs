//! `completion bash|zsh|fish`.

use clap::CommandFactory;
use clap_complete::Shell;

use crate::cli::{Cli, CompletionArgs, CompletionShell};
use crate::error::Result;

/// Prints the completion script for the shell on stdout.
pub fn run(args: &CompletionArgs) -> Result<()> {
    let shell = match args.shell {
        CompletionShell::Bash => Shell::Bash,
        CompletionShell::Zsh => Shell::Zsh,
        CompletionShell::Fish => Shell::Fish,
    };
    let mut command = Cli::command();
    clap_complete::generate(shell, &mut command, "kubectl-kudo", &mut std::io::stdout());
    Ok(())
}
