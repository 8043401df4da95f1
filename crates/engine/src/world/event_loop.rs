//! The event loop: dispatch, forwarding along routes, delivery, endpoint
//! and queue timers, workload arrivals, and the run's invariants.

use super::*;

/// Flow tables larger than a per-core L2 cache (512 KiB to 1 MiB on current
/// x86 CPUs) are prefetched; smaller ones mostly hit in L2 already.
const PREFETCH_MIN_FLOWS: usize = (1 << 20) / std::mem::size_of::<Flow>();

/// Topologies with this many links (a k = 4 fat tree has 96) take the
/// memory-level shortcuts of `engine.prefetch`: the next packet events'
/// state is prefetched (`prefetch_next_event`; D, 768 links, gains about
/// 1.1 × in wall time) and sojourn-histogram buckets are logged and applied
/// in batches (`net::sojourn_log`). A dumbbell's few lines, queues and
/// histograms stay in the L1 cache, where both would only cost their
/// instructions (the prefetch: 29 a packet of A-10-ack1, docs/performance.md).
pub(super) const MEMORY_SHORTCUTS_MIN_LINKS: usize = 64;

/// Link tables larger than a 2 MiB L2 cache (970 links) prefetch one
/// event deeper (`prefetch_three_events`): D-1024 (6 144 links), not D (768).
pub(super) const DEEP_PREFETCH_MIN_LINKS: usize = (2 << 20) / std::mem::size_of::<crate::net::link::Link>();
// What the docs measured: a k = 8 tree (768 links) below, k = 16 (6 144) above.
const _: () = assert!(768 < DEEP_PREFETCH_MIN_LINKS && DEEP_PREFETCH_MIN_LINKS <= 6144);

/// Topologies with this many queues hand packets on early (`net::link`,
/// unless `engine.early_hand_off` says otherwise): in a k = 4 fat tree
/// (96 queues) and larger most queues idle between packets, and two hops in
/// three of a fat tree with CoDel then need no end-of-transmission event. A
/// dumbbell's bottleneck is rarely empty (0.6 % of B's transmissions leave
/// it empty): there the shortcut saves almost no event and costs 4.3 % more
/// instructions a packet (B forced on; docs/performance.md, stop 41).
pub(super) const EARLY_HAND_OFF_MIN_QUEUES: usize = 64;

/// Progress is reported every this many events.
const PROGRESS_EVERY: u64 = 1 << 16;

impl World {
    pub fn now_ns(&self) -> u64 {
        self.now_ns
    }

    /// Run to the end. `progress(now_ns)` is called every few thousand
    /// events; returning false aborts the run with an error.
    pub fn run(&mut self, mut progress: impl FnMut(u64) -> bool) -> Result<(), String> {
        let wall = std::time::Instant::now();
        let mut since_progress = 0u64;
        while let Some((t, ev)) = self.events.pop_until(self.end_ns) {
            if t < self.now_ns {
                return Err(format!("time went backwards: event {ev:?} at {t} ns after {} ns", self.now_ns));
            }
            self.now_ns = t;
            self.dispatch(ev);
            #[cfg(test)]
            if self.retire_eagerly {
                self.retire_every_finished_flow();
            }
            since_progress += 1;
            if since_progress == PROGRESS_EVERY {
                since_progress = 0;
                if !progress(self.now_ns) {
                    return Err("interrupted".into());
                }
            }
        }
        let end = self.end_ns;
        self.now_ns = end;
        self.start_due_transmissions();
        for f in &mut self.flows {
            f.delivered_at_end = f.delivered_bytes_at(end);
        }
        self.catch_up_sources()?;
        self.now_ns = end;
        self.wall_s = wall.elapsed().as_secs_f64();
        // Samples still owed fall after a source's last event: its state is final.
        for i in 0..self.flows.len() {
            self.flush_source_samples(i, u64::MAX);
        }
        self.flow_ts.sort_by_time();
        progress(self.end_ns);
        self.check_invariants()
    }

