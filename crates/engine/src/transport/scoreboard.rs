//! The sender's SACK scoreboard, RFC 6675.
//!
//! References: RFC 6675 §2 (definitions: IsLost, pipe), §4 (SetPipe), §5
//! (NextSeg, loss recovery): <https://www.rfc-editor.org/rfc/rfc6675>;
//! RFC 2018 §3 (SACK option).
//!
//! Cost per ACK is flat in the window size: segment state lives in a ring
//! indexed by `seq − snd_una`; SACKed data is also kept as a short sorted list
//! of ranges, so a re-reported block costs O(ranges it overlaps), not
//! O(block length); loss marking and the retransmission cursor only move
//! forward. (ns-3's scoreboard scans the window per ACK; see docs/performance.md.)

use crate::sim::ring::Ring;
use std::collections::VecDeque;

pub const SACKED: u8 = 0x01;
/// Deemed lost (RFC 6675 IsLost, or RTO); cleared when SACKed.
pub const LOST: u8 = 0x02;
/// A retransmission of this segment is in flight.
pub const RETRANS: u8 = 0x04;
/// The segment was retransmitted at least once.
pub const EVER_RETRANS: u8 = 0x08;

/// Per-segment sender state: 16 bytes, so a window of segments costs little
/// (a controller that needs delivery-rate samples keeps its own per-packet
/// records; RFC 6675 needs only these flags).
#[derive(Debug, Clone, Copy, Default)]
pub struct SegState {
    /// Last transmission time.
    pub tx_ns: u64,
    pub flags: u8,
}

#[derive(Debug, Clone, Default)]
pub struct Scoreboard {
    una: u64,
    segs: Ring<SegState>,
    /// SACKed ranges [start, end), sorted, disjoint, non-adjacent, all above `una`.
    ranges: Vec<(u64, u64)>,
    sacked: u32,
    lost: u32,
    retrans_out: u32,
    /// IsLost has been evaluated for every segment below this.
    lost_scan: u64,
    /// No retransmission candidate lies below this.
    retx_hint: u64,
    /// Retransmissions in flight, oldest first: (seq, its tx time, snd_nxt
    /// when it was sent), for lost-retransmission detection. A `VecDeque`,
    /// not a `Ring` like `segs`: it is touched only around losses, and a
    /// ring here cost A-10-ack1 one instruction per packet more (callgrind).
    retx_fifo: VecDeque<(u64, u64, u64)>,
}

impl Scoreboard {
    pub fn new() -> Self {
        Self::default()
    }

    /// Prefetch the oldest and newest segment records (an ACK removes the
    /// first, new data appends after the last).
    #[inline(always)]
    pub fn prefetch_ends(&self) {
        if let (Some(a), Some(b)) = (self.segs.front(), self.segs.back()) {
            crate::sim::prefetch::prefetch(a);
            crate::sim::prefetch::prefetch(b);
        }
    }

    /// Give back the buffers of a scoreboard whose segments are all
    /// acknowledged, for good: a finished sender's, which ignores every
    /// packet after (`TcpSender::on_ack` returns unless established). A
    /// workload's flows keep their records to the end of the run, and a
    /// segment ring grown to a flow's largest window stayed with them
    /// (docs/performance.md, "A flow's set-up, continued"). What is read
    /// after (`pipe`, `nxt`) is counts, not buffers.
    pub fn release_buffers(&mut self) {
        debug_assert!(self.segs.is_empty() && self.ranges.is_empty(), "a scoreboard with segments outstanding");
        self.segs = Ring::new();
        self.ranges = Vec::new();
        self.retx_fifo = VecDeque::new();
    }

    /// Slots of the segment ring's buffer (tests of `release_buffers`).
    #[cfg(test)]
    pub(crate) fn segment_capacity(&self) -> usize {
        self.segs.capacity()
    }

    #[inline]
    pub fn una(&self) -> u64 {
        self.una
    }
    /// Next new sequence number (one past the highest sent).
    #[inline]
    pub fn nxt(&self) -> u64 {
        self.una + self.segs.len() as u64
    }
    #[inline]
    pub fn outstanding(&self) -> u32 {
        self.segs.len() as u32
    }
    pub fn sacked(&self) -> u32 {
        self.sacked
    }
    pub fn lost(&self) -> u32 {
        self.lost
    }
    pub fn retrans_out(&self) -> u32 {
        self.retrans_out
    }

