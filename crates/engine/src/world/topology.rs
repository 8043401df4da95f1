//! Topology builders: the dumbbell, and an explicit graph with static
//! shortest-path routes. Both produce links and, per flow, the forward and
//! reverse paths that [`crate::net::route::Routes`] compiles. Part of the
//! world (not of `net`): it builds links from the scenario and their queues
//! from the AQM registry, both of which sit above `net`.

use crate::aqm::{self, QdiscEnv, QueueLimit};
use super::fat_tree::FatTree;
use crate::net::link::Link;
use crate::net::medium::{self, Medium};
use crate::net::route::Hop;
use crate::scenario::{LinkSpec, RateChange, Scenario};
use crate::sim::rng::{Domain, SimRng};
use crate::sim::units::BufferSpec;
use serde_json::Value;

/// Everything needed to build one queue.
pub struct QueueBuild<'a> {
    pub aqm: &'a str,
    pub params: &'a Value,
    pub buffer: BufferSpec,
    /// The link rate the discipline is told when it is not the link's own
    /// (a WLAN medium: the PHY rate is not what the queue drains at).
    pub told_rate_bps: Option<u64>,
}

/// The parameters of a `fifo` (its defaults), for queues the scenario does not configure.
static FIFO_DEFAULTS: Value = Value::Null;

impl<'a> QueueBuild<'a> {
    /// A queue as the scenario configures it (the discipline told the link's rate).
    pub fn new(aqm: &'a str, params: &'a Value, buffer: BufferSpec) -> Self {
        QueueBuild { aqm, params, buffer, told_rate_bps: None }
    }

    /// A tail-drop FIFO of `buffer` (access links, the reverse of a graph link).
    pub fn fifo(buffer: BufferSpec) -> Self {
        QueueBuild::new("fifo", &FIFO_DEFAULTS, buffer)
    }
}

/// A link's wire: its name, rate, propagation delay and random loss and marking.
pub struct Wire {
    pub name: String,
    pub rate_bps: u64,
    pub delay_ns: u64,
    pub loss: f64,
    pub mark: f64,
}

/// Knobs for a queue: the same for every queue of a topology; a
/// dumbbell's access queues record no sojourns (`Topology::paths`).
#[derive(Debug, Clone, Copy)]
pub struct QueueOptions {
    pub seed: u64,
    pub mtu: u32,
    pub histograms: bool,
    pub sample_every: u32,
}

/// A link with a queue, its random streams derived from its index.
pub fn queue_link(index: usize, wire: Wire, q: QueueBuild, opt: QueueOptions) -> Result<Link, String> {
    let told = q.told_rate_bps.unwrap_or(wire.rate_bps);
    let env = QdiscEnv { link_rate_bps: told, mtu_bytes: opt.mtu, limit: QueueLimit::from_spec(q.buffer, told) };
    let (qdisc, _) = aqm::build(q.aqm, q.params, &env)?;
    let (link_rng, queue_rng) = random_streams(opt.seed, index);
    let link = Link::new(wire.name, wire.delay_ns, wire.loss, wire.mark, link_rng);
    Ok(link.with_queue(wire.rate_bps, qdisc, q.aqm.to_string(), queue_rng, opt.histograms, opt.sample_every))
}

/// The random streams of link `index` and of its queue.
fn random_streams(seed: u64, index: usize) -> (SimRng, SimRng) {
    (SimRng::derive(seed, Domain::Link, index as u64), SimRng::derive(seed, Domain::Queue, index as u64))
}

/// A dumbbell's access link, as `queue_link` builds it for no flow in
/// particular: no name, no delay, the random streams of index 0. Each
/// flow's is a copy given its own (`access_link`): the discipline's
/// params are read once, not for every flow a workload starts.
fn access_template(rate_bps: u64, opt: QueueOptions) -> Result<Link, String> {
    let wire = Wire { name: String::new(), rate_bps, delay_ns: 0, loss: 0.0, mark: 0.0 };
    // No result reports an access queue: no sojourn histogram or samples
    // for it (a histogram grows to the largest sojourn seen: 6.4 kB a
    // queue over 64 s of web flows, docs/performance.md).
    let opt = QueueOptions { histograms: false, sample_every: 0, ..opt };
    queue_link(0, wire, QueueBuild::fifo(BufferSpec::Time(ACCESS_BUFFER_NS)), opt)
}

