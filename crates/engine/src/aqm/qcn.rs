//! QCN congestion point (CP): a tail-drop FIFO that samples arriving frames
//! and reflects quantised congestion feedback to their sources.
//!
//! Normative references (read in this order):
//! - IEEE 802.1Qau-2010 (now IEEE 802.1Q clause 30-33), the CP sampling and
//!   feedback procedure; its managed-object defaults are those of the
//!   IEEE8021-CN-MIB: `cpQSp` (queue set point) 26 000 octets, `cpW` 2
//!   (`ieee8021CnCpFeedbackWeight` = 1, a power-of-two exponent),
//!   `cpMinSampleBase` 150 000 octets.
//! - Alizadeh, Atikoglu, Kabbani, Lakshmikantha, Pan, Prabhakar, Seaman,
//!   "Data Center Transport Mechanisms: Congestion Control Theory and IEEE
//!   Standardization", Allerton 2008, §II (the CP equations used here).
//! - Kabbani, Pan, Prabhakar, Seaman, "QCN Transience and Equilibrium"
//!   (seed 003): Q_eq = 22 packets in the hotspot scenario.
//!
//! At each sample: `Q_off = Q − Q_eq`, `Q_δ = Q − Q_old`, `Q_old = Q`,
//! `Fb = −(Q_off + w·Q_δ)`. Only negative feedback is sent: |Fb| is
//! quantised to 6 bits against `Fb_max = Q_eq·(2·fb_range_w + 1)` (5·Q_eq by default) and carried in a
//! congestion notification message (CNM) to the sampled frame's source.
//! The sampling interval shrinks as |Fb| grows (see [`SAMPLE_TABLE`]).
//! docs/algorithms/qcn.md lists what could and could not be checked.

use super::fifo::{Fifo, FifoConfig};
use super::{Qdisc, QdiscCtx, QdiscEnv};
use crate::packet::{Packet, PacketKind};
use crate::sim::units::{serde_buffer, serde_size, BufferSpec};
use serde::{Deserialize, Serialize};

/// Largest quantised |Fb| (6 bits).
pub const FB_QUANT_MAX: u32 = 63;

/// Sampling interval as a fraction of `sample_base`, indexed by the
/// quantised |Fb| of the last sample divided by 8: 150, 75, 50, 37.5, 30,
/// 25, 21.5 and 18.5 KB for the 150 KB base, i.e. one frame in about 100
/// (1 %) up to one in about 12 (8 %) at 1500 B.
pub const SAMPLE_TABLE: [f64; 8] = [1.0, 0.5, 1.0 / 3.0, 0.25, 0.2, 1.0 / 6.0, 21.5 / 150.0, 18.5 / 150.0];

/// Size of a CNM frame on the wire (a minimum Ethernet frame).
pub const CNM_BYTES: u32 = 64;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct QcnConfig {
    /// Q_eq, the equilibrium queue (`cpQSp`): packets ("22pkt") or bytes
    /// ("26KB"). The queue Q and Fb are measured in the same unit.
    #[serde(with = "serde_buffer")]
    pub q_eq: BufferSpec,
    /// w, the weight of the queue's growth since the last sample (`cpW`).
    pub w: f64,
    /// Bytes of arriving frames between samples when |Fb| is small
    /// (`cpMinSampleBase`); larger |Fb| samples more often ([`SAMPLE_TABLE`]).
    #[serde(with = "serde_size")]
    pub sample_base: u64,
    /// Each sampling interval is drawn uniformly within ±this fraction of
    /// its table value, so sources are not sampled in lock-step (0: exact).
    pub sample_jitter: f64,
    /// The quantiser's range: |Fb| is scaled against
    /// `Fb_max = Q_eq·(2·fb_range_w + 1)`, fixed whatever `w` is, so a
    /// larger w adds derivative gain and leaves the gain per packet of
    /// queue offset alone. Setting it equal to `w` ties the range to w (the
    /// gain per packet of offset then falls as 1/(2w + 1)).
    /// docs/algorithms/qcn.md "The quantiser and w".
    pub fb_range_w: f64,
}

