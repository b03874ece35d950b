//! `maintenance ...`: the arguments of node maintenance (kept apart from
//! `cli.rs` so that file stays readable).

use std::time::Duration;

use clap::{Args, Subcommand};

use super::parse_duration;

/// `maintenance ...`.
#[derive(Debug, Subcommand)]
pub enum MaintenanceCommand {
    /// Add a maintenance window for nodes: new pods avoid them at once and
    /// the Instances with pods on them are told
    Schedule(MaintenanceScheduleArgs),
    /// Show scheduled nodes, their modes and windows, the affected Instances and their
    /// answers (-o yaml|json)
    Status,
    /// Cordon and drain scheduled nodes (through the Eviction API, respecting
    /// PodDisruptionBudgets)
    Down(MaintenanceDownArgs),
    /// Bring Down nodes back: uncordon them and take them out of the schedule
    Up(MaintenanceNodesArgs),
    /// Take nodes that are not Down out of the schedule (all of them without NODE)
    Cancel(MaintenanceCancelArgs),
}

/// `maintenance schedule`.
#[derive(Debug, Args)]
pub struct MaintenanceScheduleArgs {
    /// Nodes: a Node name, or an IP address (matched against the Nodes'
    /// InternalIP addresses)
    #[arg(value_name = "NODE", required_unless_present = "hostname")]
    pub nodes: Vec<String>,
    /// A node by its Hostname address (compared case-insensitively; repeatable)
    #[arg(long, value_name = "HOSTNAME")]
    pub hostname: Vec<String>,
    /// Start of the unavailability: an RFC 3339 time (2026-11-28T02:00:00Z),
    /// `now`, or a duration from now (2h)
    #[arg(long, value_name = "TIME")]
    pub start: String,
    /// How long the nodes are unavailable, e.g. 1h, 90m, 1h30m
    #[arg(long, value_name = "DURATION")]
    pub duration: String,
}

/// Nodes of `maintenance up`.
#[derive(Debug, Args)]
pub struct MaintenanceNodesArgs {
    /// Scheduled nodes: as scheduled (name, hostname or IP), or the Node name
    /// the schedule's status resolved them to
    #[arg(value_name = "NODE", required = true)]
    pub nodes: Vec<String>,
}

/// `maintenance down`.
#[derive(Debug, Args)]
pub struct MaintenanceDownArgs {
    /// The nodes
    #[command(flatten)]
    pub nodes: MaintenanceNodesArgs,
    /// Wait until every node is Down and drained, showing pods left and the
    /// budgets that block evictions
    #[arg(long)]
    pub wait: bool,
    /// How long --wait waits, e.g. 300s, 10m
    #[arg(long, alias = "wait-time", value_name = "DURATION", value_parser = parse_duration, default_value = "10m")]
    pub wait_timeout: Duration,
}

/// `maintenance cancel`.
#[derive(Debug, Args)]
pub struct MaintenanceCancelArgs {
    /// Only these scheduled nodes (default: every node that is not Down)
    #[arg(value_name = "NODE")]
    pub nodes: Vec<String>,
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use crate::cli::{Cli, Command, MaintenanceCommand};

    fn parse(args: &[&str]) -> Result<MaintenanceCommand, clap::Error> {
        let mut line = vec!["kubectl-kudo", "maintenance"];
        line.extend_from_slice(args);
        match Cli::try_parse_from(line)?.command {
            Command::Maintenance(cmd) => Ok(cmd),
            other => panic!("parsed as {other:?}"),
        }
    }

    #[test]
    fn schedule_takes_nodes_or_hostnames_a_start_and_a_duration() {
        let cmd = parse(&[
            "schedule",
            "--hostname",
            "Host-A",
            "--start",
            "now",
            "--duration",
            "1h",
        ])
        .unwrap();
        let MaintenanceCommand::Schedule(args) = cmd else {
            panic!("not a schedule");
        };
        assert!(args.nodes.is_empty());
        assert_eq!(args.hostname, vec!["Host-A".to_string()]);
        assert!(parse(&["schedule", "--start", "now", "--duration", "1h"]).is_err());
        assert!(parse(&["schedule", "n1", "--duration", "1h"]).is_err());
    }

    #[test]
    fn down_and_up_need_nodes_and_cancel_does_not() {
        assert!(parse(&["down"]).is_err());
        assert!(parse(&["up"]).is_err());
        let MaintenanceCommand::Down(args) = parse(&["down", "n1", "n2", "--wait"]).unwrap() else {
            panic!("not a down");
        };
        assert_eq!(args.nodes.nodes, vec!["n1".to_string(), "n2".to_string()]);
        assert!(args.wait);
        assert!(matches!(
            parse(&["cancel"]).unwrap(),
            MaintenanceCommand::Cancel(c) if c.nodes.is_empty()
        ));
    }
}
