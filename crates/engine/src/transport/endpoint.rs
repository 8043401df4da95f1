//! A flow's two ends: the sending side (TCP sender, datagram source, QCN
//! rate-limited source) and the receiving side, as the world holds them.
//! Static dispatch over closed sets: no boxes, `Clone` for snapshots.

use super::probe::ProbeSource;
use super::qcn_rp::QcnSource;
use super::tcp_receiver::TcpReceiver;
use super::tcp_sender::TcpSender;
use super::udp::{CbrSource, DatagramSink};

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
