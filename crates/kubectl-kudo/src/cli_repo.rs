//! Package repositories on the command line: `repo ...`, `search`,
//! `package create|push`, and the flags that choose where a package named
//! by name or `oci://` reference comes from (kept apart from `cli.rs`).

use std::path::PathBuf;

use clap::{Args, Subcommand};

/// Where PACKAGE comes from when it is a name or an `oci://` reference.
#[derive(Debug, Clone, Default, Args)]
#[command(next_help_heading = "Repository options")]
pub struct SourceArgs {
    /// Resolve PACKAGE in this repository, even where a local folder has its
    /// name (default: a local path of that name, else the default repository,
    /// see `repo context`)
    #[arg(long, value_name = "NAME")]
    pub repo: Option<String>,
    /// Let pre-release versions be chosen when no version or a range is given
    #[arg(long)]
    pub devel: bool,
    /// Registry access for oci:// references
    #[command(flatten)]
    pub registry: RegistryArgs,
}

/// How to reach an OCI registry.
#[derive(Debug, Clone, Default, Args)]
#[command(next_help_heading = "Registry options")]
pub struct RegistryArgs {
    /// oci://: plain http instead of https (a local registry)
    #[arg(long)]
    pub plain_http: bool,
    /// oci://: a PEM file of CA certificates to trust besides the system's
    #[arg(long, value_name = "FILE")]
    pub ca_file: Option<PathBuf>,
    /// oci://: do not verify the registry's TLS certificate
    #[arg(long)]
    pub insecure_skip_tls_verify: bool,
    /// oci://: user name for the registry (the password comes from --password-stdin)
    #[arg(long, value_name = "NAME", requires = "password_stdin")]
    pub username: Option<String>,
    /// oci://: read the registry password from standard input
    #[arg(long, requires = "username")]
    pub password_stdin: bool,
}

/// `--operator-version` and `--app-version` of the package commands.
#[derive(Debug, Clone, Default, Args)]
pub struct VersionArgs {
    /// Operator version or range (`1.2.3` exact, `^1.2`, `~1.2`, `1.x`,
    /// `>=1.2 <2`; Helm's dialect); default: the newest stable version
    #[arg(long, value_name = "VERSION")]
    pub operator_version: Option<String>,
    /// App version or range
    #[arg(long, value_name = "VERSION")]
    pub app_version: Option<String>,
}

/// `repo ...`.
#[derive(Debug, Subcommand)]
pub enum RepoCommand {
    /// Add a package repository (its index is fetched and checked first)
    Add(RepoAddArgs),
    /// Remove repositories (with their credentials and cached indexes)
    #[command(alias = "rm")]
    Remove(RepoRemoveArgs),
    /// List the configured repositories, * the default (--in-cluster: the cluster's)
    #[command(alias = "ls")]
    List(RepoListArgs),
    /// Make a repository the default
    Context(RepoContextArgs),
    /// Fetch the indexes of repositories again (all without NAME)
    Update(RepoUpdateArgs),
    /// Write index.yaml for the .tgz packages in a folder
    Index(RepoIndexArgs),
}

/// `repo add`.
#[derive(Debug, Args)]
pub struct RepoAddArgs {
    /// Name to refer to the repository by (--repo NAME)
    #[arg(value_name = "NAME")]
    pub name: String,
    /// URL of the folder holding index.yaml (http, https or file)
    #[arg(value_name = "URL")]
    pub url: String,
    /// Add it without fetching and checking its index
    #[arg(long)]
    pub force: bool,
    /// A PEM file of CA certificates to trust for it besides the system's
    #[arg(long, value_name = "FILE")]
    pub ca_file: Option<PathBuf>,
    /// Do not verify its TLS certificate
    #[arg(long)]
    pub insecure_skip_tls_verify: bool,
    /// Accept package URLs on other hosts than the index's (credentials are
    /// still sent to the repository's host only)
    #[arg(long)]
    pub allow_other_hosts: bool,
    /// User name for basic authentication (with --password-stdin or --password)
    #[arg(long, value_name = "NAME")]
    pub username: Option<String>,
    /// Read the password from standard input
    #[arg(long, requires = "username", conflicts_with = "password")]
    pub password_stdin: bool,
    /// The password (visible to other users of this machine; prefer --password-stdin)
    #[arg(long, value_name = "PASSWORD", requires = "username")]
    pub password: Option<String>,
    /// Read a bearer token from standard input
    #[arg(long, conflicts_with_all = ["username", "password_stdin", "password"])]
    pub token_stdin: bool,
}