/// An access queue's buffer, as a time at its rate (docs/scenario.md,
/// `access_rate`).
const ACCESS_BUFFER_NS: u64 = 100_000_000;

/// Link `i`, a flow's access link with delay `delay_ns`, made from
/// `template` as `queue_link` would build it at `i`: pushed as a new link,
/// or put in the place of a finished flow's idle one
/// (`World::take_free_access_queue`), whose name and buffers it takes
/// over, so that reuse allocates nothing.
fn access_link(template: &Link, i: usize, delay_ns: u64, seed: u64, links: &mut Vec<Link>) {
    let mut link = template.clone();
    link.delay_ns = delay_ns;
    let (link_rng, queue_rng) = random_streams(seed, i);
    link.set_random_streams(link_rng, queue_rng);
    match links.get_mut(i) {
        Some(old) => {
            link.take_buffers_of(old);
            *old = link;
        }
        None => {
            link.name = format!("access{i}");
            links.push(link);
        }
    }
}

/// How flows attach: per-flow RTT (dumbbell) or end nodes (graph).
#[derive(Debug, Clone)]
pub enum Attach {
    Rtt(u64),
    Nodes { src: String, dst: String },
    /// Fat-tree hosts by index.
    Hosts { src: u32, dst: u32 },
}

#[derive(Debug, Clone)]
enum Shape {
    /// `access`: the template of every flow's access link (`access_template`), with `access_rate`.
    Dumbbell { bottleneck: u32, reverse: Option<u32>, delay_ns: u64, access: Option<Box<Link>> },
    Graph { nodes: Vec<String>, adj: Vec<Vec<(u32, usize)>> },
    FatTree(FatTree),
}

#[derive(Debug, Clone)]
pub struct Topology {
    shape: Shape,
    opt: QueueOptions,
    /// (time, link, new rate), in time order.
    pub rate_changes: Vec<(u64, u32, u64)>,
    /// Shared half-duplex media (WLAN links), indexed by `Link::medium`.
    pub mediums: Vec<Medium>,
}

/// A new flow's paths. The world keeps one and `Topology::paths` writes
/// over it, so that a workload's flows do not allocate their hops.
#[derive(Debug, Default)]
pub struct FlowPaths {
    pub fwd: Vec<Hop>,
    pub rev: Vec<Hop>,
    /// Sum of propagation delays there and back (no queueing, no serialisation).
    pub base_rtt_ns: u64,
    /// The flow's own access queue (a dumbbell with an access rate).
    pub access_queue: Option<u32>,
}

fn schedule(changes: &mut Vec<(u64, u32, u64)>, link: u32, sched: &[RateChange]) {
    changes.extend(sched.iter().map(|c| (c.at_ns, link, c.rate_bps)));
}

