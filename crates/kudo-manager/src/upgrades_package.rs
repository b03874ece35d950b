//! The package of the release a channel moves to: downloaded from the
//! repository within bounds, checked against the index's digest and
//! `package verify`, and made into the Instance's OperatorVersion, or
//! compared with the one already there.

use std::sync::Arc;

use kube::api::PostParams;
use kube::runtime::reflector::ObjectRef;
use kube::{Api, ResourceExt};
use kudo_api::Instance;
use kudo_repo::{Digest, Limits, PackageVersion};
use kudo_repo_client::http::{self, Download, Transport};

use crate::context::Context;
use crate::render_pool::RenderPool;
use crate::repositories::Synced;

/// The release's OperatorVersion in the Instance's namespace, made (with
/// its Operator) as the Instance's account from the archive the index
/// names, checked against its digest. One already there under that name is
/// used only when it holds the same package: anyone who may create
/// OperatorVersions could have made it first, with other templates, for
/// the Instance to run as its account. Returns its name, and the object
/// when the cache does not hold it yet.
pub(super) async fn ensure_operator_version(
    ctx: &Context,
    inst: &Instance,
    synced: &Synced,
    entry: &PackageVersion,
) -> Result<(String, Option<Arc<kudo_api::OperatorVersion>>), String> {
    let ns = inst.namespace().unwrap_or_else(|| "default".into());
    let name = kudo_package::operator_version_name(
        &entry.name,
        entry.app_version.as_deref(),
        &entry.operator_version,
    );
    let package = download(&ctx.renders, synced, entry).await?;
    let wanted = package.to_operator_version(&ns);
    if let Some(cached) = ctx
        .operator_versions
        .get(&ObjectRef::new(&name).within(&ns))
    {
        return same_package(&ns, &cached, &wanted).map(|()| (name, None));
    }
    let writer = ctx.writers.for_instance(&ctx.client, inst)?;
    let operators = Api::<kudo_api::Operator>::namespaced(writer.client.clone(), &ns);
    let ovs = Api::<kudo_api::OperatorVersion>::namespaced(writer.client.clone(), &ns);
    let who = writer.user.as_deref().unwrap_or("the manager");
    match operators
        .create(&PostParams::default(), &package.to_operator(&ns))
        .await
    {
        Ok(_) => {}
        Err(kube::Error::Api(e)) if e.code == 409 => {}
        Err(e) => {
            return Err(format!(
                "creating Operator {} in {ns} as {who}: {e}",
                entry.name
            ));
        }
    }
    let made = match ovs.create(&PostParams::default(), &wanted).await {
        Ok(made) => made,
        // Made since the cache was read: by an earlier reconcile, or by
        // someone else.
        Err(kube::Error::Api(e)) if e.code == 409 => {
            let there = ovs
                .get(&name)
                .await
                .map_err(|e| format!("reading {name} in {ns} as {who}: {e}"))?;
            same_package(&ns, &there, &wanted)?;
            there
        }
        Err(e) => return Err(format!("creating {name} in {ns} as {who}: {e}")),
    };
    Ok((name, Some(Arc::new(made))))
}

/// Refuses an OperatorVersion already there whose content is not the
/// release's package, naming what differs.
fn same_package(
    ns: &str,
    there: &kudo_api::OperatorVersion,
    wanted: &kudo_api::OperatorVersion,
) -> Result<(), String> {
    let differences = kudo_api::ov_content::differences(&there.spec, &wanted.spec);
    if differences.is_empty() {
        return Ok(());
    }
    let name = wanted.metadata.name.as_deref().unwrap_or_default();
    Err(format!(
        "OperatorVersion {ns}/{name} exists with other content than the release's package \
         ({} {}), so it was not made from this release and is not moved to; delete it when no \
         Instance runs it (the manager then makes it from the package), or install the \
         release's package under that name",
        kudo_api::message::listed(&differences),
        if differences.len() == 1 {
            "differs"
        } else {
            "differ"
        },
    ))
}

/// Most URLs of one index entry tried: a hostile index lists many slow ones.
const MAX_URLS_TRIED: usize = 3;
/// Most time one package download may take, all URLs together: it holds
/// one of the reconciles that run at once.
const DOWNLOAD_DEADLINE: std::time::Duration = std::time::Duration::from_secs(120);
/// Most bytes a downloaded package may take, packed or unpacked: an
/// OperatorVersion is one object of at most about 1.4 MiB
/// ([`kudo_package::render::MAX_OBJECT_BYTES`]), so a package of more
/// than a few times that cannot become one (a workstation's `kubectl kudo`
/// allows more).
const MAX_PACKAGE_BYTES: u64 = 6 << 20;

/// Downloads and checks the package of `entry`: URLs in order (at most
/// [`MAX_URLS_TRIED`], within [`DOWNLOAD_DEADLINE`]), the sha256 of the
/// index, then, on the render pool, the names and versions it promised and
/// `package verify`.
async fn download(
    renders: &RenderPool,
    synced: &Synced,
    entry: &PackageVersion,
) -> Result<kudo_package::Package, String> {
    let expected = entry
        .digest
        .as_deref()
        .ok_or_else(|| format!("{} has no digest in the index", entry.label()))
        .and_then(|d| Digest::parse(d).map_err(|e| format!("{}: {e}", entry.label())))?;
    let (bytes, shown) = tokio::time::timeout(DOWNLOAD_DEADLINE, fetch_first(synced, entry))
        .await
        .map_err(|_| {
            format!(
                "{}: the download took longer than {}s",
                entry.label(),
                DOWNLOAD_DEADLINE.as_secs()
            )
        })??;
    expected.verify(&bytes, &shown).map_err(|e| e.to_string())?;
    let label = entry.label();
    let entry = entry.clone();
    renders
        .run(move || {
            let located = kudo_package::load_archive_within(&bytes, &shown, MAX_PACKAGE_BYTES)
                .map_err(|e| e.to_string())?;
            kudo_repo_client::repo::check_identity(&located, &entry, &shown)
                .map_err(|e| e.to_string())?;
            located.package.verified().map_err(|e| e.to_string())?;
            Ok(located.package)
        })
        .await
        .map_err(|stalled| format!("checking {label}: {stalled}"))?
}

/// The bytes of the first of the entry's URLs that answers, and the URL as
/// messages show it.
async fn fetch_first(synced: &Synced, entry: &PackageVersion) -> Result<(Vec<u8>, String), String> {
    let limits = Limits::default();
    let transport = Transport {
        ca_file: None,
        ca_pem: synced.ca_pem.clone(),
        insecure_skip_tls_verify: false,
        limits,
    };
    let client = http::client(&transport).map_err(|e| e.to_string())?;
    let mut last = format!("{} lists no URL", entry.label());
    for text in entry.urls.iter().take(MAX_URLS_TRIED) {
        let url =
            kudo_repo::urls::package_url(&synced.base, text, false).map_err(|e| e.to_string())?;
        let fetched = http::fetch(
            &client,
            &limits,
            &Download {
                url: &url,
                max_bytes: limits.max_package_bytes.min(MAX_PACKAGE_BYTES),
                what: "package",
                credentials: synced.credentials.as_ref(),
                origin: Some(&synced.base),
                accept: None,
            },
        )
        .await;
        match fetched {
            Ok(f) => return Ok((f.bytes, kudo_repo::urls::shown(&url))),
            Err(e) => last = e.to_string(),
        }
    }
    Err(last)
}
