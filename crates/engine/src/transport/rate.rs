//! Delivery-rate sampling, for model-based controllers (BBR).
//!
//! Reference: draft-cheng-iccrg-delivery-rate-estimation-02 §3 (per-packet
//! state at send, the sample from the most recently sent packet among those
//! newly delivered, interval = max(send_elapsed, ack_elapsed), app-limited
//! marking): <https://datatracker.ietf.org/doc/html/draft-cheng-iccrg-delivery-rate-estimation>,
//! and Linux `net/ipv4/tcp_rate.c` plus the BBRv2 additions (lost and CE
//! counts and in-flight data at send, for `rs->lost`, `rs->delivered_ce`,
//! `rs->tx_in_flight`).
//!
//! Kept only for senders whose controller asks for samples, so other flows
//! pay nothing. Records are indexed by `seq − snd_una`, like the scoreboard.

use crate::cc::RateSample;
use std::collections::VecDeque;

/// Connection state when a segment was (re)sent.
#[derive(Debug, Clone, Copy, Default)]
struct TxRecord {
    sent_ns: u64,
    delivered: u64,
    delivered_ns: u64,
    first_sent_ns: u64,
    lost: u64,
    delivered_ce: u64,
    tx_in_flight: u32,
    app_limited: bool,
}

#[derive(Debug, Clone, Default)]
pub struct RateSampler {
    base: u64,
    records: VecDeque<TxRecord>,
    /// Segments delivered so far (C.delivered).
    pub delivered: u64,
    delivered_ns: u64,
    first_sent_ns: u64,
    /// Segments declared lost so far.
    pub lost: u64,
    /// CE-marked segments delivered so far.
    pub delivered_ce: u64,
    /// Delivered count at which the app-limited period ends (0: not app-limited).
    app_limited_until: u64,
    // The sample being built for the current ACK.
    best: Option<TxRecord>,
    acked_sacked: u32,
}

impl RateSampler {
    pub fn new() -> Self {
        Self::default()
    }

    /// A segment `seq` leaves now with `in_flight` segments (itself included) outstanding.
    pub fn on_send(&mut self, seq: u64, now_ns: u64, in_flight_before: u32) {
        if in_flight_before == 0 {
            // §3.2: starting from idle, the interval starts now.
            self.first_sent_ns = now_ns;
            self.delivered_ns = now_ns;
        }
        let rec = TxRecord {
            sent_ns: now_ns,
            delivered: self.delivered,
            delivered_ns: self.delivered_ns,
            first_sent_ns: self.first_sent_ns,
            lost: self.lost,
            delivered_ce: self.delivered_ce,
            tx_in_flight: in_flight_before + 1,
            app_limited: self.app_limited_until != 0,
        };
        let idx = (seq - self.base) as usize;
        if idx < self.records.len() {
            self.records[idx] = rec; // a retransmission
        } else {
            debug_assert_eq!(idx, self.records.len());
            self.records.push_back(rec);
        }
    }

    /// Segment `seq` is delivered (cumulatively ACKed or SACKed for the first time).
    pub fn on_delivered(&mut self, seq: u64, now_ns: u64) {
        let idx = (seq - self.base) as usize;
        let Some(&p) = self.records.get(idx) else { return };
        self.delivered += 1;
        self.delivered_ns = now_ns;
        self.acked_sacked += 1;
        // §3.3: sample from the most recently sent packet delivered.
        if self.best.is_none_or(|b| p.delivered > b.delivered || (p.delivered == b.delivered && p.sent_ns > b.sent_ns)) {
            self.best = Some(p);
            self.first_sent_ns = p.sent_ns;
        }
    }

    /// The cumulative ACK moved to `una`: forget records below it.
    pub fn advance(&mut self, una: u64) {
        while self.base < una && !self.records.is_empty() {
            self.records.pop_front();
            self.base += 1;
        }
        self.base = self.base.max(una);
    }

    pub fn on_lost(&mut self, n: u32) {
        self.lost += n as u64;
    }

    pub fn on_ce(&mut self, n: u32) {
        self.delivered_ce += n as u64;
    }

    /// The application has nothing to send while `in_flight` < cwnd (§3.4).
    pub fn mark_app_limited(&mut self, in_flight: u32) {
        self.app_limited_until = (self.delivered + in_flight as u64).max(1);
    }

    /// Finish the sample for this ACK. `losses`: segments newly marked lost.
    pub fn take_sample(&mut self, now_ns: u64, min_rtt_ns: u64, losses: u32) -> Option<RateSample> {
        if self.app_limited_until != 0 && self.delivered > self.app_limited_until {
            self.app_limited_until = 0;
        }
        let acked_sacked = std::mem::take(&mut self.acked_sacked);
        let p = self.best.take()?;
        let send_elapsed = p.sent_ns.saturating_sub(p.first_sent_ns);
        let ack_elapsed = self.delivered_ns.saturating_sub(p.delivered_ns);
        let interval = send_elapsed.max(ack_elapsed);
        // §3.3: an interval shorter than min_rtt would overestimate the rate.
        let interval_ns = if interval < min_rtt_ns { 0 } else { interval };
        Some(RateSample {
            delivered_segs: self.delivered - p.delivered,
            interval_ns,
            delivered_ce_segs: self.delivered_ce - p.delivered_ce,
            lost_segs: self.lost - p.lost,
            tx_in_flight_segs: p.tx_in_flight,
            app_limited: p.app_limited,
            rtt_ns: now_ns.saturating_sub(p.sent_ns),
            prior_delivered: p.delivered,
            acked_sacked,
            losses,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_steady_stream_measures_its_own_rate() {
        // One segment every 1 ms, each acked 10 ms later: 1000 segments/s.
        let mut r = RateSampler::new();
        let mut samples = vec![];
        for i in 0..200u64 {
            let t = i * 1_000_000;
            r.on_send(i, t, (i.min(10)) as u32);
            if i >= 10 {
                let acked = i - 10;
                r.on_delivered(acked, t);
                r.advance(acked + 1);
                if let Some(s) = r.take_sample(t, 10_000_000, 0) {
                    if s.interval_ns > 0 {
                        samples.push(s.delivered_segs as f64 / (s.interval_ns as f64 * 1e-9));
                    }
                }
            }
        }
        let last = *samples.last().unwrap();
        assert!((last - 1000.0).abs() < 1.0, "rate {last}");
    }

    #[test]
    fn app_limited_marks_samples_until_the_window_is_delivered() {
        let mut r = RateSampler::new();
        r.on_send(0, 0, 0);
        r.mark_app_limited(1);
        r.on_send(1, 1, 1);
        r.on_delivered(0, 100);
        let s = r.take_sample(100, 1, 0).unwrap();
        assert!(!s.app_limited, "segment 0 was sent before the app-limited mark");
        r.on_delivered(1, 101);
        let s = r.take_sample(101, 1, 0).unwrap();
        assert!(s.app_limited);
        // Delivered (2) passed the mark (0 + 1 in flight): the period is over.
        r.on_send(2, 102, 0);
        r.on_delivered(2, 200);
        assert!(!r.take_sample(200, 1, 0).unwrap().app_limited);
    }
}
