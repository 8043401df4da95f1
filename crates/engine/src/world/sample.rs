//! Checkpoints: the end of warm-up and the periodic samples (time series
//! of flows and queues), including samples taken late for sources that run
//! behind real time.

use super::*;

impl World {
    pub(super) fn on_warmup_end(&mut self) {
        let now = self.now_ns;
        self.start_due_transmissions();
        for f in &mut self.flows {
            f.delivered_at_warmup = f.delivered_bytes_at(now);
        }
        for l in &mut self.links {
            if let Some(q) = &mut l.queue {
                q.end_warmup();
            }
        }
        self.next_checkpoint_ns = self.checkpoint_after(now + 1);
    }

    pub(super) fn on_sample(&mut self) {
        let t = self.now_ns;
        self.start_due_sampled_transmissions();
        for k in 0..self.sampled_flows.len() {
            // A flow retires only once sampled finished (here or, for a
            // lagging source, by a late sample since the last one).
            let Some(i) = self.live_slot(self.sampled_flows[k] as usize) else { continue };
            let f = &mut self.flows[i];
            if f.sampled_done || t < f.info.start_ns {
                continue;
            }
            let delivered = f.delivered_bytes_at(t);
            if f.clock_offset_ns == 0 {
                self.sample_source(i, t, delivered);
            } else {
                if f.pending_samples.capacity() == 0 {
                    f.pending_samples = self.sample_buffers.pop().unwrap_or_default();
                }
                f.pending_samples.push((t, delivered));
            }
        }
        // Finished flows (here or, for a lagging source, since the last
        // sample) leave the list; the order of the rest is kept.
        let mut sampled = std::mem::take(&mut self.sampled_flows);
        sampled.retain(|&id| !self.sampled_done(id));
        self.sampled_flows = sampled;
        for &(i, _) in &self.sampled_queues {
            let l = &mut self.links[i as usize];
            if !l.report {
                continue;
            }
            let q = l.queue.as_mut().expect("a queue link");
            let names = q.qdisc.subqueue_names();
            for (k, sub) in names.iter().enumerate() {
                let c = &q.counters[k];
                let s = &mut self.queue_ts;
                s.t_ns.push(t);
                s.queue.push(&l.name);
                s.subqueue.push(sub);
                s.backlog_pkts.push(q.subqueue_backlog_pkts(k) as u64);
                s.arrived_pkts.push(c.arrived_pkts);
                s.departed_pkts.push(c.departed_pkts);
                s.dropped_pkts.push(c.drops());
                s.marked_pkts.push(c.marks());
                s.sojourn_sum_ns.push(c.sojourn_sum_ns);
                s.sojourn_max_ns.push(q.take_sojourn_max(k));
            }
            let pn = q.qdisc.probe_names();
            if !pn.is_empty() {
                let mut vals = [0.0; 8];
                q.qdisc.probe(&mut vals[..pn.len()]);
                for (k, n) in pn.iter().enumerate() {
                    self.probes.push(t, &l.name, n, vals[k]);
                }
            }
        }
        // An access queue leaves once its flow has finished (it sends
        // nothing more into it) and the queue has emptied: every later
        // settling would change nothing. Reuse asks more of a queue
        // (`QueueSlot::is_idle_at`: no timer, no end of transmission
        // pending either), since it rebuilds it; settling needs only this.
        let mut sampled = std::mem::take(&mut self.sampled_queues);
        sampled.retain(|&(l, f)| {
            f == NO_OWNER || !self.sampled_done(f) || self.links[l as usize].queue.as_ref().is_some_and(|q| q.is_sending() || q.backlog_pkts() > 0)
        });
        self.sampled_queues = sampled;
        self.next_checkpoint_ns = self.checkpoint_after(t + 1);
        let next = t + self.sample_interval_ns;
        if next <= self.end_ns {
            self.events.schedule(next, Event::Sample);
        }
    }

