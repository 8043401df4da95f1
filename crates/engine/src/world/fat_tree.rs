//! A k-ary fat tree (Al-Fares, Loukissas, Vahdat, "A scalable, commodity
//! data center network architecture", SIGCOMM 2008, §3): k pods, each of k/2
//! edge and k/2 aggregation switches; (k/2)² core switches; k/2 hosts per
//! edge switch, k³/4 hosts and 5k²/4 switches in all. Edge switch j of a pod
//! connects to every aggregation switch of its pod; aggregation switch j of
//! every pod connects to the k/2 core switches j·k/2 … j·k/2 + k/2 − 1.
//!
//! Every link is full duplex with one queue per direction (a switch's
//! output port, or a host's NIC), all with the scenario's rate, delay,
//! buffer and discipline. Routing is up-down: a packet climbs only as far as
//! the lowest common ancestor tier. Where a switch has several equal-cost
//! uplinks (an edge switch to its k/2 aggregation switches, an aggregation
//! switch to its k/2 core switches), the flow picks one by a hash of
//! (seed, flow id, switch id): per-flow ECMP as switches do with a 5-tuple
//! hash, so a flow keeps one path (no reordering) and the same seed gives
//! the same paths. The reverse path (ACKs) hashes on its own switches.
//!
//! Links are numbered by kind (N = k³/4 hosts, h = k/2): host i's uplink
//! i, downlink N + i; edge e's uplink to aggregation j 2N + e·h + j, the
//! matching downlink 3N + e·h + j; aggregation a's uplink to its core m
//! 4N + a·h + m, the matching downlink 5N + a·h + m. 6N directed links.

use super::topology::{queue_link, QueueBuild, QueueOptions, Wire};
use crate::net::link::Link;
use crate::scenario::FatTreeSpec;
use crate::sim::rng::{mix, SimRng};

#[derive(Debug, Clone)]
pub struct FatTree {
    k: u32,
    seed: u64,
    /// Index of the first link of the tree in the world's links.
    base: u32,
}

impl FatTree {
    /// Build the tree's 6N links (appended to `links`).
    pub fn build(spec: &FatTreeSpec, opt: QueueOptions, links: &mut Vec<Link>) -> Result<FatTree, String> {
        let t = FatTree { k: spec.k, seed: opt.seed, base: links.len() as u32 };
        let (n, h) = (t.hosts(), t.half());
        let name = |l: u32| -> String {
            let (kind, i) = (l / n, l % n);
            let host = format!("h{i}");
            let edge = |e: u32| format!("e{}.{}", e / h, e % h);
            let agg = |a: u32| format!("a{}.{}", a / h, a % h);
            let core = |a: u32, m: u32| format!("c{}", (a % h) * h + m);
            match kind {
                0 => format!("{host}->{}", edge(i / h)),
                1 => format!("{}->{host}", edge(i / h)),
                // i = e·h + j, and aggregation switch j of edge e's pod is a = pod·h + j.
                2 => format!("{}->{}", edge(i / h), agg((i / h) / h * h + i % h)),
                3 => format!("{}->{}", agg((i / h) / h * h + i % h), edge(i / h)),
                4 => format!("{}->{}", agg(i / h), core(i / h, i % h)),
                _ => format!("{}->{}", core(i / h, i % h), agg(i / h)),
            }
        };
        // Exact room: growing by doubling would hold the old and the new
        // table at once (a k = 16 tree's 6 144 links are 11 MB).
        links.reserve_exact(6 * n as usize);
        for l in 0..6 * n {
            let q = QueueBuild::new(&spec.aqm, &spec.params, spec.buffer);
            let index = links.len();
            let wire = Wire { name: name(l), rate_bps: spec.rate_bps, delay_ns: spec.delay_ns, loss: 0.0, mark: 0.0 };
            let mut link = queue_link(index, wire, q, opt)?;
            link.report = true;
            // Every port counts in perf.bottleneck_packets: data packet-hops.
            link.bottleneck = true;
            links.push(link);
        }
        Ok(t)
    }

    pub fn hosts(&self) -> u32 {
        self.k * self.k * self.k / 4
    }

    fn half(&self) -> u32 {
        self.k / 2
    }

    /// Which of `n` equal-cost uplinks switch `switch` gives flow `flow`.
    fn ecmp(&self, flow: u32, switch: u32, n: u32) -> u32 {
        let key = mix(self.seed ^ mix(((flow as u64) << 32) | switch as u64));
        // Lemire's multiply-shift: unbiased enough for n ≤ 32 (bias < n / 2^32).
        (((key >> 32) * n as u64) >> 32) as u32
    }

    /// Switch ids for hashing: edges 0 … k·h − 1, aggregation switches after.
    fn agg_switch_id(&self, a: u32) -> u32 {
        self.k * self.half() + a
    }

    /// The links from host `src` to host `dst` for flow `flow` (src ≠ dst).
    pub fn path(&self, flow: u32, src: u32, dst: u32) -> Vec<u32> {
        let (n, h) = (self.hosts(), self.half());
        let (es, ed) = (src / h, dst / h);
        let (ps, pd) = (es / h, ed / h);
        let b = self.base;
        let mut p = vec![b + src];
        if es == ed {
            p.push(b + n + dst);
            return p;
        }
        let j = self.ecmp(flow, es, h);
        p.push(b + 2 * n + es * h + j);
        if ps != pd {
            let (a_up, a_down) = (ps * h + j, pd * h + j);
            let m = self.ecmp(flow, self.agg_switch_id(a_up), h);
            p.push(b + 4 * n + a_up * h + m);
            p.push(b + 5 * n + a_down * h + m);
        }
        p.push(b + 3 * n + ed * h + j);
        p.push(b + n + dst);
        p
    }

