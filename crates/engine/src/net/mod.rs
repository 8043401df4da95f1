//! Packets, links, delay lines, routes and topology builders.

pub mod delay_line;
pub mod link;
pub mod packet;
pub mod route;
pub mod topology;
