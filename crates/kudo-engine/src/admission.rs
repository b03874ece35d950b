//! Admission rules for Instance changes (the validating webhook's logic).

use kudo_api::{Instance, OperatorVersion};

/// The webhook's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The change may go through, possibly with warnings shown to the user.
    Allowed {
        /// Warnings (e.g. the change waits for a window).
        warnings: Vec<String>,
    },
    /// The change is refused.
    Denied {
        /// Why, naming what is in the way and what to do.
        message: String,
    },
}

/// Reviews a create (`old == None`), update or delete (the old object passed
/// as `new` with `deletionTimestamp` set) of an Instance.
///
/// `new_ov == None` means the OperatorVersion `new` names was not found.
pub fn review(
    _old: Option<&Instance>,
    new: &Instance,
    _old_ov: Option<&OperatorVersion>,
    new_ov: Option<&OperatorVersion>,
) -> Verdict {
    if new_ov.is_none() {
        return Verdict::Denied {
            message: format!(
                "OperatorVersion {:?} not found; install the operator version first",
                new.spec.operator_version.name.as_deref().unwrap_or("")
            ),
        };
    }
    Verdict::Allowed {
        warnings: Vec::new(),
    }
}
