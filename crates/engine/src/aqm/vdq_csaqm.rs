//! VDQ-CSAQM: the Virtual DualQ Core-Stateless AQM, an L4S scheduler that
//! enforces Per Packet Value (PPV) policies whatever the congestion controls.
//!
//! References (read the first first):
//! - Nádas, Gombos, Fejes, Laki, "A Congestion Control Independent L4S
//!   Scheduler", ANRW 2020 (slides "Our L4S AQM algorithm", pp. 12–14: two
//!   physical queues with strict priority; VQ0 for L4S, VQ1 for L4S and
//!   Classic, each with a serving rate `C_vi <= C`, a maximum size and a PV
//!   histogram; `CTV_i` from the histogram and a delay target `D_i` every
//!   10 ms; L4S dequeue: forward if `PV > max(CTV0, CTV1)`, else CE-mark;
//!   Classic dequeue: forward if `PV > CTV1`, else drop (or ECN-mark); the
//!   VQs are updated at dequeue). <http://ppv.elte.hu>
//! - Gombos, Hudoba, Laki, Nádas, "Towards a Congestion Control-Independent
//!   Core-Stateless AQM" (CSAQM), ANRW 2018.
//! - [`crate::ppv`] for the value scale and the edge marker.
//!
//! What the slides leave open and aqmlab chose (docs/algorithms/ppv.md):
//! - **Virtual queue.** A FIFO of `(PV, size)` records (the slides: a VQ "only
//!   stores meta-information"), served by a virtual server at `C_vi`; a record
//!   is added when a packet leaves the physical queue (sent or CE-marked, not
//!   dropped; the slides update the VQs at dequeue); when a record would
//!   exceed the VQ's maximum size the oldest records are discarded, so the VQ
//!   always describes the most recent traffic. The bytes still waiting in the
//!   physical queue(s) a VQ covers count towards its length: fed at dequeue,
//!   a VQ served at 0.98 C would otherwise see an overload only at the 2 %
//!   rate by which the link outruns it, and the physical queue would fill.
//! - **Histogram.** One bin per packet value (12-bit PVs), counting the bytes
//!   of the records in the VQ; a record leaves its bin when the virtual server
//!   has served it. No other decay: the VQ's service *is* the decay.
//! - **CTV rule.** A VQ of length at most `D_i · C_vi` bytes has no CTV
//!   (nothing is signalled). Above that, the excess `L_i − D_i·C_vi` is to be
//!   removed within one update period: the share
//!   `f_i = min(1, excess / (C_vi · 10 ms))` of the traffic is signalled, and
//!   `CTV_i` is the value below which that share of the VQ's bytes lies (the
//!   lowest-valued traffic goes first, as in an ideal PPV node).
//! - **Buffer.** One limit shared by both physical queues (as RFC 9332 DualQ);
//!   storage, classification and scheduling reuse [`super::dualq`] (strict
//!   priority is its WRR with a Classic weight of 0).

use super::dualq::{delegate_to_dual_queue, DualQueue, DualQueueAqm, L4sEct, SchedulerKind, L};
use super::{DropReason, MarkReason, Qdisc, QdiscCtx, QdiscEnv};
use crate::packet::Packet;
use crate::ppv::PV_MAX;
use crate::sim::ring::Ring;
use crate::sim::units::serde_duration;
use crate::sim::{bytes_in, NS_PER_SEC};
use serde::{Deserialize, Serialize};

/// How a virtual queue holds and serves its records (aqmlab's choice; the
/// slides say only that a VQ stores PV and size and has a maximum size).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum VqModel {
    /// Records in arrival order: the oldest are served first and discarded
    /// first when the VQ is full (the VQ describes the most recent traffic).
    Fifo,
    /// Bytes per value only: the highest values are served first and the
    /// lowest discarded first (an ideal PPV server; ppv-facts' reading).
    Ideal,
}