    /// Sources whose clock lags real time have not yet lived their last
    /// `clock_offset_ns`: run only their events (ACK arrivals, timers) up to
    /// local time `end`. Whatever they send now would reach the network after
    /// the end, so it is discarded, exactly as the textbook schedule would
    /// leave it unsimulated in its first delay line.
    pub(super) fn catch_up_sources(&mut self) -> Result<(), String> {
        let end = self.end_ns;
        let horizon = end + self.max_clock_offset_ns;
        if horizon == end {
            return Ok(());
        }
        self.catching_up = true;
        while let Some((t, ev)) = self.events.pop_until(horizon) {
            if t < self.now_ns {
                return Err(format!("time went backwards: event {ev:?} at {t} ns after {} ns", self.now_ns));
            }
            self.now_ns = t;
            match ev {
                Event::SenderTimer(f) => {
                    // A retired flow's timer is a superseded one (`world::retire`).
                    if self.live_slot(f as usize).is_some_and(|s| t - self.flows[s].clock_offset_ns <= end) {
                        self.on_source_timer(f as usize);
                    }
                }
                Event::LineArrival(d) => {
                    let d = d as usize;
                    if !self.lines[d].take_event(t) {
                        continue;
                    }
                    while let Some(p) = self.lines[d].pop_due(t) {
                        let f = self.slot(p.flow as usize);
                        if !p.from_source()
                            && self.routes.stage(p.route, p.hop).is_none()
                            && t - self.flows[f].clock_offset_ns <= end
                        {
                            self.deliver(&p);
                        }
                    }
                    if let Some(next) = self.lines[d].rearm() {
                        self.events.schedule(next, Event::LineArrival(d as u32));
                    }
                }
                _ => {}
            }
        }
        self.catching_up = false;
        Ok(())
    }

    #[inline]
    pub(super) fn dispatch(&mut self, ev: Event) {
        match ev {
            Event::LinkTxDone(l) => self.on_tx_done(l as usize),
            Event::LineArrival(d) => self.on_line_arrival(d as usize),
            Event::SenderTimer(f) => self.on_source_timer(f as usize),
            Event::ReceiverTimer(f) => self.on_sink_timer(f as usize),
            Event::QdiscTimer(l) => self.on_qdisc_timer(l as usize),
            Event::LinkRateChange(i) => {
                let (_, link, rate) = self.topology.rate_changes[i as usize];
                self.links[link as usize].set_rate_bps(rate);
            }
            Event::WorkloadArrival(w) => self.on_workload_arrival(w as usize),
            Event::Sample => self.on_sample(),
            Event::WarmupEnd => self.on_warmup_end(),
        }
    }

    #[inline]
    pub(super) fn on_tx_done(&mut self, l: usize) {
        let now = self.now_ns;
        let link = &mut self.links[l];
        let q = link.queue.as_mut().expect("only queue links transmit");
        // The queue's flag, not `link.medium()`: the link's last cache line
        // stays unread on every hop (see `QueueSlot::on_medium`).
        if q.on_medium() {
            let m = link.medium().expect("a queue on a medium has one");
            return self.medium_tx_done(l, m);
        }
        if q.hands_on_early() {
            return self.tx_done_early(l);
        }
        let pkt = q.finish_tx();
        if let Some(done) = q.start_tx(now, &mut self.flow_counters) {
            self.events.schedule(done, Event::LinkTxDone(l as u32));
        }
        if q.has_feedback() {
            self.send_feedback(l);
        }
        self.leave_link(l, pkt);
    }

    /// A packet that finished its transmission on link `l`: the link's random
    /// loss and marking, then on along its route.
    #[inline]
    pub(super) fn leave_link(&mut self, l: usize, mut pkt: Packet) {
        let link = &mut self.links[l];
        // The queue's flag, not the fields: the link's last line stays unread.
        if !link.loses_or_marks() || link.apply_random(&mut pkt, &mut self.flow_counters) {
            self.forward(&mut pkt);
        }
    }

    #[inline]
    pub(super) fn on_line_arrival(&mut self, d: usize) {
        if !self.lines[d].take_event(self.now_ns) {
            return; // superseded by an earlier head
        }
        self.prefetch_next_event();
        while let Some(mut p) = self.lines[d].pop_due(self.now_ns) {
            self.prefetch_flows_behind(d);
            self.forward(&mut p);
        }
        if let Some(t) = self.lines[d].rearm() {
            self.events.schedule(t, Event::LineArrival(d as u32));
        }
        if self.sojourn_log.is_due() {
            self.sojourn_log.apply(&mut self.links);
        }
    }

