//! Where a PACKAGE argument comes from: a local folder or archive, a
//! repository, or an OCI registry. A repository or registry package is
//! downloaded with its digest checked before it is loaded; which source
//! was used is said on stderr.
//!
//! A local path wins over a repository package of the same name (as in
//! KUDO and Helm), unless `--repo` is given.

use std::io::Read;
use std::path::Path;

use kudo_package::Located;
use kudo_repo::config::Credentials;
use kudo_repo::{Limits, Query};
use kudo_repo_client::{Home, OciRef, Registry, Repositories};

use crate::cli::{RegistryArgs, SourceArgs, VersionArgs};
use crate::error::{CliError, Result};

/// A loaded package and how to name it in messages.
pub struct Found {
    /// The package and where relative dependencies are looked up.
    pub located: Located,
    /// The path, or `first-operator 0.3.0 from repository local`.
    pub shown: String,
}

/// Errors of the repository client, as the CLI reports them.
pub fn repo_error(e: impl std::fmt::Display) -> CliError {
    CliError::Repository(e.to_string())
}

/// The configured repositories (`$KUDO_HOME`, the XDG cache).
pub fn repositories() -> Result<Repositories> {
    let home = Home::from_env().map_err(repo_error)?;
    Repositories::open(home, Limits::default()).map_err(repo_error)
}

/// How to reach a registry; the password is read from stdin when asked.
pub fn registry(args: &RegistryArgs) -> Result<Registry> {
    let credentials = match &args.username {
        Some(username) if args.password_stdin => Some(Credentials::Basic {
            username: username.clone(),
            password: read_secret_from_stdin("password")?,
        }),
        _ => None,
    };
    Ok(Registry {
        transport: kudo_repo_client::http::Transport {
            ca_file: args.ca_file.clone(),
            ca_pem: None,
            insecure_skip_tls_verify: args.insecure_skip_tls_verify,
            limits: Limits::default(),
        },
        plain_http: args.plain_http,
        credentials,
    })
}

/// One line of standard input (at most 64 KiB), without its line end.
pub fn read_secret_from_stdin(what: &str) -> Result<String> {
    let mut text = String::new();
    std::io::stdin()
        .take(64 * 1024)
        .read_to_string(&mut text)
        .map_err(|e| CliError::Usage(format!("cannot read the {what} from standard input: {e}")))?;
    let secret = text.lines().next().unwrap_or_default().to_string();
    if secret.is_empty() {
        return Err(CliError::Usage(format!("standard input holds no {what}")));
    }
    Ok(secret)
}

/// Whether an argument can only mean a file or folder.
fn looks_like_path(text: &str) -> bool {
    text.contains('/')
        || text.contains('\\')
        || text.starts_with('.')
        || text.ends_with(".tgz")
        || text.ends_with(".tar.gz")
}

/// Finds and loads PACKAGE.
pub async fn locate(package: &Path, versions: &VersionArgs, source: &SourceArgs) -> Result<Found> {
    let text = package.to_string_lossy().into_owned();
    let versioned = versions.operator_version.is_some() || versions.app_version.is_some();
    if text.starts_with("oci://") {
        return pull(&text, versions, source).await;
    }
    if source.repo.is_some() {
        if looks_like_path(&text) {
            return Err(CliError::Usage(format!(
                "--repo takes a package name, and {text} is a path"
            )));
        }
        return from_repository(&text, versions, source).await;
    }
    if versioned && (package.exists() || looks_like_path(&text)) {
        return Err(CliError::Usage(format!(
            "--operator-version and --app-version choose a version from a repository or \
             registry, but {text} is a local package; name the package without a path, or \
             pass --repo NAME"
        )));
    }
    if package.exists() {
        if !looks_like_path(&text) {
            errln!(
                "note: using the local package {text} (a local path wins over repositories; pass --repo NAME to use a repository's {text})"
            );
        }
        let located =
            kudo_package::load_located(package).map_err(|e| CliError::Package(e.to_string()))?;
        return Ok(Found {
            located,
            shown: text,
        });
    }
    if looks_like_path(&text) {
        return Err(CliError::Package(format!(
            "{text}: no such package folder or archive"
        )));
    }
    from_repository(&text, versions, source).await
}

async fn from_repository(name: &str, versions: &VersionArgs, source: &SourceArgs) -> Result<Found> {
    kudo_repo::index::check_name(name).map_err(|e| CliError::Usage(format!("{name}: {e}")))?;
    let repos = repositories()?;
    if repos.config().repositories.is_empty() {
        return Err(CliError::Repository(format!(
            "{name} is not a package folder or archive here, and {}",
            kudo_repo::config::NO_REPOSITORY
        )));
    }
    let query = Query {
        name,
        operator_version: versions.operator_version.as_deref(),
        app_version: versions.app_version.as_deref(),
        include_prereleases: source.devel,
    };
    let found = repos
        .resolve(source.repo.as_deref(), &query)
        .await
        .map_err(repo_error)?;
    let downloaded = repos.download(&found).await.map_err(repo_error)?;
    let shown = format!(
        "{} from repository {}",
        found.entry.label(),
        found.repository.name
    );
    errln!(
        "using {shown} ({}, sha256 {} verified)",
        downloaded.url,
        downloaded.digest
    );
    Ok(Found {
        located: downloaded.located,
        shown,
    })
}

async fn pull(text: &str, versions: &VersionArgs, source: &SourceArgs) -> Result<Found> {
    if versions.app_version.is_some() {
        return Err(CliError::Usage(
            "an OCI registry is tagged by operator version: use --operator-version, not --app-version".into(),
        ));
    }
    let reference = OciRef::parse(text).map_err(repo_error)?;
    if reference.tag.is_some() && versions.operator_version.is_some() {
        return Err(CliError::Usage(format!(
            "{text} names a tag already; drop --operator-version or the tag"
        )));
    }
    let registry = registry(&source.registry)?;
    let (pinned, downloaded) = registry
        .pull(
            &reference,
            versions.operator_version.as_deref(),
            source.devel,
        )
        .await
        .map_err(repo_error)?;
    let op = &downloaded.located.package.operator;
    let shown = format!("{} {} from {pinned}", op.name, op.operator_version);
    errln!(
        "using {shown} (layer sha256 {} verified)",
        downloaded.digest
    );
    Ok(Found {
        located: downloaded.located,
        shown,
    })
}
