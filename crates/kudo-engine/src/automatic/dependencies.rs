//! Dependency constraints between Instances of one namespace (Apollo's
//! product dependencies): whether a channel move would leave a
//! requirement unmet, on either side. The dependent's new version may
//! need a newer dependency than the one running, and the dependency's
//! new version may fall outside what a dependent needs. Decided without
//! IO from what the manager's caches say about the namespace's other
//! Instances; ranges are judged by the function the caller passes (the
//! repository's range dialect).

use std::collections::BTreeMap;

use kudo_api::requirements::Requirement;

use super::upgrades::Gate;

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
    /// The operator version it runs (unknown likewise).
    pub version: Option<&'a str>,
    /// What that version needs.
    pub requires: &'a [Requirement],
    /// Its `spec.upgrades.dependencies`.
    pub names: &'a BTreeMap<String, String>,
}

/// Whether `mv` leaves every requirement met: the first that it would
/// not, as a hold naming both Instances and the range.
pub fn check(mv: &Move<'_>, peers: &[Peer<'_>], satisfies: Satisfies<'_>) -> Gate {
    for need in mv.requires {
        if let Some(hold) = needs(mv, need, peers, satisfies) {
            return Gate::Hold(hold);
        }
    }
    for peer in peers {
        if let Some(hold) = breaks(mv, peer, peers, satisfies) {
            return Gate::Hold(hold);
        }
    }
    Gate::Go
}

/// The Instance that satisfies a requirement on `operator`: the one named,
/// else the one Instance of that operator among `candidates`.
fn provider<'p>(
    operator: &str,
    names: &BTreeMap<String, String>,
    candidates: &'p [Peer<'p>],
) -> Result<&'p Peer<'p>, String> {
    if let Some(named) = names.get(operator) {
        return match candidates.iter().find(|p| p.instance == named) {
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
    let mut of = candidates.iter().filter(|p| p.operator == Some(operator));
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
    let peer = match provider(&need.operator, mv.names, peers) {
        Ok(p) => p,
        Err(why) => return Some(format!("{wants}; {why}")),
    };
    let Some(version) = peer.version else {
        return Some(format!(
            "{wants}; the version Instance {} runs is not known",
            peer.instance
        ));
    };
    match satisfies(range, version) {
        Ok(true) => None,
        Ok(false) => Some(format!(
            "{wants}; Instance {} runs {version}",
            peer.instance
        )),
        Err(e) => Some(format!("{wants}: {e}")),
    }
}

/// (b) whether `peer` needs the moving Instance, and in a range the new
/// version leaves.
fn breaks(
    mv: &Move<'_>,
    peer: &Peer<'_>,
    peers: &[Peer<'_>],
    satisfies: Satisfies<'_>,
) -> Option<String> {
    let need = peer.requires.iter().find(|r| r.operator == mv.operator)?;
    // Is the moving Instance the one this peer's requirement resolves to?
    // The candidates are the peer's neighbours: everyone but itself, and
    // the moving Instance as its new self.
    let me = Peer {
        instance: mv.instance,
        operator: Some(mv.operator),
        version: Some(mv.to),
        requires: mv.requires,
        names: mv.names,
    };
    let candidates: Vec<Peer<'_>> = peers
        .iter()
        .filter(|p| p.instance != peer.instance)
        .copied()
        .chain(std::iter::once(me))
        .collect();
    let provides =
        provider(mv.operator, peer.names, &candidates).is_ok_and(|p| p.instance == mv.instance);
    if !provides {
        return None;
    }
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
}

#[cfg(test)]
#[path = "dependencies_tests.rs"]
mod tests;
