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

use super::memo::Archive;
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

/// Why a move could not start, and so when it is tried again.
pub(super) enum MoveError {
    /// The release's package itself is refused (no digest, not the name
    /// or version the index promised, `package verify`): not tried again
    /// until the index names another archive for it.
    Package(String),
    /// An OperatorVersion of that name holds something else: compared
    /// again when it changes or goes (which wakes the Instances waiting on
    /// it), and every few minutes should that event be missed.
    InTheWay(String),
    /// Anything else (a download, an API call): tried again soon.
    Failed(String),
    /// Such a failure, remembered: not tried again before `until`.
    Paused {
        message: String,
        until: jiff::Timestamp,
    },
}

impl MoveError {
    pub(super) fn message(&self) -> &str {
        match self {
            Self::Package(m) | Self::InTheWay(m) | Self::Failed(m) => m,
            Self::Paused { message, .. } => message,
        }
    }
}

/// The release's OperatorVersion in the Instance's namespace, made (with
/// its Operator) as the Instance's account from the archive the index
/// names, checked against its digest. One already there under that name is
/// used only when it holds the same package: anyone who may create
/// OperatorVersions could have made it first, with other templates, for
/// the Instance to run as its account. What failed is remembered (per
/// archive, and per OperatorVersion in the way; see [`super::memo`]), so
/// the Instance's other reconciles do not download it again.
pub(super) async fn ensure_operator_version(
    ctx: &Context,
    inst: &Instance,
    synced: &Synced,
    entry: &PackageVersion,
) -> Result<Moved, MoveError> {
    // An entry without a digest fails before any download: nothing to keep.
    let archive = entry
        .digest
        .as_ref()
        .map(|digest| (synced.url.clone(), format!("{} {digest}", entry.label())));
    if let Some(known) = archive
        .as_ref()
        .and_then(|archive| ctx.moves.archive(archive, ctx.clock.now()))
    {
        return Err(known);
    }
    let moved = move_to(ctx, inst, synced, entry, archive.as_ref()).await;
    if let (Err(failed), Some(archive)) = (&moved, archive) {
        let retry = ctx.clock.now() + super::FAILED_MOVE_RETRY;
        ctx.moves.archive_failed(archive, failed, retry);
    }
    moved
}

async fn move_to(
    ctx: &Context,
    inst: &Instance,
    synced: &Synced,
    entry: &PackageVersion,
    archive: Option<&Archive>,
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
    let waiting = inst.name_any();
    let known = cached
        .as_ref()
        .zip(archive)
        .and_then(|(cached, archive)| ctx.moves.in_the_way(cached, archive, &waiting));
    if let Some(message) = known {
        return Err(MoveError::InTheWay(message));
    }
    let package = download(&ctx.renders, synced, entry).await?;
    let wanted = package.to_operator_version(&ns);
    let digest = spec_digest(&wanted.spec);
    // One there already: used only when it holds the package.
    let holds_package = |there: &kudo_api::OperatorVersion| {
        same_package(&ns, there, (&wanted, &digest)).inspect_err(|in_the_way| {
            if let Some(archive) = archive {
                ctx.moves
                    .keep_in_the_way(there, archive, in_the_way.message(), &waiting);
            }
        })
    };
    if let Some(cached) = cached {
        holds_package(&cached)?;
        if let Some(archive) = archive {
            ctx.moves.moved(archive, &ns, &name);
        }
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
            holds_package(&there)?;
            there
        }
        Err(e) => {
            return Err(MoveError::Failed(format!(
                "creating {name} in {ns} as {who}: {e}"
            )));
        }
    };
    if let Some(archive) = archive {
        ctx.moves.moved(archive, &ns, &name);
    }
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
    Digest::of(&json).oci()
}

/// Why an Instance of `namespace` whose channel status is `tracked` (as
/// this reconcile records it) may not run `ov`: the OperatorVersion a
/// channel moved it to, changed since the move (its spec no longer digests
/// as the release's package did). Writing an OperatorVersion an Instance
/// runs is judged by the webhook, but between the move and the status that
/// names it, no Instance did.
pub(crate) fn changed_since_move(
    tracked: &kudo_api::upgrades::UpgradeStatus,
    namespace: &str,
    ov: &kudo_api::OperatorVersion,
) -> Option<String> {
    let recorded = tracked.operator_version_digest.as_deref()?;
    let name = ov.metadata.name.as_deref()?;
    let ov_namespace = ov.metadata.namespace.as_deref().unwrap_or("default");
    if tracked.operator_version.as_deref() != Some(name) || ov_namespace != namespace {
        return None;
    }
    let now = spec_digest(&ov.spec);
    (now != recorded).then(|| {
        format!(
            "OperatorVersion {namespace}/{name} was changed since its channel moved the \
             Instance to it: it no longer holds the release's package ({recorded}; now {now}), \
             and is not run. Delete it and install the release's package again (kubectl kudo \
             install with --skip-instance), or move the Instance to another version"
        )
    })
}

