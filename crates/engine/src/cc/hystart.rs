//! HyStart++: modified slow start, RFC 9406.
//!
//! Reference: RFC 9406 §4.2 (algorithm) and §4.3 (constants):
//! <https://www.rfc-editor.org/rfc/rfc9406#section-4.2>
//!
//! Per round (one window of data), the minimum RTT is tracked. When the round's
//! minimum exceeds the previous round's by `clamp(last/8, 4 ms, 16 ms)` after at
//! least 8 samples, slow start gives way to Conservative Slow Start (CSS): growth
//! divided by 4 for up to 5 rounds, then congestion avoidance. If the RTT falls
//! back below the CSS baseline, slow start resumes. Controllers call it from their
//! slow-start branch; it never decides reductions.

use super::AckEvent;
use crate::sim::NS_PER_MS;

/// RFC 9406 §4.3 constants.
const MIN_RTT_THRESH_NS: u64 = 4 * NS_PER_MS;
const MAX_RTT_THRESH_NS: u64 = 16 * NS_PER_MS;
const MIN_RTT_DIVISOR: u64 = 8;
const N_RTT_SAMPLE: u32 = 8;
const CSS_GROWTH_DIVISOR: u32 = 4;
const CSS_ROUNDS: u32 = 5;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    SlowStart,
    Css,
    /// Left for congestion avoidance (or a reduction happened).
    Done,
}

#[derive(Debug, Clone)]
pub struct HyStartPp {
    state: State,
    window_end: u64,
    last_round_min_rtt_ns: u64,
    current_round_min_rtt_ns: u64,
    rtt_sample_count: u32,
    css_baseline_min_rtt_ns: u64,
    css_rounds: u32,
    /// Acked segments not yet turned into CSS growth.
    css_acked: u32,
}

/// What the controller should do with an ACK in slow start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Growth {
    /// Segments to add to cwnd.
    pub segs: u32,
    /// Slow start is over: set ssthresh to cwnd (after adding `segs`).
    pub exit: bool,
}

impl Default for HyStartPp {
    fn default() -> Self {
        Self::new()
    }
}

impl HyStartPp {
    pub fn new() -> Self {
        HyStartPp {
            state: State::SlowStart,
            window_end: 0,
            last_round_min_rtt_ns: u64::MAX,
            current_round_min_rtt_ns: u64::MAX,
            rtt_sample_count: 0,
            css_baseline_min_rtt_ns: u64::MAX,
            css_rounds: 0,
            css_acked: 0,
        }
    }

    pub fn in_css(&self) -> bool {
        self.state == State::Css
    }

    /// §4.2: a congestion signal ends slow start and CSS.
    pub fn on_congestion(&mut self) {
        self.state = State::Done;
    }

    /// After an RTO the connection slow-starts again from one segment; HyStart++
    /// restarts its round tracking (§4.2, last paragraph).
    pub fn on_rto(&mut self) {
        *self = HyStartPp::new();
    }

