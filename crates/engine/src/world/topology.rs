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
    let rng = SimRng::derive(opt.seed, Domain::Link, index as u64);
    let link = Link::new(wire.name, wire.delay_ns, wire.loss, wire.mark, rng);
    Ok(link.with_queue(
        wire.rate_bps,
        qdisc,
        q.aqm.to_string(),
        SimRng::derive(opt.seed, Domain::Queue, index as u64),
        opt.histograms,
        opt.sample_every,
    ))
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
    Dumbbell { bottleneck: u32, reverse: Option<u32>, delay_ns: u64, access_rate_bps: Option<u64> },
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
            Shape::Dumbbell { bottleneck: 0, reverse, delay_ns: b.delay_ns, access_rate_bps: b.access_rate_bps }
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

    /// Paths for new flow `flow`; may add per-flow access links (dumbbell
    /// with an access rate), or build one afresh in the place of
    /// `reuse_access`, a finished flow's (`World::take_free_access_queue`).
    pub fn paths(&self, flow: u32, attach: &Attach, links: &mut Vec<Link>, reuse_access: Option<u32>) -> Result<FlowPaths, String> {
        match (&self.shape, attach) {
            (Shape::FatTree(t), Attach::Hosts { src, dst }) => {
                Ok(link_paths(t.path(flow, *src, *dst), t.path(flow, *dst, *src), links))
            }
            (Shape::Dumbbell { bottleneck, reverse, delay_ns, access_rate_bps }, Attach::Rtt(rtt)) => {
                // rtt = 2·(sender access + bottleneck + receiver access), plus
                // the odd nanosecond of an odd rtt on the ACK path's receiver
                // side (rtt / 2 alone dropped it: 20000001ns ran as 20ms).
                let one_way_access = rtt / 2 - delay_ns;
                let a_send = one_way_access / 2;
                let a_recv = one_way_access - a_send;
                let odd_ns = rtt % 2;
                let access = match access_rate_bps {
                    Some(rate) => {
                        let i = reuse_access.map_or(links.len(), |l| l as usize);
                        let wire = Wire { name: format!("access{i}"), rate_bps: *rate, delay_ns: a_send, loss: 0.0, mark: 0.0 };
                        // No result reports an access queue: no sojourn
                        // histogram or samples for it (a histogram grows to
                        // the largest sojourn seen: 6.4 kB a queue over 64 s
                        // of web flows, docs/performance.md).
                        let opt = QueueOptions { histograms: false, sample_every: 0, ..self.opt };
                        let link = queue_link(i, wire, QueueBuild::fifo(BufferSpec::Time(100_000_000)), opt)?;
                        if i < links.len() {
                            links[i] = link;
                        } else {
                            links.push(link);
                        }
                        Some(i as u32)
                    }
                    None => None,
                };
                let first = access.map_or(Hop::Delay(a_send), Hop::Link);
                let fwd = vec![first, Hop::Link(*bottleneck), Hop::Delay(a_recv)];
                let middle = match reverse {
                    Some(r) => Hop::Link(*r),
                    None => Hop::Delay(*delay_ns),
                };
                // Room for the source's leading delay, which `World::add_flow`
                // moves to the end: no second allocation per flow.
                let mut rev = Vec::with_capacity(4);
                rev.extend([Hop::Delay(a_recv + odd_ns), middle, Hop::Delay(a_send)]);
                Ok(FlowPaths { fwd, rev, base_rtt_ns: 2 * (a_send + delay_ns + a_recv) + odd_ns, access_queue: access })
            }
            (Shape::Graph { nodes, adj }, Attach::Nodes { src, dst }) => {
                let (fwd, rev) = graph_routes(nodes, adj, src, dst)?;
                Ok(link_paths(fwd, rev, links))
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
fn link_paths(fwd: Vec<u32>, rev: Vec<u32>, links: &[Link]) -> FlowPaths {
    let delay = |p: &[u32]| p.iter().map(|&l| links[l as usize].delay_ns).sum::<u64>();
    let base_rtt_ns = delay(&fwd) + delay(&rev);
    FlowPaths { fwd: fwd.into_iter().map(Hop::Link).collect(), rev: rev.into_iter().map(Hop::Link).collect(), base_rtt_ns, access_queue: None }
}
