//! What a walk produces besides status changes (actions, blockers, the
//! next wake-up time, whether anything changed), and setters that record
//! whether they changed a status.

use std::borrow::Cow;
use std::collections::HashSet;
use std::hash::{DefaultHasher, Hash, Hasher};

use jiff::Timestamp;
use kudo_api::message::bounded;
use kudo_api::{Blocker, ExecutionStatus as S};

use crate::model::Action;

/// What a walk produced besides the status changes.
#[derive(Debug, Default)]
pub struct WalkOutput {
    /// RunTask and Event actions.
    pub actions: Vec<Action>,
    /// Why steps cannot start (add with [`WalkOutput::push_blocker`] or
    /// [`WalkOutput::block`] so that the duplicate check stays right).
    blockers: Vec<Blocker>,
    /// Hashes of `blockers`: a blocker whose hash is new is not a
    /// duplicate, so most checks do not scan the list (a plan waiting for
    /// canary approvals has a blocker per step).
    blocker_hashes: HashSet<u64>,
    /// Earliest time something changes by itself (a retry is due).
    pub wake_at: Option<Timestamp>,
    /// Whether the walk changed the plan status it was given.
    pub changed: bool,
}

impl WalkOutput {
    /// Adds a blocker, even if an equal one is listed.
    pub fn push_blocker(&mut self, mut b: Blocker) {
        if let Cow::Owned(cut) = bounded(&b.message) {
            b.message = cut;
        }
        self.blocker_hashes.insert(blocker_hash(&b));
        self.blockers.push(b);
    }

    /// Adds a blocker unless an equal one is listed.
    pub fn block(&mut self, b: Blocker) {
        if !self.has_blocker(&b) {
            self.push_blocker(b);
        }
    }

    /// Whether an equal blocker is listed (compared as it is stored, its
    /// message cut).
    pub fn has_blocker(&self, b: &Blocker) -> bool {
        if let Cow::Owned(cut) = bounded(&b.message) {
            let stored = Blocker {
                message: cut,
                ..b.clone()
            };
            return self.has_stored(&stored);
        }
        self.has_stored(b)
    }

    fn has_stored(&self, b: &Blocker) -> bool {
        self.blocker_hashes.contains(&blocker_hash(b)) && self.blockers.contains(b)
    }

    /// The blockers, in the order they were added.
    pub fn blockers(&self) -> &[Blocker] {
        &self.blockers
    }

    /// Takes the blockers out.
    pub fn take_blockers(&mut self) -> Vec<Blocker> {
        self.blocker_hashes.clear();
        std::mem::take(&mut self.blockers)
    }

    pub(crate) fn wake(&mut self, t: Timestamp) {
        self.wake_at = Some(self.wake_at.map_or(t, |w| w.min(t)));
    }
}

fn blocker_hash(b: &Blocker) -> u64 {
    let mut h = DefaultHasher::new();
    b.kind.hash(&mut h);
    b.message.hash(&mut h);
    b.until.as_ref().map(|t| t.0).hash(&mut h);
    b.plan.hash(&mut h);
    b.phase.hash(&mut h);
    b.step.hash(&mut h);
    h.finish()
}

/// Sets `slot` to `to`, recording whether that changed it.
pub(crate) fn set_status(slot: &mut Option<S>, to: S, changed: &mut bool) {
    if *slot != Some(to) {
        *slot = Some(to);
        *changed = true;
    }
}

/// Sets `slot` to `to` (reusing its buffer), recording whether that changed
/// it; a message over [`kudo_api::message::MAX_STATUS_MESSAGE`] is cut.
pub(crate) fn set_message(slot: &mut String, to: &str, changed: &mut bool) {
    let to = bounded(to);
    if *slot != to {
        slot.clear();
        slot.push_str(&to);
        *changed = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kudo_api::BlockerKind;

    fn blocker(message: &str) -> Blocker {
        Blocker {
            kind: BlockerKind::Paused,
            message: message.to_string(),
            ..Default::default()
        }
    }

    #[test]
    fn block_skips_equal_blockers_and_keeps_the_order() {
        let mut out = WalkOutput::default();
        out.block(blocker("a"));
        out.block(blocker("b"));
        out.block(blocker("a"));
        let other_kind = Blocker {
            kind: BlockerKind::Backoff,
            ..blocker("a")
        };
        out.block(other_kind.clone());
        assert_eq!(out.blockers(), [blocker("a"), blocker("b"), other_kind]);
        assert!(out.has_blocker(&blocker("b")));
        assert!(!out.has_blocker(&blocker("c")));
    }

    #[test]
    fn push_blocker_keeps_duplicates_and_take_empties_the_list() {
        let mut out = WalkOutput::default();
        out.push_blocker(blocker("a"));
        out.push_blocker(blocker("a"));
        assert_eq!(out.blockers().len(), 2);
        assert_eq!(out.take_blockers().len(), 2);
        assert!(!out.has_blocker(&blocker("a")));
        out.block(blocker("a"));
        assert_eq!(out.blockers(), [blocker("a")]);
    }

    #[test]
    fn a_long_blocker_is_listed_once() {
        let mut out = WalkOutput::default();
        let long = blocker(&"x".repeat(10_000));
        out.block(long.clone());
        out.block(long.clone());
        assert_eq!(out.blockers().len(), 1);
        assert!(out.has_blocker(&long));
    }

    #[test]
    fn a_long_message_is_cut_and_setting_it_again_is_no_change() {
        let long = "é".repeat(10_000);
        let (mut slot, mut changed) = (String::new(), false);
        set_message(&mut slot, &long, &mut changed);
        assert!(changed && slot.len() <= kudo_api::message::MAX_STATUS_MESSAGE);
        changed = false;
        set_message(&mut slot, &long, &mut changed);
        assert!(!changed, "the cut message is what is compared");
    }

    #[test]
    fn setters_report_only_real_changes() {
        let mut changed = false;
        let mut status = Some(S::Pending);
        set_status(&mut status, S::Pending, &mut changed);
        let mut message = String::from("same");
        set_message(&mut message, "same", &mut changed);
        assert!(!changed);
        set_message(&mut message, "other", &mut changed);
        assert!(changed && message == "other");
        let mut changed = false;
        set_status(&mut status, S::Waiting, &mut changed);
        assert!(changed && status == Some(S::Waiting));
    }
}