    /// RFC 6675 §4 SetPipe: outstanding segments neither SACKed nor lost, plus
    /// retransmissions in flight.
    #[inline]
    pub fn pipe(&self) -> u32 {
        self.outstanding() - self.sacked - self.lost + self.retrans_out
    }

    #[inline]
    pub fn seg(&self, seq: u64) -> &SegState {
        &self.segs[(seq - self.una) as usize]
    }

    /// Record a new segment `nxt()`.
    #[inline]
    pub fn push(&mut self, st: SegState) {
        self.segs.push_back(st);
    }

    /// Cumulative ACK up to `ack` (exclusive). `on_leave` sees each segment
    /// that leaves the scoreboard. Returns (acked, newly delivered): the
    /// latter excludes segments already counted when SACKed.
    pub fn advance_una(&mut self, ack: u64, mut on_leave: impl FnMut(u64, &SegState)) -> (u32, u32) {
        let ack = ack.min(self.nxt());
        if ack <= self.una {
            return (0, 0);
        }
        let acked = (ack - self.una) as u32;
        if self.sacked == 0 && self.lost == 0 && self.retrans_out == 0 {
            // Nothing SACKed, lost or retransmitted (so no SACKed ranges to
            // trim): every acknowledged segment is newly delivered.
            let mut seq = self.una;
            self.segs.drain_front(acked as usize).for_each(|s| {
                on_leave(seq, &s);
                seq += 1;
            });
            debug_assert!(self.ranges.is_empty());
            self.una = ack;
            self.lost_scan = self.lost_scan.max(ack);
            self.retx_hint = self.retx_hint.max(ack);
            return (acked, acked);
        }
        let mut delivered = 0;
        for seq in self.una..ack {
            let s = self.segs.pop_front().expect("ack within outstanding");
            if s.flags & SACKED != 0 {
                self.sacked -= 1;
            } else {
                delivered += 1;
            }
            if s.flags & LOST != 0 {
                self.lost -= 1;
            }
            if s.flags & RETRANS != 0 {
                self.retrans_out -= 1;
            }
            on_leave(seq, &s);
        }
        self.una = ack;
        let drop_to = self.ranges.iter().take_while(|r| r.1 <= ack).count();
        self.ranges.drain(..drop_to);
        if let Some(first) = self.ranges.first_mut() {
            first.0 = first.0.max(ack);
        }
        self.lost_scan = self.lost_scan.max(ack);
        self.retx_hint = self.retx_hint.max(ack);
        (acked, delivered)
    }

    /// Apply one SACK block `[start, end)`. `on_sacked` sees each newly SACKed
    /// segment. Returns how many segments were newly SACKed.
    pub fn sack(&mut self, start: u64, end: u64, mut on_sacked: impl FnMut(u64, &SegState)) -> u32 {
        let start = start.max(self.una);
        let end = end.min(self.nxt());
        if start >= end {
            return 0;
        }
        // Ranges that overlap or touch [start, end) get merged with it; the
        // gaps between them inside [start, end) are what is newly SACKed.
        let i = self.ranges.partition_point(|r| r.1 < start);
        let mut j = i;
        let mut cursor = start;
        let mut newly = 0;
        while j < self.ranges.len() && self.ranges[j].0 <= end {
            let r = self.ranges[j];
            if r.0 > cursor {
                newly += self.mark_sacked(cursor, r.0.min(end), &mut on_sacked);
            }
            cursor = cursor.max(r.1);
            j += 1;
        }
        if cursor < end {
            newly += self.mark_sacked(cursor, end, &mut on_sacked);
        }
        let merged = if i < j {
            (start.min(self.ranges[i].0), end.max(self.ranges[j - 1].1))
        } else {
            (start, end)
        };
        self.ranges.splice(i..j, std::iter::once(merged));
        newly
    }

