//! Unresponsive constant-bit-rate datagram sources and their sinks.
//!
//! A source sends fixed-size datagrams at a fixed rate from its start to its
//! stop time, whatever the network does (the "unresponsive" traffic of RFC
//! 7567 §4 and of DualQ overload tests). The ECN codepoint is configurable so
//! unresponsive ECT(1) traffic can overload an L4S queue.

use crate::packet::{Ecn, Packet};

/// The departure clock both datagram sources share (CBR here, the latency
/// probe in `transport::probe`): datagrams of one size and ECN codepoint,
/// numbered from 0 and stamped with their scheduled send time, from the
/// start time until (not at) the stop time; the source says the spacing.
#[derive(Debug, Clone)]
pub struct DatagramClock {
    flow: u32,
    size_bytes: u32,
    ecn: Ecn,
    next_ns: u64,
    stop_ns: Option<u64>,
    /// The next datagram's sequence number: also the count sent.
    seq: u64,
}

impl DatagramClock {
    pub fn new(flow: u32, size_bytes: u32, ecn: Ecn, start_ns: u64, stop_ns: Option<u64>) -> Self {
        DatagramClock { flow, size_bytes, ecn, next_ns: start_ns, stop_ns, seq: 0 }
    }

    pub fn size_bytes(&self) -> u32 {
        self.size_bytes
    }

    pub fn pkts_sent(&self) -> u64 {
        self.seq
    }

    pub fn next_wakeup_ns(&self) -> Option<u64> {
        match self.stop_ns {
            Some(s) if self.next_ns >= s => None,
            _ => Some(self.next_ns),
        }
    }

    /// Send every datagram due by `now_ns`; `gap_ns()` is asked, once per
    /// datagram sent, for the time from it to the next.
    #[inline]
    pub fn send_due(&mut self, now_ns: u64, out: &mut Vec<Packet>, mut gap_ns: impl FnMut() -> u64) {
        while self.next_ns <= now_ns && self.stop_ns.is_none_or(|s| self.next_ns < s) {
            out.push(Packet::datagram(self.flow, self.size_bytes, self.seq, self.next_ns, now_ns, self.ecn));
            self.seq += 1;
            self.next_ns += gap_ns();
        }
    }
}

#[derive(Debug, Clone)]
pub struct CbrSource {
    clock: DatagramClock,
    rate_bps: u64,
    /// Remainder carried between departures so the long-run rate is exact.
    carry_ns_x_rate: u64,
}

impl CbrSource {
    pub fn new(flow: u32, rate_bps: u64, size_bytes: u32, ecn: Ecn, start_ns: u64, stop_ns: Option<u64>) -> Self {
        CbrSource { clock: DatagramClock::new(flow, size_bytes, ecn, start_ns, stop_ns), rate_bps, carry_ns_x_rate: 0 }
    }

    pub fn rate_bps(&self) -> u64 {
        self.rate_bps
    }

    pub fn pkts_sent(&self) -> u64 {
        self.clock.pkts_sent()
    }

    pub fn next_wakeup_ns(&self) -> Option<u64> {
        self.clock.next_wakeup_ns()
    }

    pub fn on_timer(&mut self, now_ns: u64, out: &mut Vec<Packet>) {
        let bits_x_1e9 = self.clock.size_bytes() as u64 * 8 * 1_000_000_000;
        self.clock.send_due(now_ns, out, || {
            // Exact spacing: bits·1e9/rate with the remainder carried forward.
            let num = bits_x_1e9 + self.carry_ns_x_rate;
            self.carry_ns_x_rate = num % self.rate_bps;
            num / self.rate_bps
        });
    }
}

/// Counts what arrives for a datagram flow.
#[derive(Debug, Clone, Default)]
pub struct DatagramSink {
    pub bytes: u64,
    pub pkts: u64,
    pub ce_pkts: u64,
    /// Sum of one-way delays, for the mean.
    pub delay_sum_ns: u64,
    /// A latency probe's receiver: answer every datagram at once with an
    /// echo reply carrying this codepoint (`transport::probe`).
    pub echo: Option<Ecn>,
}

impl DatagramSink {
    pub fn on_packet(&mut self, now_ns: u64, pkt: &Packet, out: &mut impl super::endpoint::Outbox) {
        if let Some(ecn) = self.echo {
            out.push(super::probe::echo_reply(pkt, now_ns, ecn));
        }
        self.bytes += pkt.size_bytes as u64;
        self.pkts += 1;
        self.ce_pkts += u64::from(pkt.ecn == Ecn::Ce);
        self.delay_sum_ns += now_ns.saturating_sub(pkt.ts_ns);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cbr_sends_at_the_exact_long_run_rate() {
        // 1500 B at 7 Mbit/s: 1714285.714... ns apart; carry keeps the rate exact.
        let mut s = CbrSource::new(0, 7_000_000, 1500, Ecn::NotEct, 0, Some(1_000_000_000));
        let mut out = vec![];
        while let Some(t) = s.next_wakeup_ns() {
            s.on_timer(t, &mut out);
        }
        // 1 s at 7 Mbit/s = 583.33 packets: 584 departures in [0, 1 s).
        assert_eq!(out.len(), 584);
        assert!(out.windows(2).all(|w| w[1].ts_ns > w[0].ts_ns));
    }
}
