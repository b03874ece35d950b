//! Instances that track a channel (`spec.upgrades`): observe the
//! repository's index (in memory, kept by `repositories/`), let
//! `kudo_repo::upgrade::resolve` choose the version and
//! `kudo_engine::automatic::upgrades::gate` say whether it may start, and
//! act: make the release's Operator and OperatorVersion in the Instance's
//! namespace as the Instance's own account, from the digest-checked
//! archive, and record the move in `status.upgrades`. The Instance the rest
//! of the reconcile sees then names that OperatorVersion, so the upgrade
//! runs as any upgrade does (`upgrade`, else `update`, else `deploy`).
//! The manager never writes spec.

use std::sync::Arc;

use kudo_api::Instance;
use kudo_api::upgrades::UpgradeStatus;
use kudo_engine::automatic::upgrades::{Gate, Lifts, Offer};
use kudo_engine::automatic::upgrades_namespace::gate;
use kudo_repo::Range;
use kudo_repo::upgrade::{Choice, Track, Why, resolve};

use crate::context::Context;

/// What observing decided: the Instance the reconcile works with (its
/// spec naming the tracked OperatorVersion), the new `status.upgrades`,
/// and the Event of a move started now.
pub struct Observed {
    /// The Instance with its effective OperatorVersion.
    pub instance: Arc<Instance>,
    /// `status.upgrades` to record (`None`: the Instance tracks nothing).
    pub status: Option<UpgradeStatus>,
    /// `UpgradeStarted` message, once, when a move starts.
    pub started: Option<String>,
    /// The OperatorVersion made for the move, as the API server returned
    /// it: the cache may not hold it yet, and this reconcile runs with it
    /// instead of waiting for the watch.
    pub made: Option<Arc<kudo_api::OperatorVersion>>,
    /// What lifts the hold on a move the channel offers (`None`: no move
    /// is held, or only a new index or a spec change brings another).
    pub held: Option<Lifts>,
}

/// The Instance as the reconcile should see it: `spec.operatorVersion`
/// replaced by the OperatorVersion `status.upgrades` names while that is in
/// force.
pub fn effective(inst: Arc<Instance>) -> Arc<Instance> {
    let target = in_force(&inst);
    with_operator_version(inst, target)
}

/// The OperatorVersion a channel move installed and that is still in force
/// (`UpgradeStatus::in_force`).
fn in_force(inst: &Instance) -> Option<String> {
    let tracked = inst.status.as_ref()?.upgrades.as_ref()?;
    tracked.in_force(&inst.spec).map(str::to_owned)
}

/// `inst` running `target`.
fn with_operator_version(inst: Arc<Instance>, target: Option<String>) -> Arc<Instance> {
    let own = inst.metadata.namespace.as_deref().unwrap_or_default();
    let elsewhere = |reference: &kudo_api::ObjectReference| {
        kudo_api::ov_namespace(reference.namespace.as_deref(), own) != own
    };
    match target {
        // The channel's OperatorVersion is of the Instance's own namespace,
        // even when spec names one of the same name elsewhere.
        Some(name)
            if inst.spec.operator_version.name.as_deref() != Some(name.as_str())
                || elsewhere(&inst.spec.operator_version) =>
        {
            let mut copy = (*inst).clone();
            copy.spec.operator_version.name = Some(name);
            copy.spec.operator_version.namespace = None;
            Arc::new(copy)
        }
        _ => inst,
    }
}

