//! Congestion controls: one file per algorithm, all behind [`CongestionControl`].
//!
//! A controller sees ACK, loss, ECN and timeout events only; it never reaches
//! into a queue. It owns the congestion window (in segments) and the slow-start
//! threshold; the TCP sender asks it how much may be in flight and how fast to
//! pace. Every hook receives `now_ns`, so no controller reads a clock.
//!
//! Adding an algorithm touches its own file, one line in [`AnyCc`] and
//! [`REGISTRY`], and its tests.

pub mod bbr2;
pub mod cubic;
pub mod dctcp;
pub mod hystart;
pub mod prague;
pub mod reno;

use serde::Serialize;

/// What one ACK told the sender (RFC 9293 + RFC 6675 + ECN feedback).
#[derive(Debug, Clone, Copy, Default)]
pub struct AckEvent<'a> {
    pub now_ns: u64,
    /// Segments newly acknowledged cumulatively by this ACK.
    pub acked_segs: u32,
    /// Segments newly delivered (cumulatively acked for the first time or
    /// newly SACKed): the "delivered" count of RFC 8985/BBR.
    pub delivered_segs: u32,
    /// Of the delivered segments, how many arrived CE-marked (from the
    /// AccECN-style counter, or the ECE flag under DCTCP feedback).
    pub ce_segs: u32,
    /// The ACK echoes CE for the data it acknowledges (per-packet feedback
    /// only; classic RFC 3168 feedback shows up as `in_recovery` instead).
    pub ece: bool,
    /// An RTT sample from this ACK (RFC 7323 timestamps), if any.
    pub rtt_ns: Option<u64>,
    pub srtt_ns: u64,
    pub min_rtt_ns: u64,
    /// Sender state after processing: oldest unacked and next new segment.
    pub snd_una: u64,
    pub snd_nxt: u64,
    /// Segments in flight (RFC 6675 "pipe") after processing.
    pub in_flight_segs: u32,
    /// The sender is in loss recovery, or (classic ECN) in the window after
    /// an ECN reduction: the window does not grow.
    pub in_recovery: bool,
    /// The window, not the application, limited sending recently
    /// (Linux `tcp_is_cwnd_limited`); growth only counts when it did.
    pub cwnd_limited: bool,
    /// Delivery-rate sample (BBR, RFC 8985-style), when one is available.
    /// Borrowed: most controllers never read it, and an owned sample would
    /// be copied into every ACK's event.
    pub rate: Option<&'a RateSample>,
}

impl AckEvent<'_> {
    /// Whether this ACK may grow the window: new data acknowledged, the
    /// window (not the application) was the limit, not in loss recovery, and
    /// no ECN-Echo on it (RFC 3168 §6.1.2: "SHOULD NOT increase the
    /// congestion window in response to the receipt of an ECN-Echo ACK").
    #[inline]
    pub fn may_grow(&self) -> bool {
        self.acked_segs > 0 && self.cwnd_limited && !self.in_recovery && !self.ece
    }
}

/// A delivery-rate sample (draft-cheng-iccrg-delivery-rate-estimation §3,
/// with the BBRv2 additions of Linux `tcp_rate.c`).
#[derive(Debug, Clone, Copy, Default)]
pub struct RateSample {
    /// Segments delivered since the sampled packet was sent.
    pub delivered_segs: u64,
    /// max(send elapsed, ACK elapsed); 0 when too short to be valid.
    pub interval_ns: u64,
    /// CE-marked segments delivered since the sampled packet was sent.
    pub delivered_ce_segs: u64,
    /// Segments declared lost since the sampled packet was sent.
    pub lost_segs: u64,
    /// Segments in flight when the sampled packet was sent (itself included).
    pub tx_in_flight_segs: u32,
    /// The sampled packet was sent while the application limited sending.
    pub app_limited: bool,
    /// RTT of the sampled (most recently sent) packet.
    pub rtt_ns: u64,
    /// The connection's delivered count when the sampled packet was sent.
    pub prior_delivered: u64,
    /// Segments newly delivered by this ACK.
    pub acked_sacked: u32,
    /// Segments newly marked lost by this ACK.
    pub losses: u32,
}

