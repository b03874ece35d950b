//! The 409 a server-side apply gets when it would take fields another
//! manager owns.

use serde_json::json;

use super::subject;
use crate::registry::ResourceInfo;
use crate::ssa;
use crate::status::ApiError;

pub(super) fn conflict_error(
    res: &ResourceInfo,
    name: &str,
    conflicts: &[ssa::Conflict],
) -> ApiError {
    let lines: Vec<String> = conflicts
        .iter()
        .map(|c| format!("conflict with \"{}\": {}", c.manager, c.field))
        .collect();
    let plural_s = if conflicts.len() == 1 { "" } else { "s" };
    let mut e = ApiError::conflict(
        subject(res, name),
        &format!(
            "Apply failed with {} conflict{plural_s}: {}",
            conflicts.len(),
            lines.join("\n")
        ),
    );
    if let Some(d) = e.details.as_mut() {
        d["causes"] = json!(conflicts
            .iter()
            .map(|c| json!({"reason": "FieldManagerConflict", "message": format!("conflict with \"{}\"", c.manager), "field": c.field}))
            .collect::<Vec<_>>());
    }
    e
}
