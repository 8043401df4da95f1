//! aqmlab-engine: a deterministic packet-level simulator for active queue
//! management and congestion control research.
//!
//! Layers: [`sim`] (time, events, randomness, units) → [`net`] (packets,
//! links, routes) → [`aqm`] (queue disciplines) and [`cc`] (congestion
//! controls) → [`transport`] (TCP, UDP) → [`traffic`] (workloads) →
//! [`metrics`] (collectors). [`scenario`] is the validated input and
//! [`world`] runs it. The crate knows nothing of Python, files or plots.

pub mod aqm;
pub mod scenario;
pub mod sim;
pub mod net;