/// An Instance without `spec.upgrades`: one that tracked a channel stays on
/// the version the channel installed until spec names another one, and says
/// so; otherwise `status.upgrades` goes.
fn untracked(inst: Arc<Instance>) -> Observed {
    let stored = inst.status.as_ref().and_then(|s| s.upgrades.as_ref());
    let (status, target) = match (stored, in_force(&inst)) {
        (Some(stored), Some(target))
            if inst.spec.operator_version.name.as_deref() != Some(target.as_str()) =>
        {
            let mut status = stored.clone();
            status.available = None;
            status.reason = Some(format!(
                "spec.upgrades is unset: the Instance stays on {target}, which its channel \
                 installed; set spec.operatorVersion to {target} to make that explicit, or to \
                 another OperatorVersion to move"
            ));
            (Some(status), Some(target))
        }
        _ => (None, None),
    };
    Observed {
        instance: with_operator_version(inst, target),
        status,
        started: None,
        made: None,
        held: None,
    }
}

/// Observes and acts for an Instance with `spec.upgrades`.
pub async fn observe(ctx: &Context, inst: Arc<Instance>) -> Observed {
    let Some(policy) = inst.spec.upgrades.clone() else {
        return untracked(inst);
    };
    let mut status = inst
        .status
        .as_ref()
        .and_then(|s| s.upgrades.clone())
        .unwrap_or_default();
    let spec_ov = inst.spec.operator_version.name.clone();
    if status.operator_version.is_some() && status.spec_operator_version != spec_ov {
        // A person changed spec.operatorVersion (rollback, upgrade): it
        // wins, and the version left is not chosen again by itself.
        status.skipped = status.installed.take();
        status.operator_version = None;
        status.operator_version_digest = None;
        status.last_change = Some(format!(
            "spec.operatorVersion set to {} by hand",
            spec_ov.as_deref().unwrap_or_default()
        ));
    }
    rolled_back(&policy, &mut status);
    let inst = with_operator_version(inst, status.operator_version.clone());
    let ov = ctx.operator_version_of(&inst);
    let installed = status
        .installed
        .clone()
        .or_else(|| ov.as_ref().and_then(|ov| ov.spec.version.clone()));
    status.installed = installed.clone();
    let done = |status: UpgradeStatus, inst: Arc<Instance>| Observed {
        instance: inst,
        status: Some(status),
        started: None,
        made: None,
        held: None,
    };
    let own_ns = inst.metadata.namespace.as_deref().unwrap_or_default();
    let no_index = || {
        format!(
            "repository {} has no index yet: no such OperatorRepository, or it has not \
             synced (kubectl kudo repo list --in-cluster)",
            policy.repository
        )
    };
    // Only a repository the watch shows, and whose spec lists the namespace,
    // is used: an index synced just before its repository was deleted is not.
    match ctx.repositories.serves(&policy.repository, own_ns) {
        Some(true) => {}
        Some(false) => {
            status.reason = Some(format!(
                "repository {} does not serve namespace {own_ns}: its spec.allowedNamespaces \
                 does not list it (a cluster administrator decides which namespaces may use a \
                 repository)",
                policy.repository
            ));
            return done(status, inst);
        }
        None => {
            status.reason = Some(no_index());
            return done(status, inst);
        }
    }
    let Some(synced) = ctx.repositories.get(&policy.repository) else {
        status.reason = Some(no_index());
        return done(status, inst);
    };
    let range = match policy.versions.as_deref().map(Range::parse).transpose() {
        Ok(r) => r,
        Err(e) => {
            status.reason = Some(format!("spec.upgrades.versions: {e}"));
            return done(status, inst);
        }
    };
    let Some(operator) = operator_name(&inst, ov.as_deref()) else {
        status.reason = Some(
            "the operator of spec.operatorVersion is unknown (its OperatorVersion is missing)"
                .into(),
        );
        return done(status, inst);
    };
    let Some(versions) = synced.index.entries.get(&operator) else {
        status.reason = Some(format!(
            "repository {} has no operator {operator}",
            policy.repository
        ));
        return done(status, inst);
    };
    let recalls = synced.index.recalls(&operator);
    let kubernetes = ctx.kubernetes_version().await;
    let track = Track {
        channel: policy.channel(),
        range: range.as_ref(),
        installed: installed.as_deref(),
        allow_downgrade: policy.allow_downgrade,
        kubernetes: kubernetes.as_ref(),
    };
    let resolution = resolve(versions, &recalls, &track);
    status.available = resolution.available.map(|v| v.operator_version.clone());
    let (to, why) = match resolution.choice {
        Choice::Stay { note } => {
            status.reason = Some(note);
            return done(status, inst);
        }
        Choice::NoVersion { message } => {
            status.reason = Some(message);
            return done(status, inst);
        }
        Choice::Move { to, why } => (to, why),
    };
    let describe = why.describe(policy.channel(), &to.operator_version);
    if status.skipped.as_deref() == Some(to.operator_version.as_str())
        && !matches!(why, Why::Recall { .. })
    {
        status.reason = Some(format!(
            "{describe}: {} was left by hand (rolled back); waiting for a newer version",
            to.operator_version
        ));
        return done(status, inst);
    }
    // The version a person rolled back from is not moved to again by the
    // channel, not even to leave a recall: that would undo the rollback.
    if policy.rolled_back_from.as_deref() == Some(to.operator_version.as_str()) {
        status.reason = Some(format!(
            "{describe}: {} was rolled back from by hand (spec.upgrades.rolledBackFrom) and is \
             not moved to again",
            to.operator_version
        ));
        return done(status, inst);
    }
    let offer = Offer {
        version: &to.operator_version,
        recall: matches!(why, Why::Recall { .. }),
    };
    let now = ctx.clock.now();
    let namespace = ctx
        .namespace_counts
        .observe(&inst, ctx.engine.namespace_suppression_threshold);
    if let Gate::Hold { why, lifts } = gate(&inst, &offer, now, &ctx.engine, namespace.as_ref()) {
        status.reason = Some(format!("{describe}: {why}"));
        return Observed {
            held: Some(lifts),
            ..done(status, inst)
        };
    }
    let requires: Vec<_> = to
        .dependencies
        .iter()
        .map(kudo_repo::requirements::IndexDependency::requirement)
        .collect();
    if let Some(hold) =
        crate::dependencies::hold(ctx, &inst, &operator, &to.operator_version, &requires)
    {
        status.reason = Some(format!("{describe}: {hold}"));
        return Observed {
            held: Some(Lifts::PeerMove),
            ..done(status, inst)
        };
    }
    match ensure_operator_version(ctx, &inst, &synced, to).await {
        Ok(moved) => {
            status.operator_version = Some(moved.name);
            status.operator_version_digest = Some(moved.digest);
            status.spec_operator_version = spec_ov;
            status.skipped = None;
            status.installed = Some(to.operator_version.clone());
            status.last_change = Some(describe.clone());
            status.reason = None;
            // The stored status stays as read: the status write compares
            // against it.
            Observed {
                instance: with_operator_version(inst, status.operator_version.clone()),
                status: Some(status),
                started: Some(describe),
                made: moved.made,
                held: None,
            }
        }
        Err(failed) => {
            status.reason = Some(format!("{describe}: {}", failed.message()));
            // From now: a download may have taken its two minutes.
            Observed {
                held: Some(retry(&failed, ctx.clock.now())),
                ..done(status, inst)
            }
        }
    }
}