/// Which congestion signal triggered a reduction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CongestionKind {
    /// Loss detected by SACK/dupacks (fast recovery entry, RFC 6675 §5).
    Loss,
    /// ECN-Echo (RFC 3168 §6.1.2), at most once per window.
    Ecn,
}

#[derive(Debug, Clone, Copy)]
pub struct CongestionEvent {
    pub now_ns: u64,
    pub kind: CongestionKind,
    /// Segments in flight when congestion was detected (RFC 5681 FlightSize).
    pub in_flight_segs: u32,
    pub srtt_ns: u64,
}

/// Which phase a controller is in (for traces and plots).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Phase {
    SlowStart,
    CongestionAvoidance,
    Recovery,
    /// Model-based controllers name their own state.
    Other(&'static str),
}

pub trait CongestionControl {
    /// Every ACK, after the sender updated its scoreboard. Growth happens here.
    fn on_ack(&mut self, ev: &AckEvent);
    /// A loss or ECN congestion signal: set ssthresh and cwnd.
    fn on_congestion(&mut self, ev: &CongestionEvent);
    /// Retransmission timeout (RFC 5681 §3.1, eq. 4 and the loss window).
    /// `already_reduced`: the timeout fell inside a recovery episode whose
    /// reduction already happened; only the window collapses.
    fn on_rto(&mut self, now_ns: u64, in_flight_segs: u32, already_reduced: bool);
    /// Recovery or CWR ended (cumulative ACK passed the recovery point).
    fn on_recovery_exit(&mut self, _now_ns: u64) {}
    /// A segment was sent (new or retransmission). Must leave `cwnd()`
    /// unchanged: the sender reads the window once per sending burst.
    fn on_sent(&mut self, _now_ns: u64, _in_flight_segs: u32) {}
    /// The connection is established (first RTT sample from the handshake).
    fn on_established(&mut self, _ev: &Established) {}
    /// Whether the sender should compute delivery-rate samples (costs a
    /// record per segment in flight; only model-based controllers need it).
    fn wants_rate_samples(&self) -> bool {
        false
    }
    /// The controller's own random stream (derived from the flow's), for
    /// controllers that randomise (BBR's probe timing).
    fn set_rng(&mut self, _rng: crate::sim::rng::SimRng) {}
    /// Congestion window, in segments.
    fn cwnd(&self) -> u32;
    /// Slow-start threshold, in segments (`u32::MAX` until the first reduction).
    fn ssthresh(&self) -> u32;
    /// Pacing rate, when the controller paces (BBR, Prague).
    fn pacing_rate_bps(&self) -> Option<u64> {
        None
    }
    fn phase(&self) -> Phase {
        if self.cwnd() < self.ssthresh() {
            Phase::SlowStart
        } else {
            Phase::CongestionAvoidance
        }
    }
    /// Internal state worth plotting (e.g. DCTCP alpha), paired with names.
    fn probe_names(&self) -> &'static [&'static str] {
        &[]
    }
    fn probe(&self, _out: &mut [f64]) {}
}

/// Facts known once the handshake completes.
#[derive(Debug, Clone, Copy)]
pub struct Established {
    pub now_ns: u64,
    pub srtt_ns: u64,
    /// Bytes on the wire of a full segment (for pacing rates in bit/s).
    pub segment_bytes: u32,
    /// Per-packet (accurate) ECN feedback was negotiated.
    pub accurate_ecn: bool,
}

/// Loss window after an RTO (RFC 5681 §3.1: LW = 1 segment).
pub const LOSS_WINDOW_SEGS: u32 = 1;

/// Initial window (RFC 6928: min(10·MSS, max(2·MSS, 14600 bytes)) = 10 segments).
pub const INITIAL_WINDOW_SEGS: u32 = 10;

/// Reno-style slow start with appropriate byte counting in segments
/// (RFC 3465 §2.2 with L unbounded, as Linux `tcp_slow_start` does): grow by
/// the segments acked, up to ssthresh. Returns the acked segments left over
/// for congestion avoidance.
#[inline]
pub fn slow_start(cwnd: &mut u32, ssthresh: u32, acked: u32) -> u32 {
    let new = cwnd.saturating_add(acked).min(ssthresh.max(*cwnd));
    let used = new - *cwnd;
    *cwnd = new;
    acked - used.min(acked)
}

