//! `plan`, `pod`, `suppress` and `rollback`: what drives an Instance's plans.

use std::time::Duration;

use clap::{Args, Subcommand};

use super::{RunParamArgs, WaitArgs, parse_duration};

/// `plan ...`.
#[derive(Debug, Subcommand)]
pub enum PlanCommand {
    /// Print the plan tree of an Instance with statuses, Ready and blockers (-o yaml|json:
    /// its status)
    Status(PlanStatusArgs),
    /// Print the last plan executions of an Instance (-o yaml|json)
    History(PlanHistoryArgs),
    /// Run a plan now
    Trigger(PlanTriggerArgs),
    /// Start no new steps in a plan or phase (running steps finish)
    Pause(PlanOperationArgs),
    /// Undo a pause
    Resume(PlanOperationWaitArgs),
    /// Approve the next canary step of a phase
    Continue(PlanOperationWaitArgs),
    /// Mark a step or phase COMPLETE without running it
    ForceComplete(PlanOperationWaitArgs),
    /// Run a step, phase or plan again from PENDING
    Restart(PlanOperationWaitArgs),
    /// Stop a plan: no new steps start and it ends FATAL_ERROR
    Cancel(PlanOperationArgs),
}

/// `plan status`.
#[derive(Debug, Args)]
pub struct PlanStatusArgs {
    /// Instance
    #[arg(long, value_name = "NAME")]
    pub instance: String,
    /// Redraw until the active plan finishes
    #[arg(long)]
    pub wait: bool,
    /// How long --wait waits
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "5m")]
    pub wait_timeout: Duration,
}

/// `plan history`.
#[derive(Debug, Args)]
pub struct PlanHistoryArgs {
    /// Instance
    #[arg(long, value_name = "NAME")]
    pub instance: String,
}

/// `plan trigger`.
#[derive(Debug, Args)]
pub struct PlanTriggerArgs {
    /// Plan to run
    #[arg(long, value_name = "PLAN")]
    pub name: String,
    /// Instance
    #[arg(long, value_name = "NAME")]
    pub instance: String,
    /// Ignore maintenance windows for this execution
    #[arg(long)]
    pub break_glass: bool,
    /// Values for this run only
    #[command(flatten)]
    pub params: RunParamArgs,
    /// Waiting for the plan
    #[command(flatten)]
    pub wait: WaitArgs,
}

/// Target of a plan operation.
#[derive(Debug, Clone, Args)]
pub struct PlanOperationArgs {
    /// Instance
    #[arg(long, value_name = "NAME")]
    pub instance: String,
    /// Plan (default: the active plan)
    #[arg(long, value_name = "PLAN")]
    pub plan: Option<String>,
    /// Phase
    #[arg(long, value_name = "PHASE")]
    pub phase: Option<String>,
    /// Step (needs --phase)
    #[arg(long, value_name = "STEP", requires = "phase")]
    pub step: Option<String>,
    /// Why (recorded in the Instance)
    #[arg(long, value_name = "TEXT")]
    pub reason: Option<String>,
}

/// `pod restart|replace`.
#[derive(Debug, Subcommand)]
pub enum PodCommand {
    /// Delete the pod so its controller starts it again in place
    Restart(PodArgs),
    /// Delete the pod and its StatefulSet volume claims so it comes back with fresh storage
    Replace(PodReplaceArgs),
}

/// The pod of `pod restart|replace`.
#[derive(Debug, Clone, Args)]
pub struct PodArgs {
    /// Instance the pod belongs to
    #[arg(long, value_name = "NAME")]
    pub instance: String,
    /// Pod name
    #[arg(value_name = "POD")]
    pub pod: String,
    /// Why (recorded in the Instance)
    #[arg(long, value_name = "TEXT")]
    pub reason: Option<String>,
}

/// `pod replace`: the pod, and whether to ask before its claims go.
#[derive(Debug, Clone, Args)]
pub struct PodReplaceArgs {
    /// The pod
    #[command(flatten)]
    pub pod: PodArgs,
    /// Do not ask before deleting its volume claims
    #[arg(long, short = 'y')]
    pub yes: bool,
}

/// A plan operation that can wait for the plan to finish.
#[derive(Debug, Clone, Args)]
pub struct PlanOperationWaitArgs {
    /// Target
    #[command(flatten)]
    pub target: PlanOperationArgs,
    /// Waiting for the plan
    #[command(flatten)]
    pub wait: WaitArgs,
}

/// `suppress`.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct SuppressArgs {
    /// Clear instead of adding
    #[command(subcommand)]
    pub action: Option<SuppressAction>,
    /// Instance
    #[arg(long, value_name = "NAME")]
    pub instance: Option<String>,
    /// End of the suppression (RFC 3339 time such as 2026-11-24T06:00:00Z, or a duration such as 2h); default: until cleared
    #[arg(long, value_name = "TIME")]
    pub until: Option<String>,
    /// Why (shown to everyone)
    #[arg(long, value_name = "TEXT")]
    pub reason: Option<String>,
}

/// `suppress clear`.
#[derive(Debug, Subcommand)]
pub enum SuppressAction {
    /// Remove manual suppressions and clear an automatic one
    Clear(SuppressClearArgs),
}

/// `suppress clear`.
#[derive(Debug, Args)]
pub struct SuppressClearArgs {
    /// Instance
    #[arg(long, value_name = "NAME")]
    pub instance: String,
    /// Why (recorded in the Instance)
    #[arg(long, value_name = "TEXT")]
    pub reason: Option<String>,
}

/// `rollback`.
#[derive(Debug, Args)]
pub struct RollbackArgs {
    /// Instance
    #[arg(long, value_name = "NAME")]
    pub instance: String,
    /// Waiting for the resulting plan
    #[command(flatten)]
    pub wait: WaitArgs,
}
