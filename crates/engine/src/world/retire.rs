//! A workload's finished flows retire: their row of the `flows` table is
//! written once nothing can change it, and their place in the flow table
//! goes to a later flow.
//!
//! A workload starts flows for as long as the run lasts; kept to the end,
//! each held its 960-byte record and what it points to, about 1.6 kB a flow
//! started (2 000 web flows a second: 446 MB at 128 s; docs/performance.md,
//! "Workload flows over long runs"). A flow is found by its id through
//! `World::slot_of`; the flow table holds the flows alive and the places of
//! retired ones, which new flows take.
//!
//! A flow retires only once nothing can reach it again, so its record is
//! final and retiring it changes no result:
//! - its TCP sender has finished (it sends nothing again, not even for an
//!   ACK of a spurious retransmission);
//! - no packet of it is in the network: every packet its two ends sent
//!   reached an end or was dropped, by the counts the ends keep of each
//!   kind they send and receive and the flow's drops
//!   (`tcp_packets_in_network`; no count on the per-packet path but those
//!   the ends kept already). This holds only where every packet of a flow
//!   is sent by its ends, so not where a discipline sends control packets
//!   to sources (`retirement_allowed`);
//! - neither end has a timer armed: the flow's timer events still in the
//!   event list are superseded ones, which find nothing to do, before and
//!   after it retires (`World::on_source_timer`);
//! - the checkpoints that read it are done: warm-up has ended, the time
//!   series has sampled its end (`Flow::sampled_done`) and a lagging
//!   source owes no sample, and what its receiver processed ahead of real
//!   time has arrived.
//!
//! A packet capture keeps every flow's facts to the end (its headers read
//! them), so with one nothing retires.

use super::*;
use crate::metrics::records::FlowRecord;

/// How many flows a new flow retires at most before it starts. The
/// candidates are looked at oldest first; the first that cannot retire yet
/// goes to the back of the list, so a long flow is not looked at again by
/// the next flow, and ends the look: each new flow looks at one such flow
/// at most. Our choice: more than one, so that the flows retired keep up
/// with those started when several became retirable at once (an incast's,
/// or those behind a long flow).
pub(super) const RETIRE_LOOKS: usize = 8;

/// `World::slot_of` of a retired flow.
pub(super) const RETIRED: u32 = u32::MAX;

impl World {
    /// The place of live flow `id` in the flow table. Its id, where no
    /// flow can retire (`World::slots_are_ids`): a well-predicted test
    /// instead of a load the flow's record would wait for on every
    /// delivery (A-10-ack1, docs/performance.md).
    #[inline(always)]
    pub(super) fn slot(&self, id: usize) -> usize {
        if self.slots_are_ids {
            return id;
        }
        self.slot_of[id] as usize
    }

    /// The place of flow `id` in the flow table, unless it has retired.
    #[inline(always)]
    pub(super) fn live_slot(&self, id: usize) -> Option<usize> {
        if self.slots_are_ids {
            return Some(id);
        }
        match self.slot_of[id] {
            RETIRED => None,
            s => Some(s as usize),
        }
    }

    /// Flow `id` has stopped being sampled (finished before the last
    /// sample), or has retired, which it does only once sampled finished.
    pub(super) fn sampled_done(&self, id: u32) -> bool {
        self.live_slot(id as usize).is_none_or(|s| self.flows[s].sampled_done)
    }

    /// Put new flow `flow` (its id the next one) in a retired flow's place
    /// if one is free, else at the end of the table.
    pub(super) fn put_flow(&mut self, flow: Flow) {
        debug_assert_eq!(flow.id as usize, self.slot_of.len(), "flows are added in id order");
        match self.free_slots.pop() {
            Some(s) => {
                self.flows[s as usize] = flow;
                self.slot_of.push(s);
            }
            None => {
                self.slot_of.push(self.flows.len() as u32);
                self.flows.push(flow);
            }
        }
    }

