//! The command line: global flags and the command tree (clap derive).

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};

pub use crate::duration::parse_duration;

/// `kubectl kudo`: install operator packages and drive their plans.
#[derive(Debug, Parser)]
#[command(
    name = "kubectl-kudo",
    bin_name = "kubectl kudo",
    version,
    about = "Install KUDO operator packages and drive their plans",
    long_about = "kubectl kudo installs KUDO operator packages (folders, .tgz files, repositories or OCI registries), \
updates and upgrades their instances, and shows and operates the plans the kudo-rs manager runs.",
    max_term_width = 100
)]
pub struct Cli {
    /// Flags every command understands.
    #[command(flatten)]
    pub global: GlobalArgs,
    /// The command to run.
    #[command(subcommand)]
    pub command: Command,
}

/// Flags shared by all commands (kubectl's conventions).
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Global options")]
pub struct GlobalArgs {
    /// Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)
    #[arg(long, global = true, value_name = "FILE", value_hint = clap::ValueHint::FilePath)]
    pub kubeconfig: Option<PathBuf>,
    /// Kubeconfig context to use (default: the current context)
    #[arg(long, global = true, value_name = "NAME")]
    pub context: Option<String>,
    /// Namespace (default: the namespace of the kubeconfig context)
    #[arg(short, long, global = true, value_name = "NS")]
    pub namespace: Option<String>,
    /// Time limit of a single API request, e.g. 30s or 1m; 0 means none
    #[arg(long, global = true, value_name = "DURATION", value_parser = parse_duration, default_value = "0")]
    pub request_timeout: Duration,
    /// Log output on stderr, as kubectl's -v: 0 none (default), 1-3 progress notes,
    /// 4-5 details, 6-7 the API requests, 8 and more everything
    #[arg(
        short = 'v',
        long = "v",
        global = true,
        value_name = "LEVEL",
        default_value_t = 0
    )]
    pub verbosity: u8,
    /// Output format: yaml or json (the objects), wide (more columns) or name
    /// (names only); which ones a command prints is in its help
    #[arg(short, long, global = true, value_enum, value_name = "FORMAT")]
    pub output: Option<OutputFormat>,
}

/// `-o`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// YAML
    Yaml,
    /// JSON
    Json,
    /// A table with more columns
    Wide,
    /// kind/name, one per line
    Name,
}

impl OutputFormat {
    /// The text `-o` takes for it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Yaml => "yaml",
            Self::Json => "json",
            Self::Wide => "wide",
            Self::Name => "name",
        }
    }
}

/// `--wait` and `--wait-timeout` (KUDO spells it `--wait-time`, in seconds: both are accepted).
#[derive(Debug, Clone, Copy, Args)]
pub struct WaitArgs {
    /// Wait until the plan finishes, showing progress; fail if it ends in FATAL_ERROR
    #[arg(long)]
    pub wait: bool,
    /// How long --wait waits, e.g. 300s, 10m
    #[arg(long, alias = "wait-time", value_name = "DURATION", value_parser = parse_duration, default_value = "5m")]
    pub wait_timeout: Duration,
}

/// `-p KEY=VALUE` and `-P FILE`.
#[derive(Debug, Clone, Args)]
pub struct ParamArgs {
    /// Parameter value KEY=VALUE (repeatable; overrides -P files)
    #[arg(short = 'p', long = "parameter", value_name = "KEY=VALUE")]
    pub parameters: Vec<String>,
    /// YAML file of parameter values (repeatable; later files win)
    #[arg(short = 'P', long = "parameter-file", value_name = "FILE", value_hint = clap::ValueHint::FilePath)]
    pub parameter_files: Vec<PathBuf>,
}

/// `plan trigger -p/-P`: values for one run, which leave the Instance's
/// parameters as they are.
#[derive(Debug, Clone, Args)]
pub struct RunParamArgs {
    /// Parameter value KEY=VALUE for this run only; the Instance's parameters do not change (repeatable; overrides -P files)
    #[arg(short = 'p', long = "parameter", value_name = "KEY=VALUE")]
    pub parameters: Vec<String>,
    /// YAML file of parameter values for this run only (repeatable; later files win)
    #[arg(short = 'P', long = "parameter-file", value_name = "FILE", value_hint = clap::ValueHint::FilePath)]
    pub parameter_files: Vec<PathBuf>,
}

impl From<&RunParamArgs> for ParamArgs {
    fn from(run: &RunParamArgs) -> Self {
        Self {
            parameters: run.parameters.clone(),
            parameter_files: run.parameter_files.clone(),
        }
    }
}