impl Default for QcnConfig {
    fn default() -> Self {
        QcnConfig {
            // IEEE8021-CN-MIB ieee8021CnCpQueueSizeSetPoint default: 26 000 octets.
            q_eq: BufferSpec::Bytes(26_000),
            // IEEE8021-CN-MIB ieee8021CnCpFeedbackWeight = 1, i.e. w = 2^1; Allerton 2008 §II.
            w: 2.0,
            // IEEE8021-CN-MIB ieee8021CnCpMinSampleBase default: 150 000 octets (~1 % at 1500 B).
            sample_base: 150_000,
            // ±15 %: the QCN pseudocode's U[0.85, 1.15] randomisation (unverified for the CP;
            // spec digest pitfall 15: randomise to avoid synchronisation).
            sample_jitter: 0.15,
            // Fb_max = 5·Q_eq: the range at the standard's w = 2, kept fixed when w changes,
            // as the fluid model behind seed 003's w claim has a constant gain G_d per unit
            // of Fb (docs/algorithms/qcn.md "The quantiser and w": tying it to w made
            // w = 4 swing more, against the seed).
            fb_range_w: 2.0,
        }
    }
}

/// State that changes as the CP runs (`Clone + Default` for snapshots).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct QcnVars {
    /// Q at the previous sample (Q_eq's unit).
    pub q_old: f64,
    /// Bytes of arrivals left until the next sample.
    pub until_sample: i64,
    /// Fb and Q at the last sample, and its quantised |Fb| (0 when Fb ≥ 0).
    pub fb: f64,
    pub q: f64,
    pub fb_quantized: u32,
    /// Samples taken and CNMs sent.
    pub samples: u64,
    pub cnms: u64,
}

#[derive(Debug, Clone)]
pub struct Qcn {
    /// The queue itself: tail-drop at the scenario's buffer limit.
    fifo: Fifo,
    cfg: QcnConfig,
    /// Q_eq in its unit, and Fb_max = Q_eq·(2·fb_range_w + 1).
    q_eq: f64,
    fb_max: f64,
    pub vars: QcnVars,
}

/// Fb = −(Q_off + w·Q_δ) (Allerton 2008 §II; 802.1Qau CP).
#[inline]
pub fn qcn_feedback(q: f64, q_old: f64, q_eq: f64, w: f64) -> f64 {
    -((q - q_eq) + w * (q - q_old))
}

/// Quantise negative feedback to 6 bits: floor(|Fb|·63/Fb_max), saturating
/// at 63; 0 when Fb ≥ 0 (nothing to send).
#[inline]
pub fn qcn_quantize(fb: f64, fb_max: f64) -> u32 {
    if fb >= 0.0 {
        return 0;
    }
    let x = (-fb).min(fb_max) * FB_QUANT_MAX as f64 / fb_max;
    (x.floor() as u32).min(FB_QUANT_MAX)
}

impl Qcn {
    pub fn new(cfg: QcnConfig, env: &QdiscEnv) -> Result<Self, String> {
        let q_eq = match cfg.q_eq {
            BufferSpec::Packets(p) if p > 0 => p as f64,
            BufferSpec::Bytes(b) if b > 0 => b as f64,
            BufferSpec::Time(_) => return Err("q_eq: must be packets or bytes (e.g. '22pkt', '26KB'), not a time".into()),
            _ => return Err("q_eq: must be positive".into()),
        };
        if !(cfg.w.is_finite() && cfg.w >= 0.0) {
            return Err(format!("w: must be a non-negative number (got {})", cfg.w));
        }
        if cfg.sample_base == 0 {
            return Err("sample_base: must be positive".into());
        }
        if !(0.0..1.0).contains(&cfg.sample_jitter) {
            return Err(format!("sample_jitter: must lie in [0, 1) (got {})", cfg.sample_jitter));
        }
        let range_w = cfg.fb_range_w;
        if !(range_w.is_finite() && range_w >= 0.0) {
            return Err(format!("fb_range_w: must be a non-negative number (got {range_w})"));
        }
        let fb_max = q_eq * (2.0 * range_w + 1.0);
        let vars = QcnVars { until_sample: cfg.sample_base as i64, ..QcnVars::default() };
        Ok(Qcn {
            fifo: Fifo::new(FifoConfig {}, env)?,
            q_eq,
            fb_max,
            cfg,
            vars,
        })
    }