    /// Flag `[a, b)` as SACKed (none of it was); returns the count.
    fn mark_sacked(&mut self, a: u64, b: u64, on_sacked: &mut impl FnMut(u64, &SegState)) -> u32 {
        for seq in a..b {
            let idx = (seq - self.una) as usize;
            let s = &mut self.segs[idx];
            debug_assert!(s.flags & SACKED == 0, "range list and flags disagree at {seq}");
            if s.flags & LOST != 0 {
                self.lost -= 1;
            }
            if s.flags & RETRANS != 0 {
                self.retrans_out -= 1;
            }
            s.flags = (s.flags & !(LOST | RETRANS)) | SACKED;
            self.sacked += 1;
            on_sacked(seq, &self.segs[idx]);
        }
        (b - a) as u32
    }

    /// RFC 6675 §4 IsLost: a segment is lost once `dupthresh` segments above
    /// it are SACKed. Marks every such segment; returns how many were newly marked.
    pub fn detect_losses(&mut self, dupthresh: u32) -> u32 {
        // The dupthresh-th highest SACKed sequence number.
        let mut need = dupthresh as u64;
        let mut boundary = None;
        for &(a, b) in self.ranges.iter().rev() {
            if b - a >= need {
                boundary = Some(b - need);
                break;
            }
            need -= b - a;
        }
        let Some(boundary) = boundary else { return 0 };
        let mut newly = 0;
        let from = self.lost_scan.max(self.una);
        for seq in from..boundary {
            let s = &mut self.segs[(seq - self.una) as usize];
            if s.flags & (SACKED | LOST) == 0 {
                s.flags |= LOST;
                self.lost += 1;
                newly += 1;
            }
        }
        self.lost_scan = self.lost_scan.max(boundary);
        newly
    }

    /// RFC 6675 §4 NextSeg rule 1: the lowest lost segment not yet retransmitted.
    pub fn next_retransmit(&mut self) -> Option<u64> {
        let limit = self.lost_scan.min(self.nxt());
        while self.retx_hint < limit {
            let s = self.segs[(self.retx_hint - self.una) as usize];
            if s.flags & LOST != 0 && s.flags & (RETRANS | SACKED) == 0 {
                return Some(self.retx_hint);
            }
            self.retx_hint += 1;
        }
        None
    }

    /// Record the retransmission of `seq`, refreshing its sampling state.
    pub fn mark_retransmitted(&mut self, seq: u64, mut st: SegState) {
        let idx = (seq - self.una) as usize;
        let old = self.segs[idx].flags;
        debug_assert!(old & RETRANS == 0);
        st.flags = old | RETRANS | EVER_RETRANS;
        self.retx_fifo.push_back((seq, st.tx_ns, self.nxt()));
        self.segs[idx] = st;
        self.retrans_out += 1;
        self.retx_hint = self.retx_hint.max(seq + 1);
    }

    /// Lost retransmissions: a retransmission is lost once data sent after it
    /// (a sequence number at or above snd_nxt at its sending) is SACKed
    /// (Linux `tcp_mark_lost_retrans`, kernels 2.6–4.3; RFC 6675 §5 allows
    /// such additional detection). Without this, RFC 6675 recovers a lost
    /// retransmission only by RTO. Returns how many were found.
    pub fn detect_lost_retransmissions(&mut self) -> u32 {
        let Some(&(_, high)) = self.ranges.last() else { return 0 };
        let mut found = 0;
        while let Some(&(seq, tx_ns, nxt_then)) = self.retx_fifo.front() {
            if nxt_then >= high {
                break;
            }
            self.retx_fifo.pop_front();
            if seq < self.una {
                continue;
            }
            let s = &mut self.segs[(seq - self.una) as usize];
            // Only the latest retransmission of this segment counts.
            if s.flags & RETRANS != 0 && s.flags & SACKED == 0 && s.tx_ns == tx_ns {
                s.flags &= !RETRANS;
                self.retrans_out -= 1;
                self.retx_hint = self.retx_hint.min(seq);
                found += 1;
            }
        }
        found
    }