    /// Record the source-side columns of a sample at real time `t`, of the
    /// flow in place `slot` of the flow table.
    pub(super) fn sample_source(&mut self, slot: usize, t: u64, delivered: u64) {
        let f = &mut self.flows[slot];
        let i = f.id as usize;
        match &f.source {
            Source::Tcp(s) => {
                if s.state() == SenderState::Finished {
                    f.sampled_done = true;
                }
                self.flow_ts.push(t, i as u32, delivered, s.cwnd(), s.ssthresh(), s.srtt_ns(), s.in_flight(), s.stats.retransmits, 0);
                let names = s.cc.probe_names();
                if !names.is_empty() && !f.info.from_workload {
                    let mut vals = [0.0; 8];
                    s.cc.probe(&mut vals[..names.len()]);
                    for (k, n) in names.iter().enumerate() {
                        self.probes.push(t, &format!("flow{i}"), n, vals[k]);
                    }
                }
            }
            Source::Cbr(c) => self.flow_ts.push(t, i as u32, delivered, 0, 0, 0, 0, 0, c.rate_bps()),
            Source::Probe(p) => self.flow_ts.push(t, i as u32, delivered, 0, 0, 0, 0, 0, p.rate_bps()),
            Source::Qcn(q) => {
                self.flow_ts.push(t, i as u32, delivered, 0, 0, 0, 0, 0, q.rp.rate_bps());
                let mut vals = [0.0; 8];
                let names = q.probe_names();
                q.probe(&mut vals[..names.len()]);
                for (k, n) in names.iter().enumerate() {
                    self.probes.push(t, &format!("flow{i}"), n, vals[k]);
                }
            }
        }
    }

    /// Take the samples a lagging source owes (the flow in place `f` of the
    /// flow table), before it handles an event at `local_ns`: its state has
    /// not changed since its previous event.
    #[inline(always)]
    pub(super) fn flush_source_samples(&mut self, f: usize, local_ns: u64) {
        if self.flows[f].pending_samples.first().is_some_and(|&(t, _)| t < local_ns) {
            self.flush_source_samples_due(f, local_ns);
        }
    }

    /// The rare half of [`Self::flush_source_samples`] (once per sample interval).
    #[cold]
    #[inline(never)]
    pub(super) fn flush_source_samples_due(&mut self, f: usize, local_ns: u64) {
        let mut pending = std::mem::take(&mut self.flows[f].pending_samples);
        // Queued in time order (one per sample): the due ones lead. Taken
        // in place, so the queue keeps its buffer.
        let due = pending.partition_point(|&(t, _)| t < local_ns);
        let mut taken = due;
        for &(t, delivered) in &pending[..due] {
            if self.flows[f].sampled_done {
                // Finished: later samples are dropped, as when sampled on time.
                taken = pending.len();
                break;
            }
            self.sample_source(f, t, delivered);
        }
        pending.drain(..taken);
        // An emptied buffer goes to the next flow that owes a sample.
        if pending.is_empty() {
            self.sample_buffers.push(pending);
        } else {
            self.flows[f].pending_samples = pending;
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::world::World;

    /// 4 s of a bulk flow and 200 web flows per second on a 100 Mbit/s
    /// dumbbell, after `bottleneck`'s extra keys, run to its end; finished
    /// flows retire if `retire` (`world::retire`).
    fn web_run(bottleneck: &str, retire: bool) -> World {
        let s = crate::scenario::parse(&format!(
            r#"{{"duration": "4s", "bottleneck": {{"rate": "100Mbps", "buffer": "20ms"{bottleneck}}},
                "flows": [{{"cc": "cubic", "rtt": "20ms"}}],
                "workloads": [{{"kind": "web", "rate": "200/s", "cc": "cubic", "rtt": "20ms",
                               "size": {{"dist": "exponential", "mean": "20KB"}}}}]}}"#
        ))
        .unwrap();
        let mut w = World::new(&s).unwrap();
        if !retire {
            w.retire_looks = 0;
        }
        w.run(|_| true).unwrap();
        w
    }

