//! The package of the release a channel moves to: downloaded from the
//! repository within bounds, checked against the index's digest and
//! `package verify`, and made into the Instance's OperatorVersion, or
//! compared with the one already there.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use kube::api::PostParams;
use kube::runtime::reflector::ObjectRef;
use kube::{Api, ResourceExt};
use kudo_api::Instance;
use kudo_repo::{Digest, Limits, PackageVersion};
use kudo_repo_client::http::{self, Download, Transport};

use crate::context::Context;
use crate::render_pool::RenderPool;
use crate::repositories::Synced;

/// The OperatorVersion a move runs.
pub(super) struct Moved {
    /// Its name.
    pub(super) name: String,
    /// The object, when this reconcile made it (the cache may not hold it).
    pub(super) made: Option<Arc<kudo_api::OperatorVersion>>,
    /// [`spec_digest`] of the release's package.
    pub(super) digest: String,
}

/// OperatorVersions found in a move's way, so that a held move does not
/// download its package again at every reconcile: by namespace and name,
/// the version of it compared, the archive's digest and what differs. An
/// entry goes when that OperatorVersion is found to hold the package.
#[derive(Debug, Default)]
pub struct InTheWay {
    found: Mutex<HashMap<(String, String), Compared>>,
}

#[derive(Debug)]
struct Compared {
    /// uid and resourceVersion of the OperatorVersion compared.
    version: (String, String),
    /// The index's digest of the package's archive.
    archive: String,
    message: String,
}

/// Comparisons kept at most (one per OperatorVersion in a move's way).
const MAX_IN_THE_WAY: usize = 1024;

fn version_of(ov: &kudo_api::OperatorVersion) -> (String, String) {
    (
        ov.metadata.uid.clone().unwrap_or_default(),
        ov.metadata.resource_version.clone().unwrap_or_default(),
    )
}

fn key_of(ov: &kudo_api::OperatorVersion) -> (String, String) {
    (
        ov.metadata.namespace.clone().unwrap_or_default(),
        ov.metadata.name.clone().unwrap_or_default(),
    )
}

impl InTheWay {
    /// What differs, when this very version of `ov` was found in the way
    /// of the package of `archive` before.
    fn known(&self, ov: &kudo_api::OperatorVersion, archive: &str) -> Option<String> {
        let found = self.found.lock().unwrap_or_else(PoisonError::into_inner);
        let compared = found.get(&key_of(ov))?;
        (compared.version == version_of(ov) && compared.archive == archive && !archive.is_empty())
            .then(|| compared.message.clone())
    }

    fn keep(&self, ov: &kudo_api::OperatorVersion, archive: &str, message: &str) {
        let mut found = self.found.lock().unwrap_or_else(PoisonError::into_inner);
        let key = key_of(ov);
        if found.len() >= MAX_IN_THE_WAY
            && !found.contains_key(&key)
            && let Some(evicted) = found.keys().next().cloned()
        {
            found.remove(&evicted);
        }
        found.insert(
            key,
            Compared {
                version: version_of(ov),
                archive: archive.to_string(),
                message: message.to_string(),
            },
        );
    }

    fn forget(&self, namespace: &str, name: &str) {
        self.found
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&(namespace.to_string(), name.to_string()));
    }
}

/// Why a move could not start, and so when it is tried again.
pub(super) enum MoveError {
    /// The release's package itself is refused (no or another digest, not
    /// the name or version the index promised, `package verify`): a new
    /// index, or a change to the Instance, brings the next try.
    Package(String),
    /// An OperatorVersion of that name holds something else: tried again
    /// now and then (nothing the manager watches says when it goes).
    InTheWay(String),
    /// Anything else (a download, an API call): tried again soon.
    Failed(String),
}

impl MoveError {
    pub(super) fn message(&self) -> &str {
        match self {
            Self::Package(m) | Self::InTheWay(m) | Self::Failed(m) => m,
        }
    }
}