    /// In a fat tree a hop waits on memory: the line's head packet, the
    /// next queue's hot lines and the header of the line after it, each in
    /// a different place. The event likely to run next is known
    /// (`EventQueue::peek_line_arrivals`): start loading its head packet,
    /// queue and next line now, so they arrive while this event runs.
    /// On from `MEMORY_SHORTCUTS_MIN_LINKS` links; one event deeper from
    /// `DEEP_PREFETCH_MIN_LINKS` (`prefetch_three_events`).
    #[inline(always)]
    fn prefetch_next_event(&self) {
        if !self.prefetch_events {
            return;
        }
        if self.prefetch_deep {
            return self.prefetch_three_events();
        }
        let (next, after) = self.events.peek_line_arrivals();
        // Two deep: the line of the event after next, whose head and queue
        // this step can then find without waiting for the line itself.
        if let Some(d) = after {
            prefetch(&self.lines[d as usize]);
        }
        if let Some(d) = next {
            self.prefetch_hop_of(d);
        }
    }

    /// The head packet of line `d` (its header loaded one event ago), the
    /// hot lines of the queue it enters and the header of the line after.
    #[inline(always)]
    fn prefetch_hop_of(&self, d: u32) {
        if let Some(head) = self.lines[d as usize].head_slot() {
            prefetch(head);
        }
        if let Some((link, route, hop)) = self.queue_ahead_of(d) {
            link.prefetch_hot();
            if let Some(after) = self.line_after_queue(route, hop) {
                prefetch(after);
            }
        }
    }

    /// Where the head packet of line `d` goes next, for the prefetch hints:
    /// the link whose queue it enters, and its route and that queue's hop
    /// for [`Self::line_after_queue`]; None when its next stage is not a
    /// queue (it is delivered).
    #[inline(always)]
    fn queue_ahead_of(&self, d: u32) -> Option<(&Link, u32, u8)> {
        let (route, hop) = self.lines[d as usize].head_next();
        match self.routes.stage(route, hop) {
            Some(Stage::Queue(l)) => Some((&self.links[l as usize], route, hop)),
            _ => None,
        }
    }

    /// The line that follows the queue at stage `hop` of `route`, if a line
    /// does. Looked up after the queue's prefetch has started, not with it:
    /// returning both at once cost D 2 and D-1024 8 instructions a hop.
    #[inline(always)]
    fn line_after_queue(&self, route: u32, hop: u8) -> Option<&DelayLine> {
        match self.routes.stage(route, hop + 1) {
            Some(Stage::Line(d2)) => Some(&self.lines[d2 as usize]),
            _ => None,
        }
    }

    /// Where the link table outgrows the caches (D-1024), one event
    /// deeper: the third event's line header, the second's head packet,
    /// queue and next line (as `prefetch_next_event` does for the next),
    /// and for the next event, whose queue and next line were started one
    /// event ago, what they point to: the front of the queue's waiting ring
    /// and the slot its packet will be written to on the line after. In
    /// D-1024 the plain build ran 1.15 × as fast (interleaved pairs) and
    /// the profile-guided one 1.14 × on a quiet host (1.03 ×, not resolved,
    /// on a busy one); in D, whose state misses the L2 less, its 7 % more
    /// instructions per hop made it 0.95 × as fast (docs/performance.md).
    #[inline(always)]
    fn prefetch_three_events(&self) {
        let [next, after, third] = self.events.peek_three_line_arrivals();
        if let Some(d) = third {
            prefetch(&self.lines[d as usize]);
        }
        if let Some(d) = after {
            self.prefetch_hop_of(d);
        }
        if let Some((link, route, hop)) = next.and_then(|d| self.queue_ahead_of(d)) {
            link.prefetch_waiting();
            if let Some(slot) = self.line_after_queue(route, hop).and_then(DelayLine::tail_slot_hint) {
                prefetch(slot);
            }
        }
    }

    /// The packets behind a line's head are usually the next events to run:
    /// start loading the state they will touch, two deep so that the record
    /// fetched one event ago can already be read for what it points to.
    /// Only worth its instructions once the flow table outgrows the L2 cache.
    #[inline(always)]
    pub(super) fn prefetch_flows_behind(&self, d: usize) {
        if !self.prefetch_flows || self.flows.len() < PREFETCH_MIN_FLOWS {
            return;
        }
        let line = &self.lines[d];
        if let Some(f) = line.flow_at(1) {
            prefetch(&self.flows[self.slot(f as usize)]);
        }
        if let Some(f) = line.flow_at(0) {
            let f = f as usize;
            self.flows[self.slot(f)].prefetch_heap_state();
            prefetch(&self.flow_counters[f]);
        }
    }