    /// A web workload's flows leave the sampled list once sampled finished,
    /// so a sample costs the flows alive, not every flow ever started (at
    /// 2 000 flows per second for 128 s, visiting them all took over half of
    /// the run: docs/performance.md, "Workload flows over long runs").
    #[test]
    fn a_sample_visits_the_flows_alive_not_every_flow_started() {
        let w = web_run("", true);
        let started = w.slot_of.len();
        assert!(started > 700, "{started} flows");
        // In id order, and holding every flow not yet sampled finished.
        assert!(w.sampled_flows.windows(2).all(|p| p[0] < p[1]));
        let not_done: Vec<u32> = (0..started as u32).filter(|&i| !w.sampled_done(i)).collect();
        assert!(not_done.iter().all(|i| w.sampled_flows.binary_search(i).is_ok()));
        // The long-lived flow stays, with the web flows alive at the last
        // sample (71 of 838 when written: those behind the bulk flow's
        // queue, or waiting out a lost SYN's 1 s timeout).
        assert!(w.sampled_flows.contains(&0));
        assert!(w.sampled_flows.len() * 4 < started, "{} of {started} flows still sampled", w.sampled_flows.len());
    }

    /// A finished sender gives back its segment ring (a workload's flows
    /// that cannot retire keep their records to the end of the run): none
    /// of the web flows finished keeps one, while the long-lived flow does.
    #[test]
    fn a_finished_sender_keeps_no_segment_buffer() {
        use crate::transport::tcp_sender::SenderState;
        let w = web_run("", false);
        let senders = w.flows.iter().filter_map(|f| match &f.source {
            crate::world::Source::Tcp(s) => Some(s),
            _ => None,
        });
        let finished: Vec<usize> = senders.clone().filter(|s| s.state() == SenderState::Finished).map(|s| s.segment_capacity()).collect();
        assert!(finished.len() > 600, "{} web flows finished", finished.len());
        let kept = finished.iter().filter(|&&c| c > 0).count();
        assert_eq!(kept, 0, "{kept} of {} finished senders kept a segment ring", finished.len());
        assert!(senders.clone().next().is_some_and(|s| s.state() == SenderState::Established && s.segment_capacity() > 0));
    }

    /// With `access_rate` every flow brings a queue of its own; a sample
    /// settles only the queues that can still change: the topology's, and
    /// the access queues of flows not finished or not yet emptied (at
    /// 2 000 web flows per second over 64 s, settling them all, with their
    /// histograms, made the run 2.6 x as slow: docs/performance.md).
    #[test]
    fn a_sample_settles_the_access_queues_of_unfinished_flows_only() {
        use crate::net::route::Stage;
        use crate::transport::tcp_sender::SenderState;
        let w = web_run(r#", "access_rate": "1Gbps""#, true);
        let started = w.slot_of.len();
        assert!(started > 700, "{started} flows");
        // In link order; the bottleneck first, owned by no flow.
        assert!(w.sampled_queues.windows(2).all(|p| p[0].0 < p[1].0));
        assert_eq!(w.sampled_queues[0], (0, super::NO_OWNER));
        // Every flow not finished has its access queue (the first stage of
        // its route) still settled, with itself as owner.
        for (slot, flow) in w.flows.iter().enumerate() {
            let f = flow.id as usize;
            if w.slot_of[f] as usize != slot {
                continue; // a retired flow's place: it finished
            }
            let Some(Stage::Queue(link)) = w.routes.stages_of(flow.fwd_route).next() else {
                panic!("flow {f} starts without an access queue");
            };
            let finished = matches!(&flow.source, crate::world::Source::Tcp(s) if s.state() == SenderState::Finished);
            if !finished {
                let listed = w.sampled_queues.iter().find(|e| e.0 == link);
                assert_eq!(listed, Some(&(link, f as u32)), "flow {f}'s access queue left the samples");
            }
        }
        // 18 of 838 when written.
        assert!(w.sampled_queues.len() * 4 < started, "{} queues still settled for {started} flows", w.sampled_queues.len());
    }
}
