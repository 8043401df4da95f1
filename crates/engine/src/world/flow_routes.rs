//! A new flow's two routes, from its paths: compiled into stages
//! (`route::compile`) and interned (`Routes::intern`), with the delay
//! line its receiver's replies enter directly, if any.
//!
//! A workload's flows have the paths of flows before them: over one
//! dumbbell all equal, with access links one per access queue, handed from
//! finished flows to later ones. Every flow compiled and interned its two
//! routes again, about 650 instructions a flow (docs/performance.md, "A
//! flow's set-up, continued (stop 62)"). A flow whose paths equal the last
//! flow's, over links that were all there before either, takes its routes
//! at the cost of comparing a few hops; other routes are kept by what
//! compiling their paths read, and a flow whose paths read the same takes
//! them.

use super::*;
use rustc_hash::FxHashMap;

/// The routes a flow's packets follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct FlowRoutes {
    pub(super) fwd: u32,
    pub(super) rev: u32,
    /// The lossless delay line the reverse route starts with (`Flow::reply_line`).
    pub(super) reply_line: Option<u32>,
}

/// Whether a flow's paths hold a link made or handed on for it (a
/// dumbbell's access link).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum OwnLink {
    /// None: the paths hold only links the topology's set-up made.
    Absent,
    /// One that a later flow takes over when this one ends (a finite TCP
    /// flow's), perhaps with another delay.
    HandedOn,
    /// One no other flow will have: its paths are compiled without a key.
    Kept,
}

/// Routes compiled so far.
#[derive(Debug, Default)]
pub(super) struct KnownRoutes {
    /// The last paths over links that were all there before their flow,
    /// and their routes.
    last_fwd: Vec<Hop>,
    last_rev: Vec<Hop>,
    last: Option<FlowRoutes>,
    /// Routes by what compiling their paths read.
    by_key: FxHashMap<Box<[u64]>, FlowRoutes>,
    /// The key of the paths at hand (a buffer kept across flows).
    key: Vec<u64>,
}

impl KnownRoutes {
    /// Write the key of paths `fwd` and `rev`: for each hop, what
    /// `route::compile` reads of it: a pure delay's length; a link's index,
    /// delay, and whether it has a queue, whether that queue departs on
    /// arrival and whether the link loses or marks at random. Compiling
    /// reads nothing else but the lines made so far, and makes a line only
    /// for a (delay, lossy links, queue) not seen before, so paths with
    /// equal keys compile to equal stages. A reused access link keeps its
    /// index but takes its new flow's delay: the key tells the two apart.
    fn set_key(&mut self, fwd: &[Hop], rev: &[Hop], links: &[Link]) {
        const DELAY: u64 = 1 << 63;
        let key = &mut self.key;
        key.clear();
        for (i, path) in [fwd, rev].into_iter().enumerate() {
            key.push(i as u64 | u64::from(path.len() as u32) << 1);
            for &hop in path {
                match hop {
                    Hop::Delay(d) => key.extend([DELAY, d]),
                    Hop::Link(l) => {
                        let link = &links[l as usize];
                        let queue = link.queue.as_ref().map_or(0, |q| 1 | u64::from(q.departs_on_arrival()) << 1);
                        let random = u64::from(link.loses_or_marks()) << 2;
                        key.extend([u64::from(l) << 3 | queue | random, link.delay_ns]);
                    }
                }
            }
        }
    }
}

impl World {
    /// The routes of paths `fwd` and `rev`, holding `own` link.
    pub(super) fn flow_routes(&mut self, fwd: &[Hop], rev: &[Hop], own: OwnLink) -> FlowRoutes {
        if own == OwnLink::Kept {
            return self.compile_routes(fwd, rev); // no flow before or after has these paths
        }
        let known = &mut self.known_routes;
        // A workload's flows over one dumbbell: the last flow's paths. Both
        // hold only links the topology's set-up made and fixed, which read
        // now as they did then.
        if let Some(last) = known.last.filter(|_| own == OwnLink::Absent && known.last_fwd == fwd && known.last_rev == rev) {
            debug_assert_eq!(last, self.compile_routes(fwd, rev), "equal paths compiled to other routes");
            return last;
        }
        known.set_key(fwd, rev, &self.links);
        let routes = match known.by_key.get(known.key.as_slice()).copied() {
            Some(routes) => {
                debug_assert_eq!(routes, self.compile_routes(fwd, rev), "paths with equal keys compiled to other routes");
                routes
            }
            None => {
                let routes = self.compile_routes(fwd, rev);
                self.known_routes.by_key.insert(self.known_routes.key.as_slice().into(), routes);
                routes
            }
        };
        if own == OwnLink::Absent {
            let known = &mut self.known_routes;
            known.last_fwd.clear();
            known.last_fwd.extend_from_slice(fwd);
            known.last_rev.clear();
            known.last_rev.extend_from_slice(rev);
            known.last = Some(routes);
        }
        routes
    }

    fn compile_routes(&mut self, fwd_hops: &[Hop], rev_hops: &[Hop]) -> FlowRoutes {
        let [mut fwd, mut rev] = std::mem::take(&mut self.route_scratch);
        route::compile(fwd_hops, &self.links, &mut self.lines, &mut self.line_index, &mut fwd);
        route::compile(rev_hops, &self.links, &mut self.lines, &mut self.line_index, &mut rev);
        if self.lookahead && matches!(rev.first(), Some(Stage::Line(_))) {
            route::make_sink_line(&mut fwd);
        }
        let reply_line = match rev.first() {
            Some(&Stage::Line(d)) if !self.lines[d as usize].is_lossy() => Some(d),
            _ => None,
        };
        let routes = FlowRoutes { fwd: self.routes.intern(&fwd), rev: self.routes.intern(&rev), reply_line };
        self.route_scratch = [fwd, rev];
        routes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The key of a flow's paths: equal for equal paths over links that
    /// read the same; another for a link handed on with another delay (an
    /// access link reused by a flow of another RTT) or another hop.
    #[test]
    fn paths_have_one_key_until_a_link_on_them_reads_otherwise() {
        let rng = || SimRng::derive(1, Domain::Link, 0);
        let mut links = vec![Link::new("access".into(), 5_000, 0.0, 0.0, rng()), Link::new("wire".into(), 1_000, 0.0, 0.0, rng())];
        let fwd = [Hop::Link(0), Hop::Link(1)];
        let rev = [Hop::Delay(1_000), Hop::Delay(5_000)];
        let key = |links: &[Link], fwd: &[Hop], rev: &[Hop]| {
            let mut k = KnownRoutes::default();
            k.set_key(fwd, rev, links);
            k.key
        };
        let first = key(&links, &fwd, &rev);
        assert_eq!(first, key(&links, &fwd, &rev));
        links[0].delay_ns = 20_000;
        assert_ne!(first, key(&links, &fwd, &rev), "the access link's new delay");
        links[0].delay_ns = 5_000;
        assert_eq!(first, key(&links, &fwd, &rev));
        assert_ne!(first, key(&links, &fwd, &[Hop::Delay(1_000), Hop::Delay(6_000)]), "another delay back");
        assert_ne!(first, key(&links, &[Hop::Link(0)], &[Hop::Link(1), Hop::Delay(1_000), Hop::Delay(5_000)]), "a hop moved to the other path");
        links[1] = Link::new("wire".into(), 1_000, 0.1, 0.0, rng());
        assert_ne!(first, key(&links, &fwd, &rev), "a link that loses at random");
    }
}
