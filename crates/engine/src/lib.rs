//! aqmlab-engine: a deterministic packet-level simulator for active queue
//! management and congestion control research.
//!
//! Layers, bottom to top (each imports only from those below it; enforced
//! by tests/layers.rs, drawn in docs/architecture.md): [`sim`] (time,
//! events, randomness, units) → [`packet`] → [`params`] (parameter parsing,
//! error text) → [`ppv`] → [`cc`] and [`aqm`] (the algorithms) →
//! [`transport`] (TCP, UDP, QCN sources; endpoints) → [`metrics`]
//! (collectors; results from plain run records) → [`net`] (links, delay
//! lines, routes) → [`registry`] → [`scenario`] (the validated input) →
//! [`world`] (builds and runs it). The crate knows nothing of Python,
//! files or plots.

pub mod aqm;
pub mod cc;
pub mod metrics;
pub mod net;
pub mod packet;
pub mod params;
pub mod ppv;
pub mod registry;
pub mod scenario;
pub mod sim;
pub mod transport;
pub mod world;

pub use metrics::{Column, Results, Table};
pub use world::{run_json, World};

/// The engine's version; part of every result's provenance.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
