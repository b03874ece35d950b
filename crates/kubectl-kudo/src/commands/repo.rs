//! `repo add|remove|list|context|update|index`, `search`, `package create`
//! and `package push`: thin wrappers over kudo-repo and kudo-repo-client;
//! no cluster is needed.

use std::path::Path;

use kudo_repo::config::{Credentials, RepositoryConfig};
use kudo_repo::limits::human_bytes;
use kudo_repo::{Digest, IndexFile, Limits};
use kudo_repo_client::home::{read_capped, write_atomic};
use serde_json::json;

use super::source::{read_secret_from_stdin, registry, repo_error, repositories};
use crate::cli::{
    GlobalArgs, PackageCreateArgs, PackagePushArgs, RepoAddArgs, RepoCommand, RepoIndexArgs,
    SearchArgs,
};
use crate::error::{CliError, Result};
use crate::output::{DataFormat, format_data, table};

/// Runs a `repo` subcommand.
pub async fn run(global: &GlobalArgs, cmd: RepoCommand) -> Result<()> {
    let name = match &cmd {
        RepoCommand::List(_) => None,
        RepoCommand::Add(_) => Some("repo add"),
        RepoCommand::Remove(_) => Some("repo remove"),
        RepoCommand::Context(_) => Some("repo context"),
        RepoCommand::Update(_) => Some("repo update"),
        RepoCommand::Index(_) => Some("repo index"),
    };
    if let Some(name) = name {
        super::no_output(global, name)?;
    }
    match cmd {
        RepoCommand::Add(args) => add(args).await,
        RepoCommand::Remove(args) => {
            let mut repos = repositories()?;
            repos.remove(&args.names).map_err(repo_error)?;
            for name in &args.names {
                outln!("repository {name} removed");
            }
            if !args.names.is_empty()
                && repos.config().context.is_empty()
                && !repos.config().repositories.is_empty()
            {
                errln!(
                    "note: there is no default repository now; choose one with `kubectl kudo repo context NAME`"
                );
            }
            Ok(())
        }
        RepoCommand::List(args) if args.in_cluster => {
            list_in_cluster(global, super::data_format(global, "repo list")?).await
        }
        RepoCommand::List(_) => list(super::data_format(global, "repo list")?),
        RepoCommand::Context(args) => {
            let mut repos = repositories()?;
            repos.set_context(&args.name).map_err(repo_error)?;
            outln!("repository {} is the default now", args.name);
            Ok(())
        }
        RepoCommand::Update(args) => update(&args.names).await,
        RepoCommand::Index(args) => index(&args).await,
    }
}

async fn add(args: RepoAddArgs) -> Result<()> {
    let credentials = if args.token_stdin {
        Some(Credentials::Bearer {
            token: read_secret_from_stdin("token")?,
        })
    } else if let Some(username) = &args.username {
        let password = match &args.password {
            Some(p) => p.clone(),
            None if args.password_stdin => read_secret_from_stdin("password")?,
            None => {
                return Err(CliError::Usage(
                    "--username needs --password-stdin (or --password)".into(),
                ));
            }
        };
        Some(Credentials::Basic {
            username: username.clone(),
            password,
        })
    } else {
        None
    };
    let ca_file = match &args.ca_file {
        Some(path) => Some(
            std::fs::canonicalize(path)
                .map_err(|e| CliError::File {
                    path: path.clone(),
                    message: e.to_string(),
                })?
                .display()
                .to_string(),
        ),
        None => None,
    };
    let config = RepositoryConfig {
        name: args.name.clone(),
        url: args.url.clone(),
        ca_file,
        insecure_skip_tls_verify: args.insecure_skip_tls_verify,
        allow_other_hosts: args.allow_other_hosts,
    };
    let mut repos = repositories()?;
    let count = repos
        .add(config, credentials, args.force)
        .await
        .map_err(repo_error)?;
    let url = repos
        .config()
        .get(&args.name)
        .map(|r| r.url.clone())
        .unwrap_or_default();
    match count {
        Some(n) => outln!(
            "repository {} added ({url}, {n} package version{})",
            args.name,
            if n == 1 { "" } else { "s" }
        ),
        None => outln!("repository {} added ({url}, index not checked)", args.name),
    }
    if repos.config().context == args.name && repos.config().repositories.len() == 1 {
        outln!("repository {} is the default", args.name);
    }
    Ok(())
}

