//! Links, delay lines and routes (packets are `crate::packet`; the topology is built by the
//! world: `world/topology.rs`).

pub mod delay_line;
pub mod link;
pub mod medium;
pub mod route;
pub mod sojourn_log;

/// The packet sits below every algorithm now (`crate::packet`). This alias
/// keeps code written against the old path compiling (work in flight on
/// other branches); the layer test (tests/layers.rs) rejects it in the crate.
pub use crate::packet;