    /// RTO (RFC 6298 §5.4 + RFC 6675 §5.1): everything not SACKed is lost and
    /// no retransmission is in flight any more. Returns how many were newly marked.
    pub fn mark_all_lost(&mut self) -> u32 {
        let mut newly = 0;
        for s in self.segs.iter_mut() {
            if s.flags & SACKED != 0 {
                continue;
            }
            if s.flags & LOST == 0 {
                s.flags |= LOST;
                self.lost += 1;
                newly += 1;
            }
            if s.flags & RETRANS != 0 {
                s.flags &= !RETRANS;
                self.retrans_out -= 1;
            }
        }
        self.lost_scan = self.nxt();
        self.retx_hint = self.una;
        self.retx_fifo.clear();
        newly
    }

    /// Consistency of counters, flags and ranges (tests and debug builds).
    pub fn check_invariants(&self) -> Result<(), String> {
        let (mut s, mut l, mut r) = (0u32, 0u32, 0u32);
        for st in &self.segs {
            s += u32::from(st.flags & SACKED != 0);
            l += u32::from(st.flags & LOST != 0);
            r += u32::from(st.flags & RETRANS != 0);
        }
        let in_ranges: u64 = self.ranges.iter().map(|(a, b)| b - a).sum();
        if (s, l, r) != (self.sacked, self.lost, self.retrans_out) || in_ranges != s as u64 {
            return Err(format!(
                "scoreboard counters (sacked {}, lost {}, retrans {}, in ranges {}) disagree with flags ({s}, {l}, {r})",
                self.sacked, self.lost, self.retrans_out, in_ranges
            ));
        }
        if self.ranges.windows(2).any(|w| w[0].1 >= w[1].0) {
            return Err(format!("SACK ranges not sorted/disjoint: {:?}", self.ranges));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scoreboard whose segments are all acknowledged gives back its
    /// buffers and reads the same after: the counts a sample reads of a
    /// finished sender do not live in them.
    #[test]
    fn released_buffers_leave_what_a_finished_sender_reports() {
        let mut sb = board(300);
        sb.sack(250, 260, |_, _| {});
        assert_eq!(sb.advance_una(300, |_, _| {}).0, 300);
        assert!(sb.segs.capacity() >= 300);
        let before = (sb.una(), sb.nxt(), sb.pipe(), sb.sacked(), sb.lost(), sb.retrans_out());
        sb.release_buffers();
        assert_eq!(sb.segs.capacity(), 0);
        assert_eq!((sb.ranges.capacity(), sb.retx_fifo.capacity()), (0, 0));
        assert_eq!((sb.una(), sb.nxt(), sb.pipe(), sb.sacked(), sb.lost(), sb.retrans_out()), before);
    }

    fn board(n: u64) -> Scoreboard {
        let mut sb = Scoreboard::new();
        for _ in 0..n {
            sb.push(SegState::default());
        }
        sb
    }

    #[test]
    fn sack_blocks_merge_and_count_only_new_segments() {
        let mut sb = board(20);
        assert_eq!(sb.sack(5, 8, |_, _| {}), 3);
        assert_eq!(sb.sack(10, 12, |_, _| {}), 2);
        // Re-reporting a grown block counts only the growth.
        assert_eq!(sb.sack(5, 9, |_, _| {}), 1);
        // A block bridging the hole merges both ranges.
        assert_eq!(sb.sack(4, 12, |_, _| {}), 2);
        assert_eq!(sb.ranges, vec![(4, 12)]);
        assert_eq!(sb.sacked(), 8);
        sb.check_invariants().unwrap();
    }

    #[test]
    fn rfc6675_islost_needs_three_sacked_segments_above() {
        let mut sb = board(10);
        sb.sack(2, 4, |_, _| {});
        assert_eq!(sb.detect_losses(3), 0);
        sb.sack(5, 6, |_, _| {});
        // SACKed: 2, 3, 5. Segments 0 and 1 have three SACKed above them; 4 has one.
        assert_eq!(sb.detect_losses(3), 2);
        assert_eq!(sb.lost(), 2);
        assert_eq!(sb.pipe(), 10 - 3 - 2);
        assert_eq!(sb.next_retransmit(), Some(0));
        sb.mark_retransmitted(0, SegState::default());
        assert_eq!(sb.next_retransmit(), Some(1));
        assert_eq!(sb.pipe(), 10 - 3 - 2 + 1);
        sb.check_invariants().unwrap();
    }

    #[test]
    fn cumulative_ack_delivers_only_unsacked_segments() {
        let mut sb = board(10);
        sb.sack(3, 6, |_, _| {});
        let (acked, delivered) = sb.advance_una(7, |_, _| {});
        assert_eq!((acked, delivered), (7, 4));
        assert_eq!((sb.una(), sb.sacked(), sb.outstanding()), (7, 0, 3));
        assert!(sb.ranges.is_empty());
        sb.check_invariants().unwrap();
    }

    #[test]
    fn cumulative_ack_without_sack_state_delivers_every_segment_in_order() {
        // The fast path (nothing SACKed, lost or retransmitted).
        let mut sb = Scoreboard::new();
        for t in 0..6 {
            sb.push(SegState { tx_ns: 100 + t, flags: 0 });
        }
        let mut left = vec![];
        assert_eq!(sb.advance_una(4, |seq, st| left.push((seq, st.tx_ns))), (4, 4));
        assert_eq!(left, vec![(0, 100), (1, 101), (2, 102), (3, 103)]);
        assert_eq!((sb.una(), sb.outstanding(), sb.pipe(), sb.seg(4).tx_ns), (4, 2, 2, 104));
        // Loss detection and the retransmission cursor start at the new una.
        sb.sack(5, 6, |_, _| {});
        sb.mark_all_lost();
        assert_eq!(sb.next_retransmit(), Some(4));
        sb.check_invariants().unwrap();
    }

    #[test]
    fn rto_marks_everything_unsacked_lost_and_restarts_the_cursor() {
        let mut sb = board(6);
        sb.sack(4, 5, |_, _| {});
        sb.mark_all_lost();
        assert_eq!((sb.lost(), sb.pipe()), (5, 0));
        let order: Vec<u64> = std::iter::from_fn(|| {
            let s = sb.next_retransmit()?;
            sb.mark_retransmitted(s, SegState::default());
            Some(s)
        })
        .collect();
        assert_eq!(order, vec![0, 1, 2, 3, 5]);
        sb.check_invariants().unwrap();
    }

    #[test]
    fn a_retransmission_is_lost_once_later_data_is_sacked() {
        let mut sb = board(10);
        sb.sack(1, 4, |_, _| {});
        sb.detect_losses(3);
        sb.mark_retransmitted(0, SegState { tx_ns: 5, ..Default::default() });
        // Data sent after the retransmission: segments 10, 11.
        sb.push(SegState::default());
        sb.push(SegState::default());
        assert_eq!(sb.detect_lost_retransmissions(), 0);
        sb.sack(9, 10, |_, _| {}); // sent before the retransmission: says nothing
        assert_eq!(sb.detect_lost_retransmissions(), 0);
        sb.sack(10, 11, |_, _| {});
        assert_eq!(sb.detect_lost_retransmissions(), 1);
        assert_eq!((sb.retrans_out(), sb.next_retransmit()), (0, Some(0)));
        sb.check_invariants().unwrap();
    }

    #[test]
    fn random_operations_keep_counters_consistent() {
        let mut rng = crate::sim::rng::SimRng::derive(3, crate::sim::rng::Domain::Flow, 0);
        let mut sb = Scoreboard::new();
        for _ in 0..2000 {
            match rng.below(5) {
                0 | 1 => sb.push(SegState::default()),
                2 if sb.outstanding() > 0 => {
                    let a = sb.una() + rng.below(sb.outstanding() as u64);
                    let b = a + 1 + rng.below(4);
                    sb.sack(a, b, |_, _| {});
                    sb.detect_losses(3);
                }
                3 if sb.outstanding() > 0 => {
                    let to = sb.una() + rng.below(sb.outstanding() as u64 / 2 + 1);
                    sb.advance_una(to, |_, _| {});
                }
                _ => {
                    if let Some(s) = sb.next_retransmit() {
                        sb.mark_retransmitted(s, SegState::default());
                    }
                    sb.detect_lost_retransmissions();
                }
            }
            sb.check_invariants().unwrap();
        }
    }
}