fn list(format: Option<DataFormat>) -> Result<()> {
    let repos = repositories()?;
    let config = repos.config();
    if let Some(format) = format {
        let items: Vec<_> = config
            .repositories
            .iter()
            .map(|r| {
                json!({
                    "name": r.name,
                    "url": r.url,
                    "default": r.name == config.context,
                    "credentials": repos.has_credentials(&r.name),
                })
            })
            .collect();
        out!("{}", format_data(&items, format)?);
        return Ok(());
    }
    if config.repositories.is_empty() {
        outln!("{}", kudo_repo::config::NO_REPOSITORY);
        return Ok(());
    }
    let rows = config
        .repositories
        .iter()
        .map(|r| {
            let mark = if r.name == config.context { "*" } else { "" };
            let mut notes = Vec::new();
            if repos.has_credentials(&r.name) {
                notes.push("credentials");
            }
            if r.ca_file.is_some() {
                notes.push("CA file");
            }
            if r.insecure_skip_tls_verify {
                notes.push("TLS not verified");
            }
            if r.allow_other_hosts {
                notes.push("other hosts allowed");
            }
            vec![format!("{mark}{}", r.name), r.url.clone(), notes.join(", ")]
        })
        .collect();
    out!("{}", table(&["name", "url", "notes"], rows));
    Ok(())
}

/// `repo list --in-cluster`: the OperatorRepositories and what the manager
/// last found in each.
async fn list_in_cluster(global: &GlobalArgs, format: Option<DataFormat>) -> Result<()> {
    use kube::ResourceExt;
    let kube = crate::context::connect(global).await?;
    let api = kube::Api::<kudo_api::OperatorRepository>::all(kube.client.clone());
    let repos = api
        .list(&kube::api::ListParams::default())
        .await
        .map_err(|e| CliError::api("listing OperatorRepositories", e))?;
    if let Some(format) = format {
        out!("{}", format_data(&repos.items, format)?);
        return Ok(());
    }
    if repos.items.is_empty() {
        outln!("no OperatorRepositories in the cluster (an administrator creates them)");
        return Ok(());
    }
    let rows = repos
        .items
        .iter()
        .map(|r| {
            let status = r.status.clone().unwrap_or_default();
            let ready = status
                .conditions
                .iter()
                .find(|c| c.type_ == kudo_api::repository::READY_CONDITION);
            vec![
                r.name_any(),
                r.spec.url.clone(),
                ready.map_or("Unknown".into(), |c| c.status.clone()),
                status.packages.map(|p| p.to_string()).unwrap_or_default(),
                status
                    .last_sync_time
                    .map(|t| t.0.to_string())
                    .unwrap_or_default(),
                ready
                    .filter(|c| c.status != "True")
                    .map(|c| format!("{}: {}", c.reason, c.message))
                    .unwrap_or_default(),
            ]
        })
        .collect();
    out!(
        "{}",
        table(
            &["name", "url", "ready", "packages", "last sync", "message"],
            rows
        )
    );
    Ok(())
}

async fn update(names: &[String]) -> Result<()> {
    let repos = repositories()?;
    let results = repos.update(names).await.map_err(repo_error)?;
    let mut failed = Vec::new();
    for (name, result) in results {
        match result {
            Ok(n) => outln!(
                "repository {name}: {n} package version{}",
                if n == 1 { "" } else { "s" }
            ),
            Err(e) => {
                errln!("repository {name}: {e} (the cached index is kept)");
                failed.push(name);
            }
        }
    }
    if failed.is_empty() {
        Ok(())
    } else {
        Err(CliError::Repository(format!(
            "could not update {}",
            failed.join(", ")
        )))
    }
}

async fn index(args: &RepoIndexArgs) -> Result<()> {
    let created = Some(jiff::Timestamp::now().to_string());
    let (mut index, warnings) =
        kudo_repo::packages::index_folder(&args.dir, args.url.as_deref(), created)
            .map_err(repo_error)?;
    for warning in &warnings {
        errln!("warning: {warning}");
    }
    if let Some(other) = &args.merge {
        let merged = index.merge(read_index(other).await?);
        outln!(
            "{merged} version{} kept from {other}",
            if merged == 1 { "" } else { "s" }
        );
    }
    for pair in args.channels.chunks(2) {
        let [target, channels] = pair else { continue };
        let changed = index
            .set_channels(target, channels)
            .map_err(|e| CliError::Usage(format!("--channels {target} {channels}: {e}")))?;
        outln!(
            "{target}: {changed} version{} in channels {channels}",
            if changed == 1 { "" } else { "s" }
        );
    }
    for triple in args.recall.chunks(3) {
        let [name, range, reason] = triple else {
            continue;
        };
        let recall = kudo_repo::channels::Recall::new(range, reason)
            .map_err(|e| CliError::Usage(format!("--recall {name} {range:?}: {e}")))?;
        kudo_repo::index::check_name(name)
            .map_err(|e| CliError::Usage(format!("--recall {name}: {e}")))?;
        index.add_recall(name, recall);
        outln!("{name} {range} recalled: {reason}");
    }
    let path = args.dir.join(kudo_repo::index::INDEX_FILE);
    let text = index.to_yaml().map_err(repo_error)?;
    write_atomic(&path, text.as_bytes(), 0o644).map_err(repo_error)?;
    outln!(
        "{} written: {} version{} of {} operator{}",
        path.display(),
        index.len(),
        if index.len() == 1 { "" } else { "s" },
        index.entries.len(),
        if index.entries.len() == 1 { "" } else { "s" }
    );
    Ok(())
}