/// All commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Install kudo-rs into the cluster: CRDs, manager, RBAC, webhook and certificates
    Init(InitArgs),
    /// Install an operator package and create an Instance of it
    Install(InstallArgs),
    /// Change parameters of an Instance
    Update(UpdateArgs),
    /// Upgrade an Instance to a newer version of its operator package
    Upgrade(UpgradeArgs),
    /// Delete an Instance (its Operator and OperatorVersions stay)
    Uninstall(UninstallArgs),
    /// List Instances, Operators and OperatorVersions (-o yaml|json|wide|name)
    Get(GetArgs),
    /// Show and operate the plans of an Instance
    #[command(subcommand)]
    Plan(PlanCommand),
    /// Suppress automatic plans of an Instance, or clear suppressions
    Suppress(SuppressArgs),
    /// Restart or replace a pod of an Instance (shown in its recovery plan)
    #[command(subcommand)]
    Pod(PodCommand),
    /// Go back to the OperatorVersion and parameters of the last successful plan
    Rollback(RollbackArgs),
    /// Node maintenance: schedule nodes, drain them (down), bring them back (up)
    #[command(subcommand)]
    Maintenance(MaintenanceCommand),
    /// Create, verify, inspect, render and push operator packages (no cluster needed)
    #[command(subcommand)]
    Package(PackageCommand),
    /// Package repositories: add, remove, list, choose the default, update, index
    #[command(subcommand)]
    Repo(RepoCommand),
    /// Find packages in the repositories
    Search(SearchArgs),
    /// Print a shell completion script for `kubectl kudo`
    Completion(CompletionArgs),
    /// Print the version of kubectl-kudo (-o yaml|json)
    Version,
}

/// `init`.
#[derive(Debug, Args)]
pub struct InitArgs {
    /// Print the objects instead of creating them (-o yaml|json; yaml by default)
    #[arg(long)]
    pub dry_run: bool,
    /// Update existing objects and rotate the webhook certificate
    #[arg(long, conflicts_with = "uninstall")]
    pub upgrade: bool,
    /// Remove everything init created (refused while Instances exist)
    #[arg(long)]
    pub uninstall: bool,
    /// Install only the CRDs (and the kudo-instance ClusterRole)
    #[arg(long)]
    pub crd_only: bool,
    /// Give the manager cluster-admin-like rights and let it write Instances'
    /// objects as itself
    #[arg(long, conflicts_with = "default_service_account")]
    pub broad_rbac: bool,
    /// Write the objects of Instances that name no ServiceAccount as this account of
    /// their namespace, which you make and grant [default: kudo-instance, which the
    /// manager makes in each namespace, bound to the kudo-instance ClusterRole:
    /// namespaced rights only]
    #[arg(long, value_name = "NAME", conflicts_with = "manager_writes_as_itself")]
    pub default_service_account: Option<String>,
    /// Let the manager write Instances' objects with its own rights: whoever may
    /// write an Instance or OperatorVersion can then create what the manager may
    /// (KUDO's model)
    #[arg(long)]
    pub manager_writes_as_itself: bool,
    /// Let cert-manager issue the webhook certificate and inject the CA
    #[arg(long)]
    pub cert_manager: bool,
    /// Manager container image
    #[arg(long, value_name = "IMAGE", default_value = concat!("kudo-rs/kudo-manager:", env!("CARGO_PKG_VERSION")))]
    pub image: String,
    /// Image pull policy of the manager
    #[arg(long, value_name = "POLICY", default_value = "IfNotPresent")]
    pub image_pull_policy: String,
    /// Wait until the manager is available (or, with --uninstall, gone)
    #[arg(long)]
    pub wait: bool,
    /// How long --wait waits
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "5m")]
    pub wait_timeout: Duration,
}

/// `install`.
#[derive(Debug, Args)]
pub struct InstallArgs {
    /// Package folder or .tgz, a package name in a repository, or
    /// oci://HOST/NAMESPACE/NAME (with --in-cluster: an installed operator's name)
    #[arg(value_name = "PACKAGE", value_hint = clap::ValueHint::AnyPath)]
    pub package: PathBuf,
    /// Instance name (default: <operator>-instance)
    #[arg(long, value_name = "NAME")]
    pub instance: Option<String>,
    /// Parameter values
    #[command(flatten)]
    pub params: ParamArgs,
    /// Create the namespace if it does not exist
    #[arg(long)]
    pub create_namespace: bool,
    /// Install Operator and OperatorVersion only, no Instance
    #[arg(long)]
    pub skip_instance: bool,
    /// Create an Instance of an operator already installed in the namespace
    #[arg(long, conflicts_with_all = ["skip_instance", "create_namespace"])]
    pub in_cluster: bool,
    /// Versions of a package from a repository or registry (with --in-cluster:
    /// exact versions of an installed operator)
    #[command(flatten)]
    pub versions: VersionArgs,
    /// Waiting for the deploy plan
    #[command(flatten)]
    pub wait: WaitArgs,
    /// Where a package name comes from
    #[command(flatten)]
    pub source: SourceArgs,
}