/// Which share of a VQ's bytes a CTV signals once the VQ exceeds its target
/// (aqmlab's choice; the slides give only the inputs: histogram and D_i).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum CtvRule {
    /// The excess over `D_i·C_vi`, relative to one update period's service.
    ExcessShare,
    /// Everything outside the highest-valued `D_i·C_vi` bytes (the "ideal
    /// PPV buffer" reading).
    Budget,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct VdqCsaqmConfig {
    /// Serving rate of VQ0 (L4S only) as a fraction of the link rate.
    pub vq0_factor: f64,
    /// Serving rate of VQ1 (L4S and Classic) as a fraction of the link rate.
    pub vq1_factor: f64,
    /// Delay target D0 of VQ0.
    #[serde(rename = "vq0_target", with = "serde_duration")]
    pub vq0_target_ns: u64,
    /// Delay target D1 of VQ1.
    #[serde(rename = "vq1_target", with = "serde_duration")]
    pub vq1_target_ns: u64,
    /// Maximum size of VQ0, as time at its serving rate.
    #[serde(rename = "vq0_limit", with = "serde_duration")]
    pub vq0_limit_ns: u64,
    /// Maximum size of VQ1, as time at its serving rate.
    #[serde(rename = "vq1_limit", with = "serde_duration")]
    pub vq1_limit_ns: u64,
    /// Period of the CTV update.
    #[serde(rename = "update_interval", with = "serde_duration")]
    pub update_interval_ns: u64,
    /// CE-mark (instead of drop) ECN-capable Classic packets below CTV1.
    pub classic_ecn: bool,
    pub l4s_ect: L4sEct,
    /// WRR weight (%) of the Classic queue; 0 = strict priority for L4S.
    pub classic_protection: u8,
    pub vq_model: VqModel,
    pub ctv_rule: CtvRule,
    /// Count the bytes still waiting in the physical queue(s) towards a VQ's length.
    pub count_waiting: bool,
}

impl Default for VdqCsaqmConfig {
    fn default() -> Self {
        VdqCsaqmConfig {
            // 0.95 C: VQs run below the link rate "by design" (slides p. 18:
            // VQs cost utilisation); 5 % headroom keeps the strict-priority L4S
            // queue near empty. Value not given in the slides: aqmlab choice.
            vq0_factor: 0.95,
            // 0.98 C: total utilisation target. Not given in the slides: aqmlab choice.
            vq1_factor: 0.98,
            // 1 ms: L4S delay target (L4S sub-millisecond goal; DualPI2's 1 ms step). Choice.
            vq0_target_ns: 1_000_000,
            // 10 ms: Classic delay target (between CoDel's 5 ms and DualPI2's 15 ms). Choice.
            vq1_target_ns: 10_000_000,
            // 4 x the targets: room above the target for the histogram to
            // express a CTV (at most 3/4 of a full VQ is signalled). Choice.
            vq0_limit_ns: 4_000_000,
            vq1_limit_ns: 40_000_000,
            // 10 ms: the slides ("periodically (every 10 ms)").
            update_interval_ns: 10_000_000,
            // Drop: the slides ("else drop (or ECN mark)").
            classic_ecn: false,
            // ECT(1)/CE to the L4S queue: RFC 9331 classification, as DualPI2.
            l4s_ect: L4sEct::L4s,
            // 0: strict priority, as the slides.
            classic_protection: 0,
            // Choices (docs/algorithms/ppv.md, with the sensitivity runs of
            // `aqmlab reproduce vdq-csaqm --full`).
            vq_model: VqModel::Fifo,
            ctv_rule: CtvRule::ExcessShare,
            count_waiting: true,
        }
    }
}

/// Bits per byte times nanoseconds per second: `rate_bps · ns / this` is bytes.
const BIT_NS_PER_BYTE: u64 = 8 * NS_PER_SEC;

/// One record of a virtual queue: a packet's value and size.
#[derive(Debug, Clone, Copy)]
struct VqRecord {
    pv: u16,
    size: u32,
}

/// A virtual queue: `(PV, size)` records served at `rate_bps`, with a PV
/// histogram of the bytes it holds.
///
/// The FIFO model keeps the records and builds the histogram from them only
/// when a CTV is computed (every update period, and only above the target).
/// Kept per record, the histogram cost two scattered bins per packet (one
/// when its record entered, one when it left), on every packet of every
/// port; the CTV is the same, as the bins hold the same sums
/// (docs/performance.md, "VDQ-CSAQM's virtual queues").
#[derive(Debug, Clone)]
pub struct VirtualQueue {
    rate_bps: u64,
    /// `D_i · C_vi` in bytes.
    target_bytes: u64,
    /// Maximum size in bytes.
    limit_bytes: u64,
    /// FIFO model: the records, oldest first (empty in the ideal model).
    records: Ring<VqRecord>,
    /// Bytes of the head record already served.
    head_served: u64,
    /// Bytes of all records (whole records; the histogram's total).
    bytes: u64,
    /// Bytes per packet value, `PV_MAX + 1` bins. The ideal model's state;
    /// in the FIFO model all zero between CTV computations, which fill it
    /// from the records and clear it again (allocated at the first).
    hist: Vec<u64>,
    last_ns: u64,
    /// Service not yet worth a byte, in bit·ns/1e9 units (exact integer
    /// drain): a remainder of `BIT_NS_PER_BYTE`, so below it.
    carry: u64,
    model: VqModel,
    rule: CtvRule,
    /// Lowest and highest bins that may hold bytes (the ideal model's scans).
    lo: usize,
    hi: usize,
}