    /// The core switch a path crosses, if any.
    #[cfg(test)]
    pub fn core_of(&self, path: &[u32]) -> Option<u32> {
        let (n, h) = (self.hosts(), self.half());
        path.iter().map(|l| l - self.base).find(|l| (4 * n..5 * n).contains(l)).map(|l| {
            let (a, m) = ((l - 4 * n) / h, (l - 4 * n) % h);
            (a % h) * h + m
        })
    }
}

/// A random derangement of 0 … n−1 (no host sends to itself), uniform over
/// all derangements: Fisher–Yates shuffles, redrawn until none has a fixed
/// point (about e ≈ 2.7 draws on average). n ≥ 2.
pub fn derangement(n: u32, rng: &mut SimRng) -> Vec<u32> {
    assert!(n >= 2, "a permutation without fixed points needs two hosts");
    loop {
        let mut p: Vec<u32> = (0..n).collect();
        for i in (1..n as usize).rev() {
            let j = rng.below(i as u64 + 1) as usize;
            p.swap(i, j);
        }
        if p.iter().enumerate().all(|(i, &d)| d != i as u32) {
            return p;
        }
    }
}

/// `count` distinct hosts of `n`, none equal to `except`, in the order drawn
/// (a partial Fisher–Yates shuffle).
pub fn pick_senders(n: u32, count: u32, except: u32, rng: &mut SimRng) -> Vec<u32> {
    let mut pool: Vec<u32> = (0..n).filter(|&i| i != except).collect();
    let count = count.min(pool.len() as u32) as usize;
    for i in 0..count {
        let j = i + rng.below((pool.len() - i) as u64) as usize;
        pool.swap(i, j);
    }
    pool.truncate(count);
    pool
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(k: u32) -> FatTree {
        FatTree { k, seed: 7, base: 0 }
    }

    #[test]
    fn paths_climb_only_to_the_lowest_common_tier_and_end_at_the_destination() {
        let t = tree(4); // 16 hosts, 2 per edge, 4 per pod
        let n = t.hosts();
        assert_eq!(t.path(0, 0, 1), vec![0, n + 1], "same edge switch: two links");
        let same_pod = t.path(0, 0, 2);
        assert_eq!(same_pod.len(), 4);
        assert_eq!((same_pod[0], same_pod[3]), (0, n + 2));
        // Up to aggregation j and back down from the same j.
        assert_eq!(same_pod[1] - 2 * n, 0 * 2 + (same_pod[2] - 3 * n) % 2);
        let far = t.path(3, 0, 15);
        assert_eq!(far.len(), 6);
        assert!(t.core_of(&far).is_some() && t.core_of(&same_pod).is_none());
        // The core's downlink leads to the destination pod's aggregation switch j.
        let (a_up, a_down) = ((far[2] - 4 * n) / 2, (far[3] - 5 * n) / 2);
        assert_eq!(a_up % 2, a_down % 2);
        assert_eq!((a_up / 2, a_down / 2), (0, 3));
    }

    /// Per-flow ECMP spreads flows evenly over the (k/2)² core switches.
    /// With k = 8 (16 cores) and 8 192 inter-pod flows, a core's count is
    /// Binomial(8192, 1/16): mean 512, standard deviation 21.9. Each count
    /// must lie within 4.5 standard deviations (a fair hash fails this with
    /// probability 16 × 6.8e-6 ≈ 1e-4), and the counts' chi-square (15
    /// degrees of freedom) must stay below 37.7, its 0.1 % tail: a hash that
    /// ignored the switch or the flow (every flow on one core, or one core
    /// per source) fails both by far.
    #[test]
    fn ecmp_spreads_flows_over_the_core_switches_within_binomial_tolerance() {
        let t = tree(8);
        let (n, cores) = (t.hosts(), 16usize);
        let mut rng = SimRng::derive(3, crate::sim::rng::Domain::Traffic, 0);
        let mut count = vec![0u32; cores];
        let flows = 8192u32;
        for f in 0..flows {
            let src = rng.below(n as u64) as u32;
            // Another of the 8 pods (16 hosts each).
            let dst = (src + 16 * (1 + rng.below(7) as u32)) % n;
            count[t.core_of(&t.path(f, src, dst)).expect("inter-pod paths cross a core") as usize] += 1;
        }
        let mean = flows as f64 / cores as f64;
        let sd = (flows as f64 * (1.0 / 16.0) * (15.0 / 16.0)).sqrt();
        for (c, &x) in count.iter().enumerate() {
            assert!((x as f64 - mean).abs() < 4.5 * sd, "core {c}: {x} flows, expected {mean} ± {:.0}", 4.5 * sd);
        }
        let chi2: f64 = count.iter().map(|&x| (x as f64 - mean).powi(2) / mean).sum();
        assert!(chi2 < 37.7, "chi-square {chi2:.1} over 16 cores: {count:?}");
        // The same flow always takes the same path (no reordering), and its
        // ACKs climb on their own hash.
        assert_eq!(t.path(5, 0, 100), t.path(5, 0, 100));
    }

    #[test]
    fn derangements_have_no_fixed_point_and_senders_are_distinct() {
        let mut rng = SimRng::derive(1, crate::sim::rng::Domain::Flow, 0);
        for n in [2, 3, 16, 128] {
            let p = derangement(n, &mut rng);
            let mut seen = p.clone();
            seen.sort();
            assert_eq!(seen, (0..n).collect::<Vec<_>>());
            assert!(p.iter().enumerate().all(|(i, &d)| d != i as u32));
        }
        let s = pick_senders(128, 32, 5, &mut rng);
        let mut u = s.clone();
        u.sort();
        u.dedup();
        assert_eq!((s.len(), u.len()), (32, 32));
        assert!(!s.contains(&5));
    }
}
