//! The packet: a 64-byte value that moves through queues and delay lines.
//!
//! Packets are plain `Copy` values stored inline in pre-sized ring buffers, so
//! the steady state allocates nothing per packet. Sequence numbers count
//! segments (not bytes); the payload size of segment `n` is known to both
//! ends of a flow. Fields that only some packet kinds use share `aux`.

/// The two ECN bits of the IP header (RFC 3168 §5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Ecn {
    NotEct = 0b00,
    /// ECT(1): the L4S identifier (RFC 9331 §4).
    Ect1 = 0b01,
    /// ECT(0): classic ECN-capable transport.
    Ect0 = 0b10,
    /// Congestion Experienced.
    Ce = 0b11,
}

impl Ecn {
    #[inline]
    pub fn is_ect(self) -> bool {
        self != Ecn::NotEct
    }
    /// ECT(1) or CE: the packets RFC 9332 §2.5 classifies into the L4S queue.
    #[inline]
    pub fn is_l4s_id(self) -> bool {
        (self as u8) & 1 == 1
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum PacketKind {
    /// A TCP data segment.
    Data,
    /// A pure TCP ACK.
    Ack,
    /// Connection set-up (client to server); carries the ECN set-up flags.
    Syn,
    SynAck,
    /// An unresponsive datagram (constant bit rate).
    Datagram,
    /// A QCN congestion notification message (IEEE 802.1Qau), CP to RP.
    Cnm,
    /// A latency probe's echo reply (receiver to source; `transport::probe`).
    EchoReply,
}

/// TCP header flags that matter to the simulation.
pub mod flags {
    /// ECN-Echo (RFC 3168 §6.1).
    pub const ECE: u8 = 0x01;
    /// Congestion Window Reduced (RFC 3168 §6.1).
    pub const CWR: u8 = 0x02;
    /// The segment is a retransmission (bookkeeping only; not on the wire).
    pub const RETX: u8 = 0x04;
    /// AccECN set-up request/accept (draft-ietf-tcpm-accurate-ecn §3.1).
    pub const AE: u8 = 0x08;
}

/// One SACK block, relative to the ACK's cumulative sequence: segments
/// `[ack + start_off, ack + start_off + len)` were received (RFC 2018 §3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SackBlock {
    pub start_off: u32,
    pub len: u16,
}

pub const MAX_SACK_BLOCKS: usize = 3;

#[derive(Debug, Clone, Copy, PartialEq)]
#[repr(C)]
pub struct Packet {
    /// Data: segment number. Ack: cumulative ACK (next segment expected).
    pub seq: u64,
    /// Data: sender timestamp (TSval). Ack: the echoed timestamp (TSecr, RFC 7323 §3).
    pub ts_ns: u64,
    /// Time the packet entered its current queue (for sojourn time). A packet
    /// just emitted by an endpoint carries its departure time here, one on a
    /// delay line the time it reaches the line's end.
    pub enq_ns: u64,
    /// Flow index (both directions of a flow share it).
    pub flow: u32,
    /// Size on the wire in bytes, headers included.
    pub size_bytes: u32,
    /// Compiled route this packet follows.
    pub route: u32,
    /// Data: per-packet value (PPV). Ack: cumulative count of CE-marked data
    /// packets received (AccECN-style). Cnm: quantised |Fb|.
    pub aux: u32,
    /// SACK blocks (ACKs only), stored as two arrays so the packet stays 64
    /// bytes; use [`Packet::sack_block`]. A block with `len == 0` is unused.
    sack_off: [u32; MAX_SACK_BLOCKS],
    sack_len: [u16; MAX_SACK_BLOCKS],
    /// Stage index along `route`.
    pub hop: u8,
    pub kind: PacketKind,
    pub ecn: Ecn,
    pub flags: u8,
    /// Sub-queue the current qdisc placed the packet in (for per-sub-queue stats).
    pub subq: u8,
}

impl Packet {
    /// A blank packet of the given kind for `flow`.
    pub fn new(kind: PacketKind, flow: u32, size_bytes: u32) -> Self {
        Packet {
            seq: 0,
            ts_ns: 0,
            enq_ns: 0,
            flow,
            size_bytes,
            route: 0,
            aux: 0,
            sack_off: [0; MAX_SACK_BLOCKS],
            sack_len: [0; MAX_SACK_BLOCKS],
            hop: 0,
            kind,
            ecn: Ecn::NotEct,
            flags: 0,
            subq: 0,
        }
    }

    /// Datagram `seq` of a rate-based source (CBR, QCN), due at `due_ns`
    /// (its timestamp) and emitted at `now_ns`.
    pub fn datagram(flow: u32, size_bytes: u32, seq: u64, due_ns: u64, now_ns: u64, ecn: Ecn) -> Self {
        let mut p = Packet::new(PacketKind::Datagram, flow, size_bytes);
        p.seq = seq;
        p.ts_ns = due_ns;
        p.enq_ns = now_ns;
        p.ecn = ecn;
        p
    }

    /// Sent by a flow's source towards its sink (data, SYN, datagram), as
    /// opposed to the replies and notifications that travel back to it.
    #[inline]
    pub fn from_source(&self) -> bool {
        matches!(self.kind, PacketKind::Data | PacketKind::Syn | PacketKind::Datagram)
    }

    /// A TCP data segment or a datagram (what the benchmark counts as a
    /// bottleneck packet).
    #[inline]
    pub fn carries_payload(&self) -> bool {
        matches!(self.kind, PacketKind::Data | PacketKind::Datagram)
    }

    #[inline]
    pub fn has_flag(&self, f: u8) -> bool {
        self.flags & f != 0
    }

    #[inline]
    pub fn sack_block(&self, i: usize) -> SackBlock {
        SackBlock { start_off: self.sack_off[i], len: self.sack_len[i] }
    }

    #[inline]
    pub fn set_sack_block(&mut self, i: usize, b: SackBlock) {
        self.sack_off[i] = b.start_off;
        self.sack_len[i] = b.len;
    }

    /// Per-packet value (PPV framework); meaningful for data packets.
    #[inline]
    pub fn value(&self) -> u32 {
        self.aux
    }

    /// A flow hash for flow-queueing disciplines (stands in for the 5-tuple).
    #[inline]
    pub fn flow_hash(&self) -> u32 {
        // Fibonacci hashing: cheap and spreads consecutive ids.
        self.flow.wrapping_mul(0x9E37_79B9)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packet_fits_one_cache_line() {
        assert!(std::mem::size_of::<Packet>() <= 64, "{}", std::mem::size_of::<Packet>());
    }

    #[test]
    fn l4s_classification_follows_rfc9331() {
        assert!(Ecn::Ect1.is_l4s_id());
        assert!(Ecn::Ce.is_l4s_id());
        assert!(!Ecn::Ect0.is_l4s_id());
        assert!(!Ecn::NotEct.is_l4s_id());
    }
}