impl VirtualQueue {
    pub fn new(rate_bps: u64, target_ns: u64, limit_ns: u64) -> Self {
        Self::with_model(rate_bps, target_ns, limit_ns, VqModel::Fifo, CtvRule::ExcessShare)
    }

    pub fn with_model(rate_bps: u64, target_ns: u64, limit_ns: u64, model: VqModel, rule: CtvRule) -> Self {
        VirtualQueue {
            rate_bps,
            target_bytes: bytes_in(rate_bps, target_ns),
            limit_bytes: bytes_in(rate_bps, limit_ns),
            records: Ring::new(),
            head_served: 0,
            bytes: 0,
            hist: match model {
                VqModel::Ideal => vec![0; PV_MAX as usize + 1],
                VqModel::Fifo => Vec::new(),
            },
            last_ns: 0,
            carry: 0,
            model,
            rule,
            lo: PV_MAX as usize,
            hi: 0,
        }
    }

    /// Bytes held (whole records).
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Bytes held of value `pv` (whole records; for tests).
    #[cfg(test)]
    pub fn bytes_of_value(&self, pv: u32) -> u64 {
        match self.model {
            VqModel::Ideal => self.hist[pv as usize],
            VqModel::Fifo => self.records.iter().filter(|r| u32::from(r.pv) == pv).map(|r| u64::from(r.size)).sum(),
        }
    }

    /// FIFO model: discard the oldest record.
    fn pop_head(&mut self) {
        let r = self.records.pop_front().expect("non-empty");
        self.bytes -= r.size as u64;
        self.head_served = 0;
        if self.records.is_empty() {
            // A fat tree's VQs empty often: refill the same first slots.
            self.records.rewind();
        }
    }

    /// Serve records at `rate_bps` from the last update to `now_ns`.
    pub fn drain(&mut self, now_ns: u64) {
        let dt = now_ns.saturating_sub(self.last_ns);
        self.last_ns = self.last_ns.max(now_ns);
        if self.bytes == 0 {
            self.carry = 0;
            return;
        }
        let mut serve = self.serve_bytes(dt);
        if self.model == VqModel::Ideal {
            self.take_bytes(serve, true);
            return;
        }
        while let Some(h) = self.records.front() {
            let left = h.size as u64 - self.head_served;
            if serve < left {
                self.head_served += serve;
                return;
            }
            serve -= left;
            self.pop_head();
        }
        self.carry = 0; // emptied: no service credit while idle
    }

    /// Whole bytes the virtual server sends in `dt_ns` with the carry of
    /// earlier service; keeps the remainder as the new carry. Exact: the
    /// same quotient and remainder in 64 bits when the product fits (gaps
    /// under about 1.8 s at 10 Gbit/s, every gap between packets of a busy
    /// queue), where a 128-bit division by a constant is a library call.
    #[inline]
    fn serve_bytes(&mut self, dt_ns: u64) -> u64 {
        if let Some(total) = self.rate_bps.checked_mul(dt_ns).and_then(|t| t.checked_add(self.carry)) {
            self.carry = total % BIT_NS_PER_BYTE;
            return total / BIT_NS_PER_BYTE;
        }
        let total = u128::from(self.rate_bps) * u128::from(dt_ns) + u128::from(self.carry);
        self.carry = (total % u128::from(BIT_NS_PER_BYTE)) as u64;
        (total / u128::from(BIT_NS_PER_BYTE)) as u64
    }

    /// Ideal model: remove `n` bytes from the highest bins (`from_top`,
    /// service) or the lowest (overflow). An emptied VQ drops its carry.
    fn take_bytes(&mut self, mut n: u64, from_top: bool) {
        while n > 0 && self.bytes > 0 {
            let bin = if from_top { &mut self.hi } else { &mut self.lo };
            while self.hist[*bin] == 0 {
                if from_top { *bin -= 1 } else { *bin += 1 }
            }
            let t = n.min(self.hist[*bin]);
            self.hist[*bin] -= t;
            self.bytes -= t;
            n -= t;
        }
        if self.bytes == 0 {
            (self.lo, self.hi, self.carry) = (PV_MAX as usize, 0, 0);
        }
    }