    /// Whether this world's flows may retire: no packet capture, and no
    /// discipline that sends packets to sources (their packets are not
    /// counted as a flow's sent packets; see the module docs).
    pub(super) fn retirement_allowed(&self) -> bool {
        self.links.iter().filter_map(|l| l.queue.as_ref()).all(|q| q.capture.is_none() && !q.qdisc.notifies_sources())
    }

    /// Retire the candidates at the front of the list that can retire, up
    /// to `retire_looks`; the first that cannot goes to the back of the
    /// list, and ends the look. Before a new flow starts, so that it can
    /// take a place just left.
    pub(super) fn retire_finished_flows(&mut self) {
        if self.now_ns <= self.warmup_ns {
            return; // warm-up's checkpoint still reads every flow
        }
        for _ in 0..self.retire_looks {
            if self.look_at_first_candidate() != Some(true) {
                break;
            }
        }
    }

    /// Retire the candidate at the front of the list if it can retire
    /// (Some(true)), else move it to the back (Some(false)); None if there
    /// is none.
    #[inline]
    fn look_at_first_candidate(&mut self) -> Option<bool> {
        let id = self.retire_candidates.pop_front()?;
        let retires = self.can_retire(id);
        if retires {
            self.retire(id);
        } else {
            self.retire_candidates.push_back(id);
        }
        Some(retires)
    }

    /// Tests only: retire every candidate that can retire now, however
    /// many, and keep the others in their order. Run after every event
    /// (`World::retire_eagerly`), a flow retires at the first moment
    /// `can_retire` allows, where a run's usual looks, at new flows only and
    /// a few at a time, find most flows long after their last packet.
    #[cfg(test)]
    pub(super) fn retire_every_finished_flow(&mut self) {
        if self.retire_looks == 0 || self.now_ns <= self.warmup_ns {
            return;
        }
        for _ in 0..self.retire_candidates.len() {
            self.look_at_first_candidate();
        }
    }

    /// Nothing can reach flow `id` again (see the module docs).
    fn can_retire(&mut self, id: u32) -> bool {
        let now = self.now_ns;
        let drops = self.flow_counters[id as usize].drops;
        let s = self.slot(id as usize);
        let f = &mut self.flows[s];
        if !matches!(&f.source, Source::Tcp(tx) if tx.state() == SenderState::Finished) {
            return false;
        }
        if tcp_packets_in_network(f, drops) != Some(0) {
            return false;
        }
        let armed = f.source_timer_at != NO_TIMER || f.sink_timer_at != NO_TIMER;
        if armed || !f.pending_samples.is_empty() || (self.timeseries && !f.sampled_done) {
            return false;
        }
        f.delivered_bytes_at(now); // drops the entries that have arrived
        f.early.is_empty() && check_flow(f).is_ok()
    }

    /// Write flow `id`'s row of the `flows` table now, from the end-of-run
    /// record it would have, and free its place. Only the row is kept: the
    /// record held to the end cost 272 bytes a flow beside the row's 160
    /// (docs/performance.md, "Workload flows over long runs").
    fn retire(&mut self, id: u32) {
        let s = self.slot(id as usize);
        let f = &mut self.flows[s];
        // What the end of the run would read: everything it processed has
        // arrived (`can_retire`).
        f.delivered_at_end = f.processed_bytes();
        let record = super::records::flow_record(f, &self.flow_counters[id as usize]);
        self.retired_rows.push_record(&record, self.warmup_ns, self.end_ns);
        self.slot_of[id as usize] = RETIRED;
        self.free_slots.push(s as u32);
    }

    /// The end-of-run records of the flows that have not retired, in id
    /// order (the others are rows already, `World::retired_rows`).
    pub(super) fn live_flow_records(&self) -> Vec<FlowRecord> {
        (self.slot_of.iter().enumerate())
            .filter(|&(_, &s)| s != RETIRED)
            .map(|(id, &s)| super::records::flow_record(&self.flows[s as usize], &self.flow_counters[id]))
            .collect()
    }
}

