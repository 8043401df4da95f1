//! aqmlab-engine: a deterministic packet-level simulator for active queue
//! management and congestion control research.
//!
//! Layers: [`sim`] (time, events, randomness, units) → [`net`] (packets,
//! links, delay lines, routes, topologies) → [`aqm`] (queue disciplines) and
//! [`cc`] (congestion controls) → [`transport`] (TCP, UDP) → [`metrics`]
//! (collectors, results). [`scenario`] is the validated input and [`world`]
//! runs it. The crate knows nothing of Python, files or plots.

pub mod aqm;
pub mod cc;
pub mod metrics;
pub mod net;
pub mod packet;
pub mod params;
pub mod ppv;
pub mod scenario;
pub mod sim;
pub mod transport;
pub mod world;

pub use metrics::{Column, Results, Table};
pub use world::{run_json, World};

/// The engine's version; part of every result's provenance.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