    /// Move a packet to the next stage of its route, or deliver it.
    #[inline]
    pub(super) fn forward(&mut self, pkt: &mut Packet) {
        if self.catching_up {
            return; // sent after the end of the run
        }
        let now = self.now_ns;
        match self.routes.stage(pkt.route, pkt.hop) {
            None => self.deliver(pkt),
            Some(Stage::Queue(l)) => {
                let link = &mut self.links[l as usize];
                let q = link.queue.as_mut().expect("queue stage");
                if q.departs_on_arrival() {
                    if let Some(leaves_ns) = q.arrive_ahead(now, pkt, &mut self.flow_counters, &mut self.sojourn_log, l) {
                        self.forward_ahead(pkt, pkt.hop + 1, leaves_ns);
                    }
                    return;
                }
                pkt.hop += 1;
                if q.hands_on_early() {
                    return self.arrive_early(l, pkt);
                }
                if q.on_medium() {
                    let m = link.medium().expect("a queue on a medium has one");
                    return self.medium_arrive(l as usize, m, *pkt);
                }
                if q.arrive(now, *pkt, &mut self.flow_counters) {
                    if let Some(done) = q.start_tx(now, &mut self.flow_counters) {
                        self.events.schedule(done, Event::LinkTxDone(l));
                    }
                }
                if q.has_feedback() {
                    self.send_feedback(l as usize);
                }
            }
            Some(line) => self.enter_line(pkt, line, pkt.hop, now),
        }
    }

    /// A packet that leaves a queue with departure lookahead at `leaves_ns`
    /// (now or later) enters the line at stage `hop`, the one that follows
    /// the queue (see `route::compile`), as if it left then.
    #[inline]
    pub(super) fn forward_ahead(&mut self, pkt: &mut Packet, hop: u8, leaves_ns: u64) {
        if leaves_ns > self.end_ns {
            return; // still on the wire at the end, as its departure event would not run
        }
        match self.routes.stage(pkt.route, hop) {
            Some(line @ (Stage::Line(_) | Stage::SinkLine(_))) => self.enter_line(pkt, line, hop, leaves_ns),
            other => unreachable!("a line follows every queue with departure lookahead, found {other:?}"),
        }
    }

    /// Put a packet that leaves its previous stage at `leaves_ns` (now, or
    /// later under departure lookahead) on the line stage `line`, stage `hop`
    /// of its route.
    ///
    /// The packet's own `hop` is not written on the way into a line: the
    /// line stamps the next hop into its copy, and a narrow store into the
    /// packet just before that copy can stall it until the store commits
    /// (see `DelayLine::push`). Measured, this made no difference in wall
    /// time (docs/performance.md); it is kept as the path without the store.
    #[inline(always)]
    pub(super) fn enter_line(&mut self, pkt: &mut Packet, line: Stage, hop: u8, leaves_ns: u64) {
        let (Stage::Line(d) | Stage::SinkLine(d)) = line else {
            unreachable!("{line:?} is not a line");
        };
        let next_hop = hop + 1;
        if self.lines[d as usize].is_lossy() {
            pkt.hop = next_hop;
            if !self.random_losses_slow(d as usize, pkt) {
                return;
            }
        }
        if let Stage::SinkLine(_) = line {
            pkt.hop = next_hop;
            let arrival = leaves_ns + self.lines[d as usize].delay_ns;
            self.deliver_to_sink(pkt, arrival);
        } else if let Some(at) = self.lines[d as usize].push(leaves_ns, pkt, pkt.route, next_hop) {
            self.events.schedule(at, Event::LineArrival(d));
        }
    }

    /// Departure lookahead: settle every transmission started by now (before
    /// counters, backlogs or histograms are read).
    /// The sojourn log is applied and the histograms' open runs counted too
    /// (`net::sojourn_log`): every caller goes on to read or reset what the
    /// queues recorded.
    pub(super) fn start_due_transmissions(&mut self) {
        let now = self.now_ns;
        for (i, l) in self.links.iter_mut().enumerate() {
            if let Some(q) = &mut l.queue {
                settle(q, now, &mut self.flow_counters, &mut self.sojourn_log, i as u32);
            }
        }
        self.sojourn_log.apply(&mut self.links);
    }

    /// [`Self::start_due_transmissions`] for the queues a sample visits
    /// (`World::sampled_queues`): on the others it would change nothing.
    pub(super) fn start_due_sampled_transmissions(&mut self) {
        let now = self.now_ns;
        for &(i, _) in &self.sampled_queues {
            let q = self.links[i as usize].queue.as_mut().expect("a queue link");
            settle(q, now, &mut self.flow_counters, &mut self.sojourn_log, i);
        }
        self.sojourn_log.apply(&mut self.links);
    }

