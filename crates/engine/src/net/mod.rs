//! Packets, links, delay lines and routes.

pub mod packet;
