//! `install`'s check of dependency constraints: the operators the new
//! version needs (`spec.dependencies` of its OperatorVersion) against the
//! Instances of the namespace, judged by the manager's rule. An unmet
//! one is a warning, not a refusal: the Instance it needs may be
//! installed next, and the manager holds no first install.

use std::collections::BTreeMap;

use kube::api::ListParams;
use kube::{Api, ResourceExt};
use kudo_api::{Instance, OperatorVersion};
use kudo_engine::automatic::dependencies::{Move, Peer, check};
use kudo_engine::automatic::upgrades::Gate;

use crate::context::KubeContext;

/// The OperatorVersion an Instance runs: its last plan's, else the one it
/// is set to (the channel's, else spec's).
fn running_name(inst: &Instance) -> Option<&str> {
    let status = inst.status.as_ref();
    status
        .and_then(|s| s.applied_operator_version.as_deref())
        .or_else(|| {
            status
                .and_then(|s| s.upgrades.as_ref())
                .and_then(|u| u.operator_version.as_deref())
        })
        .or(inst.spec.operator_version.name.as_deref())
}

/// The warning for Instance `name` running `ov`, when a requirement of
/// either side would be unmet; `None` when all are met or the namespace
/// cannot be read (the install goes on; the manager judges upgrades).
pub async fn unmet(ctx: &KubeContext, name: &str, ov: &OperatorVersion) -> Option<String> {
    let spec = &ov.spec;
    let operator = spec.operator.as_ref()?.name.as_deref()?;
    let to = spec.version.as_deref()?;
    let lp = ListParams::default();
    let instances = Api::<Instance>::namespaced(ctx.client.clone(), &ctx.namespace)
        .list(&lp)
        .await
        .ok()?;
    let ovs: BTreeMap<String, OperatorVersion> =
        Api::<OperatorVersion>::namespaced(ctx.client.clone(), &ctx.namespace)
            .list(&lp)
            .await
            .ok()?
            .items
            .into_iter()
            .map(|ov| (ov.name_any(), ov))
            .collect();
    let none = BTreeMap::new();
    let peers: Vec<Peer<'_>> = instances
        .items
        .iter()
        .filter(|i| i.name_any() != name)
        .map(|i| {
            let ov = running_name(i).and_then(|n| ovs.get(n)).map(|ov| &ov.spec);
            Peer {
                instance: i.metadata.name.as_deref().unwrap_or_default(),
                operator: ov
                    .and_then(|s| s.operator.as_ref())
                    .and_then(|o| o.name.as_deref()),
                version: ov.and_then(|s| s.version.as_deref()),
                requires: ov.map_or(&[][..], |s| s.dependencies.as_slice()),
                names: i.spec.upgrades.as_ref().map_or(&none, |u| &u.dependencies),
            }
        })
        .collect();
    let mv = Move {
        instance: name,
        operator,
        to,
        requires: &spec.dependencies,
        names: &none,
    };
    match check(&mv, &peers, &kudo_repo::requirements::satisfies) {
        Gate::Go => None,
        Gate::Hold(why) => Some(why),
    }
}