/// When a move that could not start is looked at again: a refused package
/// with the next index or change to the Instance (either brings a
/// reconcile; the archive is tried again only when the index names another),
/// the others after a pause.
fn retry(failed: &MoveError, now: jiff::Timestamp) -> Lifts {
    match failed {
        MoveError::Package(_) => Lifts::Change,
        MoveError::InTheWay(_) => Lifts::At(now + IN_THE_WAY_RETRY),
        MoveError::Failed(_) => Lifts::At(now + FAILED_MOVE_RETRY),
        MoveError::Paused { until, .. } => Lifts::At(*until),
    }
}

/// When a move whose download or API call failed is tried again.
const FAILED_MOVE_RETRY: jiff::SignedDuration = jiff::SignedDuration::from_secs(30);
/// When a move held by an OperatorVersion of other content is looked at
/// again (a change to that OperatorVersion brings it back sooner).
const IN_THE_WAY_RETRY: jiff::SignedDuration = jiff::SignedDuration::from_mins(5);

/// A person rolled back from the version the manager moved to (the
/// channel's move left spec.operatorVersion as it was, so a rollback names
/// the version it leaves instead): spec wins again, and that version is
/// skipped until a newer one is offered.
fn rolled_back(policy: &kudo_api::upgrades::UpgradePolicy, status: &mut UpgradeStatus) {
    if status.operator_version.is_some()
        && policy.rolled_back_from.is_some()
        && policy.rolled_back_from == status.installed
    {
        status.skipped = status.installed.take();
        status.operator_version = None;
        status.operator_version_digest = None;
        status.last_change = Some(format!(
            "rolled back from {} by hand",
            status.skipped.as_deref().unwrap_or_default()
        ));
    }
}

