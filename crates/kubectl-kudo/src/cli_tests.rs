//! The command tree's own checks and KUDO's flag spellings.

use super::*;
use clap::CommandFactory;

#[test]
fn command_tree_is_consistent() {
    Cli::command().debug_assert();
}

#[test]
fn kudo_wait_time_in_seconds_is_accepted() {
    for command in [
        &[
            "kubectl-kudo",
            "update",
            "--instance",
            "i",
            "-p",
            "A=1",
            "--wait-time",
            "600",
        ][..],
        &[
            "kubectl-kudo",
            "uninstall",
            "--instance",
            "i",
            "--wait-time",
            "600",
        ][..],
    ] {
        let cli = Cli::try_parse_from(command).unwrap();
        let timeout = match cli.command {
            Command::Update(args) => args.wait.wait_timeout,
            Command::Uninstall(args) => args.wait_timeout,
            other => panic!("parsed as {other:?}"),
        };
        assert_eq!(timeout, Duration::from_secs(600));
    }
}