    /// Random loss and marking of rate-less links merged into line `d`.
    #[inline(never)]
    pub(super) fn random_losses_slow(&mut self, d: usize, pkt: &mut Packet) -> bool {
        for i in 0..self.lines.lossy_links(d).len() {
            let l = self.lines.lossy_links(d)[i] as usize;
            if !self.links[l].apply_random(pkt, &mut self.flow_counters) {
                return false;
            }
        }
        true
    }

    /// The timer of flow `id`'s source.
    pub(super) fn on_source_timer(&mut self, id: usize) {
        let now = self.now_ns;
        // A retired flow had no timer armed: its events are superseded ones.
        let Some(f) = self.live_slot(id) else { return };
        if self.flows[f].source_timer_at != now {
            return; // superseded
        }
        self.flows[f].source_timer_at = NO_TIMER;
        let local = now - self.flows[f].clock_offset_ns;
        self.flush_source_samples(f, local);
        let mut out = self.outboxes.take();
        match &mut self.flows[f].source {
            Source::Tcp(s) => s.on_timer(local, &mut out),
            Source::Cbr(c) => c.on_timer(local, &mut out),
            Source::Qcn(q) => q.on_timer(local, &mut out),
            Source::Probe(p) => p.on_timer(local, &mut out),
        }
        let flow = &mut self.flows[f];
        if let Some(m) = flow.marker.as_deref_mut() {
            m.mark_all(local, &mut out);
        }
        let route = flow.fwd_route;
        self.emit(out, route);
        self.sync_source_timer(f);
    }

    /// The timer of flow `id`'s receiver.
    pub(super) fn on_sink_timer(&mut self, id: usize) {
        let now = self.now_ns;
        let Some(f) = self.live_slot(id) else { return };
        if self.flows[f].sink_timer_at != now {
            return;
        }
        self.flows[f].sink_timer_at = NO_TIMER;
        let mut out = self.outboxes.take();
        let flow = &mut self.flows[f];
        if let Sink::Tcp(r) = &mut flow.sink {
            r.on_timer(now, &mut out);
        }
        let route = flow.rev_route;
        self.emit(out, route);
        self.sync_sink_timer(f);
    }

    /// Arm the timer of the source in place `f` of the flow table if it now
    /// wants to run earlier than armed.
    #[inline(always)]
    pub(super) fn sync_source_timer(&mut self, f: usize) {
        let flow = &mut self.flows[f];
        let want = match &flow.source {
            Source::Tcp(s) => s.next_wakeup_ns(),
            Source::Cbr(c) => c.next_wakeup_ns(),
            Source::Qcn(q) => q.next_wakeup_ns(),
            Source::Probe(p) => p.next_wakeup_ns(),
        };
        if let Some(w) = want.map(|local| local + flow.clock_offset_ns) {
            let w = w.max(self.now_ns);
            if w < flow.source_timer_at {
                flow.source_timer_at = w;
                self.events.schedule(w, Event::SenderTimer(flow.id));
            }
        }
    }

    /// Arm the timer of the receiver in place `f` of the flow table if it
    /// now wants to run earlier than armed.
    #[inline(always)]
    pub(super) fn sync_sink_timer(&mut self, f: usize) {
        let flow = &mut self.flows[f];
        let want = match &flow.sink {
            Sink::Tcp(r) => r.next_wakeup_ns(),
            Sink::Datagram(_) => None,
        };
        if let Some(w) = want {
            let w = w.max(self.now_ns);
            if w < flow.sink_timer_at {
                flow.sink_timer_at = w;
                self.events.schedule(w, Event::ReceiverTimer(flow.id));
            }
        }
    }

    pub(super) fn sync_qdisc_timer(&mut self, l: usize) {
        let Some(q) = self.links[l].queue.as_mut() else { return };
        if let Some(t) = q.qdisc.next_timer_ns() {
            let t = t.max(self.now_ns);
            if q.timer_at.is_none_or(|a| t < a) {
                q.timer_at = Some(t);
                self.events.schedule(t, Event::QdiscTimer(l as u32));
            }
        }
    }