    /// Q in Q_eq's unit (packets or bytes).
    #[inline]
    fn queue_len(&self) -> f64 {
        match self.cfg.q_eq {
            BufferSpec::Packets(_) => self.fifo.len_pkts() as f64,
            _ => self.fifo.backlog_bytes() as f64,
        }
    }

    /// The module's only random draw: the next sampling interval in bytes
    /// for quantised feedback `fbq`.
    fn qcn_next_interval(&self, fbq: u32, ctx: &mut QdiscCtx) -> i64 {
        let base = self.cfg.sample_base as f64 * SAMPLE_TABLE[(fbq >> 3) as usize];
        let j = self.cfg.sample_jitter;
        let factor = if j > 0.0 { 1.0 - j + 2.0 * j * ctx.rng.uniform() } else { 1.0 };
        ((base * factor).round() as i64).max(1)
    }

    /// A sample (the frame `pkt` arrived; Q already includes it if queued).
    fn sample(&mut self, pkt: &Packet, ctx: &mut QdiscCtx) {
        let q = self.queue_len();
        let fb = qcn_feedback(q, self.vars.q_old, self.q_eq, self.cfg.w);
        let fbq = qcn_quantize(fb, self.fb_max);
        let v = &mut self.vars;
        v.q_old = q;
        v.fb = fb;
        v.q = q;
        v.fb_quantized = fbq;
        v.samples += 1;
        // 802.1Qau: a CNM only for negative feedback; one whose 6-bit value is
        // 0 would carry no information, so none is sent.
        if fbq > 0 {
            let mut cnm = Packet::new(PacketKind::Cnm, pkt.flow, CNM_BYTES);
            cnm.aux = fbq;
            ctx.notify_source(pkt, cnm);
            self.vars.cnms += 1;
        }
        self.vars.until_sample = self.qcn_next_interval(fbq, ctx);
    }
}