    /// Add a packet's record at `now_ns`, discarding the oldest records (FIFO
    /// model) or the lowest-valued bytes (ideal model) when full.
    pub fn push(&mut self, now_ns: u64, pv: u32, size: u32) {
        self.drain(now_ns);
        let pv = pv.min(PV_MAX) as u16;
        if self.model == VqModel::Ideal {
            let over = (self.bytes + size as u64).saturating_sub(self.limit_bytes);
            self.take_bytes(over, false);
            (self.lo, self.hi) = (self.lo.min(pv as usize), self.hi.max(pv as usize));
            self.hist[pv as usize] += size as u64;
        } else {
            while !self.records.is_empty() && self.bytes + size as u64 > self.limit_bytes {
                self.pop_head();
            }
            self.records.push_back(VqRecord { pv, size });
        }
        self.bytes += size as u64;
    }

    /// The CTV for the next `period_ns`, with `waiting` bytes still in the
    /// physical queue(s) this VQ covers (they reach the VQ when sent, so the
    /// VQ's length is `L = bytes + waiting`). None while `L <= D_i · C_vi` or
    /// the VQ holds no record; otherwise the smallest value `v` such that the
    /// records with `PV <= v` make up a share `f` of the VQ's bytes, where
    /// `f = min(1, (L − D_i·C_vi) / (C_vi · period))` is the excess over the
    /// target relative to what the VQ serves in one period. So the
    /// lowest-valued traffic amounting to the excess is signalled in the next
    /// period, assuming that period's values are distributed like the VQ's.
    pub fn ctv(&mut self, period_ns: u64, waiting: u64) -> Option<u32> {
        let held = self.bytes + waiting;
        if held <= self.target_bytes || self.bytes == 0 {
            return None;
        }
        let excess = (held - self.target_bytes) as f64;
        let f = match self.rule {
            CtvRule::ExcessShare => {
                let per_period = bytes_in(self.rate_bps, period_ns).max(1) as f64;
                (excess / per_period).min(1.0)
            }
            CtvRule::Budget => excess / held as f64,
        };
        let share = f * self.bytes as f64;
        if self.model == VqModel::Ideal {
            return Some(lowest_share_value(&self.hist, share));
        }
        if self.hist.is_empty() {
            self.hist = vec![0; PV_MAX as usize + 1];
        }
        for r in &self.records {
            self.hist[r.pv as usize] += u64::from(r.size);
        }
        let v = lowest_share_value(&self.hist, share);
        for r in &self.records {
            self.hist[r.pv as usize] = 0;
        }
        Some(v)
    }
}

/// The smallest value `v` whose bins `0..=v` of `hist` hold at least `share`
/// bytes (`PV_MAX` if none).
fn lowest_share_value(hist: &[u64], share: f64) -> u32 {
    let mut below = 0u64;
    for v in 0..=PV_MAX {
        below += hist[v as usize];
        if below as f64 >= share {
            return v;
        }
    }
    PV_MAX
}

/// Is a packet of value `pv` below the threshold `ctv` (signal it)?
#[inline]
fn below(pv: u32, ctv: Option<u32>) -> bool {
    ctv.is_some_and(|t| pv <= t)
}

#[derive(Debug, Clone)]
pub struct VdqCsaqm {
    dq: DualQueue,
    vq0: VirtualQueue,
    vq1: VirtualQueue,
    ctv0: Option<u32>,
    ctv1: Option<u32>,
    classic_ecn: bool,
    count_waiting: bool,
    update_interval_ns: u64,
    next_timer_ns: u64,
}

