//! Routes compiled into stages.
//!
//! A path is a list of hops (links, or anonymous per-flow delays). It is
//! compiled once, when the flow is created, into the stages a packet visits:
//! a *queue* stage for each link with a rate, and one *line* stage for each
//! run of pure delay between queues (the propagation delay of the link just
//! left plus every following rate-less link).
//! Lines with equal delay after the same queue (or before any) are shared;
//! each needs at most one pending event.
//! Routes with equal stages are shared too: the ten thousand flows of a
//! dumbbell use two routes, so looking a stage up stays in cache.

use super::delay_line::Lines;
use super::link::Link;
use rustc_hash::FxHashMap;

/// One element of a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hop {
    /// A link of the topology (with or without a rate).
    Link(u32),
    /// A pure delay private to this path (a dumbbell access link).
    Delay(u64),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Stage {
    Queue(u32),
    Line(u32),
    /// The last line before a receiver whose replies travel a pure-delay path:
    /// the receiver can run when the packet enters the line (its replies then
    /// leave at the packet's arrival time), saving one event per packet.
    SinkLine(u32),
}

/// All routes, flattened into one array (one allocation, cache-friendly
/// lookups), each distinct stage list stored once and ended by `None`. A
/// route's id is the index of its first stage, so finding the stage at a hop
/// is one load: the chain pkt.route → stage → link is what the next
/// packet's work waits on.
#[derive(Debug, Clone, Default)]
pub struct Routes {
    stages: Vec<Option<Stage>>,
    ids: FxHashMap<Vec<Stage>, u32>,
}

/// Key of a delay line: its delay, the rate-less random-loss links merged
/// into it, and the queue whose departures it takes ([`SHARED`] for none).
pub type LineKey = (u64, Vec<u32>, u32);

/// A line's owner when it comes before any queue: shared by every path with its delay.
pub const SHARED: u32 = u32::MAX;

/// The delay line of `delay_ns` whose packets cross the rate-less random-loss
/// links `lossy`, shared by every path with the same pair that leaves the
/// queue of link `owner` ([`SHARED`]: that starts before any queue);
/// created on first use.
pub fn shared_line(
    lines: &mut Lines,
    line_index: &mut FxHashMap<LineKey, u32>,
    delay_ns: u64,
    lossy: Vec<u32>,
    owner: u32,
) -> u32 {
    *line_index.entry((delay_ns, lossy, owner)).or_insert_with_key(|(delay_ns, lossy, _)| {
        lines.add(*delay_ns, lossy.clone())
    })
}

/// Compile `hops` into `stages`, the stages a packet visits (a buffer the
/// caller keeps: a workload compiles two routes for every flow it starts,
/// most of them known already, `Routes::intern`). A line that follows a
/// queue serves that queue alone; the lines before a path's first queue are
/// shared by every route with the same delay and random-loss links
/// (`line_index`).
///
/// A line is a FIFO in exit time, and a queue with departure lookahead
/// enters its packets up to a whole backlog ahead of now: two such queues
/// feeding one line would interleave out of order and make every entry a
/// sorted insert (O(line length)). With a line per queue every entry is an
/// append (a queue's departures are in order), for one line, and at most
/// one pending event, per queue. Graphs' queues shared lines until stop
/// 55: chains of 16 (64) links of 1 µs ran 1.47 (1.99) times as fast with
/// a line per queue. A dumbbell's until stop 56, when its per-flow access
/// queues took departure lookahead: equal-RTT flows' access links would
/// share one line (docs/performance.md). The paths of a dumbbell's ten
/// thousand flows still share a handful of lines: their queue is the same
/// bottleneck.
pub fn compile(
    hops: &[Hop],
    links: &[Link],
    lines: &mut Lines,
    line_index: &mut FxHashMap<LineKey, u32>,
    stages: &mut Vec<Stage>,
) {
    stages.clear();
    // At most a line and a queue per hop, and a last line.
    stages.reserve(2 * hops.len() + 1);
    let mut acc_ns = 0u64;
    let mut lossy: Vec<u32> = vec![];
    // A queue with departure lookahead hands packets on before they leave,
    // stamped with their departure time: only a line can hold them until
    // then, so one follows it even with no delay (see `net::link`).
    let mut line_needed = false;
    let mut owner = SHARED;
    let mut flush = |acc: &mut u64, lossy: &mut Vec<u32>, line_needed: &mut bool, owner: u32, stages: &mut Vec<Stage>| {
        if *acc > 0 || !lossy.is_empty() || *line_needed {
            let id = shared_line(lines, line_index, *acc, std::mem::take(lossy), owner);
            stages.push(Stage::Line(id));
        }
        *acc = 0;
        *line_needed = false;
    };
    for &h in hops {
        match h {
            Hop::Delay(d) => acc_ns += d,
            Hop::Link(l) => {
                let link = &links[l as usize];
                if let Some(q) = &link.queue {
                    flush(&mut acc_ns, &mut lossy, &mut line_needed, owner, stages);
                    stages.push(Stage::Queue(l));
                    line_needed = q.departs_on_arrival();
                    owner = l;
                } else if link.loses_or_marks() {
                    lossy.push(l);
                }
                acc_ns += link.delay_ns;
            }
        }
    }
    flush(&mut acc_ns, &mut lossy, &mut line_needed, owner, stages);
}