    pub(super) fn on_qdisc_timer(&mut self, l: usize) {
        let now = self.now_ns;
        let link = &mut self.links[l];
        let q = link.queue.as_mut().expect("qdisc timers belong to queues");
        if q.timer_at != Some(now) {
            return;
        }
        q.timer_at = None;
        // Early hand-off: an end of transmission without an event runs
        // first (a no-op for every other queue, as at a checkpoint).
        q.settle_tx_end(now, &mut self.flow_counters);
        q.qdisc_timer(now, &mut self.flow_counters);
        if q.on_medium() {
            let m = link.medium().expect("a queue on a medium has one");
            self.medium_timer(m);
            return self.sync_qdisc_timer(l);
        }
        // A timer may release packets (e.g. a shaper); restart an idle transmitter.
        if q.hands_on_early() {
            if q.is_sending() {
                if let Some(t) = q.arm_if_waiting() {
                    self.events.schedule(t, Event::LinkTxDone(l as u32));
                }
            } else if q.qdisc.len_pkts() > 0 {
                let handed = self.start_early(l as u32);
                self.hand_on_early(handed);
            }
            return self.sync_qdisc_timer(l);
        }
        if !q.is_sending() && q.qdisc.len_pkts() > 0 {
            if let Some(done) = q.start_tx(now, &mut self.flow_counters) {
                self.events.schedule(done, Event::LinkTxDone(l as u32));
            }
        }
        if q.has_feedback() {
            self.send_feedback(l);
        }
        self.sync_qdisc_timer(l);
    }

    pub(super) fn on_workload_arrival(&mut self, wi: usize) {
        if self.workloads[wi].incast.is_some() {
            return self.on_incast(wi);
        }
        let now = self.now_ns;
        let info = self.next_workload_flow(wi);
        let g = &self.workloads[wi];
        let (attach, controller) = (g.attach.clone(), g.controller.clone());
        // Its route was checked when the world was built (`Topology::check_routes`);
        // a failure here would be an engine bug.
        self.retire_finished_flows();
        self.add_flow(info, &attach, Ends::Tcp(controller)).expect("workload flow builds");
        let next = now + self.next_gap(wi);
        if next < self.workloads[wi].stop_ns {
            self.events.schedule(next, Event::WorkloadArrival(wi as u32));
        }
    }

    /// The next flow of workload `wi`, starting now: its size is drawn from
    /// the workload's own stream (one draw per flow, in arrival order).
    fn next_workload_flow(&mut self, wi: usize) -> FlowInfo {
        let group = (self.scenario.flows.len() + self.workloads[wi].index) as u32;
        let g = &mut self.workloads[wi];
        let size = g.size.sample(&mut g.rng);
        FlowInfo {
            group,
            label: g.label.clone(),
            cc: g.cc_name.clone(),
            ecn: g.ecn,
            base_rtt_ns: 0,
            start_ns: self.now_ns,
            stop_ns: None,
            size_bytes: Some(size),
            from_workload: true,
        }
    }

    /// An incast: `senders` hosts each start a flow to one host at once
    /// (receiver and senders drawn from the workload's stream), and the next
    /// incast is `every` later.
    fn on_incast(&mut self, wi: usize) {
        let now = self.now_ns;
        let g = &mut self.workloads[wi];
        let inc = g.incast.clone().expect("an incast workload");
        let dst = inc.dst.unwrap_or_else(|| g.rng.below(inc.hosts as u64) as u32);
        let senders = super::fat_tree::pick_senders(inc.hosts, inc.senders, dst, &mut g.rng);
        for src in senders {
            self.retire_finished_flows();
            let info = self.next_workload_flow(wi);
            let controller = self.workloads[wi].controller.clone();
            self.add_flow(info, &Attach::Hosts { src, dst }, Ends::Tcp(controller)).expect("incast flow builds");
        }
        let next = now + inc.every_ns;
        if next < self.workloads[wi].stop_ns {
            self.events.schedule(next, Event::WorkloadArrival(wi as u32));
        }
    }

    /// End-of-run checks: a violation is an error with context, never silent.
    pub(super) fn check_invariants(&self) -> Result<(), String> {
        for l in &self.links {
            if let Some(q) = &l.queue {
                q.check_conservation(&l.name)?;
            }
        }
        // Places of retired flows too: their flows passed when they retired.
        for f in &self.flows {
            super::retire::check_flow(f)?;
        }
        Ok(())
    }
}

/// Settle what queue `index` left for later by `now`: an end of
/// transmission without its event, the transmissions started under
/// departure lookahead, and the histograms' open runs.
fn settle(q: &mut crate::net::link::QueueSlot, now: u64, flow_counters: &mut [FlowQueueCounters], log: &mut SojournLog, index: u32) {
    q.settle_tx_end(now, flow_counters);
    q.start_due(now, log, index);
    q.settle_sojourn_runs();
}