    /// An ACK that acknowledged `acked` segments while cwnd < ssthresh.
    pub fn on_ack(&mut self, ev: &AckEvent, acked: u32) -> Growth {
        if self.state == State::Done {
            return Growth { segs: acked, exit: false };
        }
        let new_round = ev.snd_una >= self.window_end;
        if new_round {
            self.last_round_min_rtt_ns = self.current_round_min_rtt_ns;
            self.current_round_min_rtt_ns = u64::MAX;
            self.rtt_sample_count = 0;
            self.window_end = ev.snd_nxt;
            if self.state == State::Css {
                self.css_rounds += 1;
            }
        }
        if let Some(r) = ev.rtt_ns {
            self.current_round_min_rtt_ns = self.current_round_min_rtt_ns.min(r);
            self.rtt_sample_count += 1;
        }
        let enough = self.rtt_sample_count >= N_RTT_SAMPLE
            && self.current_round_min_rtt_ns != u64::MAX
            && self.last_round_min_rtt_ns != u64::MAX;
        match self.state {
            State::SlowStart => {
                if enough {
                    let thresh = (self.last_round_min_rtt_ns / MIN_RTT_DIVISOR).clamp(MIN_RTT_THRESH_NS, MAX_RTT_THRESH_NS);
                    if self.current_round_min_rtt_ns >= self.last_round_min_rtt_ns + thresh {
                        self.css_baseline_min_rtt_ns = self.current_round_min_rtt_ns;
                        self.state = State::Css;
                        self.css_rounds = 0;
                    }
                }
                if self.state == State::SlowStart {
                    return Growth { segs: acked, exit: false };
                }
                self.css_growth(acked)
            }
            State::Css => {
                if enough && self.current_round_min_rtt_ns < self.css_baseline_min_rtt_ns {
                    // The delay increase was spurious: back to slow start.
                    self.css_baseline_min_rtt_ns = u64::MAX;
                    self.state = State::SlowStart;
                    return Growth { segs: acked, exit: false };
                }
                let g = self.css_growth(acked);
                if self.css_rounds >= CSS_ROUNDS {
                    self.state = State::Done;
                    return Growth { segs: g.segs, exit: true };
                }
                g
            }
            State::Done => unreachable!(),
        }
    }

    fn css_growth(&mut self, acked: u32) -> Growth {
        self.css_acked += acked;
        let segs = self.css_acked / CSS_GROWTH_DIVISOR;
        self.css_acked -= segs * CSS_GROWTH_DIVISOR;
        Growth { segs, exit: false }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ack(una: u64, nxt: u64, rtt_ms: u64) -> AckEvent<'static> {
        AckEvent { snd_una: una, snd_nxt: nxt, acked_segs: 1, rtt_ns: Some(rtt_ms * NS_PER_MS), cwnd_limited: true, ..Default::default() }
    }

    /// Feeds one round of `n` ACKs at a fixed RTT; returns total growth and whether it exited.
    fn round(h: &mut HyStartPp, una: &mut u64, n: u64, rtt_ms: u64) -> (u32, bool) {
        let (mut g, mut exit) = (0, false);
        let nxt = *una + 2 * n;
        for _ in 0..n {
            *una += 1;
            let r = h.on_ack(&ack(*una, nxt, rtt_ms), 1);
            g += r.segs;
            exit |= r.exit;
        }
        *una = nxt;
        (g, exit)
    }

    #[test]
    fn steady_rtt_stays_in_slow_start() {
        let mut h = HyStartPp::new();
        let mut una = 0;
        for _ in 0..10 {
            assert_eq!(round(&mut h, &mut una, 20, 50), (20, false));
        }
        assert!(!h.in_css());
    }

    #[test]
    fn rtt_rise_above_threshold_enters_css_then_ca_after_five_rounds() {
        let mut h = HyStartPp::new();
        let mut una = 0;
        round(&mut h, &mut una, 20, 40);
        // Threshold: clamp(40/8, 4, 16) = 5 ms. A 4 ms rise is not enough...
        assert_eq!(round(&mut h, &mut una, 20, 44).0, 20);
        assert!(!h.in_css());
        // ...a 6 ms rise over the previous round's 44 ms is.
        let (g, _) = round(&mut h, &mut una, 20, 50);
        assert!(h.in_css());
        assert!(g < 20, "growth slows in CSS: {g}");
        let mut exited = false;
        for _ in 0..5 {
            exited |= round(&mut h, &mut una, 20, 50).1;
        }
        assert!(exited, "CSS ends after {CSS_ROUNDS} rounds");
    }

    #[test]
    fn css_falls_back_to_slow_start_when_rtt_drops() {
        let mut h = HyStartPp::new();
        let mut una = 0;
        round(&mut h, &mut una, 20, 40);
        round(&mut h, &mut una, 20, 50);
        assert!(h.in_css());
        round(&mut h, &mut una, 20, 41);
        assert!(!h.in_css());
    }
}