/// Reno additive increase counting acked segments (RFC 5681 §3.1 with
/// RFC 3465 byte counting; Linux `tcp_cong_avoid_ai`): one segment per
/// `w` segments acked. `cwnd_cnt` carries the remainder.
#[inline]
pub fn additive_increase(cwnd: &mut u32, cwnd_cnt: &mut u32, w: u32, acked: u32) {
    let w = w.max(1);
    if *cwnd_cnt >= w {
        *cwnd_cnt = 0;
        *cwnd += 1;
    }
    *cwnd_cnt += acked;
    if *cwnd_cnt >= w {
        let delta = *cwnd_cnt / w;
        *cwnd_cnt -= delta * w;
        *cwnd += delta;
    }
}

/// Static dispatch over controllers. BBRv2's state is several times that of
/// the others, so it lives behind a box: every flow's sender stays small
/// (more flows per cache), and only BBRv2 flows pay the indirection.
#[derive(Debug, Clone)]
pub enum AnyCc {
    Bbr2(Box<bbr2::Bbr2>),
    Reno(reno::Reno),
    Cubic(cubic::Cubic),
    Dctcp(dctcp::Dctcp),
    Prague(prague::Prague),
}

macro_rules! dispatch {
    ($self:expr, $c:ident => $e:expr) => {
        match $self {
            AnyCc::Bbr2($c) => $e,
            AnyCc::Reno($c) => $e,
            AnyCc::Cubic($c) => $e,
            AnyCc::Dctcp($c) => $e,
            AnyCc::Prague($c) => $e,
        }
    };
}

impl AnyCc {
    /// `on_ack`, then the window and pacing rate it leaves, in one
    /// dispatch (the sender needs all three on every ACK). The event is
    /// built inside each arm, by `ev`: where a controller's `on_ack` is
    /// inlined, the fields it never reads are never written (a whole
    /// event is 14 stores on every ACK).
    #[inline]
    pub fn on_ack_then_window<'a>(&mut self, ev: impl FnOnce() -> AckEvent<'a>) -> (u32, Option<u64>) {
        dispatch!(self, c => {
            c.on_ack(&ev());
            (c.cwnd(), c.pacing_rate_bps())
        })
    }
}

impl CongestionControl for AnyCc {
    #[inline]
    fn on_ack(&mut self, ev: &AckEvent) {
        dispatch!(self, c => c.on_ack(ev))
    }
    fn on_congestion(&mut self, ev: &CongestionEvent) {
        dispatch!(self, c => c.on_congestion(ev))
    }
    fn on_rto(&mut self, now_ns: u64, in_flight: u32, already_reduced: bool) {
        dispatch!(self, c => c.on_rto(now_ns, in_flight, already_reduced))
    }
    fn on_recovery_exit(&mut self, now_ns: u64) {
        dispatch!(self, c => c.on_recovery_exit(now_ns))
    }
    #[inline]
    fn on_sent(&mut self, now_ns: u64, in_flight: u32) {
        dispatch!(self, c => c.on_sent(now_ns, in_flight))
    }
    fn on_established(&mut self, ev: &Established) {
        dispatch!(self, c => c.on_established(ev))
    }
    #[inline]
    fn wants_rate_samples(&self) -> bool {
        dispatch!(self, c => c.wants_rate_samples())
    }
    fn set_rng(&mut self, rng: crate::sim::rng::SimRng) {
        dispatch!(self, c => c.set_rng(rng))
    }
    #[inline]
    fn cwnd(&self) -> u32 {
        dispatch!(self, c => c.cwnd())
    }
    #[inline]
    fn ssthresh(&self) -> u32 {
        dispatch!(self, c => c.ssthresh())
    }
    #[inline]
    fn pacing_rate_bps(&self) -> Option<u64> {
        dispatch!(self, c => c.pacing_rate_bps())
    }
    fn phase(&self) -> Phase {
        dispatch!(self, c => c.phase())
    }
    fn probe_names(&self) -> &'static [&'static str] {
        dispatch!(self, c => c.probe_names())
    }
    fn probe(&self, out: &mut [f64]) {
        dispatch!(self, c => c.probe(out))
    }
}

/// What the transport needs to know about a controller before it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EcnStyle {
    /// RFC 3168: one reduction per window on ECE; latched feedback suffices.
    Classic,
    /// Needs per-packet CE feedback (DCTCP, Prague): accurate ECN.
    Scalable,
}

