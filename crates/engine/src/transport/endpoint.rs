//! A flow's two ends: the sending side (TCP sender, datagram source, QCN
//! rate-limited source) and the receiving side, as the world holds them.
//! Static dispatch over closed sets: no boxes, `Clone` for snapshots.

use super::probe::ProbeSource;
use super::qcn_rp::QcnSource;
use super::tcp_receiver::TcpReceiver;
use super::tcp_sender::TcpSender;
use super::udp::{CbrSource, DatagramSink};
use crate::packet::Packet;

/// Where a receiving side puts the packets it sends (ACKs, echo replies).
///
/// A `Vec` collects them for the world to send on; the world may instead
/// pass a writer that puts each packet straight into the delay line its
/// route starts with, so that a packet just built is never read back whole
/// (a wide load right after the narrow stores that built it stalls until
/// they commit; see docs/performance.md, "Where the time goes").
pub trait Outbox {
    fn push(&mut self, p: Packet);
}

impl Outbox for Vec<Packet> {
    #[inline(always)]
    fn push(&mut self, p: Packet) {
        Vec::push(self, p);
    }
}

/// A flow's sending side.
#[derive(Debug, Clone)]
pub enum Source {
    Tcp(TcpSender),
    Cbr(CbrSource),
    /// A rate-limited source with a QCN reaction point (`cc = "qcn"`).
    Qcn(QcnSource),
    /// A latency probe: periodic echo requests (`cc = "probe"`).
    Probe(ProbeSource),
}

/// A flow's receiving side.
#[derive(Debug, Clone)]
pub enum Sink {
    Tcp(TcpReceiver),
    Datagram(DatagramSink),
}