/// `repo remove`.
#[derive(Debug, Args)]
pub struct RepoRemoveArgs {
    /// Repositories to remove
    #[arg(value_name = "NAME", required = true)]
    pub names: Vec<String>,
}

/// `repo context`.
#[derive(Debug, Args)]
pub struct RepoContextArgs {
    /// The repository to make the default
    #[arg(value_name = "NAME")]
    pub name: String,
}

/// `repo update`.
#[derive(Debug, Args)]
pub struct RepoUpdateArgs {
    /// Repositories to refresh (default: all)
    #[arg(value_name = "NAME")]
    pub names: Vec<String>,
}

/// `repo list`.
#[derive(Debug, Args)]
pub struct RepoListArgs {
    /// List the cluster's OperatorRepositories (what the manager follows)
    /// instead of this machine's configuration
    #[arg(long)]
    pub in_cluster: bool,
}

/// `repo index`.
#[derive(Debug, Args)]
pub struct RepoIndexArgs {
    /// Folder holding the .tgz packages; index.yaml is written there
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
    /// URL the folder will be served at (default: URLs relative to the index)
    #[arg(long, value_name = "URL")]
    pub url: Option<String>,
    /// An index (file or URL) whose entries are kept where the folder has none
    /// (its recalls too)
    #[arg(long, value_name = "INDEX_OR_URL")]
    pub merge: Option<String>,
    /// Put OPERATOR (every version, or OPERATOR@VERSION one) in these
    /// channels (comma separated), replacing the package's `channels`
    #[arg(long = "channels", num_args = 2, value_names = ["OPERATOR[@VERSION]", "CHANNELS"], action = clap::ArgAction::Append)]
    pub channels: Vec<String>,
    /// Recall the versions of OPERATOR in RANGE, giving REASON
    #[arg(long = "recall", num_args = 3, value_names = ["OPERATOR", "RANGE", "REASON"], action = clap::ArgAction::Append)]
    pub recall: Vec<String>,
}

/// `search`.
#[derive(Debug, Args)]
pub struct SearchArgs {
    /// Text to find in package names and descriptions (default: list all)
    #[arg(value_name = "TEXT")]
    pub text: Option<String>,
    /// Every version, not just the newest of each operator
    #[arg(long)]
    pub all_versions: bool,
    /// Search this repository only (default: all)
    #[arg(long, value_name = "NAME")]
    pub repo: Option<String>,
    /// Include pre-release versions
    #[arg(long)]
    pub devel: bool,
    /// Hide versions that do not run on this Kubernetes version (and say so)
    #[arg(long, value_name = "VERSION")]
    pub kubernetes_version: Option<String>,
}

/// `package create`.
#[derive(Debug, Args)]
pub struct PackageCreateArgs {
    /// Package folder
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
    /// Folder to write the .tgz to
    #[arg(
        short = 'd',
        long = "destination",
        value_name = "DEST",
        default_value = "."
    )]
    pub destination: PathBuf,
    /// Replace an existing file of that name
    #[arg(short = 'w', long)]
    pub overwrite: bool,
}

/// `package push`.
#[derive(Debug, Args)]
pub struct PackagePushArgs {
    /// The .tgz package (see `package create`)
    #[arg(value_name = "PACKAGE")]
    pub package: PathBuf,
    /// Where to push: oci://HOST/NAMESPACE (the package lands at
    /// NAMESPACE/<operator>:<operatorVersion>)
    #[arg(value_name = "REMOTE")]
    pub remote: String,
    /// Registry access
    #[command(flatten)]
    pub registry: RegistryArgs,
}
