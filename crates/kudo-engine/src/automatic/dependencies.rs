//! Dependency constraints between Instances of one namespace (Apollo's
//! product dependencies): whether a channel move would leave a
//! requirement unmet, on either side. The dependent's new version may
//! need a newer dependency than the one running, and the dependency's
//! new version may fall outside what a dependent needs. Decided without
//! IO from what the manager's caches say about the namespace's other
//! Instances; ranges are judged by the function the caller passes (the
//! repository's range dialect).

use std::collections::BTreeMap;

use kudo_api::requirements::{MAX_REQUIREMENTS, Requirement};
use kudo_api::{InstanceStatus, OperatorVersionSpec};

use super::upgrades::{Gate, Lifts};

/// Whether `version` is in `range`; an error names what does not parse.
pub type Satisfies<'f> = &'f dyn Fn(&str, &str) -> Result<bool, String>;

/// The move asked for.
#[derive(Clone, Copy, Debug)]
pub struct Move<'a> {
    /// The Instance that moves.
    pub instance: &'a str,
    /// Its operator.
    pub operator: &'a str,
    /// The operator version it moves to.
    pub to: &'a str,
    /// What that version needs.
    pub requires: &'a [Requirement],
    /// Its `spec.upgrades.dependencies`: operator → Instance.
    pub names: &'a BTreeMap<String, String>,
}

/// Another Instance of the namespace.
#[derive(Clone, Copy, Debug)]
pub struct Peer<'a> {
    /// Its name.
    pub instance: &'a str,
    /// Its operator (unknown when its OperatorVersion is missing).
    pub operator: Option<&'a str>,
    /// The operator version it last completed a plan with (unknown
    /// likewise, or when none completed yet).
    pub version: Option<&'a str>,
    /// A version a later plan of it started with and has not completed
    /// (an upgrade running, or failed): a requirement must hold for both.
    pub moving_to: Option<&'a str>,
    /// What those versions need.
    pub requires: &'a [Requirement],
    /// Its `spec.upgrades.dependencies`.
    pub names: &'a BTreeMap<String, String>,
}

/// The OperatorVersion names an Instance counts as for these holds: the
/// one its last completed plan ran with, and the one a later plan started
/// with and has not completed. A dependency counts as upgraded only once
/// its upgrade has finished.
pub fn counted_versions(status: Option<&InstanceStatus>) -> (Option<&str>, Option<&str>) {
    let settled = status
        .and_then(|s| s.last_successful.as_ref())
        .map(|l| l.operator_version.as_str())
        .filter(|n| !n.is_empty());
    let applied = status.and_then(|s| s.applied_operator_version.as_deref());
    (settled, applied.filter(|a| Some(*a) != settled))
}

/// An Instance's counted versions (see [`counted_versions`]) resolved to
/// their OperatorVersions, with what either needs.
#[derive(Debug)]
pub struct Counted<'a> {
    settled: Option<&'a OperatorVersionSpec>,
    moving: Option<&'a OperatorVersionSpec>,
    requires: Vec<Requirement>,
}

impl<'a> Counted<'a> {
    /// `settled`: the OperatorVersion of the last completed plan; `moving`:
    /// one a later plan started with (`None` when not found either). One
    /// that lists more requirements than a package may declare was edited
    /// by hand and counts as not found, which bounds the work per peer.
    pub fn new(
        settled: Option<&'a OperatorVersionSpec>,
        moving: Option<&'a OperatorVersionSpec>,
    ) -> Self {
        let plausible = |s: &&OperatorVersionSpec| s.dependencies.len() <= MAX_REQUIREMENTS;
        let (settled, moving) = (settled.filter(plausible), moving.filter(plausible));
        let mut requires: Vec<Requirement> = Vec::new();
        for need in settled.iter().chain(&moving).flat_map(|s| &s.dependencies) {
            if !requires.contains(need) {
                requires.push(need.clone());
            }
        }
        Self {
            settled,
            moving,
            requires,
        }
    }

    /// The Instance `instance` as a peer of a move.
    pub fn peer<'b>(&'b self, instance: &'b str, names: &'b BTreeMap<String, String>) -> Peer<'b> {
        Peer {
            instance,
            operator: self
                .settled
                .or(self.moving)
                .and_then(|s| s.operator.as_ref())
                .and_then(|o| o.name.as_deref()),
            version: self.settled.and_then(|s| s.version.as_deref()),
            moving_to: self.moving.and_then(|s| s.version.as_deref()),
            requires: &self.requires,
            names,
        }
    }
}