pub struct CcEntry {
    pub name: &'static str,
    pub summary: &'static str,
    /// The ECN setting a flow of this controller gets when the scenario is silent.
    pub default_ecn: &'static str,
    pub ecn_style: EcnStyle,
    pub build: fn(&serde_json::Value) -> Result<(AnyCc, serde_json::Value), String>,
}

macro_rules! entry {
    ($name:expr, $summary:expr, $ecn:expr, $style:expr, $cfg:ty, $variant:ident, $ty:ty) => {
        CcEntry {
            name: $name,
            summary: $summary,
            default_ecn: $ecn,
            ecn_style: $style,
            build: |params| {
                let cfg: $cfg = crate::params::parse_params(params)?;
                let c = <$ty>::new(cfg.clone())?;
                Ok((AnyCc::$variant(c.into()), crate::params::to_value(&cfg)))
            },
        }
    };
}

pub const REGISTRY: &[CcEntry] = &[
    entry!("reno", "NewReno (RFC 5681/6582) with optional ABE (RFC 8511)", "off", EcnStyle::Classic, reno::RenoConfig, Reno, reno::Reno),
    entry!("cubic", "CUBIC (RFC 9438) with optional ABE (RFC 8511)", "off", EcnStyle::Classic, cubic::CubicConfig, Cubic, cubic::Cubic),
    entry!("dctcp", "DCTCP (RFC 8257)", "l4s", EcnStyle::Scalable, dctcp::DctcpConfig, Dctcp, dctcp::Dctcp),
    entry!("prague", "TCP Prague (L4STeam Linux v0.6; draft-briscoe-iccrg-prague-congestion-control)", "l4s", EcnStyle::Scalable, prague::PragueConfig, Prague, prague::Prague),
    entry!("bbr2", "BBRv2 (Google v2alpha, draft-cardwell-iccrg-bbr-congestion-control)", "off", EcnStyle::Scalable, bbr2::Bbr2Config, Bbr2, bbr2::Bbr2),
];

pub fn cc_names() -> Vec<&'static str> {
    REGISTRY.iter().map(|e| e.name).collect()
}

pub fn lookup(name: &str) -> Option<&'static CcEntry> {
    REGISTRY.iter().find(|e| e.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn on_sent_leaves_every_controllers_window_unchanged() {
        // The sender reads cwnd once per sending burst (tcp_sender::send_burst).
        for entry in REGISTRY {
            let (mut cc, _) = (entry.build)(&serde_json::json!({})).unwrap();
            cc.on_established(&Established { now_ns: 0, srtt_ns: 1_000_000, segment_bytes: 1500, accurate_ecn: true });
            for (i, in_flight) in [0u32, 1, 9, 10, 11, 1000].into_iter().enumerate() {
                let before = cc.cwnd();
                cc.on_sent(i as u64 * 1000, in_flight);
                assert_eq!(cc.cwnd(), before, "{}: on_sent({in_flight}) changed cwnd", entry.name);
            }
        }
    }

    #[test]
    fn slow_start_counts_acked_segments_up_to_ssthresh() {
        let mut cwnd = 10;
        assert_eq!(slow_start(&mut cwnd, 100, 2), 0);
        assert_eq!(cwnd, 12);
        // Crossing ssthresh: the excess goes back to congestion avoidance.
        let mut cwnd = 99;
        assert_eq!(slow_start(&mut cwnd, 100, 3), 2);
        assert_eq!(cwnd, 100);
    }

    #[test]
    fn additive_increase_is_one_segment_per_window_whatever_the_ack_size() {
        // Delayed ACKs (2 segments each) must not halve the growth rate (RFC 3465).
        for per_ack in [1u32, 2, 3] {
            let (mut cwnd, mut cnt) = (20u32, 0u32);
            let mut acked = 0;
            while acked < 20 * 5 {
                let w = cwnd;
                additive_increase(&mut cwnd, &mut cnt, w, per_ack);
                acked += per_ack;
            }
            // About 5 windows acked -> about +4..5 segments.
            assert!((24..=25).contains(&cwnd), "per_ack {per_ack}: cwnd {cwnd}");
        }
    }
}
