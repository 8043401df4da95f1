//! Packet capture at one queue (`[metrics] pcap`): the packets as a real
//! pcap file that tshark and Wireshark read, plus the queue's drops.
//!
//! The queue slot keeps a copy of each packet (bounded by `max_packets`;
//! nothing is recorded, and no branch beyond one `Option` test per packet
//! runs, when capture is off). At the end of the run the packets are
//! written with synthesised headers, since the engine models what the
//! headers carry but not their bytes:
//!
//! * file: pcap with nanosecond timestamps (magic 0xa1b23c4d), LINKTYPE_RAW
//!   (101: each record starts with the IPv4 header), snaplen 65535;
//! * IPv4 (RFC 791): the ECN field (RFC 3168 §5) as the packet carried it,
//!   DSCP 0, total length = the simulated size, DF, TTL 64, a valid header
//!   checksum; flow `i`'s sender is 10.1.x.y and its receiver 10.2.x.y with
//!   x.y = i (two bytes);
//! * TCP (RFC 9293 §3.1): port 10000 + i % 50000 → 5201; byte sequence
//!   numbers from the engine's segment numbers, `1 + segment × MSS` (ISN 0,
//!   so Wireshark's relative and absolute numbers agree); ACK numbers
//!   likewise from the next segment expected; SYN, ACK, ECE, CWR, and AE
//!   (the former NS bit, AccECN draft §3.1) as sent; on ACKs of a flow that
//!   negotiated accurate ECN the ACE field (AE, CWR, ECE) carries the
//!   receiver's CE packet counter mod 8, counted from 5 (AccECN draft
//!   §3.2.2); the
//!   timestamp option (RFC 7323, in µs) and SACK blocks (RFC 2018) in bytes;
//! * datagram flows (`udp`, `qcn`): UDP to port 5201; latency probes: ICMP
//!   echo request/reply (identifier = flow, sequence = request number).
//!
//! The payload is not stored: each record's captured length is its header
//! length and its original length the packet's simulated size (so tshark
//! shows the real sizes, with "[Packet size limited during capture]").

use super::{Column, Table};
use crate::aqm::drop_log::DropLog;
use crate::packet::{flags, Ecn, Packet, PacketKind, MAX_SACK_BLOCKS};

/// What `[metrics] pcap` asks for, resolved by the world.
#[derive(Debug, Clone)]
pub struct PcapRecorder {
    /// Record arrivals (before the discipline decides) instead of departures.
    pub at_enqueue: bool,
    pub max_packets: usize,
    /// (time, packet) in time order per direction of recording.
    pub packets: Vec<(u64, Packet)>,
    /// The packets the queue dropped.
    pub drops: DropLog,
    /// Packets not recorded because `max_packets` was reached.
    pub skipped: u64,
}

impl PcapRecorder {
    pub fn new(at_enqueue: bool, max_packets: u64) -> Self {
        let max = max_packets as usize;
        PcapRecorder { at_enqueue, max_packets: max, packets: vec![], drops: DropLog { max, ..Default::default() }, skipped: 0 }
    }

    #[inline]
    pub fn record(&mut self, t_ns: u64, pkt: &Packet) {
        if pkt.kind == PacketKind::Cnm {
            return; // not an IP packet
        }
        if self.packets.len() < self.max_packets {
            self.packets.push((t_ns, *pkt));
        } else {
            self.skipped += 1;
        }
    }
}

/// Per-flow facts the headers need.
#[derive(Debug, Clone, Copy)]
pub struct PcapFlow {
    /// ACKs carry the ACE counter (accurate ECN negotiated).
    pub accurate: bool,
    /// A latency probe (ICMP echo) rather than a UDP datagram source.
    pub probe: bool,
    /// A finite flow's size: the last segment is shorter, and sequence
    /// numbers stop at `1 + size`.
    pub size_bytes: Option<u64>,
}

/// A finished capture: the packets and drops of one queue.
pub struct PcapRecords {
    pub queue: String,
    pub recorder: PcapRecorder,
    pub flows: Vec<PcapFlow>,
    pub mss_bytes: u32,
    pub end_ns: u64,
}