impl Topology {
    pub fn build(s: &Scenario, opt: QueueOptions) -> Result<(Topology, Vec<Link>), String> {
        let mut links = vec![];
        let mut rate_changes = vec![];
        let mut mediums = vec![];
        let shape = if let Some(b) = &s.bottleneck {
            let wire = Wire { name: "bottleneck".into(), rate_bps: b.rate_bps, delay_ns: b.delay_ns, loss: b.loss, mark: b.mark };
            let mut l = queue_link(0, wire, QueueBuild::new(&b.aqm, &b.params, b.buffer), opt)?;
            l.report = true;
            l.bottleneck = true;
            links.push(l);
            schedule(&mut rate_changes, 0, &b.rate_schedule);
            let reverse = match &b.reverse {
                Some(r) => {
                    let wire = Wire { name: "bottleneck_rev".into(), rate_bps: r.rate_bps, delay_ns: b.delay_ns, loss: 0.0, mark: 0.0 };
                    let mut l = queue_link(1, wire, QueueBuild::new(&r.aqm, &r.params, r.buffer), opt)?;
                    l.report = true;
                    links.push(l);
                    Some(1)
                }
                None => None,
            };
            let access = b.access_rate_bps.map(|rate| access_template(rate, opt).map(Box::new)).transpose()?;
            Shape::Dumbbell { bottleneck: 0, reverse, delay_ns: b.delay_ns, access }
        } else if let Some(ft) = s.topology.as_ref().and_then(|t| t.fat_tree.as_ref()) {
            Shape::FatTree(FatTree::build(ft, opt, &mut links)?)
        } else {
            let t = s.topology.as_ref().expect("validated: bottleneck or topology");
            let nodes: Vec<String> = t.node_names().into_iter().map(String::from).collect();
            let mut adj = vec![vec![]; nodes.len()];
            let idx = |n: &str| nodes.iter().position(|x| x == n).unwrap();
            for spec in &t.links {
                let (a, b) = (idx(&spec.from), idx(&spec.to));
                let fwd = Self::graph_link(&mut links, spec, false, opt)?;
                schedule(&mut rate_changes, fwd, &spec.rate_schedule);
                adj[a].push((fwd, b));
                if spec.duplex {
                    let rev = Self::graph_link(&mut links, spec, true, opt)?;
                    adj[b].push((rev, a));
                    if let Some(w) = &spec.wlan {
                        // One transmitter for both directions; the rate trace is the medium's.
                        let m = mediums.len() as u32;
                        links[fwd as usize].join_medium(m);
                        links[rev as usize].join_medium(m);
                        mediums.push(Medium::new([fwd, rev], w.overhead_ns, w.header_bytes, w.stations));
                        schedule(&mut rate_changes, rev, &spec.rate_schedule);
                    }
                }
            }
            Shape::Graph { nodes, adj }
        };
        rate_changes.sort_by_key(|c| c.0);
        Ok((Topology { shape, opt, rate_changes, mediums }, links))
    }

    fn graph_link(links: &mut Vec<Link>, spec: &LinkSpec, reverse: bool, opt: QueueOptions) -> Result<u32, String> {
        let name = spec.queue_name(reverse);
        let i = links.len();
        let link = match spec.rate_bps {
            Some(rate) => {
                let mut q = if reverse { QueueBuild::fifo(spec.buffer) } else { QueueBuild::new(&spec.aqm, &spec.params, spec.buffer) };
                q.told_rate_bps = spec.wlan.as_ref().map(|w| {
                    w.aqm_rate_bps.unwrap_or_else(|| medium::frame_rate_bps(rate, opt.mtu, w.header_bytes, w.overhead_ns))
                });
                let (loss, mark) = if reverse { (0.0, 0.0) } else { (spec.loss, spec.mark) };
                let wire = Wire { name, rate_bps: rate, delay_ns: spec.delay_ns, loss, mark };
                let mut l = queue_link(i, wire, q, opt)?;
                l.report = true;
                l.bottleneck = !reverse;
                l
            }
            None => {
                let (loss, mark) = if reverse { (0.0, 0.0) } else { (spec.loss, spec.mark) };
                Link::new(name, spec.delay_ns, loss, mark, SimRng::derive(opt.seed, Domain::Link, i as u64))
            }
        };
        links.push(link);
        Ok(i as u32)
    }

    /// The fat tree, if the topology is one.
    pub fn fat_tree(&self) -> Option<&FatTree> {
        match &self.shape {
            Shape::FatTree(t) => Some(t),
            _ => None,
        }
    }