/// Whether `mv` leaves every requirement met: the first that it would
/// not, as a hold naming both Instances and the range.
pub fn check(mv: &Move<'_>, peers: &[Peer<'_>], satisfies: Satisfies<'_>) -> Gate {
    for need in mv.requires {
        if let Some(hold) = needs(mv, need, peers, satisfies) {
            return Gate::held(hold, Lifts::PeerMove);
        }
    }
    for peer in peers {
        if let Some(hold) = breaks(mv, peer, peers, satisfies) {
            return Gate::held(hold, Lifts::PeerMove);
        }
    }
    Gate::Go
}

/// The Instance that satisfies a requirement on `operator`: the one named,
/// else the one Instance of that operator among `candidates`.
fn provider<'p, 'q: 'p>(
    operator: &str,
    names: &BTreeMap<String, String>,
    candidates: impl Iterator<Item = &'p Peer<'q>> + Clone,
) -> Result<&'p Peer<'q>, String> {
    if let Some(named) = names.get(operator) {
        return match candidates.clone().find(|p| p.instance == named) {
            Some(p) if p.operator.is_none_or(|o| o == operator) => Ok(p),
            Some(p) => Err(format!(
                "Instance {named} named for it in spec.upgrades.dependencies runs operator {}",
                p.operator.unwrap_or_default()
            )),
            None => Err(format!(
                "Instance {named} named for it in spec.upgrades.dependencies does not exist \
                 in this namespace"
            )),
        };
    }
    let mut of = candidates.filter(|p| p.operator == Some(operator));
    match (of.next(), of.next()) {
        (Some(one), None) => Ok(one),
        (None, _) => Err(format!("no Instance of {operator} runs in this namespace")),
        (Some(a), Some(b)) => Err(format!(
            "several Instances of {operator} run in this namespace ({}, {}{}); name one in \
             spec.upgrades.dependencies.{operator}",
            a.instance,
            b.instance,
            if of.next().is_some() { ", ..." } else { "" }
        )),
    }
}

/// (a) what the new version needs from the Instance that provides it.
fn needs(
    mv: &Move<'_>,
    need: &Requirement,
    peers: &[Peer<'_>],
    satisfies: Satisfies<'_>,
) -> Option<String> {
    let range = need.range();
    let wants = format!("{} {} needs {} {range}", mv.operator, mv.to, need.operator);
    let peer = match provider(&need.operator, mv.names, peers.iter()) {
        Ok(p) => p,
        Err(why) => return Some(format!("{wants}; {why}")),
    };
    let moving = peer
        .moving_to
        .map(|m| format!(" (its move to {m} has not completed)"))
        .unwrap_or_default();
    let Some(version) = peer.version else {
        return Some(format!(
            "{wants}; Instance {} has not completed a plan on a known version{moving}",
            peer.instance
        ));
    };
    match satisfies(range, version) {
        Ok(true) => {}
        Ok(false) => {
            return Some(format!(
                "{wants}; Instance {} runs {version}{moving}",
                peer.instance
            ));
        }
        Err(e) => return Some(format!("{wants}: {e}")),
    }
    let to = peer.moving_to?;
    match satisfies(range, to) {
        Ok(true) => None,
        Ok(false) => Some(format!(
            "{wants}; Instance {} is moving to {to}",
            peer.instance
        )),
        Err(e) => Some(format!("{wants}: {e}")),
    }
}

/// (b) whether `peer` needs the moving Instance, and in a range the new
/// version leaves (any of its ranges: a peer that is moving has those of
/// both its versions).
fn breaks(
    mv: &Move<'_>,
    peer: &Peer<'_>,
    peers: &[Peer<'_>],
    satisfies: Satisfies<'_>,
) -> Option<String> {
    let mut needs = peer
        .requires
        .iter()
        .filter(|r| r.operator == mv.operator)
        .peekable();
    needs.peek()?;
    // Is the moving Instance the one this peer's requirement resolves to?
    // The candidates are the peer's neighbours: everyone but itself, and
    // the moving Instance as its new self.
    let me = Peer {
        instance: mv.instance,
        operator: Some(mv.operator),
        version: Some(mv.to),
        moving_to: None,
        requires: mv.requires,
        names: mv.names,
    };
    let candidates = peers
        .iter()
        .filter(|p| p.instance != peer.instance)
        .chain(std::iter::once(&me));
    let provides =
        provider(mv.operator, peer.names, candidates).is_ok_and(|p| p.instance == mv.instance);
    if !provides {
        return None;
    }
    needs.find_map(|need| {
        let range = need.range();
        let why = match satisfies(range, mv.to) {
            Ok(true) => return None,
            Ok(false) => String::new(),
            Err(e) => format!(" ({e})"),
        };
        Some(format!(
            "{} {} would break Instance {}, which needs {} {range}{why}",
            mv.operator, mv.to, peer.instance, mv.operator
        ))
    })
}

#[cfg(test)]
#[path = "dependencies_tests.rs"]
mod tests;
