//! Packets, links, delay lines and routes (the topology is built by the
//! world: `world/topology.rs`).

pub mod delay_line;
pub mod link;
pub mod packet;
pub mod route;