/// The release's OperatorVersion in the Instance's namespace, made (with
/// its Operator) as the Instance's account from the archive the index
/// names, checked against its digest. One already there under that name is
/// used only when it holds the same package: anyone who may create
/// OperatorVersions could have made it first, with other templates, for
/// the Instance to run as its account.
pub(super) async fn ensure_operator_version(
    ctx: &Context,
    inst: &Instance,
    synced: &Synced,
    entry: &PackageVersion,
) -> Result<Moved, MoveError> {
    let ns = inst.namespace().unwrap_or_else(|| "default".into());
    let name = kudo_package::operator_version_name(
        &entry.name,
        entry.app_version.as_deref(),
        &entry.operator_version,
    );
    let cached = ctx
        .operator_versions
        .get(&ObjectRef::new(&name).within(&ns));
    let archive = entry.digest.as_deref().unwrap_or_default();
    if let Some(message) = cached
        .as_ref()
        .and_then(|cached| ctx.in_the_way.known(cached, archive))
    {
        return Err(MoveError::InTheWay(message));
    }
    let package = download(&ctx.renders, synced, entry).await?;
    let wanted = package.to_operator_version(&ns);
    let digest = spec_digest(&wanted.spec);
    if let Some(cached) = cached {
        if let Err(MoveError::InTheWay(message)) = same_package(&ns, &cached, &wanted) {
            ctx.in_the_way.keep(&cached, archive, &message);
            return Err(MoveError::InTheWay(message));
        }
        ctx.in_the_way.forget(&ns, &name);
        return Ok(Moved {
            name,
            made: None,
            digest,
        });
    }
    let writer = ctx
        .writers
        .for_instance(&ctx.client, inst)
        .map_err(MoveError::Failed)?;
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
            return Err(MoveError::Failed(format!(
                "creating Operator {} in {ns} as {who}: {e}",
                entry.name
            )));
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
                .map_err(|e| MoveError::Failed(format!("reading {name} in {ns} as {who}: {e}")))?;
            same_package(&ns, &there, &wanted)?;
            there
        }
        Err(e) => {
            return Err(MoveError::Failed(format!(
                "creating {name} in {ns} as {who}: {e}"
            )));
        }
    };
    Ok(Moved {
        name,
        made: Some(Arc::new(made)),
        digest,
    })
}

/// `sha256:` and hex of an OperatorVersion spec as JSON: the typed spec is
/// serialised, so what the API server adds (defaults, field order) does not
/// change it.
pub(crate) fn spec_digest(spec: &kudo_api::OperatorVersionSpec) -> String {
    let json = serde_json::to_vec(spec).unwrap_or_default();
    format!("sha256:{}", Digest::of(&json))
}

/// Why the Instance may not run `ov`: the OperatorVersion a channel moved it
/// to, changed since the move (its spec no longer digests as the release's
/// package did). Writing an OperatorVersion an Instance runs is judged by
/// the webhook, but between the move and the status that names it, no
/// Instance did.
pub(crate) fn changed_since_move(
    inst: &Instance,
    ov: &kudo_api::OperatorVersion,
) -> Option<String> {
    let tracked = inst.status.as_ref()?.upgrades.as_ref()?;
    let recorded = tracked.operator_version_digest.as_deref()?;
    let name = ov.metadata.name.as_deref()?;
    let ns = ov.metadata.namespace.as_deref().unwrap_or("default");
    let own = inst.metadata.namespace.as_deref().unwrap_or("default");
    if tracked.operator_version.as_deref() != Some(name) || ns != own {
        return None;
    }
    let now = spec_digest(&ov.spec);
    (now != recorded).then(|| {
        format!(
            "OperatorVersion {ns}/{name} was changed since its channel moved the Instance to \
             it: it no longer holds the release's package ({recorded}; now {now}), and is not \
             run. Delete it and install the release's package again (kubectl kudo install \
             with --skip-instance), or move the Instance to another version"
        )
    })
}