impl Qdisc for Qcn {
    fn notifies_sources(&self) -> bool {
        true
    }
    #[inline]
    fn enqueue(&mut self, pkt: Packet, ctx: &mut QdiscCtx) {
        let arrived = pkt;
        self.fifo.enqueue(pkt, ctx);
        // Every arriving frame counts towards the next sample, dropped or not;
        // a dropped frame can be sampled (its source is told too).
        self.vars.until_sample -= arrived.size_bytes as i64;
        if self.vars.until_sample <= 0 {
            self.sample(&arrived, ctx);
        }
    }
    #[inline]
    fn dequeue(&mut self, ctx: &mut QdiscCtx) -> Option<Packet> {
        self.fifo.dequeue(ctx)
    }
    fn len_pkts(&self) -> usize {
        self.fifo.len_pkts()
    }
    fn backlog_bytes(&self) -> u64 {
        self.fifo.backlog_bytes()
    }
    fn probe_names(&self) -> &'static [&'static str] {
        &["fb", "q", "fb_quantized", "cnms"]
    }
    fn probe(&self, out: &mut [f64]) {
        let v = &self.vars;
        out.copy_from_slice(&[v.fb, v.q, v.fb_quantized as f64, v.cnms as f64]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aqm::testing::{data, env, random_trace, Harness};
    use crate::packet::Ecn;

    fn cp(q_eq: BufferSpec, sample_base: u64, jitter: f64, limit_pkts: u64) -> Harness<Qcn> {
        let cfg = QcnConfig { q_eq, w: 2.0, sample_base, sample_jitter: jitter, fb_range_w: 2.0 };
        Harness::new(Qcn::new(cfg, &env(10_000_000_000, limit_pkts)).unwrap())
    }

    #[test]
    fn feedback_is_minus_offset_plus_w_times_growth() {
        // Q_eq 22, w 2: Q = 40 after Q_old = 30 gives Fb = -(18 + 2*10) = -38.
        assert_eq!(qcn_feedback(40.0, 30.0, 22.0, 2.0), -38.0);
        // A queue below Q_eq and shrinking: positive feedback.
        assert_eq!(qcn_feedback(10.0, 15.0, 22.0, 2.0), 22.0);
        // Fb_max = 22*(2*2+1) = 110: |Fb| 38 -> floor(38*63/110) = floor(21.76) = 21.
        assert_eq!(qcn_quantize(-38.0, 110.0), 21);
        assert_eq!(qcn_quantize(-110.0, 110.0), 63);
        assert_eq!(qcn_quantize(-1000.0, 110.0), 63, "saturates at 63");
        assert_eq!(qcn_quantize(-1.0, 110.0), 0, "below one step: 0");
        assert_eq!(qcn_quantize(0.0, 110.0), 0);
        assert_eq!(qcn_quantize(5.0, 110.0), 0);
    }

    #[test]
    fn each_sample_sends_the_quantised_feedback_to_the_sampled_frames_source() {
        // Sample every arrival (base 1500 B, no jitter); Q_eq = 2 packets, w = 2.
        let mut h = cp(BufferSpec::Packets(2), 1500, 0.0, 100);
        for i in 0..5u32 {
            h.enqueue(i as u64, data(i, Ecn::NotEct));
        }
        // Q after each arrival: 1..5 with Q_old one less (Q_old starts at 0), so
        // Fb = -((Q - 2) + 2*1) = -Q, and Fb_max = 2*(2*2 + 1) = 10:
        // floor(Q*63/10) = 6, 12, 18, 25, 31.
        let sent: Vec<(u32, u32, PacketKind, u64)> = h.feedback.iter().map(|p| (p.flow, p.aux, p.kind, p.ts_ns)).collect();
        let want: Vec<(u32, u32, PacketKind, u64)> =
            [6, 12, 18, 25, 31].iter().enumerate().map(|(i, &f)| (i as u32, f, PacketKind::Cnm, i as u64)).collect();
        assert_eq!(sent, want);
        assert_eq!((h.q.vars.samples, h.q.vars.cnms), (5, 5));
        assert!(h.feedback.iter().all(|p| p.size_bytes == CNM_BYTES));
    }

    #[test]
    fn no_cnm_while_the_feedback_is_not_negative() {
        // Q stays at or below Q_eq = 22 and does not grow: Fb >= 0 at every sample.
        let mut h = cp(BufferSpec::Packets(22), 1500, 0.0, 100);
        let mut t = 0;
        for _ in 0..20 {
            h.enqueue(t, data(0, Ecn::NotEct));
            t += 1;
        }
        // The ramp to 20 packets: Fb = -((Q - 22) + 2*1) = 20 - Q >= 0.
        for _ in 0..1000 {
            h.enqueue(t, data(1, Ecn::NotEct));
            h.dequeue(t);
            t += 1;
        }
        assert!(h.q.vars.samples >= 1000);
        assert!(h.feedback.is_empty(), "{} CNMs at a steady queue below Q_eq", h.feedback.len());
        h.assert_conservation();
    }

    #[test]
    fn sampling_gets_denser_as_the_feedback_grows() {
        // Byte-based Q_eq 26 KB (the standard's), 150 KB base, ±15 % jitter.
        // A steady queue of 60 packets (90 KB): Fb = -(90000 - 26000) = -64000 of
        // Fb_max 130000: quantised floor(64000*63/130000) = 31 -> table row 3 (37.5 KB).
        let run = |backlog: u32| {
            let mut h = cp(BufferSpec::Bytes(26_000), 150_000, 0.15, 1000);
            for _ in 0..backlog {
                h.enqueue(0, data(0, Ecn::NotEct));
            }
            let before = h.q.vars.samples;
            let n = 200_000u64;
            for t in 1..=n {
                h.enqueue(t, data((t % 7) as u32, Ecn::NotEct));
                h.dequeue(t);
            }
            (h.q.vars.samples - before) as f64 / n as f64
        };
        let calm = run(5); // Q = 7.5 KB < Q_eq: base rate, one in 100 frames
        let hot = run(60);
        assert!((calm - 0.01).abs() < 0.0005, "calm sampling rate {calm}");
        assert!((hot - 1500.0 / 37_500.0).abs() < 0.002, "hot sampling rate {hot}");
        // At saturation (|Fb| >= 56 of 63) the interval is 18.5 KB: one frame in ~12.3.
        let sat = run(150);
        assert!((sat - 1500.0 / 18_500.0).abs() < 0.004, "saturated sampling rate {sat}");
    }

    #[test]
    fn tail_drops_at_the_limit_and_conserves_packets() {
        let mut h = cp(BufferSpec::Packets(22), 150_000, 0.15, 50);
        random_trace(&mut h, 20_000);
        h.assert_conservation();
        let mut h = cp(BufferSpec::Packets(2), 1500, 0.0, 3);
        for i in 0..5 {
            h.enqueue(i, data(7, Ecn::NotEct));
        }
        assert_eq!((h.q.len_pkts(), h.drops()), (3, 2));
        // Every arrival was sampled, the two dropped ones too (Q = 3 > Q_eq,
        // Fb = -1 -> 6): their source is told as well.
        assert_eq!(h.feedback.iter().map(|p| p.aux).collect::<Vec<_>>(), vec![6, 12, 18, 6, 6]);
    }

    #[test]
    fn the_quantisers_range_is_pinned_unless_tied_to_w() {
        // Q_eq 22 packets. A sample with Q_off = 10, Q_δ = 5 (Q 32 after 27):
        // w = 2: |Fb| = 20 of Fb_max 110 -> floor(20·63/110) = 11;
        // w = 4, range tied to w: |Fb| = 30 of Fb_max 198 -> floor(9.55) = 9 (smaller than at w = 2);
        // w = 4, range pinned at w = 2: |Fb| = 30 of 110 -> floor(17.18) = 17.
        let fbq = |w: f64, range: f64| {
            let cfg = QcnConfig { q_eq: BufferSpec::Packets(22), w, sample_base: 1500, sample_jitter: 0.0, fb_range_w: range };
            let mut h = Harness::new(Qcn::new(cfg, &env(10_000_000_000, 100)).unwrap());
            for i in 0..31 {
                h.enqueue(i, data(0, Ecn::NotEct));
            }
            // Every arrival is sampled; set Q_old for the 32nd arrival's sample.
            h.q.vars.q_old = 27.0;
            h.enqueue(31, data(0, Ecn::NotEct));
            h.q.vars.fb_quantized
        };
        assert_eq!(fbq(2.0, 2.0), 11);
        assert_eq!(fbq(4.0, 4.0), 9, "range tied to w");
        assert_eq!(fbq(4.0, 2.0), 17, "range pinned (the default)");
        assert_eq!(QcnConfig::default().fb_range_w, 2.0);
        let cfg = QcnConfig { fb_range_w: -1.0, ..QcnConfig::default() };
        assert!(Qcn::new(cfg, &env(1_000_000, 10)).unwrap_err().starts_with("fb_range_w: must be a non-negative number"));
    }

    #[test]
    fn time_q_eq_is_rejected() {
        let cfg = QcnConfig { q_eq: BufferSpec::Time(1_000), ..QcnConfig::default() };
        let e = Qcn::new(cfg, &env(1_000_000, 10)).unwrap_err();
        assert!(e.starts_with("q_eq: must be packets or bytes"), "{e}");
    }
}
