//! A new flow's two routes, from its paths: compiled into stages
//! (`route::compile`) and interned (`Routes::intern`), with the delay
//! line its receiver's replies enter directly, if any.
//!
//! A workload's flows over one dumbbell have equal paths: every flow it
//! started compiled and interned the same two routes again, about 650
//! instructions a flow (docs/performance.md, "A flow's set-up, continued
//! (stop 62)"). The last paths are kept with their routes, and a flow whose
//! paths are equal takes those.

use super::*;

/// The routes a flow's packets follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct FlowRoutes {
    pub(super) fwd: u32,
    pub(super) rev: u32,
    /// The lossless delay line the reverse route starts with (`Flow::reply_line`).
    pub(super) reply_line: Option<u32>,
}

/// The last paths compiled, and their routes.
#[derive(Debug, Default)]
pub(super) struct LastRoutes {
    fwd: Vec<Hop>,
    rev: Vec<Hop>,
    routes: Option<FlowRoutes>,
}

impl World {
    /// The routes of paths `fwd` and `rev`. `shared_links`: every link on
    /// them was there before this flow and keeps its delay and queue
    /// (not an access link made or handed on for it), so that equal paths
    /// compile to equal stages: compiling creates a line only for a key
    /// (delay, lossy links, queue) not seen before, and reads of a link
    /// only what set-up fixed.
    pub(super) fn flow_routes(&mut self, fwd: &[Hop], rev: &[Hop], shared_links: bool) -> FlowRoutes {
        let last = &self.last_routes;
        if let Some(known) = last.routes.filter(|_| shared_links && last.fwd == fwd && last.rev == rev) {
            debug_assert_eq!(known, self.compile_routes(fwd, rev), "equal paths compiled to other routes");
            return known;
        }
        let routes = self.compile_routes(fwd, rev);
        if shared_links {
            let last = &mut self.last_routes;
            last.fwd.clear();
            last.fwd.extend_from_slice(fwd);
            last.rev.clear();
            last.rev.extend_from_slice(rev);
            last.routes = Some(routes);
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