    /// Paths for new flow `flow`, written into `out`; may add a per-flow
    /// access link (dumbbell with an access rate), or make one in the
    /// place of `reuse_access`, a finished flow's
    /// (`World::take_free_access_queue`).
    pub fn paths(
        &self,
        flow: u32,
        attach: &Attach,
        links: &mut Vec<Link>,
        reuse_access: Option<u32>,
        out: &mut FlowPaths,
    ) -> Result<(), String> {
        out.fwd.clear();
        out.rev.clear();
        match (&self.shape, attach) {
            (Shape::FatTree(t), Attach::Hosts { src, dst }) => {
                link_paths(&t.path(flow, *src, *dst), &t.path(flow, *dst, *src), links, out);
                Ok(())
            }
            (Shape::Dumbbell { bottleneck, reverse, delay_ns, access }, Attach::Rtt(rtt)) => {
                // rtt = 2·(sender access + bottleneck + receiver access), plus
                // the odd nanosecond of an odd rtt on the ACK path's receiver
                // side (rtt / 2 alone dropped it: 20000001ns ran as 20ms).
                let one_way_access = rtt / 2 - delay_ns;
                let a_send = one_way_access / 2;
                let a_recv = one_way_access - a_send;
                let odd_ns = rtt % 2;
                let access = access.as_deref().map(|template| {
                    let i = reuse_access.map_or(links.len(), |l| l as usize);
                    access_link(template, i, a_send, self.opt.seed, links);
                    i as u32
                });
                let first = access.map_or(Hop::Delay(a_send), Hop::Link);
                out.fwd.extend([first, Hop::Link(*bottleneck), Hop::Delay(a_recv)]);
                let middle = match reverse {
                    Some(r) => Hop::Link(*r),
                    None => Hop::Delay(*delay_ns),
                };
                out.rev.extend([Hop::Delay(a_recv + odd_ns), middle, Hop::Delay(a_send)]);
                out.base_rtt_ns = 2 * (a_send + delay_ns + a_recv) + odd_ns;
                out.access_queue = access;
                Ok(())
            }
            (Shape::Graph { nodes, adj }, Attach::Nodes { src, dst }) => {
                let (fwd, rev) = graph_routes(nodes, adj, src, dst)?;
                link_paths(&fwd, &rev, links, out);
                Ok(())
            }
            _ => Err("flow attachment does not match the topology".into()),
        }
    }

    /// Check, before anything runs, the routes of the flows `key` (a
    /// `flows[i]` group or a `workloads[i]`, whose flows are built mid-run
    /// where an error could only be a panic): both directions exist, and
    /// for a window-based (TCP) flow the data direction crosses at least
    /// one link with a rate. Without one, nothing ever queues or drops: every
    /// window is delivered whole one base RTT later, the window grows
    /// without bound and the process runs out of memory. The ACK direction
    /// may be all pure delay (a dumbbell's is): ACKs answer data, so the
    /// data path's queue bounds them too. Rate-based sources (udp, qcn,
    /// probe) send at their own pace and need no rated link either.
    ///
    /// Only a graph can lack a rated link: a dumbbell path crosses the
    /// bottleneck, a fat-tree path its sender's NIC queue (both have a rate
    /// by validation), so every other attachment passes.
    pub fn check_routes(&self, key: &str, attach: &Attach, links: &[Link], window_based: bool) -> Result<(), String> {
        let (Shape::Graph { nodes, adj }, Attach::Nodes { src, dst }) = (&self.shape, attach) else {
            return Ok(());
        };
        let (fwd, _) = graph_routes(nodes, adj, src, dst).map_err(|e| format!("{key}: {e}"))?;
        if window_based && !fwd.iter().any(|&l| links[l as usize].queue.is_some()) {
            const SHOWN: usize = 4;
            let hops: Vec<&str> = fwd.iter().take(SHOWN).map(|&l| links[l as usize].name.as_str()).collect();
            let more = fwd.len().saturating_sub(SHOWN);
            let more = if more > 0 { format!(" and {more} more") } else { String::new() };
            return Err(format!(
                "{key}: no link on the path from '{src}' to '{dst}' ({}{more}) has a rate; a TCP flow needs at least one \
                 rate-limited link on its data path to bound its window (give one of these links a rate)",
                hops.join(", ")
            ));
        }
        Ok(())
    }
}

/// A graph flow's routes there (data) and back (ACKs), as link indices.
fn graph_routes(nodes: &[String], adj: &[Vec<(u32, usize)>], src: &str, dst: &str) -> Result<(Vec<u32>, Vec<u32>), String> {
    let s = nodes.iter().position(|n| n == src).ok_or_else(|| format!("unknown node '{src}'"))?;
    let d = nodes.iter().position(|n| n == dst).ok_or_else(|| format!("unknown node '{dst}'"))?;
    let fwd = shortest_path(adj, s, d).ok_or_else(|| format!("no route from '{src}' to '{dst}'"))?;
    let rev = shortest_path(adj, d, s).ok_or_else(|| format!("no route back from '{dst}' to '{src}' (make a link duplex)"))?;
    Ok((fwd, rev))
}

