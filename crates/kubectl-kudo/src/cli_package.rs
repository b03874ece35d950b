//! `package ...`: verify, inspect, render, create and push packages (kept
//! apart from `cli.rs` so that file stays readable).

use std::path::PathBuf;

use clap::{Args, Subcommand};
use kudo_package::removed_apis::KubernetesRelease;

use super::{PackageCreateArgs, PackagePushArgs, ParamArgs, SourceArgs, VersionArgs};

/// `package ...`.
#[derive(Debug, Subcommand)]
pub enum PackageCommand {
    /// Check a package for errors and warnings
    Verify(PackageVerifyArgs),
    /// Inspect package parameters
    #[command(subcommand)]
    Params(PackageParamsCommand),
    /// Print the objects every step of a plan would apply (like helm template)
    Render(PackageRenderArgs),
    /// Verify a package folder and write it as a .tgz named as KUDO names it
    Create(PackageCreateArgs),
    /// Push a .tgz package to an OCI registry
    Push(PackagePushArgs),
}

/// PACKAGE and where it comes from, for the `package` commands.
#[derive(Debug, Clone, Args)]
pub struct PackageRef {
    /// Package folder or .tgz, a package name in a repository, or oci://HOST/NAMESPACE/NAME
    #[arg(value_name = "PACKAGE", value_hint = clap::ValueHint::AnyPath)]
    pub package: PathBuf,
    /// Versions of a package from a repository or registry
    #[command(flatten)]
    pub versions: VersionArgs,
    /// Where a package name comes from
    #[command(flatten)]
    pub source: SourceArgs,
}

/// `package verify`.
#[derive(Debug, Args)]
pub struct PackageVerifyArgs {
    /// The package
    #[command(flatten)]
    pub package: PackageRef,
    /// List objects Kubernetes X.Y (e.g. 1.32) cannot apply as written
    #[arg(long, value_name = "X.Y", value_parser = parse_kubernetes_version)]
    pub kubernetes_version: Option<KubernetesRelease>,
}

/// `package params ...`.
#[derive(Debug, Subcommand)]
pub enum PackageParamsCommand {
    /// List the parameters of a package (-o yaml|json)
    List(PackageParamsListArgs),
}

/// `package params list`.
#[derive(Debug, Args)]
pub struct PackageParamsListArgs {
    /// The package
    #[command(flatten)]
    pub package: PackageRef,
}

/// `package render`.
#[derive(Debug, Args)]
pub struct PackageRenderArgs {
    /// The package
    #[command(flatten)]
    pub package: PackageRef,
    /// Plan to render
    #[arg(long, value_name = "PLAN", default_value = "deploy")]
    pub plan: String,
    /// Parameter values
    #[command(flatten)]
    pub params: ParamArgs,
    /// Instance name used in the objects (default: <operator>-instance)
    #[arg(long, value_name = "NAME")]
    pub instance: Option<String>,
    /// Print objects as Kubernetes X.Y (e.g. 1.32) applies them
    #[arg(long, value_name = "X.Y", value_parser = parse_kubernetes_version)]
    pub kubernetes_version: Option<KubernetesRelease>,
}

/// `1.32`, `v1.32.3`: a Kubernetes release for `--kubernetes-version`.
fn parse_kubernetes_version(text: &str) -> Result<KubernetesRelease, String> {
    text.parse()
}