const MAGIC_NS: u32 = 0xa1b2_3c4d;
const LINKTYPE_RAW: u32 = 101;
pub const SERVER_PORT: u16 = 5201;

/// TCP byte sequence number of segment `seg` of a flow of `size` bytes
/// (ISN 0; the SYN takes 0): 1 + seg × MSS, at most 1 + size.
pub fn byte_seq(seg: u64, mss: u32, size: Option<u64>) -> u32 {
    let b = seg.saturating_mul(mss as u64);
    (1 + size.map_or(b, |s| b.min(s))) as u32
}

pub fn client_port(flow: u32) -> u16 {
    10_000 + (flow % 50_000) as u16
}

fn addr(side: u8, flow: u32) -> [u8; 4] {
    [10, side, (flow >> 8) as u8, flow as u8]
}

fn checksum(bytes: &[u8]) -> u16 {
    let mut sum: u32 = bytes.chunks(2).map(|c| u32::from(c[0]) << 8 | u32::from(*c.get(1).unwrap_or(&0))).sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// The header bytes of one packet (IPv4 + transport header), appended to `out`.
pub fn headers(pkt: &Packet, f: PcapFlow, mss: u32, out: &mut Vec<u8>) {
    let start = out.len();
    let to_sink = pkt.from_source();
    let (src, dst) = if to_sink { (addr(1, pkt.flow), addr(2, pkt.flow)) } else { (addr(2, pkt.flow), addr(1, pkt.flow)) };
    let proto: u8 = match pkt.kind {
        PacketKind::Datagram if f.probe => 1,
        PacketKind::EchoReply => 1,
        PacketKind::Datagram => 17,
        _ => 6,
    };
    let total = pkt.size_bytes.min(65_535) as u16;
    out.extend_from_slice(&[0x45, pkt.ecn as u8]);
    out.extend_from_slice(&total.to_be_bytes());
    out.extend_from_slice(&(pkt.seq as u16).to_be_bytes()); // identification
    out.extend_from_slice(&[0x40, 0x00, 64, proto, 0, 0]); // DF, TTL, protocol, checksum (below)
    out.extend_from_slice(&src);
    out.extend_from_slice(&dst);
    let c = checksum(&out[start..start + 20]);
    out[start + 10..start + 12].copy_from_slice(&c.to_be_bytes());
    let (sport, dport) = if to_sink { (client_port(pkt.flow), SERVER_PORT) } else { (SERVER_PORT, client_port(pkt.flow)) };
    match proto {
        1 => {
            let kind = if pkt.kind == PacketKind::EchoReply { 0u8 } else { 8 };
            out.extend_from_slice(&[kind, 0, 0, 0]);
            out.extend_from_slice(&(pkt.flow as u16).to_be_bytes());
            out.extend_from_slice(&(pkt.seq as u16).to_be_bytes());
        }
        17 => {
            out.extend_from_slice(&sport.to_be_bytes());
            out.extend_from_slice(&dport.to_be_bytes());
            out.extend_from_slice(&(total.saturating_sub(20)).to_be_bytes());
            out.extend_from_slice(&[0, 0]);
        }
        _ => tcp_header(pkt, f, mss, sport, dport, out),
    }
}

fn tcp_header(pkt: &Packet, f: PcapFlow, mss: u32, sport: u16, dport: u16, out: &mut Vec<u8>) {
    let (seq, ack, mut fl): (u32, u32, u16) = match pkt.kind {
        PacketKind::Syn => (0, 0, 0x02),
        PacketKind::SynAck => (0, 1, 0x12),
        PacketKind::Data => (byte_seq(pkt.seq, mss, f.size_bytes), 1, 0x18), // ACK|PSH; the server sends no data
        _ => (1, byte_seq(pkt.seq, mss, f.size_bytes), 0x10),
    };
    let accurate_ack = f.accurate && pkt.kind == PacketKind::Ack;
    if accurate_ack {
        // ACE = the receiver's CE packet counter mod 8 over AE (bit 8), CWR
        // (7), ECE (6); the draft starts the counter at 5 (§3.2.2.1), the
        // engine's at 0.
        let ace = ((pkt.aux as u64 + 5) % 8) as u16;
        fl |= (ace & 1) << 6 | (ace >> 1 & 1) << 7 | (ace >> 2 & 1) << 8;
    } else {
        if pkt.has_flag(flags::ECE) {
            fl |= 0x40;
        }
        if pkt.has_flag(flags::CWR) {
            fl |= 0x80;
        }
        if pkt.has_flag(flags::AE) {
            fl |= 0x100;
        }
    }
    let nsack = (0..MAX_SACK_BLOCKS).filter(|&i| pkt.sack_block(i).len > 0).count();
    let handshake = matches!(pkt.kind, PacketKind::Syn | PacketKind::SynAck);
    let opt_len = 12 + if nsack > 0 { 4 + 8 * nsack } else { 0 } + if handshake { 12 } else { 0 };
    let doff = (20 + opt_len) / 4;
    out.extend_from_slice(&sport.to_be_bytes());
    out.extend_from_slice(&dport.to_be_bytes());
    out.extend_from_slice(&seq.to_be_bytes());
    out.extend_from_slice(&ack.to_be_bytes());
    out.extend_from_slice(&((doff as u16) << 12 | fl).to_be_bytes());
    out.extend_from_slice(&[0xff, 0xff, 0, 0, 0, 0]); // window, checksum (payload not kept), urgent
    // NOP NOP timestamps (RFC 7323 appendix A layout), in µs.
    let tsus = (pkt.ts_ns / 1_000) as u32;
    let (tsval, tsecr) = if pkt.from_source() { (tsus, 0) } else { (0, tsus) };
    out.extend_from_slice(&[1, 1, 8, 10]);
    out.extend_from_slice(&tsval.to_be_bytes());
    out.extend_from_slice(&tsecr.to_be_bytes());
    if handshake {
        // MSS, SACK permitted, window scale 7 (Linux's usual): 64 bytes in all,
        // the engine's SYN size.
        let m = (mss.min(65_535) as u16).to_be_bytes();
        out.extend_from_slice(&[2, 4, m[0], m[1], 1, 1, 4, 2, 1, 3, 3, 7]);
    }
    if nsack > 0 {
        out.extend_from_slice(&[1, 1, 5, (2 + 8 * nsack) as u8]);
        for i in 0..nsack {
            let b = pkt.sack_block(i);
            let left = pkt.seq + b.start_off as u64;
            out.extend_from_slice(&byte_seq(left, mss, f.size_bytes).to_be_bytes());
            out.extend_from_slice(&byte_seq(left + b.len as u64, mss, f.size_bytes).to_be_bytes());
        }
    }
}

/// The pcap file of a capture.
pub fn file_bytes(rec: &PcapRecords) -> Vec<u8> {
    let mut out = Vec::with_capacity(24 + rec.recorder.packets.len() * 72);
    // magic, version 2.4 (two u16), thiszone, sigfigs, snaplen, link type.
    for v in [MAGIC_NS, 0x0004_0002, 0, 0, 65_535, LINKTYPE_RAW] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    let mut order: Vec<usize> = (0..rec.recorder.packets.len()).collect();
    order.sort_by_key(|&i| rec.recorder.packets[i].0); // stable: equal times keep their order
    let mut hdr = Vec::with_capacity(80);
    for i in order {
        let (t, p) = &rec.recorder.packets[i];
        if *t > rec.end_ns {
            continue; // departure lookahead: starts after the end never happened
        }
        hdr.clear();
        headers(p, rec.flows[p.flow as usize], rec.mss_bytes, &mut hdr);
        let orig = (p.size_bytes as usize).max(hdr.len());
        for v in [(t / 1_000_000_000) as u32, (t % 1_000_000_000) as u32, hdr.len() as u32, orig as u32] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.extend_from_slice(&hdr);
    }
    out
}

/// The queue's drops as a table (`pcap_drops`): `t_ns`, `flow`, `kind`,
/// `seq` (TCP byte sequence of a segment, else the engine's number), `ecn`
/// (the codepoint name), `reason` (as `drops_by_reason`).
pub fn drops_table(rec: &PcapRecords) -> Table {
    let d = &rec.recorder.drops.entries;
    let kind = |p: &Packet| format!("{:?}", p.kind).to_lowercase();
    let ecn = |e: Ecn| match e {
        Ecn::NotEct => "not-ect",
        Ecn::Ect0 => "ect0",
        Ecn::Ect1 => "ect1",
        Ecn::Ce => "ce",
    };
    let seq = |p: &Packet| match p.kind {
        PacketKind::Data | PacketKind::Ack => byte_seq(p.seq, rec.mss_bytes, rec.flows[p.flow as usize].size_bytes) as u64,
        _ => p.seq,
    };
    Table::new("pcap_drops")
        .col("t_ns", Column::U64(d.iter().map(|x| x.0).collect()))
        .col("flow", Column::U64(d.iter().map(|x| x.1.flow as u64).collect()))
        .col("kind", Column::Str(d.iter().map(|x| kind(&x.1)).collect()))
        .col("seq", Column::U64(d.iter().map(|x| seq(&x.1)).collect()))
        .col("ecn", Column::Str(d.iter().map(|x| ecn(x.1.ecn)).collect()))
        .col("reason", Column::Str(d.iter().map(|x| crate::aqm::DROP_REASONS[x.2 as usize]).collect()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::SackBlock;

    #[test]
    fn ipv4_header_carries_ecn_length_and_a_valid_checksum() {
        let mut p = Packet::new(PacketKind::Data, 3, 1500);
        p.ecn = Ecn::Ect1;
        p.seq = 2;
        let mut h = vec![];
        headers(&p, PcapFlow { accurate: true, probe: false, size_bytes: None }, 1448, &mut h);
        assert_eq!(h.len(), 20 + 32);
        assert_eq!(h[1] & 3, 0b01);
        assert_eq!(u16::from_be_bytes([h[2], h[3]]), 1500);
        assert_eq!(checksum(&h[..20]), 0, "a header with its checksum sums to 0xffff");
        assert_eq!(u32::from_be_bytes([h[24], h[25], h[26], h[27]]), 1 + 2 * 1448);
    }

    #[test]
    fn syn_has_the_handshake_options_and_the_engines_size() {
        let mut s = Packet::new(PacketKind::Syn, 0, 64);
        s.flags = flags::ECE | flags::CWR | flags::AE;
        let mut h = vec![];
        headers(&s, PcapFlow { accurate: false, probe: false, size_bytes: None }, 1448, &mut h);
        assert_eq!(h.len(), 64);
        let fl = u16::from_be_bytes([h[32], h[33]]);
        assert_eq!(fl & 0x1ff, 0x02 | 0x40 | 0x80 | 0x100); // SYN + AccECN set-up (ECE, CWR, AE)
    }

    #[test]
    fn accurate_ack_carries_ace_and_sack_in_bytes() {
        let mut a = Packet::new(PacketKind::Ack, 0, 52);
        a.seq = 10;
        a.aux = 8; // (8 + 5) mod 8 = 5 = 0b101: AE and ECE
        a.set_sack_block(0, SackBlock { start_off: 2, len: 3 });
        let mut h = vec![];
        headers(&a, PcapFlow { accurate: true, probe: false, size_bytes: None }, 1000, &mut h);
        let fl = u16::from_be_bytes([h[32], h[33]]);
        assert_eq!(fl >> 12, (20 + 12 + 12) / 4);
        assert_eq!(fl & 0x1c0, 0x100 | 0x40);
        assert_eq!(u32::from_be_bytes([h[28], h[29], h[30], h[31]]), 1 + 10 * 1000);
        let sack = &h[20 + 20 + 12..];
        assert_eq!(&sack[..4], &[1, 1, 5, 10]);
        assert_eq!(u32::from_be_bytes([sack[4], sack[5], sack[6], sack[7]]), 1 + 12 * 1000);
        assert_eq!(u32::from_be_bytes([sack[8], sack[9], sack[10], sack[11]]), 1 + 15 * 1000);
    }
}
