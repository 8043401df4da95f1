//! A dumbbell's access queues (`bottleneck.access_rate`: one per flow),
//! reused once their flows have finished.
//!
//! A workload starts flows, each with its access queue, for as long as the
//! run lasts: 2 000 web flows a second made 128 612 queues in 64 s, 3.0 kB
//! each (a 2 112-byte link, its rings, the line after it and its route),
//! where 307 serve them all when reused (docs/performance.md, "With a
//! queue per flow"). A new flow instead takes over the queue of a finished
//! one once nothing of the old flow is left in it or on the line after it.
//! A new queue is put in its place, made as every access queue is, from a
//! template, keeping only the old one's name and empty buffers
//! (`access_link` in world/topology.rs), so it starts exactly as a new one
//! would; the line and the route, keyed by the queue and the delay, are
//! shared by the flows that reuse it, as they would be by two packets of
//! one flow.
//!
//! Results are those of a queue per flow: an event's place in the event
//! list never depends on which queue or line it names (`sim::heap::Entry`),
//! an access queue draws nothing at random (a loss-free FIFO), and no
//! result reports an access queue but through `packet_hops`, which keeps
//! the departures of the queues rebuilt.

use super::*;

/// How many access queues a new flow looks at for a free one before it
/// builds its own. Those looked at and not free go to the back of the list,
/// so a long flow is not looked at again by the next flow; each look reads
/// a flow's sender, a queue and a line. Our choice: 2 000 web flows a second
/// over 64 s (128 612 flows) build 398 queues with one look, 306 with 2,
/// 307 with 8 and 297 with 32 (docs/performance.md).
pub(super) const REUSE_LOOKS: usize = 8;

impl World {
    /// The access queue of a finished flow that nothing uses any more, for
    /// a new flow to take over, if one of the first `REUSE_LOOKS` listed is.
    pub(super) fn take_free_access_queue(&mut self) -> Option<u32> {
        for _ in 0..self.reuse_looks.min(self.access_queues.len()) {
            let (link, flow) = self.access_queues.pop_front()?;
            if self.access_queue_is_free(link, flow) {
                return Some(link);
            }
            self.access_queues.push_back((link, flow));
        }
        None
    }

    /// `flow` has finished (a finished TCP sender sends nothing again, not
    /// even for an ACK of a spurious retransmission), its access queue
    /// `link` is idle, and the line after it is empty. No event is pending
    /// for them then but a line's superseded ones, due by now at the
    /// latest, which find nothing, as they would on a line of its own: the
    /// new flow's first packet reaches the line's end after now. A retired
    /// flow has finished and has no packet left anywhere (`world::retire`).
    fn access_queue_is_free(&self, link: u32, flow: u32) -> bool {
        let idle = || self.links[link as usize].queue.as_ref().is_some_and(|q| q.is_idle_at(self.now_ns));
        let Some(s) = self.live_slot(flow as usize) else { return idle() };
        let f = &self.flows[s];
        if !matches!(&f.source, Source::Tcp(s) if s.state() == SenderState::Finished) {
            return false;
        }
        if !idle() {
            return false;
        }
        let mut after = self.routes.stages_of(f.fwd_route).skip_while(|&s| s != Stage::Queue(link)).skip(1);
        match after.next() {
            Some(Stage::Line(d) | Stage::SinkLine(d)) => self.lines[d as usize].is_empty(),
            _ => true,
        }
    }

    /// A sample settles reused access queue `link` for its new owner `flow`
    /// (`World::sampled_queues`, kept in link order): the entry of its last
    /// owner changes hands, or, if that left at a sample, one is added.
    pub(super) fn sample_access_queue(&mut self, link: u32, flow: u32) {
        match self.sampled_queues.binary_search_by_key(&link, |&(l, _)| l) {
            Ok(k) => self.sampled_queues[k].1 = flow,
            Err(k) => self.sampled_queues.insert(k, (link, flow)),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::world::World;
    use serde_json::{json, Value};

    /// `s` run to its end, reusing access queues or (`looks` 0) not; and
    /// the number of access queues built.
    fn run(s: &Value, looks: usize) -> (crate::Results, usize) {
        let mut w = World::new(&crate::scenario::parse(&s.to_string()).unwrap()).unwrap();
        w.reuse_looks = looks;
        w.run(|_| true).unwrap();
        let built = w.links.iter().filter(|l| l.name.starts_with("access")).count();
        (w.into_results(), built)
    }

    /// Reusing a finished flow's access queue changes no result: every
    /// table, the summary, and the counts of events, bottleneck packets and
    /// packet-hops agree with a queue per flow; with and without departure
    /// lookahead, web flows of two RTTs (two delays on the access lines)
    /// beside a long-lived flow, on a PIE bottleneck with a reverse queue.
    #[test]
    fn reused_access_queues_give_the_results_of_a_queue_per_flow() {
        for lookahead in [true, false] {
            let web = |rtt: &str, rate: &str| {
                json!({"kind": "web", "rate": rate, "cc": "cubic", "rtt": rtt,
                       "size": {"dist": "pareto", "min": "2KB", "max": "300KB", "shape": 1.2}})
            };
            let s = json!({
                "duration": "3s", "seed": 3,
                "bottleneck": {"rate": "100Mbps", "buffer": "20ms", "aqm": "pie", "access_rate": "1Gbps",
                               "reverse": {"rate": "10Mbps"}},
                "flows": [{"cc": "cubic", "rtt": "20ms"}],
                "workloads": [web("20ms", "200/s"), web("50ms", "100/s")],
                "engine": {"lookahead": lookahead},
                "metrics": {"interval": "50ms", "sojourn_samples_every": 7}
            });
            let ((reused, built), (own, one_each)) = (run(&s, super::REUSE_LOOKS), run(&s, 0));
            let flows = own.table("flows").rows();
            assert_eq!(one_each, flows, "lookahead {lookahead}: a queue per flow");
            // 75 of 877 when written.
            assert!(built * 5 < flows, "lookahead {lookahead}: {built} access queues built for {flows} flows");
            crate::world::assert_same_results(&format!("lookahead {lookahead}"), &reused, &own);
        }
    }
}
