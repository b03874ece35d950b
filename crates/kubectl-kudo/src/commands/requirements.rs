//! `install`'s check of dependency constraints: the operators the new
//! version needs (`spec.dependencies` of its OperatorVersion) against the
//! Instances of the namespace, judged by the manager's rule. An unmet
//! one is a warning, not a refusal: the Instance it needs may be
//! installed next, and the manager holds no first install.

use std::collections::BTreeMap;

use kube::api::ListParams;
use kube::{Api, ResourceExt};
use kudo_api::{Instance, OperatorVersion};
use kudo_engine::automatic::dependencies::{Counted, Move, Peer, check, counted_versions};
use kudo_engine::automatic::upgrades::Gate;

use crate::context::KubeContext;

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
    let others: Vec<&Instance> = instances
        .items
        .iter()
        .filter(|i| i.name_any() != name)
        .collect();
    // Each counts as the version its last completed plan ran with and one
    // a later plan started with, as the manager judges it.
    let counted: Vec<Counted<'_>> = others
        .iter()
        .map(|i| {
            let (settled, moving) = counted_versions(i.status.as_ref());
            let spec = |n: &str| ovs.get(n).map(|ov| &ov.spec);
            Counted::new(settled.and_then(spec), moving.and_then(spec))
        })
        .collect();
    let peers: Vec<Peer<'_>> = others
        .iter()
        .zip(&counted)
        .map(|(i, c)| {
            let names = i.spec.upgrades.as_ref().map_or(&none, |u| &u.dependencies);
            c.peer(i.metadata.name.as_deref().unwrap_or_default(), names)
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
        Gate::Hold { why, .. } => Some(why),
    }
}