/// Packets of TCP flow `f` still in the network, `drops` of them dropped
/// on the way: what its two ends sent less what reached them and what was
/// dropped (None for a flow of another kind, or counts that do not add up).
pub(super) fn tcp_packets_in_network(f: &Flow, drops: u64) -> Option<u64> {
    let (Source::Tcp(s), Sink::Tcp(r)) = (&f.source, &f.sink) else { return None };
    // The receiver answers each SYN that reaches it with one SYN-ACK: the
    // two cancel, and neither is counted.
    let sent = s.stats.segs_sent + u64::from(s.stats.syns_sent) + r.acks_sent;
    let arrived = s.stats.acks_received + u64::from(s.stats.syn_acks_received) + r.segs_received;
    sent.checked_sub(arrived + drops)
}

/// A TCP flow's end-to-end invariants (checked at the end of the run, or
/// when the flow retires).
pub(super) fn check_flow(f: &Flow) -> Result<(), String> {
    let i = f.id;
    if let (Source::Tcp(s), Sink::Tcp(r)) = (&f.source, &f.sink) {
        if r.delivered_bytes() > s.stats.bytes_sent {
            return Err(format!("flow {i}: receiver has {} bytes but the sender sent only {}", r.delivered_bytes(), s.stats.bytes_sent));
        }
        if r.rcv_nxt() < s.snd_una() {
            return Err(format!("flow {i}: sender saw ACK {} beyond receiver's {}", s.snd_una(), r.rcv_nxt()));
        }
        s.check_invariants().map_err(|e| format!("flow {i}: {e}"))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::tcp_packets_in_network;
    use crate::world::{Source, World};
    use serde_json::{json, Value};

    /// When a run's finished flows retire.
    #[derive(Clone, Copy, Debug)]
    enum Retiring {
        /// Never: every flow's record is kept to the end.
        Never,
        /// As a run retires them: a few looks before each new flow.
        AtNewFlows,
        /// Every flow that can, after every event (`World::retire_eagerly`).
        Eagerly,
    }

    /// `s` run to its end, its finished flows retiring as `how` says; the
    /// world's flow count, and how many flows retired.
    fn run(s: &Value, how: Retiring) -> (crate::Results, usize, usize) {
        let mut w = World::new(&crate::scenario::parse(&s.to_string()).unwrap()).unwrap();
        match how {
            Retiring::Never => w.retire_looks = 0,
            Retiring::AtNewFlows => {}
            Retiring::Eagerly => w.retire_eagerly = true,
        }
        w.run(|_| true).unwrap();
        let (started, retired) = (w.slot_of.len(), w.retired_rows.len());
        (w.into_results(), started, retired)
    }

    /// Every table, the summary, and the counts of events, bottleneck
    /// packets and packet-hops of `s` are the same whether finished flows
    /// retire or not, as a run retires them or each at the first moment it
    /// may (which meets each of `can_retire`'s conditions at the earliest
    /// moment it matters, where a flow looked at only when a new flow
    /// starts has mostly been quiet for long; docs/performance.md lists
    /// which conditions a test catches alone); and at least `min_retired`
    /// of its flows retire.
    /// The results, as kept.
    fn retiring_changes_nothing(name: &str, s: &Value, min_retired: f64) -> crate::Results {
        let (kept, _, none) = run(s, Retiring::Never);
        assert_eq!(none, 0, "{name}: none retires with no looks");
        for how in [Retiring::AtNewFlows, Retiring::Eagerly] {
            let (retiring, started, retired) = run(s, how);
            let name = format!("{name}, retiring {how:?}");
            assert!(retired as f64 >= min_retired * started as f64, "{name}: {retired} of {started} flows retired");
            crate::world::assert_same_results(&name, &retiring, &kept);
        }
        kept
    }

    fn web(rtt: &str, rate: &str, max: &str) -> Value {
        json!({"kind": "web", "rate": rate, "cc": "cubic", "rtt": rtt,
               "size": {"dist": "pareto", "min": "2KB", "max": max, "shape": 1.2}})
    }

    /// Web flows over a congested dumbbell, where packets are dropped on
    /// the way out and back (a small PIE buffer, a slow reverse queue, a
    /// lossy link), so that segments and ACKs are lost and sent again;
    /// with and without departure lookahead (a
    /// receiver ahead of real time, lagging sources), with an access queue
    /// per flow and without, time series on and off, and with spurious
    /// timeouts (a 1 ms minimum RTO), whose needless retransmissions and
    /// their ACKs are still in the network when a sender finishes; after a
    /// warm-up long enough that flows could retire before it (they must
    /// not: its end reads every flow's delivered bytes).
    #[test]
    fn retiring_finished_flows_changes_no_result_on_a_dumbbell() {
        let cases = [(true, false, true, false), (false, false, true, false), (true, true, true, false), (true, false, false, false), (true, false, false, true)];
        let mut rtos = vec![];
        for (lookahead, access, timeseries, spurious) in cases {
            let mut bottleneck = json!({"rate": "50Mbps", "buffer": "8ms", "aqm": "pie", "loss": 0.002,
                                        "reverse": {"rate": "2Mbps", "buffer": "10pkt"}});
            if access {
                bottleneck["access_rate"] = json!("1Gbps");
            }
            let mut s = json!({
                "duration": "3s", "warmup": "1s", "seed": 5,
                "bottleneck": bottleneck,
                "flows": [{"cc": "cubic", "rtt": "20ms"}],
                "workloads": [web("20ms", "150/s", "300KB"), web("80ms", "60/s", "1MB")],
                "engine": {"lookahead": lookahead},
                "metrics": {"interval": "50ms", "timeseries": timeseries, "sojourn_samples_every": 7}
            });
            if spurious {
                s["tcp"] = json!({"rto_min": "1ms"});
            }
            let name = format!("lookahead {lookahead}, access {access}, time series {timeseries}, spurious timeouts {spurious}");
            let summary = retiring_changes_nothing(&name, &s, 0.5).summary();
            let by_label = summary["workload_flows"]["by_label"].as_object().expect("workload flows by label");
            rtos.push(by_label.values().map(|g| g["rtos"].as_u64().expect("a count of timeouts")).sum::<u64>());
        }
        // The 1 ms minimum makes timeouts that the same run without it has
        // not (17 against 8 when written): their needless retransmissions
        // are what the case is for.
        assert!(rtos[4] > rtos[3], "timeouts with and without a 1 ms minimum RTO: {rtos:?}");
    }

    /// Incasts of DCTCP flows on a k = 4 fat tree (16 hosts, its queues
    /// handing packets on early), with a FQ-CoDel or a step-marking switch.
    /// A flow retires at an incast after its last timer has run: its
    /// receiver's delayed-ACK timer (40 ms) outlives it, so flows of the
    /// incasts before about 150 ms retire, three in four of the workload's.
    #[test]
    fn retiring_finished_flows_changes_no_result_on_a_fat_tree() {
        for aqm in ["step", "fq_codel"] {
            let s = json!({
                "duration": "200ms", "seed": 2,
                "topology": {"fat_tree": {"k": 4, "rate": "1Gbps", "delay": "2us", "buffer": "30pkt", "aqm": aqm}},
                "flows": [{"cc": "dctcp", "pattern": "permutation"}],
                "workloads": [{"kind": "incast", "cc": "dctcp", "every": "5ms", "start": "2ms", "senders": 8,
                               "size": {"dist": "fixed", "mean": "32KB"}}],
                "tcp": {"rto_initial": "10ms", "rto_min": "5ms"},
                "metrics": {"interval": "1ms"}
            });
            retiring_changes_nothing(&format!("fat tree, {aqm}"), &s, 0.4);
        }
    }

    /// What the ends' counts and the drops say is what happened: in runs
    /// whose traffic stops well before they end, so that nothing is left in
    /// the network (checked: every queue and line empty), every TCP flow's
    /// packets sent are exactly those that reached an end or were dropped. Over a lossy link, a full reverse queue (ACKs
    /// dropped), receivers written into their lines or not (departure
    /// lookahead), access queues, and a fat tree's early hand-off with
    /// FQ-CoDel; beside a rate-based flow.
    #[test]
    fn every_packet_sent_arrives_or_is_dropped() {
        let dumbbell = |lookahead: bool, access: bool| {
            let mut bottleneck = json!({"rate": "20Mbps", "buffer": "8ms", "aqm": "pie", "loss": 0.003,
                                        "reverse": {"rate": "1Mbps", "buffer": "10pkt"}});
            if access {
                bottleneck["access_rate"] = json!("1Gbps");
            }
            json!({
                "duration": "8s", "seed": 7,
                "bottleneck": bottleneck,
                "flows": [{"cc": "udp", "rate": "2Mbps", "rtt": "30ms", "stop": "1s"}],
                "workloads": [{"kind": "web", "rate": "100/s", "cc": "cubic", "rtt": "20ms", "stop": "1s",
                               "size": {"dist": "pareto", "min": "2KB", "max": "300KB", "shape": 1.2}}],
                "engine": {"lookahead": lookahead}
            })
        };
        let fat_tree = json!({
            "duration": "3s", "seed": 2,
            "topology": {"fat_tree": {"k": 4, "rate": "1Gbps", "delay": "2us", "buffer": "20pkt", "aqm": "fq_codel"}},
            "workloads": [{"kind": "incast", "cc": "dctcp", "every": "5ms", "start": "1ms", "stop": "50ms", "senders": 10,
                           "size": {"dist": "fixed", "mean": "64KB"}}]
        });
        let cases = [("lookahead", dumbbell(true, false)), ("no lookahead", dumbbell(false, false)), ("access queues", dumbbell(true, true)), ("fat tree", fat_tree)];
        for (name, s) in cases {
            let mut w = World::new(&crate::scenario::parse(&s.to_string()).unwrap()).unwrap();
            w.retire_looks = 0;
            w.run(|_| true).unwrap();
            for l in &w.links {
                if let Some(q) = &l.queue {
                    assert!(q.backlog_pkts() == 0 && !q.is_sending(), "{name}: {} still holds packets", l.name);
                }
            }
            assert!(w.lines.iter().all(|d| d.is_empty()), "{name}: a line still holds packets");
            let (mut tcp, mut dropped) = (0, 0);
            for f in &w.flows {
                let drops = w.flow_counters[f.id as usize].drops;
                if matches!(f.source, Source::Tcp(_)) {
                    assert_eq!(tcp_packets_in_network(f, drops), Some(0), "{name}: flow {} ({drops} dropped)", f.id);
                    tcp += 1;
                    dropped += drops;
                }
            }
            assert!(tcp > 50 && dropped > 0, "{name}: {tcp} TCP flows, {dropped} packets dropped");
        }
    }

    /// With a packet capture nothing retires (its headers read every flow's
    /// facts at the end).
    #[test]
    fn nothing_retires_with_a_packet_capture() {
        let s = json!({
            "duration": "1s", "seed": 1,
            "bottleneck": {"rate": "50Mbps", "buffer": "20ms"},
            "workloads": [web("20ms", "100/s", "100KB")],
            "metrics": {"pcap": {"queue": "bottleneck"}}
        });
        let (_, started, retired) = run(&s, Retiring::AtNewFlows);
        assert!(started > 50, "{started} flows");
        assert_eq!(retired, 0);
    }
}