/// An index to merge: a URL (http, https, file) or a local file.
async fn read_index(source: &str) -> Result<IndexFile> {
    let limits = Limits::default();
    let bytes = if source.starts_with("http://")
        || source.starts_with("https://")
        || source.starts_with("file://")
    {
        let url = kudo_repo::urls::Url::parse(source)
            .map_err(|e| CliError::Usage(format!("{source}: not a URL ({e})")))?;
        let client = kudo_repo_client::http::client(&kudo_repo_client::http::Transport::default())
            .map_err(repo_error)?;
        kudo_repo_client::http::fetch(
            &client,
            &limits,
            &kudo_repo_client::http::Download {
                url: &url,
                max_bytes: limits.max_index_bytes,
                what: "index",
                credentials: None,
                origin: None,
                accept: None,
            },
        )
        .await
        .map_err(repo_error)?
        .bytes
    } else {
        read_capped(Path::new(source), limits.max_index_bytes)
            .map_err(repo_error)?
            .ok_or_else(|| CliError::File {
                path: source.into(),
                message: "no such index file".into(),
            })?
    };
    IndexFile::parse(&bytes, source, &limits).map_err(repo_error)
}

/// `search [TEXT]`.
pub async fn search(global: &GlobalArgs, args: &SearchArgs) -> Result<()> {
    let format = super::data_format(global, "search")?;
    let repos = repositories()?;
    let text = args.text.as_deref().unwrap_or_default();
    let kubernetes = args
        .kubernetes_version
        .as_deref()
        .map(kudo_repo::channels::kubernetes_release)
        .transpose()
        .map_err(|e| CliError::Usage(format!("--kubernetes-version: {e}")))?;
    let hits = repos
        .search(&kudo_repo_client::SearchQuery {
            repo: args.repo.as_deref(),
            text,
            all_versions: args.all_versions,
            include_prereleases: args.devel,
            kubernetes: kubernetes.as_ref(),
        })
        .await
        .map_err(repo_error)?;
    if let Some(format) = format {
        let items: Vec<_> = hits
            .iter()
            .map(|h| json!({"repository": h.repository, "package": h.entry, "note": h.note}))
            .collect();
        out!("{}", format_data(&items, format)?);
        return Ok(());
    }
    if hits.is_empty() {
        outln!(
            "no package matches{}",
            if text.is_empty() {
                String::new()
            } else {
                format!(" {text:?}")
            }
        );
        return Ok(());
    }
    let notes = hits.iter().any(|h| !h.note.is_empty());
    let rows = hits
        .into_iter()
        .map(|h| {
            let mut row = vec![
                h.entry.name.clone(),
                h.entry.operator_version.clone(),
                h.entry.app_version.clone().unwrap_or_default(),
                h.entry.channels().join(","),
                h.repository,
            ];
            if notes {
                row.push(h.note);
            }
            row
        })
        .collect();
    let mut headers = vec![
        "name",
        "operator version",
        "app version",
        "channels",
        "repository",
    ];
    if notes {
        headers.push("notes");
    }
    out!("{}", table(&headers, rows));
    Ok(())
}

/// `package create DIR [-d DEST]`.
pub fn package_create(args: &PackageCreateArgs) -> Result<()> {
    let created =
        kudo_repo::packages::create(&args.dir).map_err(|e| CliError::Package(e.to_string()))?;
    for warning in &created.warnings {
        errln!("warning: {warning}");
    }
    if !args.destination.is_dir() {
        return Err(CliError::File {
            path: args.destination.clone(),
            message: "no such folder".into(),
        });
    }
    let path = args.destination.join(&created.file_name);
    if path.exists() && !args.overwrite {
        return Err(CliError::Other(format!(
            "{} exists; pass --overwrite to replace it",
            path.display()
        )));
    }
    write_atomic(&path, &created.bytes, 0o644).map_err(repo_error)?;
    let op = &created.package.operator;
    outln!(
        "package {} {} written to {} ({}, sha256 {})",
        op.name,
        op.operator_version,
        path.display(),
        human_bytes(u64::try_from(created.bytes.len()).unwrap_or(u64::MAX)),
        Digest::of(&created.bytes)
    );
    Ok(())
}

/// `package push PKG.tgz oci://HOST/NS`.
pub async fn package_push(args: &PackagePushArgs) -> Result<()> {
    if args.package.is_dir() {
        return Err(CliError::Usage(format!(
            "{} is a folder; push takes a .tgz (make one with `kubectl kudo package create`)",
            args.package.display()
        )));
    }
    let limit = Limits::default().max_package_bytes;
    let bytes = read_capped(&args.package, limit)
        .map_err(repo_error)?
        .ok_or_else(|| CliError::File {
            path: args.package.clone(),
            message: "no such package archive (make one with `kubectl kudo package create`)".into(),
        })?;
    let registry = registry(&args.registry)?;
    let (reference, digest) = registry
        .push(&bytes, &args.package.display().to_string(), &args.remote)
        .await
        .map_err(repo_error)?;
    outln!("pushed {reference} (manifest {})", digest.oci());
    Ok(())
}
