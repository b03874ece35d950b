//! The plans the engine starts by itself, above the plan walk: recovery of
//! drifted objects ([`recovery`], [`recovery_fields`]), pod operations
//! ([`recovery_pods`]), node maintenance ([`maintenance`]), channel
//! upgrades ([`upgrades`]) and the dependency constraints that hold them
//! ([`dependencies`]). Each is
//! an automatic plan started through `plan::lifecycle`; they
//! import only from [`crate::plan`] and [`crate::model`].

pub mod dependencies;
pub mod maintenance;
pub mod recovery;
pub mod recovery_fields;
pub mod recovery_pods;
pub mod upgrades;
pub mod upgrades_namespace;
