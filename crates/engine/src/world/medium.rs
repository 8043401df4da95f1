//! The event-loop side of a shared half-duplex medium (`net::medium`): the
//! two directions' queues take turns on one transmitter. Only links with
//! `Link::medium` set come here; ordinary links never do.

use super::*;

impl World {
    /// A packet arrives at a queue on a shared medium.
    #[cold]
    pub(super) fn medium_arrive(&mut self, l: usize, m: u32, pkt: Packet) {
        let now = self.now_ns;
        let q = self.links[l].queue.as_mut().expect("a medium's links have queues");
        q.arrive(now, pkt, &mut self.flow_counters);
        if self.mediums[m as usize].busy.is_none() {
            self.medium_start(m);
        }
        self.medium_feedback(m);
    }

    /// The medium is idle: give it to the first direction, in contention
    /// order, that has a frame to send (a discipline may drop at dequeue and
    /// have none after all).
    pub(super) fn medium_start(&mut self, m: u32) {
        let now = self.now_ns;
        let med = &self.mediums[m as usize];
        debug_assert!(med.busy.is_none());
        let (overhead_ns, header_bytes) = (med.overhead_ns, med.header_bytes);
        for d in med.contention_order() {
            let l = self.mediums[m as usize].links[d as usize];
            let link = &mut self.links[l as usize];
            let q = link.queue.as_mut().expect("a medium's links have queues");
            if q.qdisc.len_pkts() == 0 {
                continue;
            }
            if let Some(done) = q.start_tx_airtime(now, header_bytes, overhead_ns, &mut self.flow_counters) {
                self.mediums[m as usize].busy = Some(d);
                self.events.schedule(done, Event::LinkTxDone(l));
                return;
            }
        }
    }

    /// A frame's airtime ended on link `l` of medium `m`.
    #[cold]
    pub(super) fn medium_tx_done(&mut self, l: usize, m: u32) {
        let q = self.links[l].queue.as_mut().expect("a medium's links have queues");
        let pkt = q.finish_tx();
        let d = self.mediums[m as usize].direction(l as u32);
        self.mediums[m as usize].finish(d);
        self.medium_start(m);
        self.medium_feedback(m);
        self.leave_link(l, pkt);
    }

    /// A queue timer fired on a medium's link: an idle medium may now have a frame.
    #[cold]
    pub(super) fn medium_timer(&mut self, m: u32) {
        if self.mediums[m as usize].busy.is_none() {
            self.medium_start(m);
        }
        self.medium_feedback(m);
    }

    fn medium_feedback(&mut self, m: u32) {
        for l in self.mediums[m as usize].links {
            if self.links[l as usize].queue.as_ref().is_some_and(|q| q.has_feedback()) {
                self.send_feedback(l as usize);
            }
        }
    }
}