/// Refuses an OperatorVersion already there whose content is not the
/// release's package, naming what differs.
fn same_package(
    ns: &str,
    there: &kudo_api::OperatorVersion,
    wanted: &kudo_api::OperatorVersion,
) -> Result<(), MoveError> {
    let differences = kudo_api::ov_content::differences(&there.spec, &wanted.spec);
    if differences.is_empty() {
        return Ok(());
    }
    let name = wanted.metadata.name.as_deref().unwrap_or_default();
    Err(MoveError::InTheWay(format!(
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
    )))
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
) -> Result<kudo_package::Package, MoveError> {
    let expected = entry
        .digest
        .as_deref()
        .ok_or_else(|| format!("{} has no digest in the index", entry.label()))
        .and_then(|d| Digest::parse(d).map_err(|e| format!("{}: {e}", entry.label())))
        .map_err(MoveError::Package)?;
    let (bytes, shown) = tokio::time::timeout(DOWNLOAD_DEADLINE, fetch_first(synced, entry))
        .await
        .map_err(|_| {
            format!(
                "{}: the download took longer than {}s",
                entry.label(),
                DOWNLOAD_DEADLINE.as_secs()
            )
        })
        .and_then(|fetched| fetched)
        .map_err(MoveError::Failed)?;
    expected
        .verify(&bytes, &shown)
        .map_err(|e| MoveError::Package(e.to_string()))?;
    let label = entry.label();
    let entry = entry.clone();
    let checked = renders
        .run(move || {
            let located = kudo_package::load_archive_within(&bytes, &shown, MAX_PACKAGE_BYTES)
                .map_err(|e| e.to_string())?;
            kudo_repo_client::repo::check_identity(&located, &entry, &shown)
                .map_err(|e| e.to_string())?;
            located.package.verified().map_err(|e| e.to_string())?;
            Ok::<_, String>(located.package)
        })
        .await
        .map_err(|stalled| MoveError::Failed(format!("checking {label}: {stalled}")))?;
    checked.map_err(MoveError::Package)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn ov(template: &str) -> kudo_api::OperatorVersion {
        let mut ov = kudo_api::OperatorVersion::new("web-0.3.0", Default::default());
        ov.metadata.namespace = Some("team".into());
        ov.spec.templates.insert("cm.yaml".into(), template.into());
        ov
    }

    fn moved_to(ov: &kudo_api::OperatorVersion, digest: String) -> Instance {
        let mut inst = Instance::new("web", Default::default());
        inst.metadata.namespace = Some("team".into());
        inst.status = Some(kudo_api::InstanceStatus {
            upgrades: Some(kudo_api::upgrades::UpgradeStatus {
                operator_version: ov.metadata.name.clone(),
                operator_version_digest: Some(digest),
                ..Default::default()
            }),
            ..Default::default()
        });
        inst
    }

    #[test]
    fn the_digest_is_of_the_typed_spec_so_a_stored_copy_digests_alike() {
        let made = ov("a: 1");
        let stored: kudo_api::OperatorVersion =
            serde_json::from_value(serde_json::to_value(&made).unwrap()).unwrap();
        assert_eq!(spec_digest(&made.spec), spec_digest(&stored.spec));
        assert!(spec_digest(&made.spec).starts_with("sha256:"));
        assert_ne!(spec_digest(&made.spec), spec_digest(&ov("a: 2").spec));
    }

    #[test]
    fn a_version_changed_since_the_move_is_not_run_and_an_unchanged_one_is() {
        let made = ov("a: 1");
        let inst = moved_to(&made, spec_digest(&made.spec));
        assert_eq!(changed_since_move(&inst, &made), None);
        let problem = changed_since_move(&inst, &ov("a: 2")).unwrap();
        assert!(
            problem.starts_with(
                "OperatorVersion team/web-0.3.0 was changed since its channel moved the Instance"
            ),
            "{problem}"
        );
        // Another OperatorVersion than the one moved to is not judged here.
        let mut other = ov("a: 2");
        other.metadata.name = Some("web-0.2.0".into());
        assert_eq!(changed_since_move(&inst, &other), None);
    }
}