/// Turn a route's final line into a [`Stage::SinkLine`] (the caller checked
/// that the reply path starts with a pure delay).
pub fn make_sink_line(stages: &mut [Stage]) {
    if let Some(last) = stages.last_mut() {
        if let Stage::Line(d) = *last {
            *last = Stage::SinkLine(d);
        }
    }
}

impl Routes {
    /// The id of the route with these stages, registered on first use.
    pub fn intern(&mut self, stages: &[Stage]) -> u32 {
        if let Some(&id) = self.ids.get(stages) {
            return id;
        }
        // Hops are counted in a u8 (`Packet::hop`).
        assert!(stages.len() < 256, "a route may have at most 255 stages");
        let id = u32::try_from(self.stages.len()).expect("fewer than 2^32 stages in all routes");
        self.stages.extend(stages.iter().copied().map(Some));
        self.stages.push(None);
        self.ids.insert(stages.to_vec(), id);
        id
    }

    /// Number of distinct routes.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// The stage at `hop` along `route`, or None at the end of the route
    /// (`hop` never goes past the end: a packet is delivered there).
    #[inline(always)]
    pub fn stage(&self, route: u32, hop: u8) -> Option<Stage> {
        debug_assert!(hop as usize <= self.stages_of(route).count(), "hop {hop} past the end of route {route}");
        self.stages[route as usize + hop as usize]
    }

    /// The stages of `route`, in order.
    pub fn stages_of(&self, route: u32) -> impl Iterator<Item = Stage> + '_ {
        self.stages[route as usize..].iter().map_while(|s| *s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_stage_lists_share_one_route_and_a_sink_line_makes_another() {
        let mut routes = Routes::default();
        let a = routes.intern(&[Stage::Queue(0), Stage::Line(1)]);
        let b = routes.intern(&[Stage::Queue(0), Stage::Line(1)]);
        let mut to_sink = vec![Stage::Queue(0), Stage::Line(1)];
        make_sink_line(&mut to_sink);
        let c = routes.intern(&to_sink);
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_eq!(routes.len(), 2);
        assert_eq!(routes.stages_of(c).collect::<Vec<_>>(), [Stage::Queue(0), Stage::SinkLine(1)]);
        assert_eq!(routes.stage(a, 1), Some(Stage::Line(1)));
        assert_eq!(routes.stage(a, 2), None);
        assert_eq!(routes.stage(c, 1), Some(Stage::SinkLine(1)));
        // The empty route (feedback packets) ends at once.
        let e = routes.intern(&[]);
        assert_eq!(routes.stage(e, 0), None);
        assert_eq!(routes.stage(c, 2), None);
    }
}