/// `update`.
#[derive(Debug, Args)]
pub struct UpdateArgs {
    /// Instance to change
    #[arg(long, value_name = "NAME")]
    pub instance: String,
    /// New parameter values (at least one)
    #[command(flatten)]
    pub params: ParamArgs,
    /// Waiting for the triggered plan
    #[command(flatten)]
    pub wait: WaitArgs,
}

/// `upgrade`.
#[derive(Debug, Args)]
pub struct UpgradeArgs {
    /// The newer version: package folder or .tgz, a package name in a
    /// repository (default: its newest stable version), or an oci:// reference
    #[arg(value_name = "PACKAGE", value_hint = clap::ValueHint::AnyPath)]
    pub package: PathBuf,
    /// Instance to upgrade
    #[arg(long, value_name = "NAME")]
    pub instance: String,
    /// Parameter values to change with the upgrade
    #[command(flatten)]
    pub params: ParamArgs,
    /// Version of a package from a repository or registry
    #[command(flatten)]
    pub versions: VersionArgs,
    /// Waiting for the upgrade plan
    #[command(flatten)]
    pub wait: WaitArgs,
    /// Where a package name comes from
    #[command(flatten)]
    pub source: SourceArgs,
    /// `upgrade approve --instance I [VERSION]`: the version to approve for
    /// an Instance that tracks a channel with Manual approval (default: the
    /// available one)
    #[arg(value_name = "VERSION")]
    pub approve_version: Option<String>,
}

/// `uninstall`.
#[derive(Debug, Args)]
pub struct UninstallArgs {
    /// Instance to delete
    #[arg(long, value_name = "NAME")]
    pub instance: String,
    /// Wait until the Instance is gone (its cleanup plan has run)
    #[arg(long)]
    pub wait: bool,
    /// How long --wait waits
    #[arg(long, alias = "wait-time", value_name = "DURATION", value_parser = parse_duration, default_value = "5m")]
    pub wait_timeout: Duration,
    /// Also delete the CustomResourceDefinitions the Instance applied (and with
    /// them every custom resource of their kinds), unless another Instance still
    /// uses them; without it they are kept
    #[arg(long)]
    pub delete_crds: bool,
}

/// What `get` lists (kubectl's singular and short names work too).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum GetKind {
    /// Instances
    #[value(aliases = ["instance", "inst"])]
    Instances,
    /// Operators
    #[value(alias = "operator")]
    Operators,
    /// OperatorVersions
    #[value(aliases = ["operatorversion", "ov"])]
    Operatorversions,
    /// Operators, their versions and instances as a tree
    All,
}

/// `get`.
#[derive(Debug, Args)]
pub struct GetArgs {
    /// What to list
    #[arg(value_enum, value_name = "KIND")]
    pub kind: GetKind,
    /// Only these, by name (not with `all`)
    #[arg(value_name = "NAME")]
    pub names: Vec<String>,
    /// List them in every namespace
    #[arg(short = 'A', long)]
    pub all_namespaces: bool,
}

/// Shells for `completion`.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum CompletionShell {
    /// bash
    Bash,
    /// zsh
    Zsh,
    /// fish
    Fish,
}

/// `completion`.
#[derive(Debug, Args)]
pub struct CompletionArgs {
    /// Shell
    #[arg(value_enum)]
    pub shell: CompletionShell,
}

#[path = "cli_maintenance.rs"]
mod maintenance;
#[path = "cli_package.rs"]
mod package;
pub use package::{
    PackageCommand, PackageParamsCommand, PackageRef, PackageRenderArgs, PackageVerifyArgs,
};
#[path = "cli_plan.rs"]
mod plan;
pub use plan::{
    PlanCommand, PlanHistoryArgs, PlanOperationArgs, PlanStatusArgs, PlanTriggerArgs, PodCommand,
    RollbackArgs, SuppressAction, SuppressArgs,
};
#[path = "cli_repo.rs"]
mod repo;
pub use maintenance::{MaintenanceCommand, MaintenanceDownArgs, MaintenanceScheduleArgs};
pub use repo::{
    PackageCreateArgs, PackagePushArgs, RegistryArgs, RepoAddArgs, RepoCommand, RepoIndexArgs,
    SearchArgs, SourceArgs, VersionArgs,
};

#[cfg(test)]
#[path = "cli_tests.rs"]
mod tests;