impl VdqCsaqm {
    pub fn new(cfg: VdqCsaqmConfig, env: &QdiscEnv) -> Result<Self, String> {
        for (name, f) in [("vq0_factor", cfg.vq0_factor), ("vq1_factor", cfg.vq1_factor)] {
            if !(f > 0.0 && f <= 1.0) {
                return Err(format!("{name}: must be a fraction of the link rate in (0, 1] (got {f})"));
            }
        }
        let vq_names = [("vq0", cfg.vq0_target_ns, cfg.vq0_limit_ns), ("vq1", cfg.vq1_target_ns, cfg.vq1_limit_ns)];
        for (vq, target, limit) in vq_names {
            if target == 0 {
                return Err(format!("{vq}_target: must be positive"));
            }
            if limit <= target {
                return Err(format!("{vq}_limit: must exceed {vq}_target (the VQ needs room above its target)"));
            }
        }
        if cfg.update_interval_ns == 0 {
            return Err("update_interval: must be positive".into());
        }
        let rate = |f: f64| (env.link_rate_bps as f64 * f).round() as u64;
        let dq = DualQueue::new(env.limit, env.mtu_bytes, cfg.l4s_ect, SchedulerKind::Wrr, cfg.classic_protection, 0)?;
        Ok(VdqCsaqm {
            dq,
            vq0: VirtualQueue::with_model(rate(cfg.vq0_factor), cfg.vq0_target_ns, cfg.vq0_limit_ns, cfg.vq_model, cfg.ctv_rule),
            vq1: VirtualQueue::with_model(rate(cfg.vq1_factor), cfg.vq1_target_ns, cfg.vq1_limit_ns, cfg.vq_model, cfg.ctv_rule),
            ctv0: None,
            ctv1: None,
            classic_ecn: cfg.classic_ecn,
            count_waiting: cfg.count_waiting,
            update_interval_ns: cfg.update_interval_ns,
            next_timer_ns: cfg.update_interval_ns,
        })
    }

    pub fn ctv0(&self) -> Option<u32> {
        self.ctv0
    }
    pub fn ctv1(&self) -> Option<u32> {
        self.ctv1
    }

    /// Slides p. 14: L4S: forward if PV > max(CTV0, CTV1), else CE-mark.
    fn l4s(&self, pkt: &mut Packet, ctx: &mut QdiscCtx) -> bool {
        let pv = pkt.value();
        if below(pv, self.ctv1) {
            // VQ1's threshold: the coupling between the classes.
            ctx.mark_or_drop(pkt, MarkReason::Coupled, DropReason::Aqm)
        } else if below(pv, self.ctv0) {
            ctx.mark_or_drop(pkt, MarkReason::Aqm, DropReason::Aqm)
        } else {
            true
        }
    }

    /// Slides p. 14: Classic: forward if PV > CTV1, else drop (or ECN-mark).
    fn classic(&self, pkt: &mut Packet, ctx: &mut QdiscCtx) -> bool {
        if !below(pkt.value(), self.ctv1) {
            return true;
        }
        if self.classic_ecn {
            return ctx.mark_or_drop(pkt, MarkReason::Aqm, DropReason::Aqm);
        }
        ctx.drop(*pkt, DropReason::Aqm);
        false
    }
}

impl DualQueueAqm for VdqCsaqm {
    fn dual_queue(&mut self) -> &mut DualQueue {
        &mut self.dq
    }
    fn judge(&mut self, pkt: &mut Packet, _l_len_before: usize, ctx: &mut QdiscCtx) -> bool {
        let is_l4s = pkt.subq == L;
        let sent = if is_l4s { self.l4s(pkt, ctx) } else { self.classic(pkt, ctx) };
        if !sent {
            return false;
        }
        // Slides p. 14: a packet sent from L4S updates both VQs, one from
        // Classic only VQ1.
        if is_l4s {
            self.vq0.push(ctx.now_ns, pkt.value(), pkt.size_bytes);
        }
        self.vq1.push(ctx.now_ns, pkt.value(), pkt.size_bytes);
        true
    }
}

impl Qdisc for VdqCsaqm {
    delegate_to_dual_queue!();

    fn next_timer_ns(&self) -> Option<u64> {
        Some(self.next_timer_ns)
    }
    fn on_timer(&mut self, ctx: &mut QdiscCtx) {
        let now = ctx.now_ns;
        self.vq0.drain(now);
        self.vq1.drain(now);
        let (w0, w1) = if self.count_waiting { (self.dq.l.bytes(), self.dq.bytes()) } else { (0, 0) };
        self.ctv0 = self.vq0.ctv(self.update_interval_ns, w0);
        self.ctv1 = self.vq1.ctv(self.update_interval_ns, w1);
        self.next_timer_ns = now + self.update_interval_ns;
    }
    fn probe_names(&self) -> &'static [&'static str] {
        &["ctv0", "ctv1", "vq0_bytes", "vq1_bytes"]
    }
    /// CTVs are -1 when unset; VQ sizes are as of the last packet or update.
    fn probe(&self, out: &mut [f64]) {
        let v = |c: Option<u32>| c.map_or(-1.0, f64::from);
        out[0] = v(self.ctv0);
        out[1] = v(self.ctv1);
        out[2] = self.vq0.bytes() as f64;
        out[3] = self.vq1.bytes() as f64;
    }
}

#[cfg(test)]
#[path = "vdq_csaqm_tests.rs"]
mod tests;
