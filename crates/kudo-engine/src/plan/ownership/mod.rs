//! Who an object belongs to, and what an Instance may do to it.
//!
//! Server-side apply with force takes any object, so two Instances whose
//! templates render the same name would silently fight over it (and the
//! controller reference would move). Like Helm, kudo-rs writes only objects
//! it created for this Instance, unless someone opts into adoption: the
//! package (annotation `kudo.dev/adopt-existing: "true"` on the rendered
//! object) for objects of the Instance's namespace no Instance owns, or the
//! object's owner (annotation `kudo.dev/adopt-by: <namespace>/<instance>`
//! on the live object) for any.
//!
//! Namespaces and CustomResourceDefinitions are shared: every Instance that
//! renders one kudo-rs created applies it and is recorded on it as an owner
//! (`owners.kudo.dev/<uid>`); one kudo-rs did not create is used as it is.
//! A cluster-scoped object is deleted only when the last owner lets it go,
//! a CustomResourceDefinition only when asked ([`release`]).

pub mod children;
mod release;
mod write;

use kudo_api::names::{HERITAGE_LABEL, HERITAGE_VALUE};
use serde_json::Value;

pub use release::{Owner, Release, owner_annotation, owners, release};
pub use write::{Write, left_by_predecessor, may_patch_child, may_write};

/// The Instance that wants to write (or let go).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Claimant<'a> {
    /// Instance name.
    pub name: &'a str,
    /// Instance namespace.
    pub namespace: &'a str,
    /// Instance uid.
    pub uid: &'a str,
}

/// Kinds several Instances may apply (a CRD every Instance of an operator
/// applies, a namespace several packages use).
pub fn is_shared_kind(kind: &str) -> bool {
    matches!(kind, "Namespace" | "CustomResourceDefinition")
}

/// Whether the live object carries kudo-rs's `heritage` label.
pub fn created_by_kudo(live: &Value) -> bool {
    live["metadata"]["labels"][HERITAGE_LABEL].as_str() == Some(HERITAGE_VALUE)
}

fn controller(meta: &Value) -> Option<&Value> {
    meta["ownerReferences"]
        .as_array()?
        .iter()
        .find(|o| o["controller"] == true)
}

fn str_of<'a>(v: &'a Value, key: &str) -> &'a str {
    v[key].as_str().unwrap_or_default()
}
