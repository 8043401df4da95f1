//! A bounded log of the packets a queue drops, for its packet capture
//! (`metrics::pcap`, `[metrics] pcap`): the discipline's context appends
//! here when a capture is on, and does nothing else when it is off.

use crate::packet::Packet;

#[derive(Debug, Clone, Default)]
pub struct DropLog {
    /// (time, packet, drop reason index into `DROP_REASONS`).
    pub entries: Vec<(u64, Packet, u8)>,
    /// Entries kept at most (later drops are counted in `skipped`).
    pub max: usize,
    pub skipped: u64,
}

impl DropLog {
    #[inline]
    pub fn record(&mut self, t_ns: u64, pkt: &Packet, reason: u8) {
        if self.entries.len() < self.max {
            self.entries.push((t_ns, *pkt, reason));
        } else {
            self.skipped += 1;
        }
    }
}