/// Refuses an OperatorVersion already there whose content is not the
/// release's package, naming what differs.
fn same_package(
    ns: &str,
    there: &kudo_api::OperatorVersion,
    (wanted, wanted_digest): (&kudo_api::OperatorVersion, &str),
) -> Result<(), MoveError> {
    let mut differences = kudo_api::ov_content::differences(&there.spec, &wanted.spec);
    if differences.is_empty() {
        if spec_digest(&there.spec) == wanted_digest {
            return Ok(());
        }
        // The same by name, but in another order or with a name twice: the
        // digest the move records would not match it.
        differences.push("the order of its parameters, tasks or dependencies".into());
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
    // Other bytes than the index's digest: the server may serve the right
    // ones on the next try.
    expected
        .verify(&bytes, &shown)
        .map_err(|e| MoveError::Failed(e.to_string()))?;
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

    fn moved_to(ov: &kudo_api::OperatorVersion) -> kudo_api::upgrades::UpgradeStatus {
        kudo_api::upgrades::UpgradeStatus {
            operator_version: ov.metadata.name.clone(),
            operator_version_digest: Some(spec_digest(&ov.spec)),
            ..Default::default()
        }
    }

    #[test]
    fn the_digest_of_a_package_made_spec_is_that_of_its_stored_form() {
        // As a package makes it: a dependency without its operator's name
        // and a task without fields, which the CRD's defaults fill in.
        let made: kudo_api::OperatorVersionSpec = serde_json::from_value(serde_json::json!({
            "version": "0.3.0",
            "parameters": [{"name": "B"}, {"name": "A", "default": "1"}],
            "dependencies": [{"versions": ">=1"}],
            "tasks": [{"name": "app", "kind": "Dummy"}],
            "templates": {"b.yaml": "b", "a.yaml": "a"}
        }))
        .unwrap();
        // As the API server stores and returns it: defaults filled in,
        // maps in another order.
        let stored: kudo_api::OperatorVersionSpec = serde_json::from_str(
            r#"{"templates": {"a.yaml": "a", "b.yaml": "b"}, "tasks": [{"kind": "Dummy",
            "name": "app", "spec": {}}], "dependencies": [{"operator": "", "versions": ">=1"}],
            "parameters": [{"name": "B"}, {"default": "1", "name": "A"}], "version": "0.3.0"}"#,
        )
        .unwrap();
        assert_eq!(spec_digest(&made), spec_digest(&stored));
        assert!(spec_digest(&made).starts_with("sha256:"));
        assert_ne!(spec_digest(&ov("a: 1").spec), spec_digest(&ov("a: 2").spec));
    }

    #[test]
    fn a_version_changed_since_the_move_is_not_run_and_an_unchanged_one_is() {
        let made = ov("a: 1");
        let tracked = moved_to(&made);
        assert_eq!(changed_since_move(&tracked, "team", &made), None);
        let problem = changed_since_move(&tracked, "team", &ov("a: 2")).unwrap();
        assert!(
            problem.starts_with(
                "OperatorVersion team/web-0.3.0 was changed since its channel moved the Instance"
            ),
            "{problem}"
        );
        // Another OperatorVersion than the one moved to is not judged here,
        // nor one of another namespace.
        let mut other = ov("a: 2");
        other.metadata.name = Some("web-0.2.0".into());
        assert_eq!(changed_since_move(&tracked, "team", &other), None);
        assert_eq!(changed_since_move(&tracked, "elsewhere", &ov("a: 2")), None);
    }

    #[test]
    fn parameters_in_another_order_are_in_the_way_though_each_is_the_same() {
        let mut wanted = ov("a: 1");
        wanted.spec.parameters =
            serde_json::from_value(serde_json::json!([{"name": "A"}, {"name": "B"}])).unwrap();
        let mut there = wanted.clone();
        there.spec.parameters.reverse();
        let digest = spec_digest(&wanted.spec);
        let Err(MoveError::InTheWay(message)) = same_package("team", &there, (&wanted, &digest))
        else {
            panic!("parameters in another order were taken for the package")
        };
        assert!(message.contains("the order of its parameters"), "{message}");
        assert!(same_package("team", &wanted.clone(), (&wanted, &digest)).is_ok());
    }
}
