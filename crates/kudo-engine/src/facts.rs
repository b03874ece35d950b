//! Small facts and constructors that the engine's passes share: which plan
//! runs, an Event action, a plain blocker. A leaf module, so that
//! `engine`, `lifecycle` and `holds` depend on it rather than on each other.

use kudo_api::{Blocker, BlockerKind, InstanceStatus};

use crate::decision::{Action, EventType};

/// The active plan, if it is still running.
pub(crate) fn running_plan(st: &InstanceStatus) -> Option<String> {
    let active = st.active_plan.as_ref()?;
    st.plan_status
        .get(&active.name)
        .filter(|p| p.status().is_running())
        .map(|_| active.name.clone())
}

/// A blocker of kind Other with this message.
pub(crate) fn other(message: String) -> Blocker {
    Blocker {
        kind: BlockerKind::Other,
        message,
        ..Default::default()
    }
}

/// An Event action.
pub(crate) fn event(event_type: EventType, reason: &str, message: String) -> Action {
    Action::Event {
        event_type,
        reason: reason.to_string(),
        message,
    }
}
