//! Feedback from queue disciplines to sources (QCN congestion notification
//! messages, or any other discipline's `QdiscCtx::notify_source`).
//!
//! A control packet about a flow leaves the queue at real time T and reaches
//! the flow's source after the one-way propagation delay P from that source
//! to the queue, as if reflected straight back over an uncongested path
//! (802.1Qau sends CNMs to the sampled frame's source; aqmlab does not queue
//! them). A source whose clock lags real time by `clock_offset_ns` (its
//! folded first hop, see `World::add_flow`) must see the packet at local time
//! T + P, so it is delivered at real time T + P + offset. Its compiled route
//! has lost the folded hop, so P = offset + (delays before the queue on the
//! route), and the packet travels `2·offset + route delays` in one delay line
//! on an empty route, ending in `World::deliver` like an ACK does.
//!
//! Nothing here runs for disciplines that never notify: the hot path only
//! checks that the queue slot's feedback buffer is empty.

use super::World;
use crate::net::route::{shared_line, Stage, SHARED};
use crate::sim::scheduler::Event;

impl World {
    /// Route the control packets queue `l`'s discipline produced.
    #[inline(never)]
    pub(super) fn send_feedback(&mut self, l: usize) {
        let Some(q) = self.links[l].queue.as_mut() else { return };
        let mut pending = std::mem::take(&mut q.feedback);
        let route = self.feedback_route();
        for p in pending.drain(..) {
            // A flow that does not cross this queue on its way from the
            // source cannot be reflected (e.g. a reverse-path queue).
            let Some(delay) = self.feedback_delay_ns(p.flow as usize, l as u32) else { continue };
            let d = shared_line(&mut self.lines, &mut self.line_index, delay, vec![], SHARED) as usize;
            if let Some(at) = self.lines[d].push(self.now_ns, &p, route, 0) {
                self.events.schedule(at, Event::LineArrival(d as u32));
            }
        }
        // Hand the (empty) buffer back so its capacity is reused.
        if let Some(q) = self.links[l].queue.as_mut() {
            q.feedback = pending;
        }
    }

    /// Real-time delay from queue `l` back to flow `f`'s source (see the module docs).
    fn feedback_delay_ns(&self, f: usize, l: u32) -> Option<u64> {
        let flow = &self.flows[self.slot(f)];
        let mut d = 2 * flow.clock_offset_ns;
        for st in self.routes.stages_of(flow.fwd_route) {
            match st {
                Stage::Queue(q) if q == l => return Some(d),
                Stage::Queue(_) => {}
                Stage::Line(x) | Stage::SinkLine(x) => d += self.lines[x as usize].delay_ns,
            }
        }
        None
    }

    /// The route with no stages: a packet on it is delivered when its line ends.
    fn feedback_route(&mut self) -> u32 {
        if let Some(r) = self.feedback_route {
            return r;
        }
        let r = self.routes.intern(&[]);
        self.feedback_route = Some(r);
        r
    }
}