/// The operator the Instance runs: its OperatorVersion's operator.
fn operator_name(inst: &Instance, ov: Option<&kudo_api::OperatorVersion>) -> Option<String> {
    ov.and_then(|ov| ov.spec.operator.as_ref())
        .and_then(|o| o.name.clone())
        .or_else(|| {
            inst.metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(kudo_api::names::OPERATOR_LABEL).cloned())
        })
}

#[path = "upgrades_memo.rs"]
mod memo;
#[path = "upgrades_package.rs"]
mod package;
pub use memo::MoveMemo;
pub(crate) use package::changed_since_move;
#[cfg(test)]
pub(crate) use package::spec_digest;
use package::{MoveError, ensure_operator_version};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::repositories::Synced;

    #[test]
    fn a_refused_package_waits_for_a_change_and_other_failures_for_a_pause() {
        let now = jiff::Timestamp::from_second(1_000).unwrap();
        assert_eq!(
            retry(&MoveError::Package("verify".into()), now),
            Lifts::Change
        );
        assert_eq!(
            retry(&MoveError::Failed("timeout".into()), now),
            Lifts::At(now + jiff::SignedDuration::from_secs(30))
        );
        assert_eq!(
            retry(&MoveError::InTheWay("differs".into()), now),
            Lifts::At(now + jiff::SignedDuration::from_mins(5))
        );
        // A failure remembered from an earlier try: when its pause ends.
        let until = now + jiff::SignedDuration::from_secs(12);
        let paused = MoveError::Paused {
            message: "timeout".into(),
            until,
        };
        assert_eq!(retry(&paused, now), Lifts::At(until));
    }

    #[tokio::test]
    async fn an_index_without_its_repository_in_the_watch_is_not_used() {
        // Nothing listens there: the test never sends a request.
        let config = kube::Config::new("http://127.0.0.1:9".parse().unwrap());
        let ctx = Context::for_tests(kube::Client::try_from(config).unwrap());
        // A sync that ended after its OperatorRepository was deleted.
        let base = kudo_repo::urls::Url::parse("http://repo.invalid/").unwrap();
        ctx.repositories.set(
            "gone",
            Synced {
                url: base.to_string(),
                digest: String::new(),
                index: Arc::new(kudo_repo::IndexFile::new(None)),
                base,
                credentials: None,
                ca_pem: None,
            },
        );
        let mut inst = Instance::new("web", Default::default());
        inst.metadata.namespace = Some("team".into());
        inst.spec.upgrades = Some(kudo_api::upgrades::UpgradePolicy {
            repository: "gone".into(),
            ..Default::default()
        });
        let seen = observe(&ctx, Arc::new(inst)).await;
        assert_eq!(
            seen.status.and_then(|s| s.reason).as_deref(),
            Some(
                "repository gone has no index yet: no such OperatorRepository, or it has not \
                 synced (kubectl kudo repo list --in-cluster)"
            )
        );
    }
}