/// Fewest-hop path (BFS; ties go to the link listed first, so routes are deterministic).
fn shortest_path(adj: &[Vec<(u32, usize)>], src: usize, dst: usize) -> Option<Vec<u32>> {
    if src == dst {
        return Some(vec![]);
    }
    let mut prev: Vec<Option<(u32, usize)>> = vec![None; adj.len()];
    let mut seen = vec![false; adj.len()];
    let mut queue = std::collections::VecDeque::from([src]);
    seen[src] = true;
    while let Some(u) = queue.pop_front() {
        for &(link, v) in &adj[u] {
            if !seen[v] {
                seen[v] = true;
                prev[v] = Some((link, u));
                if v == dst {
                    let mut path = vec![];
                    let mut at = dst;
                    while let Some((l, p)) = prev[at] {
                        path.push(l);
                        at = p;
                    }
                    path.reverse();
                    return Some(path);
                }
                queue.push_back(v);
            }
        }
    }
    None
}

/// A flow's paths over links only (fat tree, graph): the hops, and the base
/// RTT as the links' propagation delays there and back.
fn link_paths(fwd: &[u32], rev: &[u32], links: &[Link], out: &mut FlowPaths) {
    let delay = |p: &[u32]| p.iter().map(|&l| links[l as usize].delay_ns).sum::<u64>();
    out.base_rtt_ns = delay(fwd) + delay(rev);
    out.fwd.extend(fwd.iter().copied().map(Hop::Link));
    out.rev.extend(rev.iter().copied().map(Hop::Link));
    out.access_queue = None;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aqm::testing::data;
    use crate::aqm::FlowQueueCounters;
    use crate::net::sojourn_log::SojournLog;
    use crate::packet::Ecn;

    /// An access link made from the template is the one `queue_link` builds
    /// at its index, field for field, whether pushed as a new link or put in
    /// the place of an idle one that carried packets (whose waiting ring's
    /// buffer it keeps, so that reuse allocates nothing); with departure
    /// lookahead on, as a flow's links get it.
    #[test]
    fn an_access_link_made_from_the_template_is_the_one_queue_link_builds() {
        let opt = QueueOptions { seed: 9, mtu: 1500, histograms: true, sample_every: 4 };
        let rate_bps = 20_000_000_000;
        let template = access_template(rate_bps, opt).unwrap();
        let built = |i: usize, delay_ns: u64| {
            let wire = Wire { name: format!("access{i}"), rate_bps, delay_ns, loss: 0.0, mark: 0.0 };
            let opt = QueueOptions { histograms: false, sample_every: 0, ..opt };
            let mut l = queue_link(i, wire, QueueBuild::fifo(BufferSpec::Time(ACCESS_BUFFER_NS)), opt).unwrap();
            l.enable_departure_lookahead(false);
            format!("{l:?}")
        };
        let mut links = vec![];
        for (i, delay_ns) in [(0, 5_000_000), (1, 7_000_001)] {
            access_link(&template, i, delay_ns, opt.seed, &mut links);
            links[i].enable_departure_lookahead(false);
            assert_eq!(format!("{:?}", links[i]), built(i, delay_ns), "new access link {i}");
        }
        // Link 1 carries a burst that waits, then drains and idles.
        let q = links[1].queue.as_mut().unwrap();
        let (mut flows, mut log) = (vec![FlowQueueCounters::default(); 2], SojournLog::new(false));
        for _ in 0..40 {
            assert!(q.arrive_ahead(0, &mut data(1, Ecn::NotEct), &mut flows, &mut log, 1).is_some());
        }
        q.start_due(1_000_000_000, &mut log, 1);
        assert!(q.is_idle_at(1_000_000_000) && q.departed_pkts() == 40);
        access_link(&template, 1, 3_000_000, opt.seed, &mut links);
        links[1].enable_departure_lookahead(false);
        assert_eq!(format!("{:?}", links[1]), built(1, 3_000_000), "access link 1 in the place of an idle one");
        assert!(links[1].queue.as_ref().unwrap().waiting_capacity() >= 40, "the waiting ring's buffer is kept");
    }
}
