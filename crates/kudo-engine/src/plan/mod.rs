//! The plan walk and its rules, the layer above the model: which plan a
//! spec asks for ([`select`]), the status tree ([`tree`]), walking it in
//! its strategies ([`walk`]), what holds a start (`holds`,
//! [`windows`], [`suppression`]), plan operations ([`operations`]),
//! starting and finishing a plan (`lifecycle`), the Ready condition
//! ([`ready`]), parameters and an execution's own ([`execution`]),
//! tenancy and object ownership. Imports only
//! from [`crate::model`].

pub mod assets;
pub mod blocked;
pub(crate) mod definition;
pub mod execution;
pub(crate) mod holds;
pub(crate) mod lifecycle;
pub mod namespace_hold;
pub mod operations;
pub mod ownership;
pub mod params;
pub mod ready;
pub mod select;
pub mod suppression;
pub mod tenancy;
pub mod tree;
pub mod walk;
mod walk_output;
pub mod windows;
